"""Which earlier turns a new turn may build on: only those its caller may still fully read.

Why: permissions change after the fact (a re-sync revokes a page, a group is taken from a user), and a
conversation's stored turns hold text of the pages they showed: the answer, and on the user message the
title of its topic page. Every part of a new turn that reads the conversation (question completion and its
prompt, conversation retrieval's terms and topic, the answer prompt and so the LLM's answer, the follow-ups,
the trace) reads the one history ``RagoniteChatEngine.readable_history`` assembles, which leaves out every
exchange whose pages the caller may not all read now: as if it had never been asked. Nothing is deleted:
the exchange comes back when the permission does.

A turn is built from more than its own evidences: its completed question and answer can carry the title or
text of an earlier turn's page. So each user message records (``PAGES_KEY``) the pages of its turn's
evidences and those recorded on every earlier user message of the history it read: a turn derived from a
revoked one is left out with it. A message without that record (stored before it existed, or passed in by
the caller) counts as built from an unknown page, ``""``, which only a store without restrictions admits.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import AbstractSet, Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.index.access import ACCESS_FILE, AccessMap, Principal

__all__ = [
    "MayRead",
    "PAGES_KEY",
    "built_from",
    "newest_access",
    "readable_history",
    "recorded_pages",
    "store_reader",
]

PAGES_KEY = "ragonite_pages"  # additional_kwargs of a user message: every page its turn was built from
UNKNOWN = ""
MayRead = Callable[[AbstractSet[str]], bool]  # may the caller read every one of these pages now?


def recorded_pages(message: ChatMessage) -> FrozenSet[str]:
    """The pages recorded on ``message``; ``{""}`` (unknown) when it has no record."""
    pages = (message.additional_kwargs or {}).get(PAGES_KEY)
    if not isinstance(pages, (list, tuple)) or not all(isinstance(p, str) for p in pages):
        return frozenset({UNKNOWN})
    return frozenset(pages)


def readable_history(history: Sequence[ChatMessage], may_read: Optional[MayRead]) -> List[ChatMessage]:
    """``history`` less every exchange (a user message and the messages up to the next one) whose recorded
    pages ``may_read`` refuses; system messages stay. ``may_read=None``: everything."""
    if may_read is None:
        return list(history)
    kept: List[ChatMessage] = []
    keep = started = False
    for message in history:
        if message.role == MessageRole.SYSTEM:
            kept.append(message)
            continue
        if message.role == MessageRole.USER or not started:  # messages before any user turn: an exchange too
            keep, started = may_read(recorded_pages(message)), True
        if keep:
            kept.append(message)
    return kept


def node_page(hit: NodeWithScore) -> str:
    return hit.node.ref_doc_id or UNKNOWN


def built_from(history: Sequence[ChatMessage], nodes: Sequence[NodeWithScore]) -> List[str]:
    """Every page a turn answered from ``nodes`` after ``history`` (the readable one it read) is built from."""
    pages = {node_page(n) for n in nodes}
    for message in history:
        if message.role == MessageRole.USER:
            pages |= recorded_pages(message)
    return sorted(pages)


_ACCESS: Dict[Path, Tuple[Tuple[int, int], AccessMap, bool]] = {}
_ACCESS_LOCK = threading.Lock()


def newest_access(folder: Any) -> Tuple[AccessMap, bool]:
    """A store folder's access map as the newest sync wrote it (re-read when the file changed), not the one
    its retrievers loaded with their generation: a revoked permission counts from the moment it is synced;
    and whether some page of it is restricted (computed once per version of the file)."""
    path = Path(folder) / ACCESS_FILE
    try:
        found = os.stat(path)
        stamp = (found.st_mtime_ns, found.st_size)
    except OSError:
        return AccessMap(), False
    with _ACCESS_LOCK:
        cached = _ACCESS.get(path)
        if cached is None or cached[0] != stamp:
            access = AccessMap.load(Path(folder))
            cached = _ACCESS[path] = (stamp, access, access.restricted())
        return cached[1], cached[2]


def readable_by(access: AccessMap, restricted: bool, pages: Iterable[str], principal: Principal) -> bool:
    """Whether ``principal`` may read every page (an unknown one only where nothing is restricted)."""
    return not restricted or all(page and access.readable(page, principal) for page in pages)


def store_reader(retriever: Any, principal: Principal) -> MayRead:
    """``MayRead`` for ``principal`` over the store ``retriever`` follows (its folder's newest access file),
    else over the retriever's own ``access`` map as it is at each call."""
    folder = getattr(getattr(retriever, "store", None), "path", None)  # HybridRetriever.store (from_store)

    def may_read(pages: AbstractSet[str]) -> bool:
        if folder is not None:
            return readable_by(*newest_access(folder), pages, principal)
        access = getattr(retriever, "access", None)
        return not isinstance(access, AccessMap) or readable_by(access, access.restricted(), pages, principal)

    return may_read
