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
    for switch, key, label in ((before, BEFORE_TEXT, NEIGHBOUR_LABELS[0]), (after, AFTER_TEXT, NEIGHBOUR_LABELS[1])):
        if switch and metadata.get(key):
            lines.append(f"{label}: {metadata[key]}")
    return lines


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
