"""Attacks on ``ragonite serve`` that the other serve tests do not make (the ``serve`` fault area).

Two real server processes on loopback ports: a cookie-user server over the sample wiki with an
OpenAI-compatible stub as its second LLM (and a third LLM whose URL carries credentials, as an
operator might write it for a proxy), and a token server for what only tokens show. Every
request goes to 127.0.0.1; every loop is bounded in count, every wait in time.

Each test makes one attack and asserts the secure behaviour (the two holes these attacks found,
an LLM URL's credentials in /api/llms and an API key echoed in an LLM's error, are closed).
"""

from __future__ import annotations

import base64
import json
import re
import socket
import time
from typing import Dict, List, Tuple

import httpx
import pytest
from openai_stub import http_error, reply
from processes import running_server

TOKEN_A, TOKEN_B = "attack-token-alpha-0123", "attack-token-bravo-4567"
LLM_SECRET = "llm-proxy-s3cret-pw"  # the password in the URL of the "proxied" LLM
LLM_KEY = "sk-attack-test-0123456789abcdef"  # the server's $OPENAI_COMPATIBLE_API_KEY
QUESTION = "Who owns the OTA server?"
XSS = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", '"><svg onload=alert(1)>']
TRACEBACK = re.compile(r"Traceback|File \"|line \d+, in ")


def serve_fault(name: str, expected: str):
    return pytest.mark.fault(name, expected, area="serve")


