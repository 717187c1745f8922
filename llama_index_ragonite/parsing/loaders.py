"""Pages on disk -> LlamaIndex ``Document``s with stable ids.

Two formats: ConfQuestions / crawler JSON (``{"id", "title", "url", "content", ...}``)
and plain ``.html``/``.htm`` files; plus a Confluence space HTML export zip (``parsing.confluence.export``). Document ids are stable (the JSON ``id``, or
the file path relative to the folder), which makes node ids stable too.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import List, Union

from llama_index.core.schema import Document

from llama_index_ragonite.errors import PageLoadError

logger = logging.getLogger(__name__)

PAGE_SUFFIXES = (".json", ".html", ".htm")
_PAGE_METADATA = ("title", "url", "space", "date")


def read_text(path: Path) -> str:
    """Decode UTF-8 (UTF-16 with its BOM); undecodable bytes become U+FFFD (logged) instead of failing the page.

    A binary file (an image or archive named ``.html``) is a ``PageLoadError``: decoded, it would
    be indexed as evidence made of control characters.
    """
    data = path.read_bytes()
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    if _looks_binary(data[:4096]):
        raise PageLoadError(f"{path}: binary content (NUL or control bytes), not a page")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        logger.warning("%s is not valid UTF-8 (%s); undecodable bytes replaced", path, err.reason)
        return data.decode("utf-8", errors="replace")


def _looks_binary(head: bytes) -> bool:
    controls = sum(b < 32 and b not in b"\t\n\x0c\r" for b in head)
    return b"\x00" in head or controls > len(head) // 10


def load_json_page(path: Union[str, Path]) -> Document:
    path = Path(path)
    try:
        record = json.loads(read_text(path))
    except json.JSONDecodeError as err:
        raise PageLoadError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(record, dict) or not isinstance(record.get("content"), str):
        raise PageLoadError(f"{path}: expected a JSON object with a string 'content' field (page HTML)")
    metadata = {k: str(record[k]) for k in _PAGE_METADATA if record.get(k) is not None}
    return Document(id_=str(record.get("id") or path.stem), text=record["content"], metadata=metadata)


def load_html_page(path: Union[str, Path], root: Union[str, Path, None] = None) -> Document:
    path = Path(path)
    doc_id = path.relative_to(root).as_posix() if root else path.name
    return Document(id_=doc_id, text=read_text(path), metadata={"url": path.resolve().as_uri()})


def load_pages(source: Union[str, Path]) -> List[Document]:
    """One page file, every page file under a folder (sorted, recursive), or a Confluence space HTML export (.zip)."""
    source = Path(source)
    if source.is_file() and source.suffix.lower() == ".zip":
        from llama_index_ragonite.parsing.confluence.export import load_export

        return load_export(source)
    if source.is_dir():
        files = sorted(p for p in source.rglob("*") if p.suffix.lower() in PAGE_SUFFIXES and p.is_file())
        root = source
    elif source.is_file():
        files, root = [source], source.parent
    else:
        raise PageLoadError(f"{source}: no such file or folder")
    docs = []
    for path in files:
        if path.suffix.lower() == ".json":
            docs.append(load_json_page(path))
        else:
            docs.append(load_html_page(path, root))
    return docs
