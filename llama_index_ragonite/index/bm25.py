"""The two things the lexical index asks of ``bm25s``: compile a matrix, and take its top rows.

Why apart from ``LexicalIndex``: both the node matrix and the page-title matrix use them,
and they are where bm25s's quirks are handled (type sniffing, floor scores, tie order).
"""

from __future__ import annotations

import bm25s
import numpy as np

__all__ = ["METHODS", "METHODS_WITHOUT_K1_PLUS_1", "best_rows", "bm25_over", "top_rows"]

METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
# Variants whose bm25s term-frequency part omits the constant (k1 + 1) factor.
METHODS_WITHOUT_K1_PLUS_1 = ("lucene", "robertson")


def bm25_over(token_lists: list[list[str]], k1: float, b: float, method: str) -> bm25s.BM25 | None:
    """A bm25s matrix with these parameters over these token lists; None if there are no tokens."""
    vocab: dict[str, int] = {}
    corpus_ids = [[vocab.setdefault(token, len(vocab)) for token in tokens] for tokens in token_lists]
    if not vocab:
        return None
    bm25 = bm25s.BM25(k1=k1, b=b, method=method)
    # (ids, vocab) tuple: bm25s's own type sniffing misreads a corpus whose first document
    # is empty. No empty token: we never query it, and it would not be a column of the matrix.
    bm25.index((corpus_ids, vocab), create_empty_token=False, show_progress=False)
    return bm25


def best_rows(
    bm25: bm25s.BM25 | None, query_tokens: list[str], row_rank: np.ndarray, k: int, allowed: np.ndarray | None = None
) -> list[tuple[int, float]]:
    """[(row, raw score)] of the top-``k`` rows that hold a query token (and are ``allowed``, a row mask);
    ties go to the lower ``row_rank``."""
    if bm25 is None:
        return []
    token_ids = [bm25.vocab_dict[token] for token in query_tokens if token in bm25.vocab_dict]
    if not token_ids:
        return []
    scores = bm25.get_scores_from_ids(token_ids)
    # Only rows that contain a query term match; bm25l/bm25+ give everyone a floor score.
    indptr, indices = bm25.scores["indptr"], bm25.scores["indices"]
    matched = np.zeros(len(scores), dtype=bool)  # a mask, not np.unique: no sort of every posting
    for token_id in set(token_ids):
        matched[indices[indptr[token_id] : indptr[token_id + 1]]] = True
    if allowed is not None:
        matched &= allowed
    rows = np.flatnonzero(matched)
    return top_rows(rows, scores[rows].astype(np.float64), row_rank, k)


def top_rows(rows: np.ndarray, row_scores: np.ndarray, row_rank: np.ndarray, k: int) -> list[tuple[int, float]]:
    """[(row, score)] of the ``k`` best of ``rows`` (scored ``row_scores``); ties go to the lower ``row_rank``."""
    if len(rows) > k:  # cheap pre-cut that keeps every row tied with the k-th best
        kth_best = np.partition(row_scores, len(rows) - k)[len(rows) - k]
        keep = row_scores >= kth_best
        rows, row_scores = rows[keep], row_scores[keep]
    order = np.lexsort((row_rank[rows], -row_scores))[:k]
    return [(int(rows[i]), float(row_scores[i])) for i in order]
