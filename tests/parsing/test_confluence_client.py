"""ConfluenceClient against the stub Confluence server: auth, pagination, retries with backoff, clear errors."""

from __future__ import annotations

import httpx
import pytest
from confluence_stub import ConfluenceStub, sample_wiki_pages
from fakes import REPO

from llama_index_ragonite.errors import ConfluenceAuthError, ConfluenceError, ConfluenceNotFoundError, RagoniteError
from llama_index_ragonite.parsing.confluence import ConfluenceClient, ConfluenceStorageReader

TOKEN = "s3cret-api-token-value"
USER = "me@example.com"


@pytest.fixture
def stub():
    with ConfluenceStub(user=USER, token=TOKEN, max_limit=2) as server:
        server.add_pages(sample_wiki_pages(REPO / "examples" / "sample_wiki"))
        yield server


def client(stub, waits=None, **kwargs):
    return ConfluenceClient(
        stub.url, user=USER, api_token=TOKEN, sleep=(waits if waits is not None else []).append, **kwargs
    )


def test_listing_follows_next_links_and_counts_requests(stub):
    c = client(stub)
    pages = list(c.space_pages("AUR", "version"))
    assert [p["id"] for p in pages] == ["1001", "1002", "1003", "1004", "1005"]
    assert c.requests == {"list": 3}  # the stub caps limit at 2: 2 + 2 + 1
    assert all(h["authorization"].startswith("Basic ") for _, _, h in stub.log)
    assert "start=2" in stub.log[1][1] and "start=4" in stub.log[2][1]


def test_credentials_come_from_the_environment_and_never_show(stub, monkeypatch):
    monkeypatch.setenv("CONFLUENCE_URL", stub.url)
    monkeypatch.setenv("CONFLUENCE_USER", USER)
    monkeypatch.setenv("CONFLUENCE_API_TOKEN", TOKEN)
    c = ConfluenceClient()
    assert c.page("1002", "version")["version"]["number"] == 1
    assert TOKEN not in repr(c) and "API token" in repr(c)
    reader = ConfluenceStorageReader(client=c, space_key="AUR")
    assert TOKEN not in repr(reader) and TOKEN not in str(reader.to_dict())


def test_a_personal_access_token_is_sent_as_bearer():
    with ConfluenceStub(token=TOKEN) as stub:
        stub.add_pages(sample_wiki_pages(REPO / "examples" / "sample_wiki"))
        c = ConfluenceClient(stub.url, personal_access_token=TOKEN)
        assert c.page("1001", "version")["id"] == "1001"
        assert stub.log[-1][2]["authorization"] == f"Bearer {TOKEN}" and c.auth_kind == "personal access token"


@pytest.mark.fault("Confluence rate limit (429 with Retry-After) and 503s", "retried after the server's delay")
def test_retries_honour_retry_after_then_back_off_exponentially(stub):
    waits = []
    c = client(stub, waits, backoff=0.5)
    stub.fail(429, retry_after="7")
    stub.fail(503, 500)
    assert c.page("1002", "version")["id"] == "1002"
    assert waits == [7.0, 1.0, 2.0]  # Retry-After, then 0.5 * 2**1, 0.5 * 2**2
    assert c.retries == 3 and c.requests["page"] == 4


@pytest.mark.fault("Confluence keeps failing (5xx)", "a bounded number of retries, then ConfluenceError")
def test_retries_are_bounded(stub):
    waits = []
    c = client(stub, waits, max_retries=2, max_wait=3)
    stub.fail(503, 503, 503, 503)
    with pytest.raises(ConfluenceError, match="page 1002: .* HTTP 503"):
        c.page("1002", "version")
    assert waits == [1.0, 2.0] and c.requests["page"] == 3
    stub.fail(429, retry_after="3600")
    c.page("1002", "version")
    assert waits[-1] == 3  # capped at max_wait


def test_transport_errors_and_timeouts_are_retried_then_named():
    calls = []

    def handler(request):
        calls.append(request)
        raise httpx.ConnectTimeout("timed out", request=request)

    waits = []
    c = ConfluenceClient(
        "https://wiki.example/wiki", user=USER, api_token=TOKEN, max_retries=1, sleep=waits.append,
        transport=httpx.MockTransport(handler),
    )  # fmt: skip
    with pytest.raises(ConfluenceError) as caught:
        c.page("7", "version")
    assert "page 7" in str(caught.value) and "ConnectTimeout" in str(caught.value) and len(calls) == 2
    assert TOKEN not in str(caught.value)


@pytest.mark.fault(
    "Confluence credentials refused, no permission, unknown page", "an error naming the space or page, never the token"
)
def test_401_403_404_name_the_space_or_page_and_never_the_token(stub):
    wrong = ConfluenceClient(stub.url, user=USER, api_token="wrong-" + TOKEN, sleep=[].append)
    with pytest.raises(ConfluenceAuthError) as caught:
        list(wrong.space_pages("AUR", "version"))
    assert (
        "space AUR" in str(caught.value) and "401" in str(caught.value) and "CONFLUENCE_API_TOKEN" in str(caught.value)
    )
    stub.denied.add("SECRET")
    with pytest.raises(ConfluenceAuthError, match="space SECRET: no permission"):
        list(client(stub).space_pages("SECRET", "version"))
    with pytest.raises(ConfluenceNotFoundError, match="page 424242: not found"):
        client(stub).page("424242", "version")
    with pytest.raises(ConfluenceNotFoundError, match="space NOPE"):
        ConfluenceStorageReader(client=client(stub), space_key="NOPE").load_data()
    for err in (caught.value,):
        assert isinstance(err, RagoniteError) and TOKEN not in str(err) and TOKEN not in repr(err)


def test_bad_urls_and_half_credentials_are_refused(monkeypatch):
    for name in ("CONFLUENCE_URL", "CONFLUENCE_USER", "CONFLUENCE_API_TOKEN", "CONFLUENCE_PAT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="No Confluence URL"):
        ConfluenceClient()
    with pytest.raises(ValueError, match="not in the URL") as caught:
        ConfluenceClient(f"https://me:{TOKEN}@wiki.example/wiki")
    assert TOKEN not in str(caught.value)
    with pytest.raises(ValueError, match="e-mail"):
        ConfluenceClient("https://wiki.example/wiki", api_token=TOKEN)
