"""One index, many processes: a writer and two read-only ``ragonite serve`` replicas on one Chroma server.

Everything is real and on loopback: ``chroma run``, the writer (this test process, an
``EvidenceStore`` with the embedded default model on the server), and two replica processes
(``--read-only --chroma-server``) sharing the store folder for BM25, the latent terms and the
manifest. Both answer over REST; then the writer rewrites a page with a new fact, and both must
answer from it without a restart, within a bounded wait. Every answer, during and after the
write, must hold the evidences of exactly one generation, as stored (no stale or missing
evidence); after the write ended, only the new one.
"""

from __future__ import annotations

import shutil
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
from fakes import REPO
from processes import chroma_server, running_server

from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.parsing.loaders import load_pages
from llama_index_ragonite.serve.config import ServeConfig, ServeConfigError

SAMPLE = REPO / "examples" / "sample_wiki"

QUESTION = "Who owns the OTA update server?"
OLD_FACT, NEW_FACT = "Bob owns the service", "Carol owns the service since the Zephyr-42 migration"
FOLLOW_TIMEOUT = 60  # seconds for both replicas to answer from the new generation


def evidences(store: EvidenceStore) -> dict[str, str]:
    """Every evidence of the store's loaded generation: id -> raw text (what the API returns as a source's text)."""
    return {node_id: store.lexical.get_node(node_id).text for node_id in store.lexical.node_ids()}


def ask(server, question: str = QUESTION) -> tuple[int, dict]:
    """One turn in a new conversation (no history to complete the question from): (status, JSON)."""
    with server.client() as client:
        created = client.post("/api/conversations")
        assert created.status_code == 201, created.text
        response = client.post(f"/api/conversations/{created.json()['id']}/messages", json={"message": question})
        return response.status_code, response.json()


def generation_of(turn: dict, generations: list[dict[str, str]]) -> int:
    """The index of the one generation whose stored evidences are exactly the turn's sources; fails otherwise."""
    sources = {s["id"]: s["text"] for s in turn["sources"]}
    assert sources, turn
    matching = [i for i, stored in enumerate(generations) if all(stored.get(i_) == t for i_, t in sources.items())]
    assert matching, f"sources from no single generation (stale or missing evidence): {sorted(sources)}"
    return max(matching)  # evidences the write did not touch belong to both: the newest that holds them all


