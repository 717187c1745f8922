"""Attacks on the Confluence connector that ``test_confluence_hostile.py`` does not make.

A hostile Confluence (or a proxy in front of it) steers the client through its answers: error
messages, page links, titles, bodies, compression. The operator's own inputs (space key, CQL,
page ids) must not change what the client asks for either. Every test talks HTTP to real
loopback stubs (``confluence_stub``; a second stub plays "another origin" and counts what
reaches it) and is bounded in time.

Each test asserts what the connector must do; the holes these attacks found (credentials echoed
in error messages, forged log lines, a base link parsed differently, page ids with paths,
terminal codes in titles) are closed.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import time
import tracemalloc
import zlib
from urllib.parse import parse_qs, urlsplit

import pytest
from confluence_stub import SENT, ConfluenceStub, StubPage, sample_wiki_pages
from fakes import REPO

from llama_index_ragonite import EvidenceContextualizer, HTMLEvidenceParser
from llama_index_ragonite.errors import ConfluenceError
from llama_index_ragonite.parsing.confluence import ConfluenceClient, ConfluenceStorageReader

TOKEN = "attack-test-s3cret-token"
USER = "me@example.com"
BASIC = base64.b64encode(f"{USER}:{TOKEN}".encode()).decode()
TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # C0/C1 controls, bidi overrides


def fault(name: str, expected: str):
    return pytest.mark.fault(name, expected, area="confluence")


@pytest.fixture
def stub():
    with ConfluenceStub(user=USER, token=TOKEN, max_limit=2) as server:
        server.add_pages(sample_wiki_pages(REPO / "examples" / "sample_wiki"))
        yield server


@pytest.fixture
def elsewhere():
    """Another origin (same host, other port): nothing may ever reach it."""
    with ConfluenceStub() as server:
        yield server


def client(stub, **kwargs) -> ConfluenceClient:
    options = dict(sleep=lambda seconds: None, timeout=2.0, request_deadline=5.0, user=USER, api_token=TOKEN)
    return ConfluenceClient(stub.url, **{**options, **kwargs})


def answer_raw(status: int, payload, headers=None):
    """A hostile hook that answers every request with ``status`` and this JSON (or bytes)."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()

    def hook(handler, _status, _payload):
        handler.send_raw(
            status, [body], {"Content-Type": "application/json", "Content-Length": str(len(body)), **(headers or {})}
        )
        return SENT

    return hook


def browser_netloc(url: str) -> str:
    """The host[:port] a browser opens for an http(s) link: WHATWG URL parsing reads a backslash as a
    slash in these schemes (Python's and httpx's RFC 3986 parsers take it for part of the user info)."""
    parts = urlsplit(url.strip().replace("\\", "/"))
    assert parts.scheme in ("http", "https"), url
    return parts.netloc.rpartition("@")[2]


# -- what the server says goes into our errors ----------------------------------------------------------
@pytest.mark.parametrize("auth", ["personal access token", "API token"])
@pytest.mark.parametrize("status", [400, 500])
@fault(
    "Confluence echoes the Authorization header in the `message` of an error answer",
    "ConfluenceError naming the status, never the token (nor the Base64 of user:token)",
)
def test_an_error_message_echoing_the_credentials_does_not_disclose_them(status, auth):
    bearer = auth == "personal access token"
    with ConfluenceStub(user=None if bearer else USER, token=TOKEN) as stub:

        def echo(handler, _status, _payload):
            got = handler.headers.get("Authorization", "")
            body = json.dumps({"statusCode": status, "message": f"Rejected header Authorization: {got}"}).encode()
            handler.send_raw(status, [body], {"Content-Type": "application/json", "Content-Length": str(len(body))})
            return SENT

        stub.hostile = echo
        credentials = {"personal_access_token": TOKEN} if bearer else {"user": USER, "api_token": TOKEN}
        c = ConfluenceClient(stub.url, sleep=lambda s: None, max_retries=1, timeout=2.0, **credentials)
        with pytest.raises(ConfluenceError, match=f"HTTP {status}") as caught:
            c.page("1002", "version")
        assert stub.log and all(h["authorization"] for _, _, h in stub.log)  # the server did see them
        message = str(caught.value)
        assert TOKEN not in message and BASIC not in message, message


