"""A store written before the structure fields gets them from the next ingest, with nothing re-embedded.

The fixture is the previous release's store (``tests/data/release_d648acb``, written before
``parsing/structure.py``'s keys existed). Re-indexing its unchanged pages must fill every evidence's
fields in the lexical copies and in Chroma, keep every vector and every ranking, and record the
structure version in the manifest, after which an ingest is a no-op again.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fakes import HashingEmbedding, wiki_documents

from llama_index_ragonite import EvidenceStore, HybridRetriever
from llama_index_ragonite.index.latent import embed_nodes
from llama_index_ragonite.parsing.structure import HEADINGS, PAGE_ID, STRUCTURE_VERSION

RELEASE = Path(__file__).parents[1] / "data" / "release_d648acb"
QUESTIONS = ("Who is ranking evidences?", "How do I install it?", "Which table holds the owners?", "faq")


class CountingEmbedding(HashingEmbedding):
    """Counts the texts it embeds: a refill must embed none."""

    texts: int = 0

    def _get_text_embedding(self, text: str):
        self.texts += 1
        return super()._get_text_embedding(text)

    def _get_text_embeddings(self, texts):
        self.texts += len(texts)
        return [super(CountingEmbedding, self)._get_text_embedding(t) for t in texts]


def _old_store(tmp_path: Path) -> EvidenceStore:
    shutil.copytree(RELEASE / "store", tmp_path / "store")
    store = EvidenceStore(tmp_path / "store", embed_model=CountingEmbedding())
    nodes = [store.lexical.get_node(node_id) for node_id in store.lexical.node_ids()]
    embed_nodes(HashingEmbedding(), nodes)  # the fixture leaves Chroma out (its README): refill it
    store._open_vector_store().add(nodes)
    return store


def _rankings(store: EvidenceStore) -> list:
    retriever = HybridRetriever.from_store(store, top_n=5)
    return [[(h.node.node_id, round(h.score, 12)) for h in retriever.retrieve(q)] for q in QUESTIONS]


def test_an_old_store_gets_its_structure_fields_without_re_embedding(tmp_path):
    store = _old_store(tmp_path)
    assert "structure" not in store.manifest
    ids = store.lexical.node_ids()
    assert not any(PAGE_ID in store.lexical.get_node(i).metadata for i in ids)  # the fixture predates them
    vectors = store._open_vector_store().client.get(ids=ids, include=["embeddings"])
    before = _rankings(store)

    report = store.ingest(wiki_documents())
    assert report.refilled == len(ids) and report.nodes_written == 0 and store.embed_model.texts == 0
    assert sorted(report.unchanged) == ["faq", "install", "team"] and "structure fields filled" in str(report)
    assert store.lexical.node_ids() == ids  # same rows, same order
    assert all(store.lexical.get_node(i).metadata[PAGE_ID] == store.lexical.get_node(i).ref_doc_id for i in ids)
    held = store._open_vector_store().client.get(ids=ids, include=["metadatas", "embeddings"])
    assert all(m[PAGE_ID] and HEADINGS in m for m in held["metadatas"])  # Chroma's copies too
    by_id = dict(zip(vectors["ids"], vectors["embeddings"].tolist()))
    assert all(by_id[i] == e for i, e in zip(held["ids"], held["embeddings"].tolist()))  # no vector touched
    manifest = json.loads((store.path / "manifest.json").read_text())
    assert manifest["structure"] == STRUCTURE_VERSION

    reopened = EvidenceStore(tmp_path / "store", embed_model=HashingEmbedding())
    assert _rankings(reopened) == before  # node ids, scores and order unchanged
    written = (store.path / "manifest.json").read_text()
    again = reopened.ingest(wiki_documents())
    assert again.refilled == 0 and again.nodes_written == 0
    assert (store.path / "manifest.json").read_text() == written  # a no-op ingest again
    assert reopened.check().ok


def test_an_ingest_of_some_pages_fills_those_and_records_nothing_until_all_are_filled(tmp_path):
    store = _old_store(tmp_path)
    documents = wiki_documents()
    first = store.ingest([d for d in documents if d.id_ == "team"])
    team = [i for i, page in store.lexical.node_pages().items() if page == "team"]
    assert first.refilled == len(team) > 0
    assert all(PAGE_ID in store.lexical.get_node(i).metadata for i in team)
    assert "structure" not in json.loads((store.path / "manifest.json").read_text())  # faq and install lack them
    second = store.ingest(documents)
    assert second.refilled == len(store.lexical) and second.nodes_written == 0
    assert json.loads((store.path / "manifest.json").read_text())["structure"] == STRUCTURE_VERSION


@pytest.mark.fault(
    "store written before the structure fields", "filled on the next ingest; nothing re-embedded", area="index"
)
def test_a_page_whose_held_text_differs_from_its_re_parse_is_indexed_again(tmp_path):
    store = _old_store(tmp_path)
    node_id = next(i for i, page in store.lexical.node_pages().items() if page == "faq")
    node = store.lexical.get_node(node_id)
    node.set_content(node.get_content() + " (edited by hand)")
    store.lexical.upsert([node])  # what the store holds no longer matches a re-parse of the page
    report = store.ingest(wiki_documents())
    assert report.updated == ["faq"] and sorted(report.unchanged) == ["install", "team"]
    assert "(edited by hand)" not in store.lexical.get_node(node_id).text  # indexed again, from the page
    assert all(PAGE_ID in store.lexical.get_node(i).metadata for i in store.lexical.node_ids())
