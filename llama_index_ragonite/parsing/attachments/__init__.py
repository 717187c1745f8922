"""Attachments as pages: PDF, Word, spreadsheets, slides, CSV, Markdown and plain text -> ``Document``s of HTML.

Each reader (``pdf``, ``office``, ``sheets``, ``text_files``) writes HTML that our own page parser reads, so
an attachment's tables become table and row evidences as a wiki page's do. A file with locations (a PDF's
pages, a workbook's sheets, a deck's slides) is one ``Document`` per location: its id ``path#page=3``
(``#sheet=2``, ``#slide=4``), its title the file name and the location, its url the file's (a PDF's with
``#page=N``, which browsers open at that page), and the fields ``attachment`` (the file name),
``location`` and ``location_kind`` on every evidence. Files are checked before any reader opens them
(``guard``: the type the bytes show, zip caps, macros) and read in a child process with limits
(``isolation``), so a parser that hangs or balloons is killed and the rest of the run goes on.

The readers' libraries are the ``[attachments]`` extra; without it ``available()`` names what is missing.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from llama_index_ragonite.parsing.attachments.errors import AttachmentError
from llama_index_ragonite.parsing.attachments.html_out import Part

__all__ = ["ATTACHMENT_SUFFIXES", "AttachmentError", "available", "read_parts"]

# suffix -> (kind of location, the module needed)
ATTACHMENT_SUFFIXES: Dict[str, Tuple[Optional[str], str]] = {
    ".pdf": ("page", "pdfplumber"),
    ".docx": (None, "mammoth"),
    ".xlsx": ("sheet", "openpyxl"),
    ".pptx": ("slide", "pptx"),
    ".csv": (None, "csv"),
    ".md": (None, "markdown_it"),
    ".markdown": (None, "markdown_it"),
    ".txt": (None, "codecs"),
}


def available(suffix: str) -> Optional[str]:
    """None when the reader of ``suffix`` can run, else the line that says what to install."""
    module = ATTACHMENT_SUFFIXES[suffix.lower()][1]
    if importlib.util.find_spec(module) is None:
        return f"{suffix} files need the [attachments] extra: pip install 'llama-index-ragonite[attachments]'"
    return None


def read_parts(path: Path) -> List[Part]:
    """The parts of one attachment, read in this process (``isolation.read_isolated`` is the guarded way)."""
    readers = _readers()
    return readers[path.suffix.lower()](path)


def _readers() -> Dict[str, Callable[[Path], List[Part]]]:
    from llama_index_ragonite.parsing.attachments import office, pdf, sheets, text_files

    return {
        ".pdf": pdf.read_pdf,
        ".docx": office.read_docx,
        ".xlsx": sheets.read_xlsx,
        ".pptx": office.read_pptx,
        ".csv": sheets.read_csv,
        ".md": text_files.read_markdown,
        ".markdown": text_files.read_markdown,
        ".txt": text_files.read_text_file,
    }
