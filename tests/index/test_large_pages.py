"""A page holding one table of thousands of rows (issue 20): every row indexed once, progress shown, linear work.

On the commit before, a 20,000-row page held every vector as a Python list on its node and
wrote all evidences in one Chroma add (refused above 5,461 records), with no progress. Here
nothing is timed: the checks count calls and nodes, and compare allocation peaks at two sizes
with a generous bound, so they cannot flake on a loaded machine.
"""

from __future__ import annotations

import math
import tracemalloc

import pytest
from fakes import HashingEmbedding
from llama_index.core.schema import Document
from llama_index.vector_stores.chroma import ChromaVectorStore

from llama_index_ragonite.index import batches
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.parsing import contextualizer
from llama_index_ragonite.parsing.contextualizer import EvidenceContextualizer


def table_page(rows: int) -> Document:
    """A wiki page: heading, intro, one table (header row, 6 columns of text and numbers), footer."""
    body = "".join(
        f"<tr><td>TC-{i:05d}</td><td>host-{i % 37}.lab</td><td>{('passed', 'failed')[i % 2]}</td>"
        f"<td>{i * 0.7:.1f}</td><td>Owner {i % 5}</td><td>build {1000 + i}</td></tr>"
        for i in range(1, rows + 1)
    )
    html = (
        "<title>Nightly matrix</title><h1>Nightly matrix</h1><p>All hosts run QEMU 7.2.</p>"
        "<table><tr><th>Test</th><th>Host</th><th>Status</th><th>Seconds</th><th>Owner</th><th>Build</th></tr>"
        f"{body}</table><p>Flaky tests are retried twice.</p>"
    )
    return Document(id_="matrix", text=html, metadata={"title": "Nightly matrix", "url": "https://wiki.example/m"})


class CountingHashingEmbedding(HashingEmbedding):
    """Counts the texts it embeds and the largest batch it was given."""

    texts: int = 0
    largest_batch: int = 0
    embed_batch_size: int = 100

    def _get_text_embeddings(self, texts):
        self.texts += len(texts)
        self.largest_batch = max(self.largest_batch, len(texts))
        return [self._vec(t) for t in texts]


@pytest.fixture
def spied(monkeypatch):
    """Every node the contextualizer returns, and at each Chroma add: its size and how many nodes carry a vector."""
    seen = {"nodes": [], "adds": [], "with_vectors": []}
    contextualize, add = EvidenceContextualizer.__call__, ChromaVectorStore.add

    def spy_contextualize(self, nodes, **kwargs):
        out = contextualize(self, nodes, **kwargs)
        seen["nodes"].extend(out)
        return out

    def spy_add(self, nodes, **kwargs):
        seen["adds"].append(len(nodes))
        seen["with_vectors"].append(sum(node.embedding is not None for node in seen["nodes"]))
        return add(self, nodes, **kwargs)

    monkeypatch.setattr(EvidenceContextualizer, "__call__", spy_contextualize)
    monkeypatch.setattr(ChromaVectorStore, "add", spy_add)
    return seen


def test_a_page_of_thousands_of_rows_indexes_every_row_once_in_batches_with_progress(tmp_path, spied, capsys):
    rows = 3000
    model = CountingHashingEmbedding()
    report = EvidenceStore(tmp_path, embed_model=model).ingest([table_page(rows)], show_progress=True)

    evidences = rows + 3  # the rows, the table, the intro and the footer
    assert report.nodes_written == evidences and model.texts == evidences  # each evidence embedded once
    assert model.largest_batch <= model.embed_batch_size
    # Written in slices (Chroma refuses one add above its batch limit), each slice alone carrying vectors
    assert spied["adds"] == [min(batches.WRITE_BATCH, evidences - s) for s in range(0, evidences, batches.WRITE_BATCH)]
    assert max(spied["with_vectors"]) <= batches.WRITE_BATCH
    assert all(node.embedding is None for node in spied["nodes"])

    store = EvidenceStore(tmp_path, embed_model=HashingEmbedding())  # as written to disk
    got = store.vector_store.client.get(include=["metadatas"])
    assert len(got["ids"]) == len(set(got["ids"])) == evidences == len(store.lexical)
    assert set(got["ids"]) == set(store.lexical.node_ids())
    row_indexes = sorted(m["row_index"] for m in got["metadatas"] if m["evidence_type"] == "table_row")
    assert row_indexes == list(range(1, rows + 1))  # no row lost, none twice
    hits = store.lexical.search("TC-02718", 3)
    assert hits[0].node.metadata["row_index"] == 2718 and "QEMU 7.2" in hits[0].node.metadata["context"]

    progress = capsys.readouterr().err
    assert f"Embedding {evidences} evidences" in progress and f"Writing {evidences} evidences" in progress
    assert (
        f"{math.ceil(evidences / model.embed_batch_size)}/{math.ceil(evidences / model.embed_batch_size)}" in progress
    )


def test_quiet_ingest_shows_no_progress(tmp_path, capsys):
    EvidenceStore(tmp_path, embed_model=HashingEmbedding()).ingest([table_page(600)])
    assert "evidences" not in capsys.readouterr().err


def _ingest_measured(folder, rows: int, monkeypatch) -> tuple:
    """(lines read for Before/After context, texts embedded, allocation peak in bytes) of one page's ingest."""
    calls = [0]
    nearest_line = contextualizer.nearest_line

    def counted(*args, **kwargs):
        calls[0] += 1
        return nearest_line(*args, **kwargs)

    monkeypatch.setattr(contextualizer, "nearest_line", counted)
    model = CountingHashingEmbedding()
    store = EvidenceStore(folder, embed_model=model)
    _ = store.vector_store  # Chroma's first open allocates once; not the page's work
    doc = table_page(rows)
    tracemalloc.start()
    try:
        store.ingest([doc])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return calls[0], model.texts, peak


def test_work_and_memory_grow_linearly_with_the_rows(tmp_path, monkeypatch):
    small = _ingest_measured(tmp_path / "small", 400, monkeypatch)
    large = _ingest_measured(tmp_path / "large", 1600, monkeypatch)
    assert large[0] <= 4 * small[0] + 8  # context lines: a constant number per evidence
    assert large[1] == 1603 and small[1] == 403  # every evidence embedded exactly once
    assert large[2] < 6 * small[2]  # 4x the rows: linear gives under 4x, quadratic 16x
