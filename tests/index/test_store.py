import asyncio

import pytest
from fakes import WIKI_PAGES, HashingEmbedding, KeywordReranker, collected_events, wiki_documents
from llama_index.core.schema import MetadataMode

from llama_index_ragonite.errors import StoreLockedError
from llama_index_ragonite.events import RetrievalHitsEvent
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.index.store import EvidenceStore, StoreError
from llama_index_ragonite.retrieval.built_in import BuiltInSides
from llama_index_ragonite.retrieval.fusion import rrf_scores
from llama_index_ragonite.retrieval.retriever import HybridRetriever

PAGES = WIKI_PAGES
docs = wiki_documents


def store_at(path, **kwargs):
    return EvidenceStore(path, embed_model=HashingEmbedding(), **kwargs)


def counts(store):
    return store.vector_store._collection.count(), len(store.lexical)


def test_ingest_is_idempotent_and_tracks_changes(tmp_path):
    store = store_at(tmp_path)
    report = store.ingest(docs())
    assert sorted(report.added) == ["faq", "install", "team"] and report.nodes_written == 6
    steps = ["parse + contextualize", "embed", "vector store", "lexical index", "persist"]
    assert list(report.seconds) == steps and all(v >= 0 for v in report.seconds.values())
    assert counts(store) == (6, 6)

    again = store_at(tmp_path).ingest(docs())
    assert sorted(again.unchanged) == ["faq", "install", "team"] and again.nodes_written == 0
    assert counts(store_at(tmp_path)) == (6, 6)

    changed = dict(PAGES, faq="<title>FAQ</title><h2>Upgrades</h2><p>Upgrades restart the UIVM.</p><p>x</p>")
    store = store_at(tmp_path)
    report = store.ingest(docs(changed))
    assert report.updated == ["faq"] and sorted(report.unchanged) == ["install", "team"]
    assert counts(store) == (6, 6)
    hits = HybridRetriever.from_store(store, top_n=3).retrieve("restart UIVM")
    assert hits[0].node.text == "Upgrades restart the UIVM.\nx"
    assert not any(
        "reboot afterwards" in h.node.text
        for h in HybridRetriever.from_store(store, top_n=10).retrieve("reboot afterwards")
    )

    del changed["team"]
    report = store_at(tmp_path).ingest(docs(changed), remove_missing=True)
    assert report.removed == ["team"]
    store = store_at(tmp_path)
    assert counts(store) == (3, 3) and store.page_ids() == ["faq", "install"]


def test_node_ids_in_both_indexes_agree_and_have_no_duplicates(tmp_path):
    store = store_at(tmp_path)
    store.ingest(docs())
    store.ingest(docs())
    chroma_ids = sorted(store.vector_store._collection.get()["ids"])
    assert chroma_ids == sorted(store.lexical.node_ids()) and len(set(chroma_ids)) == len(chroma_ids)


@pytest.mark.fault("store opened with another embedding model", "StoreError naming the recorded model")
def test_reopen_gives_the_same_results_and_model_mismatch_is_an_error(tmp_path):
    store_at(tmp_path).ingest(docs())
    first = [
        (h.node.node_id, h.score)
        for h in HybridRetriever.from_store(store_at(tmp_path)).retrieve("Who ranks evidences?")
    ]
    second = [
        (h.node.node_id, h.score)
        for h in HybridRetriever.from_store(store_at(tmp_path)).retrieve("Who ranks evidences?")
    ]
    assert first == second and first[0][0]
    with pytest.raises(StoreError, match="built with embedding model 'HashingEmbedding:hashing-bow'"):
        EvidenceStore(tmp_path, embed_model=HashingEmbedding(model_name="other"))


@pytest.mark.fault(
    "duplicate document ids in one ingest",
    "ValueError naming the ids ('Duplicate document ids'); nothing written",
)
@pytest.mark.fault("store manifest is not JSON", "StoreError ('unreadable')")
@pytest.mark.fault(
    "store folder cannot be created (a file in its path)",
    "StoreError ('cannot create the store folder')",
)
def test_bad_store_input(tmp_path):
    with pytest.raises(StoreError, match="holds no pages yet"):
        HybridRetriever.from_store(store_at(tmp_path / "empty"))
    with pytest.raises(ValueError, match="Duplicate document ids"):
        store_at(tmp_path / "dup").ingest(docs() + docs())
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "manifest.json").write_text("{oops")
    with pytest.raises(StoreError, match="unreadable"):
        store_at(tmp_path / "broken")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="cannot create"):
        store_at(blocker / "store").ingest(docs())


