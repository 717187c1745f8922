"""What kind of thing a question asks for (a date, a count, a duration, an amount, a person) and whether a
unit holds one.

Why: "When was the planning meeting held?" is answered by the sentence with a date, not by the
one that best repeats "planning meeting"; word overlap alone cannot tell them apart.
"""

from __future__ import annotations

import re
from typing import Dict, List, Sequence, Tuple

from llama_index_ragonite.models.extractive.scoring import asked_part

_MONTHS = (
    "jan(?:uary|uar)?|feb(?:ruary|ruar)?|m(?:ar(?:ch)?|ärz)|apr(?:il)?|ma[iy]|june?|juni|july?|juli|aug(?:ust)?|"
    "sep(?:t(?:ember)?)?|o[ck]t(?:ober)?|nov(?:ember)?|de[cz](?:ember)?"
)
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday|montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag"
# not "one"/"ein" as a count: "one or more", "one of them" count nothing
_NUMBER_WORDS = (
    "two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|dozen|hundred|"
    "zwei|drei|vier|fünf|sechs|sieben|acht|neun|zehn|elf|zwölf|zwanzig|hundert"
)
_TIME_UNITS = (
    r"(?:sec(?:ond)?s?|min(?:ute)?s?|hours?|hrs?|days?|weeks?|months?|years?|"
    r"sekunden?|minuten?|stunden?|tagen?|wochen?|monaten?|jahren?)"
)
_DURATION = (
    rf"\b(?:\d+(?:[.,]\d+)?|{_NUMBER_WORDS}|one|a|an|ein\w*)[\s-]*{_TIME_UNITS}\b|"
    r"\b(?:hourly|daily|weekly|monthly|yearly|stündlich|täglich|wöchentlich|monatlich|jährlich)\b"
)
_DATE = (
    rf"\b(?:{_MONTHS})\b\.?\s*\d|\d\.?\s*(?:{_MONTHS})\b|\b(?:{_DAYS})\b|\b(?:19|20)\d\d\b|"
    r"\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b|\b\d{1,2}(?::\d\d)?\s*(?:am|pm|uhr|utc)\b|\b\d{1,2}:\d\d\b"
)

# kind: (what the user's own words ask, what a unit that answers holds)
TYPES: Dict[str, Tuple["re.Pattern[str]", "re.Pattern[str]"]] = {
    "date": (
        re.compile(
            r"(?i)^(?:when|wann|seit wann|bis wann)\b|\b(?:what|which) (?:date|day|year|month|time)\b|"
            r"\b(?:an )?welche[mnrs]? (?:datum|tag|jahr|monat)\b"
        ),
        re.compile(rf"(?i){_DATE}|{_DURATION}"),  # "one week prior to the call" says when too
    ),
    "count": (
        re.compile(r"(?i)\b(?:how many|wie viele?|number|nummer|telefonnummer)\b"),
        re.compile(rf"(?i)\b(?:\d+|{_NUMBER_WORDS})\b"),
    ),
    "duration": (
        re.compile(r"(?i)\b(?:how long|how often|wie lange?|wie oft)\b"),
        re.compile(rf"(?i){_DURATION}"),
    ),
    "amount": (
        re.compile(r"(?i)\b(?:how much|wie viel|wieviel|costs?|kostet|kosten|price|preis)\b"),
        re.compile(r"\d"),
    ),
    # a person (a title, two capitalised words: "Dr. Okafor", "Lena Hoffmann") or a team ("Facility
    # Management"); a weight on ranking, never a filter: German capitalises every noun
    "person": (
        re.compile(r"(?i)\b(?:who|whom|wer|wen|wem)\b"),
        re.compile(r"\b(?:Dr|Prof|Mr|Mrs|Ms|Frau|Herr)\.?\s+[A-ZÄÖÜ]|\b[A-ZÄÖÜ][a-zäöüß]+\s+[A-ZÄÖÜ][a-zäöüß]+"),
    ),
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
