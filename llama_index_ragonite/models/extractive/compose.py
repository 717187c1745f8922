"""Composing the answer: the chosen units quoted in the source's words, trimmed, each cited.

Quotes are never reworded: a long unit is only cut (marked "…"), a sentence loses the leading or
trailing clauses that restate the question, a verbalized row loses its ``Row i in Table j:``
position. Nothing is generated, so nothing is invented.
"""

from __future__ import annotations

import re
from typing import List, Sequence, Set

from llama_index_ragonite.languages import alternation
from llama_index_ragonite.models.extractive.answer_types import asked_type, holds_type
from llama_index_ragonite.models.extractive.cells import (
    CELL_SEPARATOR,
    Pairs,
    answer_cells,
    quote_cells,
    row_cells,
    value_matches,
)
from llama_index_ragonite.models.extractive.scoring import (
    answer_words,
    asked_part,
    identifiers,
    is_yes_no,
    negates,
    quote_keys,
    quote_terms,
    quote_word_keys,
)
from llama_index_ragonite.models.extractive.units import Unit
from llama_index_ragonite.parsing.rendering import is_row_sentence, without_row_position


def _trim_row(text: str, wanted: frozenset, max_words: int) -> str:
    """A row's ``header is value`` pairs within ``max_words``: those holding question words first."""
    text = without_row_position(text).strip() if is_row_sentence(text) else text
    pairs = text.split(CELL_SEPARATOR)
    if len(text.split()) <= max_words:
        return text
    hit = [bool(wanted & quote_keys(p)) for p in pairs]
    keep, used = set(), 0
    for i in sorted(range(len(pairs)), key=lambda i: (not hit[i], i)):
        n = len(pairs[i].split()) + 1
        if used + n <= max_words:
            keep.add(i)
            used += n
    out = []
    for i in range(len(pairs)):
        if i in keep:
            out.append(pairs[i])
        elif not out or out[-1] != "…":
            out.append("…")
    return ", and ".join(out).replace(", and …, and ", " … ").replace(", and …", " …").replace("…, and ", "… ")


def _row_keys(question: str, topic: str) -> tuple:
    """(the question's match keys, its identifiers), less the words of the page ``topic``
    ("OpenXT 9.0 Measurement Test"): they say which table, not which column or row."""
    topic_keys, topic_ids = quote_keys(topic), frozenset(identifiers(topic))
    keys = frozenset(
        k for w in answer_words(question) for k in quote_word_keys(w) if not quote_word_keys(w) & topic_keys
    )
    return keys, frozenset(identifiers(question)) - topic_ids


def row_answer(text: str, question: str, topic: str = "", pairs: Pairs = None) -> str:
    """A verbalized row cut to the cells that answer ``question`` (``cells.answer_cells``); the
    user's own words (``asked_part``) ask for the columns. When the question asks for an amount, a
    count or a date (``answer_types``) that none of those cells holds, the cells that hold one are
    quoted with them: "Was kostet das Hotel am Auensee?" names no English column, its prices answer."""
    keys, ids = _row_keys(question, topic)
    cells = answer_cells(text, keys, ids, _row_keys(asked_part(question), topic), pairs)
    if cells is None:
        return text
    kind = asked_type(question)
    if kind in ("amount", "count", "date") and not any(holds_type(c.value, kind) for c in cells):
        every = row_cells(text, pairs)  # the asked amount, count or date is in no chosen cell
        typed = [c for c in every if holds_type(c.value, kind)]
        return quote_cells([c for c in every if c in cells or c in typed]) if typed else text
    return quote_cells(cells)


def trim_words(
    text: str, question: str, max_words: int, topic: str = "", cells: bool = False, pairs: Pairs = None
) -> str:
    """``text`` cut to ``max_words`` words, keeping the question's words; "…" marks cuts.

    A verbalized row loses its ``Row i in Table j:`` prefix (a position, not an answer) and
    keeps whole ``header is value`` pairs: the pairs that hold question words, then the
    others in order. Other text keeps the window that holds most question words. ``pairs``: the row's
    (header, cell) pairs when its fields say them (``text`` is then a row whatever it reads).
    """
    wanted = quote_keys(question)
    if pairs is not None or is_row_sentence(text):
        return _trim_row(row_answer(text, question, topic, pairs) if cells else text, wanted, max_words)
    words = text.split()
    if len(words) <= max_words:
        return text
    hits = [1 if wanted & quote_keys(w) else 0 for w in words]
    best, best_start = -1, 0
    for start in range(0, len(words) - max_words + 1):
        h = sum(hits[start : start + max_words])
        if h > best:
            best, best_start = h, start
    window = " ".join(words[best_start : best_start + max_words])
    return ("… " if best_start > 0 else "") + window + (" …" if best_start + max_words < len(words) else "")


NEW_SHARE = 0.25  # a further unit must add this share of new words: not a near-copy of the first (a page and its copy)


# Where a quoted sentence may be cut into clauses: ; : dashes, and a comma before a connective.
_CLAUSE = re.compile(rf"\s*(?:;|:\s|\s[–—-]\s|,\s+(?={alternation('clause_connectives')}\b))\s*")


