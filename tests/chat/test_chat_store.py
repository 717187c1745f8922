from __future__ import annotations

import asyncio
import sqlite3
import threading

import pytest
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.memory import ChatMemoryBuffer

from llama_index_ragonite import SQLiteChatStore
from llama_index_ragonite.chat.chat_store import (
    SCHEMA_VERSION,
    ChatStoreError,
    ConversationDeletedError,
    UnknownConversationError,
)


def user(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.USER, content=text)


def bot(text: str, **kwargs) -> ChatMessage:
    return ChatMessage(role=MessageRole.ASSISTANT, content=text, additional_kwargs=kwargs)


def texts(messages) -> list:
    return [m.content for m in messages]


@pytest.fixture
def db(tmp_path):
    return tmp_path / "chats.sqlite"


@pytest.fixture
def store(db):
    with SQLiteChatStore(db) as s:
        yield s


def dialog(store: SQLiteChatStore, key: str, turns: int = 2) -> None:
    for i in range(1, turns + 1):
        store.add_message(key, user(f"question {i}"))
        store.add_message(key, bot(f"answer {i}"))


# -- messages -----------------------------------------------------------------------------
def test_messages_round_trip_across_reopening(db):
    messages = [
        ChatMessage(role=MessageRole.SYSTEM, content="Answer from the sources."),
        user("Welche BIOS-Version hatte der Dell OptiPlex 7040?"),
        bot("A16 [Source 1]", sources=["n1", "n7"], attribution={"1": 0.67, "2": 0.33}, completed="BIOS version?"),
        ChatMessage(role=MessageRole.TOOL, content='{"ok": true}', additional_kwargs={"tool_call_id": "call_1"}),
    ]
    with SQLiteChatStore(db) as store:
        store.set_messages("conv-1", messages[:2])
        for m in messages[2:]:
            store.add_message("conv-1", m)
    with SQLiteChatStore(str(db)) as reopened:
        back = reopened.get_messages("conv-1")
        assert back == messages
        assert [m.role for m in back] == [MessageRole.SYSTEM, MessageRole.USER, MessageRole.ASSISTANT, MessageRole.TOOL]
        assert back[2].additional_kwargs == {
            "sources": ["n1", "n7"],
            "attribution": {"1": 0.67, "2": 0.33},
            "completed": "BIOS version?",
        }
        assert reopened.get_keys() == ["conv-1"]


@pytest.mark.fault(
    "conversation id is empty",
    "ValueError ('non-empty'); an unknown key reads as empty, like SimpleChatStore",
)
def test_unknown_key_reads_empty_and_empty_id_is_rejected(store):
    assert store.get_messages("nope") == []
    assert store.get_keys() == []
    for call in (
        lambda: store.get_messages(""),
        lambda: store.add_message("  ", user("x")),
        lambda: store.set_messages("", []),
        lambda: store.delete_conversation(""),
        lambda: store.add_feedback("", 1, 1),
    ):
        with pytest.raises(ValueError, match="non-empty"):
            call()


def test_delete_semantics_follow_base_chat_store(store):
    dialog(store, "c", turns=3)  # q1 a1 q2 a2 q3 a3
    assert store.delete_message("c", 1).content == "answer 1"
    assert texts(store.get_messages("c")) == ["question 1", "question 2", "answer 2", "question 3", "answer 3"]
    assert store.delete_message("c", 99) is None  # out of range: nothing happens
    assert store.delete_message("c", -2).content == "question 3"  # negative counts from the end, like list.pop
    assert store.delete_last_message("c").content == "answer 3"
    assert texts(store.get_messages("c")) == ["question 1", "question 2", "answer 2"]
    assert store.delete_message("unknown", 0) is None
    assert store.delete_last_message("unknown") is None

    assert texts(store.delete_messages("c")) == ["question 1", "question 2", "answer 2"]
    assert store.get_messages("c") == [] and store.get_keys() == []  # the key is gone, as in SimpleChatStore
    assert store.delete_messages("c") is None
    store.set_messages("empty", [])
    assert store.get_keys() == ["empty"] and store.delete_last_message("empty") is None