@pytest.fixture(scope="module")
def server(wiki_stores, stub, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve-attacks")
    proxied = stub.base_url.replace("http://", f"http://llmuser:{LLM_SECRET}@", 1)
    args = [
        "--store", f"wiki={wiki_stores['wiki']}", "--conversations", str(tmp / "history.sqlite"),
        "--llm", "extractive", "--llm", f"stub=openai-compatible:stub-model@{stub.base_url}",
        "--llm", f"proxied=openai-compatible:stub-model@{proxied}",
    ]  # fmt: skip
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_COMPATIBLE_API_KEY", LLM_KEY)  # the server process inherits it
        with running_server(tmp, *args) as server:
            server.tmp = tmp
            server.port = int(server.url.rsplit(":", 1)[1])
            yield server


@pytest.fixture(scope="module")
def token_server(wiki_stores, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve-attacks-tokens")
    args = ["--store", f"wiki={wiki_stores['wiki']}", "--conversations", str(tmp / "h.sqlite")]
    args += ["--token", TOKEN_A, "--token", TOKEN_B]
    with running_server(tmp, *args, headers=bearer(TOKEN_A)) as server:
        server.tmp = tmp
        server.port = int(server.url.rsplit(":", 1)[1])
        yield server


def bearer(token: str) -> Dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def conversation(client: httpx.Client, llm: str = "", headers=None) -> str:
    created = client.post("/api/conversations", json={}, headers=headers)
    assert created.status_code == 201, created.text
    cid = created.json()["id"]
    if llm:
        changed = client.put(f"/api/conversations/{cid}/settings", json={"llm": llm}, headers=headers)
        assert changed.status_code == 200, changed.text
    return cid


def turns(client: httpx.Client, cid: str, headers=None) -> list:
    opened = client.get(f"/api/conversations/{cid}", headers=headers)
    assert opened.status_code == 200, opened.text
    return opened.json()["turns"]


def raw_request(
    port: int, head: str, body: bytes = b"", timeout: float = 10
) -> Tuple[str, Dict[str, List[str]], bytes]:
    """Send bytes as written (no client-side normalisation of the path); (status line, headers, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head.encode("latin-1") + body)
        data, deadline = b"", time.monotonic() + timeout
        while time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head_bytes, _, rest = data.partition(b"\r\n\r\n")
    lines = head_bytes.decode("latin-1").split("\r\n")
    headers: Dict[str, List[str]] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.setdefault(name.strip().lower(), []).append(value.strip())
    return lines[0], headers, rest


def sse_events(raw: bytes) -> List[Tuple[str, str]]:
    """(event, data) as a browser's EventSource reads the stream: lines end at CRLF, CR or LF."""
    events, name, data = [], "message", []
    for line in re.split(r"\r\n|\r|\n", raw.decode("utf-8")):
        if line == "":
            if data:
                events.append((name, "\n".join(data)))
            name, data = "message", []
        elif not line.startswith(":"):
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
    return events


def assert_json_only(response: httpx.Response) -> None:
    """An API answer a browser can never render as a page."""
    assert response.headers["content-type"].split(";")[0].strip() == "application/json", response.headers
    assert response.headers["x-content-type-options"] == "nosniff"
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp
    json.loads(response.content)  # well-formed: the payloads sit inside JSON strings


# -- stored content ------------------------------------------------------------------------------------
@serve_fault(
    "stored XSS: markup in a question, an LLM answer, a feedback comment or a reflected domain name",
    "every API answer carrying it is application/json with nosniff and the CSP (also when the browser asks "
    "for text/html); the payload only ever travels inside JSON strings",
)
def test_stored_markup_only_ever_comes_back_as_json(server, clean_stub):
    clean_stub.script(reply(f"The owner is Bob {XSS[1]}"))
    with server.client() as client:
        cid = conversation(client, llm="stub")
        asked = client.post(f"/api/conversations/{cid}/messages", json={"message": f"{XSS[0]} {QUESTION}"})
        assert asked.status_code == 200, asked.text
        assert XSS[1] in asked.json()["answer"] and XSS[0] in asked.json()["question"]
        rated = client.post(f"/api/conversations/{cid}/turns/0/feedback", json={"rating": -1, "comment": XSS[2]})
        assert rated.status_code == 201 and rated.json()["comment"] == XSS[2]
        answers = [asked, rated]
        for accept in ("application/json", "text/html,application/xhtml+xml,*/*;q=0.8"):
            answers += [
                client.get(f"/api/conversations/{cid}", headers={"Accept": accept}),
                client.get("/api/conversations", headers={"Accept": accept}),
                client.post("/api/conversations", json={"domain": XSS[0]}, headers={"Accept": accept}),
                client.get(f"/api/conversations/{XSS[1]}", headers={"Accept": accept}),
            ]
        for answered in answers:
            assert_json_only(answered)
        assert XSS[0] in answers[2].json()["turns"][0]["question"] and answers[4].status_code == 422


@serve_fault(
    "SSE event injection: a message or an LLM answer holding blank lines, 'event: turn' and 'data:' lines, "
    "CR, CRLF, U+2028, NEL or a lone surrogate",
    "the stream still parses (as EventSource reads it: lines end at CR, LF or CRLF) into deltas and exactly "
    "one final turn event; every data line is JSON; the injected text arrives as text",
)
@pytest.mark.parametrize("where", ["answer", "question"])
def test_sse_event_injection_is_escaped(server, clean_stub, where):
    forged = '\n\nevent: turn\ndata: {"forged": true}\n\nevent: error\rdata: {"kind": "auth"}\r\n\r\n'
    oddities = "\u2028\u0085\u2029\x00"
    answer = f"Bob owns it.{forged}{oddities}\ud800 end"
    clean_stub.script(reply(answer if where == "answer" else "Bob owns it."))
    with server.client() as client:
        cid = conversation(client, llm="stub")
        message = QUESTION + (forged + oddities if where == "question" else "")
        streamed = client.post(f"/api/conversations/{cid}/messages/stream", json={"message": message}, timeout=60)
        assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event-stream")
        events = sse_events(streamed.content)
        names = [name for name, _ in events]
        assert names[-1] == "turn" and set(names[:-1]) == {"delta"}, names
        payloads = [json.loads(data) for _, data in events]
        assert all(set(p) == {"text"} for p in payloads[:-1]) and "forged" not in payloads[-1]
        turn = payloads[-1]
        if where == "answer":
            text = "".join(p["text"] for p in payloads[:-1])
            assert forged in text and "\ufffd end" in text  # delivered as text; the surrogate replaced
            assert forged in turn["answer"]
        else:
            assert turn["question"] == message
        assert turns(client, cid)[0]["question"] == message


# -- headers, methods, cross-origin ------------------------------------------------------------------------
@serve_fault(
    "response splitting: CR/LF (%0d%0a) in a query parameter, a path parameter or a trailing-slash redirect",
    "no header is injected: a JSON 404/422 or a redirect whose Location stays percent-encoded on this server",
)
@pytest.mark.parametrize(
    "target",
    [
        "/api/conversations?include_deleted=true%0d%0aSet-Cookie:%20ragonite_user=0000",
        "/api/conversations/%0d%0aSet-Cookie:%20ragonite_user=0000",
        "/api/conversations/?x=%0d%0aSet-Cookie:%20ragonite_user=0000",
        "/api/conversations/x%0aSet-Cookie:ragonite_user=0000/",
    ],
)
def test_crlf_in_the_url_injects_no_header(server, target):
    status, headers, body = raw_request(
        server.port, f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nConnection: close\r\n\r\n"
    )
    code = int(status.split()[1])
    assert code in (307, 404, 422), status
    for cookie in headers.get("set-cookie", []):
        assert not cookie.startswith("ragonite_user=0000"), cookie
    assert all("\r" not in v and "\n" not in v for values in headers.values() for v in values)
    if code == 307:
        location = headers["location"][0]
        assert location.startswith(f"http://127.0.0.1:{server.port}/api/conversations") and "%0" in location.lower()
    else:
        assert headers["content-type"] == ["application/json"] and json.loads(body)["kind"] in ("not_found", "input")


@serve_fault(
    "HTTP method tunnelling (X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override, ?_method=) and "
    "HEAD/OPTIONS on API routes",
    "override headers are ignored (405, the conversation is not deleted); HEAD and OPTIONS return no data "
    "and no CORS grant",
)
def test_method_override_headers_are_ignored(server):
    with server.client() as client:
        cid = conversation(client)
        for header in ("X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"):
            for method in ("POST", "GET", "PUT"):
                answered = client.request(method, f"/api/conversations/{cid}", headers={header: "DELETE"})
                assert answered.status_code in (200, 405), (header, method, answered.status_code)
        assert client.post(f"/api/conversations/{cid}?_method=DELETE").status_code == 405
        assert client.get(f"/api/conversations/{cid}").json()["deleted"] is False
        assert cid in {c["id"] for c in client.get("/api/conversations").json()}
        head = client.head(f"/api/conversations/{cid}")
        assert head.status_code in (200, 405) and head.content == b""
        options = client.options(f"/api/conversations/{cid}")
        assert options.status_code >= 400 and not any(h.startswith("access-control-") for h in options.headers)


@serve_fault(
    "CORS: requests and preflights from another site (or this one) ask to read the API's answers",
    "no Access-Control-Allow-Origin/-Credentials on any answer; a preflight is refused, so another site's "
    "script can never read a user's conversations",
)
def test_no_cors_grant_to_any_origin(server):
    port = server.port
    with server.client() as client:
        cid = conversation(client)
        for origin in ("http://attacker.example", f"http://127.0.0.1:{port}", "null", f"http://localhost:{port + 1}"):
            answers = [
                client.get("/api/conversations", headers={"Origin": origin}),
                client.get(f"/api/conversations/{cid}", headers={"Origin": origin}),
                client.options(
                    "/api/conversations",
                    headers={
                        "Origin": origin,
                        "Access-Control-Request-Method": "POST",
                        "Access-Control-Request-Headers": "content-type",
                    },
                ),
            ]
            for answered in answers:
                granted = [h for h in answered.headers if h.startswith("access-control-")]
                assert not granted, (origin, answered.request.method, granted)
            assert answers[2].status_code >= 400
            assert answers[2].headers.get("x-frame-options") == "DENY"


@serve_fault(
    "cross-site form or no-cors fetch: a JSON body sent as text/plain, form-urlencoded, multipart or with no "
    "Content-Type (the CORS-safelisted kinds, which need no preflight)",
    "422 kind input; nothing stored and no LLM call: only a JSON content type (which needs a preflight) is read",
)
@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        None,
    ],
)
def test_a_body_with_a_cors_safelisted_content_type_is_not_read(server, clean_stub, content_type):
    with server.client() as client:
        cid = conversation(client, llm="stub")
        asked = len(clean_stub.requests)
        body = json.dumps({"message": QUESTION}).encode()
        head = (
            f"POST /api/conversations/{cid}/messages HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
            f"Cookie: ragonite_user={client.cookies['ragonite_user']}\r\nContent-Length: {len(body)}\r\n"
            + (f"Content-Type: {content_type}\r\n" if content_type else "")
            + "Connection: close\r\n\r\n"
        )
        status, headers, answer = raw_request(server.port, head, body)
        assert status.split()[1] == "422" and json.loads(answer)["kind"] == "input", (status, answer)
        assert turns(client, cid) == [] and len(clean_stub.requests) == asked


