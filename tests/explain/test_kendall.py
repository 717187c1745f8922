from __future__ import annotations

import itertools
import random
from collections import Counter
from itertools import islice

import pytest

from llama_index_ragonite.explain.kendall import (
    inversions,
    mahonian,
    orderings_by_tau,
    orderings_with_inversions,
    random_ordering_with_inversions,
    tau_of_inversions,
)
from llama_index_ragonite.explain.math import kendall_tau


@pytest.mark.parametrize("k", range(7))
def test_exact_order_matches_brute_force(k):
    original = tuple(range(k))
    brute = sorted(
        (p for p in itertools.permutations(range(k)) if p != original), key=lambda p: (-kendall_tau(original, p), p)
    )
    assert list(orderings_by_tau(k)) == brute
    assert all(tau_of_inversions(inversions(p), k) == pytest.approx(kendall_tau(original, p)) for p in brute)


def test_mahonian_numbers():
    assert mahonian(5)[5] == (1, 4, 9, 15, 20, 22, 20, 15, 9, 4, 1)
    assert sum(mahonian(7)[7]) == 5040


def test_levels_beyond_the_exact_bound_are_seeded_samples_in_decreasing_tau():
    k = 12
    first = list(islice(orderings_by_tau(k, exact_up_to=8, level_sample=16, seed=2), 11 + 16 + 16))
    assert first[:11] == list(orderings_with_inversions(k, 1))  # 11 adjacent swaps: the whole level
    assert [inversions(p) for p in first] == [1] * 11 + [2] * 16 + [3] * 16
    assert len(set(first)) == len(first)
    assert first == list(islice(orderings_by_tau(k, exact_up_to=8, level_sample=16, seed=2), len(first)))


def test_a_level_draw_is_uniform():
    rng = random.Random(0)
    counts = Counter(random_ordering_with_inversions(5, 2, rng) for _ in range(9000))
    assert set(counts) == set(orderings_with_inversions(5, 2)) and len(counts) == 9
    assert min(counts.values()) > 850 and max(counts.values()) < 1150
    with pytest.raises(ValueError):
        random_ordering_with_inversions(3, 4, rng)
