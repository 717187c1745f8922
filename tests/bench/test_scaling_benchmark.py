"""The scaling experiment at a tiny size: the generator, both build parts, the reader's measurement and the report."""

from __future__ import annotations

import numpy as np
from experiments import scaling
from harness.runner import Bench, parser
from harness.synthetic import DIM, TERMS, Corpus


def test_corpus_is_seeded_wiki_like_and_sized():
    def draw():
        corpus = Corpus(500, seed=3, queries=20)
        return [(nodes, terms, queries) for _, nodes, terms, queries in corpus.pages()]

    first, again = draw(), draw()
    nodes = [node for page_nodes, _, _ in first for node in page_nodes]
    assert len(nodes) == 500 and len({n.node_id for n in nodes}) == 500
    assert [n.text for n in nodes] == [n.text for page_nodes, _, _ in again for n in page_nodes]
    assert {n.metadata["evidence_type"] for n in nodes} == {"passage", "list", "table_row"}
    assert all(n.metadata["title"] and n.ref_doc_id and n.metadata["context"].startswith("Page: ") for n in nodes)
    vectors = np.array([n.embedding for n in nodes])
    assert vectors.shape == (500, DIM) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    terms = [t for _, page_terms, _ in first for t in page_terms]
    assert all(len(ids) == len(set(ids.tolist())) == TERMS for ids, _ in terms)
    queries = [q for _, _, page_queries in first for q in page_queries]
    assert len(queries) == 20 and all(q["source"] in {n.node_id for n in nodes} for q in queries)


def test_build_measure_and_report_at_500(tmp_path):
    argv = ["--cache", str(tmp_path), "--set", "sizes=500", "--set", "queries=12"]
    bench = Bench(scaling, parser().parse_args(["scaling", *argv]), argv)
    (row,) = scaling.measured(bench)
    assert row["queries"] == 12 and row["pages"] > 0
    assert set(row["build_rss_mb"]) == {"vectors", "terms"} and row["disk_mb"] > 0
    for side in ("lexical", "latent", "dense", "titles", "fused"):
        assert row[side]["p50_ms"] > 0 and row[side]["p95_ms"] >= row[side]["p50_ms"]
    assert row["fused"]["hits10"] > 0.5  # the index finds the evidence a query was drawn from
    plot = tmp_path / "scaling.png"
    scaling.draw([row, row], plot)
    text = "\n".join([*bench.header(), *scaling.report([row], plot)])
    assert plot.stat().st_size > 0
    assert "| 500 |" in text and "Fused p50 at 500" in text and "hits@1 / hits@10" in text
    assert "build peak RSS MB" in text and "commit" in text and "load average" in text
