"""The one place an evidence's structure fields become text: the context header and the row sentence.

Why one module: the embedding model, BM25 and the LLM read what is rendered here, and readers that need
the structure back (the answer step, the explainers, the web app) read the fields instead of parsing this
text. The header is the paper's TTL/HDR/BEF/AFT: ``Page:`` title, ``In:`` breadcrumb, ``Section:`` heading
path, ``Before:``/``After:`` the nearest lines of the neighbouring evidences (``parsing.structure`` keys).
"""

from __future__ import annotations

import re
from typing import Any, List, Mapping, Sequence, Tuple

from llama_index_ragonite.parsing.structure import AFTER_TEXT, BEFORE_TEXT, HEADINGS, structure_list

PAGE_LABEL, BREADCRUMB_LABEL, SECTION_LABEL = "Page", "In", "Section"
NEIGHBOUR_LABELS = ("Before", "After")  # the context lines that quote a neighbouring evidence


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
    body = ", and ".join(f"{h} is {v}" if h else v for h, v in pairs)
    return f"Row {row_index} in Table {table_index}: {body}"


ROW_POSITION = re.compile(r"^Row \d+ in Table \d+: ?")  # the prefix row_sentence writes


def without_row_position(line: str) -> str:
    """A verbalized row's body: its ``Row i in Table j:`` position dropped (it moves between page versions)."""
    return ROW_POSITION.sub("", line, count=1)
