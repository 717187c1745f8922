"""What a dense side's retriever knows but llama-index-core 0.14 keeps private: the one place that reads it.

``VectorIndexRetriever`` keeps its vector store and the embedding model it embeds queries
with in private attributes (``_vector_store``, ``_embed_model``) and offers no public
accessor (nor does ``VectorStoreIndex`` for its model). Explanations need both: the vectors
stored for the evidences (no re-embedding) and the model that made them. Retrievers that
expose them publicly (``EmbedModelRetriever``, ``StoredEmbeddingsRetriever``) are read
through those instead.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store import VectorIndexRetriever, VectorStoreIndex

from llama_index_ragonite.retrieval.index_nodes import is_chroma
from llama_index_ragonite.retrieval.protocols import EmbedModelRetriever, StoredEmbeddingsRetriever, VectorLookupStore


def embed_model_of(dense: Optional[BaseRetriever]) -> Optional[BaseEmbedding]:
    """The model a dense retriever embeds queries with (read live: it is what the side searches with)."""
    if isinstance(dense, EmbedModelRetriever):
        return dense.embed_model
    if isinstance(dense, VectorIndexRetriever):
        return dense._embed_model  # private in llama-index-core 0.14 (see module doc)
    return None


def vector_store_of(dense: Optional[BaseRetriever], index: Optional[VectorStoreIndex] = None):
    """The vector store behind a dense side (its index's, public, when the index is known), else None."""
    if index is not None:
        return index.vector_store
    if isinstance(dense, VectorIndexRetriever):
        return dense._vector_store  # private in llama-index-core 0.14 (see module doc)
    return None


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
