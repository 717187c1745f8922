"""A user's identity comes from the configured proxy only: the address ``--trust-proxy`` compares is the TCP
peer, never one a forwarding header named (``serve/peers.py``).

Real server processes on loopback over the synced Confluence of ``test_serve_permissions`` (pages restricted
by user and group). Linux routes all of 127.0.0.0/8 to loopback, so a client socket bound to 127.0.0.2 or
127.0.0.3 is a peer of another address on the same machine. Each refusal has a positive control: the same
user headers from the configured peer do name the user, who then sees their own page's marker.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from http.server import BaseHTTPRequestHandler
from typing import Dict, Iterator

import httpx
import pytest
from harness.llm_server import LoopbackServer
from processes import START_TIMEOUT, free_port, running_server, stop
from test_serve_permissions import GROUPS, READS, confluence, leaks, marker, proxy_headers, synced  # noqa: F401

LAUNCH = "When does the launch window open?"  # page 102: alice and nobody else of the three may read it
SALARY = "When are salary bands reviewed?"  # page 202: carol only
FORGERIES = {  # what a client may claim; uvicorn's proxy_headers (on by default) believes the first two
    "x-forwarded-for": {"X-Forwarded-For": "127.0.0.2"},
    "x-forwarded-for with a port": {"X-Forwarded-For": "127.0.0.2:40000"},
    "forwarded": {"Forwarded": "for=127.0.0.2"},
    "x-real-ip": {"X-Real-IP": "127.0.0.2"},
}


def client_from(url: str, local: str, **kwargs) -> httpx.Client:
    """An httpx client whose connections leave from ``local`` (a loopback address)."""
    return httpx.Client(base_url=url, timeout=120, transport=httpx.HTTPTransport(local_address=local), **kwargs)


def ask(client: httpx.Client, question: str) -> httpx.Response:
    created = client.post("/api/conversations", json={})
    if not created.is_success:
        return created
    return client.post(f"/api/conversations/{created.json()['id']}/messages", json={"message": question})


def seen_as(client: httpx.Client, user: str, question: str, stub_url: str) -> str:
    """Every text ``client`` gets for the domains and a question, checked for leaks of pages ``user`` may not read."""
    texts = [client.get("/api/domains").text, ask(client, question).text]
    joined = "\n".join(texts)
    assert not leaks(joined, user, stub_url)
    return joined


@pytest.fixture(scope="module")
def behind_127_0_0_2(synced, tmp_path_factory):  # noqa: F811
    """A server on 127.0.0.1 that trusts the proxy at 127.0.0.2 (no proxy there: clients pose as one)."""
    _, store, _ = synced
    tmp = tmp_path_factory.mktemp("proxy-2")
    args = ["--store", f"wiki={store}", "--trust-proxy", "127.0.0.2", "--conversations", str(tmp / "h.sqlite")]
    with running_server(tmp, *args) as running:
        yield running


@pytest.mark.fault(
    "a client on the proxy's host forges X-Forwarded-For (or Forwarded, X-Real-IP) naming the trusted proxy, "
    "with the user headers of a user who reads more",
    "403 kind auth and nothing of that user's pages; the refusal logged once for the peer; the same headers "
    "from the proxy's own address name the user",
    area="access",
)
@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_forged_forwarding_headers_do_not_make_a_client_the_proxy(behind_127_0_0_2, confluence, forgery):  # noqa: F811
    server = behind_127_0_0_2
    claim = {**proxy_headers("acc-carol"), **FORGERIES[forgery]}
    with client_from(server.url, "127.0.0.1", headers=claim) as forged:
        for _ in range(3):
            refused = forged.get("/api/domains")
            assert refused.status_code == 403 and refused.json()["kind"] == "auth"
        answer = ask(forged, SALARY)
        assert answer.status_code == 403 and marker("202") not in answer.text and "Salary" not in answer.text
    refusals = [line for line in server.log.read_text().splitlines() if "Refused user headers from 127.0.0.1" in line]
    assert len(refusals) == 1, refusals  # once per peer, however many forged requests
    with client_from(server.url, "127.0.0.2", headers=proxy_headers("acc-carol")) as proxy:  # positive control
        assert proxy.get("/api/domains").json()[0]["pages"] == len(READS["acc-carol"])
        assert marker("202") in seen_as(proxy, "acc-carol", SALARY, confluence.url)


@pytest.mark.fault(
    "a peer that is not the trusted proxy sends only the groups header (no user header)",
    "403 kind auth: the proxy's headers are never believed from another peer, whichever of them is sent",
    area="access",
)
def test_a_groups_header_alone_from_another_peer_is_refused(behind_127_0_0_2):
    with client_from(behind_127_0_0_2.url, "127.0.0.3", headers={"X-Forwarded-Groups": "hr-leads"}) as forged:
        refused = forged.get("/api/domains")
        assert refused.status_code == 403 and refused.json()["kind"] == "auth"


class _Proxy(LoopbackServer):
    """A signing-in reverse proxy on 127.0.0.1: a caller's ``X-Login`` names them (its stand-in for SSO);
    it drops the user headers callers send, sets its own and appends the caller's address to
    X-Forwarded-For, as nginx's ``$proxy_add_x_forwarded_for`` does."""

    thread_name = "test-reverse-proxy"

    def __init__(self, upstream: str) -> None:
        super().__init__()
        self.upstream = upstream

    def _handler(self) -> type:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                self.forward()

            def do_POST(self) -> None:
                self.forward()

            def forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                chain = ", ".join(filter(None, [self.headers.get("x-forwarded-for"), self.client_address[0]]))
                headers = {
                    "content-type": self.headers.get("content-type", "application/json"),
                    "x-forwarded-for": chain,
                }
                login = self.headers.get("x-login")
                if login:
                    headers.update({"x-forwarded-user": login, "x-forwarded-groups": ",".join(GROUPS[login])})
                got = httpx.request(
                    self.command, proxy.upstream + self.path, headers=headers, content=body, timeout=120
                )
                self.send_response(got.status_code)
                self.send_header("content-type", got.headers.get("content-type", "application/json"))
                self.send_header("content-length", str(len(got.content)))
                self.end_headers()
                self.wfile.write(got.content)

        return Handler


