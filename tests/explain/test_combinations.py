from __future__ import annotations

import asyncio
import itertools
import json
import math
from typing import List, Sequence

import numpy as np
import pytest
from fakes import KeywordLLM
from llama_index.core.prompts import PromptTemplate
from llama_index.core.schema import NodeWithScore, TextNode

from llama_index_ragonite.chat.engine import LLMCallError
from llama_index_ragonite.explain.combinations import CombinationExplainer, candidate_sets, ranked_subsets
from llama_index_ragonite.explain.perturbations import relevance
from llama_index_ragonite.prompts import OUT_OF_SCOPE


def paris_llm(any_source: bool = False, **kwargs) -> KeywordLLM:
    """Answers with the first source naming Paris (any case); ``any_source``: "It is Paris." while one does."""
    return KeywordLLM(keyword="paris", ignore_case=True, fixed_answer="It is Paris." if any_source else None, **kwargs)


def make_nodes(texts_scores: Sequence[tuple]) -> List[NodeWithScore]:
    return [NodeWithScore(node=TextNode(text=t, id_=f"e{i}"), score=s) for i, (t, s) in enumerate(texts_scores)]


# E1 and E3 name Paris (different words), E2 and E4 do not.
CAPITALS = make_nodes(
    [
        ("Paris is the capital of France.", 0.9),
        ("Berlin has many museums.", 0.8),
        ("The capital city is Paris.", 0.5),
        ("Lyon lies on the Rhone.", 0.3),
    ]
)
QUESTION = "What is the capital of France?"
ANSWER_E1 = "Paris is the capital of France. [Source 1]"


# ---------------------------------------------------------------- search order (pure)


def test_candidate_sets_hand_order():
    scores = [0.9, 0.8, 0.5, 0.3]
    expected = [
        (0,), (1,), (2,), (3,),
        (0, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 3),  # sums 1.7 1.4 1.3 1.2 1.1 0.8
        (0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3),  # sums 2.2 2.0 1.7 1.6
    ]  # fmt: skip
    assert list(candidate_sets(scores, "bottom-up")) == expected
    assert list(candidate_sets(scores, "top-down")) == expected + [(0, 1, 2, 3)]


def test_ranked_subsets_ties_put_higher_ranked_members_first():
    # ranking by score: evidence 2, then 0 and 1 (tied, by index)
    assert list(ranked_subsets([0.5, 0.5, 1.0], 1)) == [(2,), (0,), (1,)]
    assert list(ranked_subsets([0.5, 0.5, 1.0], 2)) == [(0, 2), (1, 2), (0, 1)]
    assert list(ranked_subsets([0.5, 0.5], 0)) == [()]
    assert list(ranked_subsets([0.5, 0.5], 3)) == []


def test_ranked_subsets_match_brute_force():
    scores = list(np.random.default_rng(7).random(8).round(2))  # rounding makes ties likely
    for size in range(9):
        got = list(ranked_subsets(scores, size))
        assert sorted(got) == list(itertools.combinations(range(8), size))
        sums = [math.fsum(scores[i] for i in subset) for subset in got]
        assert sums == sorted(sums, reverse=True)


def test_relevance_falls_back_to_rank_when_a_score_is_missing():
    nodes = make_nodes([("a", 0.2), ("b", None), ("c", 0.9)])
    assert relevance(nodes) == [3.0, 2.0, 1.0]
    assert relevance(CAPITALS) == [0.9, 0.8, 0.5, 0.3]


# ---------------------------------------------------------------- explanations


def test_top_down_finds_the_smallest_most_relevant_removal():
    llm = paris_llm(any_source=True)  # the answer survives while E1 or E3 remains
    explainer = CombinationExplainer(llm=llm, max_concurrency=1, distribution_size=0)  # the search's cost alone
    report = explainer.explain(QUESTION, CAPITALS, "It is Paris. [Source 1]")
    assert report.found and report.mode == "top-down"
    assert report.explanation.removed == (0, 2) and report.explanation.evidences == (1, 3)
    assert report.counterfactual_answer == OUT_OF_SCOPE
    # one at a time: the four singles, then pairs by summed relevance until {E1, E3}
    assert [p.removed for p in report.perturbations] == [(0,), (1,), (2,), (3,), (0, 1), (0, 2)]
    assert [p.changed for p in report.perturbations] == [False] * 5 + [True]
    assert report.llm_calls == 6 and report.failures == 0
    assert "removing Evidence 1, 3 changes the answer" in report.to_text()


def test_batches_stop_after_the_first_batch_with_a_change():
    llm = paris_llm(any_source=True)
    explainer = CombinationExplainer(llm=llm, max_concurrency=4, distribution_size=0)
    report = explainer.explain(QUESTION, CAPITALS, "It is Paris. [Source 1]")
    # batch 1: the singles; batch 2: (0,1) (0,2) (1,2) (0,3) — evaluated entirely, first change reported
    assert [p.removed for p in report.perturbations][4:] == [(0, 1), (0, 2), (1, 2), (0, 3)]
    assert [p.changed for p in report.perturbations][4:] == [False, True, False, False]
    assert report.explanation.removed == (0, 2)
    assert report.llm_calls == 8


