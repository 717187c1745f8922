"""How far the conversational results move when the store's HNSW graph is built again.

Usage:
    python benchmarks/graph_spread_confquestions.py [--data DIR] [--store DIR] [--graphs N] [--out FILE.md]

Chroma's graph differs from build to build, so a user who builds the ConfQuestions store again
searches another graph than the benchmark store. This script plays the completion benchmark's
conversations (``completion_confquestions.py``'s worker: this tree, the embedded default) on the
cached store and on ``N`` copies of it whose Chroma collection is built again from the same
records (``harness.store.rebuilt_copy``; the pages are not embedded again), and reports P@1, the
German gap and the off-topic counts per graph.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path)
    ap.add_argument("--store", type=Path)
    ap.add_argument("--graphs", type=int, default=3, help="copies with a graph built again (default 3)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    from harness import default_data, finish_report, shown
    from harness.completion_report import LATER_LISTS, list_label, refused
    from harness.conversations import run_worker
    from harness.store import ALL_STORE, rebuilt_copy

    from llama_index_ragonite.bench.confquestions import load_questions
    from llama_index_ragonite.bench.metrics import gold_keys, mean, precision_at_1
    from llama_index_ragonite.bench.provenance import machine

    args.data = args.data or default_data(ROOT)
    args.store = (args.store or ROOT / "benchmarks" / ".cache" / ALL_STORE).resolve()
    questions = load_questions(args.data)
    start, load = time.perf_counter(), os.getloadavg()[0]
    rows = [
        "| graph | P@1 all | EN | DE | EN - DE | off-topic out of scope (of 100) | "
        + " | ".join(map(list_label, LATER_LISTS))
        + " |",
        "|---|" + "---:|" * (5 + len(LATER_LISTS)),
    ]
    totals = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.graphs + 1):
            name, store = ("benchmark store", args.store) if k == 0 else (f"built again ({k})", Path(tmp) / f"graph{k}")
            if k:
                print(rebuilt_copy(args.store, store), file=sys.stderr)
            run = run_worker(ROOT, argparse.Namespace(data=args.data, store=store), Path(tmp) / f"{k}.json")
            p1 = [precision_at_1(t["urls"], gold_keys(q.gold_urls)) for q, t in zip(questions, run["turns"])]
            en, de = (mean([v for v, q in zip(p1, questions) if q.lang == lang]) for lang in ("en", "de"))
            totals.append(sum(p1))
            counts = " | ".join(refused(run, key) for key in ("off_topic", *LATER_LISTS))
            rows.append(f"| {name} | {mean(p1):.3f} | {en:.3f} | {de:.3f} | {en - de:+.3f} | {counts} |")
    lines = [
        "# ConfQuestions conversations on HNSW graphs built again (embedded default, ALL context)",
        "",
        "Command: `python benchmarks/graph_spread_confquestions.py"
        + (f" --graphs {args.graphs}" if args.graphs != 3 else "")
        + f" --out {shown(args.out, ROOT) if args.out else 'FILE.md'}`",
        f"Machine: {machine()}.",
        f"Wall time {time.perf_counter() - start:.0f} s; load average {load:.1f} at start.",
        f"Store: `{shown(args.store, ROOT)}`; each copy holds the same records in a collection built again"
        " (`harness.store.rebuilt_copy`), its whole graph on disk. Each row is one run of"
        " `completion_confquestions.py`'s worker (this tree) on that store: 600 turns, then the off-topic"
        f" questions of its {1 + len(LATER_LISTS)} lists.",
        "",
        *rows,
        "",
        f"P@1 turns: {min(totals):.0f} to {max(totals):.0f} of {len(questions)} over {len(totals)} graphs.",
    ]
    return finish_report(lines, args.out)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    sys.exit(main())
