"""``ragonite serve`` over a synced Confluence with restricted pages: a user never sees, in any form, a page
Confluence would not show them (real server process, stub Confluence on loopback).

Three spaces, pages restricted to a user and to groups, directly and through a parent, and three users in
different groups. Every page holds a marker and a code word no other page (and no question) has. Each user
asks 200 questions (many aimed at pages they may not read) in 20 conversations, half of the turns streamed;
every byte of every response (turns, SSE events, reopened conversations, page views, explanations of every
method, domain listings, errors) is scanned for the markers, code words, titles, ids and URLs of the pages
that user may not read. A positive control checks that each user does see their own pages' markers.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

import httpx
import pytest
from confluence_stub import ConfluenceStub, StubPage
from processes import running_server, serve_command

from llama_index_ragonite.cli import main as cli
from llama_index_ragonite.serve.identities import ServeUser, UsersFile, add_user, token_sha256

PAGES = {  # id: (space, parent, title, fact, code word, read restriction (users, groups))
    "101": ("ENG", None, "Build farm overview", "The build farm has 40 runners in rack 7.", "Kestrel", None),
    "102": ("ENG", None, "Launch codes handbook", "The launch window opens on a Tuesday.", "Ocelot", (("acc-alice",), ())),
    "103": ("ENG", "102", "Rehearsal console notes", "The rehearsal uses the blue console.", "Marmot", None),
    "104": ("ENG", None, "Compiler migration plan", "The compiler moves to version 14 in May.", "Heron", ((), ("eng-leads",))),
    "201": ("HR", None, "Holiday booking guide", "Holidays are booked in the calendar tool.", "Badger", None),
    "202": ("HR", None, "Salary band review", "Salary bands are reviewed every March.", "Narwhal", ((), ("hr-leads",))),
    "203": ("HR", "202", "Bonus payout rules", "Bonuses are paid out in June.", "Puffin", (("acc-carol",), ())),
    "301": ("PUB", None, "Canteen weekly menu", "The canteen serves soup on Fridays.", "Walrus", None),
    "302": ("PUB", None, "Parking permit renewal", "Parking permits are renewed in January.", "Lynx", None),
    "303": ("PUB", None, "Incident reporting duty", "Incident reports are filed within 24 hours.", "Gecko", ((), ("security",))),
}  # fmt: skip
SPACES = {"ENG": ((), ("eng",)), "HR": ((), ("hr",)), "PUB": ((), ("confluence-users",))}
GROUPS = {
    "acc-alice": ("eng", "confluence-users"),
    "acc-bob": ("hr", "confluence-users"),
    "acc-carol": ("eng", "eng-leads", "hr", "hr-leads", "security", "confluence-users"),
}
READS = {  # Confluence's rule: space viewers AND the page's and every ancestor's restriction
    "acc-alice": {"101", "102", "103", "301", "302"},
    "acc-bob": {"201", "301", "302"},
    "acc-carol": {"101", "104", "201", "202", "203", "301", "302", "303"},
}
TOPICS = {  # how questions name each page's subject: never its title, marker or code word
    "101": ("build farm", "runners", "rack 7"),
    "102": ("launch window", "launch", "Tuesday"),
    "103": ("rehearsal", "console", "blue console"),
    "104": ("compiler", "version 14", "May"),
    "201": ("holidays", "calendar tool", "booking holidays"),
    "202": ("salary bands", "salary review", "March"),
    "203": ("bonuses", "bonus payout", "June"),
    "301": ("canteen", "soup", "Fridays"),
    "302": ("parking permits", "parking", "January"),
    "303": ("incident reports", "incidents", "24 hours"),
}
TEMPLATES = (
    "What do we know about {0}?",
    "Tell me everything about {1}.",
    "When is {0} relevant?",
    "Which page talks about {2}?",
    "Is there anything written on {1}?",
    "Summarize what the wiki says on {0}.",
    "Who should I ask about {1}?",
    "Was steht im Wiki über {0}?",
    "Give me the details of {2}.",
    "What is the rule for {0}?",
    "List the facts about {1} and {2}.",
    "What changed recently about {0}?",
    "Are there restrictions around {1}?",
    "Any secret code words about {2}?",
    "How does {0} work here?",
    "Wie funktioniert {1}?",
    "What happens in {2}?",
    "Where can I read about {0}?",
    "Quote the page on {1}.",
    "Explain {2} in one sentence.",
)
QUESTIONS = [t.format(*TOPICS[page]) for page in TOPICS for t in TEMPLATES]  # 200
RELEASE = Path(__file__).resolve().parents[1] / "data" / "release_5ebe3ec_serve"
METHODS = ("counterfactual", "naive", "surrogate", "combination", "permutation")


def marker(page_id: str) -> str:
    return f"MARK-{page_id}-Q"


def stub_pages() -> List[StubPage]:
    return [
        StubPage(
            id=i,
            title=title,
            body=f"<h1>{title}</h1><p>{fact} The code word is {code}. {marker(i)}</p>",
            space=space,
            parent=parent,
            readers=readers,
        )
        for i, (space, parent, title, fact, code, readers) in PAGES.items()
    ]


def forbidden(user: str, stub_url: str, readable: Optional[Set[str]] = None) -> Dict[str, str]:
    """Strings that occur only in pages ``user`` may not read (``readable``: default Confluence's rule) -> the page."""
    out = {}
    for i, (_, _, title, _, code, _) in PAGES.items():
        if i not in (READS[user] if readable is None else readable):
            for text in (marker(i), code, title, f"confluence-{i}", f"pageId={i}", f"/pages/{i}"):
                out[text] = i
    return out


def leaks(text: str, user: str, stub_url: str, readable: Optional[Set[str]] = None) -> Set[str]:
    return {f"{s!r} (page {p})" for s, p in forbidden(user, stub_url, readable).items() if s in text}


@pytest.fixture(scope="module")
def confluence():
    with ConfluenceStub(space_readers=dict(SPACES), memberships={u: g for u, g in GROUPS.items()}) as stub:
        stub.add_pages(stub_pages())
        yield stub


@pytest.fixture(scope="module")
def synced(confluence, tmp_path_factory):
    root = tmp_path_factory.mktemp("perm-serve")
    store = root / "store"
    assert (
        cli(["index", "confluence", "--url", confluence.url, "--cql", "type = page", "--store", str(store), "--quiet"])
        == 0
    )
    users = UsersFile.load(root / "users.json")
    tokens = {name: add_user(users, name) for name in GROUPS}  # no groups yet: synced from Confluence next
    assert cli(["users", "sync-groups", str(root / "users.json"), "--url", confluence.url]) == 0
    return root, store, tokens


@pytest.fixture(scope="module")
def server(synced):
    root, store, _ = synced
    args = ["--store", f"wiki={store}", "--users", str(root / "users.json"), "--access-log", str(root / "access.log")]
    with running_server(root, *args, "--conversations", str(root / "h.sqlite")) as running:
        yield running


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def sse_text(client: httpx.Client, path: str, message: str) -> str:
    with client.stream("POST", path, json={"message": message}) as response:
        return response.read().decode()


def test_group_memberships_are_synced_from_confluence(synced):
    root, _, _ = synced
    users = {u.name: u.groups for u in UsersFile.load(root / "users.json").users}
    assert users == {name: frozenset(groups) for name, groups in GROUPS.items()}
    assert "token" not in (root / "users.json").read_text().replace("token_sha256", "")


@pytest.mark.fault(
    "a user asks 200 questions, many about pages Confluence does not show them",
    "no response or SSE event holds a marker, code word, title, id or URL of such a page",
    area="access",
)
@pytest.mark.parametrize("user", sorted(GROUPS))
def test_no_response_shows_a_page_the_user_may_not_read(server, synced, confluence, user):
    _, _, tokens = synced
    with server.client(headers=bearer(tokens[user])) as client:
        responses, found, seen_markers = scan(client, user)
    assert responses > 230
    assert found == set()
    assert seen_markers <= READS[user] and len(seen_markers) >= len(READS[user]) - 1  # the scan is not vacuous


def scan(
    client: httpx.Client,
    user: str,
    questions: List[str] = QUESTIONS,
    readable: Optional[Set[str]] = None,
    explain: bool = True,
) -> Tuple[int, Set[str], Set[str]]:
    """``user`` asks ``questions`` in conversations of ten (half streamed), reopens them, opens their sources'
    pages and (``explain``) explains the first turns by every method: (responses, leaks, markers seen). A leak is
    any marker, code word, title, id or URL of a page outside ``readable`` (default: what Confluence lets them read)."""
    readable = READS[user] if readable is None else readable
    found: Set[str] = set()
    seen_markers: Set[str] = set()
    responses = 0

    def check(text: str) -> None:
        nonlocal responses
        responses += 1
        found.update(leaks(text, user, "", readable))
        seen_markers.update(i for i in PAGES if marker(i) in text)

    check(client.get("/api/domains").text)
    for start in range(0, len(questions), 10):
        created = client.post("/api/conversations", json={})
        check(created.text)
        if not created.is_success:  # a door that refuses the caller: its refusals are scanned too
            for question in questions[start : start + 10]:
                check(client.post("/api/conversations/x/messages", json={"message": question}).text)
            continue
        cid = created.json()["id"]
        for n, question in enumerate(questions[start : start + 10]):
            if n % 2:
                check(sse_text(client, f"/api/conversations/{cid}/messages/stream", question))
            else:
                check(client.post(f"/api/conversations/{cid}/messages", json={"message": question}).text)
        reopened = client.get(f"/api/conversations/{cid}")
        check(reopened.text)
        turns = reopened.json()["turns"]
        for turn in turns[:3]:
            for source in range(1, len(turn["sources"]) + 2):  # the last one does not exist: a 404's text
                check(client.get(f"/api/conversations/{cid}/turns/{turn['index']}/sources/{source}/page").text)
        if explain and start < 20:  # every explanation method, on the first turns with evidence
            explained = next((t for t in turns if t["sources"] and not t["out_of_scope"]), None)
            for method in METHODS if explained else ():
                path = f"/api/conversations/{cid}/turns/{explained['index']}/explain"
                check(client.post(path, json={"method": method}).text)
            check(client.get(f"/api/conversations/{cid}").text)  # with its stored explanations
    check(client.get("/api/conversations").text)
    return responses, found, seen_markers


def test_the_access_log_says_who_was_shown_which_pages(server, synced):
    root, _, tokens = synced
    with server.client(headers=bearer(tokens["acc-bob"])) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        turn = client.post(f"/api/conversations/{cid}/messages", json={"message": "How are holidays booked?"}).json()
    lines = [json.loads(line) for line in (root / "access.log").read_text().splitlines()]
    mine = [entry for entry in lines if entry["conversation"] == cid]
    assert mine and mine[-1]["user"] == "acc-bob" and mine[-1]["question"] == "How are holidays booked?"
    assert "confluence-201" in mine[-1]["pages"] and set(mine[-1]["pages"]) <= {
        f"confluence-{p}" for p in READS["acc-bob"]
    }
    assert any(s["title"] == "Holiday booking guide" for s in turn["sources"])


def test_a_user_added_while_the_server_runs_signs_in_without_a_restart(server, synced):
    root, _, _ = synced
    token = add_user(UsersFile.load(root / "users.json"), "acc-frank", ["confluence-users"])
    with server.client(headers=bearer(token)) as frank:
        assert frank.get("/api/domains").json()[0]["pages"] == 2  # the two public pages only
    kept = (root / "users.json").read_text()
    (root / "users.json").write_text("{not json")  # a half-edited file: the users read before stay
    try:
        with server.client(headers=bearer(token)) as frank:
            assert frank.get("/api/domains").status_code == 200
    finally:
        (root / "users.json").write_text(kept)


@pytest.mark.fault(
    "another user's conversation id asked for with one's own token",
    "404, as for an unknown id: nothing of it shown",
    area="access",
)
def test_a_token_reads_only_its_own_users_conversations(server, synced):
    _, _, tokens = synced
    with (
        server.client(headers=bearer(tokens["acc-alice"])) as alice,
        server.client(headers=bearer(tokens["acc-bob"])) as bob,
    ):
        cid = alice.post("/api/conversations", json={}).json()["id"]
        alice.post(f"/api/conversations/{cid}/messages", json={"message": "When does the launch window open?"})
        for response in (
            bob.get(f"/api/conversations/{cid}"),
            bob.get(f"/api/conversations/{cid}/turns/0/sources/1/page"),
            bob.post(f"/api/conversations/{cid}/turns/0/explain", json={"method": "naive"}),
        ):
            assert response.status_code == 404 and "Ocelot" not in response.text
        assert cid not in bob.get("/api/conversations").text


@pytest.mark.fault(
    "a permission revoked in Confluence after a user was shown the page",
    "after the next sync the stored turn comes back hidden; its page view and explanations are refused (403)",
    area="access",
)
def test_a_revoked_permission_hides_stored_turns(tmp_path, confluence, synced):
    root, store, tokens = synced
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    args = [
        "--store",
        f"wiki={copy}",
        "--users",
        str(root / "users.json"),
        "--conversations",
        str(tmp_path / "h.sqlite"),
    ]
    with running_server(tmp_path, *args) as running, running.client(headers=bearer(tokens["acc-alice"])) as client:
        cid = client.post("/api/conversations", json={}).json()["id"]
        turn = client.post(f"/api/conversations/{cid}/messages", json={"message": "When does the launch window open?"})
        assert "Ocelot" in turn.text or marker("102") in turn.text  # she may read it: it is shown
        confluence.pages["102"].readers = (("acc-carol",), ())  # revoked for alice (and for 103, its child)
        try:
            assert (
                cli(
                    [
                        "index",
                        "confluence",
                        "--url",
                        confluence.url,
                        "--cql",
                        "type = page",
                        "--store",
                        str(copy),
                        "--quiet",
                    ]
                )
                == 0
            )
        finally:
            confluence.pages["102"].readers = (("acc-alice",), ())
        reopened = client.get(f"/api/conversations/{cid}")
        assert reopened.json()["turns"][0]["hidden"] is True
        assert not leaks(reopened.text, "acc-alice", confluence.url) and "Ocelot" not in reopened.text
        assert client.get(f"/api/conversations/{cid}/turns/0/sources/1/page").status_code == 403
        assert client.post(f"/api/conversations/{cid}/turns/0/explain", json={"method": "naive"}).status_code == 403
        again = client.post(f"/api/conversations/{cid}/messages", json={"message": "When does the launch window open?"})
        assert "Ocelot" not in again.text and marker("102") not in again.text


def test_a_store_with_permissions_needs_users(synced, tmp_path):
    _, store, _ = synced
    done = subprocess.run(
        serve_command("--store", f"wiki={store}", "--port", "0"), capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0 and "--users FILE" in done.stderr and "--trust-proxy" in done.stderr


@pytest.fixture(scope="module")
def proxied(synced, tmp_path_factory):
    root, store, _ = synced
    tmp = tmp_path_factory.mktemp("proxied")
    args = ["--store", f"wiki={store}", "--trust-proxy", "127.0.0.1", "--conversations", str(tmp / "h.sqlite")]
    with running_server(tmp, *args) as running:
        yield running


def proxy_headers(user: str) -> dict:
    return {"X-Forwarded-User": user, "X-Forwarded-Groups": ",".join(GROUPS[user])}


def test_a_trusted_proxy_names_the_user_and_their_groups(proxied, confluence):
    with (
        proxied.client(headers=proxy_headers("acc-bob")) as bob,
        proxied.client(headers=proxy_headers("acc-alice")) as alice,
    ):
        cid = bob.post("/api/conversations", json={}).json()["id"]
        answer = bob.post(f"/api/conversations/{cid}/messages", json={"message": "When does the launch window open?"})
        assert answer.status_code == 200 and not leaks(answer.text, "acc-bob", confluence.url)
        assert alice.get(f"/api/conversations/{cid}").status_code == 404  # another user's conversation
        domains = bob.get("/api/domains").json()[0]
        assert domains["pages"] == len(READS["acc-bob"])
    with proxied.client() as nobody:  # no user header, no token: on a store with permissions, nothing
        assert nobody.get("/api/domains").status_code == 403


@pytest.mark.fault(
    "user headers forged by a client that is not the configured proxy",
    "403 kind auth before anything runs; the headers are never believed",
    area="access",
)
def test_user_headers_from_another_address_are_refused(synced, tmp_path):
    _, store, _ = synced
    args = ["--store", f"wiki={store}", "--trust-proxy", "192.0.2.7", "--conversations", str(tmp_path / "h.sqlite")]
    with running_server(tmp_path, *args) as running, running.client(headers=proxy_headers("acc-carol")) as forged:
        response = forged.get("/api/domains")
        assert response.status_code == 403 and response.json()["kind"] == "auth"
        assert forged.post("/api/conversations", json={}).status_code == 403


def test_a_tokens_conversations_move_to_its_user(wiki_stores, tmp_path):
    """Conversations written by the release before users files (5ebe3ec, a bare ``--token``) belong to the
    token's user once the token is in the users file."""
    for name in ("h.sqlite", "h.serve.sqlite"):
        shutil.copy(RELEASE / name, tmp_path / name)
    token = "legacy-token-0123456789"
    UsersFile(tmp_path / "users.json", [ServeUser("acc-dana", frozenset({"ops"}), token_sha256(token))]).save()
    args = ["--store", f"wiki={wiki_stores['wiki']}", "--conversations", str(tmp_path / "h.sqlite")]
    with running_server(tmp_path, *args, "--users", str(tmp_path / "users.json")) as running:
        with running.client(headers=bearer(token)) as client:
            (listed,) = client.get("/api/conversations").json()
            turn = client.get(f"/api/conversations/{listed['id']}").json()["turns"][0]
            assert turn["question"] == "Who owns the OTA server?" and "Bob" in turn["answer"]
            follow = client.post(
                f"/api/conversations/{listed['id']}/messages", json={"message": "And who backs him up?"}
            )
            assert follow.status_code == 200


def test_users_cli_adds_lists_and_never_prints_hashes(tmp_path, capsys):
    file = tmp_path / "users.json"
    assert cli(["users", "add", str(file), "acc-erin", "--groups", "eng,ops"]) == 0
    token = capsys.readouterr().out.split("token ", 1)[1].split()[0]
    assert UsersFile.load(file).by_token(token).name == "acc-erin"
    assert token not in file.read_text()
    assert cli(["users", "list", str(file)]) == 0
    assert capsys.readouterr().out.strip() == "acc-erin\teng,ops"
