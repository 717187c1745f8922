"""A hostile or broken Confluence: other origins, redirects, loops, caps, deadlines, malformed answers.

Every test talks HTTP to real loopback servers (the stub of ``confluence_stub`` with a
``hostile`` hook that rewrites or replaces its answers, and a second stub as "another origin"
that counts what reaches it). Each is bounded in time: the client's deadlines and timeouts are
short, handlers that drip or hang end when their stub stops. What we promise for each fault
class: a ``ConfluenceError`` that names what was wrong (and the other origin, deadline or cap),
never a traceback, never a request or a credential sent elsewhere, nothing indexed or lost.
"""

from __future__ import annotations

import gzip
import json
import logging
import time
from urllib.parse import parse_qs, urlsplit

import pytest
from confluence_stub import SENT, ConfluenceStub, StubPage, sample_wiki_pages
from fakes import REPO

from llama_index_ragonite.errors import ConfluenceError
from llama_index_ragonite.parsing.confluence import ConfluenceClient, ConfluenceStorageReader

TOKEN = "hostile-test-s3cret-token"
USER = "me@example.com"
IDS = ["1001", "1002", "1003", "1004", "1005"]  # the sample wiki's pages, listed two per answer


def fault(name: str, expected: str):
    return pytest.mark.fault(name, expected, area="confluence")


@pytest.fixture
def stub():
    with ConfluenceStub(user=USER, token=TOKEN, max_limit=2) as server:
        server.add_pages(sample_wiki_pages(REPO / "examples" / "sample_wiki"))
        yield server


@pytest.fixture
def elsewhere():
    """Another origin (same host, other port) that would answer like Confluence: nothing may reach it."""
    with ConfluenceStub(user=USER, token=TOKEN) as server:
        server.add_pages(sample_wiki_pages(REPO / "examples" / "sample_wiki"))
        yield server


def client(stub, waits=None, **kwargs) -> ConfluenceClient:
    options = dict(sleep=(waits if waits is not None else []).append, timeout=2.0, request_deadline=5.0)
    return ConfluenceClient(stub.url, user=USER, api_token=TOKEN, **{**options, **kwargs})


def listing(stub, **kwargs):
    return [page["id"] for page in client(stub, **kwargs).space_pages("AUR", "version")]


def start_of(handler) -> int:
    return int(parse_qs(urlsplit(handler.path).query).get("start", ["0"])[0])


def on_listings(change):
    """A hostile hook that applies ``change(handler, payload)`` to listing answers only."""

    def hook(handler, status, payload):
        if isinstance(payload, dict) and "results" in payload:
            change(handler, payload)
        return payload

    return hook


def raises(pattern: str, call, *args):
    with pytest.raises(ConfluenceError, match=pattern) as caught:
        call(*args)
    assert TOKEN not in str(caught.value) and "Traceback" not in str(caught.value)
    return caught.value


# -- other origins: two loopback servers ---------------------------------------------------------------
def _next_elsewhere(elsewhere):
    def change(handler, payload):
        if "next" in payload["_links"]:
            payload["_links"]["next"] = elsewhere.url + payload["_links"]["next"]  # absolute, other port

    return on_listings(change)


def _base_elsewhere(elsewhere):
    def hook(handler, status, payload):
        if isinstance(payload, dict):
            payload.setdefault("_links", {})["base"] = elsewhere.url  # relative next, base elsewhere
            for result in payload.get("results", []):
                result["_links"]["base"] = elsewhere.url
        return payload

    return hook


def _redirect_elsewhere(elsewhere):
    def hook(handler, status, payload):
        if "start=2" not in handler.path:
            return payload
        handler.send_raw(302, headers={"Location": f"http://127.0.0.1:{elsewhere.port}{handler.path}"})
        return SENT

    return hook


