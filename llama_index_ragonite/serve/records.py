"""What the web app keeps beside the chat store: who owns a conversation, its settings, its turns.

``SQLiteChatStore`` keeps the messages and the feedback; the app also needs each
conversation's owner (another user's id must look unknown), its settings (domain, LLM,
fusion, top-k, completion) and each turn as the page shows it (sources, citations, trace),
plus the evidences in prompt order, so a turn can be explained after a restart, and the latest
explanation of each turn by each method, so a reopened conversation shows them again. One small
SQLite file beside the history (``*.serve.sqlite``), one connection guarded by a lock.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

__all__ = ["ConversationRecord", "ServeRecords"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS owners (
    conversation_id TEXT PRIMARY KEY, owner TEXT NOT NULL, settings TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS owners_by_owner ON owners (owner);
CREATE TABLE IF NOT EXISTS turns (
    conversation_id TEXT NOT NULL, turn INTEGER NOT NULL, message_index INTEGER NOT NULL,
    turn_json TEXT NOT NULL, nodes_json TEXT NOT NULL, PRIMARY KEY (conversation_id, turn)
);
CREATE TABLE IF NOT EXISTS explanations (
    conversation_id TEXT NOT NULL, turn INTEGER NOT NULL, method TEXT NOT NULL, result_json TEXT NOT NULL,
    created_at REAL NOT NULL, PRIMARY KEY (conversation_id, turn, method)
);
"""

ConversationRecord = Dict[str, Any]  # {"id", "owner", "settings", "created"}


class ServeRecords:
    """Owners, settings and turns of the app's conversations (see the module doc)."""

    def __init__(self, path: Path | str, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(path), check_same_thread=False, timeout=busy_timeout)
        self._lock = threading.Lock()
        with self._lock, self._conn:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _query(self, sql: str, params: tuple = ()) -> List[tuple]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def _write(self, sql: str, params: tuple) -> None:
        with self._lock, self._conn:
            self._conn.execute(sql, params)

    # -- conversations ----------------------------------------------------------------
    def add(self, conversation_id: str, owner: str, settings: Dict[str, Any]) -> None:
        self._write(
            "INSERT INTO owners (conversation_id, owner, settings, created_at) VALUES (?, ?, ?, ?)",
            (conversation_id, owner, json.dumps(settings), time.time()),
        )

    def get(self, conversation_id: str, owner: str) -> Optional[ConversationRecord]:
        """The conversation when ``owner`` owns it; ``None`` for an unknown id and for another owner's."""
        rows = self._query(
            "SELECT conversation_id, settings, created_at FROM owners WHERE conversation_id = ? AND owner = ?",
            (conversation_id, owner),
        )
        return {"id": rows[0][0], "owner": owner, "settings": json.loads(rows[0][1])} if rows else None

    def owned(self, owner: str) -> Dict[str, Dict[str, Any]]:
        """Every conversation of ``owner``: id -> settings."""
        rows = self._query("SELECT conversation_id, settings FROM owners WHERE owner = ?", (owner,))
        return {cid: json.loads(settings) for cid, settings in rows}

    def count(self, owner: str) -> int:
        """How many conversations ``owner`` has (deleted ones included: they are kept)."""
        return self._query("SELECT COUNT(*) FROM owners WHERE owner = ?", (owner,))[0][0]

    def set_settings(self, conversation_id: str, settings: Dict[str, Any]) -> None:
        self._write("UPDATE owners SET settings = ? WHERE conversation_id = ?", (json.dumps(settings), conversation_id))

    # -- turns --------------------------------------------------------------------------
    def add_turn(self, conversation_id: str, message_index: int, turn: Dict[str, Any], nodes: List[dict]) -> int:
        """Store the next turn (its ``index`` is set here) and return its number."""
        with self._lock, self._conn:
            (count,) = self._conn.execute(
                "SELECT COUNT(*) FROM turns WHERE conversation_id = ?", (conversation_id,)
            ).fetchone()
            turn["index"] = count
            self._conn.execute(
                "INSERT INTO turns (conversation_id, turn, message_index, turn_json, nodes_json) VALUES (?, ?, ?, ?, ?)",
                (conversation_id, count, message_index, json.dumps(turn), json.dumps(nodes)),
            )
        return count

    def turns(self, conversation_id: str) -> List[tuple[Dict[str, Any], int]]:
        """Every turn in order (with its stored ``explanations``: method -> result), with the index of its
        answer in the chat store."""
        rows = self._query(
            "SELECT turn_json, message_index FROM turns WHERE conversation_id = ? ORDER BY turn", (conversation_id,)
        )
        explained: Dict[int, Dict[str, Any]] = {}
        for number, method, result in self._query(
            "SELECT turn, method, result_json FROM explanations WHERE conversation_id = ? ORDER BY created_at",
            (conversation_id,),
        ):
            explained.setdefault(number, {})[method] = json.loads(result)
        out = []
        for turn, index in rows:
            turn = json.loads(turn)
            turn["explanations"] = explained.get(turn["index"], {})
            out.append((turn, index))
        return out

    def add_explanation(self, conversation_id: str, number: int, method: str, result: Dict[str, Any]) -> None:
        """Keep ``result`` as turn ``number``'s explanation by ``method`` (replacing an earlier one)."""
        self._write(
            "INSERT OR REPLACE INTO explanations (conversation_id, turn, method, result_json, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (conversation_id, number, method, json.dumps(result), time.time()),
        )

    def turn(self, conversation_id: str, number: int) -> Optional[tuple[Dict[str, Any], List[dict], int]]:
        """(turn, evidences in prompt order, index of its answer in the chat store) or ``None``."""
        rows = self._query(
            "SELECT turn_json, nodes_json, message_index FROM turns WHERE conversation_id = ? AND turn = ?",
            (conversation_id, number),
        )
        return (json.loads(rows[0][0]), json.loads(rows[0][1]), rows[0][2]) if rows else None

    def reassign(self, old_owner: str, new_owner: str) -> int:
        """Move every conversation of ``old_owner`` to ``new_owner`` (a token's to its user); returns how many."""
        with self._lock, self._conn:
            return self._conn.execute("UPDATE owners SET owner = ? WHERE owner = ?", (new_owner, old_owner)).rowcount
