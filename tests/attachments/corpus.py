"""Issue 61's extraction judge: attachments written by code, and what a correct reader must recover from them.

``build_corpus(directory)`` writes .docx, .xlsx, .csv, .pptx, .pdf, .md and .txt files (English and German
enterprise-wiki content, invented names and numbers) and returns a ``Corpus`` saying exactly what was written.
It was written before any extraction code, by someone who had not read it, so that it judges the extractor
instead of mirroring it. The conventions a test may rely on:

- Locations are 1-based: a PDF's page, a workbook's sheet (index, with ``Table.sheet`` its name), a deck's slide.
  A .docx, .md, .txt or .csv has no locations (``None``): Word's page breaks are the renderer's choice.
- Reading order: ``FileSpec.texts`` is in reading order; on the two-column PDF page the left column comes
  before the right one (``TextItem.column`` 1 or 2), the heading spanning both columns before either.
- ``heading_path``: the headings enclosing an item, outermost first; a heading's own path ends with itself.
  On a slide the path is the slide's title; in a PDF, the section heading drawn in bold above the item.
- Merged cells: the merged value applies to every row and column it spans, so ``header_rows`` and
  ``body_rows`` repeat it in every covered position. ``merges`` records each span as
  ``[row, column, rowspan, colspan]``, 0-based over ``header_rows + body_rows``; ``to_html`` writes them back
  as ``rowspan``/``colspan``, which is "the same table as HTML" to compare verbalizations against.
- Multi-row headers: ``header_rows`` lists the header rows as written (top first). A column's header is its
  levels top to bottom with blanks and consecutive repeats (a cell merged downwards) dropped, joined by " / "
  (``Table.headers()``): "Preis (EUR)" over "netto" gives "Preis (EUR) / netto".
- Header-to-cell pairs (``Table.pairs()``): for each body row, ``(column header, cell)`` for every non-empty
  cell, in column order.
- A table split across PDF pages is one table: ``location`` is its first page, ``row_pages`` gives each body
  row's page, and ``header_repeated`` says whether the header row was drawn again on the next page (it was;
  the repeat is not a body row).
- Cell text is what a reader should show: whitespace collapsed, numbers and dates as their number format
  displays them ("19%", "01.04.2024", "2268.00"); ``alternatives`` lists other acceptable renderings of such
  cells (the raw value: "0.19", "2024-04-01", "2268"). Text written as text ("1.234,56") has none.
- Spreadsheet formulas were written with their cached values (openpyxl writes none, so ``corpus_sheets``
  patches them into the saved XML): a reader opening the workbook with ``data_only=True`` sees the numbers
  that ``body_rows`` shows.
"""

from __future__ import annotations

import html
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class TextItem:
    """A heading, paragraph, list item or slide title, as written."""

    kind: str  # "heading", "paragraph", "list_item", "title"
    text: str
    heading_path: list[str]
    location: int | None = None
    level: int = 0  # a heading's level (1-3), a list item's nesting level (1 = top)
    ordered: bool = False  # a numbered list item
    language: str = "en"
    column: int | None = None  # 1 or 2 on the two-column PDF page


@dataclass
class Table:
    """A table as a reader should see it (see the module docstring for merged cells and multi-row headers)."""

    name: str
    header_rows: list[list[str]]
    body_rows: list[list[str]]
    location: int | None = None
    sheet: str | None = None
    heading_path: list[str] = field(default_factory=list)
    ruled: bool | None = None  # lines drawn around cells; None where the format has no such choice (csv, md, xlsx)
    merges: list[list[int]] = field(default_factory=list)
    row_pages: list[int] | None = None  # each body row's PDF page
    header_repeated: bool | None = None  # a split PDF table: header drawn again on the later page
    alternatives: dict[str, list[str]] = field(default_factory=dict)
    language: str = "en"

    def headers(self) -> list[str]:
        """One header per column: its levels joined by " / " after dropping blanks and consecutive repeats."""
        width = len(self.body_rows[0]) if self.body_rows else len(self.header_rows[0])
        result = []
        for col in range(width):
            levels: list[str] = []
            for row in self.header_rows:
                text = row[col] if col < len(row) else ""
                if text and (not levels or levels[-1] != text):
                    levels.append(text)
            result.append(" / ".join(levels))
        return result

    def pairs(self) -> list[list[tuple[str, str]]]:
        """For each body row: (column header, cell) for every non-empty cell."""
        headers = self.headers()
        return [[(h, c) for h, c in zip(headers, row) if c] for row in self.body_rows]

    def cells(self) -> list[str]:
        """Every non-empty cell of the table once per grid position (header rows first)."""
        return [c for row in self.header_rows + self.body_rows for c in row if c]

    def to_html(self) -> str:
        """The table as a wiki page would hold it: header rows in <thead> as <th>, merges as rowspan/colspan."""
        grid = self.header_rows + self.body_rows
        spans = {(r, c): (rs, cs) for r, c, rs, cs in self.merges}
        covered = {(r + i, c + j) for (r, c), (rs, cs) in spans.items() for i in range(rs) for j in range(cs) if i or j}
        parts = ["<table>"]
        for r, row in enumerate(grid):
            if r == 0 and self.header_rows:
                parts.append("<thead>")
            if r == len(self.header_rows):
                parts.append("<tbody>")
            tag = "th" if r < len(self.header_rows) else "td"
            cells = []
            for c, text in enumerate(row):
                if (r, c) in covered:
                    continue
                rs, cs = spans.get((r, c), (1, 1))
                attrs = (f' rowspan="{rs}"' if rs > 1 else "") + (f' colspan="{cs}"' if cs > 1 else "")
                cells.append(f"<{tag}{attrs}>{html.escape(text)}</{tag}>")
            parts.append("<tr>" + "".join(cells) + "</tr>")
            if r == len(self.header_rows) - 1:
                parts.append("</thead>")
        parts.append("</tbody></table>" if self.body_rows else "</table>")
        return "".join(parts)


