"""The web page's sign-in: a token traded for a session cookie (``serve.signin``), against the real server
process (``--users`` file, a bare ``--token`` and a trusted proxy on loopback), and ``SignIn`` itself on a
clock of its own (expiry, the session cap)."""

from __future__ import annotations

import re

import pytest
from processes import running_server

from llama_index_ragonite.serve.identities import ServeUser, UsersFile, add_user
from llama_index_ragonite.serve.signin import MAX_SESSIONS, SESSION_COOKIE, SESSION_SECONDS, SignIn

BARE_TOKEN = "bare-token-0123456789"


@pytest.fixture(scope="module")
def users_file(tmp_path_factory):
    root = tmp_path_factory.mktemp("sign-in")
    users = UsersFile.load(root / "users.json")
    tokens = {name: add_user(users, name, groups) for name, groups in (("acc-alice", ["eng"]), ("acc-bob", ["hr"]))}
    return root, tokens


@pytest.fixture(scope="module")
def server(wiki_stores, users_file):
    root, _ = users_file
    args = ["--store", f"wiki={wiki_stores['wiki']}", "--users", str(root / "users.json"), "--token", BARE_TOKEN]
    args += ["--trust-proxy", "127.0.0.1", "--conversations", str(root / "h.sqlite")]
    with running_server(root, *args) as running:
        yield running


def sign_in(client, token: str):
    return client.post(
        "/api/session",
        json={"token": token},
        headers={"Origin": client.base_url.scheme + "://" + client.base_url.netloc.decode()},
    )


def cookie(session_id: str) -> dict:
    return {"Cookie": f"{SESSION_COOKIE}={session_id}"}


def session_of(response) -> str:
    match = re.search(rf"{SESSION_COOKIE}=([^;]+)", response.headers["set-cookie"])
    assert match, response.headers["set-cookie"]
    return match.group(1)


def page_mode(client, headers=None) -> str:
    page = client.get("/", headers=headers)
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
    (mode,) = re.findall(r'<body data-sign-in="([a-z-]+)">', page.text)
    return mode


def test_a_token_is_traded_for_an_httponly_strict_session_cookie(server, users_file):
    _, tokens = users_file
    with server.client() as client:
        assert page_mode(client) == "sign-in"  # the page asks for a token before any API call
        made = sign_in(client, tokens["acc-alice"])
        assert made.status_code == 201 and made.json() == {"name": "acc-alice", "groups": ["eng"]}
        attributes = {a.strip().lower() for a in made.headers["set-cookie"].split(";")}
        assert {"httponly", "samesite=strict", "path=/", f"max-age={SESSION_SECONDS}"} <= attributes
        assert "secure" not in attributes  # plain http on loopback: a Secure cookie would never come back
        assert tokens["acc-alice"] not in made.text + made.headers["set-cookie"]
        session = cookie(session_of(made))
        assert page_mode(client, session) == "signed-in"
        assert client.get("/api/me", headers=session).json() == {"name": "acc-alice", "groups": ["eng"]}
        created = client.post("/api/conversations", json={}, headers={**session, "Origin": server.url})
        assert created.status_code == 201
        answered = client.post(
            f"/api/conversations/{created.json()['id']}/messages",
            json={"message": "Who owns the OTA server?"},
            headers={**session, "Origin": server.url},
        )
        assert answered.status_code == 200 and answered.json()["answer"]
        listed = client.get("/api/conversations", headers={"Authorization": f"Bearer {tokens['acc-alice']}"})
        assert [c["id"] for c in listed.json()] == [created.json()["id"]]  # the same user as by bearer
    with server.client() as other:  # a page on https (its Origin says so): the cookie is Secure too
        https = other.post(
            "/api/session", json={"token": tokens["acc-alice"]}, headers={"Origin": "https" + server.url[4:]}
        )
        assert "secure" in {a.strip().lower() for a in https.headers["set-cookie"].split(";")}


def test_a_wrong_token_is_one_clear_401(server):
    with server.client() as client:
        refused = sign_in(client, "not-a-token-of-this-server")
        assert refused.status_code == 401 and refused.json() == {"error": "Wrong access token", "kind": "auth"}
        assert "set-cookie" not in refused.headers
        unknown = client.get("/api/domains", headers=cookie("made-up-session-id"))
        assert unknown.status_code == 401 and "sign in again" in unknown.json()["error"]


@pytest.mark.fault(
    "a session cookie kept after signing out",
    "401 kind auth at the next request: sign-out ends the session on the server, not only the cookie",
    area="access",
)
def test_sign_out_ends_the_session_on_the_server(server, users_file):
    _, tokens = users_file
    with server.client() as client:
        session = cookie(session_of(sign_in(client, tokens["acc-bob"])))
        assert client.get("/api/domains", headers=session).status_code == 200
        ended = client.delete("/api/session", headers={**session, "Origin": server.url})
        assert ended.status_code == 204
        assert re.search(rf"{SESSION_COOKIE}=(\"\")?;.*max-age=0", ended.headers["set-cookie"], re.I)
        kept = client.get("/api/domains", headers=session)
        assert kept.status_code == 401 and kept.json()["kind"] == "auth"
        assert page_mode(client, session) == "sign-in"


