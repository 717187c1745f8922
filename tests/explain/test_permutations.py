from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from fakes import KeywordLLM
from test_combinations import CAPITALS, EIFFEL, QUESTION, paris_llm  # the shared evidences

from llama_index_ragonite.explain.math import kendall_tau
from llama_index_ragonite.explain.permutations import PermutationExplainer, optimal_orderings, v_shaped_prior

ANSWER_E1 = "Paris is the capital of France. [Source 1]"


def test_v_shaped_prior_hand_values():
    assert v_shaped_prior(5) == pytest.approx([1.0, 0.5, 0.0, 0.4, 0.8])
    assert v_shaped_prior(4) == pytest.approx([1.0, 1 / 3, 4 / 15, 0.8])  # the centre (1.5) is no position
    assert v_shaped_prior(2) == pytest.approx([1.0, 0.8])
    assert v_shaped_prior(1) == pytest.approx([1.0])
    assert v_shaped_prior(3, start=2.0, middle=1.0, end=2.0) == pytest.approx([2.0, 1.0, 2.0])


def test_optimal_orderings_hand_values():
    # attention [1, 1/3, 4/15, 0.8]: most relevant first, second most relevant last
    best = optimal_orderings([4.0, 3.0, 2.0, 1.0], v_shaped_prior(4), 2)
    assert best == [(0, 2, 3, 1), (0, 3, 2, 1)]  # then the two weakest swap in the middle (loss 1/15)


def test_optimal_orderings_match_brute_force():
    scores, attention = np.random.default_rng(4).random(5), v_shaped_prior(5)

    def value(order):  # order[p] = evidence at position p
        return sum(scores[e] * attention[p] for p, e in enumerate(order))

    expected = sorted(itertools.permutations(range(5)), key=value, reverse=True)[:6]
    assert optimal_orderings(scores, attention, 6) == expected
    with pytest.raises(ValueError):
        optimal_orderings(scores, attention[:4], 1)


def test_candidates_are_distinct_non_original_in_decreasing_tau():
    explainer = PermutationExplainer(llm=paris_llm(), strategy="optimal+random", n_random=400, n_optimal=3, seed=5)
    candidates = list(explainer.orderings(CAPITALS))
    orders = [p.evidences for p in candidates]
    assert sorted(orders) == sorted(set(itertools.permutations(range(4))) - {(0, 1, 2, 3)})  # all 23 sampled
    taus = [p.kendall_tau for p in candidates]
    assert taus == sorted(taus, reverse=True)
    assert all(p.kendall_tau == pytest.approx(kendall_tau(range(4), p.evidences)) for p in candidates)
    assert [p.kendall_tau for p in candidates[:3]] == pytest.approx([2 / 3] * 3)  # the adjacent swaps
    optimal = [p.evidences for p in candidates if p.origin == "optimal"]
    # relevance 0.9 0.8 0.5 0.3: E1 first, E2 last; the 3 best orderings
    assert sorted(optimal) == sorted(optimal_orderings([0.9, 0.8, 0.5, 0.3], v_shaped_prior(4), 3))
    # the same seed gives the same candidates
    assert [p.evidences for p in explainer.orderings(CAPITALS)] == orders


def test_custom_prior_and_no_random_orderings():
    decreasing = PermutationExplainer(
        llm=paris_llm(), strategy="optimal", n_optimal=1, position_prior=lambda n: np.arange(n, 0, -1)
    )
    nodes = CAPITALS[:3][::-1]  # scores 0.5, 0.8, 0.9: the best order under a decreasing prior reverses them
    (only,) = decreasing.orderings(nodes)
    assert only.evidences == (2, 1, 0) and only.origin == "optimal" and only.kendall_tau == -1.0
    # the best ordering of already sorted evidences is the original: left out, the next best taken
    (second,) = decreasing.orderings(CAPITALS[:3])
    assert second.evidences == (1, 0, 2)  # loses 0.1 (swapping 0.9 and 0.8); (0, 2, 1) loses 0.3
    assert list(PermutationExplainer(llm=paris_llm()).orderings(CAPITALS[:1])) == []