@dataclass
class FileSpec:
    """One written file and everything in it a reader should recover."""

    name: str
    type: str  # "docx", "xlsx", "csv", "pptx", "pdf", "md", "txt"
    language: str  # the main language: "en" or "de" (items carry their own)
    location_kind: str | None  # "page", "sheet", "slide", or None for formats without locations
    locations: int | None  # how many pages, sheets or slides the file has
    texts: list[TextItem] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    encoding: str = "utf-8"
    notes: list[str] = field(default_factory=list)  # format details: delimiter, BOM, how a table was drawn


@dataclass
class Corpus:
    directory: str
    files: list[FileSpec]

    def file(self, name: str) -> FileSpec:
        return next(f for f in self.files if f.name == name)

    def tables(self) -> list[tuple[FileSpec, Table]]:
        return [(f, t) for f in self.files for t in f.tables]

    def to_json(self) -> str:
        """Everything written, each table with its derived ``headers`` and ``pairs`` spelled out too."""
        data = asdict(self)
        for spec, written in zip(self.files, data["files"]):
            for table, out in zip(spec.tables, written["tables"]):
                out["headers"], out["pairs"] = table.headers(), [[list(p) for p in row] for row in table.pairs()]
        return json.dumps(data, ensure_ascii=False, indent=1)

    @classmethod
    def from_json(cls, text: str) -> Corpus:
        data = json.loads(text)
        files = []
        for f in data["files"]:
            f["texts"] = [TextItem(**t) for t in f["texts"]]
            derived = ("headers", "pairs")
            f["tables"] = [Table(**{k: v for k, v in t.items() if k not in derived}) for t in f["tables"]]
            files.append(FileSpec(**f))
        return cls(directory=data["directory"], files=files)


class Outline:
    """Collects text items in order, keeping the heading path that encloses each one."""

    def __init__(self, language: str) -> None:
        self.language = language
        self.path: list[str] = []
        self.items: list[TextItem] = []

    def add(
        self,
        kind: str,
        text: str,
        location: int | None = None,
        level: int = 0,
        ordered: bool = False,
        column: int | None = None,
    ) -> TextItem:
        item = TextItem(kind, text, list(self.path), location, level, ordered, self.language, column)
        self.items.append(item)
        return item

    def heading(self, text: str, level: int, location: int | None = None) -> TextItem:
        self.path = self.path[: level - 1] + [text]
        return self.add("heading", text, location, level=level)

    def paragraph(self, text: str, location: int | None = None, column: int | None = None) -> TextItem:
        return self.add("paragraph", text, location, column=column)

    def list_item(self, text: str, ordered: bool = False, level: int = 1, location: int | None = None) -> TextItem:
        return self.add("list_item", text, location, level=level, ordered=ordered)


def build_corpus(directory: Path) -> Corpus:
    """Write every corpus file into ``directory`` (created if missing) and describe what was written."""
    from .corpus_docx import write_docx_files
    from .corpus_pdf import write_pdf_files
    from .corpus_pptx import write_pptx_files
    from .corpus_sheets import write_sheet_files
    from .corpus_text import write_text_files

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    files: list[FileSpec] = []
    for writer in (write_docx_files, write_sheet_files, write_pptx_files, write_pdf_files, write_text_files):
        files.extend(writer(directory))
    return Corpus(directory=str(directory), files=files)