def drop_echo(text: str, question: str) -> str:
    """``text`` without leading and trailing clauses that only restate ``question`` (every content
    word and identifier of them is the question's): "32bits installation of Debian Squeeze, which is
    the recommended configuration" answers "What is the recommended configuration?" with its first clause.

    Why: the smallest quote that holds the answer; a clause the asker already said adds only length."""
    if is_row_sentence(text) or is_yes_no(question):
        return text  # a yes/no question's restating clause is its answer ("Guest hibernation is not supported")
    said_keys, said_ids = quote_keys(question), frozenset(identifiers(question))
    cuts = [0] + [x for m in _CLAUSE.finditer(text) for x in (m.start(), m.end())] + [len(text)]
    spans = [(cuts[k], cuts[k + 1]) for k in range(0, len(cuts) - 1, 2) if text[cuts[k] : cuts[k + 1]].strip()]

    def echo(clause: str) -> bool:
        new_words = [w for w in answer_words(clause) if not quote_word_keys(w) & said_keys]
        new = new_words or set(identifiers(clause)) - said_ids
        return not new and not (negates(clause) and not negates(question))

    keep = [not echo(text[a:b]) for a, b in spans]
    if len(spans) >= 2 and any(keep) and not all(keep):
        first, last = keep.index(True), len(keep) - 1 - keep[::-1].index(True)
        out = text[spans[first][0] : spans[last][1]].strip()
        stop = "." if text.rstrip().endswith(".") and not out.endswith(".") else ""
        text = _capitalized(out) + stop
    subject = _COPULA.match(text)
    if subject and echo(subject[1]) and answer_words(text[subject.end() :]):
        return _capitalized(text[subject.end() :])  # "The main build script is do_build.sh" → "do_build.sh"
    return text


# A sentence's subject and its copula ("The main build script in the OpenXT repo is …"), at most eight words,
# before a noun phrase: not a verb form ("is located in", "was utilized as", "is being logged", "is to be made")
# or an adverb, whose sentence reads wrong without its subject; nor a subordinate clause's ("Once a ticket is").
_COPULA = re.compile(
    rf"^(?!{alternation('subordinators')}\b)((?:\S+\s+){{0,7}}?\S+)\s+{alternation('copulas')}\s+"
    rf"(?!{alternation('copula_modifiers')}\b)(?!{alternation('participle_patterns', words=False)}\b)",
    re.IGNORECASE,
)


def _capitalized(text: str) -> str:
    """``text`` with a capital first letter, unless it opens with a name written in lower case ("do_build.sh")."""
    first = text.split(maxsplit=1)
    return text[0].upper() + text[1:] if first and first[0].isalpha() else text


def cite(text: str, source: int) -> str:
    """``text [Source i]``, the citation placed before a final full stop."""
    text = text.strip()
    if text.endswith(".") and not text.endswith("..."):
        return f"{text[:-1]} [Source {source}]."
    return f"{text} [Source {source}]"


def _sentence(text: str) -> str:
    """Uncited quotes end with a full stop, so two of them do not run together."""
    text = text.strip()
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def _new_cells(text: str, quoted: Set[str]) -> str:
    """A further row without the cells an earlier row of the answer quoted already ("Machine is HP 8300"
    twice): the first row states the shared condition once. ``quoted`` gains this row's cells."""
    cells = text.split(CELL_SEPARATOR)
    new = [c for c in cells if c.strip() not in quoted] or cells
    quoted.update(c.strip() for c in cells)
    return CELL_SEPARATOR.join(new)


def compose_answer(
    units: Sequence[Unit], chosen: Sequence[int], question: str, label: str, max_words: int, numbered: bool = True
) -> str:
    """``label`` + the chosen units, each cited (``numbered``: the prompt numbers its sources), within ``max_words``."""
    parts: List[str] = []
    budget = max_words
    said = quote_terms(question)
    quoted_cells: Set[str] = set()
    for i in chosen:
        if budget < 5:
            break
        first = units[chosen[0]]
        if parts and units[i].row and first.row:
            keys, ids = _row_keys(question, units[i].topic)
            meets = value_matches(units[i].text, keys, ids, units[i].cells)
            if meets < value_matches(first.text, keys, ids, first.cells):
                continue  # a further row must meet the question's conditions as the first does ("failed")
        quote = units[i].quote if units[i].row else drop_echo(units[i].quote, question)
        text = trim_words(quote, question, budget, units[i].topic, cells=True, pairs=units[i].cells)
        row = units[i].row
        if row:
            text = _new_cells(text, quoted_cells)
        adds = quote_terms(text) - said
        if parts and (not adds or not row and len(adds) < NEW_SHARE * len(quote_terms(text))):
            continue  # a further unit must add a different part of the answer, not repeat the first
        said |= adds
        budget -= len(text.split())
        parts.append(cite(text, units[i].source) if numbered else _sentence(text))
    return label + " ".join(parts)
