"""Build and query speed of the embedded default against an earlier commit, with quality, in one run.

    python benchmarks/speed_vs_base.py --base-rev c1b64ec [--rounds 2] [--out benchmarks/results/speed_vs_base.md]

Each code (the base commit, extracted with ``git archive``, and this checkout) runs in fresh child
processes with its own defaults, as a user's ``pip install`` would:

1. builds the ConfQuestions store (ALL context, 215 pages) into a temporary folder, timed by step;
2. answers the 600 gold completed questions on the store it built, each question embedded inside
   the timed call (after one warm-up question): P@1, p50 and p95, over ``--rounds`` rounds that
   alternate base and new;
3. retrieves the own questions over ``examples/sample_wiki`` (pages ConfQuestions never asks about)
   and lists each one's top evidence, so that a speed-up that changes rankings shows there too.

Builds run one after the other, base first. Wall times move with the machine's load (other jobs
on shared cores), so the report gives each step's CPU time too (all threads of the child, from
``time.process_time``): on a busy machine the CPU-time ratio is the one to read.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness import default_data, finish_report, package_at, table_cell  # noqa: E402
from harness.own_questions import OWN_QUESTIONS, SAMPLE_WIKI  # noqa: E402

BUILD = r"""
import json, sys, time
from pathlib import Path
from harness.store import build_store
t, cpu = time.perf_counter(), time.process_time()
store, seconds = build_store(Path(sys.argv[1]), Path(sys.argv[2]), "ALL")
print(json.dumps({"seconds": time.perf_counter() - t, "cpu": time.process_time() - cpu, "steps": seconds, "evidences": len(store)}))
"""

QUERY = r"""
import json, sys, time
from pathlib import Path
from llama_index_ragonite import EvidenceStore, HybridRetriever
from llama_index_ragonite.bench.confquestions import load_questions
from llama_index_ragonite.bench.metrics import gold_keys, page_key
store_path, data, own_path = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
retriever = HybridRetriever.from_store(EvidenceStore(store_path), k_lexical=10, k_dense=10, top_n=10)
retriever.retrieve("warm-up question")
lat, cpu, hits = [], [], 0
for q in load_questions(data):
    t, c = time.perf_counter(), time.process_time()
    top = retriever.retrieve(q.completed)
    lat.append(time.perf_counter() - t)
    cpu.append(time.process_time() - c)
    hits += bool(top) and page_key(top[0].node.metadata["url"]) in gold_keys(q.gold_urls)
lat.sort()
cpu.sort()
own = json.load(open(own_path))
own_store = EvidenceStore(own["store"])
if not own_store.manifest.get("pages"):
    from llama_index_ragonite.parsing.loaders import load_pages
    own_store.ingest(load_pages(Path(own["pages"])), show_progress=False)
