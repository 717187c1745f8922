"""Rank fusion as pure functions: reciprocal rank fusion (Cormack et al., 2009)."""

from __future__ import annotations

from typing import Dict, Hashable, List, Mapping, Optional, Sequence, Tuple, Union

Ranking = Union[Sequence[Hashable], Mapping[Hashable, int]]

RRF_K = 60  # the constant of the original paper, used by RAGonite


def _ranked(ranking: Ranking):
    """(rank, item) pairs of a best-first list, or of an item -> rank mapping (ties allowed)."""
    if isinstance(ranking, Mapping):
        return [(rank, item) for item, rank in ranking.items()]
    return list(enumerate(ranking, start=1))


def rrf_scores(
    rankings: Sequence[Ranking], k: int = RRF_K, weights: Optional[Sequence[float]] = None
) -> Dict[Hashable, float]:
    """RRF score of every item: sum over rankings of ``weight / (k + rank)``, rank 1-based.

    Args:
        rankings: each a best-first list of item ids (an id appears at most once per list),
            or a mapping item id -> 1-based rank, where items may share a rank.
        k: damping constant; larger k flattens the difference between top ranks.
        weights: one weight per ranking (default 1.0 each).
    """
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    weights = [1.0] * len(rankings) if weights is None else list(weights)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    scores: Dict[Hashable, float] = {}
    for ranking, weight in zip(rankings, weights):
        for rank, item in _ranked(ranking):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return scores


def rrf_fuse(
    rankings: Sequence[Ranking], k: int = RRF_K, weights: Optional[Sequence[float]] = None
) -> List[Tuple[Hashable, float]]:
    """Items best first by RRF score; ties keep the order of first appearance (deterministic)."""
    scores = rrf_scores(rankings, k, weights)
    first_seen: Dict[Hashable, int] = {}
    for ranking in rankings:
        for item in ranking:
            first_seen.setdefault(item, len(first_seen))
    return sorted(scores.items(), key=lambda pair: (-pair[1], first_seen[pair[0]]))