@pytest.fixture(scope="module")
def same_host_proxy(synced, tmp_path_factory) -> Iterator[str]:  # noqa: F811
    """A server trusting 127.0.0.1 and a reverse proxy there in front of it: the proxy's URL."""
    _, store, _ = synced
    tmp = tmp_path_factory.mktemp("proxy-1")
    args = ["--store", f"wiki={store}", "--trust-proxy", "127.0.0.1", "--conversations", str(tmp / "h.sqlite")]
    with running_server(tmp, *args) as running:
        proxy = _Proxy(running.url).start()
        try:
            yield f"http://127.0.0.1:{proxy.port}"
        finally:
            proxy.stop()


@pytest.mark.fault(
    "a signing-in reverse proxy on the same host sends X-Forwarded-For with each user's address",
    "each user gets 200 and their own view (their page's marker; none of another's pages); the users' own "
    "address in X-Forwarded-For never replaces the proxy's",
    area="access",
)
def test_a_proxy_on_the_same_host_that_sends_x_forwarded_for_names_its_users(same_host_proxy, confluence):  # noqa: F811
    # the users connect from 127.0.0.3: uvicorn's default would have taken that address from X-Forwarded-For
    for user, question, own in (("acc-alice", LAUNCH, "102"), ("acc-carol", SALARY, "202")):
        with client_from(same_host_proxy, "127.0.0.3", headers={"X-Login": user}) as via_proxy:
            domains = via_proxy.get("/api/domains")
            assert domains.status_code == 200 and domains.json()[0]["pages"] == len(READS[user])
            assert marker(own) in seen_as(via_proxy, user, question, confluence.url)
    with client_from(same_host_proxy, "127.0.0.3", headers={"X-Forwarded-User": "acc-carol"}) as sneaky:
        assert sneaky.get("/api/domains").status_code == 403  # the proxy dropped it: nobody is named


APP = """
import sys, uvicorn
from llama_index_ragonite.serve import ServeConfig, create_app
config = ServeConfig(domains={{"wiki": {store!r}}}, trusted_proxies=["127.0.0.2"], history={history!r})
uvicorn.run(create_app(config), host="127.0.0.1", port={port}, log_level="warning")  # proxy_headers: default (on)
"""


@pytest.fixture(scope="module")
def default_uvicorn(synced, tmp_path_factory) -> Iterator[tuple]:  # noqa: F811
    """``create_app`` under ``uvicorn.run`` with its defaults: proxy headers believed from 127.0.0.1."""
    _, store, _ = synced
    tmp = tmp_path_factory.mktemp("create-app")
    port = free_port()
    code = APP.format(store=str(store), history=str(tmp / "h.sqlite"), port=port)
    log = tmp / "uvicorn.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert process.poll() is None, log.read_text()
            try:
                httpx.get(url + "/api/health", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.3)
        yield url, log
    finally:
        stop(process)


@pytest.mark.fault(
    "create_app under uvicorn with proxy_headers on (its default): a client forges X-Forwarded-For naming the "
    "trusted proxy, bare or with a port",
    "403 kind auth: an address the server took from a forwarding header is never believed (port 0, or a host "
    "and port the headers name); the proxy's own connection still names the user",
    area="access",
)
@pytest.mark.parametrize("claimed", ["127.0.0.2", "127.0.0.2:40000", "10.9.9.9, 127.0.0.2"])
def test_create_app_under_default_uvicorn_refuses_forwarded_addresses(default_uvicorn, confluence, claimed):  # noqa: F811
    url, log = default_uvicorn
    forged: Dict[str, str] = {**proxy_headers("acc-carol"), "X-Forwarded-For": claimed}
    with client_from(url, "127.0.0.1", headers=forged) as client:
        refused = client.get("/api/domains")
        assert refused.status_code == 403 and refused.json()["kind"] == "auth", refused.text
        assert marker("202") not in ask(client, SALARY).text
    assert "proxy headers off" in log.read_text()  # the log says what to change
    with client_from(url, "127.0.0.2", headers=proxy_headers("acc-carol")) as proxy:  # positive control
        assert marker("202") in seen_as(proxy, "acc-carol", SALARY, confluence.url)


def test_forwarding_header_parsing():
    from llama_index_ragonite.serve.peers import forwarded_names, peer_address

    hosts, ports = forwarded_names(
        [b"203.0.113.9:5000, [2001:db8::1]:4711", b'for="[2001:db8::2]:99";proto=https;by=10.0.0.1', b"443"]
    )
    assert hosts == {"203.0.113.9", "2001:db8::1", "2001:db8::2"} and ports == {"5000", "4711", "99", "443"}
    scope = {"client": ("127.0.0.2", 40000), "headers": [(b"x-forwarded-for", b"127.0.0.2:40000")]}
    assert peer_address(scope)[0] == ""
    assert peer_address({"client": ("127.0.0.2", 0), "headers": []})[0] == ""
    assert peer_address({"client": ("::ffff:127.0.0.2", 5), "headers": [(b"x-real-ip", b"127.0.0.2:5")]})[0] == ""
    assert peer_address({"client": ("127.0.0.1", 51234), "headers": [(b"x-forwarded-for", b"127.0.0.1")]}) == (
        "127.0.0.1",
        "",
    )
