"""``LexicalIndex``: a persistent BM25 index over LlamaIndex nodes, built on ``bm25s``.

Why it exists: dense retrieval is weak on exact identifiers (product names, config keys,
version strings, error codes) that wiki questions are full of, so hybrid retrieval pairs
it with BM25. The vector store (Chroma) keeps vectors and flattened metadata but does not
fill the LlamaIndex docstore, so this index keeps its own copy of every node and can hand
back complete nodes (metadata, relationships, templates) for fusion and display.

Design notes:

* ``bm25s`` compiles a static sparse matrix and has no incremental update. Changes only
  mark the matrix stale; it is rebuilt on the next search from per-node token lists that
  were computed once, at upsert time (or, after a load, at the first rebuild), so a
  rebuild does not re-tokenize the corpus.
* The indexed text is ``node.get_content(MetadataMode.LLM)`` by default: the fully
  contextualized view the LLM sees (with the neighbouring evidences, which help BM25
  but dilute a small embedding model). ``metadata_mode="embed"`` indexes what the
  embedding model sees instead.
* ``bm25s`` drops the rank-preserving constant ``(k1 + 1)`` from the term-frequency part
  of its "lucene" and "robertson" variants (as Lucene >= 8 does). ``search`` restores it,
  so ``score`` is the textbook value ``sum idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))``
  and can be checked by hand. Ranking is unaffected.
* Tokens: see :mod:`llama_index_ragonite.index.tokenize` (``tokenizer="wiki"``, the
  default, keeps versions such as "7.0"). The folder format and its checks live in
  :mod:`llama_index_ragonite.index.lexical_format`.
* Score ties are broken by node id, so the same set of nodes always yields the same
  ranking, whatever order it was inserted or loaded in.
* A search for an ``audience`` (the nodes one user may read) is scored with that audience's
  statistics (:mod:`llama_index_ragonite.index.term_counts`): the scores of an index holding only
  those nodes, so nothing a user sees depends on the text of nodes they may not read.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore

from llama_index_ragonite.errors import StoreCorruptError, StoreFileError
from llama_index_ragonite.index.bm25 import METHODS, METHODS_WITHOUT_K1_PLUS_1, bm25_over
from llama_index_ragonite.index.lexical_format import (
    FORMAT_VERSION,
    MANIFEST_NAME,
    NodesFile,
    format1_rows,
    load_bm25,
    load_term_counts,
    node_json,
    node_of_json,
    node_title,
    read_manifest,
    write_folder,
)
from llama_index_ragonite.index.ranking import Ranking
from llama_index_ragonite.index.term_counts import TermCounts
from llama_index_ragonite.index.tokenize import TOKENIZERS, Tokenizer

__all__ = ["FORMAT_VERSION", "MANIFEST_NAME", "TOKENIZERS", "LexicalIndex", "LexicalIndexError"]

# The error every failure to load or persist a lexical index raises (its corrupt and version
# subclasses included); a ValueError, as it always was.
LexicalIndexError = StoreFileError


@dataclass(slots=True)
class _Record:
    """One indexed node: serialized so that callers cannot mutate the index behind its back."""

    payload: str | int  # json of doc_to_json(node), embedding removed; or its row in the loaded NodesFile
    ref_doc_id: str | None
    title: str | None  # the source document's title (``title`` metadata), for ``search_titles``
    tokens: list[str] | None  # None after load until the next rebuild needs them


class LexicalIndex:
    """BM25 over LlamaIndex nodes with upsert/delete, lazy rebuild, and crash-safe persistence.

    Args:
        stemmer: PyStemmer (Snowball) language name such as ``"english"``, or ``None`` for
            exact word matching. Stemming lets "installing" match "install".
        stopwords: anything ``bm25s.tokenize`` accepts: a language code/name (``"en"``,
            ``"english"``, ``"de"``...), several joined by ``+`` (``"en+de"``, the default:
            English pages asked in English and German — German function words such as
            "was", "die" or "will" would otherwise match English words), a list of words,
            or ``None`` to keep every word.
        k1: term-frequency saturation.
        b: document-length normalization (0 = none, 1 = full).
        method: bm25s variant: ``"lucene"``, ``"robertson"``, ``"atire"``, ``"bm25l"``, ``"bm25+"``.
        metadata_mode: which view of a node to index, ``"llm"`` (default) or ``"embed"``.
        tokenizer: ``"wiki"`` (default: every word, and dotted names whole and split) or
            ``"bm25s"`` (bm25s's pattern ``\\b\\w\\w+\\b``: no single characters, no "7.0").

    Text is lower-cased, split into words, stopwords are removed, then words are stemmed.
    A repeated query word counts once per occurrence, as in Lucene and
    ``bm25s.BM25.retrieve``. The class is thread-safe.
    """

    def __init__(
        self,
        stemmer: str | None = "english",
        stopwords: str | list[str] | None = "en+de",
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        metadata_mode: str = "llm",
        tokenizer: str = "wiki",
    ) -> None:
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
        if not k1 >= 0:
            raise ValueError(f"k1 must be >= 0; got {k1!r}")
        if not 0 <= b <= 1:
            raise ValueError(f"b must be between 0 and 1; got {b!r}")
        if isinstance(stopwords, (list, tuple)):
            # Text is lower-cased before stopword removal, so the list must be too.
            stopwords = [str(word).lower() for word in stopwords]
        self.stemmer_name = stemmer
        self.stopwords = stopwords
        self.k1 = float(k1)
        self.b = float(b)
        self.method = method
        self.metadata_mode = MetadataMode(metadata_mode)
        self.tokenizer = tokenizer
        self._score_scale = self.k1 + 1 if method in METHODS_WITHOUT_K1_PLUS_1 else 1.0
        self._params = (self.k1, self.b, self.method)
        self._tokenizer = Tokenizer(tokenizer, stemmer, stopwords)

        self._lock = threading.RLock()
        self._records: dict[str, _Record] = {}
        self._nodes_file: NodesFile | None = None  # the loaded folder's nodes, read in place (format 2)
        self.version = 0  # grows with every change of the nodes (what narrowed searches cache by)
        self._stale = False
        # The compiled matrix (its bm25 None when nothing is searchable: no nodes, or no tokens at all),
        # its row -> node id, and its term counts (for audiences; built on first need).
        self._nodes = Ranking(None, [], np.zeros(0, dtype=np.int64), self._node_counts, self._params)
        # search_titles' matrix over document titles (row -> ref_doc_id); None: build on next use.
        self._titles: Ranking | None = None

    # ------------------------------------------------------------------ contents

    def upsert(self, nodes: Iterable[BaseNode]) -> None:
        """Add nodes, replacing any node with the same id (the last one wins within a batch)."""
        batch: dict[str, BaseNode] = {}
        for node in nodes:
            batch[node.node_id] = node
        if not batch:
            return
        # Tokenize and serialize outside the lock: that is where the time goes.
        token_lists = self._tokenize([node.get_content(metadata_mode=self.metadata_mode) for node in batch.values()])
        records = {
            node_id: _Record(payload=node_json(node), ref_doc_id=node.ref_doc_id, title=node_title(node), tokens=tokens)
            for (node_id, node), tokens in zip(batch.items(), token_lists)
        }
        with self._lock:
            self.version += 1
            for node_id, record in records.items():
                old = self._records.get(node_id)
                # Unchanged text keeps the matrix valid: re-ingesting a page costs no rebuild.
                if old is None or old.tokens != record.tokens:
                    self._stale = True
                if old is None or (old.ref_doc_id, old.title) != (record.ref_doc_id, record.title):
                    self._titles = None
                self._records[node_id] = record

    def delete(self, node_ids: Iterable[str]) -> int:
        """Remove nodes by id; unknown ids are ignored. Returns how many were removed."""
        if isinstance(node_ids, str):  # a lone id, not an iterable of characters
            node_ids = [node_ids]
        removed = 0
        with self._lock:
            for node_id in node_ids:
                if self._records.pop(node_id, None) is not None:
                    removed += 1
            if removed:
                self._stale, self._titles = True, None
                self.version += 1
        return removed

    def delete_ref_doc(self, ref_doc_id: str) -> int:
        """Remove every node whose ``ref_doc_id`` (source document) matches. Returns the count."""
        with self._lock:
            doomed = [node_id for node_id, record in self._records.items() if record.ref_doc_id == ref_doc_id]
            return self.delete(doomed)

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._records

    def node_ids(self) -> list[str]:
        """Ids of all indexed nodes, in insertion order."""
        with self._lock:
            return list(self._records)

    def node_pages(self) -> dict[str, str | None]:
        """Node id -> ``ref_doc_id`` of every indexed node, without deserializing them (for store checks)."""
        with self._lock:
            return {node_id: record.ref_doc_id for node_id, record in self._records.items()}

    def page_of(self, node_id: str) -> str | None:
        """The ``ref_doc_id`` of one indexed node (None when absent): ``node_pages`` for one id, without the copy."""
        with self._lock:
            record = self._records.get(node_id)
        return record.ref_doc_id if record is not None else None

    def get_node(self, node_id: str) -> BaseNode:
        """A fresh copy of a stored node (without embedding). Raises ``KeyError`` if absent."""
        with self._lock:
            record = self._records.get(node_id)
        if record is None:
            raise KeyError(node_id)
        return self._node(record)

    # ------------------------------------------------------------------ search

    def search(
        self,
        query: str,
        k: int = 10,
        allowed: AbstractSet[str] | None = None,
        audience: frozenset[str] | None = None,
    ) -> list[NodeWithScore]:
        """Top-``k`` nodes containing at least one query term, best first, with raw BM25 scores.

        Returns fewer than ``k`` results when fewer nodes match, and ``[]`` for a blank query,
        an empty index, or a query whose terms are all unknown. ``allowed``: only these node ids
        are searched (before ranking: the ``k`` best of them). ``audience``: the node ids whose
        statistics score the search (the nodes the caller may read; None: every node).
        """
        query_tokens = self._query_tokens(query, k)
        if not query_tokens:
            return []
        with self._lock:
            self._ensure_built()
            best = self._nodes.best(query_tokens, k, allowed, audience)
            hits = [(self._records[self._nodes.row_ids[row]], score) for row, score in best]
        return [
            NodeWithScore(node=self._node(record), score=float(score * self._score_scale)) for record, score in hits
        ]

    def search_titles(
        self, query: str, k: int = 10, pages: AbstractSet[str] | None = None, audience: frozenset[str] | None = None
    ) -> list[tuple[str, float]]:
        """Top-``k`` source documents (``ref_doc_id``) by BM25 over their titles, best first.

        Why: questions often name their page ("the OpenXT 7.0 hardware tests", "the Stable-9
        rc0 test matrix"), and in an evidence's text the title is a few words among many.
        The title is the ``title`` metadata of a document's nodes (the parser's page title);
        documents without one, and nodes without a source document, are not ranked. ``pages``:
        only these documents are ranked. ``audience``: the pages whose titles' statistics score the
        search (the pages the caller may read; None: every page).
        """
        query_tokens = self._query_tokens(query, k)
        if not query_tokens:
            return []
        with self._lock:
            if self._titles is None:
                titles: dict[str, str] = {}
                for record in self._records.values():
                    if record.ref_doc_id is not None and record.title:
                        titles.setdefault(record.ref_doc_id, record.title)
                doc_ids = sorted(titles)
                self._titles = self._ranking(self._tokenize([titles[d] for d in doc_ids]), doc_ids)
            titles_ranking = self._titles
            best = titles_ranking.best(query_tokens, k, pages, audience)
        return [(titles_ranking.row_ids[row], float(score * self._score_scale)) for row, score in best]

    def _query_tokens(self, query: str, k: int) -> list[str]:
        if k < 1:
            raise ValueError(f"k must be >= 1; got {k!r}")
        return self._tokenize([query])[0] if query and query.strip() else []

    def _ranking(self, token_lists: list[list[str]], row_ids: list[str]) -> Ranking:
        """A ranking over these rows (row ``i``: ``token_lists[i]``, ties to the lower id), counted on first need."""
        bm25 = self._compile(token_lists)
        counts = partial(TermCounts.of, token_lists, bm25.vocab_dict if bm25 else {}, bm25.scores if bm25 else None)
        return Ranking(bm25, row_ids, _tie_ranks(row_ids), counts, self._params)

    def _node_counts(self) -> TermCounts:
        """The term counts of the node matrix as loaded (an older folder has none: counted from the texts)."""
        bm25 = self._nodes.bm25
        assert bm25 is not None
        return TermCounts.of(self._all_tokens(self._nodes.row_ids), bm25.vocab_dict, bm25.scores)

    def _all_tokens(self, row_ids: list[str]) -> list[list[str]]:
        """Every row's tokens; a loaded index tokenizes the texts once (tokens are not persisted)."""
        missing = [node_id for node_id in row_ids if self._records[node_id].tokens is None]
        if missing:
            texts = [self._node(self._records[i]).get_content(metadata_mode=self.metadata_mode) for i in missing]
            for node_id, tokens in zip(missing, self._tokenize(texts)):
                self._records[node_id].tokens = tokens
        return [self._records[i].tokens or [] for i in row_ids]

    def _ensure_built(self) -> None:
        """Rebuild the bm25s matrix if nodes changed since the last build (caller holds the lock)."""
        if not self._stale:
            return
        row_ids = list(self._records)
        self._nodes = self._ranking(self._all_tokens(row_ids), row_ids)
        self._stale = False

    def _tokenize(self, texts: list[str]) -> list[list[str]]:
        return self._tokenizer(texts)

    def _compile(self, token_lists: list[list[str]]) -> bm25s.BM25 | None:
        """A bm25s matrix with this index's parameters; None if there are no tokens."""
        return bm25_over(token_lists, self.k1, self.b, self.method)

    # ------------------------------------------------------------------ persistence

    def config(self) -> dict[str, Any]:
        """Constructor arguments: what ``load`` needs to tokenize queries exactly as before."""
        return {
            "stemmer": self.stemmer_name,
            "stopwords": self.stopwords,
            "k1": self.k1,
            "b": self.b,
            "method": self.method,
            "metadata_mode": self.metadata_mode.value,
            "tokenizer": self.tokenizer,
        }

    def persist(self, path: str | os.PathLike[str]) -> None:
        """Write the index to folder ``path``, replacing a previous index there.

        The folder is written beside ``path`` and renamed into place, and the manifest carries
        checksums of the bm25s files: an interrupted write leaves either the old index, or no
        index (``load`` then raises), never a half-written one. Raises ``LexicalIndexError``
        if ``path`` holds something other than an index.
        """
        with self._lock:
            self._ensure_built()
            records = ((node_id, self._records[node_id]) for node_id in self._nodes.row_ids)
            rows = ((node_id, self._payload(r), r.ref_doc_id, r.title) for node_id, r in records)
            counts = None if self._nodes.bm25 is None else self._nodes.counts()
            write_folder(Path(path), self.config(), rows, self._nodes.bm25, counts)

    def _payload(self, record: _Record) -> str:
        if isinstance(record.payload, str):
            return record.payload
        assert self._nodes_file is not None  # a row payload comes with the file it was loaded from
        return self._nodes_file.payload(record.payload)

    def _node(self, record: _Record) -> BaseNode:
        if isinstance(record.payload, str):
            return node_of_json(record.payload)
        assert self._nodes_file is not None
        return self._nodes_file.node(record.payload)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> LexicalIndex:
        """Restore an index written by ``persist``; searches give the same results without a rebuild.

        Raises ``StoreCorruptError`` (naming ``path``) if the folder is missing, incomplete or
        damaged, ``StoreVersionError`` for an unknown format version: both are ``LexicalIndexError``.
        """
        path = Path(path)
        manifest = read_manifest(path)
        try:
            # Old indexes: before 0.2 they read EMBED; before the tokenizer option, bm25s tokenized them.
            index = cls(**{"metadata_mode": "embed", "tokenizer": "bm25s", **manifest["config"]})
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreCorruptError(f"{path}: invalid config in {MANIFEST_NAME} ({exc!r})") from exc
        if manifest["format_version"] == 1:
            inline = format1_rows(path, manifest["nodes"])
            index._records = {i: _Record(payload, page, title, None) for i, payload, page, title in inline}
        else:
            index._nodes_file = NodesFile(path, manifest)
            rows = zip(manifest.pop("ids"), manifest.pop("pages"), manifest.pop("titles"))
            index._records = {i: _Record(row, page, title, None) for row, (i, page, title) in enumerate(rows)}
            if len(index._records) != len(manifest["offsets"]) - 1:
                raise StoreCorruptError(f"{path}: a node id appears twice in the lexical index")
        bm25 = load_bm25(path, manifest.get("bm25"), len(index._records), index._params)
        counts = load_term_counts(path, manifest.get("term_counts"), bm25)  # None in older folders: counted on need
        row_ids = list(index._records)
        made = index._node_counts if counts is None else lambda: counts
        index._nodes = Ranking(bm25, row_ids, _tie_ranks(row_ids), made, index._params)
        index._stale = False
        return index


def _tie_ranks(row_ids: list[str]) -> np.ndarray:
    """Row -> rank of its id: score ties go to the lower id, whatever order the rows are in."""
    rank = np.empty(len(row_ids), dtype=np.int64)
    rank[sorted(range(len(row_ids)), key=row_ids.__getitem__)] = np.arange(len(row_ids))
    return rank