@fault(
    "Confluence puts newlines, CR and ANSI escape sequences in an error `message` (log forging, terminal codes)",
    "the error stays one line of printable text: `ragonite index confluence` prints exactly one line on stderr",
)
def test_an_error_message_cannot_forge_lines_or_terminal_codes(stub, capsys, tmp_path, monkeypatch):
    forged = "bad request\nragonite: sync complete, 0 errors\r\x1b[2K\x1b]0;owned\x07\x1b[32mOK\x1b[0m\u202e"
    stub.hostile = answer_raw(400, {"statusCode": 400, "message": forged})
    with pytest.raises(ConfluenceError) as caught:
        client(stub).page("1002", "version")
    assert not TERMINAL.search(str(caught.value)) and "\n" not in str(caught.value), repr(str(caught.value))

    from llama_index_ragonite.cli import main

    monkeypatch.setenv("CONFLUENCE_USER", USER)
    monkeypatch.setenv("CONFLUENCE_API_TOKEN", TOKEN)
    args = ["index", "confluence", "--url", stub.url, "--space", "AUR", "--store", str(tmp_path / "s"), "--quiet"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not TERMINAL.search(err), repr(err)


# -- links the server gives ---------------------------------------------------------------------------------
@fault(
    "Confluence's _links.base smuggles another host past the origin check (a backslash before userinfo: "
    "parsers disagree)",
    "the page link a browser opens is on the configured site",
)
def test_a_base_link_that_parsers_read_differently_does_not_move_the_page_link(stub):
    site = urlsplit(stub.url).netloc
    base = f"http://evil.example\\@{site}/wiki"

    def hook(handler, status, payload):
        if isinstance(payload, dict) and "title" in payload:
            payload["_links"]["base"] = base
        return payload

    stub.hostile = hook
    docs = ConfluenceStorageReader(client=client(stub), page_ids=["1003"]).load_data()
    url = docs[0].metadata["url"]
    assert browser_netloc(url) == site, url


@pytest.mark.parametrize(
    "webui",
    [
        "javascript:alert(document.cookie)",
        " JaVaScRiPt:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "//evil.example/pages/1003",
        "\\\\evil.example/pages/1003",
        "/\\evil.example/pages/1003",
        "https://evil.example/pages/1003",
        "vbscript:msgbox(1)",
    ],
)
@fault(
    "Confluence gives a page's _links.webui as a javascript:/data: URL, a protocol-relative or backslash link, "
    "or an absolute URL of another site",
    "the stored page URL is http(s) on the configured site as a browser reads it (the page's own viewpage URL "
    "when webui is not a path)",
)
def test_a_hostile_webui_link_never_becomes_the_page_url(stub, webui):
    def hook(handler, status, payload):
        if isinstance(payload, dict) and "title" in payload:
            payload["_links"]["webui"] = webui
        return payload

    stub.hostile = hook
    docs = ConfluenceStorageReader(client=client(stub), page_ids=["1003"]).load_data()
    url = docs[0].metadata["url"]
    assert url.startswith(stub.url + "/") and browser_netloc(url) == urlsplit(stub.url).netloc, url
    assert "javascript" not in url.lower() and "data:" not in url


HOSTILE_BODY = """<p>The OTA server listens on port 8443.</p>
<ac:image><ri:url ri:value="{other}/pixel.png" /></ac:image>
<ac:image><ri:attachment ri:filename="diagram.png"><ri:page ri:content-title="Other" ri:space-key="SECRET" />
</ri:attachment></ac:image>
<p><ac:link><ri:attachment ri:filename="report.pdf" /></ac:link>
<a href="{other}/download/attachments/1/report.pdf">report</a></p>
<img src="{other}/img.png" srcset="{other}/2x.png 2x" />
<iframe src="{other}/frame"></iframe><link rel="stylesheet" href="{other}/style.css" />
<script src="{other}/x.js"></script><object data="{other}/obj"></object><embed src="{other}/embed" />
<ac:structured-macro ac:name="include"><ac:parameter ac:name=""><ac:link><ri:page ri:content-title="Secret"
 ri:space-key="SECRET" /></ac:link></ac:parameter></ac:structured-macro>
<ac:structured-macro ac:name="rss"><ac:parameter ac:name="url">{other}/feed.xml</ac:parameter></ac:structured-macro>
<ac:structured-macro ac:name="widget"><ac:parameter ac:name="url"><ri:url ri:value="{other}/widget" />
</ac:parameter></ac:structured-macro>
<ac:structured-macro ac:name="jira"><ac:parameter ac:name="server">{other}</ac:parameter></ac:structured-macro>
<p style="background:url({other}/bg.png)">Backups run nightly.</p>"""


@fault(
    "a page body points at other hosts (ri:url and ri:attachment images, include/rss/widget/jira macros, img, "
    "iframe, script, link, object, CSS url())",
    "nothing is fetched while reading, parsing and contextualising the page: no request reaches another origin "
    "and no further request reaches Confluence",
)
def test_references_in_a_page_body_are_never_fetched(stub, elsewhere):
    other = f"http://127.0.0.1:{elsewhere.port}"
    stub.add_pages([StubPage("2001", "Hostile page", HOSTILE_BODY.format(other=other), "AUR", parent="1001")])
    c = client(stub)
    docs = ConfluenceStorageReader(client=c, page_ids=["2001"]).load_data()
    nodes = EvidenceContextualizer()(HTMLEvidenceParser().get_nodes_from_documents(docs))
    assert any("8443" in node.text for node in nodes)
    assert elsewhere.log == [] and not elsewhere.requests
    assert c.requests == {"body": 1} and len(stub.log) == 1


# -- what the operator asks for -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "space",
    ["AUR&spaceKey=SECRET", "AUR&expand=body.storage&limit=9999", "../../admin", "AUR#x", "AUR\r\nX-Injected: 1"],
)
@fault(
    "a space key or a CQL query with URL syntax (&, =, #, ../, CR/LF)",
    "sent as one query parameter holding exactly that text: no other parameter, path or header changes",
)
def test_a_space_key_or_cql_with_url_syntax_stays_one_parameter(stub, space):
    c = client(stub)
    with contextlib.suppress(ConfluenceError):  # no such space (404) is fine
        list(c.space_pages(space, "version"))
    with contextlib.suppress(ConfluenceError):
        list(c.search(f'space = "{space}" and type = page', "version"))
    assert len(stub.log) == 2
    for (_, path, headers), key, value in zip(
        stub.log, ("spaceKey", "cql"), (space, f'space = "{space}" and type = page')
    ):
        parts = urlsplit(path)
        query = parse_qs(parts.query, keep_blank_values=True)
        assert parts.path in ("/wiki/rest/api/content", "/wiki/rest/api/content/search"), path
        assert query[key] == [value] and query["expand"] == ["version"] and query["limit"] == ["50"], query
        assert "x-injected" not in headers