def test_bottom_up_keeps_the_smallest_set_that_turns_the_empty_context_answer_into_the_target():
    llm = paris_llm(any_source=True)  # "It is Paris." while E1 or E3 is there; out of scope with no source
    explainer = CombinationExplainer(llm=llm, mode="bottom-up", max_concurrency=1, distribution_size=0)
    report = explainer.explain(QUESTION, CAPITALS, "It is Paris. [Source 1]")
    assert report.mode == "bottom-up"
    assert report.reference_answer == OUT_OF_SCOPE  # the LLM asked with no evidence
    assert report.target_answer == "It is Paris. [Source 1]"  # by default the original answer
    assert [p.evidences for p in report.perturbations] == [(0,)]  # E1 alone already gives the target
    assert report.explanation.evidences == (0,) and report.explanation.removed == (1, 2, 3)
    assert report.llm_calls == 2  # the empty context, then keeping E1
    assert "Empty-context answer: " + OUT_OF_SCOPE in report.to_text()
    assert "keeping only Evidence 1 turns the empty-context answer into the target answer" in report.to_text()


def test_citation_markers_and_punctuation_do_not_count_as_changes():
    llm = paris_llm()
    # the original cites [Source 3] and shouts; regenerations cite other numbers
    report = CombinationExplainer(llm=llm, max_concurrency=16, distribution_size=None).explain(
        QUESTION, CAPITALS, "PARIS is the capital of France!! [Source 3]"
    )
    by_removed = {p.removed: p for p in report.perturbations}
    assert by_removed[(1,)].answer == "Paris is the capital of France. [Source 1]"
    assert not by_removed[(1,)].changed
    assert by_removed[(0,)].changed
    assert report.explanation.removed == (0,)
    assert report.counterfactual_answer == "The capital city is Paris. [Source 2]"  # E3, renumbered
    assert report.distribution[0].original and report.distribution[0].count == 7


def test_distribution_and_rules_over_all_combinations():
    llm = paris_llm()  # E1's sentence while E1 is there, else E3's, else out of scope
    report = CombinationExplainer(llm=llm, max_concurrency=16, distribution_size=None).explain(
        QUESTION, CAPITALS, ANSWER_E1
    )
    assert len(report.perturbations) == 15  # one batch holds the whole search
    assert len(report.analysis.perturbations) == 15  # every removal; the search's answers are reused
    assert report.explanation.removed == (0,)
    assert report.llm_calls == 14  # removing all four needs no call
    dist = [(s.text, s.count, round(s.share, 4), s.original) for s in report.distribution]
    assert dist == [
        ("Paris is the capital of France. [Source 1]", 7, round(7 / 15, 4), True),
        ("The capital city is Paris. [Source 2]", 4, round(4 / 15, 4), False),
        (OUT_OF_SCOPE, 4, round(4 / 15, 4), False),
    ]
    rules = [(r.support, r.relation, r.evidences) for r in report.rules]
    assert rules == [(7, "include", (0,)), (4, "include", (2,)), (4, "exclude", (0,)), (4, "exclude", (0, 2))]
    assert report.rules[0].text == "All 7 combinations giving 'Paris is the capital of France.' include Evidence 1"
    assert report.rules[3].text.endswith("exclude Evidence 1, 3")
    text = report.to_text()
    assert "      7   46.7%  Paris is the capital of France.  (original)" in text
    assert "All 4 combinations giving 'The capital city is Paris.' exclude Evidence 1" in text


def test_min_rule_support_drops_rules_of_rare_answers():
    llm = paris_llm()
    report = CombinationExplainer(llm=llm, max_concurrency=16, min_rule_support=5, distribution_size=None).explain(
        QUESTION, CAPITALS, ANSWER_E1
    )
    assert [(r.support, r.relation) for r in report.rules] == [(7, "include")]


def test_evaluation_cap():
    llm = paris_llm(any_source=True)
    report = CombinationExplainer(llm=llm, max_concurrency=2, max_evaluations=3, distribution_size=0).explain(
        QUESTION, CAPITALS, "It is Paris. [Source 1]"
    )
    assert not report.found and report.counterfactual_answer is None
    assert [p.removed for p in report.perturbations] == [(0,), (1,), (2,)]
    assert report.llm_calls == 3
    assert "none of the 3 evaluated combinations changes the answer" in report.to_text()


def test_failed_calls_are_failures_not_changes():
    llm = paris_llm(any_source=True, fail_on="Lyon")  # every prompt holding E4 fails
    report = CombinationExplainer(llm=llm, max_concurrency=1, max_evaluations=6, distribution_size=0).explain(
        QUESTION, CAPITALS, "It is Paris. [Source 1]"
    )
    assert [p.failed for p in report.perturbations] == [True, True, True, False, True, True]
    assert not any(p.changed for p in report.perturbations) and not report.found
    assert report.failures == 5 and len(report.errors) == 5
    assert report.llm_calls == 5 * 2 + 1  # each failing call is retried once
    assert report.distribution == [] and report.analysis is None  # distribution_size=0: no analysis
    assert "Answer counterfactuals (6 tried, 0 counterfactual):" in report.to_text()
    assert "    removing Evidence 1 -> (LLM call failed)" in report.to_text()
    assert report.to_dict()["failures"] == 5


