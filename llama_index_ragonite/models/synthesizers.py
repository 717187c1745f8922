"""The two answer synthesizers, nodes in, answer out: ``ExtractiveSynthesizer`` (offline) and
``CitedSynthesizer`` (any LLM, the paper's answer prompt).

Why: whoever holds the retrieved nodes (a stock ``RetrieverQueryEngine``, our chat engine, the explainers'
regenerations) turns them into an answer through ``synthesize(query, nodes)``. ``ExtractiveSynthesizer``
reads the nodes themselves, in the order given: each node's structure fields (page title, heading path,
the neighbours' text its context shows, a row's cells: ``models.extractive.sources``), never a prompt,
and hands the sources to ``ExtractiveAnswerer.answer_sources``, citing ``[Source i]`` for the i-th node.
Called with texts alone (``get_response``), it reads them as LLM views (``llm_adapter``).
``CitedSynthesizer`` gives an LLM the paper's answer prompt (``prompts.ANSWER_PROMPT``: numbered sources,
history, question) through ``llm_calls``. Both check the answer's citations against the nodes given, once
(``cited_answers``: markers naming no node are removed). The chat engine answers through them too, passing
``history=`` and ``record=`` (its turn: the warnings, citations, the prompt an LLM received or the nodes the
offline answerer read) and ``streaming=`` per call.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.callbacks import CallbackManager
from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.response_synthesizers.base import BaseSynthesizer
from llama_index.core.schema import NodeWithScore
from llama_index.core.types import RESPONSE_TEXT_TYPE

from llama_index_ragonite.models.cited_answers import ACheckedDeltas, AnswerRecord, CheckedDeltas, checked_answer
from llama_index_ragonite.models.defaults import prompt_helpers, resolve_llm
from llama_index_ragonite.models.extractive.answerer import ExtractiveAnswerer
from llama_index_ragonite.models.extractive.calls import stream_pieces
from llama_index_ragonite.models.extractive.llm_adapter.prompt import view_source
from llama_index_ragonite.models.extractive.sources import node_source, plain_question
from llama_index_ragonite.models.llm_calls import acall_llm, aiter_items, astream_llm, call_llm, stream_llm
from llama_index_ragonite.prompts import ANSWER_PROMPT, format_history, format_views

__all__ = ["CitedSynthesizer", "ExtractiveSynthesizer"]


class ExtractiveSynthesizer(BaseSynthesizer):
    """``ExtractiveAnswerer`` over nodes (``answerer=``: a configured one; default: the embedded default's)."""

    answers_from_nodes = True  # no template to inspect: its answers depend on the nodes (AttributedSynthesizer)

    def __init__(
        self,
        answerer: Optional[ExtractiveAnswerer] = None,
        streaming: bool = False,
        callback_manager: Optional[CallbackManager] = None,
    ) -> None:
        self._answerer, self._streams = answerer or ExtractiveAnswerer(), streaming  # kept: the base keeps it private
        super().__init__(
            llm=self._answerer, streaming=streaming, callback_manager=callback_manager, **prompt_helpers(self._answerer)
        )

    @property
    def answerer(self) -> ExtractiveAnswerer:
        return self._answerer

    def _get_prompts(self) -> dict:
        return {}

    def _update_prompts(self, prompts: dict) -> None:
        """No prompt: the answer is read from the nodes."""

    def _question(self, question: str) -> str:
        """The question as the answerer reads it; of one longer than the embedding window, the part that asks
        (what the model embeds, ``models.asking``): a pasted log's words would outweigh the question's."""
        cut = getattr(self._answerer.embed_model, "embedded_part", None)
        return plain_question(cut(question) if callable(cut) else question)

    def answer(self, question: str, nodes: Sequence[NodeWithScore], record: Any = None) -> str:
        """The answer text to ``question`` from ``nodes`` (their structure fields), the i-th cited ``[Source i]``;
        ``record`` (a turn) notes the decision: which unit, which scores (``Assessment.explained``)."""
        sources = [node_source(i, n.node) for i, n in enumerate(nodes, 1)]
        text, assessed = self._answerer.decide(self._question(question), sources)
        if record is not None:
            record.decision = assessed.explained()
        return text

    def synthesize(self, query: Any, nodes: List[NodeWithScore], *args: Any, **kwargs: Any) -> Any:
        return super().synthesize(query, nodes, *args, source_nodes=nodes, **kwargs)

    async def asynthesize(self, query: Any, nodes: List[NodeWithScore], *args: Any, **kwargs: Any) -> Any:
        return await super().asynthesize(query, nodes, *args, source_nodes=nodes, **kwargs)

    def _read(self, query_str: str, text_chunks: Sequence[str], source_nodes: Any, record: Any) -> str:
        """The raw answer; ``record`` notes the ids of the nodes read (no prompt: none was written)."""
        if source_nodes is None:
            sources = [view_source(i, view) for i, view in enumerate(text_chunks, 1)]
            return self._answerer.answer_sources(self._question(query_str), sources)
        if record is not None:
            record.read = [n.node.node_id for n in source_nodes]
        return self.answer(query_str, source_nodes, record)

    def get_response(
        self,
        query_str: str,
        text_chunks: Sequence[str],
        source_nodes: Optional[Sequence[NodeWithScore]] = None,
        record: Optional[AnswerRecord] = None,
        streaming: Optional[bool] = None,
        **kwargs: Any,
    ) -> RESPONSE_TEXT_TYPE:
        """From ``source_nodes`` (what ``synthesize`` passes), else from the texts read as LLM views."""
        text, n = self._read(query_str, text_chunks, source_nodes, record), len(text_chunks)
        if self._streams if streaming is None else streaming:
            return CheckedDeltas(stream_pieces(text), lambda whole: checked_answer(whole, n, record))
        return checked_answer(text, n, record)

    async def aget_response(
        self,
        query_str: str,
        text_chunks: Sequence[str],
        source_nodes: Optional[Sequence[NodeWithScore]] = None,
        record: Optional[AnswerRecord] = None,
        streaming: Optional[bool] = None,
        **kwargs: Any,
    ) -> RESPONSE_TEXT_TYPE:
        text, n = self._read(query_str, text_chunks, source_nodes, record), len(text_chunks)
        if self._streams if streaming is None else streaming:
            pieces = aiter_items(list(stream_pieces(text)))
            return ACheckedDeltas(pieces, lambda whole: checked_answer(whole, n, record))
        return checked_answer(text, n, record)


class CitedSynthesizer(BaseSynthesizer):
    """Any LLM (``llm=``, else ``Settings.llm``, else the offline answerer) on the paper's answer prompt.

    ``get_response`` takes ``history`` (``ChatMessage``s) as a keyword, as ``synthesize(..., history=…)``
    passes it. A streamed answer is checked when its stream ends (``deltas.answer``); the deltas keep their markers."""

    answers_from_nodes = True  # its answers depend on the nodes, through {sources} (AttributedSynthesizer)
    asks_without_sources = True  # with no node the LLM is still asked (RAGE's bottom-up reference)
    takes_max_tokens = True  # ``max_tokens=`` reaches the LLM (an explainer's max_answer_tokens)

    def __init__(
        self,
        llm: Optional[LLM] = None,
        answer_prompt: BasePromptTemplate = ANSWER_PROMPT,
        streaming: bool = False,
        callback_manager: Optional[CallbackManager] = None,
    ) -> None:
        llm = resolve_llm(llm)
        super().__init__(llm=llm, streaming=streaming, callback_manager=callback_manager, **prompt_helpers(llm))
        self._answer_prompt = answer_prompt
        self._answering_llm, self._streams = llm, streaming  # kept: the base keeps both private

    def _get_prompts(self) -> dict:
        return {"answer_prompt": self._answer_prompt}

    def _update_prompts(self, prompts: dict) -> None:
        self._answer_prompt = prompts.get("answer_prompt", self._answer_prompt)

    def prompt(self, question: str, views: Sequence[str], history: Sequence[ChatMessage] = ()) -> str:
        """The answer prompt for ``question`` over the nodes' LLM views, numbered ``### Source i ###``."""
        return self._answer_prompt.format(
            sources=format_views(views), history=format_history(history), question=question
        )

    def _sent(self, query_str: str, text_chunks: Sequence[str], history: Sequence[ChatMessage], record: Any) -> str:
        """The prompt, noted in ``record`` as the prompt the LLM received (the trace shows it)."""
        prompt = self.prompt(query_str, text_chunks, history)
        if record is not None:
            record.prompts["answer"] = prompt
        return prompt

    def get_response(
        self,
        query_str: str,
        text_chunks: Sequence[str],
        history: Sequence[ChatMessage] = (),
        record: Optional[AnswerRecord] = None,
        streaming: Optional[bool] = None,
        **kwargs: Any,
    ) -> RESPONSE_TEXT_TYPE:
        prompt, limit, n = self._sent(query_str, text_chunks, history, record), _limit(kwargs), len(text_chunks)
        if self._streams if streaming is None else streaming:
            deltas = stream_llm(self._answering_llm, prompt, record, **limit)
            return CheckedDeltas(deltas, lambda whole: checked_answer(whole, n, record))
        return checked_answer(call_llm(self._answering_llm, prompt, record, **limit), n, record)

    async def aget_response(
        self,
        query_str: str,
        text_chunks: Sequence[str],
        history: Sequence[ChatMessage] = (),
        record: Optional[AnswerRecord] = None,
        streaming: Optional[bool] = None,
        **kwargs: Any,
    ) -> RESPONSE_TEXT_TYPE:
        prompt, limit, n = self._sent(query_str, text_chunks, history, record), _limit(kwargs), len(text_chunks)
        if self._streams if streaming is None else streaming:
            deltas = astream_llm(self._answering_llm, prompt, record, **limit)
            return ACheckedDeltas(deltas, lambda whole: checked_answer(whole, n, record))
        return checked_answer(await acall_llm(self._answering_llm, prompt, record, **limit), n, record)


def _limit(kwargs: dict) -> dict:
    """The LLM keyword a caller may set through ``synthesize(..., max_tokens=N)``."""
    return {"max_tokens": kwargs["max_tokens"]} if kwargs.get("max_tokens") else {}
