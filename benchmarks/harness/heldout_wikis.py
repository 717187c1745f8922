"""A held-out wiki's conversations played through a package copy's chat engine, and scored.

What ``heldout`` and ``refactor_check`` share: ``play`` runs in a child process (``Bench.call``) with the
package copy to measure first on ``sys.path``; ``score`` computes the measures of ``heldout``'s doc.
"""

from __future__ import annotations

import json
import statistics
import tempfile
from pathlib import Path
from typing import Any, Dict, List


def play(folder: str, contextualizer: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Index the set's pages and play its conversations with the package first on ``sys.path``: one record a turn."""
    from llama_index_ragonite import EvidenceContextualizer, EvidenceStore, RagoniteChatEngine, load_pages
    from llama_index_ragonite.prompts import OUT_OF_SCOPE

    records = []
    with tempfile.TemporaryDirectory(prefix="heldout-") as work:
        store = EvidenceStore(Path(work) / "store", contextualizer=EvidenceContextualizer(**contextualizer))
        store.ingest(load_pages(Path(folder) / "pages"), show_progress=False)
        for conversation in json.loads((Path(folder) / "conversations.json").read_text()):
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
                    }
                )
    return records


def score(conversations: List[Dict[str, Any]], records: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The measures of the module doc, overall, by language and by kind of turn."""
    shown = {(r["conversation"], r["turn"]): r for r in records}
    rows = []
    for conversation in conversations:
        for n, turn in enumerate(conversation["turns"]):
            got = shown[(conversation["id"], n)]
            hits = [a.lower() in got["answer"].lower() for a in turn["answers"]]
            answerable = turn["gold_page"] is not None
            right = answerable and not got["out_of_scope"] and (all if turn["answer_mode"] == "all" else any)(hits)
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
                }
            )

    def summary(selected: List[Dict[str, Any]]) -> Dict[str, Any]:
        answerable = [r for r in selected if r["answerable"]]
        refuse = [r for r in selected if not r["answerable"]]
        switches = [r for r in selected if r["kind"] == "topic_switch"]
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
        }

    return {
        "all": summary(rows),
        **{lang: summary([r for r in rows if r["language"] == lang]) for lang in ("en", "de")},
        "by_kind": {k: summary([r for r in rows if r["kind"] == k]) for k in sorted({r["kind"] for r in rows})},
    }
