"""Reading an answer prompt: its numbered ``### Source i ###`` blocks, the question, the history.

Parsing rule for ``### Source`` inside an evidence: a source header is a whole line
``### Source N ###`` whose N is the next number in sequence (1, 2, 3, …). ``prompts.format_sources``
escapes every imitation of the prompt's structure in evidence text (``\\#\\#\\# Source 7 \\#\\#\\#``,
``User\\:``, ``\\-----``, ``\\[Source 3\\]``), so an evidence never holds a header line and a
source is never split inside. Each source's text is read back unescaped
(``prompts.unquote_evidence``): the answerer scores and quotes the page's own words, with
``[Source n]`` markers of the page kept escaped, so a quote never cites with them. (In a prompt
built by someone else an evidence line that is exactly the next header still splits the source:
it is indistinguishable from a real boundary, for an LLM as well.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Tuple

from llama_index_ragonite.models.extractive.sources import PromptSource, header_source, plain_question
from llama_index_ragonite.parsing.contextualizer import trailing_after
from llama_index_ragonite.parsing.rendering import Header, shown_header
from llama_index_ragonite.prompts import quote_evidence, unquote_evidence

__all__ = ["ParsedPrompt", "PromptSource", "numbered_sources", "parse_prompt", "plain_question", "split_source"]

_HEADER_LINE = re.compile(r"^###\s*Source\s+(\d+)\s*###\s*$")
_SEPARATOR = re.compile(r"^-{3,}\s*$")
_TURN = re.compile(r"^(User|Assistant):[ \t]?(.*)$", re.IGNORECASE)


@dataclass(frozen=True)
class ParsedPrompt:
    sources: List[PromptSource]
    question: str  # "" when the prompt has no ``User:`` line
    history: List[str] = field(default_factory=list)  # earlier ``User:``/``Assistant:`` lines


def split_source(text: str) -> Tuple[str, str]:
    """``(topic, evidence)`` of one source's text.

    The contextualizer's header is a run of leading ``Page:``/``Section:``/``Before:``/``After:``
    lines followed by a blank line (the ``After:`` line may instead follow the evidence after a blank
    line: ``after_position="end"``). The topic keeps the page title and section only: they say
    what the evidence is about; ``Before:``/``After:`` quote neighbouring evidences, which
    answer nothing here. Without such a header the whole text is evidence. Escaped imitations
    of the prompt's structure read back as the page wrote them (citations stay escaped).
    """
    source = _source(0, text)
    return source.topic, source.evidence


def _read_header(text: str) -> Tuple[List[str], int]:
    """The source's lines, unquoted, and how many of them are its contextualizer header (0: none): the
    longest run of leading lines that ``rendering.shown_header`` reads as one, followed by a blank line."""
    lines = unquote_evidence(text, citations=False).strip("\n").split("\n")
    end = 0
    while end < len(lines) and lines[end] and shown_header({}, [lines[end]]) is not None:
        end += 1
    return lines, 0 if end < len(lines) and lines[end].strip() else end


def _source(number: int, text: str) -> PromptSource:
    """One source block, its header read once: topic, evidence, the Before/After text around it
    (which may state what the evidence lacks: "tests performed on OpenXT with QEMU 1.4" above a
    table's rows) and the After text alone (how the page goes on past the evidence)."""
    lines, end = _read_header(text)
    header = shown_header({}, lines[:end]) or Header()
    evidence = "\n".join(lines[end:]).strip()
    body, tail = trailing_after(evidence)
    if end and evidence and tail and not header.after:  # ``after_position="end"``
        evidence, header = body, shown_header({}, [*lines[:end], tail]) or header
    return header_source(number, header, evidence)


def view_source(number: int, view: str) -> PromptSource:
    """Source ``number`` read from a node's LLM view, as from that node numbered in a prompt."""
    return _source(number, quote_evidence(view.strip()))


def _header_lines(lines: List[str]) -> List[int]:
    """Indices of the ``### Source N ###`` lines numbered 1, 2, 3, … in sequence."""
    starts: List[int] = []
    for i, line in enumerate(lines):
        match = _HEADER_LINE.match(line.strip())
        if match and int(match.group(1)) == len(starts) + 1:
            starts.append(i)
    return starts


def numbered_sources(text: str) -> List[PromptSource]:
    """The ``### Source i ###`` blocks of a context that holds only sources (``[]`` when it has none)."""
    lines = text.split("\n")
    starts = _header_lines(lines)
    bounds = zip(starts, [*starts[1:], len(lines)])
    return [_source(k, "\n".join(lines[a + 1 : b])) for k, (a, b) in enumerate(bounds, 1)]


def parse_prompt(prompt: str) -> ParsedPrompt:
    """The numbered sources, the question and the history lines of an answer prompt.

    The question is the last line starting ``User:`` (any case, so CustomLLM's ``user:`` chat
    rendering works too) after the last source header. The last source ends at the last
    ``-----`` separator line before the question, or else at the first dialog line after it.
    History is the ``User:``/``Assistant:`` lines between the sources and the question.
    """
    lines = prompt.split("\n")
    starts = _header_lines(lines)
    after = starts[-1] + 1 if starts else 0
    turns = [(j, m) for j in range(after, len(lines)) if (m := _TURN.match(lines[j]))]
    users = [j for j, m in turns if m.group(1).lower() == "user"]
    q_line = users[-1] if users else len(lines)
    end = q_line
    if starts:
        separators = [j for j in range(after, q_line) if _SEPARATOR.match(lines[j])]
        dialog = [j for j, _ in turns if j <= q_line]
        end = separators[-1] if separators else (dialog[0] if dialog else q_line)
    sources = []
    for k, start in enumerate(starts):
        stop = starts[k + 1] if k + 1 < len(starts) else end
        sources.append(_source(k + 1, "\n".join(lines[start + 1 : stop])))
    if not users:
        return ParsedPrompt(sources=sources, question="")
    history = [lines[j].strip() for j, _ in turns if end <= j < q_line]
    turn = _TURN.match(lines[q_line])
    question = plain_question(turn.group(2) if turn else lines[q_line])  # q_line is a turn's line
    return ParsedPrompt(sources=sources, question=question, history=history)
