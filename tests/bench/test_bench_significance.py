import math

import pytest
from scipy import stats

from llama_index_ragonite.bench.significance import mark, mcnemar, paired_t_one_tailed


def outcomes(only_a: int, only_b: int, both: int = 3, neither: int = 2):
    a = [1] * only_a + [0] * only_b + [1] * both + [0] * neither
    b = [0] * only_a + [1] * only_b + [1] * both + [0] * neither
    return a, b


def test_mcnemar_exact_by_hand_and_against_scipy():
    a, b = outcomes(1, 5)
    # two-sided binomial over the 6 discordant pairs: 2 * (C(6,0) + C(6,1)) / 2^6
    assert mcnemar(a, b) == pytest.approx(2 * 7 / 64)
    assert mcnemar(a, b) == pytest.approx(stats.binomtest(1, 6, 0.5).pvalue)
    assert mcnemar(*outcomes(3, 3)) == 1.0
    assert mcnemar(*outcomes(0, 0)) == 1.0
    assert mcnemar(*outcomes(0, 12)) == pytest.approx(2 / 2**12)


def test_mcnemar_chi2_with_continuity_correction():
    a, b = outcomes(1, 5)
    statistic = (abs(1 - 5) - 1) ** 2 / 6  # 1.5
    assert mcnemar(a, b, exact=False) == pytest.approx(math.erfc(math.sqrt(statistic / 2)))  # chi2(1) tail
    assert mcnemar(a, b, exact=False) == pytest.approx(stats.chi2.sf(1.5, 1))


def test_paired_t_one_tailed_by_hand_and_against_scipy():
    a = [0.5, 1.0, 0.75, 1.0, 0.25]
    b = [0.25, 0.5, 0.75, 0.5, 0.0]
    diffs = [x - y for x, y in zip(a, b)]  # .25 .5 0 .5 .25, mean .3, sd sqrt(.175 / 4)
    mean = sum(diffs) / 5
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / 4)
    t = mean / (sd / math.sqrt(5))
    assert t == pytest.approx(3.2071, abs=1e-4)
    p = paired_t_one_tailed(a, b)
    assert p == pytest.approx(stats.t.sf(t, df=4))
    assert p == pytest.approx(stats.ttest_rel(a, b, alternative="greater").pvalue)
    assert paired_t_one_tailed(b, a) == pytest.approx(p)  # one-tailed in the direction observed
    assert paired_t_one_tailed(a, a) == 1.0


def test_unequal_lengths_and_marks():
    with pytest.raises(ValueError):
        mcnemar([1, 0], [1])
    with pytest.raises(ValueError):
        paired_t_one_tailed([1.0, 0.0], [1.0])
    assert mark(0.049) == "*" and mark(0.05) == "" and mark(0.2) == ""
