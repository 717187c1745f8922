"""Follow-up suggestions: the next questions a chat turn's evidences can answer."""

from __future__ import annotations

import re
from typing import List, Sequence

from llama_index.core.schema import NodeWithScore

__all__ = ["suggest_follow_ups"]

_HEADING_SPLIT = re.compile(r"\s*>\s*")


def suggest_follow_ups(nodes: Sequence[NodeWithScore], asked: str, limit: int = 3) -> List[str]:
    """Up to ``limit`` next questions the retrieved evidences can answer, from their titles and headings.

    Offline and deterministic: each distinct (page, section) among the retrieved evidences, in
    retrieval order, becomes "What does <page> say about <section>?", skipping what was just asked.
    """
    out: List[str] = []
    asked_lower = asked.lower()
    for hit in nodes if limit > 0 else []:
        meta = hit.node.metadata
        title = str(meta.get("title") or "").strip()
        section = _HEADING_SPLIT.split(str(meta.get("heading_path") or ""))[-1].strip()
        if not title:
            continue
        question = f"What does '{title}' say about {section}?" if section else f"What is '{title}' about?"
        if question not in out and (section or title).lower() not in asked_lower:
            out.append(question)
        if len(out) >= limit:
            break
    return out
