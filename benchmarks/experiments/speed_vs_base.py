"""This checkout against --base-rev: building the ConfQuestions store, hybrid retrieval, the answer step.

Each code (the baseline package, ``bench.base``, and this checkout) runs in fresh child processes
(``bench.call``) with its own defaults, as a user's ``pip install`` would. ``steps`` picks the parts:

- ``build``: each code builds the store (ALL context, 215 pages) into a temporary folder, base first,
  timed by step; the later steps then run on the store each code built. Without it both codes open the
  cached store (``--store``). CPU time (all threads of the child) beside wall time: on a busy machine
  the CPU-time ratio is the one to read.
- ``query``: the gold completed questions, each embedded inside the timed call (after one warm-up
  question), ``rounds`` rounds alternating base and new: P@1, p50, p95, and how many top hits agree
  (a refactor keeps every top hit and costs no time).
- ``own``: the own questions over ``examples/sample_wiki`` (pages ConfQuestions never asks about) and
  each one's top evidence, so that a speed-up that changes rankings shows there too.
- ``answer``: the offline answer step between retrieval and the reply, questions in conversation order,
  retrieval untimed. This tree's ``ExtractiveSynthesizer`` scores units with the store's model (unit
  vectors computed at query time, cached by text); a baseline before it reads the answer prompt.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from harness import table_cell
from harness.own_questions import OWN_QUESTIONS, SAMPLE_WIKI

OPTIONS = {"steps": ("build", "query", "own"), "rounds": 2}


# Run in a child process, against the package of one code ----------------------------------------------


def build(data: str, folder: str) -> dict:
    from harness.store import build_store

    wall, cpu = time.perf_counter(), time.process_time()
    store, seconds = build_store(Path(data), Path(folder), "ALL")
    return {"seconds": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "steps": seconds,
            "evidences": len(store)}  # fmt: skip


def _retriever(store: str):
    from llama_index_ragonite import EvidenceStore, HybridRetriever

    return HybridRetriever.from_store(EvidenceStore(store), k_lexical=10, k_dense=10, top_n=10)


def query(store: str, data: str, limit: Optional[int]) -> dict:
    from llama_index_ragonite.bench.confquestions import load_questions
    from llama_index_ragonite.bench.metrics import gold_keys, page_key

    retriever = _retriever(store)
    retriever.retrieve("warm-up question")
    lat, cpu, hits, firsts = [], [], 0, []
    for q in load_questions(Path(data))[: limit or None]:
        t, c = time.perf_counter(), time.process_time()
        top = retriever.retrieve(q.completed)
        lat.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        hits += bool(top) and page_key(top[0].node.metadata["url"]) in gold_keys(q.gold_urls)
        firsts.append(top[0].node.node_id if top else None)
    lat.sort()
    cpu.sort()
    return {"p50": lat[len(lat) // 2], "p95": lat[int(len(lat) * 0.95)], "cpu_p50": cpu[len(cpu) // 2],
            "p_at_1": hits / len(lat), "questions": len(lat), "firsts": firsts}  # fmt: skip


def own_tops(folder: str) -> List[str]:
    from llama_index_ragonite import EvidenceStore, HybridRetriever
    from llama_index_ragonite.parsing.loaders import load_pages

    store = EvidenceStore(folder)
    store.ingest(load_pages(SAMPLE_WIKI), show_progress=False)
    retriever = HybridRetriever.from_store(store)
    return [retriever.retrieve(q)[0].node.get_content()[:120] for _, q, _ in OWN_QUESTIONS]


def answer_step(store: str, data: str, limit: Optional[int]) -> dict:

    from llama_index_ragonite.bench.confquestions import load_questions
    from llama_index_ragonite.models.extractive.answerer import ExtractiveAnswerer
    from llama_index_ragonite.prompts import ANSWER_PROMPT, format_sources

    retriever = _retriever(store)
    questions = [q.completed for q in load_questions(Path(data))][: limit or None]
    try:  # this tree: the engine's offline answer step
        from llama_index_ragonite.models.synthesizers import ExtractiveSynthesizer

        synthesizer = ExtractiveSynthesizer(ExtractiveAnswerer(embed_model=retriever.embed_model))

        def answer(question, nodes):
            return synthesizer.answer(question, nodes)

    except ImportError:  # a baseline before the synthesizers: the answerer reads the answer prompt
        answerer = ExtractiveAnswerer()

        def answer(question, nodes):
            return answerer.complete(ANSWER_PROMPT.format(sources=format_sources(nodes), history="", question=question))

    answer(questions[0], retriever.retrieve(questions[0]))  # models loaded before timing
    seconds = []
    for question in questions:
        nodes = retriever.retrieve(question)
        started = time.perf_counter()
        answer(question, nodes)
        seconds.append(time.perf_counter() - started)
    ordered = sorted(seconds)
    return {"questions": len(ordered), "p50": statistics.median(ordered) * 1000,
            "p95": ordered[int(0.95 * (len(ordered) - 1))] * 1000, "mean": statistics.fmean(ordered) * 1000}  # fmt: skip


# The run and its report ----------------------------------------------------------------------------------


def run(bench) -> List[str]:
    steps, data, limit = bench.opts["steps"], str(bench.data), bench.limit
    codes = {"base": bench.base, "new": None}

    def both(function: str, **kwargs: Any) -> Dict[str, Any]:
        """``function`` in a child of each code, base first; ``{code}`` in a text argument names the code."""
        return {label: bench.call(function, code, **{k: v.format(code=label) if isinstance(v, str) else v
                                                      for k, v in kwargs.items()}) for label, code in codes.items()}  # fmt: skip

    with tempfile.TemporaryDirectory(prefix="speed-vs-base-") as tmp:
        if "build" in steps:
            builds, store = both("build", data=data, folder=tmp + "/{code}"), tmp + "/{code}/retrieval-ALL"
            lines = [f"Stores: each code's own, built in a temporary folder ({builds['new']['evidences']} evidences)."]
            lines += build_table(builds)
        else:
            store = str(bench.store_path)
            lines = [f"Store: `{bench.store_path.name}` ({len(bench.store)} evidences), opened by both codes."]
        if "query" in steps:
            lines += query_table(
                [both("query", store=store, data=data, limit=limit) for _ in range(bench.opts["rounds"])]
            )
        if "own" in steps:
            lines += own_table(both("own_tops", folder=tmp + "/own-{code}"))
        if "answer" in steps:
            lines += answer_table(both("answer_step", store=store, data=data, limit=limit), bench.base_commit)
    return lines


def build_table(builds: Dict[str, dict]) -> List[str]:
    b, n = builds["base"], builds["new"]
    lines = [
        "",
        "## Building the store (ALL context; model loading included, as a first `ragonite index` pays it)",
        "",
        "| code | evidences | CPU s | wall s | " + " | ".join(f"{k} (wall s)" for k in n["steps"]) + " |",
        "|---|---:|---:|---:|" + "---:|" * len(n["steps"]),
    ]
    for label, r in builds.items():
        steps = " | ".join(f"{r['steps'].get(k, 0):.1f}" for k in n["steps"])
        lines.append(f"| {label} | {r['evidences']} | {r['cpu']:.1f} | {r['seconds']:.1f} | {steps} |")
    embed = n["steps"].get("embed", 0) / max(b["steps"].get("embed", 0), 1e-9)
    return lines + [
        "",
        f"Build new/base: CPU time **{n['cpu'] / b['cpu']:.2f}**, wall time {n['seconds'] / b['seconds']:.2f}; "
        f"embedding step (wall) {embed:.2f}.",
    ]


def query_table(rounds: List[Dict[str, dict]]) -> List[str]:
    lines = [
        "",
        f"## Hybrid retrieval, {rounds[0]['new']['questions']} gold completed questions ({len(rounds)} round(s), "
        "alternating)",
        "",
        "| code | round | P@1 | p50 ms | p95 ms | CPU p50 ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for i, pair in enumerate(rounds, 1):
        lines += [f"| {label} | {i} | {r['p_at_1']:.3f} | {1000 * r['p50']:.1f} | {1000 * r['p95']:.1f} "
                  f"| {1000 * r['cpu_p50']:.1f} |" for label, r in pair.items()]  # fmt: skip

    def ratios(key: str) -> str:
        return ", ".join(f"{pair['new'][key] / pair['base'][key]:.2f}" for pair in rounds)

    best = {label: min(pair[label]["p50"] for pair in rounds) for label in rounds[0]}
    mean = {label: statistics.fmean(pair[label]["p50"] for pair in rounds) for label in rounds[0]}
    firsts = [r["firsts"] for r in rounds[0].values()]
    return lines + [
        "",
        f"p50 new/base per round: wall {ratios('p50')}, CPU {ratios('cpu_p50')}; p95 wall {ratios('p95')}; "
        f"best rounds (wall): **{best['new'] / best['base']:.2f}**; mean p50 over the rounds: base "
        f"{1000 * mean['base']:.1f} ms, new {1000 * mean['new']:.1f} ms ({mean['new'] / mean['base']:.2f}).",
        "",
        f"Same top hit (round 1): {sum(a == b for a, b in zip(*firsts))} of {len(firsts[0])} questions.",
    ]


def own_table(tops: Dict[str, List[str]]) -> List[str]:
    lines = ["", "## Own questions over examples/sample_wiki: top evidence", "",
             "| question | base | new | same |", "|---|---|---|---|"]  # fmt: skip
    for (_, question, _), bt, nt in zip(OWN_QUESTIONS, tops["base"], tops["new"]):
        same = "yes" if bt == nt else "no"
        lines.append(f"| {table_cell(question, 90)} | {table_cell(bt, 70)} | {table_cell(nt, 70)} | {same} |")
    same = sum(b == n for b, n in zip(tops["base"], tops["new"]))
    return lines + ["", f"Same top evidence for {same} of {len(OWN_QUESTIONS)} own questions."]


def answer_table(stats: Dict[str, dict], base_commit: str) -> List[str]:
    b, n = stats["base"], stats["new"]
    return [
        "",
        f"## Offline answer step ({n['questions']} gold completed questions in conversation order, retrieval "
        "untimed; one child process per code, base first)",
        "",
        "| answer step | p50 ms | p95 ms | mean ms |",
        "|---|---:|---:|---:|",
        f"| baseline ({base_commit}) | {b['p50']:.1f} | {b['p95']:.1f} | {b['mean']:.1f} |",
        f"| this tree | {n['p50']:.1f} | {n['p95']:.1f} | {n['mean']:.1f} |",
        f"| ratio this tree / baseline | {n['p50'] / b['p50']:.2f} | {n['p95'] / b['p95']:.2f} | "
        f"{n['mean'] / b['mean']:.2f} |",
        "",
        "Issue 45's goal: p50 of the answer step ≤ 300 ms on 2 cores.",
    ]
