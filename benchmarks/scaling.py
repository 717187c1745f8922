"""How retrieval scales: synthetic wiki pages at 10k, 100k and 1M evidences, through the real index.

    nice -n 5 python benchmarks/scaling.py --sizes 10000,100000,1000000 --queries 300 --seed 0 \
        --out benchmarks/results/scaling.md [--reuse]

Why synthetic: ConfQuestions has 3,361 evidences; a deployment indexes a whole wiki. The pages are
drawn from a seed (passages, list items and table rows; English with some German pages; a Zipf
vocabulary whose tail keeps growing with the corpus, as real vocabularies do) and written with the
store's own parts — ``EvidenceStore``'s Chroma collection, ``LexicalIndex`` (BM25) and
``LatentTermIndex`` — then read back by ``HybridRetriever.from_store``. The encoder is left out on
purpose, so the curve measures the index: dense vectors are seeded unit vectors clustered by topic and
page, latent terms seeded sparse vectors with the real model's 256 terms per evidence (Zipf-like over
the 16,384 ids, plus topic and page ids), and each query carries its precomputed vector and terms.

Each size is built in one child process (build throughput, peak RSS) and queried in another (a fresh
reader, as a server opening the store; warm-up queries first, then per-side and fused latency).
Built stores stay under ``benchmarks/.cache/scaling``; ``--reuse`` queries them without rebuilding.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "benchmarks" / ".cache" / "scaling"
DIM = 384
LATENT_DIM = 16384
TERMS = 256  # TOP_TERMS in models/e5.py: every evidence and query keeps its 256 heaviest terms
CHUNK = 5000  # evidences written per batch (nodes are dropped after each)
MODEL_NAME = "synthetic-384"

ENGLISH = """the of and to a in is for on with as by that this it be are from at or an not can if you
will use new all when which your has should set need before after then also only more one two
install server build test release configure network update user page file version system image
kernel driver support guest service disk storage backup policy access account group role client
host cluster node database query index search cache log error warning debug option parameter value
default required optional command script package repository branch commit merge review ticket bug
fix issue feature plan meeting notes team project status owner date week month deploy upgrade
migrate restore monitor alert metric report dashboard template document workflow approval budget
contract vendor license security certificate key token password login proxy firewall port address
interface bridge switch router cable power boot firmware bios memory cpu usb display audio input
output mode profile setting menu button window dialog screen mobile desktop browser api endpoint
request response timeout retry limit quota schedule job task queue worker event message mail
calendar holiday leave travel expense invoice payment customer partner training onboarding
handbook guideline process procedure step check verify enable disable start stop restart remove
create delete edit open close save export import sync copy move rename share permission""".split()
GERMAN = """der die das und ist nicht mit für auf den dem im zu von wird werden eine einer ein wie
bei nach oder auch sind kann muss soll über unter Anleitung Einstellung Server Benutzer Zugang
Konto Gruppe Rolle Sicherung Wiederherstellung Netzwerk Drucker Rechner Anmeldung Passwort
Freigabe Bestellung Rechnung Urlaub Antrag Vertrag Abteilung Besprechung Protokoll Termin Fehler
Lösung Schritt Hinweis Version Installation Aktualisierung Konfiguration Überwachung Berechtigung
Schulung Handbuch Richtlinie Vorlage Genehmigung Kunde Lieferant Zertifikat Schlüssel Dienst""".split()
SYLLABLES = (
    "ka lo mi ne ru ta vo xe zi bra cor del fen gar hix jun kel lum mor nex pol quin rax sel tor ulm ver wyn".split()
)
HEADINGS = "Overview Installation Configuration Usage Troubleshooting Requirements Notes Release Known Issues Test Results Procedure Reference Contacts FAQ Changelog".split()
COLUMNS = "Name Version Status Owner Platform Build Date Result Component Priority Comment Host Port Value".split()
STATUS = "Pass Fail N/A Done Open Closed Blocked Yes No".split()


def zipf_ranks(rng: np.random.Generator, exponent: float, count: int, size) -> np.ndarray:
    """Ranks 0..count-1 drawn with probability ~ 1 / (rank + 1) ** exponent (inverse CDF, continuous)."""
    top = count ** (1 - exponent)
    ranks = ((top - 1) * rng.random(size) + 1) ** (1 / (1 - exponent)) - 1
    return np.minimum(ranks.astype(np.int64), count - 1)


@functools.lru_cache(maxsize=200_000)
def tail_word(rank: int) -> str:
    """The vocabulary's long tail: rank -> a made-up technical word (deterministic, unbounded)."""
    word, n = "", rank + 1
    while n:
        n, r = divmod(n - 1, len(SYLLABLES))
        word += SYLLABLES[r]
    return word


