"""After bursts of dropped streams, a server left alone goes back to its idle thread count (``serve/workers.py``).

anyio retires an idle worker thread only when a later call takes a worker; a server nobody calls after a
burst kept one thread per turn that had run at once (39 Python threads against 5). The app's lifespan
makes that call every ``RETIRE_EVERY_S``, so the count is back within anyio's idle limit plus that period.
This test never calls the API while it waits (a call would retire the workers itself and hide the fault):
it reads the server's threads from /proc. Chroma's SQLite pool threads (``sqlx-sqlite-worker``) are
Chroma's to retire and are not counted, as in ``test_serve_load.py``; the threads a process starts once
(the stream collector, tqdm's monitor) are in the idle count, taken after a warm-up burst.
"""

from __future__ import annotations

import time

import pytest
from openai_stub import slow_stream
from processes import running_server
from sse_client import Stream, wait_until
from test_serve_load import WORKER_IDLE_S, threads

from llama_index_ragonite.serve.workers import RETIRE_EVERY_S

CLIENTS, BURSTS = 45, 3
SETTLED_WITHIN_S = WORKER_IDLE_S + RETIRE_EVERY_S + 1.0  # anyio's idle limit, our period, a scheduling margin


@pytest.fixture(scope="module")
def server(wiki_stores, stub, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve-threads")
    args = [
        "--store", f"wiki={wiki_stores['wiki']}", "--conversations", str(tmp / "history.sqlite"),
        "--llm", f"stub=openai-compatible:stub-model@{stub.base_url}",
    ]  # fmt: skip
    with running_server(tmp, *args) as server:
        yield server


def burst(clients, cids, health) -> int:
    """Every client opens a stream, each accepted one gets a delta, then all are dropped; the turns end."""
    streams = [Stream(client, cid, "Who owns the OTA server?") for client, cid in zip(clients, cids)]
    accepted = [s for s in streams if s.status == 200]
    try:
        assert all(s.wait_for("delta", 30) for s in accepted)
    finally:
        for stream in streams:
            stream.close()
    wait_until(lambda: health.get("/api/health").json()["turns_running"] == 0, 10)  # async route: no worker
    return len(accepted)


def settled(pid: int, at_most: int, within: float) -> int:
    """``threads(pid)`` once it is at most ``at_most`` (reading /proc only), or the count at the deadline."""
    deadline = time.monotonic() + within
    count = threads(pid)
    while count > at_most and time.monotonic() < deadline:
        time.sleep(0.25)
        count = threads(pid)
    return count


@pytest.mark.fault(
    "three bursts of 45 streaming turns dropped mid-answer, then nobody calls the server",
    f"32 turns run per burst (--max-turns), the rest 429; within {SETTLED_WITHIN_S:.0f} s of the last burst "
    "the server's threads (less Chroma's SQLite pool) are back to their idle count",
    area="serve",
)
def test_threads_return_to_idle_after_bursts(server, stub):
    pid = server.process.pid
    stub.stream_default = slow_stream(600, 0.1)  # answers stream for a minute
    clients = [server.client() for _ in range(CLIENTS)]  # each its own cookie user: the total limit applies
    try:
        cids = []
        for client in clients:
            cid = client.post("/api/conversations", json={}).json()["id"]
            assert client.put(f"/api/conversations/{cid}/settings", json={"llm": "stub"}).status_code == 200
            cids.append(cid)
        burst(clients[:4], cids[:4], clients[0])  # warm-up: threads a process starts once start here
        time.sleep(SETTLED_WITHIN_S)  # the warm-up's workers retired by the lifespan's calls
        idle = threads(pid)
        started = time.monotonic()
        assert [burst(clients, cids, clients[0]) for _ in range(BURSTS)] == [32] * BURSTS
        busiest = threads(pid)
        left = settled(pid, idle, SETTLED_WITHIN_S)
        took = time.monotonic() - started
        assert left <= idle, f"{left} threads against {idle} idle, {SETTLED_WITHIN_S:.0f} s after the bursts"
        assert busiest > idle + 20  # the bursts did grow the pool (else this test shows nothing)
        print(f"threads: idle {idle}, after bursts {busiest}, settled {left}; {took:.1f} s from the first burst")
    finally:
        for client in clients:
            client.close()
        stub.stream_default = None
