"""Cutting a source's evidence into answer units: table rows, list items, sentences.

A unit is what the answerer quotes: small enough to answer one question, whole enough to
read on its own. Rows stay whole (a row is one fact), passages are cut at sentence ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, List, Sequence

ROW = re.compile(r"^Row \d+ in Table \d+:")  # a verbalized table row's position prefix
_BULLET = re.compile(r"^[-*•]\s+")
# A sentence ends at . ! ? followed by space and an upper-case letter, digit, quote or bracket;
# common abbreviations and initials ("e.g. The", "J. Smith") do not end one.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9ÄÖÜ])")
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "no.", "z.b.", "bzw.", "ca.", "inc.", "dr.", "mr.")
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Unit:
    source: int  # 1-based source number
    rank: int  # 0-based position of the source in the prompt
    text: str
    topic: str
    from_context: bool = False  # a sentence of the source's Before/After context, not of the evidence itself
    earlier_answer: bool = (
        False  # an answer of the answerer fed back (refine, tree_summarize): already cut to the point
    )


def _split_sentences(line: str) -> List[str]:
    pieces, current = [], ""
    for piece in _SENTENCE_END.split(line):
        current = f"{current} {piece}" if current else piece
        if not current.lower().endswith(_ABBREVIATIONS) and not re.search(r"(?:^|\s)\w\.$", current):
            pieces.append(current.strip())
            current = ""
    if current.strip():
        pieces.append(current.strip())
    return pieces


def split_units(evidence: str) -> List[str]:
    """Answer units of an evidence: each table row and list item (a line), each sentence of a passage.

    Rows (``Row i in Table j: …``) are never split; other lines are split into sentences, so a
    one-sentence list item stays whole; bullets ("- ", "* ") are dropped. A lead-in that ends
    with a colon ("The properties are:") says nothing by itself, so it is joined to the unit
    that follows it.
    """
    units: List[str] = []
    for line in evidence.split("\n"):
        line = _BULLET.sub("", line.strip())
        if not line:
            continue
        pieces = [line] if ROW.match(line) else [s for s in _split_sentences(line) if _WORD.search(s)]
        for piece in pieces:
            if units and units[-1].endswith(":") and not ROW.match(units[-1]):
                units[-1] = f"{units[-1]} {piece}"
            else:
                units.append(piece)
    return units


def context_units(sources: Sequence[Any], units: Sequence[Unit]) -> List[Unit]:
    """Sentences of the sources' Before/After context (``PromptSource.context``) as further units,
    each text once (the first source that carries it), none that repeats an evidence unit.

    Why: a row of a results table says which card passed, the text above the table says that the
    tests ran with QEMU 1.4; with ``row_context="table"`` that text reaches the row as context."""
    seen = {u.text for u in units}
    out = []
    for rank, source in enumerate(sources):
        for text in split_units(getattr(source, "context", "") or ""):
            if text not in seen:
                seen.add(text)
                out.append(Unit(source=source.number, rank=rank, text=text, topic=source.topic, from_context=True))
    return out
