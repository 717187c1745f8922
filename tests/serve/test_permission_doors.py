"""The leak scan of ``test_serve_permissions`` through every other door: 200 questions a user, 0 leaks.

``scan`` asks 200 questions in conversations of ten (half streamed), reopens them and opens their sources' pages,
and looks for any marker, code word, title, id or URL of a page outside what the user may read. Here it runs:

* through a signing-in reverse proxy on the same host that sends X-Forwarded-For (``--trust-proxy 127.0.0.1``);
* with forged forwarding headers from a peer that is not the proxy (every answer a refusal, nothing shown);
* over a store synced while a proxy trimmed Confluence's permission expansions: a user-restricted page's
  restriction (its child inherits it), a group-restricted page's, and a space's permissions;
* in old conversations after the user lost a group's pages (in the users file, or by a re-sync after Confluence
  changed a space's viewers), answered offline and by an LLM stub that echoes its prompt (each new message
  reads the conversation's earlier turns).

Each door has a positive control: the user does see the markers of the pages they may read there.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Set

import pytest
from confluence_stub import ConfluenceStub
from processes import running_server
from test_proxy_identity import behind_127_0_0_2, client_from, same_host_proxy  # noqa: F401 (fixtures)
from test_revocation import new_conversation, say, serve_args
from test_serve_permissions import (  # noqa: F401 (fixtures)
    GROUPS,
    PAGES,
    QUESTIONS,
    READS,
    SPACES,
    bearer,
    confluence,
    leaks,
    marker,
    proxy_headers,
    scan,
    stub_pages,
    synced,
)

from llama_index_ragonite.cli import main as cli
from llama_index_ragonite.serve.identities import UsersFile, add_user

USERS = sorted(GROUPS)


def controlled(user: str, seen: Set[str], readable: Set[str]) -> None:
    """The positive control: the scan saw the markers of the pages the user may read (all but one at most)."""
    assert seen <= readable and len(seen) >= len(readable) - 1, (user, sorted(seen), sorted(readable))


@pytest.mark.fault(
    "200 questions a user through a signing-in reverse proxy on the same host that sends X-Forwarded-For",
    "no response or SSE event holds a page the user may not read; each user sees their own pages",
    area="access",
)
@pytest.mark.parametrize("user", USERS)
def test_the_scan_through_a_proxy_on_the_same_host(same_host_proxy, user):  # noqa: F811
    with client_from(same_host_proxy, "127.0.0.3", headers={"X-Login": user}) as client:
        responses, found, seen = scan(client, user, explain=False)
    assert responses > 200 and found == set()
    controlled(user, seen, READS[user])


@pytest.mark.fault(
    "200 questions with forged forwarding headers and a user's headers, from a peer that is not the proxy",
    "every answer a refusal (403 kind auth) and nothing of any page; the proxy's own address names the user",
    area="access",
)
def test_the_scan_with_forged_forwarding_headers(behind_127_0_0_2):  # noqa: F811
    forged = {**proxy_headers("acc-carol"), "X-Forwarded-For": "127.0.0.2"}
    with client_from(behind_127_0_0_2.url, "127.0.0.1", headers=forged) as client:
        responses, found, seen = scan(client, "acc-carol", readable=set(), explain=False)
        assert client.get("/api/domains").json()["kind"] == "auth"
    assert responses > 200 and found == set() and seen == set()
    with client_from(behind_127_0_0_2.url, "127.0.0.2", headers=proxy_headers("acc-carol")) as proxy:
        created = proxy.post("/api/conversations", json={}).json()["id"]
        answer = proxy.post(f"/api/conversations/{created}/messages", json={"message": QUESTIONS[110]})
        assert marker("202") in answer.text  # the positive control: "salary bands" is page 202, carol's


TRIMMED_PAGES = {"102", "303"}  # a user-restricted page (its child 103 inherits it) and a group-restricted one
NAMED = ["--space-readers", "ENG=eng", "--space-readers", "PUB=confluence-users"]  # HR left unnamed
NOBODY = {"102", "103", "303", "201", "202", "203"}  # trimmed, inherited, and the HR space's pages


@pytest.fixture(scope="module")
def trimmed_server(tmp_path_factory):
    """A server over a store synced while a proxy trimmed the expansions (every space's permissions, and both
    parts of two pages' restrictions); ENG and PUB named with --space-readers, HR not: (server, tokens)."""
    root = tmp_path_factory.mktemp("trimmed")
    stub = ConfluenceStub(space_readers=dict(SPACES), memberships=dict(GROUPS))
    stub.trimmed, stub.trimmed_pages = {"user", "group", "space"}, set(TRIMMED_PAGES)
    with stub:
        stub.add_pages(stub_pages())
        args = ["index", "confluence", "--url", stub.url, "--cql", "type = page", "--store", str(root / "store")]
        assert cli([*args, *NAMED, "--quiet"]) == 1  # pages readable by nobody: exit 1
    users = UsersFile.load(root / "users.json")
    tokens = {name: add_user(users, name, GROUPS[name]) for name in GROUPS}
    serve = ["--store", f"wiki={root / 'store'}", "--users", str(root / "users.json")]
    with running_server(root, *serve, "--conversations", str(root / "h.sqlite")) as server:
        yield server, tokens


@pytest.mark.fault(
    "200 questions a user over a store synced while a proxy trimmed the permission expansions (a user part, a "
    "group part, an ancestor's restriction, a space's permissions)",
    "the trimmed pages (and their descendants, and the unnamed space's) are shown to nobody; the rest as "
    "Confluence says",
    area="access",
)
@pytest.mark.parametrize("user", USERS)
def test_the_scan_over_trimmed_permission_expansions(trimmed_server, user):
    server, tokens = trimmed_server
    readable = READS[user] - NOBODY
    with server.client(headers=bearer(tokens[user])) as client:
        responses, found, seen = scan(client, user, readable=readable, explain=False)
    assert responses > 200 and found == set()
    controlled(user, seen, readable)


ENG = {"101", "102", "103", "104"}  # the pages the group "eng" opens (with the pages' own restrictions)
OPENERS = (
    "How many runners does the build farm have?",
    "When does the launch window open?",
    "Which console does the rehearsal use?",
)


def revoke_by_users_file(users: Path, store: Path, site: ConfluenceStub, user: str) -> None:
    file = UsersFile.load(users)
    file.users = [u if u.name != user else dataclasses.replace(u, groups=u.groups - {"eng"}) for u in file.users]
    file.save()


def revoke_by_resync(users: Path, store: Path, site: ConfluenceStub, user: str) -> None:
    """The ENG space's viewers become its leads only (Confluence changed), then the store is synced again."""
    kept = site.space_readers["ENG"]
    site.space_readers["ENG"] = ((), ("eng-leads",))
    try:
        args = ["index", "confluence", "--url", site.url, "--cql", "type = page", "--store", str(store)]
        assert cli([*args, "--quiet"]) == 0
    finally:
        site.space_readers["ENG"] = kept


@pytest.mark.fault(
    "a user loses a group's pages (a group taken away in the users file, or Confluence's space viewers changed "
    "and the store synced again), then 200 new messages in their 20 old conversations about those pages "
    "(answered offline and by an LLM that echoes its prompt)",
    "no new message, stream, reopened conversation or page view holds those pages; before, the conversations "
    "did show them",
    area="access",
)
@pytest.mark.parametrize("revoke", [revoke_by_users_file, revoke_by_resync], ids=["users file", "re-sync"])
def test_the_scan_of_old_conversations_after_a_revocation(tmp_path, synced, confluence, stub, revoke):  # noqa: F811
    root, synced_store, tokens = synced
    users, store = tmp_path / "users.json", tmp_path / "store"
    shutil.copy(root / "users.json", users)
    shutil.copytree(synced_store, store)
    stub.clear_script()
    user = "acc-alice"
    with running_server(tmp_path, *serve_args(store, users, tmp_path, stub.base_url)) as server:
        with server.client(headers=bearer(tokens[user])) as client:
            conversations, shown = [], set()
            for n in range(20):
                cid = new_conversation(client, "stub" if n % 2 else "extractive")
                conversations.append(cid)
                shown |= {i for i in ENG if marker(i) in say(client, cid, OPENERS[n % len(OPENERS)])}
            assert {"101", "102", "103"} <= shown  # the control: before, the old conversations showed them
            revoke(users, store, confluence, user)
            readable = READS[user] - ENG
            found, seen, responses = set(), set(), 0
            for n, cid in enumerate(conversations):
                for k, question in enumerate(QUESTIONS[n * 10 : n * 10 + 10]):
                    text = say(client, cid, question, stream=bool(k % 2))
                    responses += 1
                    found |= leaks(text, user, "", readable)
                    seen |= {i for i in PAGES if marker(i) in text}
                reopened = client.get(f"/api/conversations/{cid}")
                found |= leaks(reopened.text, user, "", readable)
                for turn in reopened.json()["turns"]:
                    for source in range(1, len(turn["sources"]) + 1):
                        page = client.get(f"/api/conversations/{cid}/turns/{turn['index']}/sources/{source}/page")
                        found |= leaks(page.text, user, "", readable)
            found |= leaks(json.dumps(client.get("/api/conversations").json()), user, "", readable)
    assert responses == 200 and found == set()
    controlled(user, seen, readable)
