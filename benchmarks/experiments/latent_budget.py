"""The latent-term search's postings budget on real text.

``LatentTermIndex`` reads at most ``postings_budget`` postings of the query's rarest latent terms and
scores only its ``candidates`` best rows exactly (``index/latent.py``, ``_candidates``). A real store
needs that only beyond about 30k evidences, so on ConfQuestions (3,361 evidences) the shipped search is
exact. To see what the bound costs where it binds, this forces it on the ConfQuestions ALL store (600
gold completed questions) at budgets given as a fraction of the store's size: at 1M synthetic
evidences the default budget (1,000,000) is 1x the store, and the query's postings are about 40x (the
``scaling`` experiment). The same for the own questions over ``examples/sample_wiki`` (pages
ConfQuestions never asks about): same top evidence as the exact search or not.
"""

from __future__ import annotations

import time
from typing import Dict, List

import numpy as np
from harness.own_questions import OWN_QUESTIONS, SAMPLE_WIKI
from llama_index.core.schema import QueryBundle

from llama_index_ragonite.bench.metrics import gold_keys, mean, precision_at_1
from llama_index_ragonite.index.latent import LatentTermIndex
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.parsing.loaders import load_pages
from llama_index_ragonite.retrieval.retriever import HybridRetriever

# (label, budget as a multiple of the store's evidences or None for the shipped default, candidates or a fraction)
VARIANTS = [
    ("shipped default (exact here)", None, None),
    ("budget 2.5x evidences, 1,000 candidates", 2.5, 1000),
    ("budget 1x evidences, 1,000 candidates", 1.0, 1000),
    ("budget 1x evidences, candidates 1% of evidences", 1.0, 0.01),
    ("budget 1x evidences, candidates 0.1% of evidences (at least 10): the defaults at 1M", 1.0, 0.001),
]


def bounded(store: EvidenceStore, budget, candidates) -> HybridRetriever:
    """The retriever over ``store`` with the bound set on its latent index (None: the class defaults)."""
    retriever = HybridRetriever.from_store(store, k_lexical=10, k_dense=10, top_n=10)
    latent, size = retriever.latent, len(retriever.latent)
    latent.postings_budget = LatentTermIndex.postings_budget if budget is None else max(1, int(budget * size))
    latent.candidates = (LatentTermIndex.candidates if candidates is None
                         else int(candidates) if candidates >= 1 else max(10, int(candidates * size)))  # fmt: skip
    return retriever


def measure(store: EvidenceStore, questions, budget, candidates, exact_latent: Dict[str, List[str]]):
    """Hybrid P@1 rows, the latent side's recall@10 vs exact (alone; with the other rankings' hits), p50."""
    retriever = bounded(store, budget, candidates)
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
    return rows, mean(alone), mean(joined), float(np.median(seconds))


def own_tops(store: EvidenceStore, budget, candidates) -> List[str]:
    retriever = bounded(store, budget, candidates)
    tops = [(retriever.retrieve(question) or [None])[0] for _, question, _ in OWN_QUESTIONS]
    return [hit.node.node_id if hit else "" for hit in tops]


def run(bench) -> List[str]:
    store, questions = bench.store, bench.questions()
    own = EvidenceStore(bench.cache / "latent-budget-sample-wiki")
    own.ingest(load_pages(SAMPLE_WIKI), remove_missing=True)
    exact_latent: Dict[str, List[str]] = {}
    lines = [
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
        same = sum(a == b for a, b in zip(own_tops(own, budget, candidates), exact_own))
        cells = [mean([p for _, p in rows]), *(mean([p for lang, p in rows if lang == x]) for x in ("en", "de"))]
        lines.append(f"| {label} | " + " | ".join(f"{c:.3f}" for c in cells)
                     + f" | {alone:.3f} | {joined:.3f} | {p50 * 1000:.2f} | {same}/{len(exact_own)} |")  # fmt: skip
    return lines