own_retriever = HybridRetriever.from_store(own_store)
tops = [own_retriever.retrieve(q)[0].node.get_content()[:120] for q in own["questions"]]
print(json.dumps({"p50": lat[len(lat) // 2], "p95": lat[int(len(lat) * 0.95)], "cpu_p50": cpu[len(cpu) // 2],
                  "p_at_1": hits / len(lat), "questions": len(lat), "own_tops": tops}))
"""


def child(code: str, code_dir: Path, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code_dir)}
    out = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True
    )
    if out.returncode:
        raise SystemExit(f"child failed ({code_dir}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base-rev", required=True, help="the commit to compare against")
    ap.add_argument("--data", type=Path, default=default_data(ROOT))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    load_start = os.getloadavg()
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "base").mkdir()
        base_rev = package_at(args.base_rev, tmp / "base", ROOT)
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        codes = {"base": tmp / "base", "new": ROOT}
        builds = {label: child(BUILD, code, str(args.data), str(tmp / label)) for label, code in codes.items()}
        queries = {label: [] for label in codes}
        for label in codes:
            own = {
                "store": str(tmp / f"own-{label}"),
                "pages": str(SAMPLE_WIKI),
                "questions": [q for _, q, _ in OWN_QUESTIONS],
            }
            (tmp / f"own-{label}.json").write_text(json.dumps(own))
        for _ in range(args.rounds):
            for label, code in codes.items():
                store = str(tmp / label / "retrieval-ALL")
                queries[label].append(child(QUERY, code, store, str(args.data), str(tmp / f"own-{label}.json")))
    load_end = os.getloadavg()
    return finish_report(
        report(args, base_rev, head.stdout.strip(), builds, queries, load_start, load_end, started), args.out
    )


def report(args, base_rev, head, builds, queries, load_start, load_end, started) -> list:
    b, n = builds["base"], builds["new"]
    best = {label: min(runs, key=lambda r: r["p50"]) for label, runs in queries.items()}
    lines = [
        f"# Build and query speed vs {base_rev} (embedded default, ConfQuestions)",
        "",
        f"Command: `python benchmarks/speed_vs_base.py {' '.join(sys.argv[1:])}`; baseline {base_rev} (`git archive`), "
        f"new: the working tree at {head}.",
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}; load average "
        f"(1/5/15 min) {' / '.join(f'{x:.1f}' for x in load_start)} at start, "
        f"{' / '.join(f'{x:.1f}' for x in load_end)} at the end. Wall time {time.time() - started:.0f} s.",
        "",
        "## Building the store (ALL context; model loading included, as a first `ragonite index` pays it)",
        "",
        "| code | evidences | CPU s | wall s | " + " | ".join(f"{k} (wall s)" for k in n["steps"]) + " |",
        "|---|---:|---:|---:|" + "---:|" * len(n["steps"]),
    ]
    for label, r in builds.items():
        steps = " | ".join(f"{r['steps'].get(k, 0):.1f}" for k in n["steps"])
        lines.append(f"| {label} | {r['evidences']} | {r['cpu']:.1f} | {r['seconds']:.1f} | {steps} |")
    lines += [
        "",
        f"Build new/base: CPU time **{n['cpu'] / b['cpu']:.2f}**, wall time {n['seconds'] / b['seconds']:.2f}; "
        f"embedding step (wall) {n['steps'].get('embed', 0) / max(b['steps'].get('embed', 0), 1e-9):.2f}.",
        "",
        f"## Hybrid retrieval, {best['new']['questions']} gold completed questions, each on its own store "
        f"({args.rounds} round(s), alternating)",
        "",
        "| code | round | P@1 | p50 ms | p95 ms | CPU p50 ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for i in range(args.rounds):
        for label in queries:
            r = queries[label][i]
            lines.append(
                f"| {label} | {i + 1} | {r['p_at_1']:.3f} | {1000 * r['p50']:.1f} | {1000 * r['p95']:.1f} "
                f"| {1000 * r['cpu_p50']:.1f} |"
            )
    ratios = [n_["p50"] / b_["p50"] for b_, n_ in zip(queries["base"], queries["new"])]
    cpu_ratios = [n_["cpu_p50"] / b_["cpu_p50"] for b_, n_ in zip(queries["base"], queries["new"])]
    lines += [
        "",
        f"p50 new/base per round: wall {', '.join(f'{r:.2f}' for r in ratios)}, CPU "
        f"{', '.join(f'{r:.2f}' for r in cpu_ratios)}; best rounds (wall): "
        f"**{best['new']['p50'] / best['base']['p50']:.2f}**.",
        "",
        "## Own questions over examples/sample_wiki: top evidence",
        "",
        "| question | base | new | same |",
        "|---|---|---|---|",
    ]
    same = 0
    for (_, question, _), bt, nt in zip(OWN_QUESTIONS, queries["base"][0]["own_tops"], queries["new"][0]["own_tops"]):
        same += bt == nt
        lines.append(
            f"| {table_cell(question, 90)} | {table_cell(bt, 70)} | {table_cell(nt, 70)} | {'yes' if bt == nt else 'no'} |"
        )
    lines += ["", f"Same top evidence for {same} of {len(OWN_QUESTIONS)} own questions."]
    return lines


if __name__ == "__main__":
    sys.exit(main())
