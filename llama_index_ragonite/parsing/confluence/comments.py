"""A Confluence page's comments (footer and inline, replies included): listed and made ``Document``s.

Why here and not in ``client.py``: the client knows requests, this module knows what a comment is. The listing is
``content/{id}/child/comment`` with ``depth=all`` (replies too) and ``expand=`` ``COMMENT_EXPAND``: each result is
``{"id": digits, "body": {"storage": {"value"}}, "version": {"number", "when", "by"}, "history": {"createdBy":
{"displayName"}, "createdDate"}, "extensions": {"location": "footer"|"inline", "inlineProperties":
{"originalSelection"}, "resolution": {"status": "open"|"resolved"|"reopened"|"dangling"}}}``; every field is read
checked (``shapes``), a malformed one is a ``ConfluenceError`` naming it. Listings count as ``comments`` requests.

A comment is one ``Document`` (id ``confluence-<page id>/comment<id>``: stable under its page, so an edited comment
replaces its evidences) whose title reads ``<page title>: comment by <author>, <date>``: the context header then
names the page and the comment's author and date like a page's title does, without a header line of its own. Its
``evidence_kind`` (``parsing.structure.EVIDENCE_KIND``) makes the parser type its passages and lists ``comment``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List

from llama_index.core.schema import Document

from llama_index_ragonite.errors import ConfluenceError
from llama_index_ragonite.parsing.confluence.shapes import checked_page_id, content_id, get_field
from llama_index_ragonite.parsing.structure import (
    AUTHOR,
    COMMENT,
    COMMENT_ID,
    COMMENT_LOCATION,
    CREATED,
    EVIDENCE_KIND,
    RESOLVED,
)
from llama_index_ragonite.redaction import printable

__all__ = ["COMMENT_EXPAND", "CommentVersion", "comment_document", "comment_document_id", "list_comments"]

COMMENT_EXPAND = "body.storage,version,history,extensions.inlineProperties,extensions.resolution"
LOCATIONS = ("footer", "inline")
_MAX_SELECTION = 300  # characters of an inline comment's highlighted text kept


@dataclass(frozen=True)
class CommentVersion:
    """One comment as the listing gives it: enough to tell whether it changed, and its text."""

    comment_id: str
    page_id: str
    version: int
    author: str
    created: str  # when it was written (history.createdDate, else version.when)
    modified: str  # when it was last edited (version.when)
    location: str  # "footer" or "inline"
    resolved: bool  # an inline comment marked resolved
    selection: str  # an inline comment's highlighted page text ("" for a footer comment)
    html: str  # its storage-format body


def list_comments(client: Any, page_id: str) -> List[CommentVersion]:
    """The current comments of page ``page_id`` (replies included), paginated like every listing."""
    page_id = checked_page_id(page_id)  # it goes into the path
    what = f"comments of page {page_id}"
    params = {"expand": COMMENT_EXPAND, "depth": "all"}
    found = []
    for i, item in enumerate(client.paginate(f"content/{page_id}/child/comment", params, what, kind="comments")):
        at = f"results[{i}]"
        location = get_field(item, "extensions.location", str, what, "footer", at=at)
        if location not in LOCATIONS:
            raise ConfluenceError(f"{what}: malformed answer: {at}.extensions.location is {location[:20]!r}")
        modified = get_field(item, "version.when", str, what, "", at=at)
        author = get_field(item, "history.createdBy.displayName", str, what, "", at=at)
        found.append(
            CommentVersion(
                comment_id=content_id(item, what, at),
                page_id=page_id,
                version=get_field(item, "version.number", int, what, 0, at=at),
                author=printable(author or get_field(item, "version.by.displayName", str, what, "", at=at)),
                created=printable(get_field(item, "history.createdDate", str, what, "", at=at) or modified),
                modified=printable(modified),
                location=location,
                resolved=get_field(item, "extensions.resolution.status", str, what, "", at=at) == "resolved",
                selection=printable(
                    get_field(item, "extensions.inlineProperties.originalSelection", str, what, "", at=at)
                )[:_MAX_SELECTION],
                html=get_field(item, "body.storage.value", str, what, "", at=at),
            )
        )
    return found


def comment_document_id(page_doc_id: str, comment_id: str) -> str:
    return f"{page_doc_id}/comment{comment_id}"


def comment_document(comment: CommentVersion, page_doc_id: str, page_title: str, base_url: str) -> Document:
    """The comment as a document under its page: title ``<page title>: comment by <author>, <date>``, its
    author, dates, location (footer/inline), resolution and the page it is on as metadata; its url is
    Confluence's link to the comment on its page, on the configured site ``base_url``."""
    author, day = comment.author or "unknown author", comment.created[:10]
    title = f"{printable(page_title)}: comment by {author}" + (f", {day}" if day else "")
    metadata: Dict[str, Any] = {
        "title": title,
        "url": f"{base_url.rstrip('/')}/pages/viewpage.action?pageId={comment.page_id}"
        f"&focusedCommentId={comment.comment_id}#comment-{comment.comment_id}",
        "page_id": comment.page_id,
        "page_title": printable(page_title),
        EVIDENCE_KIND: COMMENT,
        COMMENT_ID: comment.comment_id,
        AUTHOR: author,
        CREATED: comment.created,
        COMMENT_LOCATION: comment.location,
        RESOLVED: comment.resolved,
        "version": comment.version,
    }
    if comment.modified:
        metadata["last_modified"] = comment.modified  # the node's ``modified`` (source "confluence")
    if comment.selection:
        metadata["comment_selection"] = comment.selection
    return Document(id_=comment_document_id(page_doc_id, comment.comment_id), text=comment.html, metadata=metadata)