@pytest.mark.parametrize(
    "mechanism",
    [
        pytest.param(
            _next_elsewhere,
            id="next",
            marks=fault(
                "Confluence _links.next points to another origin",
                "ConfluenceError naming that origin; no request and no credential goes there",
            ),
        ),
        pytest.param(
            _base_elsewhere,
            id="base",
            marks=fault(
                "Confluence _links.base names another origin (an internal host behind a proxy, or hostile)",
                "the listing goes on at the configured site, page links stay on it, one warning; "
                "nothing sent to the other origin",
            ),
        ),
        pytest.param(
            _redirect_elsewhere,
            id="redirect",
            marks=fault(
                "Confluence redirects (302) to another origin",
                "ConfluenceError naming that origin; no request and no credential goes there",
            ),
        ),
    ],
)
def test_no_request_and_no_credential_reaches_another_origin(stub, elsewhere, mechanism, caplog):
    stub.hostile = mechanism(elsewhere)
    other = f"http://127.0.0.1:{elsewhere.port}"
    c = client(stub)
    if mechanism is _base_elsewhere:
        with caplog.at_level(logging.WARNING, logger="llama_index_ragonite.parsing.confluence.client"):
            assert [p["id"] for p in c.space_pages("AUR", "version")] == IDS
            docs = ConfluenceStorageReader(client=c, page_ids=["1003"]).load_data()
            list(c.space_pages("AUR", "version"))
        assert docs[0].metadata["url"].startswith(stub.url + "/")  # not the base the server named
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1 and f"itself {other} (" in warnings[0] and TOKEN not in warnings[0]
    else:
        err = raises("another origin", list, c.space_pages("AUR", "version"))
        assert f" to {other}, another origin than {stub.url.rsplit('/', 1)[0]}: not followed" in str(err)
    assert elsewhere.log == [] and not elsewhere.requests  # nothing reached the second server
    assert all(h["authorization"].startswith("Basic ") for _, _, h in stub.log)  # the credentials went here only


@pytest.mark.parametrize("form", ["absolute", "origin-relative", "context-relative", "bare"])
def test_next_links_in_every_form_confluence_writes_them_stay_on_the_site(stub, form):
    def change(handler, payload):
        if "next" in payload["_links"]:
            relative = payload["_links"]["next"]  # /rest/api/content?…, relative to the context /wiki
            payload["_links"]["next"] = {
                "absolute": stub.url + relative,
                "origin-relative": "/wiki" + relative,
                "context-relative": relative,
                "bare": relative.lstrip("/"),
            }[form]

    stub.hostile = on_listings(change)
    c = client(stub)
    assert [p["id"] for p in c.space_pages("AUR", "version")] == IDS and c.requests == {"list": 3}
    assert [path.split("?")[0] for _, path, _ in stub.log] == ["/wiki/rest/api/content"] * 3


# -- redirects, loops, caps ----------------------------------------------------------------------------
@fault("Confluence redirects in a loop on its own site", "at most max_redirects hops, then ConfluenceError")
def test_a_same_origin_redirect_loop_is_bounded(stub):
    def hook(handler, status, payload):
        target = "/wiki/rest/api/content/1002?hop" if "hop" not in handler.path else handler.path + "x"
        handler.send_raw(302, headers={"Location": target})
        return SENT

    c = client(stub, max_redirects=3)
    stub.hostile = hook
    raises("redirected more than 3 times", c.page, "1002", "version")
    assert c.requests["page"] == 4 and len(stub.log) == 4
    moved = []

    def once(handler, status, payload):  # a single same-origin redirect is followed, with the credentials
        if moved:
            return payload
        moved.append(handler.path)
        handler.send_raw(301, headers={"Location": handler.path + "&moved=1"})
        return SENT

    stub.hostile = once
    assert c.page("1002", "version")["id"] == "1002" and stub.log[-1][1] == moved[0] + "&moved=1"
    assert stub.log[-1][2]["authorization"].startswith("Basic ")


@pytest.mark.parametrize("shape", ["itself", "cycle"])
@fault(
    "Confluence pagination loops (_links.next to the same page, or a cycle of pages)",
    "ConfluenceError 'pagination loop', after a few requests",
)
def test_a_pagination_loop_ends_the_listing(stub, shape):
    def change(handler, payload):
        start = start_of(handler)
        if shape == "itself" and start == 2:
            payload["_links"]["next"] = "/rest/api/content?spaceKey=AUR&start=2&limit=2&expand=version"
        if shape == "cycle" and start == 4:  # 0 -> 2 -> 4 -> 2 -> ...
            payload["_links"]["next"] = payload["_links"]["self"].replace("start=4", "start=2").split("/wiki")[1]

    stub.hostile = on_listings(change)
    c = client(stub)
    seen = "a listing page already read"  # the URL repeats (a page of ids listed before may be a wiki being edited)
    raises(f"space AUR: pagination loop: .*{seen}", list, c.space_pages("AUR", "version"))
    assert c.requests["list"] == 3


