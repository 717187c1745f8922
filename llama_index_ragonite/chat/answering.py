"""The answer step of a turn: nodes in, answer out, through the engine's one answer synthesizer.

Offline the ``ExtractiveSynthesizer`` reads the retrieved nodes themselves; an LLM answers through the
``CitedSynthesizer`` on the answer prompt (the paper's, with the numbered sources and the conversation). The
turn goes along as the synthesizer's ``record``: the synthesizer notes the prompt an LLM received (offline:
the nodes read, no prompt), the LLM's failures (``models.llm_calls``: clear errors, garbled output warned,
broken-off streams marked) and the answer's citations, checked once (``models.cited_answers``).
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Iterator, List, Optional, Sequence, cast

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.base.response.schema import AsyncStreamingResponse, Response, StreamingResponse
from llama_index.core.callbacks import CallbackManager, EventPayload
from llama_index.core.llms.llm import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.response_synthesizers.base import BaseSynthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle

from llama_index_ragonite.chat.responses import TurnResult
from llama_index_ragonite.models.extractive import ExtractiveAnswerer
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
    """How one engine answers: ``text``/``deltas`` (and their async forms) for a turn, its history and nodes.

    ``deltas`` return the synthesizer's checked stream: once consumed or closed, ``deltas.answer`` is the
    answer with its citations checked."""

    def __init__(
        self,
        llm: LLM,
        embed_model: Optional[BaseEmbedding] = None,
        answer_prompt: BasePromptTemplate = ANSWER_PROMPT,
        callback_manager: Optional[CallbackManager] = None,
    ) -> None:
        """``embed_model``: the store's (the retriever's), which the offline answer scores units with when
        the answerer has none of its own: no second model loaded, one space for retrieval and answer."""
        self.synthesizer: BaseSynthesizer = (
            ExtractiveSynthesizer(
                answerer=_with_embedding(cast(ExtractiveAnswerer, llm), embed_model), callback_manager=callback_manager
            )
            if is_offline(llm)
            else CitedSynthesizer(llm=llm, answer_prompt=answer_prompt, callback_manager=callback_manager)
        )

    def _asked(self, turn: TurnResult, history: Sequence[ChatMessage], **kwargs: Any) -> dict:
        return {"history": list(history), "record": turn, **kwargs}

    def text(self, turn: TurnResult, history: Sequence[ChatMessage], nodes: List[NodeWithScore]) -> str:
        response = self.synthesizer.synthesize(turn.completed_question, nodes, **self._asked(turn, history))
        return str(cast(Response, response).response)

    async def atext(self, turn: TurnResult, history: Sequence[ChatMessage], nodes: List[NodeWithScore]) -> str:
        response = await self.synthesizer.asynthesize(turn.completed_question, nodes, **self._asked(turn, history))
        return str(cast(Response, response).response)

    def deltas(self, turn: TurnResult, history: Sequence[ChatMessage], nodes: List[NodeWithScore]) -> Iterator[str]:
        asked = self._asked(turn, history, streaming=True)
        response = cast(StreamingResponse, self.synthesizer.synthesize(turn.completed_question, nodes, **asked))
        return response.response_gen

    async def adeltas(
        self, turn: TurnResult, history: Sequence[ChatMessage], nodes: List[NodeWithScore]
    ) -> AsyncIterator[str]:
        asked = self._asked(turn, history, streaming=True)
        response = await self.synthesizer.asynthesize(turn.completed_question, nodes, **asked)
        return cast(AsyncStreamingResponse, response).response_gen


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
