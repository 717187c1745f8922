"""``AnswerRegenerator``: the counterfactual LLM call every explainer makes.

Attribution and the RAGE explainers all ask the same thing many times: "what would the
answer be from *these* evidences, in *this* order?". This module asks it the way the original
answer was produced, concurrently under a concurrency bound, with one retry per failed call, always as
``synthesize`` over the (masked) nodes:

* through the synthesizer given (``synthesizer=``: the chat engine's, or the one inside
  ``index.as_query_engine(...)``): the same templates, response mode and LLM on the subset;
* else, on our prompt (``{sources}``, ``{history}``, ``{question}``), through the package's synthesizer for
  the LLM: ``ExtractiveSynthesizer`` for the offline answerer (it reads the nodes), ``CitedSynthesizer`` on
  the prompt for any other (sources renumbered ``### Source i ###`` in the given order, no history);
* one branch stays outside: a stock-style prompt (``{context_str}``, ``{query_str}``) is filled as
  LlamaIndex's synthesizers fill it (the node texts joined by blank lines) and sent through the LLM's
  ``apredict``, so a chat template stays messages; no synthesizer of ours or core's sends exactly that
  (core's repack or refine the chunks and do not quote them).

Either way evidence text that imitates the prompt's structure is escaped (``prompts.quote_evidence``).
Any other prompt is refused when the regenerator is built. A call that still fails yields
``None`` so the caller can mark what it was for as failed instead of crashing or silently
guessing. ``normalize_answer`` is the comparison RAGE uses to decide whether two answers differ.
"""

from __future__ import annotations

import asyncio
import logging
import re
import string
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, cast

import tenacity
from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore

from llama_index_ragonite.models.extractive.answerer import ExtractiveAnswerer
from llama_index_ragonite.parsing.contextualizer import after_template, template_after
from llama_index_ragonite.parsing.rendering import quoted_neighbour
from llama_index_ragonite.prompts import (
    ANSWER_PROMPT,
    OUT_OF_SCOPE,
    STOCK_CONTEXT_VARIABLES,
    STOCK_QUESTION_VARIABLE,
    format_sources,
    format_stock_context,
    strip_citations,
)

logger = logging.getLogger(__name__)

_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}\u2018\u2019\u201c\u201d\u2026\u2013\u2014]")


OUR_VARIABLES, STOCK_VARIABLES = {"sources", "question"}, {STOCK_CONTEXT_VARIABLES[0], STOCK_QUESTION_VARIABLE}


def check_answer_prompt(prompt: BasePromptTemplate) -> None:
    """Refuse a prompt the evidences cannot be put into (it would send a literal ``{context_str}`` or none)."""
    variables = set(prompt.template_vars) - set(getattr(prompt, "kwargs", None) or {})
    if not (OUR_VARIABLES <= variables or STOCK_VARIABLES <= variables):
        raise ValueError(
            f"The answer prompt has variables {sorted(variables)}: it needs {{sources}} and {{question}} "
            "(ours, e.g. prompts.ANSWER_PROMPT) or {context_str} and {query_str} (LlamaIndex's QA templates). "
            "To explain a query engine's answers, wrap its synthesizer: AttributedSynthesizer(synthesizer)."
        )


def withheld(kept: Sequence[NodeWithScore], left_out: Sequence[NodeWithScore]) -> List[NodeWithScore]:
    """``kept``, with the information of the ``left_out`` evidences taken out wherever it is shown (copies).

    Why: a counterfactual removes information, not a box. A contextualized evidence carries its
    neighbours' nearest lines (``EvidenceContextualizer``), and a table evidence states every row
    that is also an evidence of its own. Left out of a counterfactual prompt, an evidence would
    still be read through its neighbour's context or its table, and its removal would change
    nothing: "Bob owns the service" is the Architecture passage and the After line of the passage
    above it; "Animal is Cat, and Fee is 80 EUR" is a row and a line of its table. So each
    Before/After line that quotes a left-out evidence, and each line of a kept evidence that *is* a
    left-out evidence's whole text (a row in its table), is taken out; an evidence left with no
    line is left out too. Only lines visible to the LLM are looked at (an After line placed after
    the evidence, in the node's ``text_template``, included).
    """
    texts = [_flat(n.node.get_content(MetadataMode.NONE)) for n in left_out]
    if not texts:
        return list(kept)
    whole = {t for t in texts if t}
    # a row restated by its table: its own line (the non-verbalized linearizers put the header line first)
    whole |= {
        _flat(n.node.get_content(MetadataMode.NONE).strip().split("\n")[-1])
        for n in left_out
        if n.node.metadata.get("evidence_type") == "table_row"
    }
    out = []
    for item in kept:
        node, hidden = item.node, set(item.node.excluded_llm_metadata_keys)
        changed: Dict[str, Any] = {}
        for key, value in node.metadata.items():
            if key not in hidden and isinstance(value, str):
                lines = [line for line in value.split("\n") if not _quotes_any(node, line, texts)]
                if len(lines) < value.count("\n") + 1:
                    changed[key] = "\n".join(lines)
        update: Dict[str, Any] = {"metadata": {**node.metadata, **changed}} if changed else {}
        tail = template_after(node)  # ``after_position="end"``
        if tail and _quotes_any(node, tail, texts):
            update["text_template"] = after_template("")
        elif (
            tail
            and changed
            and not any(changed.get(k, v) for k, v in node.metadata.items() if k not in hidden and isinstance(v, str))
        ):  # its whole header went: LlamaIndex would drop the template with it, so the line heads it instead
            update["metadata"][next(iter(changed))], update["text_template"] = tail, after_template("")
        own = node.get_content(MetadataMode.NONE).split("\n")
        rest = [line for line in own if _flat(line) not in whole]
        if len(own) > 1 and len(rest) < len(own):
            if not any(line.strip() for line in rest):
                continue  # all it stated is left out
            update["text"] = "\n".join(rest)
        if update:
            item = NodeWithScore(node=node.model_copy(update=update), score=item.score)
        out.append(item)
    return out