class Vocabulary:
    """Zipf sampling over common English (or German) words and an unbounded tail of technical words."""

    def __init__(self, rng: np.random.Generator, topics: int) -> None:
        self.topic_words = zipf_ranks(rng, 1.1, 2_000_000, (topics, 40)) + 200  # tail ranks each topic favours
        self.topic_latent = rng.choice(np.arange(600, LATENT_DIM), size=(topics, 300))
        self.identifiers = [identifier(rng) for _ in range(50_000)]

    def stream(self, rng: np.random.Generator, topic: int, german: bool) -> "WordStream":
        return WordStream(self, rng, topic, german)


class WordStream:
    """One page's words, drawn in bulk (55% common words, 30% the topic's, 10% the general tail, 5% identifiers)."""

    def __init__(self, vocab: Vocabulary, rng: np.random.Generator, topic: int, german: bool) -> None:
        self.vocab, self.rng, self.topic, self.german = vocab, rng, topic, german
        self.words: List[str] = []
        self.at = 0

    def take(self, n: int) -> List[str]:
        if self.at + n > len(self.words):
            self.words, self.at = self.words[self.at :] + self._draw(max(n, 600)), 0
        self.at += n
        return self.words[self.at - n : self.at]

    def _draw(self, n: int) -> List[str]:
        rng, common = self.rng, GERMAN if self.german else ENGLISH
        kind = rng.random(n)
        common_rank = zipf_ranks(rng, 0.9, len(common), n)
        topic_rank = self.vocab.topic_words[self.topic, rng.integers(40, size=n)]
        tail_rank = zipf_ranks(rng, 1.1, 20_000_000, n) + 200
        ident = rng.integers(len(self.vocab.identifiers), size=n)
        out = []
        for k, c, t, g, i in zip(
            kind.tolist(), common_rank.tolist(), topic_rank.tolist(), tail_rank.tolist(), ident.tolist()
        ):
            if k < 0.55:
                out.append(common[c])
            elif k < 0.85:
                out.append(tail_word(t))
            elif k < 0.95:
                out.append(tail_word(g))
            else:
                out.append(self.vocab.identifiers[i])
        return out


def identifier(rng: np.random.Generator) -> str:
    """Version strings, config keys, ticket ids and error codes: what wiki questions are full of."""
    pick = rng.integers(4)
    if pick == 0:
        return ".".join(str(x) for x in rng.integers(0, 12, size=rng.integers(2, 4)))
    if pick == 1:
        return f"{tail_word(int(rng.integers(40)))}.{tail_word(int(rng.integers(200)))}"
    if pick == 2:
        return f"{tail_word(int(rng.integers(30))).upper()}-{rng.integers(1, 9999)}"
    return f"E{rng.integers(1000, 99999)}"


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


