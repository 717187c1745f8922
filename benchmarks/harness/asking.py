"""Asking the embedded default one question per fresh conversation, and out-of-scope rates:
what the answer-quality scripts under ``benchmarks/`` share (out of scope, answers).

Every question is asked in a fresh conversation (the engine's memory is reset first), so the
answer depends on the question and the retrieved evidences only.
"""

from __future__ import annotations

import sys
from typing import List, NamedTuple, Optional, Sequence, Tuple

from llama_index_ragonite.bench.answer_metrics import is_out_of_scope
from llama_index_ragonite.chat.engine import RagoniteChatEngine


class Asked(NamedTuple):
    lang: str
    kind: str
    question: str
    answer: str
    prompt: str = ""  # the answer prompt the engine sent ("" when none: no evidence retrieved)
    contexts: Tuple[str, ...] = ()  # the retrieved evidences' LLM views


def ask_all(
    engine: RagoniteChatEngine, items: Sequence[Tuple[str, str, str]], label: str, every: int = 50
) -> List[Asked]:
    """Each (lang, kind, question) in a fresh conversation; returns them with the answer, prompt and contexts."""
    from llama_index.core.schema import MetadataMode

    out = []
    for i, (lang, kind, question) in enumerate(items, 1):
        engine.reset()
        response = engine.chat(question)
        contexts = tuple(n.node.get_content(MetadataMode.LLM) for n in response.source_nodes)
        out.append(Asked(lang, kind, question, str(response.response), answer_prompt(response, contexts), contexts))
        if i % every == 0 or i == len(items):
            print(f"{label}: {i}/{len(items)}", file=sys.stderr)
    return out


def out_of_scope_rate(asked: Sequence[Asked], lang: Optional[str] = None) -> float:
    group = [a for a in asked if lang is None or a.lang == lang]
    return sum(is_out_of_scope(a.answer) for a in group) / max(len(group), 1)


def rate_row(name: str, asked: Sequence[Asked]) -> str:
    """One markdown table row: out-of-scope count and rate for EN, DE and all."""
    cells = []
    for lang in ("en", "de", None):
        group = [a for a in asked if lang is None or a.lang == lang]
        n = sum(is_out_of_scope(a.answer) for a in group)
        cells.append(f"{n}/{len(group)} = {n / max(len(group), 1):.3f}")
    return f"| {name} | " + " | ".join(cells) + " |"


def answer_prompt(response, contexts) -> str:
    """The answer prompt of a turn: the one an LLM received, else (offline, where none is built) the one it
    would have received over the same sources in a fresh conversation (what the old offline answerer parsed)."""
    from llama_index_ragonite.prompts import ANSWER_PROMPT, format_views

    sent = response.turn.prompts.get("answer")
    return sent or ANSWER_PROMPT.format(
        sources=format_views(contexts), history="", question=response.completed_question
    )