@fault(
    "Confluence ignores start in a listing without _links (start/limit paging)",
    "ConfluenceError 'pagination loop' on the first repeated page",
)
def test_start_limit_paging_that_ignores_start_ends(stub):
    def change(handler, payload):
        first = stub.content(stub.pages["1001"], ["version"]), stub.content(stub.pages["1002"], ["version"])
        payload.update(results=list(first), start=0, limit=2, size=2)
        del payload["_links"]

    stub.hostile = on_listings(change)
    c = client(stub)
    raises("pagination loop", list, c.space_pages("AUR", "version"))
    assert c.requests["list"] == 2


@fault(
    "Confluence serves an endless listing (a fresh next link and fresh page ids every time)",
    "ConfluenceError naming max_listing_pages after that many requests",
)
def test_an_endless_listing_is_capped(stub):
    def change(handler, payload):
        start = start_of(handler)
        page = StubPage(str(5000 + start), f"Page {start}", "", "AUR")
        payload["results"] = [stub.content(page, ["version"])]
        payload["_links"]["next"] = f"/rest/api/content?spaceKey=AUR&limit=1&start={start + 1}"

    stub.hostile = on_listings(change)
    c = client(stub, max_listing_pages=20)
    raises("max_listing_pages", list, c.space_pages("AUR", "version"))
    assert c.requests["list"] == 20


@fault(
    "a Confluence run needs more requests than max_requests (a huge tree, or a server inflating the work)",
    "ConfluenceError naming max_requests; the next run (start_run) has the full budget again",
)
def test_the_request_budget_of_a_run_is_capped(stub):
    c = client(stub, max_requests=4)
    reader = ConfluenceStorageReader(client=c, space_key="AUR", include_children=True, page_ids=["1001"])
    raises("max_requests", reader.list_pages)  # 3 listing pages, the page, its children: 5 requests
    assert sum(c.requests.values()) == 4
    c.start_run()
    assert [page["id"] for page in c.space_pages("AUR", "version")] == IDS


# -- deadlines -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["rate-limited", "slow"])
@fault(
    "a Confluence run outlasts run_deadline (rate-limited forever, or slow answers)",
    "ConfluenceError naming the run deadline, checked before each request and each retry wait",
)
def test_the_run_deadline_stops_requests_and_waits(stub, how):
    waits = []
    if how == "rate-limited":
        stub.fail(*[429] * 10, retry_after="3600")
        c = client(stub, waits, run_deadline=30)  # the wait (max_wait 60 s) would pass it: no wait at all
        raises(r"HTTP 429; retrying in 60.0 s would pass the run deadline \(30 s\)", c.page, "1002", "version")
        assert waits == [] and c.requests["page"] == 1
        return

    def slow(handler, status, payload):
        time.sleep(0.25)
        return payload

    stub.hostile = slow
    c = client(stub, waits, run_deadline=0.6)
    began = time.monotonic()
    raises(r"run deadline \(0.6 s\)", list, c.space_pages("AUR", "version"))
    assert time.monotonic() - began < 2.0 and c.requests["list"] <= 3


@fault(
    "Confluence drips its answer (one byte every 0.5 s: the read timeout never fires)",
    "ConfluenceError naming the request deadline, within the deadline plus one read timeout",
)
def test_a_dripping_answer_meets_the_request_deadline(stub):
    def drip(handler, status, payload):
        body = json.dumps(payload).encode()
        headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
        handler.send_raw(200, [body[i : i + 1] for i in range(len(body))], headers, delay=0.5)
        return SENT

    stub.hostile = drip
    c = client(stub, timeout=1.0, request_deadline=1.5)
    began = time.monotonic()
    raises(r"page 1002: .* did not finish its answer within the request deadline \(1.5 s\)", c.page, "1002", "")
    assert time.monotonic() - began < 1.5 + 1.0 + 0.5 and c.requests["page"] == 1  # not retried


@fault(
    "Confluence drips its status line and headers (one byte every 0.2 s: neither read timeout fires)",
    "ConfluenceError naming the request deadline, within the deadline plus a moment; the client stays usable",
)
def test_dripping_headers_meet_the_request_deadline(stub):
    def drip(handler, status, payload):
        handler.close_connection = True
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"X-Padding: " + b"x" * 500 + b"\r\n\r\n"
        try:
            for byte in head:
                if stub.stopping.wait(0.2):
                    return SENT
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
        except OSError:
            pass  # the client gave up
        return SENT

    stub.hostile = drip
    c = client(stub, timeout=1.0, request_deadline=1.5)
    began = time.monotonic()
    raises(r"page 1002: .* did not finish its answer within the request deadline \(1.5 s\)", c.page, "1002", "")
    assert time.monotonic() - began < 1.5 + 1.0 and c.requests["page"] == 1  # not retried (without the watchdog: 100 s)
    stub.hostile = None
    assert c.page("1003", "")["id"] == "1003"  # the client goes on