class Corpus:
    """Pages, evidences and queries of one size, all drawn from ``seed`` (page by page, in order)."""

    def __init__(self, size: int, seed: int, queries: int) -> None:
        self.size, self.seed = size, seed
        rng = np.random.default_rng([seed, size])
        self.topics = max(20, size // 400)
        self.vocab = Vocabulary(rng, self.topics)
        self.topic_centroids = unit(rng.standard_normal((self.topics, DIM)))
        self.query_at = set(rng.choice(size, size=min(queries, size), replace=False).tolist())

    def pages(self):
        """Yield (page id, nodes, vectors, latent terms, queries) until ``size`` evidences are made."""
        from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

        made, page = 0, 0
        while made < self.size:
            rng = np.random.default_rng([self.seed, self.size, page])
            count = min(int(np.clip(rng.lognormal(2.3, 0.9), 1, 400)), self.size - made)
            topic = (
                int(zipf_ranks(rng, 1.2, self.topics, 1)[0]) if rng.random() < 0.3 else int(rng.integers(self.topics))
            )
            german = rng.random() < 0.1
            page_id = f"page-{page:07d}"
            words = self.vocab.stream(rng, topic, german)
            title_words = words.take(int(rng.integers(2, 6)))
            title = " ".join(w.capitalize() for w in title_words) + (
                f" {identifier(rng)}" if rng.random() < 0.3 else ""
            )
            meta = {
                "title": title,
                "url": f"https://wiki.example/{page_id}",
                "space": f"S{topic % 50}",
                "date": "2026-01-01",
            }
            texts, kinds, headings = self._evidences(rng, words, count)
            page_centroid = unit(self.topic_centroids[topic] + 0.6 * rng.standard_normal(DIM) / np.sqrt(DIM) * 1.0)
            vectors = unit(page_centroid + 0.45 * rng.standard_normal((count, DIM)) / np.sqrt(DIM) * 1.0)
            page_latent = rng.choice(self.vocab.topic_latent[topic], size=120, replace=False)
            terms = self._latent(rng, topic, page_latent, count)
            ids = [f"{page_id}-{i:04d}" for i in range(count)]
            nodes, queries = [], []
            for i, (text, kind, heading) in enumerate(zip(texts, kinds, headings)):
                before = texts[i - 1][:150] if i else ""
                after = texts[i + 1][:150] if i + 1 < count else ""
                context = f"Page: {title}\nSection: {heading}" + (f"\nBefore: {before}" if before else "")
                context += f"\nAfter: {after}" if after else ""
                node = TextNode(
                    id_=ids[i],
                    text=text,
                    metadata={**meta, "evidence_type": kind, "position": i + 1, "heading_path": heading,
                              "heading": heading, "context": context, "embed_context": f"Page: {title}\nSection: {heading}"},
                    excluded_embed_metadata_keys=[*meta, "evidence_type", "position", "heading_path", "heading", "context"],
                    excluded_llm_metadata_keys=[*meta, "evidence_type", "position", "heading_path", "heading", "embed_context"],
                    metadata_template="{value}",
                )  # fmt: skip
                node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=page_id, metadata=meta)
                if i:
                    node.relationships[NodeRelationship.PREVIOUS] = RelatedNodeInfo(node_id=ids[i - 1])
                if i + 1 < count:
                    node.relationships[NodeRelationship.NEXT] = RelatedNodeInfo(node_id=ids[i + 1])
                node.embedding = vectors[i].tolist()
                nodes.append(node)
                if made + i in self.query_at:
                    queries.append(self._query(rng, words, ids[i], text, vectors[i], terms[i], topic, german))
            yield page_id, nodes, terms, queries
            made += count
            page += 1

    def _evidences(self, rng, words: WordStream, count: int):
        texts, kinds, headings = [], [], []
        heading, columns, row = HEADINGS[0], None, 0
        for _ in range(count):
            if rng.random() < 0.12:
                heading, columns, row = str(rng.choice(HEADINGS)), None, 0
            pick = rng.random()
            if pick < 0.45:  # a passage: 1-4 sentences
                sentences = [words.take(int(n)) for n in rng.integers(6, 25, size=rng.integers(1, 5))]
                texts.append(" ".join(" ".join(s).capitalize() + "." for s in sentences))
                kinds.append("passage")
            elif pick < 0.7:  # a list: 2-8 items
                items = [" ".join(words.take(int(n))) for n in rng.integers(3, 12, size=rng.integers(2, 9))]
                texts.append("\n".join(f"{n}. {item}" for n, item in enumerate(items, 1)))
                kinds.append("list")
            else:  # a table row, read as the parser writes it
                if columns is None:
                    columns, row = list(rng.choice(COLUMNS, size=int(rng.integers(3, 7)), replace=False)), 0
                row += 1
                cells = [self._cell(rng, words) for _ in columns]
                texts.append(f"Row {row} in Table 1: " + ", and ".join(f"{c} is {v}" for c, v in zip(columns, cells)))
                kinds.append("table_row")
            headings.append(heading)
        return texts, kinds, headings

    def _cell(self, rng, words: WordStream) -> str:
        pick = rng.random()
        if pick < 0.3:
            return STATUS[int(pick * 30) % len(STATUS)]
        if pick < 0.5:
            return self.vocab.identifiers[int(pick * 1e9) % len(self.vocab.identifiers)]
        return " ".join(words.take(1 + int(pick * 100) % 3))

    def _latent(self, rng, topic: int, page_latent: np.ndarray, count: int) -> List[Tuple[np.ndarray, np.ndarray]]:
        """256 distinct ids each: page and topic ids first (heaviest), then Zipf-like general ids (the real mix)."""
        draws = np.concatenate([
            rng.choice(page_latent, (count, 70)), rng.choice(self.vocab.topic_latent[topic], (count, 80)),
            zipf_ranks(rng, 1.1, LATENT_DIM, (count, 700)),
        ], axis=1).astype(np.int64)  # fmt: skip
        width = draws.shape[1]
        ranked = np.sort(draws * 1024 + np.arange(width), axis=1)  # by id, then by draw position
        ids, position = ranked >> 10, ranked & 1023
        repeated = np.zeros_like(ids, dtype=bool)
        repeated[:, 1:] = ids[:, 1:] == ids[:, :-1]
        position[repeated] = 1 << 20  # keep each id's first draw only
        first = np.argsort(position, axis=1, kind="stable")[:, :TERMS]
        ids, position = np.take_along_axis(ids, first, 1), np.take_along_axis(position, first, 1)
        weights = -np.sort(-np.clip(rng.lognormal(-0.45, 0.35, (count, TERMS)), 0.4, 2.7), axis=1)
        out = []
        for row, valid in zip(ids, position < 1 << 20):
            if not valid.all():  # rare: top up with unused ids
                spare = np.setdiff1d(rng.choice(LATENT_DIM, 2 * TERMS, replace=False), row[valid])
                row = np.concatenate([row[valid], spare[: TERMS - valid.sum()]])
            out.append(row.astype(np.int32))
        return [(row, w.astype(np.float32)) for row, w in zip(out, weights)]

    def _query(
        self, rng, stream: WordStream, source: str, text: str, vector, terms, topic: int, german: bool
    ) -> Dict[str, Any]:
        """Words of one evidence, shuffled and partly replaced; a vector and terms near the evidence's."""
        words = [w for w in text.replace(",", " ").split() if len(w) > 2 and w.lower() not in ("row", "table", "and")]
        picked = list(rng.permutation(words)[: int(rng.integers(4, 10))]) or words[:1]
        for i in range(len(picked)):
            if rng.random() < 0.2:
                picked[i] = stream.take(1)[0]
        question = ("wie " if german else "how ") + " ".join(picked)
        dense = unit(vector + 0.35 * rng.standard_normal(DIM) / np.sqrt(DIM))
        own_ids, own_weights = terms
        keep = rng.choice(TERMS, 100, replace=False)
        other = self._latent(rng, topic, self.vocab.topic_latent[topic][:120], 1)[0]
        ids = np.concatenate([own_ids[keep], other[0]])
        _, first = np.unique(ids, return_index=True)
        order = np.sort(first)[:TERMS]
        weights = np.concatenate([own_weights[keep], other[1]])[order]
        return {"question": question, "source": source, "vector": dense.tolist(),
                "terms": [ids[order].tolist(), weights.tolist()]}  # fmt: skip


