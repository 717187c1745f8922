"""A Confluence space's HTML export (the zip "Export space → HTML" writes), read from disk.

Each page is ``SPACEKEY/Page-Title_12345.html``: the page body in ``#main-content``, the
ancestors in ``#breadcrumbs``, "Space name : Page title" in the heading; ``index.html`` is the
space overview, not a page. Pages become the same ``Document`` shape the REST reader gives
(id ``confluence-<page id>``, title, url, space, breadcrumb), so a store can switch between an
export and the API without indexing a page twice. The body is the rendered HTML, not storage
format: macros are already expanded, which the parser reads as plain HTML.
"""

from __future__ import annotations

import logging
import re
import zipfile
from pathlib import Path, PurePosixPath
from typing import Dict, Iterator, List, Optional, Union

from bs4 import BeautifulSoup
from llama_index.core.schema import Document

from llama_index_ragonite.errors import PageLoadError
from llama_index_ragonite.parsing.charset import decode_bytes
from llama_index_ragonite.parsing.confluence.export_attachments import export_attachments, shown_names
from llama_index_ragonite.parsing.confluence.pages import ID_PREFIX, make_document
from llama_index_ragonite.parsing.html_text import attribute, discard_tree

logger = logging.getLogger(__name__)

__all__ = ["is_space_export", "load_export", "lazy_load_export"]

_PAGE_ID = re.compile(r"_(\d+)\.html?$")
_MODIFIED = re.compile(r"last (?:modified|updated)(?: by .+?)? on (.+)$", re.I | re.S)
_SKIPPED_FOLDERS = {"attachments", "images", "styles"}


def is_space_export(path: Union[str, Path]) -> bool:
    return Path(path).suffix.lower() == ".zip"


def lazy_load_export(
    path: Union[str, Path], base_url: Optional[str] = None, prefix: str = ID_PREFIX, attachments: bool = True
) -> Iterator[Document]:
    """The pages of the export at ``path``, then their attachments (``export_attachments``; ``attachments=False``
    leaves them out); ``base_url`` (the site's) makes each page's url a link to the live page."""
    path = Path(path)
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as err:
        raise PageLoadError(f"{path}: not a readable zip file ({err})") from None
    with archive:
        members = sorted(m for m in archive.namelist() if _is_page_member(m))
        if not members:
            raise PageLoadError(f"{path}: no pages (.html files) in this zip: is it a Confluence space HTML export?")
        pages: Dict[str, Document] = {}
        names: Dict[str, str] = {}
        for member in members:
            html = decode_bytes(archive.read(member), name=f"{path}:{member}")[0]
            doc = _page(html, member, path, base_url, prefix)
            if doc is not None:
                pages[str(doc.metadata.get("page_id"))] = doc
                names.update(shown_names(html))
                yield doc
        if attachments:
            yield from export_attachments(path, archive, pages, names)


def load_export(
    path: Union[str, Path], base_url: Optional[str] = None, prefix: str = ID_PREFIX, attachments: bool = True
) -> List[Document]:
    docs = list(lazy_load_export(path, base_url, prefix, attachments))
    ids = [doc.id_ for doc in docs]
    if len(set(ids)) != len(ids):
        raise PageLoadError(f"{path}: two pages with the same id ({sorted(i for i in ids if ids.count(i) > 1)[0]})")
    return docs


def _is_page_member(member: str) -> bool:
    parts = PurePosixPath(member).parts
    return (
        member.lower().endswith((".html", ".htm"))
        and parts[-1].lower() not in ("index.html", "index.htm")
        and not _SKIPPED_FOLDERS & {p.lower() for p in parts[:-1]}
    )


def _page(html: str, member: str, archive: Path, base_url: Optional[str], prefix: str) -> Optional[Document]:
    soup = BeautifulSoup(html, "html.parser")
    try:
        return _page_of(soup, member, archive, base_url, prefix)
    finally:
        discard_tree(soup)  # the export's pages are many: free each tree now, not at the next cyclic collection


def _page_of(
    soup: BeautifulSoup, member: str, archive: Path, base_url: Optional[str], prefix: str
) -> Optional[Document]:
    main = soup.find(id="main-content")
    if main is None:
        logger.info("%s: %s has no #main-content; not a page, skipped", archive, member)
        return None
    name = PurePosixPath(member).name
    found = _PAGE_ID.search(name)
    page_id = found.group(1) if found else PurePosixPath(member).stem
    heading = soup.find(id="title-text") or soup.find("title")
    space_name, _, title = (heading.get_text(" ", strip=True) if heading else "").rpartition(" : ")
    crumbs = [a for a in soup.select("#breadcrumbs a") if attribute(a, "href").lower() not in ("index.html", "")]
    metadata_div = soup.find(class_="page-metadata")
    modified = _MODIFIED.search(metadata_div.get_text(" ", strip=True)) if metadata_div else None
    if base_url and found:
        url = f"{base_url.rstrip('/')}/pages/viewpage.action?pageId={page_id}"
    else:
        url = f"{archive.resolve().as_uri()}#{member}"
    parts = PurePosixPath(member).parts
    return make_document(
        page_id=page_id,
        title=title or PurePosixPath(member).stem,
        html=main.decode_contents(),
        url=url,
        space=parts[0] if len(parts) > 1 else space_name,
        last_modified=modified.group(1).strip() if modified else "",
        ancestors=[a.get_text(" ", strip=True) for a in crumbs],
        ancestor_ids=[m.group(1) for a in crumbs if (m := _PAGE_ID.search(attribute(a, "href")))],
        prefix=prefix,
    )
