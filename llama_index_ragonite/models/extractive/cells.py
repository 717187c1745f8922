"""The cells of a verbalized table row that answer a question: the asked cells plus the row's key cell.

Why: a row is one fact about one thing, but a question asks for one or two of its columns.
Quoting the whole row ("Build is 1607, and Platform is Dell Optiplex 7050, and BIOS is 1.8.2,
and TPM is 2.0, …") buries the answer; "Platform is Dell Optiplex 7050, and TPM is 2.0" is the
answer with what it is about.

A cell is ``header is value`` (``parsing.rendering.row_sentence``): a row node's cells come from its fields
(``Unit.cells``), a table's row lines are read back by ``rendering.row_pairs``. Against the question's match keys
(``scoring.quote_keys``: stems and cognates, so "Welcher Prozessor" names ``Processor(s)``):

* an *asked* cell has a header the question names ("TPM", "firmware") and a value that adds
  something the question does not say, or a value that partly matches the question and adds
  to it ("which Dell Latitude model" → ``Platform is Dell Latitude E7490``);
* a *condition* cell has a value the question already holds ("for Dell Optiplex 7040"): the
  one with the most matched words and a short value (``KEY_WORDS``) is the row's key cell, else
  the row's first cell with a short value: a key names the row, a long description does not;
* a header that names only words of a condition's header is that condition's sibling, not
  asked ("failed the UEFI OTA upgrade" asks for ``UEFI boot / OTA upgrade is Fail``, not for
  ``Legacy boot / OTA upgrade is Pass``);
* of columns told apart by an identifier, the question asks for those it names ("the OXT-243
  Repro test" asks for ``OXT-243 Repro is Yes``, not ``OXT-239 Repro`` and ``OXT-241 Repro``);
* in a completed follow-up only the user's own words ask and choose the key cell; the words
  carried over from earlier turns found the row, the key cell names it.

No asked cell (e.g. a German question whose words name no English header, or a column the
question names in other words): the whole row, for the reader to find the answer in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, List, Optional, Sequence, Tuple

from llama_index_ragonite.models.extractive.scoring import identifiers, quote_keys, quote_terms
from llama_index_ragonite.parsing.rendering import CELL_JOINER, row_pairs

CELL_SEPARATOR = CELL_JOINER
KEY_WORDS = 6  # a key cell names its row ("Lenovo T14"); a longer value describes it
Pairs = Optional[Sequence[Tuple[str, str]]]  # a row's (header, cell) pairs when known from its fields


@dataclass(frozen=True)
class Cell:
    text: str  # "header is value", as the row wrote it
    header: str
    value: str


def row_cells(row: str, pairs: Pairs = None) -> List[Cell]:
    """The cells of a row: ``pairs`` (its fields), else read from its verbalized sentence ``row``."""
    return [Cell(f"{h} is {v}" if h else v, h, v) for h, v in (row_pairs(row) if pairs is None else pairs)]


def _matches(text: str, keys: FrozenSet[str], ids: FrozenSet[str]) -> Tuple[int, int]:
    """(question words or identifiers ``text`` holds, words and identifiers it adds)."""
    own = quote_keys(text)
    own_ids = set(identifiers(text))
    hit = len(own & keys) + len(own_ids & ids)
    new = len([w for w in own if w not in keys]) + len(own_ids - ids)
    return hit, new


def answer_cells(
    row: str,
    question_keys: FrozenSet[str],
    question_ids: FrozenSet[str],
    asked: Optional[Tuple[FrozenSet[str], ...]] = None,
    pairs: Pairs = None,
) -> Optional[List[Cell]]:
    """The cells to quote for the question, in row order (``None``: quote the whole row).

    ``asked``: (keys, identifiers) of the user's own words (``scoring.asked_part``; default: all
    the question's): only they ask for a column or choose the key cell (see the module's rules).
    """
    cells = row_cells(row, pairs)
    if len(cells) < 2:
        return None
    asked_keys, asked_ids = (question_keys, question_ids) if asked is None else asked
    named_keys = asked_keys | asked_ids
    headers = [quote_terms(c.header) for c in cells]
    values = [_matches(c.value, question_keys, question_ids) for c in cells]
    asked_values = values if asked is None else [_matches(c.value, asked_keys, asked_ids) for c in cells]
    stated = [header if hit else frozenset() for header, (hit, _) in zip(headers, values)]
    chosen, conditions = [], []
    for i in range(len(cells)):
        named = headers[i] & named_keys
        own = named.difference(*(w for j, w in enumerate(stated) if j != i))
        value_hit, value_new = values[i]
        own_value_hit = asked_values[i][0]
        adds = value_new or (own and not value_hit)  # "Decision is D": too short a value for a match key
        if adds and (own or own_value_hit):
            chosen.append(i)
        elif own_value_hit:
            conditions.append((-own_value_hit, i))
    if not chosen:
        return None
    strong = [i for i in chosen if headers[i] & named_keys] or chosen
    strong = _named_column(_most_specific(strong, [h & named_keys for h in headers]), cells, asked_ids)
    names = [(hit, i) for hit, i in conditions if len(cells[i].value.split()) <= KEY_WORDS]
    short = (i for i, c in enumerate(cells) if len(c.value.split()) <= KEY_WORDS)
    key = min(names)[1] if names else next(short, None)
    return [cells[i] for i in sorted({i for i in (key, *strong) if i is not None})]


def _most_specific(chosen: List[int], named: Sequence[FrozenSet[str]]) -> List[int]:
    """Of headers the question names, those not named by a subset of another's words: "host boots" asks
    for ``Host Boot``, not ``OS Boot`` too; "UEFI OTA upgrade" for ``UEFI / OTA upgrade``, not ``Legacy / OTA upgrade``."""
    return [i for i in chosen if not any(named[i] < named[j] for j in chosen)]


def _named_column(chosen: List[int], cells: Sequence[Cell], asked_ids: FrozenSet[str]) -> List[int]:
    """Of columns told apart by an identifier ("OXT-239 Repro", "OXT-243 Repro"), the one the question names."""
    ids = {i: set(identifiers(cells[i].header)) for i in chosen}
    if not any(ids[i] & asked_ids for i in chosen):
        return chosen
    return [i for i in chosen if not ids[i] or ids[i] & asked_ids]


def value_matches(row: str, question_keys: FrozenSet[str], question_ids: FrozenSet[str], pairs: Pairs = None) -> int:
    """How many of the question's words and identifiers the row's cell values hold: the conditions it meets."""
    values = (quote_terms(c.value) for c in row_cells(row, pairs))
    return len(frozenset().union(*values) & (question_keys | question_ids))


def quote_cells(cells: Sequence[Cell]) -> str:
    return CELL_SEPARATOR.join(c.text for c in cells)
