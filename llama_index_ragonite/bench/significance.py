"""Significance tests against a baseline configuration, as marked with * in the paper's tables.

McNemar's test for paired 0/1 outcomes (P@1) — exact (binomial) by default, or the
chi-squared version with continuity correction — and a one-tailed paired t-test for graded
scores (MRR, recall, answer metrics), one-tailed in the direction of the observed difference.
"""

from __future__ import annotations

import math
from typing import Sequence

ALPHA = 0.05


def _discordant(a: Sequence[float], b: Sequence[float]) -> tuple:
    if len(a) != len(b):
        raise ValueError(f"paired tests need equal lengths, got {len(a)} and {len(b)}")
    return sum(1 for x, y in zip(a, b) if x > y), sum(1 for x, y in zip(a, b) if y > x)


def mcnemar(a: Sequence[float], b: Sequence[float], exact: bool = True) -> float:
    """Two-sided p-value of McNemar's test on paired 0/1 outcomes (1.0 when no pair disagrees)."""
    only_a, only_b = _discordant(a, b)
    n = only_a + only_b
    if n == 0:
        return 1.0
    if exact:
        tail = sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1)) / 2**n
        return min(1.0, 2 * tail)
    from scipy import stats  # imported here: scipy is slow to import and only needed here

    statistic = (abs(only_a - only_b) - 1) ** 2 / n
    return float(stats.chi2.sf(statistic, df=1))


def paired_t_one_tailed(a: Sequence[float], b: Sequence[float]) -> float:
    """p-value of the paired t-test that ``a`` differs from ``b`` in the direction observed."""
    if len(a) != len(b):
        raise ValueError(f"paired tests need equal lengths, got {len(a)} and {len(b)}")
    diffs = [x - y for x, y in zip(a, b)]
    if len(diffs) < 2 or all(d == diffs[0] for d in diffs):
        return 1.0 if not any(diffs) else 0.0
    from scipy import stats

    alternative = "greater" if sum(diffs) > 0 else "less"
    return float(stats.ttest_rel(a, b, alternative=alternative).pvalue)


def mark(p: float, alpha: float = ALPHA) -> str:
    """``*`` when significant at ``alpha``, as in the paper's tables."""
    return "*" if p < alpha else ""
