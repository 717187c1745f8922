"""A revoked permission reaches the next message of an old conversation, not only its reopened turns.

A user is shown a page, then loses it (a re-sync after Confluence's restriction changed, or a group taken
from them in the users file), then writes again in the same conversation. Nothing of the page may come back:
not in the answer, the completed question, the trace's prompts, the follow-ups or the SSE events, whether
the LLM echoes its prompt (an OpenAI-compatible stub whose answer is the prompt it got) or the offline
answerer answers. Positive controls: without the revocation the same follow-up does carry the page, so the
scan sees a leak when there is one. Real server processes, the stub Confluence, real Chroma, loopback only.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Iterable, List, Set

import httpx
import pytest
from processes import running_server
from test_serve_permissions import PAGES, bearer, confluence, marker, sse_text, synced  # noqa: F401 (fixtures)

from llama_index_ragonite.cli import main as cli
from llama_index_ragonite.serve.identities import UsersFile

LAUNCH = "When does the launch window open?"  # page 102, which alice may read until it is revoked
CANTEEN = "What does the canteen serve on Fridays?"  # page 301, public
POINTING = "And who should I ask about it?"  # points back: the completer reads the earlier turns
PARKING = "When are parking permits renewed?"  # page 302, public


def secrets_of(pages: Iterable[str]) -> Set[str]:
    """What only these pages hold: marker, code word, title, id."""
    out = set()
    for i in pages:
        _, _, title, _, code, _ = PAGES[i]
        out.update({marker(i), code, title, f"confluence-{i}"})
    return out


def found(text: str, pages: Iterable[str]) -> Set[str]:
    return {s for s in secrets_of(pages) if s in text}


def serve_args(store: Path, users: Path, tmp: Path, stub_url: str) -> List[str]:
    llms = ["--llm", f"stub=openai-compatible:stub-model@{stub_url}", "--llm", "extractive"]
    return ["--store", f"wiki={store}", "--users", str(users), "--conversations", str(tmp / "h.sqlite"), *llms]


def new_conversation(client: httpx.Client, llm: str) -> str:
    """A conversation answered by ``llm`` from one evidence a turn: a turn's own sources are its asked page's
    only, so that a later turn can hold another page only by what it was built from."""
    cid = client.post("/api/conversations", json={}).json()["id"]
    settings = {"llm": llm, "top_k": 1}
    assert client.put(f"/api/conversations/{cid}/settings", json=settings).status_code == 200
    return cid


def say(client: httpx.Client, cid: str, message: str, stream: bool = False) -> str:
    """Every byte of the turn's response (the SSE events when streamed)."""
    if stream:
        return sse_text(client, f"/api/conversations/{cid}/messages/stream", message)
    response = client.post(f"/api/conversations/{cid}/messages", json={"message": message})
    assert response.status_code == 200, response.text
    return response.text


def resync(store: Path, url: str) -> None:
    assert cli(["index", "confluence", "--url", url, "--cql", "type = page", "--store", str(store), "--quiet"]) == 0


def last_turn(client: httpx.Client, cid: str) -> str:
    return json.dumps(client.get(f"/api/conversations/{cid}").json()["turns"][-1])


@pytest.fixture
def alice_server(tmp_path, synced, stub):  # noqa: F811
    """A server over a copy of the synced store and users file, as acc-alice: (server, client, store, users)."""
    root, store, tokens = synced
    copy, users = tmp_path / "store", tmp_path / "users.json"
    shutil.copytree(store, copy)
    shutil.copy(root / "users.json", users)
    stub.clear_script()
    with running_server(tmp_path, *serve_args(copy, users, tmp_path, stub.base_url)) as running:
        with running.client(headers=bearer(tokens["acc-alice"])) as client:
            yield running, client, copy, users


@pytest.mark.fault(
    "a re-sync revokes a page a user was shown, then the user writes again in that conversation",
    "the new turn is built as if the revoked turn (and every later turn built from it) had never been asked: "
    "no answer, completed question, trace prompt, follow-up or SSE event holds the page",
    area="access",
)
@pytest.mark.parametrize("llm", ["stub", "extractive"])
def test_a_resync_revocation_reaches_the_next_message(alice_server, confluence, llm):  # noqa: F811
    _, client, store, _ = alice_server
    control = new_conversation(client, llm)
    say(client, control, LAUNCH)
    shown = say(client, control, POINTING)
    assert found(shown, ["102"]), "positive control: the follow-up carries the earlier turn's page"
    if llm == "stub":  # and a turn built from it carries it on (the echoed prompt holds the history)
        say(client, control, CANTEEN)
        assert found(say(client, control, PARKING), ["102"])

    direct, derived = new_conversation(client, llm), new_conversation(client, llm)
    say(client, direct, LAUNCH)
    say(client, derived, LAUNCH)
    say(client, derived, CANTEEN)  # built from the launch turn: its history held it
    confluence.pages["102"].readers = (("acc-carol",), ())  # revoked for alice (and 103, its child)
    try:
        resync(store, confluence.url)
    finally:
        confluence.pages["102"].readers = (("acc-alice",), ())
    revoked = ["102", "103"]
    for cid, message in ((direct, POINTING), (derived, PARKING)):
        for stream in (False, True):
            text = say(client, cid, message, stream=stream)
            assert found(text, revoked) == set(), (cid, stream)
            assert found(last_turn(client, cid), revoked) == set()
    turns = client.get(f"/api/conversations/{derived}").json()["turns"]
    assert [t.get("hidden", False) for t in turns] == [True, True, False, False]  # the derived turn too
    assert found(client.get(f"/api/conversations/{derived}").text, revoked) == set()


@pytest.mark.fault(
    "a group is taken from a user in the users file, then the user writes again in an old conversation",
    "the new turn never reads the turns that showed the group's pages: nothing of them in any response",
    area="access",
)
def test_a_group_removed_in_the_users_file_reaches_the_next_message(alice_server, confluence):  # noqa: F811
    _, client, _, users = alice_server
    control = new_conversation(client, "stub")
    say(client, control, "How many runners does the build farm have?")  # page 101: the ENG space, group eng
    assert found(say(client, control, POINTING), ["101"]), "positive control"

    cid = new_conversation(client, "stub")
    say(client, cid, "How many runners does the build farm have?")
    say(client, cid, CANTEEN)
    file = UsersFile.load(users)
    file.users = [
        type(u)(u.name, u.groups - {"eng"}, u.token_sha256) if u.name == "acc-alice" else u for u in file.users
    ]
    file.save()
    lost = ["101", "102", "103"]  # the ENG space
    for message, stream in ((POINTING, False), (PARKING, True)):
        text = say(client, cid, message, stream=stream)
        assert found(text, lost) == set(), stream
        assert found(last_turn(client, cid), lost) == set()
    assert found(client.get(f"/api/conversations/{cid}").text, lost) == set()
