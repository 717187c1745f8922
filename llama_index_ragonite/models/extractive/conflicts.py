"""The same statement on two pages with different values: the current page answers, the other is named.

Why: a wiki keeps older copies of a page ("Laptop policy 2024 (archived)" beside "Laptop policy 2025"); both
are retrieved, their units score alike, and the answer may quote the stale value. Two units state the same
thing (``counterpart``) when they come from different pages and are

* table rows with the same headers and the same key (the row's first cell) whose other cells are short
  values or mostly the same text (``VALUE_WORDS``), or
* sentences whose words are mostly the same, in the same order (``SAME_WORDS`` of them, ``difflib``): the
  same text, or the same but for its values (amounts, dates, a name, a room).

Never by page titles: "archived" or a year in a title decides nothing. The page time is the evidence's
``modified`` field (``parsing.structure``); a file's mtime (a checkout's time) counts as unknown. The answer
takes the newer page's unit, unless the question names what only the older unit or its page title holds
("and in 2025?"); where the two differ it says what the other page says, cited (``conflict_phrases`` of the
question's language). With the times unknown or equal both pages are named and said to differ.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Callable, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from llama_index_ragonite.languages import language_table
from llama_index_ragonite.models.extractive.compose import cite
from llama_index_ragonite.models.extractive.scoring import identifiers, own_words, unit_keys
from llama_index_ragonite.models.extractive.sources import PageOf
from llama_index_ragonite.models.extractive.units import Unit
from llama_index_ragonite.parsing.rendering import is_row_sentence, row_pairs
from llama_index_ragonite.prompts import strip_citations
from llama_index_ragonite.text import detect_language

__all__ = [
    "SAME_WORDS",
    "Conflict",
    "Resolved",
    "counterpart",
    "current_first",
    "current_page_answer",
    "differing_words",
    "same_answer",
    "page_conflict",
    "page_time",
    "with_conflict",
]

SAME_WORDS = 0.6  # share of two sentences' words (2 x matched / both lengths) that makes them one statement
VALUE_WORDS = 6  # a table cell this short is a value that may change between versions; longer: a text
_TOKEN = re.compile(r"\w+(?:[.,:/-]\w+)*", re.UNICODE)  # "2,900", "1.14", "07:30" stay one token
_UNDECLARED = ("file_mtime",)  # a file's mtime is a checkout's time, not the page's


@dataclass(frozen=True)
class Conflict:
    """The answering unit, the unit of another page that states the same with other values, and which is newer
    (``newer``: 1 the answering unit's page, -1 the other's, 0 unknown or equal)."""

    answer: int
    other: int
    newer: int


def page_time(page: PageOf) -> Optional[datetime]:
    """The page's declared modified time in UTC; None when unknown or only a file's mtime."""
    if not page.modified or page.modified_source in _UNDECLARED:
        return None
    text = page.modified.strip().replace("Z", "+00:00")
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)


def _pairs(unit: Unit) -> Optional[Tuple[Tuple[str, str], ...]]:
    """A row unit's (header, cell) pairs, from its fields or its row sentence; None for other units."""
    if unit.cells is not None:
        return tuple(unit.cells)
    return tuple(row_pairs(unit.text)) if is_row_sentence(unit.text) else None


def _tokens(text: str) -> List[str]:
    return _TOKEN.findall(text.casefold())


def _similar(x: List[str], y: List[str]) -> bool:
    return difflib.SequenceMatcher(None, x, y, autojunk=False).ratio() >= SAME_WORDS


def _same_cell(v: str, w: str) -> bool:
    """Two cells of one column that may hold one value in two versions: the same, short values (a number, a
    name, a model: ``VALUE_WORDS``), or texts of mostly the same words; two test descriptions under one key
    ("UIVM") are two rows, not one changed."""
    x, y = _tokens(v), _tokens(w)
    return x == y or max(len(x), len(y)) <= VALUE_WORDS or _similar(x, y)


def same_statement(a: Unit, b: Unit) -> bool:
    """Do ``a`` and ``b`` state the same thing, with the same or other values (module doc)?"""
    rows = _pairs(a), _pairs(b)
    if rows[0] is not None or rows[1] is not None:
        if rows[0] is None or rows[1] is None or not rows[0] or len(rows[0]) != len(rows[1]):
            return False
        headers = [h.casefold() for h, _ in rows[0]] == [h.casefold() for h, _ in rows[1]]
        key = " ".join(rows[0][0][1].split()).casefold() == " ".join(rows[1][0][1].split()).casefold()
        return headers and key and all(_same_cell(v, w) for (_, v), (_, w) in zip(rows[0], rows[1]))
    x, y = _tokens(a.quote), _tokens(b.quote)
    if not x or not y:
        return False
    return _similar(x, y)


