"""Retrieval narrowed to half of ConfQuestions' pages: cost and loss.

A principal may read every other page (page ids sorted, even positions); the other half is restricted
to a group they are not in (an ``AccessMap`` set on the retriever, the cached store itself untouched).
On the gold-completed questions, in one process: the cost (p50 and p95 of ``HybridRetriever.retrieve``,
the question's embedding inside the timed call, unnarrowed and narrowed alternating question by
question) and the loss: on the questions whose gold page the user may read, P@1 of the narrowed
retriever against a store built from only the readable pages (``<store>-half``, built once), and how
often the two top-10 sets agree (they may differ through BM25's and the latent terms' statistics,
which are the whole store's: docs/security.md).
"""

from __future__ import annotations

import statistics
import sys
import time

from harness import CHECKOUT, shown
from harness.store import settle_vectors

from llama_index_ragonite.bench.confquestions import load_corpus
from llama_index_ragonite.bench.metrics import gold_keys, page_key, precision_at_1
from llama_index_ragonite.index.access import AccessMap, Audience, PageAccess, Principal
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.parsing.contextualizer import EvidenceContextualizer
from llama_index_ragonite.retrieval.retriever import HybridRetriever

USER = Principal.of("reader", ["staff"])


def run(bench):
    store = bench.store
    pages = sorted(store.page_ids())
    readable, hidden = set(pages[0::2]), set(pages[1::2])
    half_folder = bench.store_path.parent / f"{bench.store_path.name}-half"
    half = EvidenceStore(half_folder, contextualizer=EvidenceContextualizer.from_setting("ALL"))
    half.ingest([d for d in load_corpus(bench.data) if d.id_ in readable], remove_missing=True, show_progress=True)
    print(settle_vectors(half_folder), file=sys.stderr)

    wide, narrow = bench.retriever(), bench.retriever(principal=USER)
    narrow.access = AccessMap({page: PageAccess(Audience(groups=frozenset({"board"}))) for page in hidden})
    alone = HybridRetriever.from_store(half, k_lexical=10, k_dense=10, top_n=10)  # bench.retriever's, on half
    for retriever in (wide, narrow, alone):
        retriever.retrieve("warm-up question")

    questions = bench.questions()
    times = {"unnarrowed": [], "narrowed": []}
    p1 = {"narrowed": [], "readable pages only": []}
    agree, leaks = 0, 0
    page_of = store.lexical.node_pages()
    first_node = {}
    for node, page in page_of.items():
        first_node.setdefault(page, node)
    readable_keys = {page_key(store.lexical.get_node(first_node[p]).metadata.get("url", "")) for p in readable}
    urls = lambda hits: [h.node.metadata.get("url", "") for h in hits]  # noqa: E731
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
        p1["narrowed"].append(precision_at_1(urls(hits), gold))
        p1["readable pages only"].append(precision_at_1(urls(own), gold))
        agree += {h.node.node_id for h in hits} == {h.node.node_id for h in own}

    p50 = {name: statistics.median(t) * 1000 for name, t in times.items()}
    p95 = {name: sorted(t)[int(0.95 * len(t))] * 1000 for name, t in times.items()}
    n = len(p1["narrowed"])
    return [
        f"Store: `{shown(bench.store_path, CHECKOUT)}` ({len(pages)} pages, {len(store)} evidences); the user may "
        f"read {len(readable)} pages, {len(hidden)} are restricted to a group they are not in.",
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
