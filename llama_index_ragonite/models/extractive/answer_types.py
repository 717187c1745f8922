"""What kind of thing a question asks for (a date, a count, a duration, an amount, a person) and whether a
unit holds one.

Why: "When was the planning meeting held?" is answered by the sentence with a date, not by the
one that best repeats "planning meeting"; word overlap alone cannot tell them apart.
"""

from __future__ import annotations

import re
from typing import Dict, List, Sequence, Tuple

from llama_index_ragonite.languages import LANGUAGES, alternation
from llama_index_ragonite.models.extractive.scoring import asked_part

_MONTHS, _DAYS, _NUMBERS = alternation("months"), alternation("weekdays"), alternation("number_words")
_ONE, _UNITS, _PERIODIC = alternation("one_patterns", words=False), alternation("time_units"), alternation("periodic")
_DURATION = rf"\b(?:\d+(?:[.,]\d+)?|{_NUMBERS}|{_ONE})[\s-]*{_UNITS}\b|\b{_PERIODIC}\b"
_DATE = (
    rf"\b{_MONTHS}\b\.?\s*\d|\d\.?\s*{_MONTHS}\b|\b{_DAYS}\b|\b(?:19|20)\d\d\b|"
    rf"\b\d{{1,2}}[/.]\d{{1,2}}[/.]\d{{2,4}}\b|\b\d{{1,2}}(?::\d\d)?\s*{alternation('clock_words')}\b|\b\d{{1,2}}:\d\d\b"
)
# a person (a title, two capitalised words: "Dr. Okafor", "Lena Hoffmann") or a team ("Facility
# Management"); a weight on ranking, never a filter: German capitalises every noun
_PERSON = rf"\b{alternation('person_titles')}\.?\s+[A-ZÄÖÜ]|\b[A-ZÄÖÜ][a-zäöüß]+\s+[A-ZÄÖÜ][a-zäöüß]+"
_HOLDS = {
    "date": re.compile(rf"(?i){_DATE}|{_DURATION}"),  # "one week prior to the call" says when too
    "count": re.compile(rf"(?i)\b(?:\d+|{_NUMBERS})\b"),
    "duration": re.compile(rf"(?i){_DURATION}"),
    "amount": re.compile(r"\d"),
    "person": re.compile(_PERSON),
}
# kind: (what the user's own words ask, in any language's table, what a unit that answers holds)
TYPES: Dict[str, Tuple["re.Pattern[str]", "re.Pattern[str]"]] = {
    kind: (
        re.compile("|".join(p for t in LANGUAGES.values() for p in t.asks_patterns.get(kind, ())), re.I),
        holds,
    )
    for kind, holds in _HOLDS.items()
}


def asked_type(question: str) -> str:
    """ "date", "count", "duration", "amount" or "person" when the user's own words ask for one, else ""."""
    own = asked_part(question).strip()
    return next((kind for kind, (asks, _) in TYPES.items() if asks.search(own)), "")


def holds_type(text: str, kind: str) -> bool:
    """Whether ``text`` holds a thing of ``kind`` (any text does when ``kind`` is "")."""
    return not kind or bool(TYPES[kind][1].search(text))


def by_asked_type(question: str, texts: Sequence[str], scores: Sequence[float], weight: float) -> List[float]:
    """``scores`` with the texts that lack what the question asks for weighted by ``weight``, when
    some text holds it; rescaled to the same best score, so the type ranks units but whether the
    question is in scope stays with the words."""
    kind = asked_type(question)
    holds = [holds_type(t, kind) for t in texts] if kind else []
    if not any(holds):
        return list(scores)
    typed = [s * (1.0 if h else weight) for s, h in zip(scores, holds)]
    scale = max(scores) / max(max(typed), 1e-9)
    return [s * scale for s in typed]