@fault(
    "Confluence accepts the connection and never answers",
    "read timeout, bounded retries, then ConfluenceError naming the timeout",
)
def test_a_server_that_never_answers_times_out(stub):
    stub.hostile = lambda handler, status, payload: (stub.stopping.wait(10), SENT)[1]
    waits = []
    c = client(stub, waits, timeout=0.3, max_retries=1)
    began = time.monotonic()
    raises(r"page 1002: .*\(ReadTimeout\) after 2 attempts", c.page, "1002", "version")
    assert time.monotonic() - began < 2.0 and waits == [1.0]


# -- malformed answers ------------------------------------------------------------------------------------
@pytest.mark.parametrize("answer", [[1, 2], "results", 42, None])
@fault("Confluence answers JSON that is not an object (a list, a string, a number, null)", "ConfluenceError")
def test_an_answer_that_is_not_an_object(stub, answer):
    stub.hostile = lambda handler, status, payload: answer
    kind = {list: "a list", str: "a string", int: "a number", type(None): "null"}[type(answer)]
    raises(f"space AUR: malformed answer: the answer is {kind}", listing, stub)


@pytest.mark.parametrize("bad_id", ["missing", {"n": 1}, "../../admin", True, -3, "1002 or 1=1"])
@fault(
    "Confluence lists a page without a usable id (missing, not a number, a path)",
    "ConfluenceError naming results[i].id; no id ever reaches a request URL",
)
def test_results_without_a_usable_id(stub, bad_id):
    def change(handler, payload):
        if bad_id == "missing":
            del payload["results"][1]["id"]
        else:
            payload["results"][1]["id"] = bad_id

    stub.hostile = on_listings(change)
    raises(r"space AUR: malformed answer: results\[1\]\.id is .*not a page id", listing, stub)


@pytest.mark.parametrize(
    "field, value, named",
    [
        ("results", {"0": {}}, "results is an object, not a list"),
        ("results", "1001,1002", "results is a string"),
        ("result", "1001", r"results\[0\] is a string .*not an object"),
        ("next", 7, r"_links.next is a number \(7\), not a string"),
        ("_links", ["next"], "_links is a list, not an object"),
        ("limit", "2", r"limit is a string \('2'\), not an integer"),
        ("start", 2.0, r"start is a number \(2.0\), not an integer"),
    ],
)
@fault(
    "a Confluence listing's fields have the wrong type (results, a result, _links, next, limit, start)",
    "ConfluenceError naming the field and what it was",
)
def test_listing_fields_of_the_wrong_type(stub, field, value, named):
    def change(handler, payload):
        if field == "result":
            payload["results"][0] = value
        elif field == "next":
            payload["_links"]["next"] = value
        elif field in ("limit", "start"):  # start/limit paging reads them
            del payload["_links"]
            payload[field] = value
        else:
            payload[field] = value

    stub.hostile = on_listings(change)
    raises(f"space AUR: malformed answer: {named}", listing, stub)


@pytest.mark.parametrize("value", ["3", 2.5, True, {"n": 3}])
@fault("Confluence gives a page version that is not an integer", "ConfluenceError naming version.number")
def test_a_version_that_is_not_an_integer(stub, value):
    stub.hostile = on_listings(lambda handler, payload: payload["results"][0]["version"].update(number=value))
    reader = ConfluenceStorageReader(client=client(stub), space_key="AUR")
    raises("page 1001: malformed answer: version.number is .*not an integer", reader.list_pages)


@pytest.mark.parametrize(
    "body, named",
    [
        ({"storage": {"value": ["<p>x</p>"]}}, "body.storage.value is a list, not a string"),
        ({"storage": "<p>x</p>"}, "body.storage is a string .*not an object"),
        ("<p>x</p>", "body is a string .*not an object"),
    ],
)
@fault("Confluence gives a page body (body.storage.value) that is not a string", "ConfluenceError naming the field")
def test_a_body_that_is_not_a_string(stub, body, named):
    stub.hostile = lambda handler, status, payload: {**payload, "body": body} if "body" in payload else payload
    reader = ConfluenceStorageReader(client=client(stub), page_ids=["1003"])
    raises(f"page 1003: malformed answer: {named}", reader.load_data)


