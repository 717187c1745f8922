"""A conversation stays its user's: the CLI's ``--as`` owner, and the history a new turn reads.

``ragonite chat --as USER`` keeps each conversation with the user it was started under: another user's id is
"no such conversation" in ``/open``, ``/history``, ``--conversation`` and ``ask``, as an unknown id is. Below
the CLI, the engine's history check (``chat.turn_access``) holds for the Python API too: a turn the caller may
not read never reaches a new turn of theirs. Over the synced stub Confluence of the serve permission tests
(``acc-alice`` reads "Launch codes handbook", ``acc-bob`` does not).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "serve"))  # the permission tests' stub Confluence and store
from test_serve_permissions import GROUPS, PAGES, confluence, marker, synced  # noqa: E402, F401 (fixtures)

from llama_index_ragonite import SQLiteChatStore  # noqa: E402
from llama_index_ragonite.chat.engine import RagoniteChatEngine  # noqa: E402
from llama_index_ragonite.cli import main  # noqa: E402
from llama_index_ragonite.index.access import Principal  # noqa: E402

TITLE = PAGES["102"][2]  # "Launch codes handbook": alice may read it, bob may not
SECRETS = (TITLE, PAGES["102"][4], marker("102"), PAGES["103"][2])
LAUNCH = "When does the launch window open?"
POINTING = "And who should I ask about it?"  # points back: offline, its completion names the earlier page


def as_user(user: str) -> list:
    return ["--as", user, "--groups", ",".join(GROUPS[user])]


def chat(monkeypatch, capsys, store, history, argv, lines) -> tuple:
    """``ragonite chat`` fed ``lines``: (exit code, output)."""
    feed = iter([*lines, "/quit"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(feed))
    code = main(["chat", "--store", str(store), "--conversations", str(history), *argv])
    return code, capsys.readouterr().out


@pytest.fixture
def alices(synced, tmp_path, monkeypatch, capsys):  # noqa: F811
    """(store, history file) with acc-alice's conversation ``alice-1``, one turn on the launch page."""
    _, store, _ = synced
    history = tmp_path / "chats.sqlite"
    code, out = chat(
        monkeypatch, capsys, store, history, [*as_user("acc-alice"), "--conversation", "alice-1"], [LAUNCH]
    )
    assert code == 0 and TITLE in out  # she may read it: it is shown
    return store, history


@pytest.mark.fault(
    "`ragonite chat --as` opens or lists another user's conversation",
    "'no such conversation', as for an unknown id: /open, /history, --conversation and ask refuse it, and a "
    "new message never carries the other conversation's restricted title",
    area="access",
)
def test_another_users_conversation_is_no_such_conversation(alices, monkeypatch, capsys):
    store, history = alices
    control = chat(monkeypatch, capsys, store, history, as_user("acc-alice"), ["/history", "/open alice-1", POINTING])
    assert "alice-1" in control[1] and f"({TITLE})" in control[1]  # positive control: her own, and its title
    bob = as_user("acc-bob")
    code, out = chat(monkeypatch, capsys, store, history, bob, ["/history", "/open alice-1", POINTING])
    assert code == 0 and "No conversation with id 'alice-1'" in out
    assert "alice-1" not in out.replace("No conversation with id 'alice-1'", "")  # not listed
    assert not [s for s in SECRETS if s in out] and LAUNCH not in out
    common = ["--store", str(store), "--conversations", str(history), *bob, "--conversation", "alice-1"]
    assert main(["chat", *common]) == 2 and main(["ask", *common, POINTING]) == 2
    out = capsys.readouterr()
    assert "No conversation with id 'alice-1'" in out.err and not [s for s in SECRETS if s in out.out + out.err]
    with SQLiteChatStore(history) as chats:  # nothing was added to hers
        assert chats.get_conversation("alice-1").message_count == 4 and chats.get_owner("alice-1") == "acc-alice"


def test_a_conversation_without_owner_opens_only_without_as(alices, monkeypatch, capsys):
    """Conversations of a chat store written before owners (or without ``--as``) belong to nobody."""
    store, history = alices
    code, out = chat(monkeypatch, capsys, store, history, ["--conversation", "nobodys"], ["How are holidays booked?"])
    assert code == 0
    with SQLiteChatStore(history) as chats:
        assert chats.get_owner("nobodys") is None
    _, out = chat(monkeypatch, capsys, store, history, as_user("acc-bob"), ["/open nobodys"])
    assert "No conversation with id 'nobodys'" in out
    _, out = chat(monkeypatch, capsys, store, history, [], ["/history", "/open nobodys"])
    assert "nobodys" in out and "No conversation" not in out and "alice-1" not in out


@pytest.mark.fault(
    "a Python API engine acting for one user continues a conversation holding a turn they may not read",
    "the turn is left out of everything the new turn reads (completion, retrieval's topic, prompt, "
    "chat_history): nothing of the page in the new turn",
    area="access",
)
def test_the_engine_never_builds_on_a_turn_its_user_may_not_read(alices):
    store, history = alices
    with SQLiteChatStore(history) as chats:

        def follow_up(user: str):
            principal = Principal.of(user, GROUPS[user])
            engine = RagoniteChatEngine.from_store(
                store, chat_store=chats, conversation_id="alice-1", principal=principal, follow_ups=0
            )
            response = engine.chat(POINTING)
            chats.delete_message("alice-1", -1)  # leave her conversation as it was
            chats.delete_message("alice-1", -1)
            return engine, response

        _, hers = follow_up("acc-alice")
        assert f"({TITLE})" in hers.completed_question  # positive control
        engine, bobs = follow_up("acc-bob")
        seen = [bobs.completed_question, bobs.response, str(bobs.metadata), str(engine.chat_history)]
        assert not [s for s in SECRETS if any(s in text for text in seen)]
        assert [m.content for m in engine.chat_history] == []  # alice's turn is not his to read


def test_owners_in_a_chat_store_of_the_previous_release(tmp_path):
    """A file written before owners gains them without a new schema version; an owner is set once."""
    import shutil
    import sqlite3

    shutil.copy(Path(__file__).parents[1] / "data" / "release_d648acb" / "conversations.sqlite", tmp_path / "c.sqlite")
    with SQLiteChatStore(tmp_path / "c.sqlite") as chats:
        assert chats.get_owner("alice-1") is None  # nobody's: opened only without --as
        chats.set_owner("new-1", "acc-bob")  # created with its owner
        chats.set_owner("new-1", "acc-bob")
        with pytest.raises(ValueError, match="another user"):
            chats.set_owner("new-1", "acc-alice")
        assert chats.get_owner("new-1") == "acc-bob" and chats.get_conversation("new-1").message_count == 0
        chats.purge_conversation("new-1")
        chats.set_owner("new-1", "acc-alice")  # the purged conversation's owner went with it
        assert chats.get_owner("new-1") == "acc-alice"
    assert sqlite3.connect(tmp_path / "c.sqlite").execute("PRAGMA user_version").fetchone()[0] == 1
