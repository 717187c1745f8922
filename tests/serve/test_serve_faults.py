"""Hostile and unlucky requests against the real ``ragonite serve`` process (the ``serve`` fault area).

One server over the sample wiki with an OpenAI-compatible stub as its second LLM, small turn
limits (2 per user, 3 in all) and a short turn deadline, so that limits, disconnects and
deadlines show within seconds. Every request goes to 127.0.0.1; every wait is bounded.
"""

from __future__ import annotations

import socket
import sqlite3
import threading
import time
from typing import List, Optional

import httpx
import pytest
from openai_stub import delay, ending_stream, slow_stream
from processes import running_server
from sse_client import Stream, wait_until

from llama_index_ragonite.cli import main

PER_USER, TOTAL, DEADLINE = 2, 3, 8.0


@pytest.fixture(scope="module")
def server(wiki_stores, stub, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve-faults")
    args = [
        "--store", f"wiki={wiki_stores['wiki']}", "--conversations", str(tmp / "history.sqlite"),
        "--llm", "extractive", "--llm", f"stub=openai-compatible:stub-model@{stub.base_url}",
        "--max-turns-per-user", str(PER_USER), "--max-turns", str(TOTAL), "--turn-deadline", str(DEADLINE),
        "--allowed-host", "wiki.example.org",
    ]  # fmt: skip
    with running_server(tmp, *args) as server:
        server.history = tmp / "history.sqlite"
        yield server


def user(server) -> httpx.Client:
    """A new cookie user: the client keeps the cookie its first response sets."""
    return server.client()


def conversation(client: httpx.Client, llm: Optional[str] = None) -> str:
    created = client.post("/api/conversations", json={})
    assert created.status_code == 201, created.text
    cid = created.json()["id"]
    if llm:
        assert client.put(f"/api/conversations/{cid}/settings", json={"llm": llm}).status_code == 200
    return cid


def idle(server) -> None:
    """Wait (bounded) until no turn of an earlier test holds a slot."""
    with server.client() as client:
        wait_until(lambda: client.get("/api/health").json()["turns_running"] == 0, 15)


def stored_turns(client: httpx.Client, cid: str) -> list:
    opened = client.get(f"/api/conversations/{cid}")
    assert opened.status_code == 200, opened.text
    return opened.json()["turns"]


# -- Host, Origin, paths ---------------------------------------------------------------------------
@pytest.mark.fault(
    "Host header naming another site (DNS rebinding) or none",
    "400 kind host before anything is read or created; loopback names, the bound address and --allowed-host pass",
)
@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8000", "127.0.0.1.attacker.example", ""])
def test_a_foreign_host_header_is_refused(server, host):
    port = server.url.rsplit(":", 1)[1]
    with server.client() as client:
        for method, path in (("GET", "/api/domains"), ("POST", "/api/conversations"), ("GET", "/")):
            refused = client.request(method, path, headers={"Host": host}, json={} if method == "POST" else None)
            assert refused.status_code == 400 and refused.json()["kind"] == "host", (host, path)
            assert "wiki" not in refused.text and refused.headers["x-frame-options"] == "DENY"
        for good in (f"127.0.0.1:{port}", f"localhost:{port}", "wiki.example.org", f"WIKI.example.org:{port}"):
            assert client.get("/api/domains", headers={"Host": good}).status_code == 200, good


@pytest.mark.fault(
    "cross-site request (an Origin of another site, or null)",
    "403 kind host: another site's page cannot act with the user's cookie; the page's own origin passes",
)
def test_a_request_from_another_sites_page_is_refused(server):
    with user(server) as client:
        other_port = int(server.url.rsplit(":", 1)[1]) + 1  # another program on this machine is another site
        for origin in (
            "http://attacker.example",
            "null",
            "http://127.0.0.1.attacker.example",
            f"http://127.0.0.1:{other_port}",
        ):
            refused = client.post("/api/conversations", json={}, headers={"Origin": origin})
            assert refused.status_code == 403 and refused.json()["kind"] == "host", origin
        assert client.get("/api/conversations").json() == []
        assert client.post("/api/conversations", json={}, headers={"Origin": server.url}).status_code == 201
        tunnel = {"Host": "localhost:9999", "Origin": "http://localhost:9999"}  # ssh -L 9999:127.0.0.1:PORT
        assert client.post("/api/conversations", json={}, headers=tunnel).status_code == 201


@pytest.mark.fault(
    "turn number out of range in the URL (2^63, 10^30, negative)",
    "422 kind input; never a 500 or a dropped connection",
)
@pytest.mark.parametrize("number", [2**63, 10**30, -1, "1e3"])
def test_a_turn_number_out_of_range_is_422(server, number):
    with user(server) as client:
        cid = conversation(client)
        for path in (
            f"/api/conversations/{cid}/turns/{number}/explain",
            f"/api/conversations/{cid}/turns/{number}/feedback",
        ):
            answered = client.post(path, json={"method": "counterfactual"} if "explain" in path else {"rating": 1})
            assert answered.status_code == 422 and answered.json()["kind"] == "input", (path, answered.text)
        assert client.get("/api/health").status_code == 200


@pytest.mark.fault("conversation id of 10,000 characters or with path characters", "422 or 404 kind not_found; no 500")
@pytest.mark.parametrize("cid", ["a" * 10_000, "..%2F..%2Fetc", "x'; DROP TABLE owners; --"])
def test_a_hostile_conversation_id_is_refused(server, cid):
    with user(server) as client:
        answered = client.get(f"/api/conversations/{cid}")
        assert answered.status_code in (404, 422) and answered.json()["kind"] in ("not_found", "input")
        assert client.post("/api/conversations", json={}).status_code == 201  # the table is still there


@pytest.mark.fault("path traversal under /static", "404; nothing outside the app's static folder is served")
@pytest.mark.parametrize("path", ["/static/../auth.py", "/static/%2e%2e/auth.py", "/static/..%2f..%2fconfig.py"])
def test_path_traversal_under_static_is_404(server, path):
    with server.client() as client:
        answered = client.get(path)
        assert answered.status_code == 404 and "SecurityMiddleware" not in answered.text


@pytest.mark.fault(
    "error responses (400/403/404/405/413/422/429) without the security headers",
    "every response carries the CSP, nosniff, X-Frame-Options DENY and Referrer-Policy no-referrer",
)
def test_every_error_response_carries_the_security_headers(server):
    with user(server) as client:
        answers = [
            client.get("/api/domains", headers={"Host": "attacker.example"}),
            client.post("/api/conversations", json={}, headers={"Origin": "http://attacker.example"}),
            client.get("/api/no-such-route"),
            client.get("/api/conversations/" + "f" * 32),
            client.delete("/api/health"),
            client.post("/api/conversations", content=b"x" * (70 * 1024), headers={"Content-Type": "application/json"}),
            client.put("/api/conversations/" + "f" * 32 + "/settings", json={"top_k": 99}),
        ]
    statuses = sorted({a.status_code for a in answers})
    assert statuses == [400, 403, 404, 405, 413, 422], statuses
    for answered in answers:
        assert answered.headers["x-frame-options"] == "DENY" and answered.headers["referrer-policy"] == "no-referrer"
        assert "script-src 'self'" in answered.headers["content-security-policy"]
        assert answered.headers["x-content-type-options"] == "nosniff"


# -- request bodies ------------------------------------------------------------------------------
@pytest.mark.fault("request body that is not JSON, or JSON of the wrong type", "422 kind input naming the field")
@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b'{"message": 42}', b'{"message": null}'])
def test_a_body_that_is_not_the_expected_json_is_422(server, body):
    with user(server) as client:
        cid = conversation(client)
        answered = client.post(
            f"/api/conversations/{cid}/messages", content=body, headers={"Content-Type": "application/json"}
        )
        assert answered.status_code == 422 and answered.json()["kind"] == "input"


