"""How long the offline answer step takes on the ConfQuestions store: this tree vs a baseline commit.

Usage:
    python benchmarks/answer_step_latency.py [--data DIR] [--store DIR] [--base-rev REV] [--limit N] [--out FILE.md]

The answer step is what the chat engine does between retrieval and the reply: with the offline
default, this tree's ``ExtractiveSynthesizer`` reads the retrieved nodes (scoring units by meaning
with the store's embedding model, at most one batched encoder call per turn: unit vectors are
computed at query time and cached by text, nothing is stored at ingest); the baseline's
``ExtractiveAnswerer`` reads the answer prompt of the same nodes. Both sides answer ConfQuestions'
gold completed questions in conversation order (a conversation revisits its pages, as in the app),
each in a subprocess of its own, one after the other, on the same cached store (never rebuilt when it
exists); retrieval runs first and is not timed. Reported: p50 / p95 / mean of the answer step and
the ratio this tree / baseline of each.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]


def worker(store_dir: str, data: str, limit: int, out: str) -> None:
    """Time the answer step of this process's package (the first on ``sys.path``)."""
    from harness.store import open_all_store
    from llama_index.core.schema import MetadataMode

    from llama_index_ragonite.bench.confquestions import load_questions
    from llama_index_ragonite.models.extractive.answerer import ExtractiveAnswerer
    from llama_index_ragonite.prompts import ANSWER_PROMPT, format_sources
    from llama_index_ragonite.retrieval.retriever import HybridRetriever

    store = open_all_store(Path(store_dir), Path(data))
    retriever = HybridRetriever.from_store(store, k_lexical=10, k_dense=10, top_n=10)
    questions = [q.completed for q in load_questions(Path(data))][:limit]
    try:  # this tree: the engine's offline answer step
        from llama_index_ragonite.models.synthesizers import ExtractiveSynthesizer

        synthesizer = ExtractiveSynthesizer(ExtractiveAnswerer(embed_model=retriever.embed_model))

        def answer(question, nodes):
            return synthesizer.answer(question, [n.node.get_content(metadata_mode=MetadataMode.LLM) for n in nodes])

    except ImportError:  # a baseline before the synthesizers: the answerer reads the answer prompt
        answerer = ExtractiveAnswerer()

        def answer(question, nodes):
            prompt = ANSWER_PROMPT.format(sources=format_sources(nodes), history="", question=question)
            return answerer.complete(prompt).text

    answer(questions[0], retriever.retrieve(questions[0]))  # models loaded before timing
    seconds = []
    for question in questions:
        nodes = retriever.retrieve(question)
        started = time.perf_counter()
        answer(question, nodes)
        seconds.append(time.perf_counter() - started)
    Path(out).write_text(json.dumps(seconds))


def _side(package_parent: Path, args) -> List[float]:
    with tempfile.TemporaryDirectory(prefix="answer-step-") as tmp:
        out = Path(tmp) / "seconds.json"
        code = (
            f"import sys; sys.path.insert(0, {str(package_parent)!r}); sys.path.insert(1, {str(ROOT / 'benchmarks')!r}); "
            f"import answer_step_latency as a; a.worker({str(args.store)!r}, {str(args.data)!r}, {args.limit}, {str(out)!r})"
        )
        subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp)
        return json.loads(out.read_text())


def _stats(seconds: List[float]) -> Dict[str, float]:
    ordered = sorted(seconds)
    return {
        "p50": statistics.median(ordered) * 1000,
        "p95": ordered[int(0.95 * (len(ordered) - 1))] * 1000,
        "mean": statistics.fmean(ordered) * 1000,
    }


def main(argv: Optional[List[str]] = None) -> int:
    sys.path.insert(0, str(ROOT))
    from harness import default_data, finish_report, package_at
    from harness.store import ALL_STORE

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=default_data(ROOT))
    ap.add_argument("--store", type=Path, default=ROOT / "benchmarks" / ".cache" / ALL_STORE)
    ap.add_argument("--base-rev", default="HEAD")
    ap.add_argument("--limit", type=int, default=600)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="answer-step-base-") as base_dir:
        base_commit = package_at(args.base_rev, Path(base_dir), ROOT)
        base = _stats(_side(Path(base_dir), args))
    now = _stats(_side(ROOT, args))
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    lines = [
        "# Offline answer step: this tree vs a baseline (ConfQuestions store)",
        "",
        f"Command: `python benchmarks/answer_step_latency.py --base-rev {args.base_rev}"
        f"{' --out ' + str(args.out) if args.out else ''}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; load average "
        f"{load[0]:.1f} at start. Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. This tree: "
        f"{head.stdout.strip()}; baseline: {base_commit} (`git archive`). {args.limit} ConfQuestions gold completed "
        "questions in conversation order, retrieval untimed; one subprocess per side, one after the other.",
        "",
        "| answer step | p50 ms | p95 ms | mean ms |",
        "|---|---:|---:|---:|",
        f"| baseline ({base_commit}) | {base['p50']:.1f} | {base['p95']:.1f} | {base['mean']:.1f} |",
        f"| this tree | {now['p50']:.1f} | {now['p95']:.1f} | {now['mean']:.1f} |",
        f"| ratio this tree / baseline | {now['p50'] / base['p50']:.2f} | {now['p95'] / base['p95']:.2f} | "
        f"{now['mean'] / base['mean']:.2f} |",
        "",
        "Issue 45's goal: p50 of the answer step ≤ 300 ms on 2 cores. Unit vectors: computed at query time "
        "(at most `embed_candidates`, 24, per turn, in one batch), cached by text per answerer; none stored at "
        "ingest, so no build-time or disk cost.",
    ]
    return finish_report(lines, args.out.resolve() if args.out else None)


if __name__ == "__main__":
    sys.exit(main())
