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
* Tokens (``tokenizer="wiki"``, the default): every word, single characters included, and
  dotted names both whole and split ("7.0" gives "7.0", "7", "0"). Wiki questions name
  versions ("OpenXT 7.0", "Stable-9", "6.0.0"); bm25s's own pattern (``tokenizer="bm25s"``,
  ``\\b\\w\\w+\\b``) drops all of those. ConfQuestions, BM25 alone: P@1 0.755 -> 0.823.
* Score ties are broken by node id, so the same set of nodes always yields the same
  ranking, whatever order it was inserted or loaded in.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore
from llama_index.core.storage.docstore.utils import doc_to_json, json_to_doc

from llama_index_ragonite.text import stopword_list

__all__ = ["FORMAT_VERSION", "TOKENIZERS", "LexicalIndex", "LexicalIndexError"]

FORMAT_NAME = "ragonite-lexical-index"
FORMAT_VERSION = 1
MANIFEST_NAME = "lexical.json"
BM25_DIR_NAME = "bm25s"

_METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
# Variants whose bm25s term-frequency part omits the constant (k1 + 1) factor.
_METHODS_WITHOUT_K1_PLUS_1 = ("lucene", "robertson")
TOKENIZERS = ("wiki", "bm25s")
# A word, or a dotted name kept whole: "7.0", "6.0.0", "build.sh" (a trailing full stop is not part of it).
_WIKI_WORD = re.compile(r"\w+(?:\.\w+)*")


class LexicalIndexError(ValueError):
    """A persisted lexical index is missing, damaged, or in a format this code cannot read."""