def _flat(text: str) -> str:
    """``text`` on one line, runs of whitespace as one space (how evidence texts are compared)."""
    return " ".join(text.split())


def _left_out(among: Sequence[NodeWithScore], kept: Sequence[NodeWithScore]) -> List[NodeWithScore]:
    ids = {id(n) for n in kept}
    return [n for n in among if id(n) not in ids]


def _quotes_any(node: BaseNode, line: str, texts: Sequence[str]) -> bool:
    """``line`` is a Before/After line of ``node`` quoting one of ``texts`` (read from its structure fields;
    nodes of older stores, without them, through their text: ``quoted_neighbour``)."""
    snippet = quoted_neighbour(node.metadata, line).strip().removesuffix("…").strip()
    return bool(snippet) and any(snippet in text for text in texts)


def is_extractive(llm: Any) -> bool:
    return isinstance(llm, ExtractiveAnswerer)


def normalize_answer(answer: str) -> str:
    """Lowercase, ``[Source i]`` markers and punctuation removed, whitespace collapsed (RAGE's comparison)."""
    return " ".join(_PUNCTUATION.sub(" ", strip_citations(answer).lower()).split())


@dataclass(eq=False)
class AnswerRegenerator:
    """Answers a question from a chosen list of evidences, many lists at a time.

    Args:
        llm: any LlamaIndex ``LLM``; its async API is used, so a hosted model answers the
            lists concurrently.
        prompt: the answer prompt (must keep ``{sources}``, ``{history}``, ``{question}``);
            use the one the original answer was produced with.
        max_concurrency: LLM calls in flight at once.
        retries: extra attempts for a call that raises before it counts as failed.
        synthesizer: a LlamaIndex ``BaseSynthesizer``; when given, it answers (its own templates and
            LLM) and ``llm``/``prompt`` are not used.
        max_answer_tokens: passed to the LLM as ``max_tokens`` on each call with our prompt (``None``: not
            passed; a stock prompt goes through ``apredict``, whose arguments are the template's).
    """

    llm: Optional[LLM]
    prompt: BasePromptTemplate = field(default_factory=lambda: ANSWER_PROMPT)  # shared, never copied
    max_concurrency: int = 16
    retries: int = 1
    synthesizer: Optional[Any] = None
    max_answer_tokens: Optional[int] = None
    calls: int = field(default=0, init=False)  # LLM calls made (retries included) since construction
    errors: List[str] = field(default_factory=list, init=False)  # one line per call that failed after its retries
    failures: Dict[int, str] = field(default_factory=dict, init=False)  # last aanswer_many: failed position -> error
    _answering: Optional[Any] = field(default=None, init=False, repr=False)  # the synthesizer that answers

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        if self.retries < 0:
            raise ValueError("retries must be >= 0")
        if self.synthesizer is None:
            check_answer_prompt(self.prompt)
        self._answering = self.synthesizer if self.synthesizer is not None else self._own_synthesizer()

    def _own_synthesizer(self) -> Optional[Any]:
        """Ours for our prompt (the offline answerer reads the nodes; any other LLM gets the prompt); ``None``
        for a stock-style prompt (see the module doc)."""
        if self._stock_variables("", []) is not None:
            return None
        from llama_index_ragonite.models.synthesizers import CitedSynthesizer, ExtractiveSynthesizer

        if is_extractive(self.llm):
            return ExtractiveSynthesizer(answerer=cast(Any, self.llm))
        return CitedSynthesizer(llm=self.llm, answer_prompt=self.prompt)

    def _stock_variables(self, question: str, nodes: Sequence[NodeWithScore]) -> Optional[Dict[str, str]]:
        """The variables of a stock-style prompt, as LlamaIndex's synthesizers fill them; ``None`` for ours."""
        variables = set(self.prompt.template_vars)
        if not STOCK_VARIABLES <= variables or OUR_VARIABLES <= variables:
            return None
        return {STOCK_CONTEXT_VARIABLES[0]: format_stock_context(nodes), STOCK_QUESTION_VARIABLE: question}

    def prompt_for(self, question: str, nodes: Sequence[NodeWithScore]) -> str:
        stock = self._stock_variables(question, nodes)
        if stock is not None:
            return self.prompt.format(**cast(Dict[str, Any], stock))
        return self.prompt.format(sources=format_sources(nodes), history="", question=question)

    async def _reply(self, question: str, nodes: Sequence[NodeWithScore]) -> str:
        synthesizer = self._answering
        if synthesizer is None:  # a stock-style prompt, as a stock synthesizer calls it (its arguments: no limit)
            stock = cast(Dict[str, Any], self._stock_variables(question, nodes))
            return await cast(LLM, self.llm).apredict(self.prompt, **stock)
        # a synthesizer that takes max_tokens (CitedSynthesizer) gets the limit; stock ones keep their own
        takes = self.max_answer_tokens and getattr(synthesizer, "takes_max_tokens", False)
        limit: Dict[str, Any] = {"max_tokens": self.max_answer_tokens} if takes else {}
        if not nodes:  # synthesize() answers nothing without nodes
            return str(await synthesizer.aget_response(question, [], **limit) or "")
        return str((await synthesizer.asynthesize(question, list(nodes), **limit)).response or "")

    async def aanswer(self, question: str, nodes: Sequence[NodeWithScore]) -> Optional[str]:
        """The answer from ``nodes`` (in this order), or ``None`` when the LLM failed every attempt.

        No evidences at all: the out-of-scope sentence, without an LLM call. An empty reply
        counts as out of scope, as in the chat engine. With a synthesizer, ``calls`` counts
        synthesize calls (a refine synthesizer makes one LLM call per chunk inside each).
        """
        return (await self._attempts(question, nodes))[0]

    async def aanswer_without_sources(self, question: str) -> Optional[str]:
        """The LLM's answer with an empty context (RAGE's bottom-up reference), ``None`` when it failed.

        Unlike ``aanswer([])`` this asks the LLM: what it says without any evidence is the
        point. A synthesizer is asked only if it says it can be (``asks_without_sources``, as
        ``CitedSynthesizer``: the answer prompt with no source); LlamaIndex's answer nothing without
        nodes: the out-of-scope sentence, as the chat engine says when retrieval finds nothing.
        """
        if self.synthesizer is not None and not getattr(self.synthesizer, "asks_without_sources", False):
            return OUT_OF_SCOPE
        return (await self._attempts(question, [], ask_empty=True))[0]

    async def _attempts(
        self, question: str, nodes: Sequence[NodeWithScore], ask_empty: bool = False
    ) -> Tuple[Optional[str], Optional[str]]:
        """(answer, None) or (None, the last error)."""
        if not nodes and not ask_empty:
            return OUT_OF_SCOPE, None
        retrying = tenacity.AsyncRetrying(  # any failure: transport, rate limit, garbled reply
            stop=tenacity.stop_after_attempt(self.retries + 1),
            before_sleep=lambda state: logger.info("Counterfactual LLM call failed (%s); retrying", _said(state)),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    self.calls += 1
                    text = await self._reply(question, nodes)
        except Exception as err:
            error = f"{type(err).__name__}: {err}"
        else:
            return (text.strip() if text and text.strip() else OUT_OF_SCOPE), None
        self.errors.append(error)
        logger.warning("Counterfactual LLM call failed after %d attempts: %s", self.retries + 1, error)
        return None, error

    async def aanswer_many(
        self,
        question: str,
        node_lists: Sequence[Sequence[NodeWithScore]],
        among: Sequence[NodeWithScore] = (),
    ) -> List[Optional[str]]:
        """One answer per list of evidences, at most ``max_concurrency`` calls at a time, in input order.

        ``among``: the evidences the lists are chosen from; those a list leaves out are withheld
        from its evidences' Before/After context too (``withheld``).
        ``failures`` then maps the positions of the lists whose call failed to the error.
        """
        bound = asyncio.Semaphore(self.max_concurrency)
        if among:
            node_lists = [withheld(nodes, _left_out(among, nodes)) for nodes in node_lists]

        async def one(nodes: Sequence[NodeWithScore]) -> Tuple[Optional[str], Optional[str]]:
            async with bound:
                return await self._attempts(question, nodes)

        results = await asyncio.gather(*(one(nodes) for nodes in node_lists))
        self.failures = {i: error for i, (_, error) in enumerate(results) if error is not None}
        return [answer for answer, _ in results]


def _said(state: tenacity.RetryCallState) -> str:
    err = state.outcome.exception() if state.outcome is not None else None
    return f"{type(err).__name__}: {err}"