@pytest.mark.parametrize(
    "key, value, named",
    [
        ("space", ["AUR"], "space is a list, not an object"),
        ("space", {"key": 7}, r"space.key is a number \(7\)"),
        ("ancestors", {"id": "1001"}, "ancestors is an object, not a list"),
        ("ancestors", [{"title": "Home"}], r"ancestors\[0\]\.id is null or missing"),
        ("ancestors", ["1001"], r"ancestors\[0\] is a string"),
        ("metadata", {"labels": {"results": "ops"}}, "metadata.labels.results is a string .*not a list"),
        ("metadata", {"labels": {"results": [{"name": 1}]}}, r"metadata.labels.results\[0\].name is a number"),
        ("title", ["Home"], "title is a list, not a string"),
        ("_links", {"webui": 3}, r"_links.webui is a number"),
    ],
)
@fault(
    "Confluence gives page metadata of the wrong shape (space, ancestors, labels, title, links)",
    "ConfluenceError naming the field; nothing half-read is indexed",
)
def test_page_metadata_of_the_wrong_shape(stub, key, value, named):
    stub.hostile = lambda handler, status, payload: {**payload, key: value} if "title" in payload else payload
    reader = ConfluenceStorageReader(client=client(stub), page_ids=["1003"])
    raises(f"page 1003: malformed answer: {named}", reader.load_data)


@fault(
    "Confluence gives a page a huge number of ancestors",
    "ConfluenceError (more than MAX_ANCESTORS), no metadata blown up",
)
def test_a_huge_number_of_ancestors(stub):
    ancestors = [{"id": str(i), "type": "page", "title": f"Level {i}"} for i in range(5000)]
    stub.hostile = lambda h, s, payload: {**payload, "ancestors": ancestors} if "title" in payload else payload
    reader = ConfluenceStorageReader(client=client(stub), page_ids=["1003"])
    raises("page 1003: malformed answer: 5,000 ancestors, more than 200", reader.load_data)
    raises("page 1003: malformed answer: 5,000 ancestors", reader.list_pages)


# -- bodies that are not (readable) JSON --------------------------------------------------------------------
def _raw(status, chunks, content_type="application/json", headers=None, **kwargs):
    """A hostile hook that answers every request with these raw bytes."""

    def hook(handler, _status, _payload):
        handler.send_raw(status, chunks, {"Content-Type": content_type, **(headers or {})}, **kwargs)
        return SENT

    return hook


LOGIN_PAGE = b"<!DOCTYPE html><html><head><title>Sign in</title></head><body><form action='/sso'></form></body></html>"


@fault(
    "Confluence answers 200 with an HTML page (an SSO proxy's login page)",
    "ConfluenceError 'not JSON (text/html: a login page?)'",
)
def test_an_html_login_page_with_status_200(stub):
    calls = []

    def hook(handler, status, payload):  # the proxy redirects to its login page on the same site, then 200 HTML
        calls.append(handler.path)
        if "login" not in handler.path:
            handler.send_raw(302, headers={"Location": "/login?os_destination=x"})
        else:
            handler.send_raw(200, [LOGIN_PAGE], {"Content-Type": "text/html; charset=utf-8"})
        return SENT

    stub.hostile = hook
    raises(r"space AUR: .* answered HTTP 200 with a body that is not JSON \(text/html: a login page\?\)", listing, stub)
    assert len(calls) == 2


@fault("Confluence sends JSON that is not valid UTF-8", "ConfluenceError 'not valid UTF-8'")
def test_json_that_is_not_utf8(stub):
    stub.hostile = _raw(200, [b'{"results": [], "title": "caf\xe9 \xff"}'])
    raises("page 1002: .* answered HTTP 200 with JSON that is not valid UTF-8", client(stub).page, "1002", "")