@serve_fault(
    "the user cookie's scope: Domain, Path and flags; a cookie minted on refused requests",
    "ragonite_user is host-only (no Domain), Path=/, HttpOnly, SameSite=Strict, 128 random bits; a request "
    "refused for its Host or Origin sets no cookie",
)
def test_the_user_cookie_is_host_only_and_not_minted_on_refusals(server):
    with httpx.Client(base_url=server.url, timeout=30) as client:
        refused = [
            client.get("/api/conversations", headers={"Host": "attacker.example"}),
            client.post("/api/conversations", json={}, headers={"Origin": "http://attacker.example"}),
        ]
        assert [r.status_code for r in refused] == [400, 403]
        assert all("set-cookie" not in r.headers for r in refused)
        values = set()
        for path in ("/", "/api/health"):
            with httpx.Client(base_url=server.url, timeout=30) as fresh:
                header = fresh.get(path).headers["set-cookie"]
                attributes = [part.strip() for part in header.split(";")]
                name, _, value = attributes[0].partition("=")
                assert name == "ragonite_user" and re.fullmatch(r"[0-9a-f]{32}", value), header
                lowered = {a.lower() for a in attributes[1:]}
                assert {"path=/", "httponly", "samesite=strict"} <= lowered, header
                assert not any(a.startswith("domain") for a in lowered), header
                values.add(value)
        assert len(values) == 2


