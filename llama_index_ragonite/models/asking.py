"""The part of an over-long question that asks: what an embedding model with a fixed window embeds.

Why: a user pastes a log or a page and asks about it at the end (or names the question first). The
embedding window (512 tokens for e5) cannot hold it all, and averaging windows would blur what was
asked into the log. The question is the part that asks; the pasted rest is material to match words
against, which BM25 does over the full text (retrieval's lexical side reads ``query_str`` whole).

The rule, general over languages and layouts: units are lines, and within a line the text up to each
question mark. The questions (units ending with ``?``) are kept, from the last back, as many as fit:
a log rarely ends a line with a question mark, a question nearly always does. A text without one
keeps its tail of units that fits (the end of a message is where people ask). A single unit longer
than the window keeps its tail of words that fits.
"""

from __future__ import annotations

import re
from typing import Callable, List

__all__ = ["asking_part"]

_UNIT = re.compile(r"[^\n?？]*[?？]+|[^\n]+")  # up to and with a run of question marks, else to the line end
_QUESTION_END = ("?", "？")


def _units(text: str) -> List[str]:
    return [unit.strip() for unit in _UNIT.findall(text) if unit.strip()]


def _kept_from_end(units: List[str], fits: Callable[[str], bool]) -> List[str]:
    kept: List[str] = []
    for unit in reversed(units):
        if not fits(" ".join([unit, *kept])):
            break
        kept.insert(0, unit)
    return kept


def _tail_words(text: str, fits: Callable[[str], bool]) -> str:
    """The longest tail of ``text``'s words that fits (binary search: ``fits`` tokenizes)."""
    words = text.split()
    low, high = 0, len(words)  # words[high:] is known to fit ("" fits), words[low:] may not
    while high - low > 1:
        middle = (low + high) // 2
        if fits(" ".join(words[middle:])):
            high = middle
        else:
            low = middle
    return " ".join(words[high:])


def asking_part(text: str, fits: Callable[[str], bool]) -> str:
    """``text`` when it ``fits``; else the questions that fit (the last first), else the tail that fits."""
    if fits(text):
        return text
    units = _units(text)
    questions = [unit for unit in units if unit.endswith(_QUESTION_END)]
    kept = _kept_from_end(questions or units, fits)
    if kept:
        return " ".join(kept)
    last = (questions or units or [text])[-1]
    return _tail_words(last, fits)