def test_missing_answer_is_computed_first_and_a_failing_original_raises():
    llm = paris_llm()
    report = CombinationExplainer(llm=llm, max_concurrency=1, distribution_size=0).explain(QUESTION, CAPITALS)
    assert report.original_answer == ANSWER_E1
    assert report.llm_calls == 2  # the original answer, then removing E1 changes it
    with pytest.raises(LLMCallError, match="unperturbed prompt: RuntimeError: cannot answer"):
        CombinationExplainer(llm=paris_llm(fail_on="Paris"), retries=0).explain(QUESTION, CAPITALS)


def test_prompt_and_async_path():
    llm = paris_llm()
    prompt = PromptTemplate("CUSTOM PROMPT\n{sources}\n-----------\n{history}User: {question}\nAssistant:")
    explainer = CombinationExplainer(llm=llm, prompt=prompt, max_concurrency=1)
    report = asyncio.run(explainer.aexplain(QUESTION, CAPITALS, ANSWER_E1))
    assert report.explanation.removed == (0,)
    assert llm.prompts and all(p.startswith("CUSTOM PROMPT\n### Source 1 ###") for p in llm.prompts)


def test_max_concurrency_bounds_the_calls_in_flight():
    llm = paris_llm(any_source=True, delay=0.01)
    report = CombinationExplainer(llm=llm, max_concurrency=3).explain(QUESTION, CAPITALS, "It is Paris. [Source 1]")
    assert llm.max_in_flight == 3
    assert len(report.perturbations) == 6  # two batches of three; (0, 2) is in the second


def test_report_dict_is_json_and_complete():
    report = CombinationExplainer(llm=paris_llm(), max_concurrency=16, distribution_size=None).explain(
        QUESTION, CAPITALS, ANSWER_E1
    )
    data = json.loads(json.dumps(report.to_dict()))
    assert data["mode"] == "top-down" and data["found"] is True
    assert data["explanation"]["removed"] == [0] and data["explanation"]["evidences"] == [1, 2, 3]
    assert data["counterfactual_answer"] == "The capital city is Paris. [Source 2]"
    assert len(data["perturbations"]) == 15 and data["llm_calls"] == 14
    assert [d["count"] for d in data["distribution"]] == [7, 4, 4]
    assert data["rules"][0]["evidences"] == [0] and data["rules"][0]["relation"] == "include"


def test_plots_png_and_svg(tmp_path):
    report = CombinationExplainer(llm=paris_llm(), max_concurrency=16).explain(QUESTION, CAPITALS, ANSWER_E1)
    png, svg = report.plot(tmp_path / "answers.png"), report.plot(tmp_path / "answers.svg")
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert "<svg" in svg.read_text()
    with pytest.raises(ValueError, match="png or .svg"):
        report.plot(tmp_path / "answers.pdf")


def test_plot_without_matplotlib_names_the_extra(tmp_path, monkeypatch):
    report = CombinationExplainer(llm=paris_llm(), max_concurrency=16).explain(QUESTION, CAPITALS, ANSWER_E1)
    monkeypatch.setitem(__import__("sys").modules, "matplotlib.figure", None)
    monkeypatch.setitem(__import__("sys").modules, "matplotlib.backends.backend_agg", None)
    with pytest.raises(ImportError, match=r"\[plots\]"):
        report.plot(tmp_path / "answers.png")


def test_default_llm_is_the_offline_extractive_answerer():
    from llama_index_ragonite.models.extractive import ExtractiveAnswerer

    assert isinstance(CombinationExplainer().llm, ExtractiveAnswerer)
    assert CombinationExplainer().to_dict()["class_name"] == "CombinationExplainer"


EIFFEL = make_nodes(
    [
        ("The Eiffel Tower was built in 1889 for the World's Fair.", 0.9),
        ("Paris is the capital of France.", 0.5),
        ("The Louvre is a museum in Paris.", 0.3),
    ]
)


def test_extractive_answerer_end_to_end():
    question = "When was the Eiffel Tower built?"
    top_down = CombinationExplainer(max_concurrency=1).explain(question, EIFFEL)
    assert top_down.original_answer.startswith("Extractive answer:") and "1889" in top_down.original_answer
    assert top_down.explanation.removed == (0,)
    assert "1889" not in top_down.counterfactual_answer
    bottom_up = CombinationExplainer(mode="bottom-up", max_concurrency=1).explain(question, EIFFEL)
    assert "1889" not in bottom_up.reference_answer  # no evidence: out of scope
    assert [p.changed for p in bottom_up.perturbations] == [True]  # E1 alone gives the original answer
    assert bottom_up.explanation.evidences == (0,)