def test_two_replicas_answer_and_follow_a_reindex(tmp_path):
    pages = tmp_path / "pages"
    shutil.copytree(SAMPLE, pages)
    with ExitStack() as stack:
        _, client, port = stack.enter_context(chroma_server(tmp_path / "chroma-data"))
        writer = EvidenceStore(tmp_path / "store", chroma_client=client)
        writer.ingest(load_pages(pages))
        old = evidences(writer)
        args = ["--store", f"wiki={tmp_path / 'store'}", "--chroma-server", f"127.0.0.1:{port}", "--read-only"]
        replicas = [
            stack.enter_context(
                running_server(tmp_path, *args, "--conversations", str(tmp_path / f"replica{i}.sqlite"))
            )
            for i in range(2)
        ]

        for replica in replicas:
            status, turn = ask(replica)
            assert status == 200, turn
            assert OLD_FACT in turn["answer"] and generation_of(turn, [old]) == 0
            assert turn["sources"][0]["title"] == "OTA update server" and turn["sources"][0]["dense_rank"]

        # The writer rewrites the page while both replicas are being asked, and after it, until both follow.
        page = pages / "ota-server.html"
        page.write_text(page.read_text().replace(OLD_FACT, NEW_FACT))
        seen: list[tuple[int, float, float, int, dict]] = []  # (replica, sent, received, status, turn)
        stop = threading.Event()

        def keep_asking(number: int) -> None:
            while not stop.is_set():
                sent = time.monotonic()
                try:
                    status, turn = ask(replicas[number])
                except Exception as err:  # recorded, so that the checks below fail with it
                    status, turn = -1, {"error": repr(err)}
                seen.append((number, sent, time.monotonic(), status, turn))

        askers = [threading.Thread(target=keep_asking, args=(i,), daemon=True) for i in range(2)]
        for asker in askers:
            asker.start()
        time.sleep(0.5)  # a few answers before the write
        write_started = time.monotonic()
        report = writer.ingest(load_pages(pages))
        write_ended = time.monotonic()
        assert report.nodes_written > 0 and writer.generation == 2
        new = evidences(writer)
        assert any(NEW_FACT in text for text in new.values()) and not any(OLD_FACT in t for t in new.values())

        def followed(number: int) -> bool:
            return any(
                r == number and sent > write_ended and NEW_FACT in t.get("answer", "") for r, sent, _, _, t in seen
            )

        deadline = write_ended + FOLLOW_TIMEOUT
        while not (followed(0) and followed(1)) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)  # a few more answers after both followed
        stop.set()
        for asker in askers:
            asker.join(timeout=150)

    assert followed(0) and followed(1), f"a replica still answers from the old page {FOLLOW_TIMEOUT} s after the write"
    latest = {0: 0, 1: 0}  # the newest generation each replica has answered from
    for number, sent, received, status, turn in sorted(seen, key=lambda s: s[2]):
        if status != 200:  # only while the write runs may a replica refuse (503: a dense hit its BM25 lacks)
            assert status == 503 and turn["kind"] == "store", turn
            assert received > write_started and sent < write_ended, turn
            continue
        generation = generation_of(turn, [old, new])
        if sent > write_ended:
            assert generation == 1 and NEW_FACT in turn["answer"], f"replica {number} answered from the old page"
        assert generation >= latest[number], f"replica {number} went back to the old generation"
        latest[number] = generation
    assert latest == {0: 1, 1: 1}


# ---- the replica options, checked before anything loads ---------------------------------------


@pytest.fixture
def store_folder(tmp_path):
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "manifest.json").write_text("{}")
    return str(tmp_path / "store")


def test_replica_options_are_checked_at_start(store_folder, tmp_path):
    server = {"chroma_server": "127.0.0.1:8001"}
    with pytest.raises(ServeConfigError, match="--chroma-server: Chroma server 'host:port'"):
        ServeConfig.from_args([f"wiki={store_folder}"], chroma_server="host:port")
    with pytest.raises(ServeConfigError, match="--conversations"):
        ServeConfig.from_args([f"wiki={store_folder}"], read_only=True, **server)
    with pytest.raises(ServeConfigError, match="needs --chroma-server"):
        ServeConfig.from_args([f"wiki={store_folder}"], collections=["wiki=hr"])
    with pytest.raises(ServeConfigError, match="no domain 'hr'"):
        ServeConfig.from_args([f"wiki={store_folder}"], collections=["hr=hr"], **server)
    with pytest.raises(ServeConfigError, match="same Chroma collection"):
        ServeConfig.from_args([f"a={store_folder}", f"b={store_folder}"], **server)
    (Path(store_folder) / "chroma").mkdir()
    with pytest.raises(ServeConfigError, match="writes its SQLite"):  # embedded Chroma cannot be read-only
        ServeConfig.from_args([f"wiki={store_folder}"], read_only=True, history=str(tmp_path / "h.sqlite"))
    config = ServeConfig.from_args(
        [f"a={store_folder}", f"b={store_folder}"], collections=["b=hr"], read_only=True, history="h.sqlite", **server
    )
    assert (config.collection("a"), config.collection("b")) == ("ragonite", "hr")


def test_serve_parses_the_replica_and_device_options(store_folder):
    from llama_index_ragonite.cli import build_arg_parser

    args = build_arg_parser().parse_args(
        ["serve", "--store", f"wiki={store_folder}", "--chroma-server", "h:1", "--chroma-collection", "wiki=w"]
        + ["--read-only", "--conversations", "c.sqlite", "--device", "cuda:1"]
    )
    assert (args.chroma_server, args.chroma_collection, args.read_only, args.device) == (
        "h:1",
        ["wiki=w"],
        True,
        "cuda:1",
    )
