"""Scaling: retrieval latency, build, memory and disk from 10k to 1M evidences.

Synthetic wiki pages drawn from a seed (``harness/synthetic.py``) are written with the store's own parts
(``EvidenceStore``'s Chroma collection, ``LexicalIndex``, ``LatentTermIndex``) and read back by
``HybridRetriever.from_store``; no encoder time is in any number. Each size is built by two child
processes at once (``bench.call``: build throughput, peak RSS) and queried in a third (a fresh reader, as
a server opening the store; warm-up queries first, then per-side and fused latency). Stores stay under
``--cache``/scaling; ``reuse`` queries them without rebuilding, ``build_only`` builds and stops.
``dense_payload`` ``ids`` writes vectors and ids only to Chroma (faster; queries read only those).
The report's plot is written beside ``--out``.

    nice -n 5 python benchmarks/run.py scaling --out benchmarks/results/scaling.md
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np
from harness.synthetic import Corpus, synthetic_embedding

OPTIONS = {"sizes": (10000, 100000, 1000000), "queries": 300, "seed": 0, "reuse": False, "build_only": False,
           "dense_payload": "full"}  # fmt: skip
CHUNK = 5000  # evidences written per batch (nodes are dropped after each)
SIDES = ("lexical", "latent", "dense", "titles", "fused")


def rss_kinds() -> Dict[str, float]:
    """The reader's resident memory now, by kind (Linux): private (its own heap: Chroma's graph, the node table)
    and mapped files (the store's files it has read through its maps: page cache, shared by every reader)."""
    try:
        status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
        return {
            "private_mb": int(status["RssAnon"].split()[0]) / 1024,
            "mapped_mb": int(status["RssFile"].split()[0]) / 1024,
        }
    except (OSError, KeyError, ValueError):
        return {}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def build(folder: str, size: int, seed: int, queries: int, part: str, payload: str = "full") -> Dict[str, Any]:
    """Write one part of a synthetic store with the store's own code; returns seconds per step, RSS.

    ``part``: "vectors" (the Chroma collection) or "terms" (BM25, latent terms, the manifest): two processes
    generate the same pages and write different files, so their peak memory is not added up (one process
    holding a 1M store would need more than the 12 GB this benchmark may take). ``payload`` "ids" writes
    vectors, ids and page ids only to Chroma (queries read nothing else; the full write ran at ~100
    evidences/s on 2 shared cores: a 1M build of 3 hours).
    """
    from llama_index_ragonite.index.store import EvidenceStore

    folder = Path(folder)
    store = EvidenceStore(folder, embed_model=synthetic_embedding())
    store._writing = True  # what EvidenceStore.ingest writes, minus parsing and embedding (no writer lock: two writers)
    corpus = Corpus(size, seed, queries)
    steps = ("generate", "dense (Chroma)") if part == "vectors" else ("generate", "lexical (BM25)", "latent", "persist")
    seconds = dict.fromkeys(steps, 0.0)
    pages: Dict[str, str] = {}
    found: List[Dict[str, Any]] = []
    start = time.perf_counter()
    batch, terms, done = [], [], 0
    clock = time.perf_counter()
    for page_id, nodes, page_terms, page_queries in corpus.pages():
        pages[page_id] = f"synthetic:{seed}:{size}"
        batch += nodes
        terms += page_terms
        found += page_queries
        if len(batch) >= CHUNK:
            seconds["generate"] += time.perf_counter() - clock
            _write_batch(store, part, batch, terms, seconds, payload)
            done += len(batch)
            if done % 50_000 < len(batch):  # progress, for runs of an hour
                print(f"{part}: {done:,} evidences, {time.perf_counter() - start:.0f} s, peak RSS {peak_rss_mb():.0f} MB",
                      file=sys.stderr, flush=True)  # fmt: skip
            batch, terms, clock = [], [], time.perf_counter()
    seconds["generate"] += time.perf_counter() - clock
    _write_batch(store, part, batch, terms, seconds, payload)
    if part == "terms":
        clock = time.perf_counter()
        store.lexical.search("warm up the index", 1)  # compiles BM25, as ingest does
        seconds["lexical (BM25)"] += time.perf_counter() - clock
        clock = time.perf_counter()
        store._write(pages)  # lexical and latent files and the manifest, as ingest does
        seconds["persist"] += time.perf_counter() - clock
        (folder / "queries.json").write_text(json.dumps(found))
    result = {"pages": len(pages), "seconds": time.perf_counter() - start, "parts_s": seconds, "rss_mb": peak_rss_mb()}
    (folder / f"build-{part}.json").write_text(json.dumps(result))  # kept even if the parent is gone
    return result


def _write_batch(store, part: str, nodes, terms, seconds: Dict[str, float], payload: str) -> None:
    if not nodes:
        return

    def ids_only():
        pages = [{"document_id": n.ref_doc_id, "doc_id": n.ref_doc_id, "ref_doc_id": n.ref_doc_id} for n in nodes]
        ids, vectors = [n.node_id for n in nodes], [n.embedding for n in nodes]
        store.vector_store.client.add(ids=ids, embeddings=vectors, metadatas=pages)

    dense = (lambda: store.vector_store.add(nodes)) if payload == "full" else ids_only
    steps = [("dense (Chroma)", dense)] if part == "vectors" else [
        ("lexical (BM25)", lambda: store.lexical.upsert(nodes)),
        ("latent", lambda: store.latent.upsert(nodes, terms)),
    ]  # fmt: skip
    for step, write in steps:
        clock = time.perf_counter()
        write()
        seconds[step] += time.perf_counter() - clock


def build_both(bench, folder: Path, size: int) -> Dict[str, Any]:
    """Both parts at once, in two child processes; the build takes as long as the slower one."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    opts = bench.opts
    start = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        calls = {part: pool.submit(bench.call, "build", folder=str(folder), size=size, seed=opts["seed"],
                                   queries=opts["queries"], part=part, payload=opts["dense_payload"])
                 for part in ("vectors", "terms")}  # fmt: skip
        done = {part: call.result() for part, call in calls.items()}
    wall = time.perf_counter() - start
    return {"size": size, "pages": done["terms"]["pages"], "build_s": wall, "evidences_per_s": size / wall,
            "dense_payload": opts["dense_payload"],
            "parts_s": {**done["vectors"]["parts_s"], **{k: v for k, v in done["terms"]["parts_s"].items() if k != "generate"}},
            "generate_s": {part: d["parts_s"]["generate"] for part, d in done.items()},
            "build_rss_mb": {part: d["rss_mb"] for part, d in done.items()}, "disk_mb": folder_mb(folder)}  # fmt: skip


def measure(folder: str, warmup: int = 5) -> Dict[str, Any]:
    """Open the store as a reader and time fused retrieval on the stored queries, and each side within it.

    Each side's call is timed inside the fused call (the retriever's own side methods, wrapped on
    this instance), so every query runs once and the sides add up to most of the fused time.
    """
    from llama_index.core.schema import QueryBundle

    from llama_index_ragonite.index.store import EvidenceStore
    from llama_index_ragonite.retrieval.retriever import HybridRetriever

    queries = json.loads((Path(folder) / "queries.json").read_text())
    clock = time.perf_counter()
    store = EvidenceStore(folder, embed_model=synthetic_embedding(queries))
    retriever = HybridRetriever.from_store(store, k_lexical=10, k_dense=10, top_n=10)
    for q in queries[:warmup]:  # loads HNSW, the title matrix and the latent matrix
        retriever.retrieve(QueryBundle(q["question"], embedding=q["vector"]))
    open_s = time.perf_counter() - clock
    last: Dict[str, Any] = {}

    def timed(side: str, call):
        def run(*args, **kwargs):
            clock = time.perf_counter()
            found = call(*args, **kwargs)
            last[side] = (time.perf_counter() - clock, found)
            return found

        return run

    for side, call in (("lexical", "retrieve"), ("latent", "retrieve_also"), ("dense", "retrieve")):
        own = retriever.sides[side].retriever  # an instance attribute: the retriever calls it as its own method
        setattr(own, call, timed(side, getattr(own, call)))
    retriever.lexical.search_titles = timed("titles", retriever.lexical.search_titles)
    sides = SIDES
    times: Dict[str, List[float]] = {side: [] for side in sides}
    hits: Dict[str, List[int]] = {side: [] for side in sides if side != "titles"}
    for q in queries:
        last.clear()
        clock = time.perf_counter()
        found = retriever.retrieve(QueryBundle(q["question"], embedding=q["vector"]))
        last["fused"] = (time.perf_counter() - clock, found)
        for side in sides:
            seconds, side_hits = last.get(side, (0.0, []))
            times[side].append(seconds)
            if side in hits:
                ids = [h.node.node_id for h in side_hits]
                hits[side].append(ids.index(q["source"]) + 1 if q["source"] in ids else 0)
    result = {"queries": len(queries), "open_s": open_s, "query_rss_mb": peak_rss_mb(), **rss_kinds()}
    if retriever.latent is not None:  # what the postings budget costs: the latent top 10 against the exact search's
        result["latent_recall"] = latent_recall(retriever, [q["question"] for q in queries])
    for side, lat in times.items():
        result[side] = {"p50_ms": 1000 * float(np.percentile(lat, 50)), "p95_ms": 1000 * float(np.percentile(lat, 95))}
    for side, ranks in hits.items():
        ranks = np.asarray(ranks)
        result[side].update(hits1=float(np.mean(ranks == 1)), hits10=float(np.mean(ranks > 0)))
    return result


def latent_recall(retriever, questions: List[str], k: int = 10) -> Dict[str, float]:
    """Mean overlap of the latent side's top ``k`` with the exact search's, and the share of bounded queries."""
    latent = retriever.latent
    budget, overlap, bounded = latent.postings_budget, [], 0
    for question in questions:
        terms = retriever.embed_model.get_query_terms(question)
        found = {node_id for node_id, _ in latent.search(terms, k)}
        bounded += latent.bounded(terms)
        latent.postings_budget = 2**62  # no bound: the exact product over every row
        exact = {node_id for node_id, _ in latent.search(terms, k)}
        latent.postings_budget = budget
        overlap.append(len(found & exact) / max(1, len(exact)))
    return {"recall": float(np.mean(overlap)), "bounded": bounded / len(questions)}


def report(rows: List[Dict[str, Any]], plot: Optional[Path]) -> List[str]:
    sides = SIDES
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    lines = [
        f"RAM: {ram:.0f} GiB. Synthetic wiki pages from the seed (see `benchmarks/harness/synthetic.py`), written "
        "with the store's own parts (Chroma, `LexicalIndex`, `LatentTermIndex`) and read by `HybridRetriever.from_store` "
        "(k_lexical = k_dense = k_latent = top_n = 10). Query vectors and latent terms are precomputed: "
        "no encoder time is in any number. Latency per query, after 5 warm-up queries, in a fresh reader process; each side is timed inside the fused call (`titles` is the page-title ranking, 0 when a query has no pool).", "",
        "## Retrieval latency (ms, p50 / p95)", "",
        "| evidences | " + " | ".join(sides) + " |", "|---:|" + "---:|" * len(sides),
    ]  # fmt: skip
    for r in rows:
        cells = [f"{r[s]['p50_ms']:.1f} / {r[s]['p95_ms']:.1f}" for s in sides]
        lines.append(f"| {r['size']:,} | " + " | ".join(cells) + " |")
    first, last = rows[0], rows[-1]
    ratio = last["fused"]["p50_ms"] / first["fused"]["p50_ms"]
    lines += ["", f"Fused p50 at {last['size']:,} is {ratio:.1f}x the p50 at {first['size']:,} "
              f"(bound: 10x; {'met' if ratio <= 10 else 'MISSED'}).", "",
              f"Growth of p50 from {first['size']:,} to {last['size']:,} evidences ({last['size'] // first['size']}x): "
              + ", ".join(f"{s} {last[s]['p50_ms'] / first[s]['p50_ms']:.1f}x" for s in sides) + ".", "",
              "## Sanity: the query's source evidence found (hits@1 / hits@10)", "",
              "Latent recall@10 vs exact: the latent side's top 10 against the exact product's over every row "
              "(`LatentTermIndex.postings_budget` bounds a search whose query terms have more postings than the "
              "budget; bounded: the share of queries where it did).", "",
              "| evidences | lexical | latent | dense | fused | latent recall@10 vs exact | bounded |",
              "|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for r in rows:
        cells = [f"{r[s]['hits1']:.2f} / {r[s]['hits10']:.2f}" for s in ("lexical", "latent", "dense", "fused")]
        recall = r.get("latent_recall")
        cells += [f"{recall['recall']:.3f}", f"{recall['bounded']:.0%}"] if recall else ["—", "—"]
        lines.append(f"| {r['size']:,} | " + " | ".join(cells) + " |")
    parts = [p for p in rows[0]["parts_s"] if p != "generate"]
    lines += ["", "## Build, memory, disk", "",
              "Two processes write a store at once, each generating the same pages: one the Chroma collection "
              "(`vectors`), one BM25, the latent terms and the manifest (`terms`). Build s is the wall time; "
              "the step times are each process's own (they share the cores). Chroma payload `full`: vectors, "
              "texts and node metadata, as `EvidenceStore` writes them; `ids`: vectors and ids only (queries read "
              "only ids and distances from Chroma either way).", "",
              "| evidences | pages | Chroma payload | build s | evidences/s | generate s (vectors / terms) | "
              + " | ".join(f"{p} s" for p in parts)
              + " | build peak RSS MB (vectors / terms) | reader peak RSS MB | reader RSS private / mapped files MB | reader open s | disk MB |",
              "|---:|---:|---|" + "---:|" * (7 + len(parts)) + "---:|"]  # fmt: skip
    for r in rows:
        part_cells = " | ".join(f"{r['parts_s'][p]:.0f}" for p in parts)
        gen, rss = r["generate_s"], r["build_rss_mb"]
        lines.append(
            f"| {r['size']:,} | {r['pages']:,} | {r.get('dense_payload', 'full')} | {r['build_s']:.0f} | {r['evidences_per_s']:.0f} | "
            f"{gen['vectors']:.0f} / {gen['terms']:.0f} | {part_cells} | {rss['vectors']:.0f} / {rss['terms']:.0f} | "
            f"{r['query_rss_mb']:.0f} | {r.get('private_mb', float('nan')):.0f} / {r.get('mapped_mb', float('nan')):.0f} | "
            f"{r['open_s']:.1f} | {r['disk_mb']:.0f} |"
        )
    if plot is not None:
        lines += ["", f"![scaling curve]({plot.name})"]
    return lines


def draw(rows: List[Dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["size"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for side in ("lexical", "latent", "dense", "titles", "fused"):
        left.plot(sizes, [r[side]["p50_ms"] for r in rows], marker="o", label=f"{side} p50",
                  linewidth=2.5 if side == "fused" else 1.2)  # fmt: skip
    left.plot(sizes, [r["fused"]["p95_ms"] for r in rows], "k--", marker="x", label="fused p95")
    left.plot(
        sizes, [10 * rows[0]["fused"]["p50_ms"]] * len(rows), ":", color="grey", label="10x fused p50 at smallest"
    )
    left.set(xscale="log", yscale="log", xlabel="evidences", ylabel="ms per query", title="Retrieval latency")
    left.legend(fontsize=8)
    for part in ("vectors", "terms"):
        right.plot(
            sizes, [r["build_rss_mb"][part] / 1024 for r in rows], marker="o", label=f"build peak RSS GiB ({part})"
        )
    right.plot(sizes, [r["query_rss_mb"] / 1024 for r in rows], marker="o", label="reader peak RSS GiB")
    right.plot(sizes, [r["disk_mb"] / 1024 for r in rows], marker="o", label="disk GiB")
    right.plot(sizes, [r["build_s"] / 60 for r in rows], marker="s", label="build minutes")
    right.set(xscale="log", yscale="log", xlabel="evidences", title="Build time, memory, disk")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def measured(bench) -> List[Dict[str, Any]]:
    """Each size built (or reused) and measured in a fresh reader process: one row per size."""
    opts, rows = bench.opts, []
    for size in opts["sizes"]:
        folder = bench.cache / "scaling" / f"seed{opts['seed']}-q{opts['queries']}-{size}"
        built_file = folder / "build.json"
        if opts["reuse"] and built_file.exists():
            built = json.loads(built_file.read_text())
        else:
            print(f"building {size:,} evidences in {folder}", file=sys.stderr, flush=True)
            built = build_both(bench, folder, size)
            built_file.write_text(json.dumps(built))
        if not opts["build_only"]:
            print(f"querying {size:,}", file=sys.stderr, flush=True)
            rows.append({**built, **bench.call("measure", folder=str(folder))})  # a fresh process: clean RSS
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def run(bench):
    rows = measured(bench)
    if not rows:
        return [
            f"Built {', '.join(f'{s:,}' for s in bench.opts['sizes'])} evidences under `{bench.cache / 'scaling'}`."
        ]
    plot = bench.out.with_suffix(".png") if bench.out else None
    if plot:
        draw(rows, plot)
    return report(rows, plot)
