"""What every attachment reader writes: HTML that our own page parser reads (headings, lists, tables).

Why HTML: a table from a spreadsheet, a slide or a PDF then becomes table and row evidences exactly as
the same table on a wiki page does (the same verbalizations, the same structure fields), and nothing
below the parser needs to know that a file was not a page.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

Span = Tuple[int, int, int, int]  # row, column, rowspan, colspan (0-based over the whole grid)


@dataclass
class Part:
    """One page of an attachment: a PDF page, a sheet, a slide, or the whole file (``location`` None)."""

    html: str
    location: Optional[int] = None  # 1-based page, sheet or slide number
    label: str = ""  # "page 3", "sheet Preise", "slide 4": added to the title


def escape(text: str) -> str:
    return html.escape(text, quote=False)


def table_html(grid: Sequence[Sequence[str]], header_rows: int, spans: Sequence[Span] = ()) -> str:
    """``grid`` (every position filled, merged values repeated) as an HTML table: the first ``header_rows``
    rows as ``<th>``, each span written once with its rowspan/colspan and the positions it covers left out."""
    at: Dict[Tuple[int, int], Tuple[int, int]] = {(r, c): (rs, cs) for r, c, rs, cs in spans}
    covered = {(r + i, c + j) for (r, c), (rs, cs) in at.items() for i in range(rs) for j in range(cs) if i or j}
    rows: List[str] = []
    for r, row in enumerate(grid):
        tag = "th" if r < header_rows else "td"
        cells = []
        for c, text in enumerate(row):
            if (r, c) in covered:
                continue
            rs, cs = at.get((r, c), (1, 1))
            attrs = (f' rowspan="{rs}"' if rs > 1 else "") + (f' colspan="{cs}"' if cs > 1 else "")
            cells.append(f"<{tag}{attrs}>{escape(text)}</{tag}>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    head, body = rows[:header_rows], rows[header_rows:]
    return (
        "<table>"
        + (f"<thead>{''.join(head)}</thead>" if head else "")
        + (f"<tbody>{''.join(body)}</tbody>" if body else "")
        + "</table>"
    )


def page_html(title: str, body: str) -> str:
    """A whole page: ``<title>`` (the parser's page title) and ``body``."""
    return f"<html><head><title>{escape(title)}</title></head><body>{body}</body></html>"