# -- ownership -------------------------------------------------------------------------------------------
@serve_fault(
    "enumeration: another user's conversation (live or deleted) vs an id that does not exist",
    "the same status, body (but for the id) and headers on every route: nothing tells them apart",
)
def test_another_users_conversation_is_indistinguishable_from_a_missing_one(server):
    with server.client() as alice, server.client() as mallory:
        live = conversation(alice)
        assert alice.post(f"/api/conversations/{live}/messages", json={"message": QUESTION}).status_code == 200
        deleted = conversation(alice)
        assert alice.delete(f"/api/conversations/{deleted}").status_code == 204
        missing = "0123456789abcdef0123456789abcdef"
        mallory.get("/api/health")

        def probe(cid: str) -> list:
            base = f"/api/conversations/{cid}"
            calls = [
                ("GET", base, None),
                ("DELETE", base, None),
                ("POST", base + "/restore", None),
                ("PUT", base + "/settings", {"top_k": 2}),
                ("POST", base + "/messages", {"message": "hello"}),
                ("POST", base + "/messages/stream", {"message": "hello"}),
                ("POST", base + "/turns/0/explain", {"method": "counterfactual"}),
                ("POST", base + "/turns/0/feedback", {"rating": 1}),
            ]
            seen = []
            for method, path, body in calls:
                answered = mallory.request(method, path, json=body)
                names = sorted(set(answered.headers) - {"date", "content-length"})
                seen.append(
                    (method, path.replace(cid, "ID"), answered.status_code, answered.text.replace(cid, "ID"), names)
                )
            return seen

        expected = probe(missing)
        assert {status for _, _, status, _, _ in expected} == {404}
        assert probe(live) == expected and probe(deleted) == expected
        listed = mallory.get("/api/conversations", params={"include_deleted": "true"}).json()
        assert listed == []
        mine = {
            c["id"]: c["deleted"] for c in alice.get("/api/conversations", params={"include_deleted": "true"}).json()
        }
        assert mine == {live: False, deleted: True}  # the probes changed nothing


