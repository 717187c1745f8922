"""What a Confluence sync's page children (attachments, comments) share: state, removal and permissions.

A child kind's state is child id -> ``{"page": page document id, "documents": [...], ...}``. A run carries over
the entries of pages it did not look at, removes the documents no longer recorded (unless another scope records
them), and makes every recorded document readable by exactly its page's readers, rewritten at every run.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Mapping, Set, Tuple

from llama_index_ragonite.index.access import PageAccess

logger = logging.getLogger(__name__)

__all__ = ["carried", "settle", "warn_failed"]


def carried(previous: Mapping[str, Any], of_page: Callable[[Any], bool]) -> Dict[str, Any]:
    """The entries of ``previous`` whose page ``of_page`` accepts, as they were."""
    return {key: entry for key, entry in previous.items() if of_page(entry.get("page"))}


def settle(
    previous: Mapping[str, Any], state: Mapping[str, Any], access: Mapping[str, PageAccess], held_elsewhere: Set[str]
) -> Tuple[List[str], Dict[str, PageAccess]]:
    """(documents to remove, every recorded document -> its page's readers) after a run wrote ``state``."""
    remove: List[str] = []
    for key, entry in previous.items():
        current = set(state[key]["documents"]) if key in state else set()
        remove.extend(d for d in entry.get("documents", ()) if d not in current and d not in held_elsewhere)
    readers = {doc: access[e["page"]] for e in state.values() if e["page"] in access for doc in e["documents"]}
    return remove, readers


def warn_failed(failed: Mapping[str, str], what: str) -> None:
    """One warning for a run's failures (``what``: "attachment(s)", "comments of … page(s)")."""
    if failed:
        logger.warning(
            "%d %s not synced (previous evidences kept), e.g. %s: %s",
            len(failed),
            what,
            next(iter(failed)),
            next(iter(failed.values())),
        )
