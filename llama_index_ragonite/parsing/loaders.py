"""Pages on disk -> LlamaIndex ``Document``s with stable ids.

Two formats: ConfQuestions / crawler JSON (``{"id", "title", "url", "content", ...}``)
and plain ``.html``/``.htm`` files; plus a Confluence space HTML export zip (``parsing.confluence.export``). Document ids are stable (the JSON ``id``, or
the file path relative to the folder), which makes node ids stable too.

What a folder walk reads and skips (docs/index.md, "What is read, and what is skipped"):
symbolic links that lead outside the folder are skipped with a warning (``follow_symlinks=True``
reads them), links inside it are not followed twice, a file that is not a page is skipped with a
warning (``strict=True``: a ``PageLoadError``), a store folder is never read as pages, and a file
name that is not UTF-8 is written with ``\\xNN`` escapes (``display_path``) in ids and messages.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Union

from llama_index.core.schema import Document

from llama_index_ragonite.errors import PageLoadError
from llama_index_ragonite.parsing.attachments.reading import ATTACHMENT_FILES, AttachmentReading
from llama_index_ragonite.parsing.charset import decode_bytes
from llama_index_ragonite.parsing.file_names import display_path
from llama_index_ragonite.text import valid_unicode

logger = logging.getLogger(__name__)

PAGE_SUFFIXES = (".json", ".html", ".htm", *ATTACHMENT_FILES)
_PAGE_METADATA = ("title", "url", "space", "date")
StrPath = Union[str, "os.PathLike[str]"]


def clean_text(text: str) -> str:
    """``text`` with any lone surrogate written as a ``\\udXXX`` escape (ids and metadata from JSON pages)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def read_text(path: Path, content_type: str = "") -> str:
    """Decode in the encoding the file declares (a BOM, ``<meta charset>``, ``content_type``), else UTF-8,
    else the detected one (``parsing.charset``); bytes no candidate decodes become U+FFFD (logged).

    A binary file (an image or archive named ``.html``) is a ``PageLoadError``: decoded, it would
    be indexed as evidence made of control characters. A file that cannot be read is one too.
    """
    try:
        data = path.read_bytes()
    except OSError as err:
        raise PageLoadError(f"{display_path(path)}: cannot be read ({err.strerror or err})") from err
    if not data.startswith((b"\xff\xfe", b"\xfe\xff")) and _looks_binary(data[:4096]):
        raise PageLoadError(f"{display_path(path)}: binary content (NUL or control bytes), not a page")
    return decode_bytes(data, content_type, display_path(path))[0]


def _looks_binary(head: bytes) -> bool:
    controls = sum(b < 32 and b not in b"\t\n\x0c\r" for b in head)
    return b"\x00" in head or controls > len(head) // 10


def load_json_page(path: StrPath) -> Document:
    """A JSON page: an object with a string ``content`` (the page's HTML); anything else is a ``PageLoadError``."""
    path = Path(path)
    try:
        record = json.loads(read_text(path))
    except json.JSONDecodeError as err:
        raise PageLoadError(f"{display_path(path)}: not valid JSON ({err})") from None
    except RecursionError:
        raise PageLoadError(f"{display_path(path)}: JSON nested too deeply to be a page") from None
    if not isinstance(record, dict) or not isinstance(record.get("content"), str):
        raise PageLoadError(
            f"{display_path(path)}: expected a JSON object with a string 'content' field (page HTML); not a page"
        )
    metadata = {k: clean_text(str(record[k])) for k in _PAGE_METADATA if record.get(k) is not None}
    doc_id = clean_text(str(record.get("id") or "")) or display_path(path.stem)
    return Document(id_=doc_id, text=valid_unicode(record["content"]), metadata=metadata)


def load_html_page(path: StrPath, root: Union[StrPath, None] = None) -> Document:
    path = Path(path)
    doc_id = display_path(path.relative_to(root).as_posix() if root else path.name)
    return Document(id_=doc_id, text=read_text(path), metadata={"url": path.resolve().as_uri()})


def load_pages(
    source: StrPath,
    *,
    strict: bool = False,
    follow_symlinks: bool = False,
    exclude: Iterable[StrPath] = (),
    skipped: Optional[Dict[str, str]] = None,
    attachment_base_url: Optional[str] = None,
) -> List[Document]:
    """One page file, every page file under a folder (sorted, recursive), or a Confluence space HTML export (.zip).

    Pages are ``.json``/``.html`` files; attachments (PDF, Word, spreadsheets, slides, CSV, Markdown, text:
    ``parsing.attachments``) are read in a child process with limits, one ``Document`` per page, sheet or
    slide; without the ``[attachments]`` extra they are skipped with one line that names it.
    In a folder, a file that is not a page (JSON without a string ``content``, JSON that does not parse,
    binary content, an attachment its reader gives up) is skipped with a warning naming it and why,
    and put in ``skipped`` (the page id it had, ``skipped_page_ids``, -> why: give it to
    ``EvidenceStore.ingest(failed=…)`` so that a page indexed before keeps its previous version);
    ``strict=True`` makes it a ``PageLoadError``. A single file given as ``source`` must be a page:
    it is always a ``PageLoadError`` otherwise. A file that cannot be read is always one.
    ``follow_symlinks`` and ``exclude`` (folders never read, e.g. the store): see ``page_files``.
    ``attachment_base_url``: the web folder the files are published under (citations link there, joined
    with the file's relative path, instead of to the ``file:`` url).
    """
    source = Path(source)
    if source.is_file() and source.suffix.lower() == ".zip":
        from llama_index_ragonite.parsing.confluence.export import load_export

        return load_export(source)
    if source.is_dir():
        files = page_files(source, follow_symlinks=follow_symlinks, exclude=exclude)
        root = source
    elif source.is_file():
        files, root, strict = [source], source.parent, True
    else:
        raise PageLoadError(f"{display_path(source)}: no such file or folder")
    docs: List[Document] = []
    with AttachmentReading(root, attachment_base_url) as attachments:
        for path in files:
            try:
                if path.suffix.lower() in ATTACHMENT_FILES:
                    docs.extend(attachments.documents(path))
                else:
                    docs.append(load_json_page(path) if path.suffix.lower() == ".json" else load_html_page(path, root))
            except PageLoadError as err:
                if strict or isinstance(err.__cause__, OSError):
                    raise
                logger.warning("%s; skipped (with --strict / strict=True this stops the run)", err)
                if skipped is not None:
                    skipped.update(dict.fromkeys(skipped_page_ids(path, root), str(err)))
        if skipped is not None:
            skipped.update(attachments.without_extra)
    return docs


