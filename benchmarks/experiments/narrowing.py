"""Retrieval narrowed to half of ConfQuestions' pages, scored with the reader's own statistics: cost and loss.

A principal may read every other page (page ids sorted, even positions); the other half is restricted
to a group they are not in (an ``AccessMap`` set on the retriever, the cached store itself untouched).
BM25 and the page titles are scored with the statistics of the readable pages (docs/security.md), so
the narrowed retriever should rank as a store built from only those pages (``<store>-half``, built
once). On the gold-completed questions, in one process:

* cost: p50 and p95 of ``HybridRetriever.retrieve`` (the question's embedding inside the timed call),
  unnarrowed and narrowed alternating question by question, once the audience is cached; and the first
  query of each of ``new_audiences`` audiences never seen before (a random half of the pages each);
* loss: on the questions whose gold page the user may read, P@1 of the narrowed retriever and of the
  half store, and how often their top-10 sets agree, with the dense side an exact scan on both sides
  (``ExactDense``: the vectors Chroma holds, cosine over every allowed evidence), so that HNSW's
  approximation in the half store does not count; with the stores' own dense sides for reference.

Then, at ``synthetic_size`` evidences (``harness/synthetic.py``, the lexical index alone): the memory
that ``audiences`` cached audiences hold, the first query of a new audience and the cached p50 against
an unrestricted search.
"""

from __future__ import annotations

import gc
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Callable, Dict, List, Optional

import numpy as np
from harness import CHECKOUT, shown
from harness.store import settle_vectors
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from llama_index_ragonite.bench.confquestions import load_corpus
from llama_index_ragonite.bench.metrics import gold_keys, page_key, precision_at_1
from llama_index_ragonite.index.access import AccessMap, Audience, PageAccess, Principal
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.parsing.contextualizer import EvidenceContextualizer
from llama_index_ragonite.retrieval.retriever import HybridRetriever

OPTIONS = {"new_audiences": 20, "synthetic_size": 100000, "audiences": 50, "seed": 0}
USER = Principal.of("reader", ["staff"])


class ExactDense(BaseRetriever):
    """The dense side as an exact scan: cosine of the question with every allowed evidence's stored vector."""

    def __init__(self, retriever: HybridRetriever, k: int = 10) -> None:
        lexical = retriever.lexical
        assert lexical is not None and retriever.embed_model is not None
        self.lexical, self._embed_model, self.k = lexical, retriever.embed_model, k
        self.ids = lexical.node_ids()
        vectors = retriever.stored_embeddings(self.ids)
        matrix = np.array([vectors[i] for i in self.ids], dtype=np.float64)
        self.matrix = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        self.allowed: Callable = retriever.allowed
        super().__init__()

    @property
    def embed_model(self):
        return self._embed_model

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        query = np.asarray(self._embed_model.get_query_embedding(query_bundle.query_str), dtype=np.float64)
        scores = self.matrix @ (query / np.linalg.norm(query))
        allowed = self.allowed()
        if allowed is not None:
            scores = np.where([i in allowed.nodes for i in self.ids], scores, -np.inf)
        order = [i for i in np.argsort(-scores, kind="stable")[: self.k] if np.isfinite(scores[i])]
        return [NodeWithScore(node=self.lexical.get_node(self.ids[i]), score=float(scores[i])) for i in order]


def exact(retriever: HybridRetriever) -> HybridRetriever:
    assert retriever.built_in is not None
    retriever.built_in.use(dense=ExactDense(retriever))
    return retriever


def ms(times: List[float]) -> Dict[str, float]:
    ordered = sorted(times)
    return {"p50": statistics.median(times) * 1000, "p95": ordered[int(0.95 * (len(ordered) - 1))] * 1000}


