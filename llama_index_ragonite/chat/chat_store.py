"""``SQLiteChatStore``: conversation history and answer feedback in one SQLite file.

The paper's demo kept its conversations in SQLite: a sidebar lists them, a user opens,
deletes and restores them, and rates answers. This module is that store, shaped as a
LlamaIndex ``BaseChatStore`` so any ``BaseChatStoreMemory`` (``ChatMemoryBuffer``,
``ChatSummaryMemoryBuffer``) persists through it::

    store = SQLiteChatStore("chats.sqlite")
    memory = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="conv-1", token_limit=3000)

The chat-store key is the conversation id. ``memory.get()`` trims to the token limit;
the store keeps the whole conversation.

Design notes:

* Stdlib ``sqlite3`` only. WAL journal, one connection per store object guarded by a
  lock (so one store can be shared by threads and by ``asyncio.to_thread``), writes in
  ``BEGIN IMMEDIATE`` transactions with a busy timeout (so several store objects or
  processes can share a file). The schema is created on first open and versioned with
  ``PRAGMA user_version``.
* Each message is one row holding ``ChatMessage.model_dump_json()``: roles, content
  blocks and ``additional_kwargs`` round-trip. Row ids never repeat (``AUTOINCREMENT``),
  so a message index is its rank in id order and feedback points at the row, not at an
  index that shifts when an earlier message is deleted.
* ``set_messages`` keeps the rows of the unchanged leading messages and rewrites the
  rest, so re-setting a history (as memories do) keeps the feedback given to its answers.
* Soft delete hides a conversation from ``get_keys`` and ``list_conversations`` and keeps
  its messages and feedback; ``get_messages`` still reads it (to show a trash view), but
  writes are refused (``ConversationDeletedError``) until it is restored.
  ``delete_messages`` is BaseChatStore's "forget this key": a hard delete, like ``purge_conversation``.
* A conversation may have an owner (``set_owner``, once): the CLI's ``--as`` user, checked by the CLI;
  ``ragonite serve`` keeps its own owners beside the store.
* Ratings are thumbs: ``1`` (helpful) or ``-1`` (not helpful); one rating per answer,
  a new one replaces the old.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, List, Optional, Sequence, Union

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.storage.chat_store.base import BaseChatStore

from llama_index_ragonite.chat.chat_db import (
    MEMORY,
    SCHEMA_VERSION,
    conversation_owner,
    conversation_row,
    conversation_rows,
    immediate_transaction,
    insert_messages,
    is_write_refusal,
    message_rows,
    open_chat_database,
    set_conversation_owner,
    touch,
)
from llama_index_ragonite.chat.chat_records import (
    RATINGS,
    ConversationInfo,
    Feedback,
    check_conversation_id,
    conversation_title,
    utc,
)
from llama_index_ragonite.errors import ChatStoreError, ConversationDeletedError, UnknownConversationError

__all__ = [
    "ChatStoreError",
    "ConversationDeletedError",
    "ConversationInfo",
    "Feedback",
    "SCHEMA_VERSION",
    "SQLiteChatStore",
    "UnknownConversationError",
]

logger = logging.getLogger(__name__)


class SQLiteChatStore(BaseChatStore):
    """Chat histories keyed by conversation id, with conversation management and feedback, in SQLite.

    Args:
        path: The database file (created with its parent folders when missing), or ``":memory:"``.
        busy_timeout: Seconds to wait for another connection's write lock before failing.
        title_chars: Length at which conversation titles are cut.

    Raises:
        ChatStoreError: ``path`` is a folder, not a SQLite database, or written by a newer schema.
    """

    path: str = Field(description="SQLite database file, or ':memory:'.")
    busy_timeout: float = Field(default=30.0, gt=0, description="Seconds to wait for a write lock.")
    title_chars: int = Field(default=60, ge=1, description="Maximum length of a conversation title.")

    _conn: Optional[sqlite3.Connection] = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default_factory=threading.RLock)

    def __init__(self, path: Union[str, Path] = MEMORY, **kwargs: Any) -> None:
        super().__init__(path=str(path), **kwargs)
        self._conn = open_chat_database(self.path, self.busy_timeout)

    @classmethod
    def class_name(cls) -> str:
        return "SQLiteChatStore"

    # -- connection -------------------------------------------------------------------
    def close(self) -> None:
        """Close the database connection; the store cannot be used afterwards."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> "SQLiteChatStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._conn is None:
                raise ChatStoreError(f"The chat store {self.path} is closed")
            yield self._conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction on the store's connection; a file that became read-only is a ``ChatStoreError``."""
        try:
            with self._read() as conn, immediate_transaction(conn):
                yield conn
        except sqlite3.OperationalError as err:
            if not is_write_refusal(err):
                raise
            raise ChatStoreError(
                f"{self.path}: cannot write the chat history there ({err}); pass a writable file"
            ) from err

    # -- helpers (call inside _read/_write) -------------------------------------------
    def _existing(self, conn: sqlite3.Connection, key: str) -> tuple:
        row = conversation_row(conn, check_conversation_id(key))
        if row is None:
            raise UnknownConversationError(f"No conversation with id {key!r} in {self.path}")
        return row

    def _writable(self, conn: sqlite3.Connection, key: str, create: bool) -> bool:
        """Whether the conversation exists (creating it if asked); refuses deleted ones."""
        row = conversation_row(conn, check_conversation_id(key))
        if row is None:
            if create:
                now = time.time()
                conn.execute("INSERT INTO conversations (id, created_at, updated_at) VALUES (?, ?, ?)", (key, now, now))
            return create
        if row[1] is not None:
            raise ConversationDeletedError(
                f"Conversation {key!r} is deleted; restore_conversation({key!r}) before writing to it"
            )
        return True

    # -- BaseChatStore ------------------------------------------------------------------
    def set_messages(self, key: str, messages: List[ChatMessage]) -> None:
        """Replace the conversation's messages (creating it); unchanged leading messages keep their feedback."""
        new = [m.model_dump_json() for m in messages]
        with self._write() as conn:
            self._writable(conn, key, create=True)
            old = message_rows(conn, key)
            keep = 0
            while keep < min(len(old), len(new)) and old[keep][2] == new[keep]:
                keep += 1
            conn.executemany("DELETE FROM messages WHERE id = ?", [(row[0],) for row in old[keep:]])
            insert_messages(conn, key, list(messages[keep:]))
            touch(conn, key)

    def get_messages(self, key: str) -> List[ChatMessage]:
        """The conversation's messages in order (also of a soft-deleted one); ``[]`` for an unknown id."""
        check_conversation_id(key)
        with self._read() as conn:
            rows = message_rows(conn, key)
        return [ChatMessage.model_validate_json(row[2]) for row in rows]

    def add_message(self, key: str, message: ChatMessage) -> None:
        """Append a message (creating the conversation)."""
        with self._write() as conn:
            self._writable(conn, key, create=True)
            insert_messages(conn, key, [message])
            touch(conn, key)

    def delete_messages(self, key: str) -> Optional[List[ChatMessage]]:
        """Forget the conversation (hard delete, feedback included); its messages, or ``None`` if unknown."""
        check_conversation_id(key)
        with self._write() as conn:
            if conversation_row(conn, key) is None:
                return None
            rows = message_rows(conn, key)
            conn.execute("DELETE FROM conversations WHERE id = ?", (key,))
        return [ChatMessage.model_validate_json(row[2]) for row in rows]

    def delete_message(self, key: str, idx: int) -> Optional[ChatMessage]:
        """Remove and return message ``idx`` (negative counts from the end); ``None`` if there is none."""
        with self._write() as conn:
            if not self._writable(conn, key, create=False):
                return None
            rows = message_rows(conn, key)
            if idx < 0:
                idx += len(rows)
            if not 0 <= idx < len(rows):
                return None
            conn.execute("DELETE FROM messages WHERE id = ?", (rows[idx][0],))
            touch(conn, key)
        return ChatMessage.model_validate_json(rows[idx][2])

    def delete_last_message(self, key: str) -> Optional[ChatMessage]:
        """Remove and return the last message; ``None`` for an unknown or empty conversation."""
        return self.delete_message(key, -1)

    def get_keys(self) -> List[str]:
        """Ids of the conversations that are not deleted, oldest first."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT id FROM conversations WHERE deleted_at IS NULL ORDER BY created_at, rowid"
            ).fetchall()
        return [row[0] for row in rows]

    # -- conversations --------------------------------------------------------------------
    def list_conversations(
        self, include_deleted: bool = False, ids: Optional[Sequence[str]] = None
    ) -> List[ConversationInfo]:
        """The conversations (those of ``ids`` when given), most recently updated first; deleted ones
        only when asked. ``ids`` are matched in SQL: one user's list costs no read of everyone's."""
        where = [] if include_deleted else ["c.deleted_at IS NULL"]
        params: tuple = ()
        if ids is not None:
            where.append("c.id IN (SELECT value FROM json_each(?))")
            params = (json.dumps(list(ids)),)
        return self._infos(f"WHERE {' AND '.join(where)}" if where else "", params)

    def get_conversation(self, conversation_id: str) -> ConversationInfo:
        """The list entry of one conversation (deleted or not)."""
        infos = self._infos("WHERE c.id = ?", (check_conversation_id(conversation_id),))
        if not infos:
            raise UnknownConversationError(f"No conversation with id {conversation_id!r} in {self.path}")
        return infos[0]

    def _infos(self, where: str, params: tuple) -> List[ConversationInfo]:
        with self._read() as conn:
            rows = conversation_rows(conn, where, params)
        return [
            ConversationInfo(
                id=cid,
                title=conversation_title(first_user, self.title_chars),
                created_at=utc(created),
                updated_at=utc(updated),
                message_count=count,
                deleted=deleted is not None,
                deleted_at=utc(deleted),
            )
            for cid, created, updated, deleted, count, first_user, _ in rows
        ]

    def delete_conversation(self, conversation_id: str) -> None:
        """Soft delete: hide the conversation, keep its messages and feedback (idempotent)."""
        with self._write() as conn:
            self._existing(conn, conversation_id)
            conn.execute(
                "UPDATE conversations SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL",
                (time.time(), conversation_id),
            )

    def restore_conversation(self, conversation_id: str) -> None:
        """Undo a soft delete (idempotent)."""
        with self._write() as conn:
            self._existing(conn, conversation_id)
            conn.execute("UPDATE conversations SET deleted_at = NULL WHERE id = ?", (conversation_id,))

    def purge_conversation(self, conversation_id: str) -> None:
        """Hard delete: the conversation, its messages and its feedback are gone."""
        with self._write() as conn:
            self._existing(conn, conversation_id)
            conn.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    # -- owners -------------------------------------------------------------------------------
    def get_owner(self, conversation_id: str) -> Optional[str]:
        """Who the conversation belongs to (``set_owner``; the CLI's ``--as`` user); ``None``: nobody."""
        with self._read() as conn:
            self._existing(conn, conversation_id)
            return conversation_owner(conn, conversation_id)

    def set_owner(self, conversation_id: str, owner: str) -> None:
        """Give the conversation (created when new) to ``owner``, once: one owned by another is a ``ValueError``."""
        with self._write() as conn:
            self._writable(conn, conversation_id, create=True)
            if set_conversation_owner(conn, conversation_id, owner) != owner:
                raise ValueError(f"Conversation {conversation_id!r} belongs to another user")

    # -- feedback ---------------------------------------------------------------------------
    def add_feedback(
        self, conversation_id: str, message_index: int, rating: int, comment: Optional[str] = None
    ) -> Feedback:
        """Rate the assistant message at ``message_index`` (negative counts from the end).

        Args:
            conversation_id: An existing, not deleted conversation.
            message_index: Index into ``get_messages(conversation_id)``; must be an assistant message.
            rating: ``1`` (helpful) or ``-1`` (not helpful). Rating an answer again replaces its feedback.
            comment: Optional free text.

        Raises:
            UnknownConversationError: No such conversation.
            ConversationDeletedError: The conversation is soft-deleted.
            IndexError: ``message_index`` is out of range.
            ValueError: Bad rating, or the message is not an assistant message.
        """
        if isinstance(rating, bool) or not isinstance(rating, int) or rating not in RATINGS:
            raise ValueError(f"rating must be 1 (helpful) or -1 (not helpful), got {rating!r}")
        if comment is not None and not isinstance(comment, str):
            raise ValueError(f"comment must be a string or None, got {type(comment).__name__}")
        with self._write() as conn:
            self._existing(conn, conversation_id)
            self._writable(conn, conversation_id, create=False)
            rows = message_rows(conn, conversation_id)
            index = message_index + len(rows) if message_index < 0 else message_index
            if not 0 <= index < len(rows):
                raise IndexError(
                    f"message_index {message_index} is out of range: conversation {conversation_id!r} "
                    f"has {len(rows)} messages"
                )
            message_id, role, _ = rows[index]
            if role != MessageRole.ASSISTANT.value:
                raise ValueError(
                    f"Message {index} of conversation {conversation_id!r} is a {role!r} message; "
                    "feedback rates assistant answers"
                )
            now = time.time()
            conn.execute(
                "INSERT OR REPLACE INTO feedback (message_id, rating, comment, created_at) VALUES (?, ?, ?, ?)",
                (message_id, rating, comment, now),
            )
        return Feedback(conversation_id, index, rating, comment, utc(now))

    def get_feedback(self, conversation_id: str) -> List[Feedback]:
        """The conversation's feedback in message order (also of a soft-deleted conversation)."""
        with self._read() as conn:
            self._existing(conn, conversation_id)
            ids = [row[0] for row in message_rows(conn, conversation_id)]
            rows = conn.execute(
                """
                SELECT f.message_id, f.rating, f.comment, f.created_at FROM feedback f
                JOIN messages m ON m.id = f.message_id WHERE m.conversation_id = ? ORDER BY m.id
                """,
                (conversation_id,),
            ).fetchall()
        index = {message_id: i for i, message_id in enumerate(ids)}
        return [Feedback(conversation_id, index[mid], rating, comment, utc(ts)) for mid, rating, comment, ts in rows]

    # -- async ------------------------------------------------------------------------------
    # BaseChatStore already runs its seven methods in a thread (asyncio.to_thread); these are the rest.
    async def alist_conversations(
        self, include_deleted: bool = False, ids: Optional[Sequence[str]] = None
    ) -> List[ConversationInfo]:
        return await asyncio.to_thread(self.list_conversations, include_deleted, ids)

    async def aget_conversation(self, conversation_id: str) -> ConversationInfo:
        return await asyncio.to_thread(self.get_conversation, conversation_id)

    async def adelete_conversation(self, conversation_id: str) -> None:
        await asyncio.to_thread(self.delete_conversation, conversation_id)

    async def arestore_conversation(self, conversation_id: str) -> None:
        await asyncio.to_thread(self.restore_conversation, conversation_id)

    async def apurge_conversation(self, conversation_id: str) -> None:
        await asyncio.to_thread(self.purge_conversation, conversation_id)

    async def aadd_feedback(
        self, conversation_id: str, message_index: int, rating: int, comment: Optional[str] = None
    ) -> Feedback:
        return await asyncio.to_thread(self.add_feedback, conversation_id, message_index, rating, comment)

    async def aget_feedback(self, conversation_id: str) -> List[Feedback]:
        return await asyncio.to_thread(self.get_feedback, conversation_id)
