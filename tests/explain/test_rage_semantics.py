"""RAGE's semantics with rule-based fake LLMs: bottom-up from the empty context to a target answer,
permutations in decreasing Kendall's tau, and an answer distribution independent of the concurrency."""

from __future__ import annotations

import itertools
from typing import Any, Callable, List

import pytest
from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM
from test_combinations import make_nodes

from llama_index_ragonite.explain.combinations import CombinationExplainer
from llama_index_ragonite.explain.distribution import AnswerDistributionAnalyzer, population, population_size
from llama_index_ragonite.explain.permutations import PermutationExplainer
from llama_index_ragonite.explain.regeneration import normalize_answer
from llama_index_ragonite.models.extractive import parse_prompt

QUESTION = "Which city hosts the meeting?"
NODES = make_nodes([(f"Fact {name}.", score) for name, score in zip("ABCDE", (0.9, 0.8, 0.7, 0.6, 0.5))])
NAMES = "ABCDE"


class RuleLLM(CustomLLM):
    """Answers ``rule(names of the sources in prompt order)``, e.g. ``["A", "C"]``."""

    _rule: Callable[[List[str]], str] = PrivateAttr()

    def __init__(self, rule: Callable[[List[str]], str]) -> None:
        super().__init__()
        self._rule = rule

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="rule")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        names = [s.evidence.removeprefix("Fact ").rstrip(".") for s in parse_prompt(prompt).sources]
        return CompletionResponse(text=self._rule(names))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        raise NotImplementedError


def meeting_rule(names: List[str]) -> str:
    """Without sources the model guesses Rome; B and D together say Oslo; C alone says Bern."""
    if not names:
        return "Probably Rome."
    if "B" in names and "D" in names:
        return "Oslo. [Source 1]"
    if "C" in names:
        return "Bern."
    return "Unknown."


def smallest_retention(rule, target: str) -> List[tuple]:
    """Brute force: every smallest set of evidences whose retention yields ``target``."""
    for size in range(1, len(NAMES) + 1):
        found = [s for s in itertools.combinations(range(5), size) if normalize(rule([NAMES[i] for i in s])) == target]
        if found:
            return found
    return []


def normalize(text: str) -> str:
    return normalize_answer(text)


def test_bottom_up_finds_the_minimal_retained_set_from_the_empty_context_answer():
    original = meeting_rule(list(NAMES))  # Oslo: B and D are both there
    explainer = CombinationExplainer(llm=RuleLLM(meeting_rule), mode="bottom-up", max_concurrency=1)
    report = explainer.explain(QUESTION, NODES, original)
    assert report.reference_answer == "Probably Rome."  # the LLM was asked with no source
    assert report.target_answer == original
    assert report.explanation.evidences == (1, 3) and report.explanation.removed == (0, 2, 4)
    assert [report.explanation.evidences] == smallest_retention(meeting_rule, normalize(original))
    # every single evidence first (none gives Oslo), then pairs by summed relevance until {B, D}
    tried = [p.evidences for p in report.perturbations]
    assert tried[:5] == [(0,), (1,), (2,), (3,), (4,)] and tried[-1] == (1, 3)
    assert [p.changed for p in report.perturbations] == [False] * (len(tried) - 1) + [True]
    text = report.to_text()
    assert "Empty-context answer: Probably Rome." in text and "Target answer: Oslo. [Source 1]" in text
    assert "keeping only Evidence 2, 4 turns the empty-context answer into the target answer" in text
    assert "  * keeping only Evidence 2, 4 -> Oslo." in text  # the counterfactuals table marks it


