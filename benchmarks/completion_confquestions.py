"""ConfQuestions conversations through the chat engine: completion + retrieval, this tree vs HEAD.

Usage:
    python benchmarks/completion_confquestions.py [--data DIR] [--store DIR] [--base-rev REV] [--out FILE.md]

Each of ConfQuestions' 100 conversations (EN and DE, 600 turns) is played turn by turn through
``RagoniteChatEngine.from_defaults(HybridRetriever.from_store(store), follow_ups=0)`` — the
embedded default: ``OfflineQuestionCompleter``, the engine's own retrieval path, the extractive
answerer — once with this tree's package and once with the baseline's (``--base-rev``, default
HEAD: ``git archive REV llama_index_ragonite`` in a temporary folder), each in a
subprocess (``harness.conversations``), one after the other, on the same cached store
(``harness.store.open_all_store``; never rebuilt when it exists). Per turn: the completed question
the engine reports (``response.completed_question``) and the pages of its sources, so P@1 and
MRR@10 are the page of the first source in the answer prompt. "Self-contained" turns are those
whose gold completion equals the raw question; the engine must report them unchanged. After each
conversation, a self-contained off-topic question ("What is the capital of France?" …) must be
answered out of scope, and so must one of each later list (``HELD_OUT_OFF_TOPIC``,
``FRESH_OFF_TOPIC``, ``UNSEEN_OFF_TOPIC``, ``LATER_OFF_TOPIC``, ``LAST_OFF_TOPIC``), each asked by another engine
seeded with the conversation's history.
``benchmarks/completion_conversations.json`` (24 conversations written for issue 16 over pages no
ConfQuestions question asks about) is played the same way. For reference, the raw and the
gold-completed questions are retrieved alone (the retriever, no engine).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from harness.conversations import ROOT, run_worker


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path)
    ap.add_argument("--store", type=Path)
    ap.add_argument("--base-rev", default="HEAD", help="the baseline commit (default HEAD), run from a git archive")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    from harness import default_data, package_at
    from harness.store import ALL_STORE

    args.data = args.data or default_data(ROOT)
    args.store = (args.store or ROOT / "benchmarks" / ".cache" / ALL_STORE).resolve()
    from harness.completion_report import report

    start, load = time.perf_counter(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        head = package_at(args.base_rev, base, ROOT)
        runs = {
            "HEAD": run_worker(base, args, Path(tmp) / "head.json"),
            "this tree": run_worker(ROOT, args, Path(tmp) / "new.json"),
        }
    lines = report(args, runs, head, time.perf_counter() - start, load)
    meta = f"Machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}."
    lines.insert(3, meta)
    from harness import finish_report

    return finish_report(lines, args.out)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    sys.exit(main())
