"""The run and result protocols both explanation families share (``explain.base``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from fakes import HashingEmbedding, KeywordLLM, collected_events
from llama_index.core.instrumentation.events.span import SpanDropEvent
from test_attribution import OTHER, PORT, QUESTION, THIRD, evidences

from llama_index_ragonite.errors import LLMCallError
from llama_index_ragonite.events import (
    AttributionEndEvent,
    AttributionStartEvent,
    PerturbationEndEvent,
    PerturbationStartEvent,
)
from llama_index_ragonite.explain.attribution import CounterfactualAttributor
from llama_index_ragonite.explain.base import BaseExplainer, ExplanationResult
from llama_index_ragonite.explain.combinations import CombinationExplainer
from llama_index_ragonite.explain.permutations import PermutationExplainer
from llama_index_ragonite.explain.similarity import SimilarityAttributor
from llama_index_ragonite.explain.surrogate import SurrogateAttributor

NODES = evidences(OTHER, PORT, THIRD)
ANSWER = f"{PORT} [Source 2]"
EVENTS = {  # family -> (start event, end event)
    "attribution": (AttributionStartEvent, AttributionEndEvent),
    "perturbation": (PerturbationStartEvent, PerturbationEndEvent),
}


def counterfactual(**kwargs):
    return CounterfactualAttributor(embed_model=HashingEmbedding(), **kwargs)


def surrogate(**kwargs):
    return SurrogateAttributor(embed_model=HashingEmbedding(), **kwargs)


EXPLAINERS = {  # name -> (family, factory taking the LLM and fields)
    "counterfactual": ("attribution", counterfactual),
    "surrogate": ("attribution", surrogate),
    "top-down": ("perturbation", CombinationExplainer),
    "bottom-up": ("perturbation", lambda **kw: CombinationExplainer(mode="bottom-up", **kw)),
    "permutation": ("perturbation", lambda **kw: PermutationExplainer(n_random=5, **kw)),
}


@pytest.fixture(params=sorted(EXPLAINERS))
def family_and_factory(request):
    return EXPLAINERS[request.param]


def test_every_explainer_is_a_base_explainer_with_the_offline_llm_by_default(family_and_factory):
    from llama_index_ragonite.models.extractive import ExtractiveAnswerer

    _, factory = family_and_factory
    explainer = factory()
    assert isinstance(explainer, BaseExplainer) and isinstance(explainer.llm, ExtractiveAnswerer)
    assert explainer.class_name() == type(explainer).__name__


@pytest.mark.parametrize("sync", [True, False])
def test_start_and_end_events_fire_inside_one_span(family_and_factory, sync):
    family, factory = family_and_factory
    explainer = factory(llm=KeywordLLM())
    with collected_events() as events:
        if sync:
            result = explainer.explain(QUESTION, NODES, ANSWER)
        else:
            result = asyncio.run(explainer.aexplain(QUESTION, NODES, ANSWER))
    start_type, end_type = EVENTS[family]
    (start,) = [e for e in events if isinstance(e, start_type)]
    (end,) = [e for e in events if isinstance(e, end_type)]
    assert events.index(start) < events.index(end)
    assert start.span_id == end.span_id and start.span_id.startswith(f"{type(explainer).__name__}.aexplain-")
    assert start.n_evidences == 3
    assert end.llm_calls == result.llm_calls > 0 and end.wall_time_s == result.wall_time_s > 0


def test_the_attributor_names_are_the_explain_names():
    explainer = counterfactual(llm=KeywordLLM())
    assert explainer.attribute(QUESTION, NODES, ANSWER).evidence_shares == pytest.approx(
        explainer.explain(QUESTION, NODES, ANSWER).evidence_shares
    )
    result = asyncio.run(explainer.aattribute(QUESTION, NODES, ANSWER))
    assert result.evidence_shares == pytest.approx(explainer.explain(QUESTION, NODES, ANSWER).evidence_shares)


def test_no_answer_is_answered_first_and_counted(family_and_factory):
    _, factory = family_and_factory
    given = factory(llm=KeywordLLM()).explain(QUESTION, NODES, ANSWER)
    computed = factory(llm=KeywordLLM()).explain(QUESTION, NODES)
    assert computed.llm_calls == given.llm_calls + 1
    assert computed.to_dict()["question"] == QUESTION


def test_a_failing_call_marks_what_it_was_for_and_never_raises(family_and_factory):
    family, factory = family_and_factory
    explainer = factory(llm=KeywordLLM(fail_on=f"### Source 1 ###\n{PORT}"), retries=0)  # PORT first: fails
    with collected_events() as events:
        result = explainer.explain(QUESTION, NODES, ANSWER)
    assert any(isinstance(e, EVENTS[family][1]) for e in events)
    if family == "perturbation":
        errors = result.errors
        assert result.failures == len(errors) >= 1 and not any(p.changed for p in result.perturbations if p.failed)
    elif "fit" in result.settings:  # the surrogate drops a failed mask from its fit
        errors = list(result.settings["fit"]["failed_masks"].values())
    else:
        errors = [c.error for c in result.clusters if c.failed]
        assert all(result.evidence_shares[m] is None for c in result.clusters if c.failed for m in c.members)
    assert errors and all(e.startswith("RuntimeError: cannot answer") for e in errors)


def test_a_failing_unperturbed_answer_raises_llm_call_error_and_drops_the_span(family_and_factory):
    family, factory = family_and_factory
    explainer = factory(llm=KeywordLLM(fail_on="8443"), retries=0)
    with collected_events() as events, pytest.raises(LLMCallError, match="unperturbed prompt: RuntimeError"):
        explainer.explain(QUESTION, NODES)
    assert any(isinstance(e, EVENTS[family][0]) for e in events)
    assert not any(isinstance(e, EVENTS[family][1]) for e in events)
    assert any(isinstance(e, SpanDropEvent) for e in events)


def test_a_blank_question_is_a_value_error(family_and_factory):
    _, factory = family_and_factory
    with pytest.raises(ValueError, match="question"):
        factory(llm=KeywordLLM()).explain("  ", NODES, ANSWER)


class _Broken(RuntimeError):
    pass


def test_the_sync_method_re_raises_the_original_runtime_error():
    # llama-index's asyncio_run would turn any RuntimeError into "Detected nested async"
    class BrokenEmbedding(HashingEmbedding):
        async def _aget_text_embedding(self, text: str):
            raise _Broken("embedding service down")

        def _get_text_embedding(self, text: str):
            raise _Broken("embedding service down")

    attributor = CounterfactualAttributor(llm=KeywordLLM(), embed_model=BrokenEmbedding())
    with pytest.raises(_Broken, match="embedding service down"):
        attributor.attribute(QUESTION, NODES, ANSWER)

    def broken_prior(n):
        raise _Broken("no prior")

    with pytest.raises(_Broken, match="no prior"):
        PermutationExplainer(llm=KeywordLLM(), strategy="optimal", position_prior=broken_prior).explain(
            QUESTION, NODES, ANSWER
        )


# -- the results protocol ----------------------------------------------------------
def results():
    llm = KeywordLLM()
    return [
        counterfactual(llm=llm).explain(QUESTION, NODES, ANSWER),
        SimilarityAttributor(embed_model=HashingEmbedding()).explain(QUESTION, NODES, ANSWER),
        surrogate(llm=llm).explain(QUESTION, NODES, ANSWER),
        CombinationExplainer(llm=llm).explain(QUESTION, NODES, ANSWER),
        PermutationExplainer(llm=llm, n_random=5).explain(QUESTION, NODES, ANSWER),
    ]


def test_every_result_renders_as_text_dict_json_and_chart(tmp_path):
    for k, result in enumerate(results()):
        assert isinstance(result, ExplanationResult)
        assert isinstance(result.to_text(), str) and result.to_text()
        data = result.to_dict()
        assert json.loads(result.to_json()) == json.loads(json.dumps(data))
        assert data["llm_calls"] == result.llm_calls and data["wall_time_s"] == result.wall_time_s
        assert "\n" in result.to_json(indent=2)
        path = result.plot(tmp_path / f"result{k}.svg")
        assert isinstance(path, Path) and "<svg" in path.read_text()[:2000]
