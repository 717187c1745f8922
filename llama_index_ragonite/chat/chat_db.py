"""The chat store's SQLite file: schema, versioned migration, connection settings, write transactions,
and the row-level statements the store's methods share.

Kept apart from ``SQLiteChatStore`` so the store's methods read as conversation logic while
the file-level concerns (WAL, busy timeout, ``PRAGMA user_version``) live in one place.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import List, Optional, Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole

from llama_index_ragonite.errors import ChatStoreError

__all__ = [
    "MEMORY",
    "SCHEMA_VERSION",
    "conversation_owner",
    "conversation_row",
    "conversation_rows",
    "default_history_file",
    "immediate_transaction",
    "insert_messages",
    "is_write_refusal",
    "message_rows",
    "open_chat_database",
    "set_conversation_owner",
    "touch",
]

SCHEMA_VERSION = 1
MEMORY = ":memory:"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    deleted_at REAL
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    message TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages(conversation_id, id);
CREATE TABLE IF NOT EXISTS feedback (
    message_id INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    rating INTEGER NOT NULL CHECK (rating IN (-1, 1)),
    comment TEXT,
    created_at REAL NOT NULL
);
"""
# Who a conversation belongs to (the CLI's ``--as`` user). A table of its own, created on every open without a
# version bump: a file of an older release gains it (its conversations belong to nobody), an older release
# ignores it (its new conversations then belong to nobody: only a reader without ``--as`` opens them).
_OWNERS = """
CREATE TABLE IF NOT EXISTS conversation_owners (
    conversation_id TEXT PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
    owner TEXT NOT NULL
)
"""


@contextmanager
def immediate_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One transaction, holding SQLite's write lock from the start (no lock upgrades, no deadlocks)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def default_history_file(store: str | os.PathLike[str]) -> Path:
    """Where ``ragonite ask``/``chat`` keep a store's conversations when not told (``--conversations``).

    ``STORE/conversations.sqlite`` when it can be written there (SQLite also needs the folder,
    for its WAL files); else, for a read-only store, a file of its own under the user's state
    folder (``$XDG_STATE_HOME/ragonite``, by default ``~/.local/state/ragonite``), named after the store.
    """
    folder = Path(store).expanduser()
    beside = folder / "conversations.sqlite"
    if os.access(folder, os.W_OK) and (not beside.exists() or os.access(beside, os.W_OK)):
        return beside
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "ragonite"
    tag = hashlib.sha256(str(folder.resolve()).encode("utf-8", "replace")).hexdigest()[:10]
    return state / f"conversations-{folder.resolve().name or 'store'}-{tag}.sqlite"


def _not_writable(target: str, err: BaseException) -> ChatStoreError:
    return ChatStoreError(
        f"{target}: cannot write the chat history there ({err}); "
        "pass a writable file (`--conversations FILE`, or SQLiteChatStore(path))"
    )


def _database_target(path: str) -> str:
    """The file ``sqlite3.connect`` should open, its parent folders created; ``":memory:"`` as is."""
    if path == MEMORY:
        return path
    file = Path(path).expanduser()
    if file.is_dir():
        raise ChatStoreError(f"{file} is a folder; SQLiteChatStore needs a database file path")
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _not_writable(str(file), err) from err
    return str(file)


def _migrate(conn: sqlite3.Connection, target: str) -> None:
    """Create the schema on a new file; refuse a file written by a newer schema."""
    with immediate_transaction(conn):
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise ChatStoreError(
                f"{target} has chat store schema version {version}; this version of "
                f"llama-index-ragonite reads up to {SCHEMA_VERSION}: upgrade the package"
            )
        if version < SCHEMA_VERSION:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute(_OWNERS)


def open_chat_database(path: str, busy_timeout: float) -> sqlite3.Connection:
    """A connection to the chat store at ``path`` (WAL, foreign keys on), its schema up to date.

    Raises:
        ChatStoreError: ``path`` is a folder, not a SQLite database, or written by a newer schema.
    """
    target = _database_target(path)
    try:
        conn = sqlite3.connect(target, timeout=busy_timeout, check_same_thread=False, isolation_level=None)
    except sqlite3.OperationalError as err:  # "unable to open database file": a read-only folder
        raise _not_writable(target, err) from err
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA journal_mode = WAL")  # stays "memory" for ":memory:"
        conn.execute("PRAGMA synchronous = NORMAL")  # durable enough with WAL, much faster
        _migrate(conn, target)
    except sqlite3.OperationalError as err:
        conn.close()
        if is_write_refusal(err):
            raise _not_writable(target, err) from err
        raise ChatStoreError(f"{target} is not a usable SQLite chat store database ({err})") from err
    except sqlite3.DatabaseError as err:
        conn.close()
        raise ChatStoreError(f"{target} is not a usable SQLite chat store database ({err})") from err
    except BaseException:
        conn.close()
        raise
    return conn


def is_write_refusal(err: sqlite3.OperationalError) -> bool:
    """SQLite's ways of saying a file or its folder cannot be written (no error codes before 3.11)."""
    text = str(err).lower()
    return any(m in text for m in ("readonly", "read-only", "unable to open", "disk i/o", "permission"))


# -- rows (inside a read or write transaction) ----------------------------------------------
def conversation_row(conn: sqlite3.Connection, key: str) -> Optional[tuple]:
    """(id, deleted_at) of the conversation, or None."""
    return conn.execute("SELECT id, deleted_at FROM conversations WHERE id = ?", (key,)).fetchone()


def conversation_rows(conn: sqlite3.Connection, where: str, params: tuple) -> List[tuple]:
    """(id, created, updated, deleted, message count, first user message JSON, last message id) of the
    conversations ``where`` selects (on ``c``), most recently updated first."""
    return conn.execute(
        f"""
        SELECT c.id, c.created_at, c.updated_at, c.deleted_at,
               (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id),
               (SELECT m.message FROM messages m WHERE m.conversation_id = c.id AND m.role = 'user'
                ORDER BY m.id LIMIT 1),
               (SELECT MAX(m.id) FROM messages m WHERE m.conversation_id = c.id) AS last_id
        FROM conversations c {where}
        ORDER BY c.updated_at DESC, last_id DESC, c.rowid DESC
        """,
        params,
    ).fetchall()


def conversation_owner(conn: sqlite3.Connection, key: str) -> Optional[str]:
    row = conn.execute("SELECT owner FROM conversation_owners WHERE conversation_id = ?", (key,)).fetchone()
    return row[0] if row else None


def set_conversation_owner(conn: sqlite3.Connection, key: str, owner: str) -> Optional[str]:
    """Record ``owner`` unless the conversation has one; the owner it has now."""
    conn.execute("INSERT OR IGNORE INTO conversation_owners (conversation_id, owner) VALUES (?, ?)", (key, owner))
    return conversation_owner(conn, key)


def touch(conn: sqlite3.Connection, key: str) -> None:
    conn.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (time.time(), key))


def message_rows(conn: sqlite3.Connection, key: str) -> List[tuple]:
    """(id, role, message JSON) of the conversation's messages, in order."""
    return conn.execute(
        "SELECT id, role, message FROM messages WHERE conversation_id = ? ORDER BY id", (key,)
    ).fetchall()


def insert_messages(conn: sqlite3.Connection, key: str, messages: Sequence[ChatMessage]) -> None:
    now = time.time()
    conn.executemany(
        "INSERT INTO messages (conversation_id, role, message, created_at) VALUES (?, ?, ?, ?)",
        [(key, MessageRole(m.role).value, m.model_dump_json(), now) for m in messages],
    )