def counterpart(
    units: Sequence[Unit], i: int, pages: Mapping[int, PageOf], neighbours: Optional[Mapping[int, str]] = None
) -> Optional[int]:
    """The unit of another page that states what unit ``i`` states (the closest by words), or None. A sentence's
    source and the other's must have like ``neighbours`` too (their Before/After text: both none, or mostly the
    same words): a templated line ("Owned by … Last updated: Sep 25, 2015") on two unrelated pages is no copy."""
    neighbours = neighbours or {}
    page = pages.get(units[i].source)
    if page is None:
        return None
    found: List[Tuple[float, int]] = []
    for j, unit in enumerate(units):
        other = pages.get(unit.source)
        if other is None or other.page == page.page or unit.from_context or unit.earlier_answer:
            continue
        around = _tokens(neighbours.get(units[i].source, "")), _tokens(neighbours.get(unit.source, ""))
        like = around[0] == around[1] or bool(around[0] and around[1]) and _similar(*around)
        if same_statement(units[i], unit) and (like or _pairs(unit) is not None):
            ratio = difflib.SequenceMatcher(None, _tokens(units[i].quote), _tokens(unit.quote), autojunk=False).ratio()
            found.append((-ratio, j))
    return min(found)[1] if found else None


def _names(question: str, unit: Unit, page: PageOf) -> FrozenSet[str]:
    """The user's own words and identifiers (a completed follow-up's bracketed referent aside: the completer's,
    ``chat.completion.with_referent``) that the unit or its page title holds."""
    question = own_words(question)
    asked = unit_keys(question) | frozenset(identifiers(question))
    held = unit_keys(f"{page.title} {unit.quote}") | frozenset(identifiers(f"{page.title} {unit.quote}"))
    return asked & held


def current_first(
    question: str,
    units: Sequence[Unit],
    chosen: Sequence[int],
    pages: Mapping[int, PageOf],
    neighbours: Optional[Mapping[int, str]] = None,
) -> Tuple[List[int], Optional[Conflict]]:
    """``chosen`` with the newer page's unit first where another page states the first unit's statement with
    other values (a question that names only one of the two keeps that one), the other unit left out (it is
    the clause's; composing leaves out further near-copies); and the conflict, or None."""
    if not chosen:
        return list(chosen), None
    first = chosen[0]
    other = counterpart(units, first, pages, neighbours)
    if other is None:
        return list(chosen), None
    a, b = pages[units[first].source], pages[units[other].source]
    ta, tb = page_time(a), page_time(b)
    newer = 0 if ta is None or tb is None or ta == tb else (1 if ta > tb else -1)
    names_a, names_b = _names(question, units[first], a), _names(question, units[other], b)
    only_a, only_b = names_a - names_b, names_b - names_a
    asked_other = bool(only_b) and not only_a  # the question names the other unit's version ("and in 2025?")
    if asked_other or newer == -1 and not only_a:
        first, other, newer = other, first, -newer
    return [first, *[i for i in chosen if i not in (first, other)]], Conflict(first, other, newer)


def _moved(cell: Any, units: Sequence[Unit], to: int) -> Any:
    """A table answer (``tables.CellAnswer``: ``unit``, ``key``, ``asked`` cells) read off row ``to`` instead:
    the same headers' cells of that row (same headers and key: ``same_statement``)."""
    pairs = _pairs(units[to]) or ()

    def there(cells: Tuple[Tuple[str, str], ...]) -> Tuple[Tuple[str, str], ...]:
        by_header = {h: v for h, v in pairs}
        return tuple((h, by_header.get(h, v)) for h, v in cells)

    return replace(cell, unit=to, key=there(cell.key), asked=there(cell.asked))


@dataclass
class Resolved:
    """A conflict resolved: the assessment that answers (the current page's unit first) and the one that
    quotes the other page's unit (for the clause)."""

    conflict: Conflict
    answering: Any  # a ``scope.Assessment``
    other: Any
    alone: Any  # the answering unit alone (to compare with the other's quote)


def page_conflict(question: str, assessed: Any, sources: Sequence[Any]) -> Optional[Resolved]:
    """The conflict of an ``Assessment``'s answering unit (its table answer's row, else its first chosen unit)
    with a unit of another page, and the two assessments to quote (``Resolved``), or None."""
    pages = {s.number: s.page for s in sources if getattr(s, "page", None) is not None}
    cell = getattr(assessed, "cell", None)
    chosen = [cell.unit] if cell is not None else list(assessed.chosen)
    neighbours = {s.number: getattr(s, "context", "") for s in sources}
    order, conflict = current_first(question, assessed.units, chosen, pages, neighbours)
    if conflict is None:
        return None
    if cell is not None:
        answering = replace(assessed, chosen=[conflict.answer], cell=_moved(cell, assessed.units, conflict.answer))
        other = replace(assessed, chosen=[conflict.other], cell=_moved(cell, assessed.units, conflict.other))
        return Resolved(conflict, answering, other, answering)
    answering = replace(assessed, chosen=order)
    other = replace(assessed, chosen=[conflict.other])
    return Resolved(conflict, answering, other, replace(assessed, chosen=[conflict.answer]))


