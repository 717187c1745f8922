"""BM25 with the statistics of one audience: the term counts a ``bm25s`` matrix was compiled from.

Why: ``bm25s`` bakes the whole store's IDF and average length into its stored scores, so a user's
scores would move with the text of pages the user may not read (a guessed term in a hidden page
lowers its IDF: a yes/no test for any term). A user who may read only part of the store is scored
here instead, from each posting's term frequency and each row's length, with the document
frequencies, row count and average length of the rows the user may read: the scores of a store
that holds only those rows. Unrestricted searches keep ``bm25s``'s precomputed scores.

``TermCounts`` are the postings in ``bm25s``'s own order (term-major, rows ascending), so its
``indptr`` and ``indices`` are shared when they agree, and only the frequencies and row lengths are
kept beside them.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Dict, Hashable, List, Sequence, Tuple

import numpy as np

__all__ = ["Audience", "AudienceCache", "TermCounts", "audience_of", "audience_scores"]

_CHUNK = 50_000  # rows counted at once
_DELTA = 0.5  # bm25s's delta for bm25l and bm25+ (LexicalIndex leaves it at its default)


@dataclass(frozen=True)
class TermCounts:
    """Postings of a matrix: ``indptr`` per term, the row of each posting, its term frequency, and row lengths."""

    indptr: np.ndarray
    rows: np.ndarray
    tf: np.ndarray
    lengths: np.ndarray

    @classmethod
    def of(cls, token_lists: Sequence[Sequence[str]], vocab: Dict[str, int], shared: Any = None) -> "TermCounts":
        """The counts of ``token_lists`` (row ``i`` is list ``i``) over ``vocab``; ``shared``: a bm25s
        ``scores`` dict whose ``indptr``/``indices`` are reused when they index the same postings."""
        lengths = np.fromiter((len(t) for t in token_lists), dtype=np.int32, count=len(token_lists))
        terms, rows, tfs = [], [], []
        for first in range(0, len(token_lists), _CHUNK):  # in slices of rows: no array of every token at once
            chunk = token_lists[first : first + _CHUNK]
            size = len(chunk)
            tokens = np.fromiter(
                (vocab[t] for ts in chunk for t in ts), np.int64, int(lengths[first : first + size].sum())
            )
            local = np.repeat(np.arange(size, dtype=np.int64), lengths[first : first + size])
            keys, tf = np.unique(tokens * size + local, return_counts=True)
            terms.append((keys // size).astype(np.int32))
            rows.append((keys % size + first).astype(np.int32))
            tfs.append(tf)
        term_of = np.concatenate(terms) if terms else np.zeros(0, np.int32)
        order = np.argsort(term_of, kind="stable")  # term-major; rows stay ascending (chunks come in row order)
        row_of = np.concatenate(rows)[order] if rows else np.zeros(0, np.int32)
        tf = np.concatenate(tfs)[order] if tfs else np.zeros(0, np.int64)
        indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(term_of, minlength=len(vocab)), out=indptr[1:])
        if (
            shared is not None
            and np.array_equal(shared["indptr"], indptr)
            and np.array_equal(shared["indices"], row_of)
        ):
            indptr, row_of = shared["indptr"], shared["indices"]
        return cls(indptr, row_of, tf.astype(np.min_scalar_type(int(tf.max(initial=1)))), lengths)

    def arrays(self, shared: Any = None) -> Dict[str, np.ndarray]:
        """What to persist: the frequencies and lengths, and the postings unless ``shared`` holds them."""
        own = shared is None or not (self.indptr is shared["indptr"] and self.rows is shared["indices"])
        base = {"tf": self.tf, "lengths": self.lengths}
        return {**base, "indptr": self.indptr, "rows": self.rows} if own else base

    @classmethod
    def from_arrays(cls, arrays: Dict[str, np.ndarray], shared: Any = None) -> "TermCounts":
        indptr = arrays["indptr"] if "indptr" in arrays else shared["indptr"]
        rows = arrays["rows"] if "rows" in arrays else shared["indices"]
        counts = cls(indptr, rows, arrays["tf"], arrays["lengths"])
        if len(counts.rows) != len(counts.tf) or int(counts.indptr[-1]) != len(counts.tf):
            raise ValueError("the term counts do not match their postings")
        return counts


@dataclass(frozen=True)
class Audience:
    """The rows one audience may read, with the statistics BM25 takes from them."""

    mask: np.ndarray  # row -> readable
    count: int
    mean_length: float


class AudienceCache:
    """``Audience``s (and row masks) by key (a frozenset of ids), least recently used first out. Why 128: one
    entry per audience a narrowing hands over (64 principals at most, ``retrieval.narrowing``), with room for
    the masks of filtered searches; each holds one byte per row."""

    def __init__(self, size: int = 128) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._entries: "OrderedDict[Hashable, Any]" = OrderedDict()

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        value = make()  # outside the lock: a new audience does not hold up the others
        with self._lock:
            self._entries[key] = value
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return value


def audience_of(counts: TermCounts, mask: np.ndarray) -> Audience:
    count = int(np.count_nonzero(mask))
    mean = float(counts.lengths[mask].mean()) if count else 0.0
    return Audience(mask, count, mean)


def audience_scores(
    counts: TermCounts, token_ids: List[int], audience: Audience, k1: float, b: float, method: str
) -> Tuple[np.ndarray, np.ndarray]:
    """(rows, scores) of the readable rows holding a query term, scored as bm25s scores a store of only
    those rows (same variant, same ``k1``/``b``; a repeated query term counts once per occurrence)."""
    if audience.count == 0 or audience.mean_length == 0:
        return np.zeros(0, np.int64), np.zeros(0)
    idf_of, tfc_of = _IDF[method], _TFC[method]
    total = np.zeros(len(counts.lengths))  # a dense accumulator, as bm25s's: no sort of the matched rows
    matched = np.zeros(len(counts.lengths), dtype=bool)
    floor_total = 0.0
    for term, times in _counted(token_ids):
        start, end = int(counts.indptr[term]), int(counts.indptr[term + 1])
        rows = counts.rows[start:end]
        keep = audience.mask[rows]
        df = int(np.count_nonzero(keep))
        if not df:
            continue
        rows = rows[keep]
        idf = idf_of(df, audience.count)
        tfc = tfc_of(counts.tf[start:end][keep].astype(np.float64), counts.lengths[rows], audience.mean_length, k1, b)
        floor = idf * tfc_of(0.0, audience.mean_length, audience.mean_length, k1, b) if method in _FLOORED else 0.0
        floor_total += times * floor
        total[rows] += times * (idf * tfc - floor)  # a term's rows are distinct: no add.at needed
        matched[rows] = True
    found = np.flatnonzero(matched)
    return found, total[found] + floor_total


def _counted(token_ids: List[int]) -> List[Tuple[int, int]]:
    seen: Dict[int, int] = {}
    for token in token_ids:
        seen[token] = seen.get(token, 0) + 1
    return list(seen.items())


def _robertson_idf(df: int, n: int) -> float:
    return math.log(max((n - df + 0.5) / (df + 0.5), 1.0))


_IDF: Dict[str, Callable[[int, int], float]] = {  # bm25s.scoring's idf of each variant
    "robertson": _robertson_idf,
    "lucene": lambda df, n: math.log(1 + (n - df + 0.5) / (df + 0.5)),
    "atire": lambda df, n: math.log(n / df),
    "bm25l": lambda df, n: math.log((n + 1) / (df + 0.5)),
    "bm25+": lambda df, n: math.log((n + 1) / df),
}


def _saturation(tf: Any, length: Any, mean: float, k1: float, b: float) -> Any:
    return tf / (k1 * ((1 - b) + b * length / mean) + tf)


_TFC: Dict[str, Callable[..., Any]] = {  # bm25s.scoring's term-frequency part of each variant
    "robertson": _saturation,
    "lucene": _saturation,
    "atire": lambda tf, length, mean, k1, b: tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / mean)),
    "bm25l": lambda tf, length, mean, k1, b: (
        (k1 + 1) * (tf / (1 - b + b * length / mean) + _DELTA) / (k1 + tf / (1 - b + b * length / mean) + _DELTA)
    ),
    "bm25+": lambda tf, length, mean, k1, b: (k1 + 1) * tf / (k1 * (1 - b + b * length / mean) + tf) + _DELTA,
}
_FLOORED = ("bm25l", "bm25+")  # bm25s gives every row these variants' score of an absent term
