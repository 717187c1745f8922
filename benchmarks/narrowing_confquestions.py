"""Retrieval as a user who may read half of ConfQuestions' pages: what narrowing costs and what it loses.

Usage:
    python benchmarks/narrowing_confquestions.py [--data DIR] [--store DIR] [--out FILE.md]

A principal may read every other page (page ids sorted, even positions); the other half is
restricted to a group they are not in (an ``AccessMap`` set on the retriever, the cached store
itself untouched). On ConfQuestions' 600 gold-completed questions, in one process:

* cost: p50 and p95 of ``HybridRetriever.retrieve`` (the question's embedding inside the timed
  call), unnarrowed and narrowed, alternating question by question;
* loss: on the questions whose gold page the user may read, P@1 of the narrowed retriever against
  a store built from only the readable pages (``retrieval-ALL-half`` under the cache, built once),
  and how often the two top-10 sets agree (they may differ through BM25's and the latent terms'
  statistics, which are the whole store's: docs/security.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from harness import default_data, finish_report, git_commit, repository, shown
from harness.store import ALL_STORE, open_all_store, settle_vectors

from llama_index_ragonite.bench.confquestions import load_corpus, load_questions
from llama_index_ragonite.bench.metrics import gold_keys, page_key, precision_at_1
from llama_index_ragonite.bench.provenance import machine
from llama_index_ragonite.index.access import AccessMap, Audience, PageAccess, Principal
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.parsing.contextualizer import EvidenceContextualizer
from llama_index_ragonite.retrieval.retriever import HybridRetriever

ROOT = repository(__file__)
USER = Principal.of("reader", ["staff"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=default_data(ROOT))
    ap.add_argument("--store", type=Path, default=ROOT / "benchmarks" / ".cache" / ALL_STORE)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    load, start = os.getloadavg()[0], time.perf_counter()
    store = open_all_store(args.store, args.data)
    pages = sorted(store.page_ids())
    readable, hidden = set(pages[0::2]), set(pages[1::2])
    restricted = AccessMap({page: PageAccess(Audience(groups=frozenset({"board"}))) for page in hidden})

    half_folder = args.store.parent / f"{args.store.name}-half"
    half = EvidenceStore(half_folder, contextualizer=EvidenceContextualizer.from_setting("ALL"))
    half.ingest([d for d in load_corpus(args.data) if d.id_ in readable], remove_missing=True, show_progress=True)
    print(settle_vectors(half_folder), file=sys.stderr)

    wide = HybridRetriever.from_store(store, k_lexical=10, k_dense=10, top_n=10)
    narrow = HybridRetriever.from_store(store, k_lexical=10, k_dense=10, top_n=10, principal=USER)
    narrow.access = restricted
    alone = HybridRetriever.from_store(half, k_lexical=10, k_dense=10, top_n=10)
    for retriever in (wide, narrow, alone):
        retriever.retrieve("warm-up question")

    questions = load_questions(args.data)
    times = {"unnarrowed": [], "narrowed": []}
    p1 = {"narrowed": [], "readable pages only": []}
    agree, leaks = 0, 0
    page_of = store.lexical.node_pages()
    first_node = {}
    for node, page in page_of.items():
        first_node.setdefault(page, node)
    readable_keys = {page_key(store.lexical.get_node(first_node[p]).metadata.get("url", "")) for p in readable}
    for q in questions:
        for name, retriever in (("unnarrowed", wide), ("narrowed", narrow)):
            clock = time.perf_counter()
            hits = retriever.retrieve(q.completed)
            times[name].append(time.perf_counter() - clock)
        leaks += sum(page_of.get(h.node.node_id) in hidden for h in hits)
        gold = gold_keys(q.gold_urls)
        if not gold & readable_keys:
            continue
        own = alone.retrieve(q.completed)
        p1["narrowed"].append(precision_at_1([h.node.metadata.get("url", "") for h in hits], gold))
        p1["readable pages only"].append(precision_at_1([h.node.metadata.get("url", "") for h in own], gold))
        agree += {h.node.node_id for h in hits} == {h.node.node_id for h in own}

    p50 = {name: statistics.median(t) * 1000 for name, t in times.items()}
    p95 = {name: sorted(t)[int(0.95 * len(t))] * 1000 for name, t in times.items()}
    n = len(p1["narrowed"])
    lines = [
        "# Retrieval narrowed to half of ConfQuestions' pages: cost and loss",
        "",
        f"Command: `python benchmarks/narrowing_confquestions.py --out {shown(args.out, ROOT) if args.out else '-'}`  ",
        f"Machine: {machine()}; load average {load:.1f} at start; commit {git_commit()} (plus the working tree); "
        f"wall time {time.perf_counter() - start:.0f} s.  ",
        f"Store: `{shown(args.store, ROOT)}` ({len(pages)} pages, {len(store)} evidences); the user may read "
        f"{len(readable)} pages, {len(hidden)} are restricted to a group they are not in.",
        "",
        "| retrieval | p50 (ms) | p95 (ms) |",
        "|---|---|---|",
        *(f"| {name} | {p50[name]:.1f} | {p95[name]:.1f} |" for name in times),
        f"| narrowed / unnarrowed | {p50['narrowed'] / p50['unnarrowed']:.2f}x | "
        f"{p95['narrowed'] / p95['unnarrowed']:.2f}x |",
        "",
        f"Hits of restricted pages returned to the user over {len(questions)} questions: {leaks}.",
        "",
        f"On the {n} questions whose gold page the user may read:",
        "",
        "| retriever | P@1 |",
        "|---|---|",
        *(f"| {name} | {sum(v) / max(n, 1):.3f} |" for name, v in p1.items()),
        "",
        f"Top-10 sets identical: {agree} of {n} ({agree / max(n, 1):.1%}); they differ through the whole store's "
        "BM25 and latent-term statistics only (docs/security.md).",
    ]
    return finish_report(lines, args.out)


if __name__ == "__main__":
    sys.exit(main())
