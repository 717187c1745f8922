"""A synthetic wiki drawn from a seed, for the ``scaling`` experiment: pages, evidences, vectors, latent terms, queries.

Why synthetic: ConfQuestions has 3,361 evidences; a deployment indexes a whole wiki. Pages hold
passages, list items and table rows (English with some German pages; a Zipf vocabulary whose tail keeps
growing with the corpus, as real vocabularies do). The encoder is left out on purpose, so a benchmark
measures the index: dense vectors are seeded unit vectors clustered by topic and page, latent terms
seeded sparse vectors with the real model's 256 terms per evidence (Zipf-like over the 16,384 ids, plus
topic and page ids), and each query carries its precomputed vector and terms (``synthetic_embedding``).
"""

from __future__ import annotations

import functools
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

DIM = 384
LATENT_DIM = 16384
TERMS = 256  # TOP_TERMS in models/e5.py: every evidence and query keeps its 256 heaviest terms
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