# -- request bodies ----------------------------------------------------------------------------------------
def _bodies() -> List[Tuple[str, bytes]]:
    deep = 20_000
    return [
        ("nested arrays", b'{"message": ' + b"[" * deep + b"]" * deep + b"}"),
        ("nested objects", b'{"message": ' + b'{"a":' * 6000 + b"1" + b"}" * 6000 + b"}"),
        ("5000-digit integer", b'{"top_k": ' + b"9" * 5000 + b"}"),
        ("1e999", b'{"top_k": 1e999}'),
        ("NaN", b'{"top_k": NaN}'),
        ("Infinity", b'{"top_k": -Infinity}'),
        ("invalid UTF-8", b'{"message": "caf\xe9 \xff\xfe"}'),
        ("duplicate keys, last invalid", b'{"top_k": 3, "top_k": 99}'),
        ("duplicate keys, wrong type", b'{"message": "hi", "message": {"$ne": null}}'),
        ("truncated", b'{"message": "Who owns'),
        ("trailing garbage", b'{"message": "hi"} {"message": "again"}'),
    ]


@serve_fault(
    "hostile JSON bodies: nesting 20,000 deep, a 5,000-digit number, NaN/Infinity, invalid UTF-8, duplicate "
    "keys, truncated or trailing data",
    "400/422 kind input naming no server path and carrying no traceback; nothing stored; no traceback in the "
    "server's log; the server keeps answering",
)
def test_hostile_json_bodies_are_4xx_without_internals(server):
    log_before = server.log.read_text(errors="replace")
    with server.client() as client:
        cid = conversation(client)
        for what, body in _bodies():
            path = f"/api/conversations/{cid}/" + ("settings" if b"top_k" in body else "messages")
            method = "PUT" if path.endswith("settings") else "POST"
            for url in (path, f"/api/conversations/{cid}/turns/0/feedback"):
                answered = client.request(
                    method if url == path else "POST", url, content=body, headers={"Content-Type": "application/json"}
                )
                assert answered.status_code in (400, 404, 422), (what, url, answered.status_code, answered.text)
                assert answered.json()["kind"] in ("input", "not_found"), what
                assert not TRACEBACK.search(answered.text) and str(server.tmp) not in answered.text, what
        assert turns(client, cid) == []
        assert client.get(f"/api/conversations/{cid}").json()["settings"]["top_k"] == 10
    with server.client() as client:  # the server still answers
        assert client.get("/api/health").status_code == 200
    new_log = server.log.read_text(errors="replace")[len(log_before) :]
    assert "Traceback" not in new_log, new_log[-2000:]


TRICKS = [
    "Who owns the OTA server?\u202e?revres ATO",  # right-to-left override
    "Who owns the\u0000OTA server?",  # NUL inside
    "\ufeffWho owns the OTA server?\u2028\u2029\u0085",  # BOM, line/paragraph separators, NEL
    "Who owns the O\u200dT\u200bA server\u0301\u0301\u0301?",  # zero-width joiner/space, combining marks
    "Who owns the OTA server? \U0001f600\uffff\U0010ffff",  # astral, noncharacters
]
SURROGATES = ["\\ud800", "\\udfff", "\\udc00\\ud800", "x\\ud83d"]  # lone, reversed, cut pair (JSON escapes)


