"""A held-out wiki's conversations played through a package copy's chat engine, and scored.

What ``heldout`` and ``refactor_check`` share: ``play`` runs in a child process (``Bench.call``) with the
package copy to measure first on ``sys.path``; ``score`` computes the measures of ``heldout``'s doc.
"""

from __future__ import annotations

import json
import re
import statistics
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional


def conversations_of(folder: Path, half: int = 0) -> List[Dict[str, Any]]:
    """The set's conversations; ``half`` 1 or 2: only that half's (sets written in halves), 0: all."""
    conversations = json.loads((Path(folder) / "conversations.json").read_text())
    return [c for c in conversations if not half or c.get("half") == half]


def page_titles(folder: Path) -> Dict[str, str]:
    """Page file -> its ``<title>``, for the turns that must name a page."""
    found = (
        (p.name, re.search(r"<title>(.*?)</title>", p.read_text(encoding="utf-8"), re.S))
        for p in folder.glob("pages/*")
    )
    return {name: " ".join(m.group(1).split()) for name, m in found if m}


def play(folder: str, contextualizer: Dict[str, Any], half: int = 0) -> List[Dict[str, Any]]:
    """Index the set's pages and play its conversations with the package first on ``sys.path``: one record a turn
    (with each source's page and raw text, for the retrieval ceiling)."""
    from llama_index_ragonite import EvidenceContextualizer, EvidenceStore, RagoniteChatEngine, load_pages
    from llama_index_ragonite.prompts import OUT_OF_SCOPE

    records = []
    with tempfile.TemporaryDirectory(prefix="heldout-") as work:
        store = EvidenceStore(Path(work) / "store", contextualizer=EvidenceContextualizer(**contextualizer))
        store.ingest(load_pages(Path(folder) / "pages"), show_progress=False)
        for conversation in conversations_of(Path(folder), half):
            engine = RagoniteChatEngine.from_store(Path(work) / "store")
            for n, turn in enumerate(conversation["turns"]):
                response = engine.chat(turn["question"])
                sources = response.source_nodes
                records.append(
                    {
                        "conversation": conversation["id"],
                        "turn": n,
                        "completed": response.completed_question,
                        "answer": response.response,
                        "first_page": sources[0].node.ref_doc_id if sources else None,
                        "out_of_scope": OUT_OF_SCOPE.rstrip(".").lower() in response.response.lower(),
                        "sources": [[n.node.ref_doc_id, n.node.get_content()] for n in sources],
                    }
                )
    return records


def score(
    conversations: List[Dict[str, Any]], records: List[Dict[str, Any]], titles: Optional[Dict[str, str]] = None
) -> Dict[str, Any]:
    """The measures of the module doc, overall, by language and by kind of turn. ``titles`` (``page_titles``):
    a conflict turn is right only when its answer also names the older page's title."""
    titles = titles or {}
    shown = {(r["conversation"], r["turn"]): r for r in records}
    rows = []
    for conversation in conversations:
        for n, turn in enumerate(conversation["turns"]):
            got = shown[(conversation["id"], n)]
            hits = [a.lower() in got["answer"].lower() for a in turn["answers"]]
            answerable = turn["gold_page"] is not None
            right = answerable and not got["out_of_scope"] and (all if turn["answer_mode"] == "all" else any)(hits)
            older = titles.get(turn.get("older_page") or "", "")
            ceiling = any(  # a retrieved evidence of the gold page holds an accepted string (the gold row, for a cell)
                page == turn["gold_page"] and any(a.lower() in text.lower() for a in turn["answers"])
                for page, text in got.get("sources", [])
            )
            rows.append(
                {
                    "kind": turn["kind"],
                    "language": turn["language"],
                    "answerable": answerable,
                    "right": right,
                    "words": len(got["answer"].split()),
                    "out_of_scope": got["out_of_scope"],
                    "first": got["first_page"] == turn["gold_page"],
                    "unchanged": got["completed"].strip() == turn["question"].strip(),
                    "ceiling": ceiling,
                    "cross_language": bool(turn.get("cross_language")),
                    "conflict_named": turn["kind"] == "conflict"
                    and right
                    and bool(older)
                    and older.lower() in got["answer"].lower(),
                }
            )

    def summary(selected: List[Dict[str, Any]]) -> Dict[str, Any]:
        answerable = [r for r in selected if r["answerable"]]
        refuse = [r for r in selected if not r["answerable"]]
        switches = [r for r in selected if r["kind"] == "topic_switch"]
        cells = [r for r in answerable if r["kind"] == "table_cell"]
        ceiling = [r for r in cells if r["ceiling"]]
        conflicts = [r for r in answerable if r["kind"] == "conflict"]
        crossing = [r for r in answerable if r["cross_language"]]
        return {
            "answerable": len(answerable),
            "accuracy": sum(r["right"] for r in answerable) / max(len(answerable), 1),
            "median_words": statistics.median(r["words"] for r in answerable) if answerable else 0,
            "refused_answerable": sum(r["out_of_scope"] for r in answerable),
            "p_at_1": sum(r["first"] for r in answerable) / max(len(answerable), 1),
            "unanswerable": len(refuse),
            "out_of_scope_rate": sum(r["out_of_scope"] for r in refuse) / max(len(refuse), 1),
            "switches": len(switches),
            "switches_unchanged": sum(r["unchanged"] for r in switches),
            "switches_right": sum(r["unchanged"] and r["first"] and r["right"] for r in switches),
            "table_cells": len(cells),
            "table_cells_right": sum(r["right"] for r in cells),
            "table_ceiling": len(ceiling),
            "table_ceiling_right": sum(r["right"] for r in ceiling),
            "conflicts": len(conflicts),
            "conflicts_named": sum(r["conflict_named"] for r in conflicts),
            "cross_language": len(crossing),
            "cross_language_first": sum(r["first"] for r in crossing),
        }

    return {
        "all": summary(rows),
        **{lang: summary([r for r in rows if r["language"] == lang]) for lang in ("en", "de")},
        "by_kind": {k: summary([r for r in rows if r["kind"] == k]) for k in sorted({r["kind"] for r in rows})},
    }
