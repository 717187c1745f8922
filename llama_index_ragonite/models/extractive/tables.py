"""Table question answering: the row the question names, the column it asks for, quoted as the page's cells.

Why: a row is one fact about one thing and a question asks for one or two of its columns ("Which laptop do
sales people get?": the ``Model`` cell of the ``Sales`` row). Scoring rows as sentences misses the cell, and
verbalized rows read back with their English glue ("Stockwerk is 3. Stock, and …") on a German page.

Over the retrieved rows (a row node's ``cells`` from its fields, or a table's row lines), by two signals:

* exact cell matches: a cell whose every word (by stem) and number (in any format the page writes it:
  ``1.450 €``, ``1,450``, ``49,00``) the question holds names its row; the question's words found in a
  header name that column;
* the store's embedding model: the question (and the user's own words of a completed follow-up) against
  each header and each cell value, so a header in another language ("third floor" / ``Stockwerk``) fits too.

The row is the one the question names best (ties: retrieval rank); the asked cells are those whose header
fits the question best among the cells that did not name the row. The answer is ``key: cells``: the row's
key (its first cell) or, when the key is what was asked, the cells that named the row ("MUC-PR-03: 3. Stock").
A bare number or letter keeps its header ("Härte / °dH 8,6"); nothing else is added, in no language.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

from llama_index_ragonite.models.extractive.answer_types import asked_type, holds_type
from llama_index_ragonite.models.extractive.scoring import (
    answer_words,
    cosine,
    identifiers,
    own_words,
    quote_keys,
    quote_word_keys,
    similarity,
)
from llama_index_ragonite.models.extractive.units import Unit
from llama_index_ragonite.parsing.rendering import row_line_cells, row_pairs

__all__ = ["CellAnswer", "answers_cell", "cell_terms", "row_cells_of", "table_answer"]

Vectors = Callable[[Sequence[str]], List[List[float]]]  # passage embeddings by text (cached)
KEY_WORDS = 6  # a cell that names a row is short ("Lenovo T14"); a longer value describes it
HEADER_WEIGHT = 1.0  # a question word found in a header
OWN_WEIGHT = 0.25  # a completed follow-up's carried words weigh this much of its own words in a header's fit
FIT_FLOOR = 0.5  # a column fits when the question holds a header word or means it (heldout_wiki_c half 1)
_NUMBER = re.compile(r"\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?!\d)|\d+(?:[.,]\d+)*")


@dataclass(frozen=True)
class CellAnswer:
    """The row and its asked cells, with the scores that chose them (the trace shows them)."""

    unit: int  # index of the row's unit
    key: Tuple[Tuple[str, str], ...]  # the cells that say which row (before the colon)
    asked: Tuple[Tuple[str, str], ...]  # the asked cells
    named: float  # how well the question names the row: exact cell matches (share of a cell's terms)
    fit: float  # the asked column's fit: header words in the question and cosine with the header
    margin: float  # its lead over the row's next-best column

    def text(self) -> str:
        """``key: cells`` in the page's own words (no glue of any language)."""
        asked = ", ".join(_shown(h, v) for h, v in self.asked)
        key = ", ".join(v for _, v in self.key)
        return f"{key}: {asked}" if key and asked else key or asked


def _shown(header: str, value: str) -> str:
    """A cell as quoted: its value; a bare number or letter (no word of its own: "D", "8,6") with its header."""
    return f"{header} {value}" if header and not re.search(r"[^\W\d]{2}", value) else value


def number_forms(text: str) -> FrozenSet[str]:
    """The numbers of ``text`` in one form: ``1.450``, ``1,450``, ``1 450`` and ``1450`` alike; ``49,00`` as ``49``."""
    out = set()
    for raw in _NUMBER.findall(text):
        token = re.sub(r"\s", "", raw)
        if re.fullmatch(r"\d{1,3}(?:[.,]\d{3})+", token):
            out.add(re.sub(r"[.,]", "", token))  # thousands separators
            if token.count(".") + token.count(",") > 1:
                continue  # or, with one separator, a decimal with three places: both forms below
        if "." in token and "," in token:  # "1.750,00", "1,750.00": the last separator is the decimal one
            cut = max(token.rfind("."), token.rfind(","))
            token = re.sub(r"[.,]", "", token[:cut]) + "." + token[cut + 1 :]
        whole, _, frac = token.replace(",", ".").partition(".")
        if "." in frac:  # a date ("01.03.2026"): as written
            out.add(token)
            continue
        frac = frac.rstrip("0")
        out.add(f"{int(whole)}.{frac}" if frac else str(int(whole)))
    return frozenset(out)


def cell_terms(text: str) -> FrozenSet[str]:
    """What a cell or question says, for exact matches: word stems, identifiers, numbers in one form."""
    ids = {i for i in identifiers(text) if not _NUMBER.fullmatch(i)}
    return quote_keys(text) | frozenset(ids) | frozenset("#" + n for n in number_forms(text))


def row_cells_of(unit: Unit) -> Optional[List[Tuple[str, str]]]:
    """A row unit's (header, value) cells: its fields, else its verbalized line read back."""
    if unit.cells is not None:
        return [(h, v) for h, v in unit.cells if v]
    if not unit.row:
        return None
    return row_line_cells(unit.text) or row_pairs(unit.text)


