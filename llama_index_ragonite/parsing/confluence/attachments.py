"""A Confluence page's attachments: listed (``child/attachment``), downloaded (same origin) and made ``Document``s.

Why here and not in ``client.py``: the client knows requests, this module knows what an attachment is. A
listing result is ``{"id": "att123", "title": file name, "version": {"number"}, "extensions": {"mediaType",
"fileSize"}, "_links": {"download": relative to the base URL}}``; every field is read checked (``shapes``).
Listings count as ``attachments`` requests, downloads as ``download`` (``client.requests``); both go through
the client: the configured origin only, its retries, deadlines and ``max_response_bytes``. Document ids are ``confluence-<page id>/att<id>`` (``#page=N``, ``#sheet=N``,
``#slide=N`` for a location): stable, under the page, so a re-read attachment replaces its parts and a
failed one keeps them (``index.ingestion``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import httpx
from llama_index.core.schema import Document

from llama_index_ragonite.errors import ConfluenceError
from llama_index_ragonite.parsing.attachments import ATTACHMENT_SUFFIXES
from llama_index_ragonite.parsing.attachments.documents import part_documents
from llama_index_ragonite.parsing.attachments.html_out import Part
from llama_index_ragonite.parsing.confluence.shapes import checked_page_id, expect, get_field
from llama_index_ragonite.redaction import printable

__all__ = [
    "DEFAULT_MEDIA_TYPES",
    "MAX_ATTACHMENT_BYTES",
    "AttachmentVersion",
    "attachment_document_id",
    "attachment_documents",
    "download_attachment",
    "list_attachments",
]

MAX_ATTACHMENT_BYTES = 50 * 1000 * 1000  # an attachment larger than this is skipped (reported), never downloaded
_OFFICE = "application/vnd.openxmlformats-officedocument."
# media type -> the suffix its reader takes (a file name's suffix wins when it is one of the same reader's)
DEFAULT_MEDIA_TYPES: Dict[str, str] = {
    "application/pdf": ".pdf",
    _OFFICE + "wordprocessingml.document": ".docx",
    _OFFICE + "spreadsheetml.sheet": ".xlsx",
    _OFFICE + "presentationml.presentation": ".pptx",
    "text/csv": ".csv",
    "text/markdown": ".md",
    "text/plain": ".txt",
}
_ATTACHMENT_ID = re.compile(r"att[0-9]{1,30}")


def attachment_id(item: Any, what: str, name: str = "") -> str:
    """An attachment's ``id`` (``att123``; it goes into document ids and state keys): checked, else an error."""
    value = expect(item, dict, name or "the answer", what).get("id")
    if isinstance(value, str) and _ATTACHMENT_ID.fullmatch(value):
        return value
    raise ConfluenceError(f"{what}: malformed answer: {name or 'the answer'}.id is not an attachment id (att…)")


@dataclass(frozen=True)
class AttachmentVersion:
    """What a listing says about one attachment: enough to tell whether it changed, and to fetch it."""

    attachment_id: str
    page_id: str
    title: str
    version: int
    media_type: str
    size: Optional[int]  # bytes, as the listing announces them (None: not said)
    download: str  # absolute URL on the configured site

    def suffix(self, media_types: Dict[str, str]) -> Optional[str]:
        """The reader's suffix for this attachment: None when its media type is not among ``media_types``."""
        wanted = media_types.get(self.media_type.split(";")[0].strip().lower())
        if wanted is None:
            return None
        own = "." + self.title.rsplit(".", 1)[-1].lower() if "." in self.title else ""
        same_reader = own in ATTACHMENT_SUFFIXES and ATTACHMENT_SUFFIXES[own][1] == ATTACHMENT_SUFFIXES[wanted][1]
        return own if same_reader else wanted


def list_attachments(client: Any, page_id: str) -> List[AttachmentVersion]:
    """The current attachments of page ``page_id`` (``expand=version``, paginated like every listing)."""
    page_id = checked_page_id(page_id)  # it goes into the path
    what = f"attachments of page {page_id}"
    found = []
    path, params = f"content/{page_id}/child/attachment", {"expand": "version"}
    listing = client.paginate(path, params, what, kind="attachments", id_of=attachment_id)
    for i, item in enumerate(listing):
        at = f"results[{i}]"
        att = attachment_id(item, what, at)
        link = get_field(item, "_links.download", str, what, "", at=at)
        if not link:
            raise ConfluenceError(f"{what}: malformed answer: {at}._links.download is missing")
        size = get_field(item, "extensions.fileSize", int, what, None, at=at)
        found.append(
            AttachmentVersion(
                attachment_id=att,
                page_id=page_id,
                title=printable(get_field(item, "title", str, what, "", at=at)) or att,
                version=get_field(item, "version.number", int, what, 0, at=at),
                media_type=get_field(item, "extensions.mediaType", str, what, "", at=at),
                size=size,
                download=_download_url(client, link, what),
            )
        )
    return found


def _download_url(client: Any, link: str, what: str) -> str:
    """``_links.download`` (relative to the base URL, as Confluence writes it) on the configured site; an
    absolute link must name the configured origin (the client checks it again before any request)."""
    try:
        target = httpx.URL(link)
    except httpx.InvalidURL:
        raise ConfluenceError(f"{what}: _links.download is not a URL") from None
    if target.scheme or target.host:
        client.site.check(link, what, "an attachment's download link points to")
        return link
    return f"{client.url}/{link.lstrip('/')}"


def download_attachment(client: Any, attachment: AttachmentVersion, max_bytes: int) -> bytes:
    """The attachment's bytes; ``ConfluenceError`` when it cannot be had or is larger than ``max_bytes``."""
    what = f"attachment {attachment.attachment_id} ({attachment.title}) of page {attachment.page_id}"
    body = client.get(attachment.download, None, what, kind="download")
    if len(body) > max_bytes:
        raise ConfluenceError(f"{what}: {len(body):,} bytes, over the attachment size cap of {max_bytes:,} bytes")
    return body


def attachment_document_id(page_doc_id: str, attachment_id: str) -> str:
    return f"{page_doc_id}/{attachment_id}"


def attachment_documents(
    attachment: AttachmentVersion, suffix: str, parts: List[Part], page_doc_id: str, page_title: str
) -> List[Document]:
    """The documents of one attachment read into ``parts``: one per page/sheet/slide, else one for the file;
    each names its container page (``page_id``, ``page_title``) and links to the download (``#page=N``)."""
    extra = {
        "page_id": attachment.page_id,
        "page_title": printable(page_title),
        "attachment_id": attachment.attachment_id,
        "attachment_version": attachment.version,
    }
    base_id = attachment_document_id(page_doc_id, attachment.attachment_id)
    return part_documents(parts, suffix, base_id, attachment.title, attachment.download, extra)
