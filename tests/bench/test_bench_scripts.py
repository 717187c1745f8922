"""The pieces the scripts under benchmarks/ share: slices, report tail, store folders, caches, local LLM server."""

from __future__ import annotations

import json
import pickle
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from fakes import CountingEmbedding, HashingEmbedding, wiki_documents
from harness import default_data, finish_report, shown
from harness.llm_server import LocalLLMServer
from harness.store import ALL_STORE, rebuilt_copy, settle_vectors, store_folder

from llama_index_ragonite.bench.confquestions import Question
from llama_index_ragonite.bench.embed_cache import CachedEmbedding
from llama_index_ragonite.bench.slices import question_slices
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.retrieval.retriever import HybridRetriever


def _question(**changes) -> Question:
    fields = dict(
        conv_id="1",
        turn=1,
        lang="en",
        question="q",
        completed="q",
        gold_urls=("u",),
        answer="a",
        source="table",
        q_type="simple",
    )
    return Question(**{**fields, **changes})


def test_question_slices_keep_the_order_asked_for():
    slices = question_slices("table", "all", "turns 2+")
    assert list(slices) == ["table", "all", "turns 2+"]
    assert slices["table"](_question()) and not slices["turns 2+"](_question())
    assert slices["turns 2+"](_question(turn=3))


def test_finish_report_prints_writes_and_returns_the_status(tmp_path, capsys):
    out = tmp_path / "report.md"
    assert finish_report(["# Title", "", "body"], out, status=1) == 1
    assert out.read_text() == "# Title\n\nbody\n"
    assert capsys.readouterr().out == "# Title\n\nbody\n\n"
    assert finish_report(["x"], None) == 0


def test_paths_beside_the_repository(tmp_path, monkeypatch):
    monkeypatch.delenv("CONFQUESTIONS_DIR", raising=False)
    repo = tmp_path / "repo"
    assert default_data(repo) == tmp_path / "shared" / "datasets" / "confquestions"
    assert shown(repo / "benchmarks" / "x", repo.resolve()) == "benchmarks/x"
    assert shown(tmp_path / "elsewhere", repo.resolve()) == str(tmp_path / "elsewhere")
    assert store_folder(tmp_path, "ALL").name == ALL_STORE
    assert store_folder(tmp_path, "TTL", "minilm-").name == "retrieval-minilm-TTL"


def test_cached_embedding_embeds_each_text_once():
    inner = CountingEmbedding()
    inner.texts = []
    cached = CachedEmbedding(inner)
    first = cached.get_text_embedding_batch(["a", "b", "a"])
    again = cached.get_text_embedding_batch(["b", "a"])
    assert again == [first[1], first[0]]
    assert cached.get_query_embedding("q") == cached.get_query_embedding("q")
    assert inner.texts == ["a", "b"]


def test_local_llm_server_answers_chat_completions():
    server = LocalLLMServer(lambda body: "echo " + body["messages"][-1]["content"]).start()
    try:
        request = urllib.request.Request(
            server.base_url + "/chat/completions",
            data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            payload = json.loads(response.read())
    finally:
        server.stop()
    assert payload["choices"][0]["message"] == {"role": "assistant", "content": "echo hi"}


def test_settle_vectors_writes_the_whole_hnsw_graph_to_disk_and_keeps_the_sync_threshold(tmp_path):
    import chromadb

    store = EvidenceStore(tmp_path / "store", embed_model=HashingEmbedding())
    store.ingest(wiki_documents())
    count = len(store)
    before = store._open_vector_store().client.configuration["hnsw"]["sync_threshold"]

    def on_disk() -> int:  # Chroma's own id map of the saved graph (none before the first save)
        return sum(len(pickle.loads(p.read_bytes())["id_to_label"]) for p in tmp_path.glob("store/chroma/*/*.pickle"))

    assert 0 < count < 1000 and on_disk() == 0  # fewer records than sync_threshold: none saved by Chroma itself
    assert settle_vectors(tmp_path / "store") == f"HNSW graph on disk: {count} of {count} vectors"
    assert on_disk() == count
    reopened = chromadb.PersistentClient(path=str(tmp_path / "store" / "chroma")).list_collections()[0]
    assert reopened.configuration["hnsw"]["sync_threshold"] == before  # lowered for the save only


def test_rebuilt_copy_holds_the_same_records_in_a_graph_of_its_own(tmp_path):
    import chromadb

    store = EvidenceStore(tmp_path / "store", embed_model=HashingEmbedding())
    store.ingest(wiki_documents())
    line = rebuilt_copy(tmp_path / "store", tmp_path / "copy")
    assert line == f"HNSW graph on disk: {len(store)} of {len(store)} vectors"

    def records(folder: str) -> tuple:
        (collection,) = chromadb.PersistentClient(path=str(tmp_path / folder / "chroma")).list_collections()
        got = collection.get(include=["embeddings", "metadatas", "documents"])
        order = sorted(range(len(got["ids"])), key=got["ids"].__getitem__)
        rows = [(got["ids"][i], got["metadatas"][i], got["documents"][i]) for i in order]
        return rows, np.array([got["embeddings"][i] for i in order])

    (rows, vectors), (copied_rows, copied_vectors) = records("store"), records("copy")
    assert rows == copied_rows and len(rows) == len(store)
    assert np.allclose(vectors, copied_vectors, atol=1e-6)  # cosine space: Chroma normalizes them again
    copy = EvidenceStore(tmp_path / "copy", embed_model=HashingEmbedding())

    def ranked(evidence: EvidenceStore) -> list:
        hits = HybridRetriever.from_store(evidence, top_n=3).retrieve("Who ranks evidences?")
        return [hit.node.node_id for hit in hits]

    assert ranked(copy) == ranked(store) and ranked(store)  # a few records: the graph finds them all


def test_confquestions_dir_is_the_default_data_of_ragonite_bench_and_the_scripts(tmp_path, monkeypatch):
    import argparse

    from llama_index_ragonite.cli.bench import add_arguments, data_folder

    monkeypatch.setenv("CONFQUESTIONS_DIR", str(tmp_path / "cq"))
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert data_folder(parser.parse_args(["--out", str(tmp_path / "run")]).data) == tmp_path / "cq"
    assert data_folder(parser.parse_args(["--out", "o", "--data", "d"]).data) == Path("d")
    assert default_data(tmp_path / "repo") == tmp_path / "cq"
    monkeypatch.delenv("CONFQUESTIONS_DIR")
    assert default_data(tmp_path / "repo") == tmp_path / "shared" / "datasets" / "confquestions"
    with pytest.raises(ValueError, match="CONFQUESTIONS_DIR"):  # the wheel knows no ../shared
        data_folder(parser.parse_args(["--out", str(tmp_path / "run")]).data)


def test_ragonite_bench_without_data_says_how_to_give_it(tmp_path, monkeypatch, capsys):
    from llama_index_ragonite.cli import main

    monkeypatch.delenv("CONFQUESTIONS_DIR", raising=False)
    assert main(["bench", "--out", str(tmp_path / "run")]) == 2
    said = capsys.readouterr().err
    assert "--data DIR" in said and "$CONFQUESTIONS_DIR" in said and not (tmp_path / "run").exists()