def test_explains_with_the_closest_changing_order():
    llm = paris_llm()  # the answer is E1's sentence unless E3 comes before E1
    explainer = PermutationExplainer(
        llm=llm, strategy="optimal+random", n_random=400, seed=5, max_concurrency=1, distribution_size=0
    )
    report = explainer.explain(QUESTION, CAPITALS, ANSWER_E1)
    assert report.found and report.mode == "permutation"
    # the three adjacent swaps (tau 2/3) keep E1 before E3; the closest changes have tau 1/3
    assert [p.changed for p in report.perturbations[:3]] == [False] * 3
    assert report.explanation.kendall_tau == pytest.approx(1 / 3)
    assert report.explanation.evidences in {(1, 2, 0, 3), (2, 0, 1, 3)}
    assert report.explanation is report.perturbations[-1] and not any(p.changed for p in report.perturbations[:-1])
    assert report.counterfactual_answer.startswith("The capital city is Paris.")
    assert report.llm_calls == len(report.perturbations)
    assert "changes the answer to: The capital city is Paris." in report.to_text()


def test_distribution_and_position_rules_over_all_orderings():
    llm = KeywordLLM(keyword="")  # every source matches: the answer is the first source's sentence
    report = PermutationExplainer(llm=llm, max_concurrency=32, distribution_size=None).explain(
        QUESTION, CAPITALS, ANSWER_E1
    )
    assert len(report.perturbations) == 23 and len(report.analysis.perturbations) == 23
    assert report.explanation.evidences == (1, 0, 2, 3)  # the only tau-2/3 order not starting with E1
    assert sorted((s.count, s.original) for s in report.distribution) == [(5, True), (6, False), (6, False), (6, False)]
    assert report.distribution[-1].text == ANSWER_E1 and report.distribution[-1].share == pytest.approx(5 / 23)
    # one rule per answer: the evidence at position 1; no other position is shared
    assert sorted((r.evidences, r.position, r.support) for r in report.rules) == [
        ((0,), 0, 5),
        ((1,), 0, 6),
        ((2,), 0, 6),
        ((3,), 0, 6),
    ]
    assert "All 5 orderings giving 'Paris is the capital of France.' put Evidence 1 at position 1" in report.to_text()
    data = json.loads(json.dumps(report.to_dict()))
    assert data["explanation"]["evidences"] == [1, 0, 2, 3] and data["explanation"]["origin"] == "kendall"
    assert data["rules"][0]["relation"] == "position"


def test_evaluation_cap_and_failures():
    llm = KeywordLLM(keyword="", fail_on="### Source 1 ###\nBerlin")  # prompts starting with E2 fail
    explainer = PermutationExplainer(llm=llm, max_concurrency=2, max_evaluations=3, distribution_size=1)
    report = explainer.explain(QUESTION, CAPITALS, ANSWER_E1)
    # exactly the three adjacent swaps; (1, 0, 2, 3) would change the answer but its call fails
    assert sorted(p.evidences for p in report.perturbations) == [(0, 1, 3, 2), (0, 2, 1, 3), (1, 0, 2, 3)]
    assert [p.evidences for p in report.perturbations if p.failed] == [(1, 0, 2, 3)]
    assert not report.found and not any(p.changed for p in report.perturbations)
    assert report.failures == 1 and len(report.errors) == 1
    # the search: the failing call and its retry, two answers; the distribution over the same three
    # adjacent swaps reuses the two answers and asks the failed one again (and its retry)
    assert report.llm_calls == 2 + 2 + 2
    assert [(s.count, s.original) for s in report.distribution] == [(2, True)]
    assert report.analysis.failures == 1 and len(report.analysis.errors) == 1


def test_plot_svg(tmp_path):
    report = PermutationExplainer(llm=KeywordLLM(keyword=""), n_random=50, max_concurrency=32).explain(
        QUESTION, CAPITALS, ANSWER_E1
    )
    svg = report.plot(tmp_path / "orders.svg")
    assert "<svg" in svg.read_text() and "orderings" in svg.read_text()
    png = report.plot(tmp_path / "orders.PNG")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_extractive_answerer_end_to_end_is_order_stable():
    # only E1 answers the question, wherever it stands: no ordering changes the extractive answer
    report = PermutationExplainer(max_concurrency=32, distribution_size=None).explain(
        "When was the Eiffel Tower built?", EIFFEL
    )
    assert "1889" in report.original_answer
    assert not report.found and len(report.perturbations) == 5  # all 3! - 1 reorderings
    assert [(s.count, s.original) for s in report.distribution] == [(5, True)]
