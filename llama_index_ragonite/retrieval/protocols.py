"""Optional capabilities of retrievers and vector stores, as ``typing.Protocol``s checked with ``isinstance``,
and how a dense side's vectors and model are read through them.

Explanations reuse what retrieval already has: the vectors stored for the evidences (no
re-embedding) and the model that embedded them (to embed answers in the same space). Retrievers
that expose them publicly are read through these protocols, an index through its public
``vector_store``; a stock ``VectorIndexRetriever`` handed over alone keeps both private
(``compat.llama_index_core``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Protocol, Sequence, runtime_checkable

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store import VectorStoreIndex

from llama_index_ragonite.compat import llama_index_core
from llama_index_ragonite.retrieval.index_nodes import is_chroma


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


def embed_model_of(dense: Optional[BaseRetriever]) -> Optional[BaseEmbedding]:
    """The model a dense retriever embeds queries with (read live: it is what the side searches with)."""
    if isinstance(dense, EmbedModelRetriever):
        return dense.embed_model
    return llama_index_core.retriever_embed_model(dense)  # a stock VectorIndexRetriever's, else None


def vector_store_of(dense: Optional[BaseRetriever], index: Optional[VectorStoreIndex] = None) -> Any:
    """The vector store behind a dense side (its index's, public, when the index is known), else None."""
    if index is not None:
        return index.vector_store
    return llama_index_core.retriever_vector_store(dense)  # a stock VectorIndexRetriever's, else None


def stored_embeddings(
    dense: Optional[BaseRetriever], node_ids: Sequence[str], index: Optional[VectorStoreIndex] = None
) -> Dict[str, List[float]]:
    """The vectors the dense side holds for these nodes; ``{}`` where its store cannot return vectors.

    Reads retrievers that know their vectors, Chroma collections (embedded or client/server) and
    ``get``-capable stores (``SimpleVectorStore``).
    """
    if isinstance(dense, StoredEmbeddingsRetriever):
        return dict(dense.stored_embeddings(node_ids))
    store = vector_store_of(dense, index)
    if is_chroma(store):  # its public ``client`` is the collection
        got = store.client.get(ids=list(node_ids), include=["embeddings"])
        return {i: [float(x) for x in e] for i, e in zip(got["ids"], got["embeddings"])}
    out: Dict[str, List[float]] = {}
    if isinstance(store, VectorLookupStore):
        for node_id in node_ids:
            try:
                out[node_id] = list(store.get(node_id))
            except (KeyError, ValueError):
                pass
    return out
