"""The pure math behind the explainers, one place for every formula (bm25s-style pure functions).

Attribution (``attribution.py``, ``surrogate.py``): cosine similarity, DBSCAN over evidence
embeddings (scikit-learn), a tempered softmax, random keep/drop masks and the Lasso the
surrogate fits. Permutations (``permutations.py``): the k best assignments (Murty's method),
Kendall's tau and the Fisher–Yates shuffle. Nothing here calls an LLM or an embedding model:
each function maps arrays to arrays and is tested against hand-computed values.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Hashable, List, Sequence, Tuple

import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = [
    "alpha_max",
    "cosine_distances",
    "cosine_matrix",
    "dbscan_clusters",
    "fisher_yates",
    "held_softmax",
    "k_best_assignments",
    "kendall_tau",
    "lasso",
    "sample_masks",
    "softmax",
]

_MAX_EXHAUSTIVE = 20  # above this many evidences 2**n masks are never enumerated
_EPS_SLACK = 1e-12  # DBSCAN radius slack: rounding never splits identical vectors (and eps=0 stays valid)


# -- similarity and clustering -------------------------------------------------
def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise cosine similarity of the rows of two matrices; a zero row has similarity 0 to everything.

    Parameters
    ----------
    a : array of shape (n, d)
    b : array of shape (m, d)

    Returns
    -------
    array of shape (n, m)
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    na = np.linalg.norm(a, axis=1, keepdims=True)
    nb = np.linalg.norm(b, axis=1, keepdims=True)
    return (a / np.where(na == 0, 1, na)) @ (b / np.where(nb == 0, 1, nb)).T


def cosine_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``1 - cosine_matrix(a, b)``: the distance DBSCAN's ``eps`` is measured in, shape (n, m)."""
    return 1.0 - cosine_matrix(a, b)


def dbscan_clusters(embeddings: np.ndarray, eps: float = 0.005, min_samples: int = 2) -> List[List[int]]:
    """DBSCAN with cosine distance (scikit-learn); noise points become singleton clusters.

    A point's neighbourhood includes itself, so with ``min_samples=2`` two evidences closer
    than ``eps`` form a cluster; a border point joins the first cluster that reaches it and
    does not expand it.

    Parameters
    ----------
    embeddings : array of shape (n, d)
    eps : float
        Neighbourhood radius in cosine distance (>= 0; distances equal to it count).
    min_samples : int
        Neighbours (itself included) that make a core point.

    Returns
    -------
    list of clusters
        Each a sorted list of row indices; clusters ordered by their first member, so a
        partition of ``range(n)``.
    """
    embeddings = np.asarray(embeddings, dtype=float)
    n = len(embeddings)
    if n == 0:
        return []
    from sklearn.cluster import DBSCAN  # imported when first needed: importing the package stays fast

    labels = DBSCAN(eps=eps + _EPS_SLACK, min_samples=min_samples, metric="cosine").fit(embeddings).labels_
    clusters = [np.flatnonzero(labels == label).tolist() for label in np.unique(labels[labels >= 0])]
    clusters += [[i] for i in np.flatnonzero(labels < 0).tolist()]
    return sorted(clusters, key=lambda c: c[0])


def softmax(scores: Sequence[float], temperature: float = 0.05) -> np.ndarray:
    """``softmax(scores / temperature)``, computed stably.

    Parameters
    ----------
    scores : array of shape (k,)
    temperature : float
        > 0; small values sharpen the distribution (the paper's t = 0.05).

    Returns
    -------
    array of shape (k,) summing to 1 (empty for no scores)
    """
    if temperature <= 0:
        raise ValueError("temperature must be > 0")
    x = np.asarray(scores, dtype=float) / temperature
    if x.size == 0:
        return x
    e = np.exp(x - x.max())
    return e / e.sum()


def held_softmax(scores: Sequence[float], held: int, temperature: float = 0.05) -> np.ndarray:
    """The shares of ``scores`` in a softmax that also holds ``held`` places at score 0.

    The held places are scores that are unknown but at least 0 (a counterfactual call that
    failed): they keep their weight in the normalisation without a share of their own, so
    the returned shares (one per score) are upper bounds that sum to less than 1, never
    inflated as if the unknown ones did not exist. ``held=0`` is exactly ``softmax``.
    """
    if held < 0:
        raise ValueError("held must be >= 0")
    return softmax([*scores, *[0.0] * held], temperature)[: len(scores)]