def halves(pages: List[str], count: int, seed: int) -> List[AccessMap]:
    """``count`` access maps, each hiding a random half of ``pages`` from ``USER``."""
    rng = np.random.default_rng(seed)
    maps = []
    for _ in range(count):
        hidden = rng.choice(pages, size=len(pages) // 2, replace=False)
        maps.append(AccessMap({page: PageAccess(Audience(groups=frozenset({"board"}))) for page in hidden}))
    return maps


def confquestions(bench) -> List[str]:
    store = bench.store
    pages = sorted(store.page_ids())
    readable, hidden = set(pages[0::2]), set(pages[1::2])
    half_folder = bench.store_path.parent / f"{bench.store_path.name}-half"
    half = EvidenceStore(half_folder, contextualizer=EvidenceContextualizer.from_setting("ALL"))
    half.ingest([d for d in load_corpus(bench.data) if d.id_ in readable], remove_missing=True, show_progress=True)
    print(settle_vectors(half_folder), file=sys.stderr)
    access = AccessMap({page: PageAccess(Audience(groups=frozenset({"board"}))) for page in hidden})

    def narrowed() -> HybridRetriever:
        retriever = bench.retriever(principal=USER)
        retriever.access = access
        return retriever

    def alone() -> HybridRetriever:
        return HybridRetriever.from_store(half, k_lexical=10, k_dense=10, top_n=10)  # bench.retriever's, on half

    wide, narrow, own = bench.retriever(), narrowed(), alone()
    narrow_exact, own_exact = exact(narrowed()), exact(alone())
    for retriever in (wide, narrow, own, narrow_exact, own_exact):
        retriever.retrieve("warm-up question")

    questions = bench.questions()
    times: Dict[str, List[float]] = {"unnarrowed": [], "narrowed": []}
    p1: Dict[str, List[float]] = {name: [] for name in ("narrowed", "readable pages only")}
    p1_exact: Dict[str, List[float]] = {name: [] for name in p1}
    agree = agree_exact = leaks = dense_exact = 0
    page_of = store.lexical.node_pages()
    first_node: Dict[Optional[str], str] = {}
    for node, page in page_of.items():
        first_node.setdefault(page, node)
    readable_keys = {page_key(store.lexical.get_node(first_node[p]).metadata.get("url", "")) for p in readable}
    urls = lambda hits: [h.node.metadata.get("url", "") for h in hits]  # noqa: E731
    ids = lambda hits: {h.node.node_id for h in hits}  # noqa: E731
    for q in questions:
        for name, retriever in (("unnarrowed", wide), ("narrowed", narrow)):
            clock = time.perf_counter()
            hits = retriever.retrieve(q.completed)
            times[name].append(time.perf_counter() - clock)
        leaks += sum(page_of.get(h.node.node_id) in hidden for h in hits)
        chroma_dense = narrow.sides["dense"].retriever.retrieve(q.completed)  # Chroma asked with ids=
        dense_exact += [h.node.node_id for h in chroma_dense] == [
            h.node.node_id for h in narrow_exact.sides["dense"].retriever.retrieve(q.completed)
        ]
        gold = gold_keys(q.gold_urls)
        if not gold & readable_keys:
            continue
        theirs, theirs_exact = own.retrieve(q.completed), own_exact.retrieve(q.completed)
        mine = narrow_exact.retrieve(q.completed)
        p1["narrowed"].append(precision_at_1(urls(hits), gold))
        p1["readable pages only"].append(precision_at_1(urls(theirs), gold))
        p1_exact["narrowed"].append(precision_at_1(urls(mine), gold))
        p1_exact["readable pages only"].append(precision_at_1(urls(theirs_exact), gold))
        agree += ids(hits) == ids(theirs)
        agree_exact += ids(mine) == ids(theirs_exact)

    firsts = []
    for access_map in halves(pages, bench.opts["new_audiences"], bench.opts["seed"]):
        retriever = bench.retriever(principal=USER)
        retriever.access = access_map
        clock = time.perf_counter()
        retriever.retrieve(questions[len(firsts) % len(questions)].completed)
        firsts.append(time.perf_counter() - clock)

    cost = {name: ms(t) for name, t in times.items()}
    n = len(p1["narrowed"])
    rate = lambda values: sum(values) / max(len(values), 1)  # noqa: E731
    return [
        f"Store: `{shown(bench.store_path, CHECKOUT)}` ({len(pages)} pages, {len(store)} evidences); the user may "
        f"read {len(readable)} pages, {len(hidden)} are restricted to a group they are not in.",
        "",
        "| retrieval (audience cached) | p50 (ms) | p95 (ms) |",
        "|---|---|---|",
        *(f"| {name} | {c['p50']:.1f} | {c['p95']:.1f} |" for name, c in cost.items()),
        f"| narrowed / unnarrowed | {cost['narrowed']['p50'] / cost['unnarrowed']['p50']:.2f}x | "
        f"{cost['narrowed']['p95'] / cost['unnarrowed']['p95']:.2f}x |",
        "",
        f"First query of a new audience ({len(firsts)} audiences, each a random half of the pages; the readable set, "
        f"row masks and statistics computed inside the timed call): median {statistics.median(firsts) * 1000:.0f} ms, "
        f"max {max(firsts) * 1000:.0f} ms.",
        "",
        f"Hits of restricted pages returned to the user over {len(questions)} questions: {leaks}. The narrowed "
        f"dense side (Chroma asked with `ids=` the allowed evidences) returned the exact scan's top 10, in order, "
        f"for {dense_exact} of {len(questions)} questions.",
        "",
        f"On the {n} questions whose gold page the user may read:",
        "",
        "| dense side | narrowed P@1 | readable pages only P@1 | difference | top-10 sets identical |",
        "|---|---|---|---|---|",
        f"| exact scan on both sides | {rate(p1_exact['narrowed']):.3f} | {rate(p1_exact['readable pages only']):.3f} | "
        f"{abs(rate(p1_exact['narrowed']) - rate(p1_exact['readable pages only'])):.3f} | "
        f"{agree_exact} of {n} ({agree_exact / max(n, 1):.1%}) |",
        f"| each store's own (Chroma `ids=` / HNSW) | {rate(p1['narrowed']):.3f} | "
        f"{rate(p1['readable pages only']):.3f} | "
        f"{abs(rate(p1['narrowed']) - rate(p1['readable pages only'])):.3f} | {agree} of {n} ({agree / max(n, 1):.1%}) |",
    ]


def synthetic(size: int, count: int, seed: int) -> List[str]:
    """The lexical index of ``size`` synthetic evidences: ``count`` audiences' cache and query cost."""
    from harness.synthetic import Corpus

    from llama_index_ragonite.index.lexical import LexicalIndex

    corpus, lexical, pages, questions = Corpus(size, seed, 300), LexicalIndex(), {}, []
    clock = time.perf_counter()
    for page_id, nodes, _, queries in corpus.pages():
        lexical.upsert(nodes)
        pages[page_id] = [n.node_id for n in nodes]
        questions.extend(q["question"] for q in queries)
    with tempfile.TemporaryDirectory() as folder:  # read back as a server reads a store: the counts as written
        lexical.persist(Path(folder) / "lexical")
        built = time.perf_counter() - clock
        lexical = LexicalIndex.load(Path(folder) / "lexical")
        return _synthetic_queries(lexical, size, count, seed, pages, questions, built)


def _synthetic_queries(lexical, size: int, count: int, seed: int, pages: dict, questions: list, built: float):
    lexical.search("warm-up", 10)
    rng, page_ids = np.random.default_rng(seed), sorted(pages)
    audiences = []
    for _ in range(count):
        chosen = rng.choice(len(page_ids), size=len(page_ids) // 2, replace=False)
        audiences.append(frozenset(n for i in chosen for n in pages[page_ids[i]]))
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    firsts = []
    for n, audience in enumerate(audiences):
        clock = time.perf_counter()
        lexical.search(questions[n % len(questions)], 10, audience, audience)
        firsts.append(time.perf_counter() - clock)
    gc.collect()
    cached = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    sets = sum(sys.getsizeof(a) for a in audiences)
    times: Dict[str, List[float]] = {"unrestricted": [], "audience (cached)": []}
    for n, question in enumerate(questions):
        audience = audiences[n % count]
        for name, args in (("unrestricted", ()), ("audience (cached)", (audience, audience))):
            clock = time.perf_counter()
            lexical.search(question, 10, *args)
            times[name].append(time.perf_counter() - clock)
    cost = {name: ms(t) for name, t in times.items()}
    per_hidden, by_hidden = timing_channel(size)
    return [
        f"At {size:,} synthetic evidences ({len(pages):,} pages; `harness/synthetic.py`, seed {seed}; the lexical "
        f"index alone, built and written in {built:.0f} s, then read back as a server reads it), {count} audiences of a random half of the pages each:",
        "",
        f"- memory the {count} cached audiences hold (row masks and statistics, measured with tracemalloc): "
        f"{cached / 2**20:.1f} MiB ({cached / count / 2**20:.2f} MiB each); the audiences' own id sets, which the "
        f"narrowing caches hold whatever the scoring: {sets / 2**20:.1f} MiB;",
        f"- first query of a new audience: median {statistics.median(firsts) * 1000:.0f} ms, max "
        f"{max(firsts) * 1000:.0f} ms;",
        f"- BM25 p50 over {len(questions)} queries: unrestricted {cost['unrestricted']['p50']:.2f} ms, audience "
        f"(cached) {cost['audience (cached)']['p50']:.2f} ms "
        f"({cost['audience (cached)']['p50'] / cost['unrestricted']['p50']:.2f}x); p95 "
        f"{cost['unrestricted']['p95']:.2f} and {cost['audience (cached)']['p95']:.2f} ms;",
        f"- the timing channel: an audience search reads each query term's postings, hidden rows included, so its "
        f"time grows with how many hidden evidences hold the term: {per_hidden * 1e9:.1f} ns per hidden posting "
        f"(one term, 100 readable holders; median of 200 runs each: "
        + ", ".join(f"{h:,} hidden {t * 1e6:.0f} us" for h, t in by_hidden.items())
        + ").",
    ]


def timing_channel(rows: int, visible: int = 100, hidden=(0, 1000, 10000, 50000), repeats: int = 200) -> tuple:
    """Seconds per hidden posting of one query term in an audience search (``audience_scores``, the code a
    restricted user's BM25 runs): one term held by ``visible`` readable rows and each count of hidden rows, in
    an index of ``rows`` rows; the median time of each, and the least-squares slope over them."""
    from llama_index_ragonite.index.term_counts import TermCounts, audience_of, audience_scores

    medians = []
    for count in hidden:
        holders = np.arange(visible + count, dtype=np.int32)  # the first rows hold the term; the visible first
        counts = TermCounts(np.array([0, len(holders)]), holders, np.ones(len(holders), np.uint8), np.full(rows, 20))
        mask = np.zeros(rows, dtype=bool)
        mask[:visible] = True
        mask[visible + count :] = True  # the rest of the index is readable too: only the term's hidden rows differ
        audience = audience_of(counts, mask)
        times = []
        for _ in range(repeats):
            clock = time.perf_counter()
            audience_scores(counts, [0], audience, 1.5, 0.75, "lucene")
            times.append(time.perf_counter() - clock)
        medians.append(statistics.median(times))
    slope = float(np.polyfit(np.array(hidden, dtype=float), np.array(medians), 1)[0])
    return slope, dict(zip(hidden, medians))


def run(bench):
    lines = confquestions(bench)
    opts = bench.opts
    return [*lines, "", *synthetic(int(opts["synthetic_size"]), int(opts["audiences"]), int(opts["seed"]))]