@pytest.mark.parametrize("page_id", ["1003/../../../admin", "1003?expand=body.storage", "../../space/SECRET", "1003#"])
@fault(
    "a page id given to the reader or the CLI (--page-id) holds a path or a query",
    "ValueError or ConfluenceError before any request: a page id is digits, as content_id demands of the server's",
)
def test_a_page_id_with_a_path_is_refused_before_any_request(stub, page_id):
    with pytest.raises((ValueError, ConfluenceError)):
        ConfluenceStorageReader(client=client(stub), page_ids=[page_id]).load_data()
    assert stub.log == [], [path for _, path, _ in stub.log]


# -- what the server's pages put in front of the operator -------------------------------------------------------
@fault(
    "Confluence page titles, labels and ancestor titles holding terminal control sequences (ESC, OSC, CR, C1, "
    "bidi overrides)",
    "synced and searchable, but `ragonite search` and `ragonite ask` print no control character of theirs",
)
def test_page_titles_with_control_sequences_never_reach_the_terminal(tmp_path, capsys):
    hostile = "OTA\x1b]0;owned\x07\x1b[2J\rserver\x9b31m\u202eroot\x00"
    with ConfluenceStub() as stub:
        stub.add_pages(
            [
                StubPage("1001", f"Home{hostile}", "<p>Welcome.</p>", "AUR"),
                StubPage(
                    "1002",
                    hostile,
                    "<p>The OTA server listens on port 8443.</p>",
                    "AUR",
                    parent="1001",
                    labels=("ops\x1b[5m",),
                ),
            ]
        )
        from llama_index_ragonite.cli import main

        store = str(tmp_path / "store")
        assert main(["index", "confluence", "--url", stub.url, "--space", "AUR", "--store", store, "--quiet"]) == 0
        capsys.readouterr()
        assert main(["search", "OTA port 8443", "--store", store]) == 0
        assert main(["ask", "Which port does the OTA server listen on?", "--store", store]) == 0
    out = capsys.readouterr().out
    assert "8443" in out
    assert not TERMINAL.search(out), [m.group() for m in TERMINAL.finditer(out)]


