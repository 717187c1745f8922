"""Load (bounded, loopback): one user opens 50 streaming turns over a slow LLM while another user works.

The server runs with its default limits (4 turns per user, 32 in all). The first user gets 4
streams and 46 refusals (429 with ``Retry-After``); the second user's conversation list and
offline turns keep answering meanwhile. When the first user's 50 connections are dropped, the
server's threads and the LLM stub's open connections return to their idle count within 5 s.
"Idle" is measured after a warm-up that did what the load will (4 streams dropped mid-answer
and one offline turn) and, while its streams ran, 16 light requests at once. anyio starts a
worker thread whenever a call finds none idle (a worker counts as idle only once the event loop
has taken its last result, so near-simultaneous calls can start one more than they need) and
retires idle ones only lazily, at a later call after 10 s; so the pool the warm-up leaves is
larger than any the load can need, and the count may go down, never up. Threads a turn starts
of its own (the stream collector, the history writer) are not pooled: one left behind shows. How long the second user
waits under this load is a benchmark (benchmarks/experiments/serve_load.py, phase d), not asserted here.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from openai_stub import slow_stream
from processes import running_server
from sse_client import Stream, wait_until

STREAMS, PER_USER = 50, 4


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no thread count")


def light_burst(client, n: int = 16) -> None:
    """``n`` conversation lists sent at once, so that the server's worker pool grows past the load's need."""
    start = threading.Barrier(n)

    def one(_: int) -> int:
        start.wait(10)
        return client.get("/api/conversations", timeout=30).status_code

    with ThreadPoolExecutor(n) as pool:
        assert list(pool.map(one, range(n))) == [200] * n


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
    "server threads and the LLM's open connections are back to idle within 5 s",
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
        light_burst(other)
        for stream in warm:
            stream.close()
        stored = lambda cid: greedy.get(f"/api/conversations/{cid}").json()["turns"]  # noqa: E731
        wait_until(lambda: stub.open_requests == 0 and all(len(stored(cid)) == 1 for cid in cids[:PER_USER]), 10)
        wait_until(lambda: other.get("/api/health").json()["turns_running"] == 0, 10)  # every warm-up turn ended
        idle_threads = threads(pid)

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
        idle = lambda: stub.open_requests == 0 and running() == 0 and threads(pid) <= idle_threads  # noqa: E731
        deadline = time.monotonic() + 5
        while not idle() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert idle(), (
            f"after 5 s: {stub.open_requests} LLM connections open, {running()} turns running, "
            f"{threads(pid)} threads ({idle_threads} idle)"
        )
        held = [cid for cid, stream in zip(cids, streams) if stream.status == 200]
        wait_until(lambda: all(len(stored(cid)) == 2 for cid in held), 5)
        assert all([t["truncated"] for t in stored(cid)] == [True, True] for cid in held)
    stub.stream_default = None
