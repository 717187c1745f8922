"""The cells of a verbalized table row that answer a question: the asked cells plus the row's key cell.

Why: a row is one fact about one thing, but a question asks for one or two of its columns.
Quoting the whole row ("Build is 1607, and Platform is Dell Optiplex 7050, and BIOS is 1.8.2,
and TPM is 2.0, …") buries the answer; "Platform is Dell Optiplex 7050, and TPM is 2.0" is the
answer with what it is about.

A cell is ``header is value`` (``parsing.linearize``). Against the question's match keys:

* an *asked* cell has a header the question names ("TPM", "firmware") and a value that adds
  something the question does not say, or a value that partly matches the question and adds
  to it ("which Dell Latitude model" → ``Platform is Dell Latitude E7490``);
* a *condition* cell has a value the question already holds ("for Dell Optiplex 7040"): the
  one with the most matched words is the row's key cell, else the row's first cell.

No asked cell (e.g. a German question whose words name no English header, or a column the
question names in other words): the whole row, for the reader to find the answer in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, List, Optional, Sequence, Tuple

from llama_index_ragonite.models.extractive.scoring import identifiers, unit_keys
from llama_index_ragonite.models.extractive.units import ROW

CELL_SEPARATOR = ", and "
IS = " is "


@dataclass(frozen=True)
class Cell:
    text: str  # "header is value", as the row wrote it
    header: str
    value: str


def row_cells(row: str) -> List[Cell]:
    """The cells of a verbalized row (its ``Row i in Table j:`` position dropped)."""
    body = row.split(":", 1)[1].strip() if ROW.match(row) else row.strip()
    cells = []
    for text in body.split(CELL_SEPARATOR):
        header, _, value = text.partition(IS)
        cells.append(Cell(text, header.strip(), value.strip()) if value else Cell(text, "", text.strip()))
    return cells


def _matches(text: str, keys: FrozenSet[str], ids: FrozenSet[str]) -> Tuple[int, int]:
    """(question words or identifiers ``text`` holds, words and identifiers it adds)."""
    own = unit_keys(text)
    own_ids = set(identifiers(text))
    hit = len(own & keys) + len(own_ids & ids)
    new = len([w for w in own if w not in keys]) + len(own_ids - ids)
    return hit, new


def answer_cells(row: str, question_keys: FrozenSet[str], question_ids: FrozenSet[str]) -> Optional[List[Cell]]:
    """The cells to quote for the question, in row order (``None``: quote the whole row)."""
    cells = row_cells(row)
    if len(cells) < 2:
        return None
    asked, conditions = [], []
    for i, cell in enumerate(cells):
        header_hit = _matches(cell.header, question_keys, question_ids)[0] if cell.header else 0
        value_hit, value_new = _matches(cell.value, question_keys, question_ids)
        if value_new and (header_hit or value_hit):
            asked.append(i)
        elif value_hit or header_hit:
            conditions.append((-value_hit, i))
    if not asked:
        return None
    key = min(conditions)[1] if conditions else 0
    strong = [i for i in asked if _matches(cells[i].header, question_keys, question_ids)[0]] or asked
    return [cells[i] for i in sorted({key, *strong})]


def quote_cells(cells: Sequence[Cell]) -> str:
    return CELL_SEPARATOR.join(c.text for c in cells)