@pytest.mark.fault(
    "a session cookie of a user removed from the users file",
    "refused (401) at the next request, without a restart; a user given a new token loses the old token's "
    "sessions, and changed groups apply at once",
    area="access",
)
def test_the_users_file_as_it_is_now_decides(server, users_file):
    root, tokens = users_file
    path = root / "users.json"
    kept = path.read_text()
    with server.client() as client:
        carol_token = add_user(UsersFile.load(path), "acc-carol", ["eng"])
        carol = cookie(session_of(sign_in(client, carol_token)))
        alice = cookie(session_of(sign_in(client, tokens["acc-alice"])))
        try:
            users = UsersFile.load(path)
            users.users = [
                ServeUser(u.name, frozenset({"eng", "security-leads"}), u.token_sha256)
                for u in users.users
                if u.name != "acc-carol"
            ]
            users.save()
            refused = client.get("/api/conversations", headers=carol)
            assert refused.status_code == 401 and refused.json()["kind"] == "auth"
            assert client.get("/api/me", headers=alice).json()["groups"] == ["eng", "security-leads"]

            add_user(UsersFile.load(path), "acc-alice")  # a new token: the old one and its sessions end
            assert client.get("/api/me", headers=alice).status_code == 401
            assert client.get("/api/me", headers={"Authorization": f"Bearer {tokens['acc-alice']}"}).status_code == 401
        finally:
            path.write_text(kept)
        again = cookie(session_of(sign_in(client, tokens["acc-alice"])))
        assert client.get("/api/me", headers=again).json() == {"name": "acc-alice", "groups": ["eng"]}
        assert client.get("/api/me", headers=carol).status_code == 401  # restoring the file does not revive it


@pytest.mark.fault(
    "another site's page posting with a user's session cookie",
    "403 kind host (Origin check) on every state-changing route, the sign-in itself included",
    area="access",
)
def test_cross_origin_posts_with_the_cookie_are_refused(server, users_file):
    _, tokens = users_file
    with server.client() as client:
        session = cookie(session_of(sign_in(client, tokens["acc-alice"])))
        for origin in ("https://attacker.example", "null", server.url.replace("127.0.0.1", "localhost")):
            foreign = {**session, "Origin": origin}
            for method, path, body in (
                ("POST", "/api/conversations", {}),
                ("POST", "/api/session", {"token": tokens["acc-bob"]}),
                ("DELETE", "/api/session", None),
            ):
                refused = client.request(method, path, json=body, headers=foreign)
                assert refused.status_code == 403 and refused.json()["kind"] == "host", (origin, path)
                assert "set-cookie" not in refused.headers
        assert client.get("/api/me", headers=session).json()["name"] == "acc-alice"  # the DELETEs ended nothing


def test_a_bare_token_and_a_proxy_user(server):
    with server.client() as client:
        made = sign_in(client, BARE_TOKEN)
        assert made.status_code == 201 and made.json() == {"name": None, "groups": []}
        session = cookie(session_of(made))
        assert client.get("/api/me", headers=session).json() == {"name": None, "groups": []}
        assert client.post("/api/conversations", json={}, headers=session).status_code == 201
        proxied = {"X-Forwarded-User": "acc-dana", "X-Forwarded-Groups": "ops, eng"}
        assert page_mode(client, proxied) == "proxy"
        assert client.get("/api/me", headers=proxied).json() == {"name": "acc-dana", "groups": ["eng", "ops"]}


def test_the_start_line_says_how_users_sign_in(server):
    log = server.log.read_text()
    assert "Sign-in: users sign in through the proxy at 127.0.0.1" in log
    assert "or by opening the page and pasting their access token (`ragonite users add` makes one)" in log


# -- SignIn on its own clock ---------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_sessions_expire_and_are_kept_only_as_hashes():
    clock = Clock()
    signin = SignIn([BARE_TOKEN], clock=clock)
    session_id, caller = signin.open(BARE_TOKEN)
    assert signin.by_session(session_id) == caller and caller.owner.startswith("token:")
    assert session_id not in repr(signin._sessions) and BARE_TOKEN not in repr(signin._sessions)
    clock.now += SESSION_SECONDS - 1
    assert signin.by_session(session_id) == caller
    clock.now += 1
    assert signin.by_session(session_id) is None and len(signin) == 0
    assert signin.open("wrong-token-0123456789") is None


def test_the_oldest_sessions_end_first_beyond_the_cap(monkeypatch):
    monkeypatch.setattr("llama_index_ragonite.serve.signin.MAX_SESSIONS", 3)
    clock = Clock()
    signin = SignIn([BARE_TOKEN], clock=clock)
    opened = []
    for _ in range(4):
        clock.now += 1
        opened.append(signin.open(BARE_TOKEN)[0])
    assert len(signin) == 3 and signin.by_session(opened[0]) is None
    assert all(signin.by_session(s) is not None for s in opened[1:])
    assert MAX_SESSIONS >= 1000


@pytest.mark.fault(
    "every user removed from the users file while the server runs",
    "every request without a valid token gets 401 (nobody gets in), never the open access of a server without tokens",
    area="access",
)
def test_an_emptied_users_file_lets_nobody_in(wiki_stores, tmp_path):
    token = add_user(UsersFile.load(tmp_path / "users.json"), "acc-erin", ["eng"])
    args = ["--store", f"wiki={wiki_stores['wiki']}", "--users", str(tmp_path / "users.json")]
    with running_server(tmp_path, *args, "--conversations", str(tmp_path / "h.sqlite")) as running:
        with running.client() as client:
            session = cookie(session_of(sign_in(client, token)))
            UsersFile(tmp_path / "users.json", []).save()
            for headers in ({}, session, {"Authorization": f"Bearer {token}"}):
                refused = client.post("/api/conversations", json={}, headers=headers)
                assert refused.status_code == 401 and refused.json()["kind"] == "auth"
                assert "set-cookie" not in refused.headers
            assert page_mode(client) == "sign-in"
