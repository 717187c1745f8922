"""The one place an evidence's structure fields become text: the context header and the row sentence.

Why one module: the embedding model, BM25 and the LLM read what is rendered here, and readers that need
the structure back (the answer step, the explainers, the web app) read the fields instead of parsing this
text. The header is the paper's TTL/HDR/BEF/AFT: ``Page:`` title, ``In:`` breadcrumb, ``Section:`` heading
path, ``Before:``/``After:`` the nearest lines of the neighbouring evidences (``parsing.structure`` keys).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from llama_index_ragonite.parsing.structure import (
    AFTER_TEXT,
    BEFORE_TEXT,
    CELLS,
    HEADERS,
    HEADINGS,
    structure_list,
)

PAGE_LABEL, BREADCRUMB_LABEL, SECTION_LABEL = "Page", "In", "Section"
NEIGHBOUR_LABELS = ("Before", "After")  # the context lines that quote a neighbouring evidence
CELL_JOINER = ", and "  # between a row sentence's cells


def section(metadata: Mapping[str, Any]) -> str:
    """The heading path as the header shows it (``Install > Legacy``): from the ``headings`` list, else
    from ``heading_path`` (nodes of other parsers, or of stores built before the list existed)."""
    if HEADINGS in metadata:
        return " > ".join(structure_list(metadata, HEADINGS))
    return str(metadata.get("heading_path") or "")


def context_lines(
    metadata: Mapping[str, Any],
    title: bool = True,
    breadcrumb: bool = False,
    heading: bool = True,
    before: bool = True,
    after: bool = True,
) -> List[str]:
    """The context header's lines, in order, for the switches that are on (a line only where its field is set)."""
    lines = []
    if title and metadata.get("title"):
        lines.append(f"{PAGE_LABEL}: {metadata['title']}")
    if breadcrumb and metadata.get("breadcrumb"):
        lines.append(f"{BREADCRUMB_LABEL}: {metadata['breadcrumb']}")
    heading_path = section(metadata) if heading else ""
    if heading_path:
        lines.append(f"{SECTION_LABEL}: {heading_path}")
    for switch, key, side in ((before, BEFORE_TEXT, 0), (after, AFTER_TEXT, 1)):
        if switch and metadata.get(key):
            lines.append(neighbour_line(side, metadata[key]))
    return lines


def neighbour_line(side: int, text: str) -> str:
    """The ``Before:`` (``side`` 0) or ``After:`` (1) line that quotes a neighbour's nearest line ``text``."""
    return f"{NEIGHBOUR_LABELS[side]}: {text}"


def quoted_neighbour(metadata: Mapping[str, Any], line: str) -> str:
    """The neighbour's text a context ``line`` quotes ("" when it quotes none), from the node's fields.

    Nodes of stores built before the fields existed (no ``before_text``/``after_text``) have it read
    back from the line's label instead: the one place that parses it.
    """
    if BEFORE_TEXT in metadata or AFTER_TEXT in metadata:
        for side, key in enumerate((BEFORE_TEXT, AFTER_TEXT)):
            text = str(metadata.get(key) or "")
            if text and line == neighbour_line(side, text):
                return text
        return ""
    label, sep, snippet = line.partition(": ")
    return snippet if sep and label in NEIGHBOUR_LABELS else ""


def is_after_line(line: str) -> bool:
    """``line`` is an ``After:`` line as ``context_lines`` writes it."""
    return line.startswith(NEIGHBOUR_LABELS[1] + ":")


def row_sentence(row_index: int, table_index: int, pairs: Sequence[Tuple[str, str]]) -> str:
    """``Row 2 in Table 1: Member is Alice, and Task is Similarity function`` ((header, cell) pairs;
    a cell without a header stands alone)."""
    body = CELL_JOINER.join(f"{h} is {v}" if h else v for h, v in pairs)
    return f"Row {row_index} in Table {table_index}: {body}"


ROW_POSITION = re.compile(r"^Row \d+ in Table \d+: ?")  # the prefix row_sentence writes