def synthetic_embedding(queries: Optional[List[Dict[str, Any]]] = None):
    """An embedding model that only looks up precomputed query vectors and terms: no encoder is timed."""
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from pydantic import PrivateAttr

    class SyntheticEmbedding(BaseEmbedding):
        _queries: Dict[str, Any] = PrivateAttr(default_factory=dict)

        @classmethod
        def class_name(cls) -> str:
            return "SyntheticEmbedding"

        def _get_query_embedding(self, query: str) -> List[float]:
            return self._queries[query]["vector"]

        async def _aget_query_embedding(self, query: str) -> List[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> List[float]:
            raise RuntimeError("synthetic evidences carry their vectors")

        def get_query_terms(self, query: str):
            ids, weights = self._queries[query]["terms"]
            return np.asarray(ids, np.int32), np.asarray(weights, np.float32)

    model = SyntheticEmbedding(model_name=MODEL_NAME)
    model._queries.update({q["question"]: q for q in queries or []})
    return model


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def build(folder: Path, size: int, seed: int, queries: int, part: str, payload: str = "full") -> Dict[str, Any]:
    """Write one part of a synthetic store with the store's own code; returns seconds per step, RSS.

    ``part``: "vectors" (the Chroma collection) or "terms" (BM25, latent terms, the manifest). Two
    processes write the two parts at once, each generating the same pages: they write different
    files, and their peak memory is not added up (one process holding a 1M store's Chroma, BM25 and
    latent terms would need more than the 12 GB this benchmark may take).

    ``payload``: "full" writes Chroma as the store does (vectors, texts, node metadata); "ids" writes
    vectors, ids and page ids only. Queries read ids and distances from Chroma either way (the
    nodes come from the lexical index), but the full write ran at ~100 evidences/s on 2 shared
    cores: a 1M build of 3 hours.
    """
    from llama_index_ragonite.index.store import EvidenceStore

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


def build_both(folder: Path, args: argparse.Namespace, size: int) -> Dict[str, Any]:
    """Both parts at once, in two processes; the build takes as long as the slower one."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    start = time.perf_counter()
    procs = {part: _spawn("build", folder, args, size, part) for part in ("vectors", "terms")}
    done = {part: _result(proc, f"build {part} at {size}") for part, proc in procs.items()}
    wall = time.perf_counter() - start
    return {"size": size, "pages": done["terms"]["pages"], "build_s": wall, "evidences_per_s": size / wall,
            "dense_payload": getattr(args, "dense_payload", "full"),
            "parts_s": {**done["vectors"]["parts_s"], **{k: v for k, v in done["terms"]["parts_s"].items() if k != "generate"}},
            "generate_s": {part: d["parts_s"]["generate"] for part, d in done.items()},
            "build_rss_mb": {part: d["rss_mb"] for part, d in done.items()}, "disk_mb": folder_mb(folder)}  # fmt: skip


def measure(folder: Path, warmup: int = 5) -> Dict[str, Any]:
    """Open the store as a reader and time fused retrieval on the stored queries, and each side within it.

    Each side's call is timed inside the fused call (the retriever's own side methods, wrapped on
    this instance), so every query runs once and the sides add up to most of the fused time.
    """
    from llama_index.core.schema import QueryBundle

    from llama_index_ragonite.index.store import EvidenceStore
    from llama_index_ragonite.retrieval.retriever import HybridRetriever

    queries = json.loads((folder / "queries.json").read_text())
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
    sides = ("lexical", "latent", "dense", "titles", "fused")
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
    result = {"queries": len(queries), "open_s": open_s, "query_rss_mb": peak_rss_mb()}
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


def _spawn(step: str, folder: Path, args: argparse.Namespace, size: int, part: str = "") -> subprocess.Popen:
    command = [sys.executable, __file__, "--child", step, "--folder", str(folder), "--sizes", str(size),
               "--seed", str(args.seed), "--queries", str(args.queries), "--part", part or "terms",
               "--dense-payload", getattr(args, "dense_payload", "full")]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)


def _result(proc: subprocess.Popen, what: str) -> Dict[str, Any]:
    out, _ = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"{what} failed")
    return json.loads(out.strip().splitlines()[-1])


def measure_apart(folder: Path, args: argparse.Namespace, size: int) -> Dict[str, Any]:
    """``measure`` in a fresh process: clean RSS, nothing cached between sizes."""
    return _result(_spawn("measure", folder, args, size), f"measure at {size}")


def machine() -> str:
    """The shared machine line (``bench.provenance``), with the RAM and the load: memory and latency depend on both."""
    from llama_index_ragonite.bench import provenance

    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{provenance.machine()}, {ram:.0f} GiB RAM, load average {load} at the start"


def report(rows: List[Dict[str, Any]], command: str, started: str, plot: Optional[Path]) -> str:
    from harness import git_commit

    sides = ("lexical", "latent", "dense", "titles", "fused")
    lines = [
        "# Scaling: retrieval latency, build, memory and disk from 10k to 1M evidences", "",
        f"Command: `{command}`  ", f"Machine: {started}  ", f"Commit: {git_commit()} (plus the working tree)", "",
        "Synthetic wiki pages from the seed (see `benchmarks/scaling.py`), written with the store's own parts "
        "(Chroma, `LexicalIndex`, `LatentTermIndex`) and read by `HybridRetriever.from_store` "
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
              + " | build peak RSS MB (vectors / terms) | reader peak RSS MB | reader open s | disk MB |",
              "|---:|---:|---|" + "---:|" * (7 + len(parts))]  # fmt: skip
    for r in rows:
        part_cells = " | ".join(f"{r['parts_s'][p]:.0f}" for p in parts)
        gen, rss = r["generate_s"], r["build_rss_mb"]
        lines.append(
            f"| {r['size']:,} | {r['pages']:,} | {r.get('dense_payload', 'full')} | {r['build_s']:.0f} | {r['evidences_per_s']:.0f} | "
            f"{gen['vectors']:.0f} / {gen['terms']:.0f} | {part_cells} | {rss['vectors']:.0f} / {rss['terms']:.0f} | "
            f"{r['query_rss_mb']:.0f} | {r['open_s']:.1f} | {r['disk_mb']:.0f} |"
        )
    if plot is not None:
        lines += ["", f"![scaling curve]({plot.name})"]
    return "\n".join(lines) + "\n"


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "scaling.md")
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--reuse", action="store_true", help="query stores built before instead of rebuilding them")
    ap.add_argument(
        "--dense-payload",
        choices=("full", "ids"),
        default="full",
        help="what new builds write to Chroma: as the store does, or vectors and ids only (faster)",
    )
    ap.add_argument(
        "--build-only", action="store_true", help="build the stores (missing ones with --reuse), no queries"
    )
    ap.add_argument("--child", choices=("build", "measure"), help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--part", choices=("vectors", "terms"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.child == "build":
        print(json.dumps(build(args.folder, sizes[0], args.seed, args.queries, args.part, args.dense_payload)))
        return 0
    if args.child == "measure":
        print(json.dumps(measure(args.folder)))
        return 0
    started = machine()
    command = "python benchmarks/scaling.py " + " ".join(sys.argv[1:])
    rows = []
    for size in sizes:
        folder = args.cache / f"seed{args.seed}-q{args.queries}-{size}"
        built_file = folder / "build.json"
        if args.reuse and built_file.exists():
            built = json.loads(built_file.read_text())
        else:
            print(f"building {size:,} evidences in {folder}", file=sys.stderr, flush=True)
            built = build_both(folder, args, size)
            built_file.write_text(json.dumps(built))
        if args.build_only:
            continue
        print(f"querying {size:,}", file=sys.stderr, flush=True)
        rows.append({**built, **measure_apart(folder, args, size)})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if args.build_only:
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    plot = args.out.with_suffix(".png")
    draw(rows, plot)
    args.out.write_text(report(rows, command, started, plot))
    print(args.out.read_text())
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