@pytest.mark.fault(
    "a second process indexes while one holds the writer lock",
    "StoreLockedError ('being updated by another process'); a stale handle reloads before writing, nothing lost",
)
def test_a_second_writer_is_refused_and_a_stale_handle_catches_up(tmp_path):
    import subprocess
    import sys

    first = store_at(tmp_path / "s")
    first.ingest(docs())
    holder = subprocess.Popen(  # another process in the middle of an ingest: it holds the writer lock
        [
            sys.executable,
            "-c",
            "import fcntl,sys,time; f=open(sys.argv[1],'a'); fcntl.flock(f, fcntl.LOCK_EX); "
            "print('locked', flush=True); time.sleep(60)",
            str(tmp_path / "s" / ".ingest.lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(StoreLockedError, match="being updated by another process"):
            store_at(tmp_path / "s").ingest(docs({"extra": "<p>More</p>"}))
    finally:
        holder.kill()
        holder.wait()
    # A handle opened before another writer changed the store reloads before writing: nothing is lost.
    stale = store_at(tmp_path / "s")
    store_at(tmp_path / "s").ingest(docs({**PAGES, "extra": "<title>Extra</title><p>Late page</p>"}))
    stale.ingest(docs({**PAGES, "more": "<title>More</title><p>Another page</p>"}))
    reopened = store_at(tmp_path / "s")
    assert reopened.page_ids() == ["extra", "faq", "install", "more", "team"]
    assert {n.ref_doc_id for n in map(reopened.lexical.get_node, reopened.lexical.node_ids())} == set(
        reopened.page_ids()
    )
    assert counts(reopened)[0] == counts(reopened)[1]


# ---- retrieval ------------------------------------------------------------------


@pytest.fixture
def store(tmp_path):
    s = store_at(tmp_path)
    s.ingest(docs())
    return s


def test_rrf_keeps_per_side_ranks_and_scores(store):
    hits = HybridRetriever.from_store(store, k_lexical=3, k_dense=3, top_n=4).retrieve("Bob ranking evidences")
    assert len(hits) <= 4
    lexical = [h for h in hits if h.lexical_rank is not None]
    dense = [h for h in hits if h.dense_rank is not None]
    assert lexical and dense
    for h in hits:
        expected = rrf_scores([[x.node.node_id for x in sorted(lexical, key=lambda x: x.lexical_rank)]]).get(
            h.node.node_id, 0
        )
        ranks = [r for r in (h.lexical_rank, h.dense_rank) if r is not None]
        assert h.score == pytest.approx(sum(1 / (60 + r) for r in ranks))
        assert expected <= h.score
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert "Bob" in hits[0].node.text


def test_cross_lingual_questions_weigh_the_lexical_ranking_less(store):
    retriever = HybridRetriever.from_store(store, k_lexical=3, k_dense=3, top_n=6, cross_lingual_lexical_weight=0.25)
    assert retriever.built_in.settings.lexical_weight("Who ranks the evidences?") == 1.0
    assert retriever.built_in.settings.lexical_weight("Wer ist für das Ranking der Evidenzen zuständig?") == 0.25
    for hit in retriever.retrieve("Wer ist für das Ranking der Evidenzen zuständig?"):
        lexical = 0.25 / (60 + hit.lexical_rank) if hit.lexical_rank else 0.0
        dense = 1 / (60 + hit.dense_rank) if hit.dense_rank else 0.0
        assert hit.score == pytest.approx(lexical + dense)
    off = HybridRetriever.from_store(store, corpus_language=None)
    assert off.built_in.settings.lexical_weight("Wer ist für das Ranking der Evidenzen zuständig?") == 1.0
    with pytest.raises(ValueError, match="between 0 and 1"):
        HybridRetriever.from_store(store, cross_lingual_lexical_weight=2)


COPIES = {  # the same table on two pages; only the title says which release it belongs to
    f"hw{v}": f"<title>OpenXT {v}.0 Hardware Testing</title><h1>Results</h1><table><tr><th>Laptop</th><th>Result</th></tr>"
    "<tr><td>Dell Latitude</td><td>passed</td></tr><tr><td>HP EliteBook</td><td>passed</td></tr></table>"
    for v in (6, 7)
}


def test_the_page_title_ranking_tells_page_copies_apart(tmp_path):
    from llama_index_ragonite import EvidenceContextualizer

    questions = {v: f"Did the Dell Latitude pass the OpenXT {v}.0 hardware testing?" for v in (6, 7)}
    store = store_at(tmp_path / "ALL")
    store.ingest(docs(dict(PAGES, **COPIES)))
    for v, question in questions.items():
        hits = HybridRetriever.from_store(store, top_n=4).retrieve(question)
        assert hits[0].node.ref_doc_id == f"hw{v}"
        assert {h.title_rank for h in hits if h.node.ref_doc_id == f"hw{v}"} == {1}  # a page's nodes share its rank
        for h in hits:  # RRF over lexical, dense and page-title ranks
            ranks = [r for r in (h.lexical_rank, h.dense_rank, h.title_rank) if r is not None]
            assert h.score == pytest.approx(sum(1 / (60 + r) for r in ranks))
        assert all(h.title_rank is None for h in HybridRetriever.from_store(store, title_weight=0).retrieve(question))

    # Without context the two copies' evidences are the same text: only the title ranking can tell
    # them apart, and a store built without titles as context leaves it off unless asked.
    bare = store_at(tmp_path / "NONE", contextualizer=EvidenceContextualizer.from_setting("NONE"))
    bare.ingest(docs(dict(PAGES, **COPIES)))
    assert HybridRetriever.from_store(bare).built_in.settings.title_weight == 0
    firsts = {v: HybridRetriever.from_store(bare, top_n=2).retrieve(q)[0].node.ref_doc_id for v, q in questions.items()}
    assert firsts[6] == firsts[7]
    assert {
        v: HybridRetriever.from_store(bare, top_n=2, title_weight=1).retrieve(q)[0].node.ref_doc_id
        for v, q in questions.items()
    } == {
        6: "hw6",
        7: "hw7",
    }
    with pytest.raises(ValueError, match="title_weight"):
        HybridRetriever.from_store(store, title_weight=-1)


def test_rerank_and_rerank_plus_rrf(store):
    reranked = HybridRetriever.from_store(store, fusion="rerank", reranker=KeywordReranker()).retrieve("erase install")
    assert reranked[0].node.text.startswith("1. Boot the installer") and reranked[0].rerank_rank == 1
    assert reranked[0].score == reranked[0].rerank_score == 2.0
    both = HybridRetriever.from_store(store, fusion="rerank+rrf", reranker=KeywordReranker()).retrieve("erase install")
    h = both[0]
    ranks = [r for r in (h.lexical_rank, h.dense_rank, h.rerank_rank, h.title_rank) if r is not None]
    assert h.score == pytest.approx(sum(1 / (60 + r) for r in ranks))
    with pytest.raises(ValueError, match="needs a reranker"):
        HybridRetriever.from_store(store, fusion="rerank")


def test_async_matches_sync_and_events_trace_each_step(store):
    with collected_events() as fired:
        retriever = HybridRetriever.from_store(store)
        sync = [(h.node.node_id, h.score) for h in retriever.retrieve("installer reboot")]
        async_ = [(h.node.node_id, h.score) for h in asyncio.run(retriever.aretrieve("installer reboot"))]
    events = [e for e in fired if isinstance(e, RetrievalHitsEvent)]
    assert sync == async_
    assert [e.source for e in events[:4]] == ["lexical", "dense", "title", "fused"]
    assert events[3].node_ids == [i for i, _ in sync]


@pytest.mark.fault("search query is blank", "ValueError ('Empty query')", area="retrieval")
def test_empty_query_is_an_error(store):
    with pytest.raises(ValueError, match="Empty query"):
        HybridRetriever.from_store(store).retrieve("  ")
    with pytest.raises(ValueError):
        HybridRetriever(BuiltInSides(HybridRetriever.from_store(store).dense, store.lexical), top_n=0)


def test_stored_embeddings_are_the_vectors_the_index_holds(store):
    retriever = HybridRetriever.from_store(store)
    hits = retriever.retrieve("installer reboot")
    ids = [h.node.node_id for h in hits]
    vectors = retriever.stored_embeddings(ids + ["no-such-node"])
    assert sorted(vectors) == sorted(ids)
    for h in hits:  # what HashingEmbedding gives the EMBED view, i.e. what was indexed
        expected = HashingEmbedding().get_text_embedding(h.node.get_content(MetadataMode.EMBED))
        assert vectors[h.node.node_id] == pytest.approx(expected, abs=1e-6)
    assert retriever.embed_model is store.embed_model


def test_stored_embeddings_of_a_simple_vector_store():
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    nodes = [TextNode(id_="a", text="boot the installer"), TextNode(id_="b", text="erase the disk")]
    index = VectorStoreIndex(nodes, embed_model=HashingEmbedding())
    lexical = LexicalIndex()
    lexical.upsert(nodes)
    retriever = HybridRetriever(BuiltInSides(index, lexical))
    vectors = retriever.stored_embeddings(["a", "missing"])
    assert list(vectors) == ["a"]
    assert vectors["a"] == pytest.approx(HashingEmbedding().get_text_embedding("boot the installer"))


def test_a_store_built_with_the_after_line_at_the_end_keeps_that_placement_when_reopened(tmp_path):
    from llama_index_ragonite import EvidenceContextualizer

    store = store_at(tmp_path / "end", contextualizer=EvidenceContextualizer(after_position="end"))
    store.ingest(docs())
    reopened = store_at(tmp_path / "end")  # no contextualizer given: the one the manifest recorded
    assert reopened.contextualizer.after_position == "end"
    hits = HybridRetriever.from_store(reopened, top_n=10).retrieve("How do I install the team tools?")
    views = [h.node.get_content(MetadataMode.LLM) for h in hits]
    assert any(v.split("\n\n")[-1].startswith("After: ") for v in views), views  # Chroma kept the template
    assert not any(v.split("\n\n")[0].split("\n")[-1].startswith("After: ") for v in views)


class _Unnamed(HashingEmbedding):
    """A user's own embedding class that names itself not (LlamaIndex's class_name: "base_component")."""

    @classmethod
    def class_name(cls) -> str:
        return "base_component"


class _OtherUnnamed(_Unnamed):
    pass


@pytest.mark.fault(
    "a store opened with another custom embedding class of the same dimension",
    "StoreError at open naming both models (they were both 'base_component:unknown')",
)
def test_two_custom_embeddings_of_one_dimension_are_told_apart(tmp_path):
    store = EvidenceStore(tmp_path / "s", embed_model=_Unnamed())
    store.ingest(docs())
    recorded = store.manifest["embed_model"]
    assert recorded.endswith("test_store._Unnamed:" + _Unnamed().model_name)
    EvidenceStore(tmp_path / "s", embed_model=_Unnamed())  # the same class opens it
    with pytest.raises(StoreError, match="_Unnamed.*_OtherUnnamed"):
        EvidenceStore(tmp_path / "s", embed_model=_OtherUnnamed())


def test_a_store_that_recorded_an_unnamed_class_before_keeps_opening_with_it(tmp_path):
    import json

    store = EvidenceStore(tmp_path / "s", embed_model=_Unnamed())
    store.ingest(docs())
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    manifest["embed_model"] = "base_component:" + _Unnamed().model_name  # as written before this release
    (tmp_path / "s" / "manifest.json").write_text(json.dumps(manifest))
    assert len(EvidenceStore(tmp_path / "s", embed_model=_OtherUnnamed())) == len(store)  # as it did
    with pytest.raises(StoreError, match="base_component"):
        EvidenceStore(tmp_path / "s", embed_model=HashingEmbedding())
    manifest["embed_model"] = "__main__._Unnamed:" + _Unnamed().model_name  # built in a notebook
    (tmp_path / "s" / "manifest.json").write_text(json.dumps(manifest))
    assert len(EvidenceStore(tmp_path / "s", embed_model=_Unnamed())) == len(store)  # the class, imported
    with pytest.raises(StoreError, match="_OtherUnnamed"):
        EvidenceStore(tmp_path / "s", embed_model=_OtherUnnamed())
