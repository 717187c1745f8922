"""What a caller of the app may read, checked on every read: new turns, stored turns, page views, counts.

Why on every read, not only when a turn is answered: Confluence permissions change after the fact
(a restriction added, a user leaving a group), and a stored turn holds the text, titles and ids of the
pages it showed. A stored turn (with its explanations) is shown again only while its caller may still
read every page it showed; otherwise it comes back hidden: the caller's own question, nothing else.
A new message builds only on the turns the same check admits (``chat.turn_access``): a hidden turn, and
every later turn built from it, is left out of it as if it had never been asked.

Fail-closed: on a store with restricted pages, a caller without a principal (a bare ``--token`` or a
cookie user) reads nothing, unless the operator said every user reads everything.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set

from llama_index_ragonite.chat.turn_access import newest_access, readable_by
from llama_index_ragonite.index.access import AccessMap, Principal

__all__ = [
    "AccessLog",
    "HIDDEN_TURN",
    "NotReadable",
    "hidden_turn",
    "has_restrictions",
    "reader",
    "turn_pages",
    "visible",
]

HIDDEN_TURN = "This turn showed pages you may no longer read, so it is hidden."


class NotReadable(PermissionError):
    """The caller may not read this (403, kind ``auth``); says nothing of what is behind it."""


def reader(sessions: Any, principal: Optional[Principal]) -> Optional[Principal]:
    """The principal retrieval and checks use for this caller; ``NotReadable`` when the app would have to
    guess (restricted pages, nobody identified)."""
    if principal is None and sessions.restricted and not sessions.config.every_user_reads_everything:
        raise NotReadable(
            "This server holds pages not everyone may read, and your request names no user: sign in through "
            "the server's proxy, or use a token of its users file"
        )
    return principal


def turn_pages(
    turn: Dict[str, Any], records: Sequence[Dict[str, Any]], page_of: Callable[[str], Optional[str]]
) -> Set[str]:
    """Every page a stored turn showed: its sources' and every ranked evidence's of its trace (an evidence
    the store no longer has counts as an unknown page, ``""``, which nobody restricted may read).
    ``page_of``: a node id's page (``LexicalIndex.page_of``: one lookup per id, not the whole index)."""
    pages = set(turn.get("pages") or ())
    for record in records:
        node = record.get("node") or {}
        source = ((node.get("relationships") or {}).get("1") or {}).get("node_id")
        pages.add(source or page_of(node.get("id_", "")) or "")
    trace = turn.get("trace") or {}
    for side in ("lexical", "dense", "latent", "fused"):
        pages.update(page_of(hit.get("id", "")) or "" for hit in trace.get(side) or ())
    return pages


def current_access(store: Any) -> AccessMap:
    """The store's access map as the newest sync wrote it (``chat.turn_access.newest_access``)."""
    return newest_access(store.path)[0]


def has_restrictions(store: Any) -> bool:
    """Whether some page of the store is not readable by everyone, as the newest sync says."""
    return newest_access(store.path)[1]


def visible(store: Any, pages: Iterable[str], principal: Optional[Principal]) -> bool:
    """Whether ``principal`` may read every page under the store's newest access map (an unknown page,
    ``""``, only where nothing is restricted)."""
    return principal is None or readable_by(*newest_access(store.path), pages, principal)


def hidden_turn(turn: Dict[str, Any]) -> Dict[str, Any]:
    """The stored turn as shown after a permission was revoked: its index and the caller's own question."""
    return {
        "index": turn.get("index"),
        "question": turn.get("question", ""),
        "answer": HIDDEN_TURN,
        "hidden": True,
        "completed_question": "",
        "cited": [],
        "sources": [],
        "follow_ups": [],
        "warning": None,
        "invalid_citations": [],
        "out_of_scope": False,
        "truncated": False,
        "trace": {"lexical": [], "dense": []},
        "explanations": {},
        "seconds": 0,
    }


class AccessLog:
    """Who was shown which pages, one JSON line per turn, explanation or page view (``--access-log``).

    Why: an operator must be able to answer "who saw this page"; the questions are logged too, so the
    file is as private as the conversations: keep it where the history file is kept.
    """

    def __init__(self, path: Optional[str]) -> None:
        self.path = Path(path) if path else None
        self._lock = threading.Lock()

    def write(self, what: str, principal: Optional[Principal], owner: str, conversation: str, **entry: Any) -> None:
        if self.path is None:
            return
        line = {
            "time": round(time.time(), 3),
            "what": what,
            "user": principal.user if principal else None,
            "groups": sorted(principal.groups) if principal else [],
            "owner": owner,
            "conversation": conversation,
            **{k: sorted(v) if isinstance(v, set) else v for k, v in entry.items()},
        }
        with self._lock, self.path.open("a", encoding="utf-8") as file:
            file.write(json.dumps(line, ensure_ascii=False) + "\n")


def readable_counts(store: Any, principal: Optional[Principal]) -> Dict[str, int]:
    """The domain listing's counts as the caller may see them (only their pages and evidences)."""
    pages: List[str] = list((store.manifest.get("pages") or {}).keys())
    if principal is None:
        return {"evidences": len(store), "pages": len(pages)}
    node_pages, access = store.lexical.node_pages(), current_access(store)
    allowed = {p for p in set(node_pages.values()) | set(pages) if p and access.readable(p, principal)}
    return {
        "evidences": sum(page in allowed for page in node_pages.values()),
        "pages": sum(p in allowed for p in pages),
    }
