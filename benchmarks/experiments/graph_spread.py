"""ConfQuestions conversations on HNSW graphs built again (embedded default, ALL context).

Chroma's graph differs from build to build, so a user who builds the ConfQuestions store again searches
another graph than the benchmark store. This plays the ``completion`` experiment's conversations (this
tree, ``harness.conversations.play``) on the cached store and on ``graphs`` copies of it whose Chroma
collection is built again from the same records (``harness.store.rebuilt_copy``; nothing embedded again),
and reports P@1, the German gap and the off-topic counts per graph.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import List

from harness import CHECKOUT, shown
from harness.conversations import LATER_LISTS, list_label, play, played, refused

__all__ = ["play"]  # what Bench.call runs in the child processes
OPTIONS = {"graphs": 3}


def run(bench) -> List[str]:
    from harness.store import rebuilt_copy

    from llama_index_ragonite.bench.metrics import gold_keys, mean, precision_at_1

    questions = bench.questions()
    rows = [
        "| graph | P@1 all | EN | DE | EN - DE | off-topic out of scope (of 100) | "
        + " | ".join(map(list_label, LATER_LISTS))
        + " |",
        "|---|" + "---:|" * (5 + len(LATER_LISTS)),
    ]
    totals = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(bench.opts["graphs"] + 1):
            name, store = ("benchmark store", None) if k == 0 else (f"built again ({k})", Path(tmp) / f"graph{k}")
            if k:
                print(rebuilt_copy(bench.store_path, store), file=sys.stderr)
            run = played(bench, store=store)
            p1 = [precision_at_1(t["urls"], gold_keys(q.gold_urls)) for q, t in zip(questions, run["turns"])]
            en, de = (mean([v for v, q in zip(p1, questions) if q.lang == lang]) for lang in ("en", "de"))
            totals.append(sum(p1))
            counts = " | ".join(refused(run, key) for key in ("off_topic", *LATER_LISTS))
            rows.append(f"| {name} | {mean(p1):.3f} | {en:.3f} | {de:.3f} | {en - de:+.3f} | {counts} |")
    return [
        f"Store: `{shown(bench.store_path, CHECKOUT)}`; each copy holds the same records in a collection built again"
        " (`harness.store.rebuilt_copy`), its whole graph on disk. Each row is one run of the `completion`"
        f" experiment's conversations (this tree) on that store: 600 turns, then the off-topic questions of its"
        f" {1 + len(LATER_LISTS)} lists.",
        "",
        *rows,
        "",
        f"P@1 turns: {min(totals):.0f} to {max(totals):.0f} of {len(questions)} over {len(totals)} graphs.",
    ]