def without_row_position(line: str) -> str:
    """A verbalized row's body: its ``Row i in Table j:`` position dropped (it moves between page versions)."""
    return ROW_POSITION.sub("", line, count=1)


def is_row_sentence(text: str) -> bool:
    """``text`` opens as ``row_sentence`` writes a row (``Row i in Table j:``)."""
    return ROW_POSITION.match(text) is not None


def row_pairs(text: str) -> List[Tuple[str, str]]:
    """The (header, cell) pairs of a verbalized row, read back from its sentence (header "" for a cell that
    stands alone): for rows with no fields of their own (a table's lines, nodes of older stores)."""
    body = text.split(":", 1)[1].strip() if is_row_sentence(text) else text.strip()
    pairs = []
    for cell in body.split(CELL_JOINER):
        header, _, value = cell.partition(" is ")
        pairs.append((header.strip(), value.strip()) if value else ("", cell.strip()))
    return pairs


def field_row_pairs(metadata: Mapping[str, Any], text: str) -> Optional[List[Tuple[str, str]]]:
    """A row node's (header, cell) pairs from its ``headers``/``cells`` fields, when they are what its
    sentence ``text`` renders (a row spanning every column or a header column renders otherwise: None)."""
    headers, cells = structure_list(metadata, HEADERS), structure_list(metadata, CELLS)
    if not cells or "row_index" not in metadata or "table_index" not in metadata:
        return None
    pairs = [(h, c) for h, c in zip([*headers, *[""] * len(cells)], cells) if c]
    rendered = row_sentence(metadata["row_index"], metadata["table_index"], pairs)
    return pairs if rendered == text.strip() else None


@dataclass(frozen=True)
class Header:
    """What a node's context header shows: the page title, section and the Before/After neighbour text."""

    title: str = ""
    section: str = ""
    before: str = ""
    after: str = ""


def shown_header(metadata: Mapping[str, Any], lines: Sequence[str]) -> Optional[Header]:
    """The parts of the context header ``lines`` (a view's lines above the evidence, and the After line
    placed after it) shows, each read from the node's fields: a line shows a part when it is what the field
    renders (``context_lines``); a counterfactual's withheld line shows none. Nodes of older stores (no
    fields) have a labelled line read back from its label instead. ``None``: a line that is no part of the
    header (a metadata key of your own, a breadcrumb): the caller reads the whole view as evidence."""
    fields = {
        f"{PAGE_LABEL}: {metadata.get('title')}": ("title", str(metadata.get("title") or "")),
        f"{SECTION_LABEL}: {section(metadata)}": ("section", section(metadata)),
    }
    for side, key in enumerate((BEFORE_TEXT, AFTER_TEXT)):
        if metadata.get(key):
            fields[neighbour_line(side, str(metadata[key]))] = (("before", "after")[side], str(metadata[key]))
    labels = {PAGE_LABEL: "title", SECTION_LABEL: "section", **dict(zip(NEIGHBOUR_LABELS, ("before", "after")))}
    parts: dict = {}
    for line in lines:
        if line in fields:
            name, value = fields[line]
        else:
            label, sep, value = line.partition(":")
            if not sep or label not in labels:
                return None
            name = labels[label]
        parts[name] = "\n".join(filter(None, [parts.get(name, ""), value.strip()]))
    return Header(**parts)


_NAMED_CELL = re.compile(r", and (?=[^,]*? is )")  # a cell boundary: the next cell names its header


def row_line_cells(line: str) -> Optional[List[Tuple[str, str]]]:
    """The (header, value) cells of a verbalized row line of a text (a table's, or a row node's of an older
    store), each ``header is value``; ``None`` when ``line`` is no row sentence or a cell names no header."""
    position = ROW_POSITION.match(line.strip())
    if position is None or not position.group(0).endswith(" "):
        return None
    parts = [part.partition(" is ") for part in _NAMED_CELL.split(line.strip()[position.end() :])]
    if any(not sep for _, sep, _ in parts):
        return None
    return [(header.strip(), value.strip()) for header, _, value in parts]
