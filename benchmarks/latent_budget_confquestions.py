"""The latent-term search's postings budget, checked on real text: ConfQuestions and the own questions.

Usage:
    python benchmarks/latent_budget_confquestions.py [--data DIR] [--cache DIR] [--out FILE.md]

``LatentTermIndex`` reads at most ``postings_budget`` postings of the query's rarest latent terms and
scores only its ``candidates`` best rows exactly (``index/latent.py``, ``_candidates``). A real store
needs that only beyond about 30k evidences, so on ConfQuestions (3,361 evidences) the shipped search is
exact. To see what the bound costs where it binds, this script forces it on the ConfQuestions store
(the retrieval benchmark's hybrid + ALL, 600 gold completed questions) at budgets given as a fraction
of the store's size: at 1M synthetic evidences the default budget (1,000,000) is 1x the store, and
the query's postings are about 40x (``benchmarks/scaling.py``). The same is done for the own
questions over ``examples/sample_wiki`` (pages ConfQuestions never asks about): same top evidence as
the exact search or not.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Dict, List

import numpy as np
from harness import default_data, finish_report, repository
from harness.store import build_store
from llama_index.core.schema import QueryBundle

from llama_index_ragonite.bench.confquestions import load_questions
from llama_index_ragonite.bench.metrics import gold_keys, mean, precision_at_1
from llama_index_ragonite.bench.provenance import machine
from llama_index_ragonite.index.latent import LatentTermIndex
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.parsing.loaders import load_pages
from llama_index_ragonite.retrieval.retriever import HybridRetriever

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.own_questions import OWN_QUESTIONS, SAMPLE_WIKI  # noqa: E402

ROOT = repository(__file__)
# (label, budget as a multiple of the store's evidences or None for the shipped default, candidates or a fraction)
VARIANTS = [
    ("shipped default (exact here)", None, None),
    ("budget 2.5x evidences, 1,000 candidates", 2.5, 1000),
    ("budget 1x evidences, 1,000 candidates", 1.0, 1000),
    ("budget 1x evidences, candidates 1% of evidences", 1.0, 0.01),
    ("budget 1x evidences, candidates 0.1% of evidences (at least 10): the defaults at 1M", 1.0, 0.001),
]


def configure(latent: LatentTermIndex, budget, candidates) -> None:
    """Set the bound on this index (None: the class defaults)."""
    size = len(latent)
    latent.postings_budget = LatentTermIndex.postings_budget if budget is None else max(1, int(budget * size))
    if candidates is None:
        latent.candidates = LatentTermIndex.candidates
    else:
        latent.candidates = int(candidates) if candidates >= 1 else max(10, int(candidates * size))


def measure(store: EvidenceStore, questions, budget, candidates, exact_latent: Dict[str, List[str]]):
    """Hybrid P@1 rows, the latent side's recall@10 vs exact (alone; with the other rankings' hits), p50."""
    retriever = HybridRetriever.from_store(store, k_lexical=10, k_dense=10, top_n=10)
    configure(retriever.latent, budget, candidates)
    rows, alone, joined, seconds = [], [], [], []
    for q in questions:
        terms = retriever.embed_model.get_query_terms(q.completed)
        if q.completed not in exact_latent:  # the first variant is the shipped (exact) search
            exact_latent[q.completed] = [n for n, _ in retriever.latent.search(terms, 10)]
        exact = set(exact_latent[q.completed])
        alone.append(len(exact & {n for n, _ in retriever.latent.search(terms, 10)}) / 10)
        sides = retriever.sides
        others = sides["lexical"].retriever.retrieve(q.completed) + sides["dense"].retriever.retrieve(q.completed)
        clock = time.perf_counter()
        latent = sides["latent"].retriever.retrieve_also(QueryBundle(q.completed), others)
        seconds.append(time.perf_counter() - clock)
        joined.append(len(exact & {hit.node.node_id for hit in latent}) / 10)
        urls = [h.node.metadata["url"] for h in retriever.retrieve(q.completed)]
        rows.append((q.lang, precision_at_1(urls, gold_keys(q.gold_urls))))
    configure(retriever.latent, None, None)
    return rows, mean(alone), mean(joined), float(np.median(seconds))


def own_tops(store: EvidenceStore, budget, candidates) -> List[str]:
    retriever = HybridRetriever.from_store(store, k_lexical=10, k_dense=10, top_n=10)
    configure(retriever.latent, budget, candidates)
    tops = [(retriever.retrieve(question) or [None])[0] for _, question, _ in OWN_QUESTIONS]
    configure(retriever.latent, None, None)
    return [hit.node.node_id if hit else "" for hit in tops]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=default_data(ROOT))
    ap.add_argument("--cache", type=Path, default=ROOT / "benchmarks" / ".cache")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    store, _ = build_store(args.data, args.cache, "ALL", None, "")
    own = EvidenceStore(args.cache / "latent-budget-sample-wiki")
    own.ingest(load_pages(SAMPLE_WIKI), remove_missing=True)
    questions = load_questions(args.data)
    exact_latent: Dict[str, List[str]] = {}
    lines = [
        "# The latent-term search's postings budget on real text",
        "",
        f"Command: `python benchmarks/latent_budget_confquestions.py {' '.join(sys.argv[1:])}`  ",
        f"Machine: {machine()}; load average {load_before:.1f} at the start.  ",
        f"Store: ConfQuestions hybrid + ALL ({len(store)} evidences), the retrieval benchmark's store; "
        f"{len(questions)} gold completed questions. Own questions: {len(OWN_QUESTIONS)} over "
        f"`examples/sample_wiki` ({len(own)} evidences).",
        "",
        "Each row forces the bound of `LatentTermIndex._candidates` on the same store (budget and candidates "
        "relative to its size); the first row is the shipped search, which reads every posting of every "
        "query here. Latent recall@10: the latent side's top 10 against the exact search's, alone (the rarest "
        "terms' candidates) and as the retriever runs it (also scoring the lexical and dense hits); its p50 is "
        "the latter, the query's latent terms included.",
        "",
        "| search | hybrid P@1 | EN | DE | latent recall@10 vs exact: alone | with the other hits | "
        "latent p50 ms | own questions: same top |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    exact_own = own_tops(own, None, None)
    for label, budget, candidates in VARIANTS:
        rows, alone, joined, p50 = measure(store, questions, budget, candidates, exact_latent)
        tops = own_tops(own, budget, candidates)
        same = sum(a == b for a, b in zip(tops, exact_own))
        cells = [mean([p for _, p in rows]), *(mean([p for lang, p in rows if lang == x]) for x in ("en", "de"))]
        lines.append(
            f"| {label} | "
            + " | ".join(f"{c:.3f}" for c in cells)
            + f" | {alone:.3f} | {joined:.3f} | {p50 * 1000:.2f} | "
            f"{same}/{len(tops)} |"
        )
        print(lines[-1], file=sys.stderr, flush=True)
    return finish_report(lines, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