@serve_fault(
    "Unicode tricks in messages and comments: RTL override, NUL, BOM, U+2028/NEL, zero-width and combining "
    "characters, noncharacters; lone surrogates as JSON escapes",
    "the tricks are stored and returned exactly, as valid UTF-8 JSON; a lone surrogate is 422 kind input on every "
    "route (message, stream, feedback comment, settings) and nothing is stored",
)
def test_unicode_tricks_round_trip_and_lone_surrogates_are_refused(server):
    with server.client() as client:
        cid = conversation(client)
        for n, message in enumerate(TRICKS):
            answered = client.post(f"/api/conversations/{cid}/messages", json={"message": message})
            assert answered.status_code == 200, (message, answered.text)
            assert answered.json()["question"] == message
            rated = client.post(f"/api/conversations/{cid}/turns/{n}/feedback", json={"rating": 1, "comment": message})
            assert rated.status_code == 201 and rated.json()["comment"] == message
        opened = client.get(f"/api/conversations/{cid}")
        opened.content.decode("utf-8")  # strict: no lone surrogate ever leaves the server
        assert [t["question"] for t in opened.json()["turns"]] == TRICKS
        other = conversation(client)
        for escaped in SURROGATES:
            bodies = [
                ("POST", f"/api/conversations/{other}/messages", f'{{"message": "Who owns {escaped}?"}}'),
                ("POST", f"/api/conversations/{other}/messages/stream", f'{{"message": "Who owns {escaped}?"}}'),
                ("POST", f"/api/conversations/{cid}/turns/0/feedback", f'{{"rating": -1, "comment": "{escaped}"}}'),
                ("PUT", f"/api/conversations/{other}/settings", f'{{"llm": "stub{escaped}"}}'),
                ("POST", "/api/conversations", f'{{"domain": "wiki{escaped}"}}'),
            ]
            for method, url, body in bodies:
                answered = client.request(
                    method, url, content=body.encode(), headers={"Content-Type": "application/json"}
                )
                assert answered.status_code == 422 and answered.json()["kind"] == "input", (url, escaped, answered.text)
        assert turns(client, other) == []
        assert client.get(f"/api/conversations/{cid}").json()["turns"][0]["feedback"] == 1


# -- what the server tells about itself ----------------------------------------------------------------------
@serve_fault(
    "information leaks: /openapi.json, /docs, /api/health, /api/domains and error answers naming server paths",
    "no absolute server path (store, history, temp folder) and no token in any of them",
)
def test_public_descriptions_name_no_server_path(server, token_server):
    secrets_ = [str(server.tmp), str(token_server.tmp), TOKEN_A, TOKEN_B, "/tmp/", "site-packages"]
    with server.client() as client, token_server.client() as tokened:
        answers = [
            client.get("/openapi.json"),
            client.get("/docs"),
            client.get("/api/health"),
            client.get("/api/domains"),
            client.post("/api/conversations", json={"domain": "/etc/passwd"}),
            client.get("/static/../../../../etc/passwd"),
            tokened.get("/openapi.json"),
            tokened.get("/api/domains", headers=bearer(TOKEN_A)),
            tokened.get("/api/conversations", headers=bearer(TOKEN_A + "x")),
        ]
        for answered in answers:
            assert answered.status_code < 500
            for secret in secrets_:
                assert secret not in answered.text, (answered.request.url, secret)
        assert answers[0].json()["paths"]  # the description itself is served


@serve_fault(
    "credentials in an LLM's URL (a proxy's user:password) disclosed to users through /api/llms",
    "users see the LLM's name and model, never the password (nor the userinfo) of its URL",
)
def test_llm_url_credentials_are_not_disclosed(server):
    with server.client() as client:
        llms = client.get("/api/llms")
        assert llms.status_code == 200 and "proxied" in {m["name"] for m in llms.json()}
        assert LLM_SECRET not in llms.text and "llmuser:" not in llms.text, llms.text


@serve_fault(
    "the LLM server (or a proxy in front of it) echoes the server's API key in its error message",
    "the user gets 502 kind llm (or an error event) without the key: the server's credentials never reach users",
)
def test_an_llm_error_echoing_the_api_key_does_not_disclose_it(server, clean_stub):
    echo = f"Incorrect API key provided: {LLM_KEY}. Header was Authorization: Bearer {LLM_KEY}"
    with server.client() as client:
        cid = conversation(client, llm="stub")
        clean_stub.script(http_error(401, None, echo))
        answered = client.post(f"/api/conversations/{cid}/messages", json={"message": QUESTION})
        assert clean_stub.requests[-1].headers["authorization"] == f"Bearer {LLM_KEY}"  # the key the LLM saw
        assert answered.status_code == 502 and answered.json()["kind"] == "llm", answered.text
        clean_stub.script(http_error(401, None, echo))
        streamed = client.post(f"/api/conversations/{cid}/messages/stream", json={"message": QUESTION}, timeout=60)
        events = sse_events(streamed.content)
        assert [name for name, _ in events][-1] == "error"
        for text in (answered.text, streamed.text):
            assert LLM_KEY not in text and LLM_KEY[3:] not in text, text