_JSON_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\\n]|\\.){1,1000}")')


def skipped_page_ids(path: Path, root: Path) -> List[str]:
    """The id a page file that no longer loads had: an HTML page's path; a JSON page's ``id`` where its
    bytes still show one (a file cut short keeps its start), and its file name (the id without one)."""
    if path.suffix.lower() != ".json":
        return [display_path(path.relative_to(root).as_posix())]
    ids = [display_path(path.stem)]
    try:
        found = _JSON_ID.search(path.read_bytes()[:65536])
        if found:
            ids.insert(0, clean_text(str(json.loads(found.group(1).decode("utf-8", "replace")))))
    except (OSError, ValueError):
        pass
    return list(dict.fromkeys(i for i in ids if i))


def page_files(root: StrPath, follow_symlinks: bool = False, exclude: Iterable[StrPath] = ()) -> List[Path]:
    """The page files (``PAGE_SUFFIXES``) under folder ``root``, sorted, each file read once.

    - A symbolic link (to a file or a folder) whose target resolves outside ``root`` is skipped
      with a warning naming the link, unless ``follow_symlinks``; a broken link or a link loop is
      skipped with a warning. A link to a folder inside ``root`` is not descended (that folder is
      read under its own path); a link to a file inside it gives that file once, under its own
      path when the walk reaches it there, else under the link's. Loops never hang: a folder is
      walked once, whichever way it is reached.
    - Folders in ``exclude`` and any folder that holds a store (``manifest.json`` beside
      ``chroma``/``lexical``, or a ``.ingest.lock``) or a Chroma database (``chroma.sqlite3``) are
      skipped, with a warning: their JSON files are not pages.
    """
    root = Path(root)
    real_root = os.path.realpath(root)
    excluded = {os.path.realpath(p) for p in exclude}
    found: dict = {}  # real path -> (went through a link, path)
    visited: Set[str] = set()

    def skipped_folder(path: Path, real: str) -> bool:
        if any(_within(real, folder) for folder in excluded):
            logger.warning("%s: skipped, it is the store folder (a store is never read as pages)", display_path(path))
            return True
        if _holds_store(real):
            logger.warning("%s: skipped, it holds an index store or a Chroma database, not pages", display_path(path))
            return True
        return False

    def walk(folder: Path, real_folder: str, via_link: bool) -> None:
        if real_folder in visited or skipped_folder(folder, real_folder):
            return
        visited.add(real_folder)
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as err:
            logger.warning("%s: skipped, the folder cannot be listed (%s)", display_path(folder), err.strerror)
            return
        for entry in entries:
            path = folder / entry.name
            link = entry.is_symlink()
            real = os.path.realpath(path) if link else os.path.join(real_folder, entry.name)
            if link and not os.path.exists(real):
                logger.warning("%s: skipped, a broken symbolic link or a link loop", display_path(path))
                continue
            inside = _within(real, real_root)
            try:
                is_dir = entry.is_dir()
            except OSError:  # e.g. a link loop that realpath did not see
                continue
            if link and not inside and not follow_symlinks:
                kind = "folder" if is_dir else "file"
                logger.warning(
                    "%s: skipped, a symbolic link to a %s outside the source folder (%s); "
                    "follow_symlinks=True (--follow-symlinks) reads it",
                    display_path(path),
                    kind,
                    display_path(real),
                )
            elif is_dir:
                if not (link and inside):  # a linked folder inside the tree is read under its own path
                    walk(path, real, via_link or link)
            elif entry.is_file() and Path(entry.name).suffix.lower() in PAGE_SUFFIXES:
                if link and _into_store(real, excluded):
                    logger.warning("%s: skipped, a symbolic link into a store folder", display_path(path))
                    continue
                candidate = (via_link or link, path)
                if real not in found or candidate < found[real]:
                    found[real] = candidate

    walk(root, real_root, False)
    return sorted(path for _, path in found.values())


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _into_store(real: str, excluded: Set[str]) -> bool:
    parent = os.path.dirname(real)
    return (
        any(_within(real, folder) for folder in excluded)
        or _holds_store(parent)
        or _holds_store(os.path.dirname(parent))
    )


def _holds_store(folder: str) -> bool:
    """Whether ``folder`` is an index store (``EvidenceStore``'s files) or a Chroma database folder."""
    if os.path.exists(os.path.join(folder, ".ingest.lock")) or os.path.isfile(os.path.join(folder, "chroma.sqlite3")):
        return True
    return os.path.isfile(os.path.join(folder, "manifest.json")) and any(
        os.path.isdir(os.path.join(folder, part)) for part in ("chroma", "lexical")
    )
