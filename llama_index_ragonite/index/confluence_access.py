"""Each synced Confluence page's readers, built from the listing and a few requests (the rule: ``index.access``).

A page may be read by whoever may view its space AND passes its own read restriction AND the
restriction of every restricted ancestor. The listing gives each page's own restriction; an
ancestor outside the listing is asked for once per sync; a space's viewers once per space (space
administrators only see them). Whatever cannot be read whole (not expanded, cut short, refused,
of an unknown shape: ``parsing/confluence/permissions.py``) makes the page readable by nobody,
with the reason and the fix (logged, and in the sync report), never readable by everyone.

``space_readers`` (``--space-readers``) name a space's viewers for a space whose permissions the
sync account cannot read (not a space admin, or an answer not whole); where Confluence's answer is
readable it wins and the named viewers are ignored (reported), so a stale setting cannot widen a space.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Mapping, Optional, Tuple

from llama_index_ragonite.errors import ConfluenceError
from llama_index_ragonite.index.access import NOBODY, Audience, PageAccess
from llama_index_ragonite.parsing.confluence.permissions import Readers, fetch_restriction, fetch_space_readers
from llama_index_ragonite.parsing.confluence.reader import PageVersion

logger = logging.getLogger(__name__)

__all__ = ["PermissionReader", "audience"]

NOT_ADMIN = (
    "space {space}: Confluence lists its view permissions to space administrators only; give the sync account "
    "admin rights on the space, or name its viewers (space_readers=, `--space-readers {space}=GROUP,…`)"
)
NAME_THEM = "; or name its viewers (space_readers=, `--space-readers {space}=GROUP,…`)"


def audience(readers: Readers) -> Audience:
    return Audience(frozenset(readers.users), frozenset(readers.groups), readers.anyone)


class PermissionReader:
    """Reads, for one sync, who may read each listed page (``page_access``); caches per sync, failures included."""

    def __init__(self, client: Any, space_readers: Optional[Mapping[str, Readers]] = None) -> None:
        self.client = client
        self.named: Dict[str, Readers] = dict(space_readers or {})
        self.named_used: Dict[str, str] = {}  # space -> why Confluence's own answer could not be used
        self.named_ignored: List[str] = []  # named spaces whose permissions Confluence answered whole
        self._spaces: Dict[str, Tuple[Optional[Readers], str]] = {}  # key -> (viewers, why unreadable)
        self._restrictions: Dict[str, Tuple[Optional[Readers], str]] = {}  # page id -> (restriction, why unreadable)

    def page_access(self, listed: Mapping[str, PageVersion]) -> Tuple[Dict[str, PageAccess], Dict[str, str]]:
        """(document id -> its readers, document id -> why it is readable by nobody)."""
        self._restrictions.update({p.page_id: (p.readers, "") for p in listed.values() if p.restrictions_known})
        access: Dict[str, PageAccess] = {}
        nobody: Dict[str, str] = {}
        for doc_id, page in listed.items():
            try:
                access[doc_id] = self._access(page)
            except ConfluenceError as err:
                access[doc_id], nobody[doc_id] = NOBODY, str(err)
        if nobody:
            first = next(iter(nobody.values()))
            logger.warning(
                "%d page(s) readable by nobody until a sync can read their permissions: %s", len(nobody), first
            )
        for key in self.named_ignored:
            logger.warning("space %s: its viewers were read from Confluence; the named viewers are not used", key)
        return access, nobody

    def _access(self, page: PageVersion) -> PageAccess:
        if not page.restrictions_known:
            raise ConfluenceError(
                page.restrictions_problem or f"page {page.page_id}: the listing did not say who may read it"
            )
        space = self._space(page.space)
        chain = [page.readers, *(self._restriction(ancestor, page.page_id) for ancestor in page.ancestor_ids)]
        return PageAccess(audience(space), tuple(audience(r) for r in chain if r is not None))

    def _space(self, key: str) -> Readers:
        if key not in self._spaces:
            try:
                readers = fetch_space_readers(self.client, key)
                self._spaces[key] = (readers, "" if readers else NOT_ADMIN.format(space=key))
            except ConfluenceError as err:
                self._spaces[key] = (None, f"{err}{NAME_THEM.format(space=key)}")
            if key in self.named:
                if self._spaces[key][0] is None:
                    self.named_used[key] = self._spaces[key][1]
                else:
                    self.named_ignored.append(key)
        readers, problem = self._spaces[key]
        if readers is None:
            if key in self.named:
                return self.named[key]
            raise ConfluenceError(problem)
        return readers

    def _restriction(self, page_id: str, child: str) -> Optional[Readers]:
        if page_id not in self._restrictions:
            try:
                self._restrictions[page_id] = (fetch_restriction(self.client, page_id), "")
            except ConfluenceError as err:
                self._restrictions[page_id] = (None, str(err))
        readers, problem = self._restrictions[page_id]
        if problem:
            raise ConfluenceError(f"page {child}: its ancestor's restriction is unreadable: {problem}")
        return readers