# -- the surrogate: masks and a sparse linear fit --------------------------------
def lasso(
    X: np.ndarray, y: np.ndarray, alpha: float, max_iter: int = 10_000, tol: float = 1e-10
) -> Tuple[np.ndarray, float]:
    """Lasso by cyclic coordinate descent: (w, b) minimizing ``||y - Xw - b||² / (2N) + alpha·||w||₁``.

    The scikit-learn objective (the intercept ``b`` is not penalized): columns and target are
    centred, each coordinate is soft-thresholded in turn until no weight moves more than
    ``tol``. ``alpha=0`` is ordinary least squares (minimum-norm is not guaranteed when
    columns are collinear). A constant column gets weight 0.

    Parameters
    ----------
    X : array of shape (N, p)
        The design (here: 0/1 masks).
    y : array of shape (N,)
        The targets.
    alpha : float
        L1 penalty, >= 0.

    Returns
    -------
    (w, b)
        Weights of shape (p,) and the intercept.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if alpha < 0:
        raise ValueError("alpha must be >= 0")
    n, p = X.shape
    if n == 0:
        raise ValueError("lasso needs at least one row")
    x_mean, y_mean = X.mean(axis=0), y.mean()
    Xc, yc = X - x_mean, y - y_mean
    norms = (Xc**2).sum(axis=0) / n
    w = np.zeros(p)
    residual = yc.copy()
    for _ in range(max_iter):
        largest = 0.0
        for j in range(p):
            if norms[j] <= 1e-15:
                continue
            old = w[j]
            rho = Xc[:, j] @ residual / n + norms[j] * old
            new = math.copysign(max(abs(rho) - alpha, 0.0), rho) / norms[j]
            if new != old:
                residual -= Xc[:, j] * (new - old)
                w[j] = new
                largest = max(largest, abs(new - old))
        if largest <= tol:
            break
    return w, float(y_mean - x_mean @ w)


def alpha_max(X: np.ndarray, y: np.ndarray) -> float:
    """The smallest L1 penalty at which ``lasso`` sets every weight to 0: ``max_j |x̃_j · ỹ| / N`` (centred)."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if len(X) == 0:
        return 0.0
    return float(np.abs((X - X.mean(axis=0)).T @ (y - y.mean())).max(initial=0.0) / len(X))


def sample_masks(n: int, n_masks: int, keep_probability: float = 0.5, seed: int = 0) -> np.ndarray:
    """``n_masks`` distinct keep (1) / drop (0) masks over ``n`` evidences: a 0/1 array of shape (m, n).

    Never the all-kept mask. When at most ``n_masks`` masks exist besides it (``2**n - 1``),
    all of them, in binary order. Otherwise each entry is kept with ``keep_probability``
    (``numpy.random.default_rng(seed)``), duplicates are redrawn, and a column that came out
    constant is repaired by flipping it in one mask (one that stays distinct and not all-kept),
    so each evidence is both kept and dropped at least once whenever ``n_masks >= 2``.
    """
    if n < 0 or n_masks < 0:
        raise ValueError("n and n_masks must be >= 0")
    if not 0.0 < keep_probability < 1.0:
        raise ValueError("keep_probability must be in (0, 1)")
    if n == 0 or n_masks == 0:
        return np.zeros((0, n), dtype=int)
    if n <= _MAX_EXHAUSTIVE and 2**n - 1 <= n_masks:
        return np.array([[(k >> (n - 1 - j)) & 1 for j in range(n)] for k in range(2**n - 1)], dtype=int)
    rng = np.random.default_rng(seed)
    seen: set = set()
    rows: List[Tuple[int, ...]] = []
    attempts = 0
    while len(rows) < n_masks and attempts < 1000 * n_masks:
        attempts += 1
        row = tuple(int(v) for v in rng.random(n) < keep_probability)
        if all(row) or row in seen:
            continue
        seen.add(row)
        rows.append(row)
    masks = np.array(rows, dtype=int).reshape(len(rows), n)
    if len(masks) >= 2:
        for j in range(n):
            column = masks[:, j]
            if column.min() != column.max():
                continue
            for i in rng.permutation(len(masks)):
                flipped = masks[i].copy()
                flipped[j] = 1 - flipped[j]
                key = tuple(int(v) for v in flipped)
                if not flipped.all() and key not in seen:
                    seen.discard(tuple(int(v) for v in masks[i]))
                    seen.add(key)
                    masks[i] = flipped
                    break
    return masks


# -- permutations: k-best assignments, Kendall's tau, Fisher–Yates ---------------
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

    Parameters
    ----------
    cost : array of shape (n, n)
        ``cost[i, j]`` for assigning row ``i`` to column ``j``; ``inf`` forbids a cell.
    k : int
        How many assignments to return at most.

    Returns
    -------
    list of (total cost, cols)
        Up to ``k`` pairs in non-decreasing total cost, ``cols`` of shape (n,) holding the
        column of each row; fewer when fewer feasible assignments exist.

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
