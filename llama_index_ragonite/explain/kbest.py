"""Pure functions behind the permutation explainer: k-best assignments, Kendall's tau, Fisher–Yates.

RAGE looks for the reorderings of the evidences closest to the original that change the
answer. Its candidates are random orderings (``fisher_yates``) and the few best orderings
that put relevant evidences where the LLM pays most attention — an assignment problem whose
k best solutions ``k_best_assignments`` enumerates (Murty's method). ``kendall_tau`` orders
the candidates by closeness to the original order.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Hashable, List, Sequence, Tuple

import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["fisher_yates", "k_best_assignments", "kendall_tau"]


def _solve(cost: np.ndarray) -> Tuple[float, np.ndarray] | None:
    """Optimal assignment of a square matrix with ``inf`` for forbidden cells; ``None`` if infeasible."""
    try:
        rows, cols = linear_sum_assignment(cost)
    except ValueError:  # scipy: "cost matrix is infeasible"
        return None
    total = cost[rows, cols].sum()
    return (float(total), cols.astype(int)) if np.isfinite(total) else None


def k_best_assignments(cost: np.ndarray, k: int) -> List[Tuple[float, np.ndarray]]:
    """The ``k`` cheapest distinct assignments of a square cost matrix (Murty's method).

    Args:
        cost: ``(n, n)`` costs, ``cost[i, j]`` for assigning row ``i`` to column ``j``;
            ``inf`` forbids a cell.
        k: how many assignments to return at most.

    Returns:
        Up to ``k`` pairs ``(total cost, cols)`` in non-decreasing total cost, where
        ``cols[i]`` is the column of row ``i``; fewer when fewer feasible assignments exist.

    Murty partitions the solutions that remain after the best one ``a`` into ``n - 1``
    disjoint subproblems (the i-th keeps ``a``'s first ``i`` cells and forbids its ``(i+1)``-th),
    solves each with ``linear_sum_assignment`` and repeats on the cheapest: every assignment
    turns up once, in order of cost.
    """
    cost = np.asarray(cost, dtype=float)
    if cost.ndim != 2 or cost.shape[0] != cost.shape[1]:
        raise ValueError(f"cost must be a square matrix, got shape {cost.shape}")
    if k < 0:
        raise ValueError("k must be >= 0")
    n = cost.shape[0]
    if k == 0:
        return []
    if n == 0:
        return [(0.0, np.zeros(0, dtype=int))]
    first = _solve(cost)
    if first is None:
        return []
    tie = itertools.count()  # equal costs leave the heap in the order they were found
    heap = [(first[0], next(tie), first[1], cost)]
    found: List[Tuple[float, np.ndarray]] = []
    while heap and len(found) < k:
        total, _, cols, matrix = heapq.heappop(heap)
        found.append((total, cols))
        fixed = matrix.copy()
        for i in range(n - 1):  # forbidding the last cell once the others are kept is infeasible
            sub = fixed.copy()
            sub[i, cols[i]] = np.inf
            solved = _solve(sub)
            if solved is not None:
                heapq.heappush(heap, (solved[0], next(tie), solved[1], sub))
            keep = fixed[i, cols[i]]
            fixed[i, :] = np.inf
            fixed[:, cols[i]] = np.inf
            fixed[i, cols[i]] = keep
    return found


def kendall_tau(order_a: Sequence[Hashable], order_b: Sequence[Hashable]) -> float:
    """Kendall's rank correlation of two orderings of the same distinct items, in ``[-1, 1]``.

    ``(concordant - discordant) / (n (n - 1) / 2)`` over all item pairs: 1 for the same
    order, -1 for the reversed one. Fewer than two items: 1.
    """
    if len(order_a) != len(order_b) or set(order_a) != set(order_b) or len(set(order_a)) != len(order_a):
        raise ValueError("kendall_tau needs two orderings of the same distinct items")
    n = len(order_a)
    if n < 2:
        return 1.0
    position = {item: p for p, item in enumerate(order_b)}
    ranks = [position[item] for item in order_a]
    score = sum(1 if ranks[i] < ranks[j] else -1 for i in range(n) for j in range(i + 1, n))
    return score / (n * (n - 1) / 2)


def fisher_yates(n: int, rng: np.random.Generator) -> List[int]:
    """A uniformly random permutation of ``0..n-1`` (Fisher–Yates shuffle, ``rng.integers`` draws)."""
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        j = int(rng.integers(0, i + 1))
        order[i], order[j] = order[j], order[i]
    return order