def _groups(text: str) -> List[FrozenSet[str]]:
    """Each word (its stems and cognate key), identifier and number (``#`` and its one form) of ``text``."""
    groups = [quote_word_keys(w) for w in dict.fromkeys(answer_words(text))]
    known = frozenset().union(*groups)
    ids = [frozenset({i}) for i in dict.fromkeys(identifiers(text)) if i not in known and not _NUMBER.fullmatch(i)]
    return [*groups, *ids, *(frozenset({"#" + n}) for n in sorted(number_forms(text)))]


def _share(text: str, question: FrozenSet[str], numbers: bool = True) -> float:
    """The share of a cell's words the question holds; ``numbers``: 0 when it misses a number of the cell (a
    number tells rows apart: "Q3 16" is not "Q3 10"), else its numbers are left out."""
    groups = _groups(text)
    if numbers and any(_is_number(g) and not g & question for g in groups):
        return 0.0
    groups = groups if numbers else [g for g in groups if not _is_number(g)]
    return sum(1 for g in groups if g & question) / len(groups) if groups else 0.0


def _words(text: str, question: FrozenSet[str]) -> int:
    """How many words of ``text`` (a header) the question holds."""
    return sum(1 for g in _groups(text) if g & question)


def _is_number(group: FrozenSet[str]) -> bool:
    return len(group) == 1 and next(iter(group)).startswith("#")


def table_answer(
    question: str,
    units: Sequence[Unit],
    vectors: Optional[Vectors] = None,
    query: Optional[Sequence[float]] = None,
    own_query: Optional[Sequence[float]] = None,
    floor: float = 0.75,
) -> Optional[CellAnswer]:
    """The best row and asked cells among ``units`` (module doc), or None when no row unit is there.

    ``vectors``/``query``/``own_query``: the store's embedding model (passages by text, the question and
    its own words as queries); without them exact matches alone decide."""
    rows = [(i, cells) for i, u in enumerate(units) if u.row and (cells := row_cells_of(u)) and len(cells) >= 2]
    if not rows:
        return None
    q_terms, own = cell_terms(question), own_words(question)
    own_terms = cell_terms(own)
    kind = asked_type(own) or asked_type(question)
    whole: Dict[str, float] = {}
    mine: Dict[str, float] = {}
    if vectors is not None and query is not None:
        texts = list(dict.fromkeys(t for _, cells in rows for h, v in cells for t in (h, v) if t))
        for text, vector in zip(texts, vectors(texts)):
            whole[text] = similarity(cosine(query, vector), floor)
            mine[text] = similarity(cosine(own_query, vector), floor) if own_query is not None else whole[text]
    n = max(units[i].rank for i, _ in rows) + 1
    best: Optional[Tuple[float, CellAnswer]] = None
    for i, cells in rows:
        shares = [_share(v, q_terms) if len(v.split()) <= KEY_WORDS else 0.0 for _, v in cells]
        naming = [j for j, s in enumerate(shares) if s >= 0.5]
        named = sum(shares[j] for j in naming)
        fits = []
        for j, (h, v) in enumerate(cells):
            if j in naming:
                continue
            mine_words = _words(h, own_terms)
            words = mine_words + OWN_WEIGHT * (_words(h, q_terms) - mine_words)
            fit = HEADER_WEIGHT * min(words, 2) + max(mine.get(h, 0.0), OWN_WEIGHT * whole.get(h, 0.0))
            fit += 0.5 * _share(v, q_terms, numbers=False) + (0.5 if kind and holds_type(v, kind) else 0.0)
            fits.append((fit, j))
        if not fits:
            continue
        fits.sort(reverse=True)
        fit, j = fits[0]
        margin = fit - (fits[1][0] if len(fits) > 1 else 0.0)
        asked = [j] + [k for f, k in fits[1:] if f >= fit - 0.05 and f > 0]  # ties: each asked cell
        meant = max((whole.get(v, 0.0) for _, v in cells), default=0.0)  # the row named by meaning
        total = named + meant + 0.1 * (n - units[i].rank) / n
        answer = CellAnswer(i, _key(cells, asked, naming), tuple(cells[k] for k in sorted(asked)), named, fit, margin)
        if best is None or total > best[0]:
            best = (total, answer)
    return best[1] if best else None


def answers_cell(cell: CellAnswer, best: Unit) -> bool:
    """Whether the cell answer holds what was asked: a row the question names and a column that fits it, where the
    units' own scoring found a table row the best evidence (a passage it prefers, a how-to step, stays the answer)."""
    return best.row and cell.named > 0 and cell.fit >= FIT_FLOOR


def _key(cells: Sequence[Tuple[str, str]], asked: Sequence[int], naming: Sequence[int]) -> Tuple[Tuple[str, str], ...]:
    """The cells before the colon: those that named the row, else the row's first cell (its key), never an asked one."""
    key = [k for k in naming if k not in asked] or [0]
    return tuple(cells[k] for k in key if k not in asked)
