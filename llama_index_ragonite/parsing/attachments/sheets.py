"""Spreadsheets (.xlsx) and .csv files -> one table per sheet, its header row(s) as headers.

A cell reads as its number format shows it ("19%", "01.04.2024", "2,268.00"), formulas as the value
Excel cached (openpyxl's ``data_only``; a workbook saved by a program that caches none reads them empty,
said in the log). A merged range is one cell with its spans, so its value covers every position, as on a
wiki page. The header is the first row with a value, and the rows below it while a header cell spans
columns (a group header over "net" and "gross"). A sheet over ``MAX_ROWS`` rows or ``MAX_CELLS`` cells is
given up with that reason (a 1,048,576-row export would be a million row evidences, not an answer).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from pathlib import Path
from typing import Any, List, Sequence, Tuple

from llama_index_ragonite.parsing.attachments.errors import AttachmentError
from llama_index_ragonite.parsing.attachments.html_out import Part, Span, escape, table_html
from llama_index_ragonite.parsing.charset import decode_bytes

MAX_ROWS = 20_000  # per sheet
MAX_CELLS = 400_000  # per sheet
_DECIMALS = re.compile(r"0[.,](0+)")


def shown(value: Any, number_format: str = "General") -> str:
    """A cell's value as its number format shows it (the common formats: dates, percentages, decimals)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (dt.datetime, dt.date)):
        return _date(value, number_format)
    if isinstance(value, (int, float)):
        fmt = number_format or "General"
        places = _DECIMALS.search(fmt)
        digits = len(places.group(1)) if places else 0
        if "%" in fmt:
            return f"{value * 100:.{digits}f}%"
        if places or "#,##0" in fmt:
            return f"{value:,.{digits}f}" if "," in fmt.split(".")[0] else f"{value:.{digits}f}"
        return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
    return " ".join(str(value).split())


def _date(value: Any, number_format: str) -> str:
    fmt = (number_format or "").lower()
    day = value.date() if isinstance(value, dt.datetime) and not (value.hour or value.minute) else value
    if fmt.startswith("dd.mm.yy") or fmt.startswith("d.m.yy"):
        return day.strftime("%d.%m.%Y")
    if fmt.startswith("mm/dd/yy") or fmt.startswith("m/d/yy"):
        return day.strftime("%m/%d/%Y")
    if fmt.startswith("dd/mm/yy"):
        return day.strftime("%d/%m/%Y")
    return day.isoformat() if isinstance(day, dt.date) and not isinstance(day, dt.datetime) else str(day)


def header_rows(grid: Sequence[Sequence[str]], spans: Sequence[Span]) -> int:
    """How many leading rows are the header: the first, and each next one while the one above spans columns."""
    wide = {r for r, _, _, cs in spans if cs > 1}
    count = 1 if grid else 0
    while count < len(grid) - 1 and (count - 1) in wide:
        count += 1
    return count


def _trimmed(grid: List[List[str]], spans: List[Span]) -> Tuple[List[List[str]], List[Span]]:
    """Empty leading rows and trailing empty columns dropped (spans shifted with them)."""
    top = next((i for i, row in enumerate(grid) if any(row)), len(grid))
    width = max((c + 1 for row in grid for c, v in enumerate(row) if v), default=0)
    grid = [row[:width] + [""] * (width - len(row[:width])) for row in grid[top:]]
    while grid and not any(grid[-1]):
        grid.pop()
    return grid, [(r - top, c, rs, cs) for r, c, rs, cs in spans if r >= top and c < width]


def sheet_html(grid: List[List[str]], spans: List[Span]) -> str:
    grid, spans = _trimmed(grid, spans)
    return table_html(grid, header_rows(grid, spans), spans) if grid else ""


def read_xlsx(path: Path) -> List[Part]:
    """One part per sheet (its 1-based index the location, its name the label)."""
    from openpyxl import load_workbook

    sizes = load_workbook(path, read_only=True, data_only=True)  # dimensions without loading the cells
    try:
        for ws in sizes.worksheets:
            rows, cols = ws.max_row or 0, ws.max_column or 0
            if rows > MAX_ROWS or rows * cols > MAX_CELLS:
                raise AttachmentError(
                    f"sheet {ws.title!r} has {rows:,} rows and {cols:,} columns, over the cap of "
                    f"{MAX_ROWS:,} rows or {MAX_CELLS:,} cells a sheet"
                )
    finally:
        sizes.close()
    book = load_workbook(path, data_only=True)
    parts = []
    for number, ws in enumerate(book.worksheets, 1):
        grid = [[shown(c.value, c.number_format) for c in row] for row in ws.iter_rows()]
        spans: List[Span] = []
        for merged in ws.merged_cells.ranges:
            r0, c0 = merged.min_row - 1, merged.min_col - 1
            spans.append((r0, c0, merged.max_row - r0, merged.max_col - c0))
            for r in range(r0, merged.max_row):
                for c in range(c0, merged.max_col):
                    if r < len(grid) and c < len(grid[r]):
                        grid[r][c] = grid[r0][c0]
        body = sheet_html(grid, spans)
        parts.append(Part(f"<h1>{escape(ws.title)}</h1>{body}", number, f"sheet {ws.title}"))
    return parts


def read_csv(path: Path) -> List[Part]:
    """The file as one table: its delimiter sniffed (",", ";", tab, "|"), its charset as ``parsing.charset`` reads."""
    text, _ = decode_bytes(path.read_bytes(), name=str(path))
    text = text.lstrip("\ufeff")
    try:
        dialect: Any = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    rows = [[" ".join(cell.split()) for cell in row] for row in csv.reader(io.StringIO(text), dialect)]
    if len(rows) > MAX_ROWS:
        raise AttachmentError(f"{len(rows):,} rows, over the cap of {MAX_ROWS:,} rows a table")
    width = max((len(r) for r in rows), default=0)
    grid = [r + [""] * (width - len(r)) for r in rows]
    return [Part(sheet_html(grid, []))]