MIN_QUOTED = 4  # words the clause quotes of a sentence at least: a value with its unit ("two times two hours")


def differing_words(unit: Unit, other: Unit) -> str:
    """What ``other`` says in place of ``unit``'s words that differ. A row: its key (if short) and the cells
    that differ ("Developer: 3,100 EUR"; a bare number with its header). A sentence: its words from the first to the last
    that differ (at least ``MIN_QUOTED``, the next words first), "…" where the sentence goes on."""
    rows = _pairs(unit), _pairs(other)
    if rows[0] is not None and rows[1] is not None:
        cells = [(h, v) for (h, v), (_, w) in zip(rows[1], rows[0]) if _tokens(v) != _tokens(w)]
        shown = ", ".join(f"{h} {v}" if h and not re.search(r"[^\W\d]", v) else v for h, v in cells)
        key = rows[1][0][1] if len(_tokens(rows[1][0][1])) <= VALUE_WORDS else ""  # a long key: not repeated
        return f"{key}: {shown}" if key and shown else shown
    spans = [m.span() for m in _TOKEN.finditer(other.quote)]
    x, y = _tokens(unit.quote), _tokens(other.quote)
    runs = [
        (j1, j2) for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, x, y, autojunk=False).get_opcodes()
        if tag != "equal" and j2 > j1
    ]  # fmt: skip
    windows: List[List[int]] = []
    for j1, j2 in runs:  # each run with the words after it (then before it) up to MIN_QUOTED words
        last = min(len(spans), max(j2, j1 + MIN_QUOTED)) - 1
        first = max(0, min(j1, last - MIN_QUOTED + 1))
        if windows and first <= windows[-1][1] + 3:  # two words apart at most: one window
            windows[-1][1] = max(windows[-1][1], last)
        else:
            windows.append([first, last])
    if not windows:
        return ""
    quoted = " … ".join(other.quote[spans[a][0] : spans[b][1]] for a, b in windows)
    return ("… " if windows[0][0] > 0 else "") + quoted + (" …" if windows[-1][1] < len(spans) - 1 else "")


def same_answer(a: str, b: str) -> bool:
    """Two answer texts that say the same, their citations aside (a row whose asked cells agree)."""
    return _tokens(strip_citations(a)) == _tokens(strip_citations(b))


def with_conflict(answer_text: str, resolved: Resolved, sources: Sequence[Any], question: str, quote: str) -> str:
    """``answer_text`` with the other page's statement (``quote``, cited already) after the answering unit's
    citation: "2,900 EUR [Source 1] (an older page, Laptop policy 2024 (archived), says 3,100 EUR [Source 3])"."""
    conflict, units = resolved.conflict, resolved.answering.units
    pages = {s.number: s.page for s in sources if getattr(s, "page", None) is not None}
    answer, other = units[conflict.answer].source, units[conflict.other].source
    phrases = language_table(detect_language(question)).conflict_phrases
    kind = {1: "older", -1: "newer", 0: "differs"}[conflict.newer]
    said = phrases[kind].format(
        quote=quote.strip().rstrip("."), title=pages[other].title, answer_title=pages[answer].title
    )
    marker = f"[Source {answer}]"
    at = answer_text.find(marker)
    if at < 0:
        return f"{answer_text.rstrip()} ({said})"
    end = at + len(marker)
    return f"{answer_text[:end]} ({said}){answer_text[end:]}"


def current_page_answer(
    question: str, assessed: Any, sources: Sequence[Any], answer_text: Callable[[Any], str], label: str = ""
) -> Optional[str]:
    """The answer when another page states the answering unit's statement: the current page's (``page_conflict``),
    with the other page's words named and cited where they differ (``with_conflict``); None when no other page
    states it. ``answer_text``: the answerer's text of an assessment (``label`` first)."""
    resolved = page_conflict(question, assessed, sources)
    if resolved is None:
        return None
    conflict, units = resolved.conflict, assessed.units
    if getattr(assessed, "cell", None) is not None or _pairs(units[conflict.other]) is not None:
        quote = answer_text(resolved.other)  # a row: the other row's cells the question asks, as the answer's
        if same_answer(quote, answer_text(resolved.alone)):
            return answer_text(resolved.answering)  # the asked cells agree: the current page's, nothing to name
    else:
        words = differing_words(units[conflict.answer], units[conflict.other])
        if not words:
            return answer_text(resolved.answering)  # the same words: the current page's
        quote = cite(words, units[conflict.other].source)
    quote = quote[len(label) :] if label and quote.startswith(label) else quote
    return with_conflict(answer_text(resolved.answering), resolved, sources, question, quote)
