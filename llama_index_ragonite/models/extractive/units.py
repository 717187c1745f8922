"""Cutting a source's evidence into answer units: table rows, list items, sentences.

A unit is what the answerer quotes: small enough to answer one question, whole enough to
read on its own. Rows stay whole (a row is one fact), passages are cut at sentence ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, List, Optional, Sequence, Tuple

from llama_index_ragonite.languages import every
from llama_index_ragonite.parsing.rendering import is_row_sentence

_BULLET = re.compile(r"^[-*•]\s+")
_ITEM = re.compile(r"^(?:[-*•]|\d{1,2}[.)])\s+")  # a list item's line: a bullet or a number
# A sentence ends at . ! ? followed by space and an upper-case letter, digit, quote or bracket;
# common abbreviations and initials ("e.g. The", "J. Smith") do not end one.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9ÄÖÜ])")
_ABBREVIATIONS = tuple(sorted(every("abbreviations")))
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
    follow: str = ""  # what a lead-in announces ("including:" → the list), quoted with it, not scored
    whole_list: bool = False  # a list with its lead-in, every item (``whole_list``)
    cells: Optional[Tuple[Tuple[str, str], ...]] = None  # a row node's (header, cell) pairs, from its fields

    @property
    def quote(self) -> str:
        return f"{self.text} {self.follow}" if self.follow else self.text

    @property
    def row(self) -> bool:
        """A table row: a row node's (its cells known), or a verbalized row line of a table's text."""
        return self.cells is not None or is_row_sentence(self.text)


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
    that follows it; before a list of two or more items it is left out: ``whole_list`` quotes it
    with every item (joined to the first item alone, it would lift that one over the others).
    """
    units: List[str] = []
    listed = whole_list(evidence)
    for raw in evidence.split("\n"):
        line = _BULLET.sub("", raw.strip())
        if not line:
            continue
        pieces = [line] if is_row_sentence(line) else [s for s in _split_sentences(line) if _WORD.search(s)]
        for piece in pieces:
            if units and units[-1].endswith(":") and not is_row_sentence(units[-1]):
                if listed.startswith(units[-1]) and _ITEM.match(raw.strip()):
                    units[-1] = piece  # the lead-in of a list: whole_list's
                else:
                    units[-1] = f"{units[-1]} {piece}"
            else:
                units.append(piece)
    return units


def whole_list(evidence: str, before: str = "") -> str:
    """The evidence's list as one unit (its lead-in, then every item), or "" when it holds under two items.

    The lead-in is the line above the list when it ends with a colon; for a list that opens its evidence,
    ``before`` (the source's Before text: the parser keeps the lead-in paragraph as an evidence of its own).

    Why: "What do I need to volunteer?" is answered by all three items, not by the best one alone; the
    whole list competes with its items and wins when it answers better as a whole."""
    lines = [line.strip() for line in evidence.split("\n") if line.strip()]
    first = next((i for i, line in enumerate(lines) if _ITEM.match(line)), None)
    if first is None:
        return ""
    run = first
    while run < len(lines) and _ITEM.match(lines[run]):  # the first list: its contiguous items
        run += 1
    if run - first < 2:
        return ""
    above = lines[first - 1] if first else before.strip()
    lead = above if above.endswith(":") else ""
    body = [list_item_text(line) for line in lines[first:run]]
    return " ".join(filter(None, [lead, "; ".join(body) + "."]))


def list_item_text(line: str) -> str:
    """A list item as ``whole_list`` quotes it: no bullet or number, no closing punctuation."""
    return _ITEM.sub("", line.strip()).rstrip(".;,")


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


def _opening(text: str) -> str:
    return " ".join(_BULLET.sub("", text.strip()).rstrip("…").split()).lower()


def _continues(after: str, evidence: str) -> bool:
    """Whether ``evidence`` starts as ``after`` (a source's After text, maybe cut short with "…") does."""
    a, b = _opening(after), _opening(evidence)
    n = min(len(a), len(b), 60)
    return n >= 12 and a[:n] == b[:n]


def continued_lead_ins(sources: Sequence[Any], units: Sequence[Unit]) -> List[Unit]:
    """``units`` with each lead-in that ends its evidence ("… devices related to power management
    including:") joined to what follows it on the page: the retrieved source whose evidence its
    After text starts (cited instead: it holds the answer), else that After text.

    Why: a lead-in alone answers nothing; the list it announces, often a separate evidence, does."""
    last = {u.source: i for i, u in enumerate(units) if not (u.from_context or u.earlier_answer)}
    out = list(units)
    for source in sources:
        i = last.get(source.number)
        after = getattr(source, "after", "")
        if i is None or not after or not units[i].text.endswith(":") or units[i].row:
            continue
        nxt = next((s for s in sources if s.number != source.number and _continues(after, s.evidence)), None)
        items = split_units(nxt.evidence if nxt else after)
        if not items:
            continue
        follow = " ".join(t if t.endswith((".", "!", "?", ";", "…")) else t + ";" for t in items)
        follow = follow[:-1] + "." if follow.endswith(";") else follow
        out[i] = replace(units[i], source=nxt.number if nxt else source.number, follow=follow)
    return out
