"""benchmarks/scaling.py at a tiny size: the generator, both build parts, the reader's measurement and the report."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def scaling():
    spec = importlib.util.spec_from_file_location("scaling_benchmark", ROOT / "benchmarks" / "scaling.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_corpus_is_seeded_wiki_like_and_sized(scaling):
    def draw():
        corpus = scaling.Corpus(500, seed=3, queries=20)
        return [(nodes, terms, queries) for _, nodes, terms, queries in corpus.pages()]

    first, again = draw(), draw()
    nodes = [node for page_nodes, _, _ in first for node in page_nodes]
    assert len(nodes) == 500 and len({n.node_id for n in nodes}) == 500
    assert [n.text for n in nodes] == [n.text for page_nodes, _, _ in again for n in page_nodes]
    assert {n.metadata["evidence_type"] for n in nodes} == {"passage", "list", "table_row"}
    assert all(n.metadata["title"] and n.ref_doc_id and n.metadata["context"].startswith("Page: ") for n in nodes)
    vectors = np.array([n.embedding for n in nodes])
    assert vectors.shape == (500, scaling.DIM) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    terms = [t for _, page_terms, _ in first for t in page_terms]
    assert all(len(ids) == len(set(ids.tolist())) == scaling.TERMS for ids, _ in terms)
    queries = [q for _, _, page_queries in first for q in page_queries]
    assert len(queries) == 20 and all(q["source"] in {n.node_id for n in nodes} for q in queries)


def test_build_measure_and_report_at_500(scaling, tmp_path):
    args = argparse.Namespace(seed=0, queries=12)
    folder = tmp_path / "store"
    built = scaling.build_both(folder, args, 500)
    measured = scaling.measure_apart(folder, args, 500)
    row = {**built, **measured}
    assert row["queries"] == 12 and row["pages"] > 0
    assert set(row["build_rss_mb"]) == {"vectors", "terms"} and row["disk_mb"] > 0
    for side in ("lexical", "latent", "dense", "titles", "fused"):
        assert row[side]["p50_ms"] > 0 and row[side]["p95_ms"] >= row[side]["p50_ms"]
    assert row["fused"]["hits10"] > 0.5  # the index finds the evidence a query was drawn from
    plot = tmp_path / "scaling.png"
    scaling.draw([row, row], plot)
    text = scaling.report([row], "python benchmarks/scaling.py --sizes 500", scaling.machine(), plot)
    assert plot.stat().st_size > 0
    assert "| 500 |" in text and "Fused p50 at 500" in text and "hits@1 / hits@10" in text
    assert "build peak RSS MB" in text and "Commit:" in text and "load average" in text
