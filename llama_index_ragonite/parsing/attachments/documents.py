"""An attachment file -> ``Document``s: one per location (a PDF page, a sheet, a slide), else one for the file.

Ids are the file's path relative to the folder, with ``#page=N`` (``#sheet=N``, ``#slide=N``) for a location,
so a re-read file replaces its parts and a file given up keeps them (``index.ingestion``: a failed id keeps
``id#…``). The url is the file's own (``#page=N`` for a PDF: browsers open it there, a citation lands on its
page); ``base_url`` (a web folder the files are published under) replaces the ``file:`` url with it joined to
the relative path. Every evidence inherits ``attachment`` (the file name), ``location`` and ``location_kind``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional
from urllib.parse import quote

from llama_index.core.schema import Document

from llama_index_ragonite.parsing.attachments import ATTACHMENT_SUFFIXES
from llama_index_ragonite.parsing.attachments.html_out import Part, page_html
from llama_index_ragonite.parsing.file_names import display_path
from llama_index_ragonite.parsing.structure import ATTACHMENT, LOCATION, LOCATION_KIND


def attachment_documents(path: Path, root: Path, parts: List[Part], base_url: Optional[str] = None) -> List[Document]:
    """The documents of ``path`` (under ``root``) from its ``parts`` (read by ``isolation.IsolatedReader``)."""
    relative = display_path(path.relative_to(root).as_posix())  # as page ids
    url = f"{base_url.rstrip('/')}/{quote(relative)}" if base_url else path.resolve().as_uri()
    return part_documents(parts, path.suffix, relative, path.name, url)


def part_documents(
    parts: List[Part], suffix: str, base_id: str, name: str, url: str, extra: Optional[Dict[str, Any]] = None
) -> List[Document]:
    """One document per located part (id ``base_id#page=N``, title ``name (page N)``, a PDF page's url with
    ``#page=N``), else one for the file (``base_id``, ``name``); ``extra``: more metadata for each."""
    kind = ATTACHMENT_SUFFIXES[suffix.lower()][0]
    documents = []
    for part in parts:
        located = kind is not None and part.location is not None
        title = f"{name} ({part.label})" if located and part.label else name
        metadata: Dict[str, Any] = {"title": title, ATTACHMENT: name, "url": url, **(extra or {})}
        doc_id = base_id
        if located:
            metadata.update({LOCATION: int(part.location or 0), LOCATION_KIND: str(kind)})
            doc_id = f"{base_id}#{kind}={part.location}"
            if kind == "page":
                metadata["url"] = f"{url}#page={part.location}"
        documents.append(Document(id_=doc_id, text=page_html(title, part.html), metadata=metadata))
    return documents
