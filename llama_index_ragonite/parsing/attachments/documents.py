"""An attachment file -> ``Document``s: one per location (a PDF page, a sheet, a slide), else one for the file.

Ids are the file's path relative to the folder, with ``#page=N`` (``#sheet=N``, ``#slide=N``) for a location,
so a re-read file replaces its parts and a file given up keeps them (``index.ingestion``: a failed id keeps
``id#…``). The url is the file's own (``#page=N`` for a PDF: browsers open it there, a citation lands on its
page); ``base_url`` (a web folder the files are published under) replaces the ``file:`` url with it joined to
the relative path. Every evidence inherits ``attachment`` (the file name), ``location`` and ``location_kind``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List, Optional
from urllib.parse import quote

from llama_index.core.schema import Document

from llama_index_ragonite.parsing.attachments import ATTACHMENT_SUFFIXES
from llama_index_ragonite.parsing.attachments.html_out import Part, page_html
from llama_index_ragonite.parsing.structure import ATTACHMENT, LOCATION, LOCATION_KIND


def attachment_documents(path: Path, root: Path, parts: List[Part], base_url: Optional[str] = None) -> List[Document]:
    """The documents of ``path`` (under ``root``) from its ``parts`` (read by ``isolation.IsolatedReader``)."""
    relative = os.fsencode(path.relative_to(root).as_posix()).decode("utf-8", "backslashreplace")  # as page ids
    kind = ATTACHMENT_SUFFIXES[path.suffix.lower()][0]
    url = f"{base_url.rstrip('/')}/{quote(relative)}" if base_url else path.resolve().as_uri()
    documents = []
    for part in parts:
        located = kind is not None and part.location is not None
        title = f"{path.name} ({part.label})" if located and part.label else path.name
        metadata: Dict[str, Any] = {"title": title, ATTACHMENT: path.name, "url": url}
        if located:
            metadata.update({LOCATION: int(part.location or 0), LOCATION_KIND: str(kind)})
            if kind == "page":
                metadata["url"] = f"{url}#page={part.location}"
        doc_id = f"{relative}#{kind}={part.location}" if located else relative
        documents.append(Document(id_=doc_id, text=page_html(title, part.html), metadata=metadata))
    return documents
