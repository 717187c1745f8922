"""The explainers' pure math (``explain.math``) against hand-computed values and the former hand-written DBSCAN."""

from __future__ import annotations

import math
from typing import List

import numpy as np
import pytest

from llama_index_ragonite.explain.math import cosine_distances, cosine_matrix, dbscan_clusters, softmax


def reference_dbscan(embeddings: np.ndarray, eps: float = 0.005, min_samples: int = 2) -> List[List[int]]:
    """The hand-written DBSCAN that scikit-learn's replaced, kept verbatim as the reference."""
    n = len(embeddings)
    if n == 0:
        return []
    distance = 1.0 - cosine_matrix(embeddings, embeddings)
    neighbours = [np.flatnonzero(distance[i] <= eps + 1e-12).tolist() for i in range(n)]
    core = [len(neighbours[i]) >= min_samples for i in range(n)]
    label = [-1] * n
    clusters: List[List[int]] = []
    for start in range(n):
        if label[start] != -1 or not core[start]:
            continue
        members, frontier = [], [start]
        label[start] = len(clusters)
        while frontier:
            point = frontier.pop()
            members.append(point)
            if not core[point]:
                continue  # a border point joins but does not expand the cluster
            for other in neighbours[point]:
                if label[other] == -1:
                    label[other] = len(clusters)
                    frontier.append(other)
        clusters.append(sorted(members))
    clusters += [[i] for i in range(n) if label[i] == -1]
    return sorted(clusters, key=lambda c: c[0])


def test_softmax_with_temperature_matches_hand_values():
    # softmax([0.4, 0.1] / 0.05) = [e^8, e^2] / (e^8 + e^2) = [1 / (1 + e^-6), ...]
    assert softmax([0.4, 0.1], 0.05) == pytest.approx([1 / (1 + math.exp(-6)), 1 / (1 + math.exp(6))])
    assert softmax([0.3, 0.3, 0.3], 0.05) == pytest.approx([1 / 3] * 3)
    assert softmax([1000.0, 0.0], 0.05) == pytest.approx([1.0, 0.0])  # stable, no overflow
    assert softmax([0.4, 0.1], 1.0) == pytest.approx([math.exp(0.3) / (math.exp(0.3) + 1), 1 / (math.exp(0.3) + 1)])
    with pytest.raises(ValueError):
        softmax([1.0], 0)


def test_dbscan_clusters_duplicates_and_leaves_noise_as_singletons():
    a, b, c = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]
    near_a = [1.0, 0.05, 0.0]  # cosine distance to a: 1 - 1/sqrt(1.0025) = 0.00125 < 0.005
    assert dbscan_clusters(np.array([a, b, a, c, near_a])) == [[0, 2, 4], [1], [3]]
    # [1, .1] to a: 1 - 1/sqrt(1.01) = 0.00496 < eps; [1, .3] to a: 0.0422, to [1, .1]: 0.0183 > eps
    assert dbscan_clusters(np.array([a, [1.0, 0.1, 0], [1.0, 0.3, 0]])) == [[0, 1], [2]]
    assert dbscan_clusters(np.array([a, b, c])) == [[0], [1], [2]]
    assert dbscan_clusters(np.array([a, a]), min_samples=3) == [[0], [1]]
    assert dbscan_clusters(np.zeros((0, 3))) == []


def test_dbscan_border_point_joins_but_does_not_chain():
    # 1-D angles: p0 --0.004-- p1 --0.004-- p2 ; with min_samples=3 only p1 is core,
    # p0 and p2 are its border points: one cluster of three.
    def unit(deg):
        return [math.cos(math.radians(deg)), math.sin(math.radians(deg))]

    step = math.degrees(math.acos(1 - 0.004))
    pts = np.array([unit(0), unit(step), unit(2 * step), unit(10 * step)])
    assert dbscan_clusters(pts, eps=0.005, min_samples=3) == [[0, 1, 2], [3]]
    # min_samples=2: every point within eps of another is core -> same cluster, far point alone
    assert dbscan_clusters(pts, eps=0.005, min_samples=2) == [[0, 1, 2], [3]]
    # a tighter eps splits them
    assert dbscan_clusters(pts, eps=0.003, min_samples=2) == [[0], [1], [2], [3]]


def test_cosine_matrix():
    assert cosine_matrix(np.array([[1.0, 0.0]]), np.array([[1.0, 1.0], [0.0, 0.0]]))[0].tolist() == pytest.approx(
        [1 / math.sqrt(2), 0.0]
    )


def _unit(deg: float) -> List[float]:
    return [math.cos(math.radians(deg)), math.sin(math.radians(deg))]


A, B, C = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]
_STEP = math.degrees(math.acos(1 - 0.004))
EXISTING_CASES = [  # the inputs of the hand-written tests above, with their parameters
    (np.array([A, B, A, C, [1.0, 0.05, 0.0]]), 0.005, 2),
    (np.array([A, [1.0, 0.1, 0], [1.0, 0.3, 0]]), 0.005, 2),
    (np.array([A, B, C]), 0.005, 2),
    (np.array([A, A]), 0.005, 3),
    (np.zeros((0, 3)), 0.005, 2),
    (np.array([_unit(0), _unit(_STEP), _unit(2 * _STEP), _unit(10 * _STEP)]), 0.005, 3),
    (np.array([_unit(0), _unit(_STEP), _unit(2 * _STEP), _unit(10 * _STEP)]), 0.005, 2),
    (np.array([_unit(0), _unit(_STEP), _unit(2 * _STEP), _unit(10 * _STEP)]), 0.003, 2),
]


@pytest.mark.parametrize("case", range(len(EXISTING_CASES)))
def test_sklearn_dbscan_equals_the_hand_written_one_on_the_existing_cases(case):
    embeddings, eps, min_samples = EXISTING_CASES[case]
    assert dbscan_clusters(embeddings, eps, min_samples) == reference_dbscan(embeddings, eps, min_samples)


@pytest.mark.parametrize("seed", range(40))
def test_sklearn_dbscan_equals_the_hand_written_one_on_random_points(seed):
    # points scattered by small angles around a few directions: clusters, chains, border points and noise
    rng = np.random.default_rng(seed)
    n, dim = int(rng.integers(2, 25)), int(rng.integers(2, 6))
    centres = rng.normal(size=(int(rng.integers(1, 5)), dim))
    points = centres[rng.integers(0, len(centres), n)] + rng.normal(scale=rng.choice([0.01, 0.05, 0.1]), size=(n, dim))
    if seed % 4 == 0:
        points[rng.integers(0, n)] = points[0]  # an exact duplicate
    eps = float(rng.choice([0.0, 0.001, 0.005, 0.02, 0.1]))
    min_samples = int(rng.integers(1, 5))
    assert dbscan_clusters(points, eps, min_samples) == reference_dbscan(points, eps, min_samples)


def test_cosine_distances_are_one_minus_similarity():
    a = np.array([[1.0, 0.0], [1.0, 1.0]])
    assert cosine_distances(a, a) == pytest.approx(np.array([[0.0, 1 - 1 / math.sqrt(2)], [1 - 1 / math.sqrt(2), 0.0]]))