def test_bottom_up_with_another_target_and_when_the_empty_context_already_gives_it():
    llm = RuleLLM(meeting_rule)
    report = CombinationExplainer(llm=llm, mode="bottom-up", target="Bern", max_concurrency=1).explain(
        QUESTION, NODES, "Oslo. [Source 1]"
    )
    assert report.target_answer == "Bern" and report.explanation.evidences == (2,)
    assert [p.evidences for p in report.perturbations] == [(0,), (1,), (2,)]
    # the target is the empty-context answer: no evidence is needed, nothing is tried
    trivial = CombinationExplainer(llm=llm, mode="bottom-up", target="probably rome", distribution_size=0)
    report = trivial.explain(QUESTION, NODES, "Oslo. [Source 1]")
    assert report.explanation.evidences == () and report.perturbations == []
    assert "keeping no evidence" in report.to_text() and report.llm_calls == 1


def test_top_down_removes_from_the_full_context():
    report = CombinationExplainer(llm=RuleLLM(meeting_rule), max_concurrency=1, distribution_size=0).explain(
        QUESTION, NODES, "Oslo. [Source 1]"
    )
    assert report.explanation.removed == (1,) and report.counterfactual_answer == "Bern."
    assert report.reference_answer is None and report.target_answer is None


def test_top_down_toward_a_target_and_relevance_none_tries_prompt_order():
    # retrieval scores rise along the prompt: relevance tries E, D, ... first; none tries A, B, ...
    rising = make_nodes([(f"Fact {name}.", score) for name, score in zip("ABCDE", (0.5, 0.6, 0.7, 0.8, 0.9))])
    common = dict(llm=RuleLLM(meeting_rule), max_concurrency=1, distribution_size=0, target="Bern.")
    by_relevance = CombinationExplainer(**common).explain(QUESTION, rising, "Oslo. [Source 1]")
    in_prompt_order = CombinationExplainer(relevance="none", **common).explain(QUESTION, rising, "Oslo. [Source 1]")
    assert by_relevance.explanation.removed == (3,) and in_prompt_order.explanation.removed == (1,)
    assert by_relevance.counterfactual_answer == in_prompt_order.counterfactual_answer == "Bern."
    assert by_relevance.target_answer == "Bern." and "gives the target answer" in by_relevance.to_text()
    unknown = CombinationExplainer(**{**common, "target": "Unknown."}).explain(QUESTION, NODES, "Oslo. [Source 1]")
    assert unknown.explanation.removed == (1, 2) and unknown.counterfactual_answer == "Unknown."  # not Bern: the target


def swap_rule(names: List[str]) -> str:
    """The answer flips when D comes before C (one adjacent swap of the original A B C D E)."""
    return "Lyon." if names.index("D") < names.index("C") else "Oslo."


def test_permutations_find_the_adjacent_swap_at_tau_0_8():
    explainer = PermutationExplainer(llm=RuleLLM(swap_rule), max_concurrency=1, distribution_size=0)
    report = explainer.explain(QUESTION, NODES, "Oslo.")
    assert report.explanation.evidences == (0, 1, 3, 2, 4)
    assert report.explanation.kendall_tau == pytest.approx(0.8)
    assert [p.kendall_tau for p in report.perturbations] == pytest.approx([0.8, 0.8])  # (0,1,2,4,3), then it
    assert report.counterfactual_answer == "Lyon." and report.llm_calls == 2
    assert "Kendall's tau 0.80) changes the answer to: Lyon." in report.to_text()


def test_permutation_strategies_are_selectable():
    for strategy in ("random", "optimal", "optimal+random"):
        explainer = PermutationExplainer(llm=RuleLLM(swap_rule), strategy=strategy, distribution_size=0)
        candidates = list(explainer.orderings(NODES))
        assert {p.origin for p in candidates} <= set(strategy.split("+"))
        assert [p.kendall_tau for p in candidates] == sorted((p.kendall_tau for p in candidates), reverse=True)


