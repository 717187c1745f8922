"""``from_index`` never returns a deleted node or stale text; the strict sync check only where it can hold."""

import asyncio
import logging
import threading
from typing import List

import pytest
from fakes import HashingEmbedding
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from test_from_index import LOGGER, chroma_index, docstore_index, wiki_nodes

from llama_index_ragonite.errors import StoreError
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.retrieval.built_in import BuiltInSides, SideSettings
from llama_index_ragonite.retrieval.retriever import HybridRetriever

FLUX = "The flux capacitor needs 1.21 gigawatts."


@pytest.fixture(params=["docstore", "chroma"])
def index(request, tmp_path):
    return docstore_index() if request.param == "docstore" else chroma_index(tmp_path)


def faq_ids(index) -> List[str]:
    return [n.node_id for n in wiki_nodes() if n.ref_doc_id == "faq"]


def returned(retriever, question, use_async=False):
    hits = asyncio.run(retriever.aretrieve(question)) if use_async else retriever.retrieve(question)
    ids = [h.node.node_id for h in hits]
    assert len(ids) == len(set(ids))  # never a node twice
    return hits


@pytest.mark.parametrize("use_async", [False, True])
def test_delete_one_node_insert_another_is_followed(index, use_async):
    retriever = HybridRetriever.from_index(index, k_dense=2)  # the new nodes need not show up as dense hits
    gone = faq_ids(index)
    assert set(gone) & {h.node.node_id for h in returned(retriever, "reboot afterwards")}
    index.delete_nodes(gone)  # stock API: the vector store forgets them (the docstore keeps them by default)
    padding = [TextNode(id_=f"pad{i}", text=f"padding {i}") for i in range(len(gone) - 1)]
    index.insert_nodes([TextNode(id_="flux", text=FLUX), *padding])  # as many as went: Chroma's count() stays
    for question in ("reboot afterwards", "Which upgrades need a reboot afterwards?"):
        assert not set(gone) & {h.node.node_id for h in returned(retriever, question, use_async)}
    hit = returned(retriever, "How many gigawatts does the flux capacitor need?", use_async)[0]
    assert hit.node.node_id == "flux" and hit.lexical_rank == 1
    assert not set(gone) & set(retriever.lexical.node_ids())


@pytest.mark.parametrize("use_async", [False, True])
def test_a_node_updated_under_the_same_id_is_followed(index, use_async, caplog):
    retriever = HybridRetriever.from_index(index)
    node = next(n for n in wiki_nodes() if n.ref_doc_id == "faq")
    old = node.text
    index.delete_nodes([node.node_id])
    node.text = "Over-the-air upgrades restart the UIVM."
    index.insert_nodes([node])  # same id, new text: the node count and the newest id may stay the same
    with caplog.at_level(logging.INFO, logger=LOGGER):
        hit = returned(retriever, "restart the UIVM", use_async)[0]
    assert hit.node.node_id == node.node_id and hit.lexical_rank == 1
    assert "rebuilt" in caplog.text
    for question in ("restart the UIVM", old, "reboot afterwards"):
        for h in returned(retriever, question, use_async):
            assert h.node.get_content() != old  # never the stale text
            if h.node.node_id == node.node_id:
                assert "UIVM" in h.node.get_content()


def test_an_update_in_place_is_seen_by_the_docstore_signature():
    index = docstore_index()
    retriever = HybridRetriever.from_index(index)
    node = next(n for n in wiki_nodes() if n.ref_doc_id == "faq")
    node.text = "Over-the-air upgrades restart the UIVM."
    index.insert_nodes([node])  # re-inserting the same id keeps its place in the index's listing
    assert retriever.built_in.mirror.changed()
    assert returned(retriever, "restart the UIVM")[0].node.node_id == node.node_id


@pytest.mark.fault(
    "evidence deleted from Chroma while the BM25 copy still has it",
    "the deleted evidence is never returned",
)
def test_a_lexical_hit_deleted_behind_the_signature_is_never_returned(tmp_path):
    index = chroma_index(tmp_path)
    retriever = HybridRetriever.from_index(index)
    gone = faq_ids(index)
    index.vector_store.client.delete(ids=gone)  # count() changes, but pretend nobody looks at it
    retriever.built_in.mirror._signature = ("chroma", index.vector_store.client.count())
    hits = returned(retriever, "Which upgrades need a reboot afterwards?")
    assert hits and not set(gone) & {h.node.node_id for h in hits}