# -- tokens ----------------------------------------------------------------------------------------------------
@serve_fault(
    "probing tokens: a real token's prefix or extension, other case, in a query, cookie or other header, "
    "as Basic credentials",
    "401 kind auth with one and the same answer for every wrong token (nothing tells a near miss from a "
    "random guess); the token is only taken from Authorization: Bearer",
)
def test_a_wrong_token_answer_says_nothing_about_the_real_ones(token_server):
    basic = base64.b64encode(f"user:{TOKEN_A}".encode()).decode()
    wrong = [
        {"Authorization": "Bearer random-guess-00000000"},
        bearer(TOKEN_A[:-1]),
        bearer(TOKEN_A + "0"),
        bearer(TOKEN_A.upper()),
        bearer(TOKEN_A[: len(TOKEN_A) // 2]),
        {"Authorization": f"Bearer {TOKEN_A},{TOKEN_B}"},
    ]
    missing = [
        {},
        {"Authorization": f"Basic {basic}"},
        {"Authorization": TOKEN_A},
        {"X-Api-Key": TOKEN_A},
        {"Cookie": f"ragonite_user={TOKEN_A}; token={TOKEN_A}"},
    ]
    with token_server.client() as client:
        seen = set()
        for headers in wrong + missing:
            for params in ({}, {"token": TOKEN_A, "access_token": TOKEN_A}):
                answered = client.get("/api/conversations", headers=headers, params=params)
                assert answered.status_code == 401 and answered.json()["kind"] == "auth", headers
                assert answered.headers["www-authenticate"] == "Bearer"
                assert TOKEN_A not in answered.text and "set-cookie" not in answered.headers
                seen.add((headers in wrong, answered.text))
        assert len({text for is_wrong, text in seen if is_wrong}) == 1  # every wrong token: the same answer
        assert client.get("/api/conversations", headers={"Authorization": f"bearer {TOKEN_A}"}).status_code == 200


@serve_fault(
    "token check bypassed through the path: //api, /API, /%61pi, /./api, /static/../api, an absolute-form "
    "request target, a trailing slash",
    "no API data without a token: 401, 404 or a redirect; never another user's conversation",
)
@pytest.mark.parametrize(
    "target",
    [
        "//api/conversations",
        "/API/conversations",
        "/%61pi/conversations",
        "/%2fapi/conversations",
        "/./api/conversations",
        "/static/../api/conversations",
        "/static/%2e%2e/api/conversations",
        "/api/conversations/",
        "http://127.0.0.1/api/conversations",
        "/docs/../api/conversations",
    ],
)
def test_the_token_check_cannot_be_bypassed_through_the_path(token_server, target):
    with token_server.client() as client:
        cid = conversation(client, headers=bearer(TOKEN_A))
    status, headers, body = raw_request(
        token_server.port,
        f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{token_server.port}\r\nConnection: close\r\n\r\n",
    )
    code = int(status.split()[1])
    assert code in (307, 400, 401, 404), (status, body[:200])
    assert cid.encode() not in body and b'"settings"' not in body


@serve_fault(
    "WebSocket upgrade to an API path (the middleware passes non-HTTP scopes through unchecked)",
    "never accepted (no 101): no token, Host or Origin check can be skipped that way",
)
def test_a_websocket_upgrade_is_never_accepted(token_server):
    for host, origin in ((f"127.0.0.1:{token_server.port}", None), ("attacker.example", "http://attacker.example")):
        head = (
            f"GET /api/conversations HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            + (f"Origin: {origin}\r\n" if origin else "")
            + "\r\n"
        )
        status, _, body = raw_request(token_server.port, head, timeout=5)
        assert status and " 101 " not in status + " ", status
        assert b"conversation" not in body