def test_set_messages_replaces_history_and_keeps_feedback_of_unchanged_answers(store):
    dialog(store, "c", turns=2)
    store.add_feedback("c", 1, 1, "exact")
    store.add_feedback("c", 3, -1)
    history = store.get_messages("c")
    store.set_messages("c", history[:2] + [user("question 2, rephrased"), bot("answer 2b")])
    assert texts(store.get_messages("c")) == ["question 1", "answer 1", "question 2, rephrased", "answer 2b"]
    assert [(f.message_index, f.rating, f.comment) for f in store.get_feedback("c")] == [(1, 1, "exact")]
    store.set_messages("c", [user("fresh start")])
    assert store.get_feedback("c") == []


# -- conversations ------------------------------------------------------------------------
@pytest.mark.fault(
    "writing to a soft-deleted conversation",
    "ConversationDeletedError saying to restore_conversation first; messages kept",
)
def test_list_delete_restore_purge(store):
    dialog(store, "old")
    store.add_message("new", user("  How do I   flash the\nBIOS on a Dell OptiPlex 7040 without Windows installed?  "))
    store.set_messages("blank", [])
    listed = store.list_conversations()
    assert [c.id for c in listed] == ["blank", "new", "old"]  # most recently updated first
    new = listed[1]
    assert new.title == "How do I flash the BIOS on a Dell OptiPlex 7040 without Win…"
    assert len(new.title) == 60 and new.message_count == 1 and not new.deleted
    assert listed[0].title == "" and listed[2].title == "question 1" and listed[2].message_count == 4
    assert listed[2].created_at <= listed[2].updated_at

    store.add_message("old", user("question 3"))  # activity moves a conversation to the top
    assert store.list_conversations()[0].id == "old"

    store.delete_conversation("old")
    assert [c.id for c in store.list_conversations()] == ["blank", "new"]
    assert "old" not in store.get_keys()
    trash = [c for c in store.list_conversations(include_deleted=True) if c.deleted]
    assert [c.id for c in trash] == ["old"] and trash[0].deleted_at is not None
    assert len(store.get_messages("old")) == 5  # kept, still readable
    with pytest.raises(ConversationDeletedError, match="restore_conversation"):
        store.add_message("old", user("more"))
    with pytest.raises(ConversationDeletedError):
        store.set_messages("old", [])
    store.delete_conversation("old")  # idempotent

    store.restore_conversation("old")
    assert store.get_conversation("old").deleted is False
    assert "old" in store.get_keys() and len(store.get_messages("old")) == 5
    store.add_message("old", bot("answer 3"))

    store.purge_conversation("old")
    assert store.get_messages("old") == [] and "old" not in store.get_keys()
    assert [c.id for c in store.list_conversations(include_deleted=True)] == ["blank", "new"]


@pytest.mark.fault("conversation id unknown", "UnknownConversationError (a KeyError) 'No conversation with id …'")
def test_unknown_conversation_is_a_clear_key_error(store):
    for call in (
        store.delete_conversation,
        store.restore_conversation,
        store.purge_conversation,
        store.get_conversation,
        store.get_feedback,
        lambda cid: store.add_feedback(cid, 0, 1),
    ):
        with pytest.raises(UnknownConversationError, match="No conversation with id 'ghost'") as err:
            call("ghost")
        assert isinstance(err.value, KeyError)
        assert str(err.value).startswith("No conversation")