# -- compression -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
@fault(
    "Confluence sends a compression bomb (a 260 KB gzip/deflate body that inflates to 256 MiB)",
    "ConfluenceError naming max_response_bytes within a second, memory bounded by one inflated chunk "
    "(not the whole body)",
)
def test_a_compression_bomb_stops_at_the_size_cap(stub, encoding):
    inflated = 256 << 20
    packer = zlib.compressobj(9, zlib.DEFLATED, 31 if encoding == "gzip" else 15)
    zeros = bytes(1 << 20)
    bomb = b"".join(packer.compress(zeros) for _ in range(inflated >> 20)) + packer.flush()
    stub.hostile = answer_raw(200, bomb, {"Content-Encoding": encoding})
    tracemalloc.start()
    try:
        began = time.monotonic()
        with pytest.raises(ConfluenceError, match=r"max_response_bytes \(1,048,576 bytes\)"):
            client(stub, max_response_bytes=1 << 20).page("1002", "version")
        elapsed = time.monotonic() - began
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < 2.0 and peak < 160 << 20, (elapsed, peak >> 20)
    assert len(stub.log) == 1  # not retried


# -- cookies ---------------------------------------------------------------------------------------------------------
@fault(
    "Confluence sets cookies (a session, one for the parent domain) and then points _links.next elsewhere",
    "the cookies go back to the configured site only; nothing, cookie or credential, reaches the other origin",
)
def test_cookies_from_confluence_are_never_sent_to_another_origin(stub, elsewhere):
    def hook(handler, status, payload):
        if not isinstance(payload, dict) or "results" not in payload:
            return payload
        if "start=2" in handler.path:
            payload["_links"]["next"] = f"http://127.0.0.1:{elsewhere.port}/wiki" + payload["_links"]["next"]
        body = json.dumps(payload).encode()
        handler.send_response(200)
        for cookie in ("JSESSIONID=s3ssion; Path=/", "crowd.token_key=abc; Domain=127.0.0.1; Path=/"):
            handler.send_header("Set-Cookie", cookie)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
        return SENT

    stub.hostile = hook
    with pytest.raises(ConfluenceError, match="another origin"):
        list(client(stub).space_pages("AUR", "version"))
    assert "JSESSIONID=s3ssion" in stub.log[1][2].get("cookie", "")  # its own site gets them back
    assert elsewhere.log == [] and not elsewhere.requests
