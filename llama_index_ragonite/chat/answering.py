"""The answer step of a turn: nodes in, answer out, through one of the two answer synthesizers.

With the offline default the ``ExtractiveSynthesizer`` reads the retrieved nodes themselves; an LLM
answers through the ``CitedSynthesizer``: its answer prompt (the paper's, with the numbered sources)
is sent through ``llm_calls`` (clear errors, garbled output warned, broken-off streams marked).
Either way the ``CitedSynthesizer`` writes the prompt kept in the turn's trace: it is what an LLM
reads, and what the offline answer is equivalent to.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Iterator, List, Optional, Sequence, cast

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.base.response.schema import Response
from llama_index.core.callbacks import EventPayload
from llama_index.core.llms.llm import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.response_synthesizers.base import BaseSynthesizer
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from llama_index_ragonite.chat.llm_calls import acall_llm, aiter_items, astream_llm, call_llm, stream_llm
from llama_index_ragonite.chat.responses import TurnResult
from llama_index_ragonite.models.extractive import ExtractiveAnswerer
from llama_index_ragonite.models.extractive.calls import stream_pieces
from llama_index_ragonite.models.synthesizers import CitedSynthesizer, ExtractiveSynthesizer
from llama_index_ragonite.prompts import ANSWER_PROMPT

__all__ = ["Answering", "is_offline"]


def is_offline(llm: LLM) -> bool:
    """Whether ``llm`` is the offline extractive answerer (no LLM to call: the nodes are read)."""
    return isinstance(llm, ExtractiveAnswerer)


def _with_embedding(answerer: ExtractiveAnswerer, embed_model: Optional[BaseEmbedding]) -> ExtractiveAnswerer:
    """``answerer``, or a copy scoring by ``embed_model`` when it has none and scores by meaning."""
    if embed_model is None or answerer.embed_model is not None or not answerer.by_meaning:
        return answerer
    return answerer.model_copy(update={"embed_model": embed_model})


class Answering:
    """How one engine answers: ``text``/``deltas`` (and their async forms) for a turn and its nodes."""

    def __init__(
        self,
        llm: LLM,
        embed_model: Optional[BaseEmbedding] = None,
        answer_prompt: BasePromptTemplate = ANSWER_PROMPT,
    ) -> None:
        """``embed_model``: the store's (the retriever's), which the offline answer scores units with when
        the answerer has none of its own: no second model loaded, one space for retrieval and answer."""
        self.llm = llm
        self.cited = CitedSynthesizer(llm=llm, answer_prompt=answer_prompt)
        self.extractive: Optional[ExtractiveSynthesizer] = None
        if is_offline(llm):
            self.extractive = ExtractiveSynthesizer(
                answerer=_with_embedding(cast(ExtractiveAnswerer, llm), embed_model)
            )

    @property
    def synthesizer(self) -> BaseSynthesizer:
        """The synthesizer that answers (offline: the extractive one; else the cited one on the LLM)."""
        return self.extractive if self.extractive is not None else self.cited

    def prompt(self, question: str, history: Sequence[ChatMessage], nodes: Sequence[NodeWithScore]) -> str:
        """The answer prompt over ``nodes`` (numbered ``### Source i ###``), as the cited synthesizer writes it."""
        return self.cited.prompt(question, _views(nodes), history)

    def _offline(self, turn: TurnResult, nodes: Sequence[NodeWithScore]) -> str:
        assert self.extractive is not None  # called for an offline LLM only
        return self.extractive.answer(turn.completed_question, nodes)

    def text(self, turn: TurnResult, nodes: Sequence[NodeWithScore]) -> str:
        if self.extractive is not None:
            return self._offline(turn, nodes)
        return call_llm(self.llm.complete, turn.prompts["answer"], turn)

    async def atext(self, turn: TurnResult, nodes: Sequence[NodeWithScore]) -> str:
        if self.extractive is not None:
            return self._offline(turn, nodes)
        return await acall_llm(self.llm.acomplete, turn.prompts["answer"], turn)

    def deltas(self, turn: TurnResult, nodes: Sequence[NodeWithScore]) -> Iterator[str]:
        if self.extractive is not None:
            return stream_pieces(self._offline(turn, nodes))
        return stream_llm(self.llm, turn.prompts["answer"], turn)

    def adeltas(self, turn: TurnResult, nodes: Sequence[NodeWithScore]) -> AsyncIterator[str]:
        if self.extractive is not None:
            return aiter_items(list(stream_pieces(self._offline(turn, nodes))))
        return astream_llm(self.llm, turn.prompts["answer"], turn)


def _views(nodes: Sequence[NodeWithScore]) -> list:
    """What a prompt numbers as the sources: each node's LLM view."""
    return [n.node.get_content(metadata_mode=MetadataMode.LLM) for n in nodes]


def postprocessed(
    postprocessors: Sequence[BaseNodePostprocessor], top_k: int, question: str, nodes: Sequence[NodeWithScore]
) -> List[NodeWithScore]:
    """The node postprocessors in order, then the top ``top_k`` (after them: a reranker sees the whole pool)."""
    bundle = QueryBundle(question)
    for postprocessor in postprocessors:
        nodes = postprocessor.postprocess_nodes(list(nodes), query_bundle=bundle)
    return list(nodes)[:top_k]


async def apostprocessed(
    postprocessors: Sequence[BaseNodePostprocessor], top_k: int, question: str, nodes: Sequence[NodeWithScore]
) -> List[NodeWithScore]:
    bundle = QueryBundle(question)
    for postprocessor in postprocessors:
        nodes = await postprocessor.apostprocess_nodes(list(nodes), query_bundle=bundle)
    return list(nodes)[:top_k]


def answered(event: Any, answer: str, nodes: List[NodeWithScore]) -> None:
    """End the ``SYNTHESIZE`` callback event around an answer with its response, as core's synthesizers do."""
    event.on_end(payload={EventPayload.RESPONSE: Response(response=answer, source_nodes=nodes)})
