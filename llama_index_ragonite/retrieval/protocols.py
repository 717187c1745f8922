"""Optional capabilities of retrievers and vector stores, as ``typing.Protocol``s checked with ``isinstance``.

Explanations reuse what retrieval already has: the vectors stored for the evidences (no
re-embedding) and the model that embedded them (to embed answers in the same space).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Protocol, Sequence, runtime_checkable

from llama_index.core.base.embeddings.base import BaseEmbedding


@runtime_checkable
class StoredEmbeddingsRetriever(Protocol):
    """Knows the vectors its index holds for its nodes (``{}`` for nodes it does not hold)."""

    def stored_embeddings(self, node_ids: Sequence[str]) -> Dict[str, List[float]]: ...


@runtime_checkable
class EmbedModelRetriever(Protocol):
    """Exposes the embedding model its dense side searches with (None when it has none)."""

    @property
    def embed_model(self) -> Optional[BaseEmbedding]: ...


@runtime_checkable
class VectorLookupStore(Protocol):
    """A vector store that returns one node's stored vector by id (``SimpleVectorStore``);
    raises ``KeyError`` (or ``ValueError``) for ids it does not hold."""

    def get(self, text_id: str) -> List[float]: ...
