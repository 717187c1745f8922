"""Table linearizers: the five of the paper's ablation, as pure functions.

Every linearizer writes one line per table row, so a neighbouring evidence can
quote "the nearest row" by taking one line. Row evidences are self-contained:
the non-verbalized formats repeat the header line before the row.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Callable, Dict, List, Tuple

from llama_index_ragonite.parsing.rendering import ROW_POSITION, row_sentence, without_row_position

if TYPE_CHECKING:  # annotations only: the tables module loads the HTML parsers (``ragonite --help`` does not)
    from llama_index_ragonite.parsing.tables import Table, TableRow


def _pairs(table: Table, row: TableRow) -> List[Tuple[str, str]]:
    """(header, value) pairs left to right; empty cells skipped, header "" when unknown."""
    if row.spans_all_columns:
        return [("", row.values[0])]
    if table.header_column and not table.has_headers:
        rest = [v for v in row.values[1:] if v]
        key = row.values[0]
        return [(key, ", ".join(rest))] if rest and key else [("", v) for v in row.values if v]
    return [(table.headers[c], v) for c, v in enumerate(row.values) if v]


def verbalize_row(table: Table, row: TableRow) -> str:
    """``Row 2 in Table 1: Member is Alice, and Task is Similarity function``."""
    return row_sentence(row.index, table.index, _pairs(table, row))


__all__ = ["LINEARIZERS", "ROW_POSITION", "get_linearizer", "verbalize_row", "verbalize_table", "without_row_position"]


def _piped(cells: List[str]) -> str:
    return " | ".join(cells)


def _markdown(cells: List[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _html(cells: List[str], tag: str) -> str:
    return "<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in cells) + "</tr>"


def _text(cells: List[str]) -> str:
    return " ".join(c for c in cells if c)


def _header_lines(table: Table, style: str) -> List[str]:
    if not table.has_headers:
        return []
    headers = table.headers
    if style == "piped":
        return [_piped(headers)]
    if style == "markdown":
        return [_markdown(headers), _markdown(["---"] * len(headers))]
    if style == "html":
        return [_html(headers, "th")]
    return [_text(headers)]


def _row_line(row: TableRow, style: str) -> str:
    if style == "piped":
        return _piped(row.values)
    if style == "markdown":
        return _markdown(row.values)
    if style == "html":
        return _html(row.values, "td")
    return _text(row.values)


def _grid_row(style: str) -> Callable[[Table, TableRow], str]:
    def linearize(table: Table, row: TableRow) -> str:
        return _wrap(table, style, _header_lines(table, style) + [_row_line(row, style)])

    return linearize


def _grid_table(style: str) -> Callable[[Table], str]:
    def linearize(table: Table) -> str:
        lines = _header_lines(table, style) + [_row_line(r, style) for r in table.rows]
        return _wrap(table, style, lines)

    return linearize


def _wrap(table: Table, style: str, lines: List[str]) -> str:
    if style == "html":
        lines = ["<table>"] + lines + ["</table>"]
    if table.caption:
        lines = [table.caption] + lines
    return "\n".join(lines)


def verbalize_table(table: Table) -> str:
    lines = [verbalize_row(table, row) for row in table.rows]
    if not lines and table.has_headers:  # a header-only table still says what it holds
        lines = [f"Table {table.index}: " + ", ".join(h for h in table.headers if h)]
    return _wrap(table, "verbalized", lines)


# name -> (row linearizer, table linearizer)
LINEARIZERS: Dict[str, Tuple[Callable[[Table, TableRow], str], Callable[[Table], str]]] = {
    "verbalized": (verbalize_row, verbalize_table),
    **{style: (_grid_row(style), _grid_table(style)) for style in ("piped", "markdown", "html", "text")},
}


def get_linearizer(name: str) -> Tuple[Callable[[Table, TableRow], str], Callable[[Table], str]]:
    try:
        return LINEARIZERS[name]
    except KeyError:
        raise ValueError(f"Unknown table linearizer {name!r}; choose one of {sorted(LINEARIZERS)}") from None