@fault("Confluence sends JSON nested a hundred thousand levels deep", "ConfluenceError 'nested too deeply', no crash")
def test_json_nested_too_deeply(stub):
    stub.hostile = _raw(200, [b"[" * 100_000 + b"]" * 100_000])
    raises("page 1002: .* JSON nested too deeply", client(stub).page, "1002", "")


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
@fault(
    "Confluence sends a huge body (declared in Content-Length, or streamed without one)",
    "ConfluenceError naming max_response_bytes, read no further than the cap",
)
def test_an_oversized_body_is_refused(stub, declared):
    piece = b" " * 4096
    if declared:
        stub.hostile = _raw(200, [piece] * 64, headers={"Content-Length": str(len(piece) * 64)})
    else:
        stub.hostile = _raw(200, [piece] * 64 + [b""], chunked=True)
    raises("max_response_bytes \\(100,000 bytes\\)", client(stub, max_response_bytes=100_000).page, "1002", "")


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
@fault(
    "Confluence breaks off a body (connection closed mid-body, a truncated chunked answer)",
    "retried, then ConfluenceError naming the protocol error",
)
def test_a_truncated_body_is_retried_then_named(stub, framing):
    body = json.dumps({"id": "1002", "title": "x" * 500}).encode()
    if framing == "chunked":
        stub.hostile = _raw(200, [body[:100]], chunked=True)  # no last chunk, then the connection closes
    else:
        stub.hostile = _raw(200, [body[:100]], headers={"Content-Length": str(len(body))})
    waits = []
    raises(
        r"page 1002: .* broke off its answer \(RemoteProtocolError\) after 2 attempts",
        client(stub, waits, max_retries=1).page,
        "1002",
        "",
    )
    assert waits == [1.0] and len(stub.log) == 2


@fault(
    "Confluence sends Content-Encoding: gzip with a body that is not gzip",
    "ConfluenceError 'cannot be decoded as gzip'",
)
def test_a_body_that_cannot_be_decoded(stub):
    stub.hostile = _raw(200, [b'{"id": "1002"}'], headers={"Content-Encoding": "gzip"})
    raises("page 1002: .* cannot be decoded as 'gzip'", client(stub).page, "1002", "")
    good = gzip.compress(json.dumps({"id": "1002", "type": "page"}).encode())
    stub.hostile = _raw(200, [good], headers={"Content-Encoding": "gzip", "Content-Length": str(len(good))})
    assert client(stub).page("1002", "")["id"] == "1002"  # real gzip still reads


@pytest.mark.parametrize("retry_after", ["nan", "soon", "-5"])
@fault(
    "Confluence sends a Retry-After that is NaN, unreadable or negative",
    "exponential backoff (or no wait) instead; never a crash",
)
def test_odd_retry_after_values(stub, retry_after):
    waits = []
    stub.fail(503, retry_after=retry_after)
    assert client(stub, waits, backoff=0.5).page("1002", "version")["id"] == "1002"
    assert waits == ([0.0] if retry_after == "-5" else [0.5])


# -- the command line -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("hostile", ["next elsewhere", "a list", "slow past --run-deadline"])
@fault(
    "`ragonite index confluence` against a hostile Confluence (next to another origin, a malformed answer, "
    "answers too slow for --run-deadline)",
    "exit 2 with the ConfluenceError on stderr, no traceback; the store keeps what it had, nothing sent elsewhere",
)
def test_the_cli_exits_2_and_the_store_keeps_what_it_had(stub, elsewhere, hostile, capsys, tmp_path, monkeypatch):
    from llama_index_ragonite.cli import main
    from llama_index_ragonite.index.confluence_sync import SYNC_STATE
    from llama_index_ragonite.index.store import EvidenceStore

    monkeypatch.setenv("CONFLUENCE_USER", USER)
    monkeypatch.setenv("CONFLUENCE_API_TOKEN", TOKEN)
    store = tmp_path / "store"
    args = ["index", "confluence", "--url", stub.url, "--space", "AUR", "--store", str(store), "--quiet"]
    assert main(args) == 0
    capsys.readouterr()
    state = (store / SYNC_STATE).read_text()
    stub.edit("1003", body="<p>Carol owns the service now.</p>")  # a change the failed sync must not half-apply
    stub.delete("1002")
    if hostile == "slow past --run-deadline":

        def slow(handler, status, payload):
            time.sleep(0.3)
            return payload

        stub.hostile, args = slow, [*args, "--run-deadline", "0.5"]
    else:
        stub.hostile = _next_elsewhere(elsewhere) if hostile == "next elsewhere" else lambda h, s, payload: [payload]
    assert main(args) == 2
    err = capsys.readouterr().err
    expected = {
        "next elsewhere": "another origin",
        "a list": "malformed answer: the answer is a list",
        "slow past --run-deadline": "run deadline (0.5 s)",
    }[hostile]
    assert err.startswith("ragonite: space AUR: ") and expected in err
    assert "Traceback" not in err and TOKEN not in err and err.count("\n") == 1
    assert (store / SYNC_STATE).read_text() == state and elsewhere.log == []
    assert "confluence-1002" in EvidenceStore(store).page_ids()  # nothing removed
