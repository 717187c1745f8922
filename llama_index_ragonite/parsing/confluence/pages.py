"""One Confluence page as a LlamaIndex ``Document``, whichever way it was read (REST API or HTML export).

The document id is ``confluence-<page id>``: a plain string id like the ConfQuestions JSON
pages' (``confluence-038``; those number the dataset, not the wiki, so they cannot be mapped to
page ids), and the same for a page read through the API or from a space export, so switching
between the two replaces pages instead of indexing them twice. Metadata values are flat
(strings and integers): Chroma stores nothing else. The breadcrumb (ancestor titles, root first)
is a metadata field the contextualizer can show (``EvidenceContextualizer(breadcrumb=True)``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from llama_index.core.schema import Document

from llama_index_ragonite.errors import ConfluenceError
from llama_index_ragonite.parsing.confluence.shapes import content_id, get_field
from llama_index_ragonite.redaction import printable

__all__ = [
    "BREADCRUMB_SEPARATOR",
    "ID_PREFIX",
    "MAX_ANCESTORS",
    "document_id",
    "make_document",
    "page_ancestors",
    "page_document",
]

ID_PREFIX = "confluence-"
BREADCRUMB_SEPARATOR = " > "
MAX_ANCESTORS = 200


def document_id(page_id: Any, prefix: str = ID_PREFIX) -> str:
    return f"{prefix}{page_id}"


def make_document(
    page_id: str,
    title: str,
    html: str,
    url: str = "",
    space: str = "",
    version: Optional[int] = None,
    last_modified: str = "",
    labels: Sequence[str] = (),
    ancestors: Sequence[str] = (),
    ancestor_ids: Sequence[str] = (),
    prefix: str = ID_PREFIX,
) -> Document:
    # Names are shown in terminals and pages: no control characters or bidi overrides in them.
    metadata: Dict[str, Any] = {
        "title": printable(title),
        "url": url,
        "space": printable(space),
        "page_id": str(page_id),
    }
    if version is not None:
        metadata["version"] = int(version)
    if last_modified:
        metadata["last_modified"] = printable(last_modified)
    if labels:
        metadata["labels"] = ", ".join(printable(label) for label in labels)
    if ancestors:
        metadata["breadcrumb"] = BREADCRUMB_SEPARATOR.join(printable(a) for a in ancestors)
    if ancestor_ids:
        metadata["ancestor_ids"] = ",".join(str(a) for a in ancestor_ids)
    return Document(id_=document_id(page_id, prefix), text=html, metadata=metadata)


def page_ancestors(page: Dict[str, Any], what: str) -> List[Tuple[str, str]]:
    """(id, title) of each ancestor, root first; a ``ConfluenceError`` for a malformed list or one
    longer than ``MAX_ANCESTORS`` (no wiki nests that deep; a breadcrumb that long is an attack on
    the metadata, which every chunk of the page repeats)."""
    ancestors = get_field(page, "ancestors", list, what, [])
    if len(ancestors) > MAX_ANCESTORS:
        raise ConfluenceError(f"{what}: malformed answer: {len(ancestors):,} ancestors, more than {MAX_ANCESTORS}")
    return [
        (content_id(a, what, f"ancestors[{i}]"), get_field(a, "title", str, what, "", at=f"ancestors[{i}]"))
        for i, a in enumerate(ancestors)
    ]


def page_document(page: Dict[str, Any], base_url: str, prefix: str = ID_PREFIX) -> Document:
    """A REST API content object (expanded with ``body.storage``) as a ``Document`` of its storage-format HTML.

    Every field read is checked (``get_field``): a malformed one is a ``ConfluenceError`` naming it.
    The page link is built on ``base_url`` (the configured site), never on the server's
    ``_links.base``: a server must not make our citations link elsewhere, and a base that our URL
    parser and a browser read differently (``http://evil.example\\@site``) could."""
    page_id = content_id(page, "a page")
    what = f"page {page_id}"
    get_field(page, "_links.base", str, what, "")  # checked, not used
    base = base_url.rstrip("/")
    webui = get_field(page, "_links.webui", str, what, "")
    ancestors = page_ancestors(page, what)
    labels = [
        get_field(label, "name", str, what, "", at=f"metadata.labels.results[{i}]")
        for i, label in enumerate(get_field(page, "metadata.labels.results", list, what, []))
    ]
    return make_document(
        page_id=page_id,
        title=get_field(page, "title", str, what, ""),
        html=get_field(page, "body.storage.value", str, what, ""),
        url=base + webui if webui.startswith("/") else f"{base}/pages/viewpage.action?pageId={page_id}",
        space=get_field(page, "space.key", str, what, ""),
        version=get_field(page, "version.number", int, what),
        last_modified=get_field(page, "history.lastUpdated.when", str, what, "")
        or get_field(page, "version.when", str, what, ""),
        labels=[name for name in labels if name],
        ancestors=[title for _, title in ancestors],
        ancestor_ids=[ancestor_id for ancestor_id, _ in ancestors],
        prefix=prefix,
    )
