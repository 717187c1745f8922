"""Load (bounded, loopback): one user opens 50 streaming turns over a slow LLM while another user works.

The server runs with its default limits (4 turns per user, 32 in all). The first user gets 4
streams and 46 refusals (429 with ``Retry-After``); the second user's conversation list and
offline turns keep answering meanwhile. When the first user's 50 connections are dropped, the
LLM stub's open connections and the server's running turns are back to zero within 5 s, and
the server's threads are back to their idle count.

Two pools in the server grow by how calls happen to overlap, so a count taken while they hold
spare threads differs by chance (CI saw 25 against 24, then 29 against 28):
- anyio's worker pool starts a thread whenever a call finds none idle, and retires idle ones
  only at a later call after ``WorkerThread.MAX_IDLE_TIME`` (10 s). Both counts are taken after
  every worker has idled that long and one call has retired all but the one it ran on.
- Chroma's SQLite connection pool (its threads are named ``sqlx-sqlite-worker``) opens a
  connection when a query finds none free and closes idle ones on its own clock, in minutes.
  Its threads are Chroma's to bound and are not counted.
What is left to differ is threads that nobody pools (a turn's history writer, a model session's
threads, a client opened per turn): one left behind shows. How long the second user waits under
this load is a benchmark (benchmarks/experiments/serve_load.py, phase d), not asserted here.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from openai_stub import slow_stream
from processes import running_server
from sse_client import Stream, wait_until

from llama_index_ragonite.compat.anyio import worker_idle_seconds

STREAMS, PER_USER = 50, 4
WORKER_IDLE_S = worker_idle_seconds()  # how long anyio lets an idle worker live (private: tests/test_compat.py)


POOLED_ELSEWHERE = "sqlx-sqlite-wor"  # Chroma's SQLite pool (a thread's name is cut to 15 bytes)


def threads(pid: int) -> int:
    """The server's threads, less those of Chroma's SQLite connection pool."""
    count = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            count += Path(f"/proc/{pid}/task/{task}/comm").read_text().strip() != POOLED_ELSEWHERE
        except (FileNotFoundError, ProcessLookupError):  # the thread ended meanwhile
            pass
    return count


def settled_threads(pid: int, client) -> int:
    """``threads(pid)`` once anyio's pool is down to one worker (see the module's docstring)."""
    time.sleep(WORKER_IDLE_S + 0.5)
    assert client.get("/api/conversations").status_code == 200  # runs on one worker, retires the rest
    count, steady_since = threads(pid), time.monotonic()
    while time.monotonic() - steady_since < 0.5:  # retired workers exit on their own
        time.sleep(0.02)
        if threads(pid) != count:
            count, steady_since = threads(pid), time.monotonic()
    return count


@pytest.fixture(scope="module")
def server(wiki_stores, stub, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve-load")
    args = [
        "--store", f"wiki={wiki_stores['wiki']}", "--conversations", str(tmp / "history.sqlite"),
        "--llm", "extractive", "--llm", f"stub=openai-compatible:stub-model@{stub.base_url}",
    ]  # fmt: skip
    with running_server(tmp, *args) as server:
        yield server


def new_conversation(client, llm=None) -> str:
    cid = client.post("/api/conversations", json={}).json()["id"]
    if llm:
        assert client.put(f"/api/conversations/{cid}/settings", json={"llm": llm}).status_code == 200
    return cid


@pytest.mark.fault(
    "one user opens 50 streaming turns over a slow LLM while another user works",
    "4 streams, 46 × 429 with Retry-After; the other user's requests all succeed; after the 50 disconnect, "
    "the LLM's open connections and running turns are back to zero within 5 s, and the server's threads "
    "to their idle count once its worker pool has retired idle workers",
)
def test_fifty_streams_of_one_user_do_not_starve_another(server, stub):
    pid = server.process.pid
    with server.client() as greedy, server.client() as other:
        cids = [new_conversation(greedy, llm="stub") for _ in range(STREAMS)]
        mine = new_conversation(other)
        # warm-up: what the load will do (4 streams dropped mid-answer, an offline turn), then idle
        stub.stream_default = slow_stream(600, 0.1)  # answers stream for a minute; rephrasings, suggestions echo
        warm = [Stream(greedy, cid, "Who owns the OTA server?") for cid in cids[:PER_USER]]
        asked = other.post(f"/api/conversations/{mine}/messages", json={"message": "Who owns the OTA server?"})
        assert asked.status_code == 200
        assert all(stream.wait_for("delta", 60) for stream in warm)
        for stream in warm:
            stream.close()
        stored = lambda cid: greedy.get(f"/api/conversations/{cid}").json()["turns"]  # noqa: E731
        wait_until(lambda: stub.open_requests == 0 and all(len(stored(cid)) == 1 for cid in cids[:PER_USER]), 10)
        wait_until(lambda: other.get("/api/health").json()["turns_running"] == 0, 10)  # every warm-up turn ended
        idle_threads = settled_threads(pid, other)

        streams = []
        try:
            for cid in cids:
                streams.append(Stream(greedy, cid, "Where are the OTA settings read from?"))
            accepted = [s for s in streams if s.status == 200]
            refused = [s for s in streams if s.status == 429]
            assert len(accepted) == PER_USER and len(refused) == STREAMS - PER_USER
            assert all(int(s.headers["retry-after"]) > 0 for s in refused)
            assert all(s.wait_for("delta", 30) for s in accepted)
            for question in ("Who grants access to the build server?", "Where is the installer log written?") * 3:
                assert other.get("/api/conversations", timeout=30).status_code == 200
                answered = other.post(f"/api/conversations/{mine}/messages", json={"message": question}, timeout=60)
                assert answered.status_code == 200 and answered.json()["answer"]
            assert stub.open_requests == PER_USER
        finally:
            for stream in streams:
                stream.close()
        running = lambda: other.get("/api/health").json()["turns_running"]  # noqa: E731
        quiet = lambda: stub.open_requests == 0 and running() == 0  # noqa: E731
        deadline = time.monotonic() + 5
        while not quiet() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert quiet(), f"after 5 s: {stub.open_requests} LLM connections open, {running()} turns running"
        left = settled_threads(pid, other)
        assert left <= idle_threads, f"{left} threads against {idle_threads} idle"  # fewer: a warm-up thread ended
        held = [cid for cid, stream in zip(cids, streams) if stream.status == 200]
        wait_until(lambda: all(len(stored(cid)) == 2 for cid in held), 5)
        assert all([t["truncated"] for t in stored(cid)] == [True, True] for cid in held)
    stub.stream_default = None
