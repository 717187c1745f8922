"""Hybrid retrieval at this checkout against an earlier commit, on one store, in one run.

    python benchmarks/retrieval_latency_vs_base.py --base 3a85712 [--store benchmarks/.cache/retrieval-ALL] [--rounds 2]

Both codes open the same store (built by `retrieval_confquestions.py`) and answer ConfQuestions'
600 gold completed questions, alternately, in fresh processes; each question's embedding happens
inside the timed call. Prints p50/p95 per run, the ratio new/base, and how many top hits agree:
a refactor should keep every top hit and cost no time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs in a child process with PYTHONPATH set to the code under test.
CHILD = r"""
import json, sys, time
store_path, questions_path = sys.argv[1], sys.argv[2]
try:
    from llama_index_ragonite import EvidenceStore, HybridRetriever
    retriever = HybridRetriever.from_store(EvidenceStore(store_path), k_lexical=10, k_dense=10, top_n=10)
except TypeError:  # layouts before HybridRetriever.from_store took a store
    from llama_index_ragonite import EvidenceStore
    retriever = EvidenceStore(store_path).retriever(k_lexical=10, k_dense=10, top_n=10)
questions = json.load(open(questions_path))
retriever.retrieve("warm-up question")
lat, firsts = [], []
for q in questions:
    t = time.perf_counter()
    hits = retriever.retrieve(q)
    lat.append(time.perf_counter() - t)
    firsts.append(hits[0].node.node_id if hits else None)
lat.sort()
print(json.dumps({"p50": lat[len(lat) // 2], "p95": lat[int(len(lat) * 0.95)], "firsts": firsts}))
"""


def run(code_dir: Path, store: Path, questions: Path) -> dict:
    env = {"PYTHONPATH": str(code_dir), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(store), str(questions)],
        env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    from llama_index_ragonite.bench.confquestions import load_questions

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="the commit to compare against")
    ap.add_argument("--store", type=Path, default=ROOT / "benchmarks" / ".cache" / "retrieval-ALL")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "datasets" / "confquestions")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.base], check=True)
        try:
            questions = Path(tmp) / "questions.json"
            questions.write_text(json.dumps([q.completed for q in load_questions(args.data)]))
            runs = [(label, run(code, args.store, questions)) for _ in range(args.rounds)
                    for label, code in (("base", base), ("new", ROOT))]  # fmt: skip
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)
    for label, r in runs:
        print(f"{label:5s} p50 {1000 * r['p50']:.1f} ms  p95 {1000 * r['p95']:.1f} ms")
    for (_, b), (_, n) in zip(runs[::2], runs[1::2]):
        print(f"ratio new/base: p50 {n['p50'] / b['p50']:.2f}, p95 {n['p95'] / b['p95']:.2f}")
    same = sum(a == b for a, b in zip(runs[0][1]["firsts"], runs[1][1]["firsts"]))
    print(f"same top hit: {same} of {len(runs[0][1]['firsts'])} questions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
