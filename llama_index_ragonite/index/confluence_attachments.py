"""A Confluence sync's attachments: listed per page in scope, downloaded only when new or of a new version,
read in one guarded child per run, and readable by exactly the readers of their page.

Why under the page's permissions: Confluence lets whoever may view a page download its attachments and no
one else, so each attachment document gets its page's ``PageAccess`` in the access map, rewritten at every
sync as the page's is (an attachment with no entry would be readable by everyone). The sync state records,
per attachment id, its page, version and document ids: an unchanged attachment costs its page's listing
request, no download. An attachment absent from its page's listing (deleted), on a page that left the scope,
or no longer indexed by the options (media type, size cap) is removed; one that cannot be downloaded or read
keeps its previous evidences and is reported, as a page does.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Set

from llama_index.core.schema import Document

from llama_index_ragonite.errors import ConfluenceError
from llama_index_ragonite.index.access import PageAccess
from llama_index_ragonite.index.page_children import carried, settle, warn_failed
from llama_index_ragonite.parsing.attachments import AttachmentError, available
from llama_index_ragonite.parsing.confluence.attachments import (
    DEFAULT_MEDIA_TYPES,
    MAX_ATTACHMENT_BYTES,
    AttachmentVersion,
    attachment_documents,
    download_attachment,
    list_attachments,
)
from llama_index_ragonite.parsing.confluence.reader import PageVersion

__all__ = ["AttachmentOptions", "AttachmentSync", "AttachmentSyncResult"]


@dataclass(frozen=True)
class AttachmentOptions:
    """``enabled``: sync attachments at all; ``media_types``: media type -> reader suffix of those indexed;
    ``max_bytes``: larger ones are skipped (by the listing's size, and again by the bytes received)."""

    enabled: bool = True
    media_types: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_MEDIA_TYPES))
    max_bytes: int = MAX_ATTACHMENT_BYTES


@dataclass
class AttachmentSyncResult:
    documents: List[Document] = field(default_factory=list)  # new or changed attachments' documents
    access: Dict[str, PageAccess] = field(default_factory=dict)  # every attachment document -> its page's readers
    remove: List[str] = field(default_factory=list)  # documents of deleted or no longer indexed attachments
    state: Dict[str, Any] = field(default_factory=dict)  # attachment id -> page, version, title, documents
    fetched: List[str] = field(default_factory=list)  # attachment ids downloaded
    skipped: Dict[str, str] = field(default_factory=dict)  # not indexed by the options: why
    failed: Dict[str, str] = field(default_factory=dict)  # could not be listed, downloaded or read: why (kept)


class AttachmentSync:
    """One sync run's attachments (module doc); ``run`` once."""

    def __init__(self, client: Any, options: AttachmentOptions) -> None:
        self.client, self.options = client, options
        self._reader: Optional[Any] = None

    def run(
        self,
        listed: Mapping[str, PageVersion],
        previous: Mapping[str, Any],
        access: Mapping[str, PageAccess],
        indexed: Set[str],
        held_elsewhere: Set[str],
        keep_unlisted_pages: bool = False,
    ) -> AttachmentSyncResult:
        """``listed``: the pages in scope (document id -> version); ``previous``: this scope's attachment state;
        ``held_elsewhere``: attachment documents another scope records (never removed here)."""
        result = AttachmentSyncResult()
        if keep_unlisted_pages:  # the sync keeps pages that left the scope: their attachments too
            result.state.update(carried(previous, lambda page: page not in listed))
        try:
            with tempfile.TemporaryDirectory(prefix="ragonite-attachments-") as folder:
                for page_doc, page in listed.items():
                    self._page(page_doc, page, previous, indexed, Path(folder), result)
        finally:
            if self._reader is not None:
                self._reader.close()
        result.remove, result.access = settle(previous, result.state, access, held_elsewhere)
        warn_failed(result.failed, "attachment(s)")
        return result

    def _page(
        self,
        page_doc: str,
        page: PageVersion,
        previous: Mapping[str, Any],
        indexed: Set[str],
        folder: Path,
        result: AttachmentSyncResult,
    ) -> None:
        try:
            current = list_attachments(self.client, page.page_id)
        except ConfluenceError as err:  # the page's attachments stay as they were
            result.failed[page_doc] = f"its attachments could not be listed: {err}"
            result.state.update(carried(previous, lambda page: page == page_doc))
            return
        for attachment in current:
            self._attachment(
                page_doc, page, attachment, previous.get(attachment.attachment_id), indexed, folder, result
            )

    def _attachment(
        self,
        page_doc: str,
        page: PageVersion,
        attachment: AttachmentVersion,
        old: Optional[Mapping[str, Any]],
        indexed: Set[str],
        folder: Path,
        result: AttachmentSyncResult,
    ) -> None:
        key, options = attachment.attachment_id, self.options
        label = f"{page_doc}/{key} ({attachment.title})"
        suffix = attachment.suffix(dict(options.media_types))
        if suffix is None:
            result.skipped[label] = f"media type {attachment.media_type or 'unknown'!r} is not indexed"
            return
        if attachment.size is not None and attachment.size > options.max_bytes:
            result.skipped[label] = f"{attachment.size:,} bytes, over the attachment size cap of {options.max_bytes:,}"
            return
        unchanged = old is not None and old.get("page") == page_doc and old.get("version") == attachment.version
        if unchanged and old is not None and set(old.get("documents", ())) <= indexed:
            result.state[key] = dict(old)
            return
        try:
            missing = available(suffix)
            if missing:
                raise AttachmentError(missing)
            path = folder / f"{key}{suffix}"
            path.write_bytes(download_attachment(self.client, attachment, options.max_bytes))
            result.fetched.append(key)
            try:
                parts = self._isolated().read(path)
            finally:
                path.unlink()
        except (ConfluenceError, AttachmentError) as err:
            result.failed[label] = str(err)
            if old is not None:  # its previous evidences stay (and its recorded version: retried next run)
                result.state[key] = dict(old)
            return
        documents = attachment_documents(attachment, suffix, parts, page_doc, page.title)
        result.documents.extend(documents)
        result.state[key] = {
            "page": page_doc,
            "version": attachment.version,
            "title": attachment.title,
            "documents": [doc.id_ for doc in documents],
        }

    def _isolated(self) -> Any:
        from llama_index_ragonite.parsing.attachments.isolation import IsolatedReader

        if self._reader is None:
            self._reader = IsolatedReader()
        return self._reader
