"""A Confluence sync's page comments (optional): listed per page in scope, re-indexed only when they change,
readable by exactly the readers of their page.

Why a listing per page and run: adding or editing a comment does not change its page's version, so only the
page's comment listing tells (``depth=all``: replies too; bodies come with it, so a changed comment costs no
further request). The sync state records, per comment id, its page, the comment's version, the page's version
(the page's title is in the comment's title) and its document ids: a comment whose (version, page version) is
unchanged, and whose evidences the store holds, is not parsed again. A comment absent from its page's listing
(deleted), on a page that left the scope, or no longer indexed by the options (a resolved one when
``resolved=False``) is removed. Permissions are the page's ``PageAccess`` (whoever may view a page may read its
comments), rewritten at every sync as the page's is. A page whose listing fails keeps its comments as they were.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Set

from llama_index.core.schema import Document

from llama_index_ragonite.errors import ConfluenceError
from llama_index_ragonite.index.access import PageAccess
from llama_index_ragonite.index.page_children import carried, settle, warn_failed
from llama_index_ragonite.parsing.confluence.comments import comment_document, list_comments
from llama_index_ragonite.parsing.confluence.reader import PageVersion

__all__ = ["CommentOptions", "CommentSync", "CommentSyncResult"]


@dataclass(frozen=True)
class CommentOptions:
    """``enabled``: sync page comments at all (off by default: no comment request is made);
    ``resolved``: index inline comments marked resolved too (with ``resolved=True`` on their evidences)."""

    enabled: bool = False
    resolved: bool = True


@dataclass
class CommentSyncResult:
    documents: List[Document] = field(default_factory=list)  # new or changed comments' documents
    access: Dict[str, PageAccess] = field(default_factory=dict)  # every comment document -> its page's readers
    remove: List[str] = field(default_factory=list)  # documents of deleted or no longer indexed comments
    state: Dict[str, Any] = field(default_factory=dict)  # comment id -> page, version, page version, documents
    indexed: List[str] = field(default_factory=list)  # comment ids (re)built this run
    skipped: int = 0  # resolved comments left out (``resolved=False``)
    failed: Dict[str, str] = field(default_factory=dict)  # pages whose comments could not be listed: why (kept)


class CommentSync:
    """One sync run's comments (module doc); ``run`` once."""

    def __init__(self, client: Any, options: CommentOptions) -> None:
        self.client, self.options = client, options

    def run(
        self,
        listed: Mapping[str, PageVersion],
        previous: Mapping[str, Any],
        access: Mapping[str, PageAccess],
        indexed: Set[str],
        held_elsewhere: Set[str],
        keep_unlisted_pages: bool = False,
    ) -> CommentSyncResult:
        """``listed``: the pages in scope (document id -> version); ``previous``: this scope's comment state;
        ``held_elsewhere``: comment documents another scope records (never removed here). With the option off,
        nothing is requested: comments indexed before stay while their page is in scope, under its current
        permissions (a page restricted since must not leave its comments open)."""
        result = CommentSyncResult()
        if keep_unlisted_pages:  # the sync keeps pages that left the scope: their comments too
            result.state.update(carried(previous, lambda page: page not in listed))
        if self.options.enabled:
            for page_doc, page in listed.items():
                self._page(page_doc, page, previous, indexed, result)
        else:
            result.state.update(carried(previous, lambda page: page in listed))
        result.remove, result.access = settle(previous, result.state, access, held_elsewhere)
        warn_failed(result.failed, "pages' comments")
        return result

    def _page(
        self,
        page_doc: str,
        page: PageVersion,
        previous: Mapping[str, Any],
        indexed: Set[str],
        result: CommentSyncResult,
    ) -> None:
        try:
            comments = list_comments(self.client, page.page_id)
        except ConfluenceError as err:  # the page's comments stay as they were
            result.failed[page_doc] = f"its comments could not be listed: {err}"
            result.state.update(carried(previous, lambda page: page == page_doc))
            return
        for comment in comments:
            if comment.resolved and not self.options.resolved:
                result.skipped += 1
                continue
            key, old = comment.comment_id, previous.get(comment.comment_id)
            entry = {"page": page_doc, "version": comment.version, "page_version": page.version}
            if old is not None and {k: old.get(k) for k in entry} == entry and set(old.get("documents", ())) <= indexed:
                result.state[key] = dict(old)
                continue
            document = comment_document(comment, page_doc, page.title, self.client.url)
            result.documents.append(document)
            result.indexed.append(key)
            result.state[key] = {**entry, "documents": [document.id_]}
