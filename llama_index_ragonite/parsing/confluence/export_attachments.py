"""The attachments inside a Confluence space HTML export (``SPACE/attachments/<page id>/<attachment id>.<ext>``).

Each is read as a folder's attachment is (``parsing.attachments``: the guard, the child process, a Document
per PDF page, sheet or slide), under its container page: the id ``confluence-<page id>/att<attachment id>#page=N``
as the REST sync gives it, the file name as the page lists it (the export stores the file under its
attachment id) in the title, and the container page's title, space and breadcrumb, so its evidences read
"Page: <container> > <file>". A member over the guard's size cap is not extracted; a file given up is
skipped with its reason in the log.
"""

from __future__ import annotations

import logging
import re
import tempfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import Dict, Iterator, List

from llama_index.core.schema import Document

from llama_index_ragonite.errors import PageLoadError
from llama_index_ragonite.parsing.attachments import ATTACHMENT_SUFFIXES
from llama_index_ragonite.parsing.attachments.guard import MAX_FILE_BYTES
from llama_index_ragonite.parsing.attachments.reading import AttachmentReading
from llama_index_ragonite.parsing.confluence.pages import BREADCRUMB_SEPARATOR

logger = logging.getLogger(__name__)

_LINK = re.compile(r"""<a\s[^>]*href=["']([^"']*attachments/\d+/[^"']+)["'][^>]*>(.*?)</a>""", re.I | re.S)
_TAG = re.compile(r"<[^>]+>")


def attachment_members(archive: zipfile.ZipFile) -> List[zipfile.ZipInfo]:
    """The export's attachment files of a format the readers know, under an ``attachments/<page id>/`` folder."""
    found = []
    for info in archive.infolist():
        parts = PurePosixPath(info.filename).parts
        if (
            len(parts) >= 3
            and parts[-3].lower() == "attachments"
            and parts[-2].isdigit()
            and PurePosixPath(info.filename).suffix.lower() in ATTACHMENT_SUFFIXES
        ):
            found.append(info)
    return found


def shown_names(html: str) -> Dict[str, str]:
    """A page's attachment links: the file part of the href (``456.pdf``) -> the name shown (``Policy.pdf``)."""
    return {
        PurePosixPath(href).name: " ".join(_TAG.sub(" ", text).split())
        for href, text in _LINK.findall(html)
        if _TAG.sub(" ", text).strip()
    }


def export_attachments(
    archive_path: Path, archive: zipfile.ZipFile, pages: Dict[str, Document], names: Dict[str, str]
) -> Iterator[Document]:
    """Documents of the export's attachments; ``pages``: the container pages by page id; ``names``: shown names."""
    members = attachment_members(archive)
    if not members:
        return
    with tempfile.TemporaryDirectory(prefix="ragonite-export-") as tmp, AttachmentReading(Path(tmp)) as reading:
        for info in members:
            page_id = PurePosixPath(info.filename).parts[-2]
            page = pages.get(page_id)
            stored = PurePosixPath(info.filename).name
            name = _safe(names.get(stored) or stored, PurePosixPath(stored).suffix)
            if page is None:
                logger.info("%s: %s belongs to no page of the export; skipped", archive_path, info.filename)
                continue
            if info.file_size > MAX_FILE_BYTES:
                logger.warning(
                    "%s: %s is %s bytes, over the attachment cap; skipped", archive_path, name, info.file_size
                )
                continue
            folder = Path(tmp) / page_id
            folder.mkdir(exist_ok=True)
            path = folder / name
            path.write_bytes(archive.read(info))
            try:
                documents = reading.documents(path)
            except PageLoadError as err:
                logger.warning("%s: attachment %s of page %s skipped: %s", archive_path, name, page_id, err)
                continue
            for doc in documents:
                yield _under(doc, page, archive_path, info.filename, PurePosixPath(stored).stem)


def _safe(name: str, suffix: str) -> str:
    """A shown name usable as a file name, with the stored file's suffix (which decides the reader)."""
    name = re.sub(r"[\\/\x00-\x1f]", "_", name).strip(". ") or "attachment"
    return name if name.lower().endswith(suffix.lower()) else f"{name}{suffix}"


def _under(doc: Document, page: Document, archive_path: Path, member: str, attachment_id: str) -> Document:
    """``doc`` as an attachment of ``page``: its id under the page's as the REST sync names it
    (``confluence-<page>/att<id>#page=N``: a store can switch between the export and the API), the page's
    space and breadcrumb."""
    location = doc.id_.partition("#")[2]
    file_part = f"att{attachment_id}" + (f"#{location}" if location else "")
    meta = page.metadata
    crumb = BREADCRUMB_SEPARATOR.join(p for p in (meta.get("breadcrumb", ""), meta.get("title", "")) if p)
    location_number = doc.metadata.get("location")
    url = f"{archive_path.resolve().as_uri()}#{member}"
    doc.metadata.update(
        url=f"{url}&page={location_number}" if doc.metadata.get("location_kind") == "page" else url,
        space=meta.get("space", ""),
        breadcrumb=crumb,
        container_page_id=meta.get("page_id", ""),
    )
    doc.id_ = f"{page.id_}/{file_part}"
    return doc