@pytest.mark.fault("message of only spaces or control characters", "422 kind input; nothing stored")
@pytest.mark.parametrize("message", ["   ", "\u0000\u0001\u0002", "\u200b\u200b"])
def test_a_blank_message_is_422_and_not_stored(server, message):
    with user(server) as client:
        cid = conversation(client)
        answered = client.post(f"/api/conversations/{cid}/messages", json={"message": message})
        assert answered.status_code == 422 and answered.json()["kind"] == "input"
        assert stored_turns(client, cid) == []


@pytest.mark.fault(
    "many clients that send their request body one byte at a time (slowloris)",
    "other users are served at once; no worker thread is held by a slow upload",
)
def test_slow_uploads_do_not_hold_back_other_users(server):
    host, port = "127.0.0.1", int(server.url.rsplit(":", 1)[1])
    sockets = []
    try:
        for _ in range(30):
            sock = socket.create_connection((host, port), timeout=5)
            sock.sendall(
                f"POST /api/conversations HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                "Content-Length: 1000\r\n\r\n{".encode()
            )
            sockets.append(sock)
        with user(server) as client:
            started = time.monotonic()
            assert client.get("/api/conversations", timeout=10).status_code == 200
            assert client.post("/api/conversations", json={}, timeout=10).status_code == 201
            assert time.monotonic() - started < 5
    finally:
        for sock in sockets:
            sock.close()


@pytest.mark.fault(
    "feedback comment over 2,000 characters, or a rating other than ±1", "422 kind input; nothing stored"
)
def test_oversized_feedback_is_422(server):
    with user(server) as client:
        cid = conversation(client)
        client.post(f"/api/conversations/{cid}/messages", json={"message": "Who owns the OTA server?"})
        for body in ({"rating": 1, "comment": "x" * 2001}, {"rating": 5}, {"rating": "1; DROP"}):
            answered = client.post(f"/api/conversations/{cid}/turns/0/feedback", json=body)
            assert answered.status_code == 422 and answered.json()["kind"] == "input"
        assert stored_turns(client, cid)[0]["feedback"] is None


@pytest.mark.fault(
    "settings outside what the server offers (top_k, fusion, LLM, domain)", "422 kind input; settings kept"
)
def test_settings_outside_the_offer_are_422(server):
    with user(server) as client:
        cid = conversation(client)
        for change in ({"top_k": 0}, {"top_k": 10**9}, {"fusion": "rerank"}, {"llm": "gpt-9"}, {"domain": "../etc"}):
            answered = client.put(f"/api/conversations/{cid}/settings", json=change)
            assert answered.status_code == 422 and answered.json()["kind"] == "input", change
        assert client.get(f"/api/conversations/{cid}").json()["settings"]["top_k"] == 10


@pytest.mark.fault(
    "malformed, forged or another format of user cookie", "a new user with no conversations; never a 500"
)
@pytest.mark.parametrize(
    "cookie", ["ragonite_user=../../etc", "ragonite_user=" + "0" * 31, 'ragonite_user="a;b', "=;=;="]
)
def test_a_forged_cookie_is_a_new_user(server, cookie):
    with user(server) as owner:
        conversation(owner)
    with server.client() as client:
        answered = client.get("/api/conversations", headers={"Cookie": cookie})
        assert answered.status_code == 200 and answered.json() == []
        assert "ragonite_user=" in answered.headers.get("set-cookie", "")


@pytest.mark.fault("explain or rate a turn that does not exist", "404 kind not_found; no LLM call")
def test_explaining_a_missing_turn_is_404(server, clean_stub):
    with user(server) as client:
        cid = conversation(client, llm="stub")
        before = len(clean_stub.requests)
        answered = client.post(f"/api/conversations/{cid}/turns/3/explain", json={"method": "counterfactual"})
        assert answered.status_code == 404 and answered.json()["kind"] == "not_found"
        assert client.post(f"/api/conversations/{cid}/turns/0/feedback", json={"rating": 1}).status_code == 404
        assert len(clean_stub.requests) == before


# -- turns: limits, disconnects, deadlines, broken LLM streams ----------------------------------------
@pytest.mark.fault(
    "one user opens more streaming turns than allowed",
    "429 kind busy with Retry-After for that user beyond --max-turns-per-user; other users are served",
)
def test_one_user_beyond_the_per_user_limit_gets_429(server, clean_stub):
    idle(server)
    clean_stub.script(*[slow_stream(200, 0.05) for _ in range(PER_USER)])
    with user(server) as greedy, user(server) as other:
        cids = [conversation(greedy, llm="stub") for _ in range(PER_USER + 1)]
        streams = [Stream(greedy, cid, "Who owns the OTA server?") for cid in cids[:PER_USER]]
        try:
            assert all(s.status == 200 for s in streams)
            refused = greedy.post(f"/api/conversations/{cids[-1]}/messages/stream", json={"message": "And now?"})
            assert refused.status_code == 429 and refused.json()["kind"] == "busy"
            assert int(refused.headers["retry-after"]) > 0 and refused.headers["x-frame-options"] == "DENY"
            assert greedy.post(f"/api/conversations/{cids[-1]}/messages", json={"message": "x?"}).status_code == 429
            mine = conversation(other)
            answered = other.post(f"/api/conversations/{mine}/messages", json={"message": "Who owns the OTA server?"})
            assert answered.status_code == 200
        finally:
            for stream in streams:
                stream.close()
        wait_until(lambda: clean_stub.open_requests == 0, 5)
        wait_until(
            lambda: greedy.post(f"/api/conversations/{cids[-1]}/messages", json={"message": "Who?"}).status_code == 200,
            10,
        )


@pytest.mark.fault(
    "all users together open more turns than the server allows",
    "429 kind busy beyond --max-turns; the slots come back when the turns end",
)
def test_users_together_beyond_the_total_limit_get_429(server, clean_stub):
    idle(server)
    clean_stub.script(*[slow_stream(200, 0.05) for _ in range(TOTAL)])
    clients = [user(server) for _ in range(TOTAL + 1)]
    streams = []
    try:
        for client in clients[:TOTAL]:
            streams.append(Stream(client, conversation(client, llm="stub"), "Who owns the OTA server?"))
        assert all(s.status == 200 for s in streams)
        late = clients[-1]
        cid = conversation(late)
        refused = late.post(f"/api/conversations/{cid}/messages", json={"message": "Who owns the OTA server?"})
        assert refused.status_code == 429 and refused.json()["kind"] == "busy" and refused.headers["retry-after"]
        assert late.get("/api/conversations").status_code == 200  # light requests are never limited
        for stream in streams:
            stream.close()
        wait_until(lambda: clean_stub.open_requests == 0, 5)
        ok = lambda: late.post(f"/api/conversations/{cid}/messages", json={"message": "Who?"}).status_code == 200  # noqa: E731
        wait_until(ok, 10)
    finally:
        for stream in streams:
            stream.close()
        for client in clients:
            client.close()


@pytest.mark.fault(
    "client disconnects from a streaming turn over a slow LLM",
    "the LLM's HTTP connection closes within 1 s, the conversation's lock is freed, the partial answer is "
    "stored with truncated: true and is not memory for the next turn",
)
def test_a_disconnected_turn_stops_and_is_stored_truncated(server, clean_stub):
    clean_stub.script(slow_stream(1000, 0.05))
    with user(server) as client:
        cid = conversation(client, llm="stub")
        stream = Stream(client, cid, "Who owns the OTA server?")
        assert stream.wait_for("delta", 30)
        time.sleep(0.3)
        stream.close()
        gone = time.monotonic()
        wait_until(lambda: clean_stub.open_requests == 0, 5)
        assert time.monotonic() - gone < 1.0, "the LLM's stream outlived the client by more than 1 s"
        started = time.monotonic()
        follow = client.post(f"/api/conversations/{cid}/messages", json={"message": "Who approves it?"}, timeout=30)
        assert follow.status_code == 200 and time.monotonic() - started < 10  # the lock was free
        turns = stored_turns(client, cid)
        assert [t["truncated"] for t in turns] == [True, False]
        assert turns[0]["answer"].startswith("w0 ") and "w999" not in turns[0]["answer"]
        last = clean_stub.requests[-1].messages
        assert not any("w0 w1" in str(m.get("content")) for m in last), "a truncated answer was used as memory"


@pytest.mark.fault(
    "client leaves while the LLM has not sent a byte yet (a stalled LLM)",
    "the turn is given up within 1 s: lock and slot freed, an empty answer stored as truncated",
)
def test_a_turn_whose_llm_stalls_is_given_up_when_the_client_leaves(server, clean_stub):
    clean_stub.script(delay(6))
    with user(server) as client:
        cid = conversation(client, llm="stub")
        asked = len(clean_stub.requests)
        stream = Stream(client, cid, "Who owns the OTA server?")
        wait_until(lambda: len(clean_stub.requests) > asked, 30)  # the LLM has the request and sends nothing
        stream.close()
        started = time.monotonic()
        wait_until(lambda: len(stored_turns(client, cid)) == 1, 5)
        assert time.monotonic() - started < 2.0
        assert stored_turns(client, cid)[0]["truncated"] is True
        # the stalled LLM request still holds a thread: the user's slot stays taken until it ends
        clean_stub.script(slow_stream(200, 0.05))
        other = conversation(client, llm="stub")
        held = Stream(client, other, "Who owns the OTA server?")  # the user's second (last) slot
        try:
            assert held.status == 200
            assert client.post(f"/api/conversations/{cid}/messages", json={"message": "x?"}).status_code == 429
        finally:
            held.close()
        ask = lambda: client.post(f"/api/conversations/{cid}/messages", json={"message": "Who owns the OTA server?"})  # noqa: E731
        wait_until(lambda: ask().status_code == 200, 10)  # the closed stream's slot comes back when its turn ends
    wait_until(lambda: clean_stub.open_requests == 0, 15)  # a stalled LLM's connection ends when it answers


@pytest.mark.fault(
    "streaming turn runs past --turn-deadline",
    "an error event of kind timeout; the partial answer stored with truncated: true; the LLM stream closed",
)
def test_a_turn_past_its_deadline_ends_with_an_error_event(server, clean_stub):
    clean_stub.script(slow_stream(2000, 0.05))
    with user(server) as client:
        cid = conversation(client, llm="stub")
        started = time.monotonic()
        stream = Stream(client, cid, "Who owns the OTA server?")
        assert stream.wait_for("error", DEADLINE + 10)
        assert DEADLINE - 0.5 < time.monotonic() - started < DEADLINE + 5
        kind, data = stream.events[-1]
        assert data["kind"] == "timeout" and "truncated" in data["error"]
        stream.close()
        wait_until(lambda: clean_stub.open_requests == 0, 3)
        assert stored_turns(client, cid)[0]["truncated"] is True


@pytest.mark.fault(
    "LLM stream breaks off mid-answer (no finish reason, no [DONE])",
    "stored and shown with truncated: true and a warning, never as a complete answer, and not memory for later turns",
)
def test_a_broken_off_llm_stream_is_stored_truncated(server, clean_stub):
    clean_stub.script(ending_stream("The garage costs", "none"))
    with user(server) as client:
        cid = conversation(client, llm="stub")
        stream = Stream(client, cid, "What does the garage cost?")
        assert stream.wait_for("turn", 30)
        turn = stream.events[-1][1]
        stream.close()
        assert turn["truncated"] is True and "broke off" in turn["warning"] and turn["answer"] == "The garage costs"
        assert stored_turns(client, cid)[0]["truncated"] is True
        client.post(f"/api/conversations/{cid}/messages", json={"message": "And the parking?"})
        assert not any("The garage costs" in str(m.get("content")) for m in clean_stub.requests[-1].messages)


@pytest.mark.fault(
    "LLM stops at its token limit (finish_reason length)", "truncated: true with a warning naming the limit"
)
def test_an_answer_cut_at_the_token_limit_is_truncated(server, clean_stub):
    clean_stub.script(ending_stream("The OTA server is owned by", "length"))
    with user(server) as client:
        cid = conversation(client, llm="stub")
        stream = Stream(client, cid, "Who owns the OTA server?")
        assert stream.wait_for("turn", 30)
        turn = stream.events[-1][1]
        stream.close()
        assert turn["truncated"] is True and "token limit" in turn["warning"]


@pytest.mark.fault(
    "one user creating conversations without end",
    "409 kind input beyond --max-conversations-per-user; others unaffected",
)
def test_conversations_per_user_are_capped(wiki_stores, tmp_path):
    args = ["--store", f"wiki={wiki_stores['wiki']}", "--conversations", str(tmp_path / "h.sqlite")]
    with running_server(tmp_path, *args, "--max-conversations-per-user", "5") as capped:
        with user(capped) as hoarder, user(capped) as other:
            assert [hoarder.post("/api/conversations", json={}).status_code for _ in range(5)] == [201] * 5
            refused = hoarder.post("/api/conversations", json={})
            assert refused.status_code == 409 and refused.json()["kind"] == "input" and "5" in refused.json()["error"]
            assert len(hoarder.get("/api/conversations").json()) == 5
            assert other.post("/api/conversations", json={}).status_code == 201
            assert hoarder.get("/api/conversations").headers["cache-control"] == "no-store"


@pytest.mark.fault(
    "two turns at once in one conversation", "they run one after the other: both stored, in order, each complete"
)
def test_two_turns_at_once_in_one_conversation_are_serialised(server):
    with user(server) as client:
        cid = conversation(client)
        results: List[httpx.Response] = []

        def ask(message: str) -> None:
            results.append(client.post(f"/api/conversations/{cid}/messages", json={"message": message}, timeout=60))

        threads = [threading.Thread(target=ask, args=(q,)) for q in ("Who owns the OTA server?", "Where is the log?")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sorted(r.status_code for r in results) == [200, 200]
        turns = stored_turns(client, cid)
        assert [t["index"] for t in turns] == [0, 1] and all(t["answer"] and not t["truncated"] for t in turns)
        assert client.get(f"/api/conversations/{cid}").json()["messages"] == 4


# -- the history file --------------------------------------------------------------------------------
@pytest.mark.fault(
    "chat history locked by another process for longer than the busy timeout",
    "503 kind store saying it is busy (within about 5 s), no 500; served again once the lock is gone",
)
def test_a_history_locked_by_another_process_is_503(server):
    with user(server) as client:
        cid = conversation(client)
        locker = sqlite3.connect(str(server.history), timeout=1, isolation_level=None)
        try:
            locker.execute("BEGIN EXCLUSIVE")
            started = time.monotonic()
            answered = client.post("/api/conversations", json={}, timeout=30)
            assert answered.status_code == 503 and answered.json()["kind"] == "store", answered.text
            assert "busy" in answered.json()["error"] and time.monotonic() - started < 15
            assert str(server.history.parent) not in answered.text
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        assert (
            client.post(f"/api/conversations/{cid}/messages", json={"message": "Who owns the OTA server?"}).status_code
            == 200
        )


@pytest.mark.fault(
    "history file removed or replaced while the server runs",
    "503 kind store naming the fix (restore it or restart), no silent re-creation, no server path in the message",
)
@pytest.mark.parametrize("how", ["removed", "replaced"])
def test_a_removed_history_file_is_503_naming_the_fix(wiki_stores, tmp_path, how):
    history = tmp_path / "h.sqlite"
    with running_server(tmp_path, "--store", f"wiki={wiki_stores['wiki']}", "--conversations", str(history)) as server:
        with user(server) as client:
            cid = conversation(client)
            assert (
                client.post(
                    f"/api/conversations/{cid}/messages", json={"message": "Who owns the OTA server?"}
                ).status_code
                == 200
            )
            for path in tmp_path.glob("h.sqlite*"):
                path.unlink()
            if how == "replaced":
                sqlite3.connect(str(history)).close()
            for answered in (
                client.post(f"/api/conversations/{cid}/messages", json={"message": "And where is the log?"}),
                client.get("/api/conversations"),
                client.post("/api/conversations", json={}),
            ):
                assert answered.status_code == 503 and answered.json()["kind"] == "store", answered.text
                assert "restart" in answered.json()["error"] and str(tmp_path) not in answered.text
        assert history.exists() == (how == "replaced")


# -- start-up ------------------------------------------------------------------------------------------
@pytest.mark.fault(
    "access token that can never match (not printable ASCII, surrounding spaces, blank, short)",
    "refused at start (exit 2) saying why, before any model loads",
)
@pytest.mark.parametrize(
    "token", ["tökén-0123456789ab", " spaced-token-0123456 ", "                    ", "short-token"]
)
def test_a_token_that_can_never_match_is_refused_at_start(wiki_stores, token, capsys):
    assert main(["serve", "--store", f"wiki={wiki_stores['wiki']}", "--token", token, "--port", "9"]) == 2
    assert "access token" in capsys.readouterr().err


@pytest.mark.fault("Authorization header with bytes that are not ASCII, or a huge one", "401 kind auth; no 500")
def test_a_garbled_authorization_header_is_401(wiki_stores, tmp_path):
    token = "charlie-token-0123456"
    with running_server(
        tmp_path, "--store", f"wiki={wiki_stores['wiki']}", "--token", token, "--conversations", str(tmp_path / "h.sqlite"),
        headers={"Authorization": f"Bearer {token}"},
    ) as server:  # fmt: skip
        with server.client() as client:
            for value in ("Bearer \xe9\xe8" + token, "Bearer " + "a" * 8000, "Basic " + token, "Bearer"):
                answered = client.get("/api/conversations", headers={"Authorization": value.encode("latin-1")})
                assert answered.status_code == 401 and answered.json()["kind"] == "auth", value[:20]
                assert answered.headers["referrer-policy"] == "no-referrer"
            assert client.get("/api/conversations", headers={"Authorization": f"Bearer {token}"}).status_code == 200
