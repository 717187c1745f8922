"""One Confluence page as a LlamaIndex ``Document``, whichever way it was read (REST API or HTML export).

The document id is ``confluence-<page id>``: a plain string id like the ConfQuestions JSON
pages' (``confluence-038``; those number the dataset, not the wiki, so they cannot be mapped to
page ids), and the same for a page read through the API or from a space export, so switching
between the two replaces pages instead of indexing them twice. Metadata values are flat
(strings and integers): Chroma stores nothing else. The breadcrumb (ancestor titles, root first)
is a metadata field the contextualizer can show (``EvidenceContextualizer(breadcrumb=True)``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from llama_index.core.schema import Document

__all__ = ["BREADCRUMB_SEPARATOR", "ID_PREFIX", "document_id", "make_document", "page_document"]

ID_PREFIX = "confluence-"
BREADCRUMB_SEPARATOR = " > "


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
    metadata: Dict[str, Any] = {"title": title, "url": url, "space": space, "page_id": str(page_id)}
    if version is not None:
        metadata["version"] = int(version)
    if last_modified:
        metadata["last_modified"] = last_modified
    if labels:
        metadata["labels"] = ", ".join(labels)
    if ancestors:
        metadata["breadcrumb"] = BREADCRUMB_SEPARATOR.join(ancestors)
    if ancestor_ids:
        metadata["ancestor_ids"] = ",".join(str(a) for a in ancestor_ids)
    return Document(id_=document_id(page_id, prefix), text=html, metadata=metadata)


def page_document(page: Dict[str, Any], base_url: str, prefix: str = ID_PREFIX) -> Document:
    """A REST API content object (expanded with ``body.storage``) as a ``Document`` of its storage-format HTML."""
    links = page.get("_links") or {}
    base = (links.get("base") or base_url).rstrip("/")
    ancestors: List[Dict[str, Any]] = page.get("ancestors") or []
    history = page.get("history") or {}
    version = page.get("version") or {}
    labels = ((page.get("metadata") or {}).get("labels") or {}).get("results") or []
    return make_document(
        page_id=str(page["id"]),
        title=page.get("title") or "",
        html=((page.get("body") or {}).get("storage") or {}).get("value") or "",
        url=base + links["webui"] if links.get("webui") else f"{base}/pages/viewpage.action?pageId={page['id']}",
        space=(page.get("space") or {}).get("key", ""),
        version=version.get("number"),
        last_modified=(history.get("lastUpdated") or {}).get("when") or version.get("when") or "",
        labels=[label.get("name", "") for label in labels if label.get("name")],
        ancestors=[a.get("title", "") for a in ancestors],
        ancestor_ids=[str(a.get("id")) for a in ancestors],
        prefix=prefix,
    )