# -- feedback -----------------------------------------------------------------------------
def test_feedback_validation(store):
    dialog(store, "c")
    for rating in (0, 2, 5, True, "1", 1.0, None):
        with pytest.raises(ValueError, match="rating"):
            store.add_feedback("c", 1, rating)
    with pytest.raises(ValueError, match="'user' message"):
        store.add_feedback("c", 0, 1)
    with pytest.raises(IndexError, match="has 4 messages"):
        store.add_feedback("c", 4, 1)
    with pytest.raises(IndexError):
        store.add_feedback("c", -5, 1)
    with pytest.raises(ValueError, match="comment"):
        store.add_feedback("c", 1, 1, comment=42)
    assert store.get_feedback("c") == []


def test_feedback_persists_and_survives_soft_delete(db):
    with SQLiteChatStore(db) as store:
        dialog(store, "c", turns=3)
        fb = store.add_feedback("c", -1, -1, "wrong table row")  # -1: the last answer
        assert (fb.message_index, fb.rating, fb.comment) == (5, -1, "wrong table row")
        store.add_feedback("c", 1, -1)
        store.add_feedback("c", 1, 1, "on second thought, right")  # replaces
        store.delete_conversation("c")
        with pytest.raises(ConversationDeletedError):
            store.add_feedback("c", 3, 1)
        assert len(store.get_feedback("c")) == 2
    with SQLiteChatStore(db) as store:
        store.restore_conversation("c")
        got = store.get_feedback("c")
        assert [(f.conversation_id, f.message_index, f.rating, f.comment) for f in got] == [
            ("c", 1, 1, "on second thought, right"),
            ("c", 5, -1, "wrong table row"),
        ]
        store.delete_message("c", 0)  # indices shift with the messages
        assert [f.message_index for f in store.get_feedback("c")] == [0, 4]
        store.delete_message("c", 0)  # deleting the rated answer deletes its feedback
        assert [f.message_index for f in store.get_feedback("c")] == [3]
        store.purge_conversation("c")
        with pytest.raises(UnknownConversationError):
            store.get_feedback("c")
        assert store._conn.execute("SELECT COUNT(*) FROM feedback").fetchone()[0] == 0


# -- LlamaIndex memory --------------------------------------------------------------------
def test_chat_memory_buffer_trims_what_it_returns_and_the_store_keeps_everything(db):
    words = str.split  # a deterministic tokenizer: one token per word
    with SQLiteChatStore(db) as store:
        memory = ChatMemoryBuffer.from_defaults(
            chat_store=store, chat_store_key="conv-7", token_limit=12, tokenizer_fn=words
        )
        for i in range(1, 6):
            memory.put(user(f"question number {i} here"))  # 4 tokens
            memory.put(bot(f"answer {i}"))  # 2 tokens
        window = memory.get()
        assert texts(window) == ["question number 4 here", "answer 4", "question number 5 here", "answer 5"]
        assert window[0].role == MessageRole.USER  # the buffer never starts with an answer
        assert len(memory.get_all()) == 10
    with SQLiteChatStore(db) as store:  # a new process picks the conversation up
        memory = ChatMemoryBuffer.from_defaults(
            chat_store=store, chat_store_key="conv-7", token_limit=12, tokenizer_fn=words
        )
        assert texts(memory.get())[-1] == "answer 5"
        assert len(store.get_messages("conv-7")) == 10
        assert store.list_conversations()[0].title == "question number 1 here"
        assert memory.to_dict()["chat_store"] == {
            "path": str(db),
            "busy_timeout": 30.0,
            "title_chars": 60,
            "class_name": "SQLiteChatStore",
        }
        memory.reset()  # BaseChatStoreMemory.reset -> delete_messages: the conversation is forgotten
        assert store.get_keys() == []


def test_store_reopens_from_its_dict(db):
    with SQLiteChatStore(db, title_chars=10) as store:
        dialog(store, "c")
        data = store.to_dict()
    with SQLiteChatStore.from_dict(data) as again:
        assert again.title_chars == 10 and len(again.get_messages("c")) == 4


