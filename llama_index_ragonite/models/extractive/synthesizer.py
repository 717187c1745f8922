"""``ExtractiveSynthesizer``: the offline answer as a LlamaIndex response synthesizer: nodes in, answer out.

Why: whoever holds the retrieved nodes (a stock ``RetrieverQueryEngine``, our chat engine) should not
have to number them into a prompt for the offline answerer to parse them back. The synthesizer reads
each node's LLM view (what a prompt numbers as a source: the contextualizer's page, section and
neighbour lines, then the evidence), in the order given, and hands the sources to
``ExtractiveAnswerer.answer_sources``, where the prompt path ends too: both answer alike, citing
``[Source i]`` for the i-th node.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from llama_index.core.callbacks import CallbackManager
from llama_index.core.response_synthesizers.base import BaseSynthesizer
from llama_index.core.types import RESPONSE_TEXT_TYPE

from llama_index_ragonite.models.extractive.answerer import ExtractiveAnswerer, stream_pieces
from llama_index_ragonite.models.extractive.prompt import node_source, plain_question

__all__ = ["ExtractiveSynthesizer"]


class ExtractiveSynthesizer(BaseSynthesizer):
    """``ExtractiveAnswerer`` over nodes (``answerer=``: a configured one; default: the embedded default's)."""

    answers_from_nodes = True  # no template to inspect: its answers depend on the nodes (AttributedSynthesizer)

    def __init__(
        self,
        answerer: Optional[ExtractiveAnswerer] = None,
        streaming: bool = False,
        callback_manager: Optional[CallbackManager] = None,
    ) -> None:
        self._answerer = answerer or ExtractiveAnswerer()
        super().__init__(llm=self._answerer, streaming=streaming, callback_manager=callback_manager)

    @property
    def answerer(self) -> ExtractiveAnswerer:
        return self._answerer

    def _get_prompts(self) -> dict:
        return {}

    def _update_prompts(self, prompts: dict) -> None:
        """No prompt: the answer is read from the nodes."""

    def answer(self, question: str, views: Sequence[str]) -> str:
        """The answer text to ``question`` from the nodes' LLM views, the i-th cited ``[Source i]``."""
        sources = [node_source(i, view) for i, view in enumerate(views, 1)]
        return self._answerer.answer_sources(plain_question(question), sources)

    def get_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> RESPONSE_TEXT_TYPE:
        text = self.answer(query_str, text_chunks)
        return stream_pieces(text) if self._streaming else text

    async def aget_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> RESPONSE_TEXT_TYPE:
        return self.get_response(query_str, text_chunks, **kwargs)
