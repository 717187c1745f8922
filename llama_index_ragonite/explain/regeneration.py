"""``AnswerRegenerator``: the counterfactual LLM call every explainer makes.

Attribution and the RAGE explainers all ask the same thing many times: "what would the
answer be from *these* evidences, in *this* order?". This module asks it once, the way the
chat engine does (``prompts.ANSWER_PROMPT``, sources renumbered ``### Source i ###`` in the
given order, the completed question, no history), concurrently through the LLM's async API
under a concurrency bound, with one retry per failed call. A call that still fails yields
``None`` so the caller can mark what it was for as failed instead of crashing or silently
guessing. ``normalize_answer`` is the comparison RAGE uses to decide whether two answers differ.
"""

from __future__ import annotations

import asyncio
import logging
import re
import string
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.prompts import ANSWER_PROMPT, OUT_OF_SCOPE, format_sources, strip_citations

logger = logging.getLogger(__name__)

_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}\u2018\u2019\u201c\u201d\u2026\u2013\u2014]")


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
    """

    llm: LLM
    prompt: BasePromptTemplate = field(default_factory=lambda: ANSWER_PROMPT)  # shared, never copied
    max_concurrency: int = 16
    retries: int = 1
    calls: int = field(default=0, init=False)  # LLM calls made (retries included) since construction
    errors: List[str] = field(default_factory=list, init=False)  # one line per call that failed after its retries
    failures: Dict[int, str] = field(default_factory=dict, init=False)  # last aanswer_many: failed position -> error

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        if self.retries < 0:
            raise ValueError("retries must be >= 0")

    def prompt_for(self, question: str, nodes: Sequence[NodeWithScore]) -> str:
        return self.prompt.format(sources=format_sources(nodes), history="", question=question)

    async def aanswer(self, question: str, nodes: Sequence[NodeWithScore]) -> Optional[str]:
        """The answer from ``nodes`` (in this order), or ``None`` when the LLM failed every attempt.

        No evidences at all: the out-of-scope sentence, without an LLM call. An empty reply
        counts as out of scope, as in the chat engine.
        """
        return (await self._attempts(question, nodes))[0]

    async def _attempts(self, question: str, nodes: Sequence[NodeWithScore]) -> Tuple[Optional[str], Optional[str]]:
        """(answer, None) or (None, the last error)."""
        if not nodes:
            return OUT_OF_SCOPE, None
        prompt = self.prompt_for(question, nodes)
        for attempt in range(self.retries + 1):
            self.calls += 1
            try:
                text = (await self.llm.acomplete(prompt)).text
                return (text.strip() if text and text.strip() else OUT_OF_SCOPE), None
            except Exception as err:  # any failure: transport, rate limit, garbled reply
                error = f"{type(err).__name__}: {err}"
                if attempt < self.retries:
                    logger.info("Counterfactual LLM call failed (%s); retrying", error)
        self.errors.append(error)
        logger.warning("Counterfactual LLM call failed after %d attempts: %s", self.retries + 1, error)
        return None, error

    async def aanswer_many(self, question: str, node_lists: Sequence[Sequence[NodeWithScore]]) -> List[Optional[str]]:
        """One answer per list of evidences, at most ``max_concurrency`` calls at a time, in input order.

        ``failures`` then maps the positions of the lists whose call failed to the error.
        """
        bound = asyncio.Semaphore(self.max_concurrency)

        async def one(nodes: Sequence[NodeWithScore]) -> Tuple[Optional[str], Optional[str]]:
            async with bound:
                return await self._attempts(question, nodes)

        results = await asyncio.gather(*(one(nodes) for nodes in node_lists))
        self.failures = {i: error for i, (_, error) in enumerate(results) if error is not None}
        return [answer for answer, _ in results]