@dataclass(slots=True)
class _Record:
    """One indexed node: serialized so that callers cannot mutate the index behind its back."""

    payload: str  # json of doc_to_json(node), embedding removed
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
        if tokenizer not in TOKENIZERS:
            raise ValueError(f"tokenizer must be one of {', '.join(TOKENIZERS)}; got {tokenizer!r}")
        if method not in _METHODS:
            raise ValueError(f"method must be one of {', '.join(_METHODS)}; got {method!r}")
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
        self._stemmer = _make_stemmer(stemmer)
        try:  # fail now, not on the first upsert, if bm25s does not know these stopwords
            self._stopword_list = stopword_list(stopwords)
            self._stopword_set = frozenset(self._stopword_list)
            self._tokenize(["probe"])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"stopwords not accepted by bm25s: {exc}") from exc
        self._score_scale = self.k1 + 1 if method in _METHODS_WITHOUT_K1_PLUS_1 else 1.0

        self._lock = threading.RLock()
        self._records: dict[str, _Record] = {}
        self._stale = False
        # The compiled matrix; None when nothing is searchable (no nodes, or no tokens at all).
        self._bm25: bm25s.BM25 | None = None
        self._row_ids: list[str] = []  # matrix row -> node id
        self._row_rank = np.zeros(0, dtype=np.int64)  # matrix row -> rank of its node id (tie-break)
        # search_titles' matrix over document titles and its row -> ref_doc_id; None: build on next use.
        self._titles: tuple[bm25s.BM25 | None, list[str]] | None = None

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
            node_id: _Record(payload=_serialize(node), ref_doc_id=node.ref_doc_id, title=_title(node), tokens=tokens)
            for (node_id, node), tokens in zip(batch.items(), token_lists)
        }
        with self._lock:
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

    def get_node(self, node_id: str) -> BaseNode:
        """A fresh copy of a stored node (without embedding). Raises ``KeyError`` if absent."""
        with self._lock:
            record = self._records.get(node_id)
        if record is None:
            raise KeyError(node_id)
        return _deserialize(record.payload)

    # ------------------------------------------------------------------ search

    def search(self, query: str, k: int = 10) -> list[NodeWithScore]:
        """Top-``k`` nodes containing at least one query term, best first, with raw BM25 scores.

        Returns fewer than ``k`` results when fewer nodes match, and ``[]`` for a blank query,
        an empty index, or a query whose terms are all unknown.
        """
        query_tokens = self._query_tokens(query, k)
        if not query_tokens:
            return []
        with self._lock:
            self._ensure_built()
            best = _best_rows(self._bm25, query_tokens, self._row_rank, k)
            hits = [(self._records[self._row_ids[row]].payload, score) for row, score in best]
        return [
            NodeWithScore(node=_deserialize(payload), score=float(score * self._score_scale)) for payload, score in hits
        ]

    def search_titles(self, query: str, k: int = 10) -> list[tuple[str, float]]:
        """Top-``k`` source documents (``ref_doc_id``) by BM25 over their titles, best first.

        Why: questions often name their page ("the OpenXT 7.0 hardware tests", "the Stable-9
        rc0 test matrix"), and in an evidence's text the title is a few words among many.
        The title is the ``title`` metadata of a document's nodes (the parser's page title);
        documents without one, and nodes without a source document, are not ranked.
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
                self._titles = (_bm25_over(self._tokenize([titles[d] for d in doc_ids]), self), doc_ids)
            bm25, doc_ids = self._titles
            best = _best_rows(bm25, query_tokens, np.arange(len(doc_ids)), k)
        return [(doc_ids[row], float(score * self._score_scale)) for row, score in best]

    def _query_tokens(self, query: str, k: int) -> list[str]:
        if k < 1:
            raise ValueError(f"k must be >= 1; got {k!r}")
        return self._tokenize([query])[0] if query and query.strip() else []

    def _ensure_built(self) -> None:
        """Rebuild the bm25s matrix if nodes changed since the last build (caller holds the lock)."""
        if not self._stale:
            return
        row_ids = list(self._records)
        missing = [node_id for node_id in row_ids if self._records[node_id].tokens is None]
        if missing:  # only after load: tokens are not persisted, the text is
            texts = [
                _deserialize(self._records[i].payload).get_content(metadata_mode=self.metadata_mode) for i in missing
            ]
            for node_id, tokens in zip(missing, self._tokenize(texts)):
                self._records[node_id].tokens = tokens
        self._install(_bm25_over([self._records[i].tokens or [] for i in row_ids], self), row_ids)

    def _install(self, bm25: bm25s.BM25 | None, row_ids: list[str]) -> None:
        self._bm25 = bm25
        self._row_ids = row_ids
        rank = np.empty(len(row_ids), dtype=np.int64)
        rank[sorted(range(len(row_ids)), key=row_ids.__getitem__)] = np.arange(len(row_ids))
        self._row_rank = rank
        self._stale = False

    def _tokenize(self, texts: list[str]) -> list[list[str]]:
        if self.tokenizer == "wiki":
            return [self._wiki_tokens(text) for text in texts]
        return bm25s.tokenize(
            texts,
            lower=True,
            stopwords=self._stopword_list,
            stemmer=self._stemmer,
            return_ids=False,
            show_progress=False,
        )

    def _wiki_tokens(self, text: str) -> list[str]:
        words = []
        for word in _WIKI_WORD.findall(text.lower()):
            words.append(word)
            if "." in word:
                words.extend(word.split("."))
        words = [word for word in words if word not in self._stopword_set]
        return self._stemmer.stemWords(words) if self._stemmer is not None else words

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

        Everything is written to a hidden sibling folder first and renamed into place, and
        the manifest carries checksums of the bm25s files: an interrupted write leaves either
        the old index, or no index (``load`` then raises), never a half-written one.
        """
        path = Path(path)
        with self._lock:
            self._ensure_built()
            if path.exists() and not _is_replaceable(path):
                raise LexicalIndexError(
                    f"{path}: refusing to overwrite, it is not an empty folder or a lexical index folder"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
            try:
                bm25_manifest = None
                if self._bm25 is not None:
                    bm25_dir = tmp / BM25_DIR_NAME
                    self._bm25.save(bm25_dir, show_progress=False)
                    bm25_manifest = {
                        "num_docs": len(self._row_ids),
                        "files": {f.name: _sha256(f) for f in sorted(bm25_dir.iterdir())},
                    }
                manifest = {
                    "format": FORMAT_NAME,
                    "format_version": FORMAT_VERSION,
                    "bm25s_version": bm25s.__version__,
                    "config": self.config(),
                    "bm25": bm25_manifest,
                    # Matrix row order: row i of the bm25s matrix is nodes[i].
                    "nodes": [json.loads(self._records[node_id].payload) for node_id in self._row_ids],
                }
                with open(tmp / MANIFEST_NAME, "w", encoding="utf-8") as f:
                    json.dump(manifest, f, ensure_ascii=False)
                _fsync_tree(tmp)
                if path.exists():
                    old = path.parent / f".{path.name}.old-{uuid.uuid4().hex}"
                    os.rename(path, old)
                    os.rename(tmp, path)
                    shutil.rmtree(old, ignore_errors=True)
                else:
                    os.rename(tmp, path)
                _fsync_dir(path.parent)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> LexicalIndex:
        """Restore an index written by ``persist``; searches give the same results without a rebuild.

        Raises ``LexicalIndexError`` (naming ``path``) if the folder is missing, incomplete,
        damaged, or of an unknown format version.
        """
        path = Path(path)
        if not path.is_dir():
            raise LexicalIndexError(f"{path}: lexical index folder does not exist")
        manifest_path = path / MANIFEST_NAME
        if not manifest_path.is_file():
            raise LexicalIndexError(
                f"{path}: {MANIFEST_NAME} is missing (not a lexical index, or an interrupted write)"
            )
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise LexicalIndexError(f"{path}: {MANIFEST_NAME} is unreadable or truncated ({exc})") from exc
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
            raise LexicalIndexError(f"{path}: {MANIFEST_NAME} is not a lexical index manifest")
        if manifest.get("format_version") != FORMAT_VERSION:
            raise LexicalIndexError(
                f"{path}: unsupported format version {manifest.get('format_version')!r} (expected {FORMAT_VERSION})"
            )
        try:
            # Old indexes: before 0.2 they read EMBED; before the tokenizer option, bm25s tokenized them.
            index = cls(**{"metadata_mode": "embed", "tokenizer": "bm25s", **manifest["config"]})
        except (KeyError, TypeError, ValueError) as exc:
            raise LexicalIndexError(f"{path}: invalid config in {MANIFEST_NAME} ({exc!r})") from exc

        entries = manifest.get("nodes")
        if not isinstance(entries, list):
            raise LexicalIndexError(f"{path}: {MANIFEST_NAME} has no node list")
        for position, entry in enumerate(entries):
            try:
                node = json_to_doc(entry)
            except Exception as exc:  # pydantic, KeyError, ValueError...: all mean a damaged record
                raise LexicalIndexError(f"{path}: node record {position} is damaged ({exc!r})") from exc
            if node.node_id in index._records:
                raise LexicalIndexError(f"{path}: node id {node.node_id!r} appears twice")
            index._records[node.node_id] = _Record(
                payload=json.dumps(entry, ensure_ascii=False),
                ref_doc_id=node.ref_doc_id,
                title=_title(node),
                tokens=None,
            )

        index._install(cls._load_bm25(path, manifest.get("bm25"), index), list(index._records))
        return index

    @staticmethod
    def _load_bm25(path: Path, bm25_manifest: Any, index: LexicalIndex) -> bm25s.BM25 | None:
        """Load and cross-check the bm25s matrix, so damage is an error and not silent bad ranking."""
        if bm25_manifest is None:  # persisted with nothing searchable
            return None
        if not isinstance(bm25_manifest, dict) or not isinstance(bm25_manifest.get("files"), dict):
            raise LexicalIndexError(f"{path}: {MANIFEST_NAME} has a malformed 'bm25' section")
        bm25_dir = path / BM25_DIR_NAME
        for name, digest in bm25_manifest["files"].items():
            file = bm25_dir / name
            if not file.is_file():
                raise LexicalIndexError(f"{path}: bm25s file {BM25_DIR_NAME}/{name} is missing")
            if _sha256(file) != digest:
                raise LexicalIndexError(f"{path}: bm25s file {BM25_DIR_NAME}/{name} is damaged (checksum mismatch)")
        try:
            bm25 = bm25s.BM25.load(bm25_dir, show_progress=False)
        except Exception as exc:
            raise LexicalIndexError(f"{path}: bm25s index cannot be loaded ({exc!r})") from exc
        num_docs = len(index._records)
        problems = []
        if bm25.scores.get("num_docs") != num_docs or bm25_manifest.get("num_docs") != num_docs:
            problems.append(f"it has {bm25.scores.get('num_docs')} rows for {num_docs} nodes")
        if len(bm25.scores["indptr"]) != len(bm25.vocab_dict) + 1:
            problems.append("its vocabulary does not match its matrix")
        if (bm25.k1, bm25.b, bm25.method) != (index.k1, index.b, index.method):
            problems.append("its parameters differ from the config")
        if problems:
            raise LexicalIndexError(f"{path}: bm25s index is inconsistent: {'; '.join(problems)}")
        return bm25


def _bm25_over(token_lists: list[list[str]], index: LexicalIndex) -> bm25s.BM25 | None:
    """A bm25s matrix with ``index``'s parameters over these token lists; None if there are no tokens."""
    vocab: dict[str, int] = {}
    corpus_ids = [[vocab.setdefault(token, len(vocab)) for token in tokens] for tokens in token_lists]
    if not vocab:
        return None
    bm25 = bm25s.BM25(k1=index.k1, b=index.b, method=index.method)
    # (ids, vocab) tuple: bm25s's own type sniffing misreads a corpus whose first document
    # is empty. No empty token: we never query it, and it would not be a column of the matrix.
    bm25.index((corpus_ids, vocab), create_empty_token=False, show_progress=False)
    return bm25


def _best_rows(bm25: bm25s.BM25 | None, query_tokens: list[str], row_rank: np.ndarray, k: int):
    """[(row, raw score)] of the top-``k`` rows that hold a query token; ties go to the lower ``row_rank``."""
    if bm25 is None:
        return []
    token_ids = [bm25.vocab_dict[token] for token in query_tokens if token in bm25.vocab_dict]
    if not token_ids:
        return []
    scores = bm25.get_scores_from_ids(token_ids)
    # Only rows that contain a query term match; bm25l/bm25+ give everyone a floor score.
    indptr, indices = bm25.scores["indptr"], bm25.scores["indices"]
    rows = np.unique(np.concatenate([indices[indptr[t] : indptr[t + 1]] for t in set(token_ids)]))
    row_scores = scores[rows].astype(np.float64)
    if len(rows) > k:  # cheap pre-cut that keeps every row tied with the k-th best
        kth_best = np.partition(row_scores, len(rows) - k)[len(rows) - k]
        keep = row_scores >= kth_best
        rows, row_scores = rows[keep], row_scores[keep]
    order = np.lexsort((row_rank[rows], -row_scores))[:k]
    return [(int(rows[i]), float(row_scores[i])) for i in order]


def _make_stemmer(language: str | None) -> Any:
    if language is None:
        return None
    try:
        import Stemmer
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("stemming needs PyStemmer: pip install PyStemmer (or pass stemmer=None)") from exc
    try:
        return Stemmer.Stemmer(language)
    except KeyError as exc:
        raise ValueError(
            f"unknown stemmer language {language!r}; available: {', '.join(Stemmer.algorithms())}"
        ) from exc


def _title(node: BaseNode) -> str | None:
    title = node.metadata.get("title")
    return str(title).strip() or None if title is not None else None


def _serialize(node: BaseNode) -> str:
    data = doc_to_json(node)
    # Vectors live in the vector store; a copy here would dominate memory and file size.
    data["__data__"]["embedding"] = None
    try:
        return json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"node {node.node_id!r} cannot be stored: not JSON-serializable ({exc})") from exc


def _deserialize(payload: str) -> BaseNode:
    return json_to_doc(json.loads(payload))


def _sha256(file: Path) -> str:
    return hashlib.sha256(file.read_bytes()).hexdigest()


def _is_replaceable(path: Path) -> bool:
    """Only an empty folder or a previous index may be replaced: persist must not wipe user data."""
    return path.is_dir() and (not any(path.iterdir()) or (path / MANIFEST_NAME).is_file())


def _fsync_tree(folder: Path) -> None:
    """Flush files to disk before the rename makes them visible (bm25s's save does not)."""
    for file in folder.rglob("*"):
        if file.is_file():
            with open(file, "rb+") as f:
                os.fsync(f.fileno())
    for sub in [folder, *(p for p in folder.rglob("*") if p.is_dir())]:
        _fsync_dir(sub)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)
