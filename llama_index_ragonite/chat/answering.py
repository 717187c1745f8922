"""The answer step of a turn: nodes in, answer out.

With the offline default the ``ExtractiveSynthesizer`` reads the retrieved nodes themselves; an LLM
gets the answer prompt (the paper's, with the numbered sources), through ``llm_calls`` (clear
errors, garbled output warned, broken-off streams marked). Either way the prompt is kept in the
turn's trace: it is what an LLM reads, and what the offline answer is equivalent to.
"""

from __future__ import annotations

from typing import AsyncIterator, Iterator, Optional, Sequence

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms.llm import LLM
from llama_index.core.schema import MetadataMode, NodeWithScore

from llama_index_ragonite.chat.llm_calls import acall_llm, aiter_items, astream_llm, call_llm, stream_llm
from llama_index_ragonite.chat.responses import TurnResult
from llama_index_ragonite.models.extractive import ExtractiveAnswerer
from llama_index_ragonite.models.extractive.answerer import stream_pieces
from llama_index_ragonite.models.synthesizers import ExtractiveSynthesizer

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

    def __init__(self, llm: LLM, embed_model: Optional[BaseEmbedding] = None) -> None:
        """``embed_model``: the store's (the retriever's), which the offline answer scores units with when
        the answerer has none of its own: no second model loaded, one space for retrieval and answer."""
        self.llm = llm
        self.synthesizer: Optional[ExtractiveSynthesizer] = None
        if is_offline(llm):
            self.synthesizer = ExtractiveSynthesizer(answerer=_with_embedding(llm, embed_model))

    def _offline(self, turn: TurnResult, nodes: Sequence[NodeWithScore]) -> str:
        views = [n.node.get_content(metadata_mode=MetadataMode.LLM) for n in nodes]
        return self.synthesizer.answer(turn.completed_question, views)

    def text(self, turn: TurnResult, nodes: Sequence[NodeWithScore]) -> str:
        if self.synthesizer is not None:
            return self._offline(turn, nodes)
        return call_llm(self.llm.complete, turn.prompts["answer"], turn)

    async def atext(self, turn: TurnResult, nodes: Sequence[NodeWithScore]) -> str:
        if self.synthesizer is not None:
            return self._offline(turn, nodes)
        return await acall_llm(self.llm.acomplete, turn.prompts["answer"], turn)

    def deltas(self, turn: TurnResult, nodes: Sequence[NodeWithScore]) -> Iterator[str]:
        if self.synthesizer is not None:
            return stream_pieces(self._offline(turn, nodes))
        return stream_llm(self.llm, turn.prompts["answer"], turn)

    def adeltas(self, turn: TurnResult, nodes: Sequence[NodeWithScore]) -> AsyncIterator[str]:
        if self.synthesizer is not None:
            return aiter_items(list(stream_pieces(self._offline(turn, nodes))))
        return astream_llm(self.llm, turn.prompts["answer"], turn)
