"""Orderings of k evidences in decreasing Kendall's tau to the original order, lazily.

RAGE tries reorderings closest to the original first. Kendall's tau of an ordering to the
original is ``1 − 4·inv / (k(k−1))`` where ``inv`` counts the pairs it puts out of their
original order, so decreasing tau is increasing inversion count: the ``k − 1`` adjacent swaps
first (tau 0.8 for k = 5), then the orderings with two inversions, and so on.

An ordering is built position by position: putting the ``j``-th smallest of the ``r`` items
left first adds ``j`` inversions, and the rest can add at most ``(r−1)(r−2)/2``. That gives an
exact enumeration of one inversion level in lexicographic order, and, with the Mahonian
numbers (how many orderings of ``r`` items have ``d`` inversions), a uniform draw from a level.

``orderings_by_tau`` enumerates every level exactly for ``k ≤ EXACT_UP_TO`` (8: 40,320
orderings in all); beyond, a level with more than ``level_sample`` orderings is replaced by a
seeded uniform sample of that many (listed in lexicographic order), so the search still moves
outwards in tau but does not spend its budget on the ``O(k²)`` orderings of the second level.
"""

from __future__ import annotations

import random
from functools import lru_cache
from typing import Iterator, List, Sequence, Set, Tuple

__all__ = [
    "EXACT_UP_TO",
    "inversions",
    "mahonian",
    "orderings_by_tau",
    "orderings_with_inversions",
    "random_ordering_with_inversions",
    "tau_of_inversions",
]

EXACT_UP_TO = 8  # every inversion level enumerated exactly up to this many evidences


def inversions(order: Sequence[int]) -> int:
    """Pairs of ``order`` (a permutation of ``0..k−1``) out of their original order."""
    return sum(1 for i in range(len(order)) for j in range(i + 1, len(order)) if order[i] > order[j])


def tau_of_inversions(inv: int, k: int) -> float:
    """Kendall's tau to the original order of an ordering of ``k`` items with ``inv`` inversions."""
    return 1.0 if k < 2 else 1.0 - 4.0 * inv / (k * (k - 1))


@lru_cache(maxsize=64)
def mahonian(k: int) -> Tuple[Tuple[int, ...], ...]:
    """``table[r][d]``: orderings of ``r`` items (0 ≤ r ≤ k) with exactly ``d`` inversions."""
    table: List[Tuple[int, ...]] = [(1,)]
    for r in range(1, k + 1):
        previous, top = table[-1], r * (r - 1) // 2
        row = [sum(previous[d - j] for j in range(min(r - 1, d) + 1) if d - j < len(previous)) for d in range(top + 1)]
        table.append(tuple(row))
    return tuple(table)


def _fits(r: int, d: int) -> bool:
    return 0 <= d <= r * (r - 1) // 2


def orderings_with_inversions(k: int, d: int) -> Iterator[Tuple[int, ...]]:
    """Every ordering of ``0..k−1`` with exactly ``d`` inversions, in lexicographic order, lazily."""
    if not _fits(k, d):
        return

    def extend(prefix: Tuple[int, ...], rest: Tuple[int, ...], left: int) -> Iterator[Tuple[int, ...]]:
        if not rest:
            yield prefix
            return
        for j in range(min(len(rest) - 1, left) + 1):  # the j-th smallest first: j more inversions
            if _fits(len(rest) - 1, left - j):
                yield from extend(prefix + (rest[j],), rest[:j] + rest[j + 1 :], left - j)

    yield from extend((), tuple(range(k)), d)


def random_ordering_with_inversions(k: int, d: int, rng: random.Random) -> Tuple[int, ...]:
    """One ordering drawn uniformly from those of ``0..k−1`` with exactly ``d`` inversions."""
    if not _fits(k, d):
        raise ValueError(f"no ordering of {k} items has {d} inversions")
    table, rest, order, left = mahonian(k), list(range(k)), [], d
    while rest:
        r = len(rest)
        weights = [table[r - 1][left - j] if _fits(r - 1, left - j) else 0 for j in range(min(r - 1, left) + 1)]
        x = rng.randrange(sum(weights))
        j = 0
        while x >= weights[j]:
            x -= weights[j]
            j += 1
        order.append(rest.pop(j))
        left -= j
    return tuple(order)


def orderings_by_tau(
    k: int, exact_up_to: int = EXACT_UP_TO, level_sample: int = 32, seed: int = 0
) -> Iterator[Tuple[int, ...]]:
    """The orderings of ``0..k−1`` other than the original, in decreasing Kendall's tau, lazily.

    Exact (every ordering, lexicographic within a level) for ``k ≤ exact_up_to``; beyond, a
    level of more than ``level_sample`` orderings is a seeded uniform sample of that many.
    """
    rng = random.Random(seed)
    counts = mahonian(k)[k] if k else (1,)
    for d in range(1, len(counts)):
        if k <= exact_up_to or counts[d] <= level_sample:
            yield from orderings_with_inversions(k, d)
            continue
        drawn: Set[Tuple[int, ...]] = set()
        while len(drawn) < level_sample:
            drawn.add(random_ordering_with_inversions(k, d, rng))
        yield from sorted(drawn)
