"""A reader opened before a re-index serves the new generation, never the deleted evidences (issue 17, case 5).

The long-lived reader is a real subprocess (reader_process.py) holding one
``HybridRetriever.from_store``; this test process is the writer. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fakes import WIKI_PAGES, HashingEmbedding, wiki_documents

from llama_index_ragonite.errors import StoreInterruptedError
from llama_index_ragonite.index.journal import begin_journal, finish_journal, writer_lock
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.retrieval.built_in import BuiltInSides
from llama_index_ragonite.retrieval.retriever import HybridRetriever

READER = Path(__file__).with_name("reader_process.py")
TIMEOUT = 120

OLD_FAQ = "Over-the-air upgrades need a reboot afterwards."
NEW_FAQ = "Upgrades now restart the gizmo without a reboot."
EDITED = dict(WIKI_PAGES, faq=f"<title>FAQ</title><h2>Upgrades</h2><p>{NEW_FAQ}</p>")
del EDITED["team"]  # and a page removed: its table rows must go too


def write(path, pages, **kwargs):
    return EvidenceStore(path, embed_model=HashingEmbedding()).ingest(wiki_documents(pages), **kwargs)


def texts(hits):
    return [h.node.text for h in hits]


def trace(hits):
    return [(h.node.node_id, h.score, h.lexical_rank, h.dense_rank, h.title_rank) for h in hits]


class Reader:
    """The reader subprocess: one query per line in, one JSON line out, each answer awaited at most TIMEOUT s."""

    def __init__(self, store: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(READER), str(store)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        assert self._answer() == {"ready": True}

    def _pump(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)

    def _answer(self) -> dict:
        try:
            return json.loads(self.lines.get(timeout=TIMEOUT))
        except queue.Empty:
            pytest.fail(f"the reader process gave no answer within {TIMEOUT}s")

    def ask(self, query: str) -> dict:
        self.process.stdin.write(query + "\n")
        self.process.stdin.flush()
        return self._answer()

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


@pytest.mark.fault(
    "reader opened before a re-index (another process)",
    "the next query loads the new generation; deleted evidences never served",
)
def test_reader_process_serves_the_new_generation_never_the_deleted_evidences(tmp_path):
    write(tmp_path, WIKI_PAGES)
    reader = Reader(tmp_path)
    try:
        before = reader.ask("reboot upgrades")
        assert before["texts"][0] == OLD_FAQ
        table = reader.ask("Alice parsing wiki pages")
        assert any("Alice" in t for t in table["texts"])
        assert reader.ask("reboot upgrades") == before  # unchanged store: the very same answer

        report = write(tmp_path, EDITED, remove_missing=True, allow_removal=True)
        assert report.updated == ["faq"] and report.removed == ["team"]

        after = reader.ask("reboot upgrades")
        assert "error" not in after, after
        assert OLD_FAQ not in after["texts"] and after["texts"][0] == NEW_FAQ
        removed_rows = {i for i, text in zip(table["ids"], table["texts"]) if "Alice" in text}
        assert removed_rows and not removed_rows & set(after["ids"])
        rows = reader.ask("Alice parsing wiki pages")
        assert not any("Alice" in t or "Bob" in t for t in rows["texts"])
        assert reader.ask("gizmo restart")["texts"][0] == NEW_FAQ

        write(tmp_path, WIKI_PAGES, remove_missing=True)  # and back: the page returns, the edit goes
        again = reader.ask("reboot upgrades")
        assert again["texts"][0] == OLD_FAQ and NEW_FAQ not in again["texts"]
        assert any("Alice" in t for t in reader.ask("Alice parsing wiki pages")["texts"])
    finally:
        reader.close()


def test_in_process_reader_follows_another_writer(tmp_path, caplog):
    write(tmp_path, WIKI_PAGES)
    retriever = HybridRetriever.from_store(tmp_path, embed_model=HashingEmbedding(), top_n=10)
    assert texts(retriever.retrieve("reboot upgrades"))[0] == OLD_FAQ
    generation = EvidenceStore(tmp_path).generation
    with caplog.at_level(logging.INFO, logger="llama_index_ragonite"):
        write(tmp_path, EDITED, remove_missing=True, allow_removal=True)
        hits = retriever.retrieve("reboot upgrades")
    assert EvidenceStore(tmp_path).generation == generation + 1
    assert texts(hits)[0] == NEW_FAQ and OLD_FAQ not in texts(hits)
    assert not any("Alice" in t for t in texts(retriever.retrieve("Alice parsing wiki pages")))
    assert sum(f"loaded generation {generation + 1} (was {generation})" in r.message for r in caplog.records) == 1


def test_reader_sharing_the_writers_store_object_follows_it(tmp_path):
    store = EvidenceStore(tmp_path, embed_model=HashingEmbedding())
    store.ingest(wiki_documents())
    retriever = HybridRetriever.from_store(store, top_n=10)
    assert texts(retriever.retrieve("reboot upgrades"))[0] == OLD_FAQ
    store.ingest(wiki_documents(EDITED), remove_missing=True, allow_removal=True)
    hits = retriever.retrieve("reboot upgrades")
    assert texts(hits)[0] == NEW_FAQ and OLD_FAQ not in texts(hits)


def test_unchanged_store_gives_identical_results_and_the_check_is_cheap(tmp_path, caplog):
    write(tmp_path, WIKI_PAGES)
    store = EvidenceStore(tmp_path, embed_model=HashingEmbedding())
    following = HybridRetriever.from_store(store, top_n=10)
    fixed = HybridRetriever(BuiltInSides(following.built_in.dense_index, store.lexical), top_n=10)  # follows nothing
    lexical = following.lexical
    queries = ["reboot upgrades", "Alice parsing wiki pages", "install erase", "how long does installing take"]
    with caplog.at_level(logging.INFO, logger="llama_index_ragonite"):
        for _ in range(3):
            for query in queries:
                assert trace(following.retrieve(query)) == trace(fixed.retrieve(query))
    assert following.lexical is lexical and not any("generation" in r.message for r in caplog.records)

    follower, rounds = following.built_in.follower, 2000
    start = time.perf_counter()
    for _ in range(rounds):
        follower.begin()
        follower.end()
    per_query_us = (time.perf_counter() - start) / rounds * 1e6
    print(f"store generation check: {per_query_us:.1f} µs per query")
    assert per_query_us < 500  # two stat calls and a lock; generous for a loaded CI machine


@pytest.mark.fault(
    "reader queries during another process's write, or after it was killed",
    "the loaded generation served with a warning; an interrupted write raises StoreInterruptedError",
)
def test_a_write_under_way_keeps_the_loaded_generation_and_an_interrupted_one_raises(tmp_path, caplog):
    write(tmp_path, WIKI_PAGES)
    retriever = HybridRetriever.from_store(tmp_path, embed_model=HashingEmbedding(), top_n=10)
    expected = trace(retriever.retrieve("reboot upgrades"))
    with caplog.at_level(logging.WARNING, logger="llama_index_ragonite"):
        with writer_lock(tmp_path):  # another writer, between its journal and its manifest
            begin_journal(tmp_path, ["faq"])
            assert trace(retriever.retrieve("reboot upgrades")) == expected
            assert trace(retriever.retrieve("reboot upgrades")) == expected
        warnings = [r for r in caplog.records if "being written by another process" in r.message]
        assert len(warnings) == 1  # once per write, not per query
    with pytest.raises(StoreInterruptedError, match="interrupted.*ragonite index"):  # its writer died
        retriever.retrieve("reboot upgrades")
    finish_journal(tmp_path)
    assert trace(retriever.retrieve("reboot upgrades")) == expected


def test_a_newer_generation_is_swapped_in_only_between_queries(tmp_path):
    write(tmp_path, WIKI_PAGES)
    retriever = HybridRetriever.from_store(tmp_path, embed_model=HashingEmbedding(), top_n=10)
    follower, old = retriever.built_in.follower, retriever.lexical
    follower.begin()  # a query in flight over the first generation
    write(tmp_path, EDITED, remove_missing=True, allow_removal=True)
    follower.begin()  # a second query loads the new one, but must not swap it under the first
    assert retriever.lexical is old
    follower.end()
    assert retriever.lexical is old
    follower.end()  # the last query done: swapped
    assert retriever.lexical is not old and texts(retriever.retrieve("reboot upgrades"))[0] == NEW_FAQ


def test_async_queries_follow_the_store_too(tmp_path):
    write(tmp_path, WIKI_PAGES)
    retriever = HybridRetriever.from_store(tmp_path, embed_model=HashingEmbedding(), top_n=10)

    async def ask_all():
        return await asyncio.gather(*(retriever.aretrieve(q) for q in ["reboot upgrades"] * 4))

    assert all(texts(hits)[0] == OLD_FAQ for hits in asyncio.run(ask_all()))
    write(tmp_path, EDITED, remove_missing=True, allow_removal=True)
    for hits in asyncio.run(ask_all()):  # every query over one generation: the new one
        assert texts(hits)[0] == NEW_FAQ and OLD_FAQ not in texts(hits)