def test_an_unchanged_index_retrieves_exactly_as_a_hand_built_retriever(index, caplog):
    retriever = HybridRetriever.from_index(index)
    lexical = LexicalIndex()
    lexical.upsert(wiki_nodes())
    by_hand = HybridRetriever(BuiltInSides(index, lexical))
    with caplog.at_level(logging.INFO, logger=LOGGER):
        for question in ("reboot afterwards", "Erase and Install", "Who ranks evidences?", "flux"):
            mine = [(h.node.node_id, h.score, h.lexical_rank, h.dense_rank) for h in returned(retriever, question)]
            theirs = [(h.node.node_id, h.score, h.lexical_rank, h.dense_rank) for h in by_hand.retrieve(question)]
            assert mine == theirs
    assert not [r for r in caplog.records if r.name == LOGGER]  # no rebuild


def test_async_checks_the_index_off_the_event_loop(index, monkeypatch):
    retriever = HybridRetriever.from_index(index)
    threads = []
    changed = retriever.built_in.mirror.changed

    def recording():
        threads.append(threading.current_thread())
        return changed()

    monkeypatch.setattr(retriever.built_in.mirror, "changed", recording)
    asyncio.run(retriever.aretrieve("reboot afterwards"))
    assert threads and threading.main_thread() not in threads


class OtherNodes(BaseRetriever):
    """A dense side returning nodes the lexical index never held (as AutoMergingRetriever's parents)."""

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        return [NodeWithScore(node=TextNode(id_="parent", text="A merged parent section."), score=0.9)]


def test_a_dense_side_that_is_not_a_vector_index_retriever_may_return_other_nodes():
    lexical = LexicalIndex()
    lexical.upsert(wiki_nodes())
    retriever = HybridRetriever(BuiltInSides(OtherNodes(), lexical))
    for hits in (retriever.retrieve("reboot afterwards"), asyncio.run(retriever.aretrieve("reboot afterwards"))):
        parent = next(h for h in hits if h.node.node_id == "parent")
        assert parent.dense_rank == 1 and parent.lexical_rank is None  # fused as a dense-only hit
        assert any(h.lexical_rank == 1 for h in hits)


def test_auto_merging_parents_are_fused_as_dense_only_hits():
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.node_parser import HierarchicalNodeParser, get_leaf_nodes
    from llama_index.core.retrievers import AutoMergingRetriever
    from llama_index.core.schema import Document

    text = " ".join(f"The flux capacitor part {i} needs gigawatts." for i in range(40))
    nodes = HierarchicalNodeParser.from_defaults(chunk_sizes=[256, 64])([Document(text=text, id_="flux")])
    leaves = get_leaf_nodes(nodes)
    storage = StorageContext.from_defaults()
    storage.docstore.add_documents(nodes)
    index = VectorStoreIndex(leaves, storage_context=storage, embed_model=HashingEmbedding())
    lexical = LexicalIndex()
    lexical.upsert(leaves)
    dense = AutoMergingRetriever(index.as_retriever(similarity_top_k=len(leaves)), storage)
    retriever = HybridRetriever(BuiltInSides(dense, lexical, settings=SideSettings(k_dense=len(leaves))))
    hits = retriever.retrieve("flux capacitor gigawatts")
    leaf_ids = {n.node_id for n in leaves}
    assert any(h.node.node_id not in leaf_ids and h.lexical_rank is None for h in hits)  # a merged parent


@pytest.mark.fault("BM25 side out of sync with a hand-built vector retriever", "StoreError ('out of sync')")
def test_a_vector_index_retriever_out_of_sync_is_still_an_error():
    index = docstore_index()
    lexical = LexicalIndex()
    lexical.upsert(n for n in wiki_nodes() if n.ref_doc_id != "faq")
    with pytest.raises(StoreError, match="out of sync"):
        HybridRetriever(BuiltInSides(index.as_retriever(similarity_top_k=10), lexical)).retrieve("reboot afterwards")


@pytest.mark.fault(
    "index keeps changing under a running retrieval",
    "one logged rebuild, then StoreError ('still out of step'); never a stale result",
)
def test_a_hit_still_out_of_step_after_a_rebuild_is_an_error_not_a_result(monkeypatch, caplog):
    retriever = HybridRetriever.from_index(docstore_index())
    monkeypatch.setattr(retriever.built_in.mirror, "stale_hit", lambda sides: "changing")  # the index changes under us
    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(StoreError, match="still out of step"):
        retriever.retrieve("reboot afterwards")
    assert "rebuilt" in caplog.text
    with pytest.raises(StoreError, match="still out of step"):
        asyncio.run(retriever.aretrieve("reboot afterwards"))
