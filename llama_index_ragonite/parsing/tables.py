"""HTML table -> a rectangular grid with column headers.

``rowspan``/``colspan`` are expanded so every data cell lines up under its
header; stacked header rows are joined per column ("Legacy / Install").
Nested tables stay inside their parent cell's text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from bs4 import Tag

from llama_index_ragonite.parsing.html_text import render

MAX_COLSPAN = 1000  # the HTML standard's own limit
MAX_ROWSPAN = 65534


@dataclass
class TableRow:
    """One data row. ``values`` has one entry per column ("" where empty or covered by a colspan)."""

    index: int  # 1-based among the table's data rows
    values: List[str]
    spans_all_columns: bool = False  # a single cell across the whole row (a section label)


@dataclass
class Table:
    index: int  # 1-based among the page's tables
    headers: List[str]  # one label per column, "" where unknown
    rows: List[TableRow] = field(default_factory=list)
    header_column: bool = False  # first column holds row labels (<th>) and there is no header row
    caption: str = ""

    @property
    def has_headers(self) -> bool:
        return any(self.headers)


@dataclass
class _Cell:
    text: str
    is_header: bool


def _span(tag: Tag, attr: str, limit: int) -> int:
    raw = str(tag.get(attr, "1")).strip()
    digits = "".join(ch for ch in raw if ch.isdigit())
    value = int(digits) if digits else 1
    return min(max(value, 0), limit)


def _direct_rows(table: Tag) -> List[Tag]:
    rows: List[Tag] = []
    for child in table.children:
        if not isinstance(child, Tag):
            continue
        if child.name == "tr":
            rows.append(child)
        elif child.name in ("thead", "tbody", "tfoot"):
            rows.extend(c for c in child.children if isinstance(c, Tag) and c.name == "tr")
    return rows


def parse_table(table: Tag, index: int) -> Optional[Table]:
    """Grid of one ``<table>``; None when it holds no text at all."""
    grid = _grid(_direct_rows(table))
    ncols = len(grid[0]) if grid else 0
    caption_tag = table.find("caption", recursive=False)
    caption = render(caption_tag, inline=True) if caption_tag else ""
    if ncols == 0 or not any(cell and cell.text for line in grid for cell in line):
        return Table(index, [], caption=caption) if caption else None
    n_header, header_column = _header_layout(grid, ncols)
    result = Table(index, _column_headers(grid[:n_header], ncols), header_column=header_column, caption=caption)
    for line in grid[n_header:]:
        row = _data_row(line, ncols, len(result.rows) + 1)
        if row is not None:
            result.rows.append(row)
    return result


def _grid(rows: List[Tag]) -> List[List[Optional[_Cell]]]:
    """The rows' cells on a rectangular grid, ``rowspan``/``colspan`` expanded (a spanning cell repeats)."""
    grid: List[List[Optional[_Cell]]] = [[] for _ in rows]
    for r, tr in enumerate(rows):
        c = 0
        for td in tr.children:
            if not isinstance(td, Tag) or td.name not in ("td", "th"):
                continue
            while c < len(grid[r]) and grid[r][c] is not None:
                c += 1
            cell = _Cell(render(td, inline=True), td.name == "th")
            rowspan = _span(td, "rowspan", MAX_ROWSPAN) or (len(rows) - r)  # rowspan=0: to the end
            colspan = _span(td, "colspan", MAX_COLSPAN) or 1
            for dr in range(min(rowspan, len(rows) - r)):
                line = grid[r + dr]
                if len(line) < c + colspan:
                    line.extend([None] * (c + colspan - len(line)))
                for dc in range(colspan):
                    if line[c + dc] is None:
                        line[c + dc] = cell
            c += colspan
    ncols = max((len(line) for line in grid), default=0)
    for line in grid:
        line.extend([None] * (ncols - len(line)))
    return grid


def _all_header(line: List[Optional[_Cell]]) -> bool:
    present = [cell for cell in line if cell is not None]
    return bool(present) and all(cell.is_header for cell in present)


def _header_layout(grid: List[List[Optional[_Cell]]], ncols: int) -> Tuple[int, bool]:
    """How many leading rows are column headers, and whether the first column labels the rows instead."""
    n_header = 0
    while n_header < len(grid) and _all_header(grid[n_header]):
        n_header += 1
    if n_header == len(grid):  # a table of only <th>: it is all data
        n_header = 0
    header_column = n_header == 0 and ncols > 1 and all(line[0] is not None and line[0].is_header for line in grid)
    if n_header == 0 and not header_column and len(grid) > 1:
        n_header = 1  # no <th> anywhere: the first row names the columns
    return n_header, header_column


def _column_headers(header_rows: List[List[Optional[_Cell]]], ncols: int) -> List[str]:
    """One label per column: its stacked header cells joined with " / ", repeats (spans) once."""
    headers = []
    for c in range(ncols):
        labels: List[str] = []
        for line in header_rows:
            cell = line[c]
            if cell is not None and cell.text and (not labels or labels[-1] != cell.text):
                labels.append(cell.text)
        headers.append(" / ".join(labels))
    return headers


def _data_row(line: List[Optional[_Cell]], ncols: int, index: int) -> Optional[TableRow]:
    """One grid line as a data row (a spanning cell's text once); None when it holds no text."""
    values, seen = [], set()
    for cell in line:
        if cell is None or id(cell) in seen:
            values.append("")  # empty, or the tail of a colspan
            continue
        seen.add(id(cell))
        values.append(cell.text)
    if not any(values):
        return None
    spans_all = ncols > 1 and len(seen) == 1 and all(cell is line[0] for cell in line)
    return TableRow(index, values, spans_all)