# -- threads and async --------------------------------------------------------------------
@pytest.mark.fault("many threads write one chat store at once", "no message lost or duplicated")
@pytest.mark.parametrize("shared", [True, False], ids=["one-store", "store-per-thread"])
def test_concurrent_writes_lose_nothing(db, shared):
    per_thread = 40
    first = SQLiteChatStore(db)
    start = threading.Barrier(8)
    errors = []

    def work(t: int) -> None:
        store = first if shared else SQLiteChatStore(db)
        try:
            start.wait()
            for i in range(per_thread):
                store.add_message("together", user(f"t{t} m{i}"))
                store.add_message(f"own-{t}", bot(f"m{i}"))
                if i % 10 == 0:
                    store.list_conversations()
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)
        finally:
            if not shared:
                store.close()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    together = texts(first.get_messages("together"))
    assert len(together) == 8 * per_thread
    for t in range(8):  # each thread's messages arrive in its own order
        assert [m for m in together if m.startswith(f"t{t} ")] == [f"t{t} m{i}" for i in range(per_thread)]
        assert texts(first.get_messages(f"own-{t}")) == [f"m{i}" for i in range(per_thread)]
    assert len(first.get_keys()) == 9
    first.close()


def test_async_methods(store):
    async def run():
        await store.aset_messages("a", [user("q1")])
        await store.async_add_message("a", bot("a1"))
        await asyncio.gather(*(store.async_add_message(f"k{i}", user("hi")) for i in range(5)))
        assert texts(await store.aget_messages("a")) == ["q1", "a1"]
        assert sorted(await store.aget_keys()) == ["a", "k0", "k1", "k2", "k3", "k4"]
        feedback = await store.aadd_feedback("a", 1, 1, "good")
        assert (await store.aget_feedback("a")) == [feedback]
        await store.adelete_conversation("a")
        assert "a" not in [c.id for c in await store.alist_conversations()]
        await store.arestore_conversation("a")
        assert (await store.aget_conversation("a")).message_count == 2
        assert (await store.adelete_last_message("a")).content == "a1"
        assert (await store.adelete_message("a", 0)).content == "q1"
        assert await store.adelete_messages("k0") == [user("hi")]
        await store.apurge_conversation("k1")
        assert sorted(await store.aget_keys()) == ["a", "k2", "k3", "k4"]

    asyncio.run(run())


# -- the file ---------------------------------------------------------------------------------
def test_file_creation_wal_and_schema_version(tmp_path):
    db = tmp_path / "does" / "not" / "exist" / "chats.sqlite"
    SQLiteChatStore(db).close()
    assert db.is_file()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_memory_database(tmp_path):
    with SQLiteChatStore(":memory:") as store:
        dialog(store, "c")
        assert len(store.get_messages("c")) == 4
    assert not list(tmp_path.iterdir())


@pytest.mark.fault(
    "chat store path is a text file or a folder",
    "ChatStoreError naming the file; the file left untouched",
)
def test_a_file_that_is_not_a_database_is_named_in_the_error(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("these are my notes, not a database\n" * 50)
    with pytest.raises(ChatStoreError, match="notes.txt.*not a usable SQLite"):
        SQLiteChatStore(bad)
    assert bad.read_text().startswith("these are my notes")  # left untouched
    with pytest.raises(ChatStoreError, match="is a folder"):
        SQLiteChatStore(tmp_path)


@pytest.mark.fault("chat store of a newer schema version", "ChatStoreError ('schema version … upgrade')")
def test_newer_schema_is_refused(db):
    SQLiteChatStore(db).close()
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(ChatStoreError, match="schema version 2.*upgrade"):
        SQLiteChatStore(db)


@pytest.mark.fault("chat store used after close()", "ChatStoreError ('closed')")
def test_closed_store_says_so(db):
    store = SQLiteChatStore(db)
    store.close()
    store.close()
    with pytest.raises(ChatStoreError, match="closed"):
        store.get_messages("c")
