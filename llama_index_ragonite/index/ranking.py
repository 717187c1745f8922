"""``Ranking``: a compiled BM25 matrix over named rows, and its top rows for a query.

Why apart from ``LexicalIndex``: the evidences and the page titles are each such a matrix, searched
the same two ways: with the matrix's own statistics (the whole index), or with those of an audience
(the rows one user may read, ``term_counts``), narrowed to the rows a search may return. The row
masks and audience statistics are cached here, so they live exactly as long as the matrix they
describe.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import Callable, List, Optional, Tuple

import bm25s
import numpy as np

from llama_index_ragonite.index.bm25 import best_rows, top_rows
from llama_index_ragonite.index.term_counts import AudienceCache, TermCounts, audience_of, audience_scores

__all__ = ["Ranking"]


class Ranking:
    """``bm25`` over ``row_ids`` (ties to the lower ``row_rank``), with the term counts ``counts`` gives."""

    def __init__(
        self,
        bm25: Optional[bm25s.BM25],
        row_ids: List[str],
        row_rank: np.ndarray,
        counts: Callable[[], TermCounts],
        params: Tuple[float, float, str],
    ) -> None:
        self.bm25, self.row_ids, self.row_rank, self.params = bm25, row_ids, row_rank, params
        self._counts = counts
        self._held: Optional[TermCounts] = None
        self.cache = AudienceCache()

    def counts(self) -> TermCounts:
        """The term counts (built on first need; callers serialize calls, as ``LexicalIndex`` does)."""
        if self._held is None:
            self._held = self._counts()
        return self._held

    def best(
        self,
        query_tokens: List[str],
        k: int,
        allowed: Optional[AbstractSet[str]] = None,
        audience: Optional[frozenset] = None,
    ) -> List[Tuple[int, float]]:
        """[(row, raw score)] of the top-``k`` rows holding a query token, among the ``allowed`` ids,
        scored with the statistics of the ``audience`` ids (None: of every row)."""
        if self.bm25 is None:
            return []
        if audience is None:
            return best_rows(
                self.bm25, query_tokens, self.row_rank, k, None if allowed is None else self._mask(allowed)
            )
        counts = self.counts()
        stats = self.cache.get(("audience", audience), lambda: audience_of(counts, self._mask(audience, keep=False)))
        mask = None if allowed is None else stats.mask if allowed is audience else self._mask(allowed)
        token_ids = [self.bm25.vocab_dict[token] for token in query_tokens if token in self.bm25.vocab_dict]
        rows, scores = audience_scores(counts, token_ids, stats, *self.params)
        if mask is not None:
            keep = mask[rows]
            rows, scores = rows[keep], scores[keep]
        return top_rows(rows, scores, self.row_rank, k)

    def _mask(self, ids: AbstractSet[str], keep: bool = True) -> np.ndarray:
        """Which rows are in ``ids``, cached by the set (a narrowing hands each query the same one) unless an
        audience's statistics keep it (``keep=False``: one cache entry per audience, not two)."""
        row_ids = self.row_ids

        def made() -> np.ndarray:
            return np.fromiter((i in ids for i in row_ids), dtype=bool, count=len(row_ids))

        return self.cache.get(("rows", ids if isinstance(ids, frozenset) else frozenset(ids)), made) if keep else made()