@pytest.mark.parametrize("kind", ["remove", "keep", "reorder"])
def test_distribution_is_identical_for_any_concurrency(kind):
    def run(concurrency: int):
        analyzer = AnswerDistributionAnalyzer(
            llm=RuleLLM(meeting_rule), kind=kind, max_size=2, max_concurrency=concurrency
        )
        return analyzer.explain(QUESTION, NODES, "Oslo. [Source 1]")

    one, sixteen = run(1), run(16)
    expected = {"remove": 5 + 10, "keep": 5 + 10, "reorder": 4 + 9}[kind]
    assert len(one.perturbations) == expected == one.population
    assert one.to_dict() | {"wall_time_s": 0} == sixteen.to_dict() | {"wall_time_s": 0}
    assert [(g[0].text, [p.describe() for p in g[1]]) for g in one.groupings] == [
        (g[0].text, [p.describe() for p in g[1]]) for g in sixteen.groupings
    ]


def test_the_explainers_distribution_does_not_depend_on_where_the_search_stopped():
    def report(concurrency: int):
        explainer = CombinationExplainer(llm=RuleLLM(meeting_rule), max_concurrency=concurrency)
        return explainer.explain(QUESTION, NODES, "Oslo. [Source 1]")

    one, sixteen = report(1), report(16)
    assert len(one.perturbations) != len(sixteen.perturbations)  # the search saw different batches
    assert one.analysis.to_dict() | {"wall_time_s": 0, "llm_calls": 0} == sixteen.analysis.to_dict() | {
        "wall_time_s": 0,
        "llm_calls": 0,
    }
    removals = [p.removed for p in one.analysis.perturbations]
    assert removals == [(i,) for i in range(5)] + list(itertools.combinations(range(5), 2))
    counts = {s.text: s.count for s in one.distribution}
    # Oslo while B and D stay (6 removals), else Bern while C stays (7), else Unknown (2)
    assert counts == {"Oslo. [Source 1]": 6, "Bern.": 7, "Unknown.": 2}
    assert "Answer groupings:" in one.to_text() and "Rules:" in one.to_text()


def test_a_seeded_sample_is_deterministic_and_uniform_over_the_population():
    def sample(seed: int):
        analyzer = AnswerDistributionAnalyzer(
            llm=RuleLLM(meeting_rule), kind="keep", max_size=3, sample=8, seed=seed, max_concurrency=16
        )
        return analyzer.explain(QUESTION, NODES, "Oslo. [Source 1]")

    first, again, other = sample(3), sample(3), sample(4)
    assert [p.evidences for p in first.perturbations] == [p.evidences for p in again.perturbations]
    assert [p.evidences for p in first.perturbations] != [p.evidences for p in other.perturbations]
    assert len(first.perturbations) == 8 and first.population == 5 + 10 + 10
    assert "random sample (seed 3) of 8 of 25" in first.to_text()
    # beyond the enumeration limit the sample is drawn size by size: still distinct, seeded, in the population
    drawn = population("reorder", 12, max_size=None, sample=20, seed=1)
    assert population_size("reorder", 12, None) == 479001600 - 1 and len({d[2] for d in drawn}) == 20
    assert drawn == population("reorder", 12, max_size=None, sample=20, seed=1)
    assert all(sorted(d[2]) == list(range(12)) and d[2] != tuple(range(12)) for d in drawn)
    with pytest.raises(ValueError, match="sample"):
        population("reorder", 12, max_size=None)


def test_max_answer_tokens_reaches_the_llm_on_every_regeneration():
    seen = []

    class Limited(RuleLLM):
        async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            seen.append(kwargs.get("max_tokens"))
            return self.complete(prompt)

    explainer = CombinationExplainer(
        llm=Limited(meeting_rule), max_concurrency=1, distribution_size=0, max_answer_tokens=12
    )
    explainer.explain(QUESTION, NODES, "Oslo. [Source 1]")
    assert seen and set(seen) == {12}
    seen.clear()
    CombinationExplainer(llm=Limited(meeting_rule), max_concurrency=1, distribution_size=0).explain(
        QUESTION, NODES, "Oslo. [Source 1]"
    )
    assert seen and set(seen) == {None}  # not passed unless asked
