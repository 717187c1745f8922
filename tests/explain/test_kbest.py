from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from scipy.stats import kendalltau

from llama_index_ragonite.explain.math import fisher_yates, k_best_assignments, kendall_tau


def brute_force(cost: np.ndarray):
    """Every assignment with its total cost, cheapest first."""
    n = cost.shape[0]
    return sorted((float(cost[range(n), p].sum()), p) for p in itertools.permutations(range(n)))


@pytest.mark.parametrize("n", [3, 4, 5])
def test_k_best_matches_brute_force_on_distinct_costs(n):
    cost = np.random.default_rng(n).random((n, n))  # continuous: no two assignments cost the same
    expected = brute_force(cost)
    for k in (1, 2, n, len(expected)):
        got = k_best_assignments(cost, k)
        assert len(got) == k
        assert [tuple(cols) for _, cols in got] == [p for _, p in expected[:k]]
        assert [c for c, _ in got] == pytest.approx([c for c, _ in expected[:k]])


@pytest.mark.parametrize("n", [3, 4, 5])
def test_k_best_with_ties_is_sorted_distinct_and_complete(n):
    cost = np.random.default_rng(10 + n).integers(0, 3, size=(n, n)).astype(float)  # many ties
    expected = brute_force(cost)
    got = k_best_assignments(cost, len(expected) + 5)  # asking for more than exist
    assert len(got) == len(expected)
    costs = [c for c, _ in got]
    assert costs == sorted(costs)
    assert costs == pytest.approx([c for c, _ in expected])
    assert len({tuple(cols) for _, cols in got}) == len(expected)
    for total, cols in got:
        assert total == pytest.approx(cost[range(n), cols].sum())


def test_k_best_hand_example():
    cost = np.array([[1.0, 2.0], [3.0, 5.0]])
    got = k_best_assignments(cost, 5)
    # identity: 1 + 5 = 6, swap: 2 + 3 = 5
    assert [(c, list(cols)) for c, cols in got] == [(5.0, [1, 0]), (6.0, [0, 1])]


def test_k_best_respects_forbidden_cells_and_edge_cases():
    cost = np.array([[0.0, np.inf, 1.0], [np.inf, 0.0, 1.0], [1.0, 1.0, np.inf]])
    got = k_best_assignments(cost, 10)
    # feasible: (0->0, 1->2, 2->1) = 2 and (0->2, 1->1, 2->0) = 2; the rest use an inf cell
    assert sorted(tuple(cols) for _, cols in got) == [(0, 2, 1), (2, 1, 0)]
    assert [c for c, _ in got] == [2.0, 2.0]
    assert k_best_assignments(np.full((2, 2), np.inf), 3) == []
    assert k_best_assignments(cost, 0) == []
    with pytest.raises(ValueError):
        k_best_assignments(np.zeros((2, 3)), 1)


def test_kendall_tau_hand_values():
    assert kendall_tau([0, 1, 2, 3], [0, 1, 2, 3]) == 1.0
    assert kendall_tau([0, 1, 2, 3], [3, 2, 1, 0]) == -1.0
    # one adjacent swap of 4 items: 5 concordant, 1 discordant pair of 6
    assert kendall_tau([0, 1, 2, 3], [1, 0, 2, 3]) == pytest.approx(4 / 6)
    # moving the first of 4 to the end: 3 discordant pairs of 6
    assert kendall_tau([0, 1, 2, 3], [1, 2, 3, 0]) == pytest.approx(0.0)
    assert kendall_tau(["a", "b", "c"], ["c", "a", "b"]) == pytest.approx(-1 / 3)
    assert kendall_tau([7], [7]) == 1.0
    with pytest.raises(ValueError):
        kendall_tau([0, 1], [0, 2])


def test_kendall_tau_orders_closeness_and_agrees_with_scipy():
    identity = list(range(5))
    closer, farther = [1, 0, 2, 3, 4], [4, 3, 2, 1, 0]
    assert kendall_tau(identity, closer) > kendall_tau(identity, [1, 0, 3, 2, 4]) > kendall_tau(identity, farther)
    rng = np.random.default_rng(0)
    for _ in range(20):
        perm = list(rng.permutation(6))
        other = list(rng.permutation(6))
        position = {item: p for p, item in enumerate(other)}
        reference = kendalltau(range(6), [position[item] for item in perm]).statistic
        assert kendall_tau(perm, other) == pytest.approx(reference)
        assert kendall_tau(perm, other) == pytest.approx(kendall_tau(other, perm))


class _AlwaysLow:
    """An rng whose draws are always the lower bound: the shuffle is fully determined."""

    def integers(self, low, high):
        return low


def test_fisher_yates_hand_trace_and_uniformity():
    # i=2: swap(2, 0) -> [2, 1, 0]; i=1: swap(1, 0) -> [1, 2, 0]
    assert fisher_yates(3, _AlwaysLow()) == [1, 2, 0]
    assert fisher_yates(0, _AlwaysLow()) == []
    assert fisher_yates(5, np.random.default_rng(3)) == fisher_yates(5, np.random.default_rng(3))
    rng = np.random.default_rng(1)
    counts = Counter(tuple(fisher_yates(3, rng)) for _ in range(6000))
    assert set(counts) == set(itertools.permutations(range(3)))
    assert all(850 < c < 1150 for c in counts.values())  # 1000 expected each, sd ~29
