"""Security of ``ragonite serve``: bind refusal, tokens, ownership, CSP, size limits (real server process)."""

from __future__ import annotations

import os
import subprocess

import pytest
from processes import running_server, serve_command

from llama_index_ragonite.chat.engine import MAX_MESSAGE_CHARS

TOKEN_A, TOKEN_B = "alpha-token-0123", "bravo-token-4567"


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def token_server(wiki_stores, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve-tokens")
    args = ["--store", f"wiki={wiki_stores['wiki']}", "--token", TOKEN_A, "--token", TOKEN_B]
    with running_server(tmp, *args, "--conversations", str(tmp / "h.sqlite"), headers=bearer(TOKEN_A)) as server:
        yield server


@pytest.fixture(scope="module")
def cookie_server(wiki_stores, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve-cookies")
    with running_server(tmp, "--store", f"wiki={wiki_stores['wiki']}", "--conversations", str(tmp / "h.sqlite")) as s:
        yield s


@pytest.mark.fault(
    "serve asked to listen beyond loopback without an access token", "refused at start (exit ≠ 0) naming --token"
)
@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "example.org"])
def test_a_non_loopback_bind_without_a_token_is_refused(wiki_stores, host):
    env = {k: v for k, v in os.environ.items() if k != "RAGONITE_TOKEN"}
    done = subprocess.run(
        serve_command("--store", f"wiki={wiki_stores['wiki']}", "--host", host, "--port", "9"),
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode != 0
    assert f"Refusing to listen on {host} without an access token" in done.stderr and "--token" in done.stderr


@pytest.mark.fault("API call without a token or with a wrong one", "401 kind auth on every /api route, health included")
def test_tokens_are_checked_on_every_api_call(token_server):
    with token_server.client() as client:
        for path in ("/api/health", "/api/domains", "/api/conversations"):
            missing = client.get(path)
            assert missing.status_code == 401 and missing.json()["kind"] == "auth"
            assert client.get(path, headers=bearer("wrong-token-000")).status_code == 401
            assert client.get(path, headers=bearer(TOKEN_A)).status_code == 200
        assert client.post("/api/conversations", json={}).status_code == 401
        assert client.get("/").status_code == 200  # the page itself: the token goes in its URL fragment


@pytest.mark.fault(
    "another user's conversation id (token users and cookie users)",
    "404 on every route, exactly as an unknown id; nothing read, changed or listed",
)
def test_each_token_owns_its_conversations(token_server):
    with token_server.client() as client:
        created = client.post("/api/conversations", json={}, headers=bearer(TOKEN_A))
        assert created.status_code == 201
        mine = created.json()["id"]
        turn = client.post(f"/api/conversations/{mine}/messages", json={"message": "Who owns the OTA server?"},
                           headers=bearer(TOKEN_A))  # fmt: skip
        assert turn.status_code == 200
        assert_foreign(client, mine, bearer(TOKEN_B))
        assert mine in {c["id"] for c in client.get("/api/conversations", headers=bearer(TOKEN_A)).json()}


def assert_foreign(client, conversation: str, headers: dict) -> None:
    """Every route answers 404 for another user's conversation, and changes nothing."""
    base = f"/api/conversations/{conversation}"
    calls = [
        client.get(base, headers=headers),
        client.delete(base, headers=headers),
        client.post(base + "/restore", headers=headers),
        client.put(base + "/settings", json={"top_k": 2}, headers=headers),
        client.post(base + "/messages", json={"message": "hello"}, headers=headers),
        client.post(base + "/messages/stream", json={"message": "hello"}, headers=headers),
        client.post(base + "/turns/0/explain", json={"method": "counterfactual"}, headers=headers),
        client.post(base + "/turns/0/feedback", json={"rating": 1}, headers=headers),
    ]
    assert [c.status_code for c in calls] == [404] * len(calls)
    assert all(c.json()["kind"] == "not_found" for c in calls)
    assert conversation not in {c["id"] for c in client.get("/api/conversations", headers=headers).json()}


@pytest.mark.fault(
    "another user's conversation id (token users and cookie users)",
    "404 on every route, exactly as an unknown id; nothing read, changed or listed",
)
def test_without_tokens_each_cookie_user_owns_their_conversations(cookie_server):
    with cookie_server.client() as alice, cookie_server.client() as bob:
        created = alice.post("/api/conversations", json={})
        assert created.status_code == 201 and "ragonite_user" in alice.cookies
        set_cookie = created.headers.get("set-cookie") or alice.get("/api/health").headers.get("set-cookie", "")
        bob.get("/api/health")
        assert alice.cookies["ragonite_user"] != bob.cookies["ragonite_user"]
        conversation = created.json()["id"]
        assert alice.get(f"/api/conversations/{conversation}").status_code == 200
        assert_foreign(bob, conversation, {})
        assert alice.get(f"/api/conversations/{conversation}").json()["deleted"] is False
    assert "HttpOnly" in set_cookie and "SameSite=Strict" in set_cookie


def test_security_headers_and_a_csp_without_inline_scripts(cookie_server):
    with cookie_server.client() as client:
        for path in ("/", "/api/health", "/static/app.js", "/api/conversations/none"):
            response = client.get(path)
            csp = response.headers["content-security-policy"]
            script_src = next(d for d in csp.split(";") if d.strip().startswith("script-src"))
            assert "'unsafe-inline'" not in script_src and "'unsafe-eval'" not in csp
            assert "object-src 'none'" in csp and "frame-ancestors 'none'" in csp
            assert response.headers["x-content-type-options"] == "nosniff"
        docs = client.get("/docs")  # Swagger UI: its CDN and the hash of its one inline script, nothing else
        assert docs.status_code == 200 and "swagger" in docs.text.lower()
        assert "'sha256-" in docs.headers["content-security-policy"]
        assert "'unsafe-inline'" not in docs.headers["content-security-policy"]
        assert "/api/conversations/{conversation_id}/messages/stream" in client.get("/openapi.json").json()["paths"]


@pytest.mark.fault(
    "request body over 64 KiB (declared or chunked) or a message over 20,000 characters",
    "413 (body) or 422 (message) kind input before any work; nothing stored",
)
def test_request_size_and_message_length_limits(cookie_server):
    with cookie_server.client() as client:
        conversation = client.post("/api/conversations", json={}).json()["id"]
        url = f"/api/conversations/{conversation}/messages"
        big = b'{"message": "' + b"x" * (100 * 1024) + b'"}'
        declared = client.post(url, content=big, headers={"content-type": "application/json"})
        assert declared.status_code == 413 and declared.json()["kind"] == "input"
        chunked = client.post(
            url, content=iter([big[:50_000], big[50_000:]]), headers={"content-type": "application/json"}
        )
        assert chunked.status_code == 413
        too_long = client.post(url, json={"message": "y" * (MAX_MESSAGE_CHARS + 1)})
        assert too_long.status_code == 422 and too_long.json()["kind"] == "input"
        assert client.get(f"/api/conversations/{conversation}").json()["turns"] == []
