"""The surrogate (ContextCite-style) attributor against hand-computed values."""

from __future__ import annotations

import asyncio
import itertools

import numpy as np
import pytest
from fakes import HashingEmbedding, KeywordLLM
from test_attribution import OTHER, PORT, QUESTION, THIRD, evidences

from llama_index_ragonite.explain.math import alpha_max, lasso, sample_masks, softmax
from llama_index_ragonite.explain.surrogate import SurrogateAttributor
from llama_index_ragonite.prompts import OUT_OF_SCOPE

FACTORIAL = np.array(list(itertools.product([0, 1], repeat=3)), dtype=float)  # all 8 masks of 3 evidences


def surrogate(**kwargs) -> SurrogateAttributor:
    llm = kwargs.pop("llm", None) or KeywordLLM()
    return SurrogateAttributor(llm=llm, embed_model=HashingEmbedding(), **kwargs)


def out_of_scope_similarity() -> float:
    """cos(q + PORT, q + OUT_OF_SCOPE) under the test embedding: the target when PORT is dropped."""
    emb = HashingEmbedding()
    return float(
        np.dot(emb.get_text_embedding(f"{QUESTION}\n{PORT}"), emb.get_text_embedding(f"{QUESTION}\n{OUT_OF_SCOPE}"))
    )


# -- the Lasso -------------------------------------------------------------------
def test_lasso_without_penalty_is_least_squares():
    y = 0.2 + 0.5 * FACTORIAL[:, 0] - 0.1 * FACTORIAL[:, 1]
    w, b = lasso(FACTORIAL, y, alpha=0.0)
    assert w == pytest.approx([0.5, -0.1, 0.0], abs=1e-9) and b == pytest.approx(0.2)
    # noisy, non-orthogonal design: same answer as numpy's least squares with an intercept column
    rng = np.random.default_rng(3)
    X = (rng.random((12, 4)) < 0.5).astype(float)
    X[0], X[1] = [1, 1, 0, 0], [0, 0, 1, 1]  # every column varies
    y = X @ [0.3, 0.0, -0.2, 0.1] + 0.5 + rng.normal(0, 0.01, 12)
    expected = np.linalg.lstsq(np.hstack([X, np.ones((12, 1))]), y, rcond=None)[0]
    w, b = lasso(X, y, alpha=0.0)
    assert list(w) + [b] == pytest.approx(list(expected), abs=1e-7)


def test_lasso_soft_thresholds_an_orthogonal_design():
    # centred factorial columns are orthogonal with variance 1/4, so w_j = sign(w_ols) * max(|w_ols| - 4 alpha, 0)
    y = 0.2 + 0.5 * FACTORIAL[:, 0] - 0.1 * FACTORIAL[:, 1]
    w, b = lasso(FACTORIAL, y, alpha=0.05)
    assert w == pytest.approx([0.3, 0.0, 0.0], abs=1e-9)
    assert b == pytest.approx(0.4 - 0.5 * 0.3)  # mean(y) - mean(x) . w
    w, _ = lasso(FACTORIAL, y, alpha=0.02)
    assert w == pytest.approx([0.42, -0.02, 0.0], abs=1e-9)
    # alpha_max = max_j |cov(x_j, y)| = 0.5 / 4: at it every weight is 0, just below it one is not
    assert alpha_max(FACTORIAL, y) == pytest.approx(0.125)
    assert lasso(FACTORIAL, y, 0.125)[0] == pytest.approx([0, 0, 0], abs=1e-12)
    assert lasso(FACTORIAL, y, 0.12)[0][0] == pytest.approx(0.02)
    with pytest.raises(ValueError):
        lasso(FACTORIAL, y, -0.1)


def test_lasso_gives_a_constant_column_no_weight():
    X = np.hstack([FACTORIAL, np.ones((8, 1))])
    y = 0.1 + 0.3 * FACTORIAL[:, 2]
    w, b = lasso(X, y, 0.0)
    assert w == pytest.approx([0, 0, 0.3, 0], abs=1e-9) and b == pytest.approx(0.1)


# -- the masks -------------------------------------------------------------------
def test_masks_are_seeded_distinct_never_all_kept_and_every_column_varies():
    a, b = sample_masks(10, 16, 0.5, seed=7), sample_masks(10, 16, 0.5, seed=7)
    assert a.shape == (16, 10) and (a == b).all()
    assert not (sample_masks(10, 16, 0.5, seed=8) == a).all()
    for n, m, seed in itertools.product(range(2, 9), range(2, 7), range(20)):
        masks = sample_masks(n, m, 0.5, seed)
        assert len({tuple(r) for r in masks}) == len(masks) == min(m, 2**n - 1)
        assert not masks.all(axis=1).any()
        assert (masks.min(axis=0) != masks.max(axis=0)).all(), (n, m, seed)
    # the keep probability is honoured (800 draws)
    assert sample_masks(40, 20, 0.2, seed=1).mean() == pytest.approx(0.2, abs=0.04)


def test_few_evidences_use_every_mask_but_the_all_kept_one():
    assert sample_masks(3, 16).tolist() == [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1], [1, 0, 0], [1, 0, 1], [1, 1, 0]]
    assert sample_masks(1, 16).tolist() == [[0]]
    assert sample_masks(0, 16).shape == (0, 0)
    with pytest.raises(ValueError):
        sample_masks(3, 4, keep_probability=1.0)


# -- the attributor --------------------------------------------------------------
def test_the_evidence_that_causes_the_answer_gets_the_weight_hand_computed():
    nodes = evidences(OTHER, PORT, THIRD)
    result = surrogate(assertions=False).attribute(QUESTION, nodes, f"{PORT} [Source 2]")  # the cosine alone
    assert result.method == "surrogate"
    assert [c.members for c in result.clusters] == [[0], [1], [2]]
    # 7 masks (all but 111); 000 is out of scope without a call: 6 calls
    assert result.llm_calls == 6
    assert result.settings["fit"]["masks"] == ["000", "001", "010", "011", "100", "101", "110"]
    # target: 1 when PORT is kept (same answer, citations stripped), s otherwise; with the anchor
    # row the design is the full factorial, so the Lasso is a soft threshold (see above):
    # cov = (1 - s) / 4 = alpha_max, penalty 0.05 alpha_max -> w = 0.95 (1 - s)
    s = out_of_scope_similarity()
    weights = [c.contribution for c in result.clusters]
    assert weights == pytest.approx([0.0, 0.95 * (1 - s), 0.0], abs=1e-9)
    assert result.settings["fit"]["intercept"] == pytest.approx(s + 0.025 * (1 - s))
    assert result.evidence_shares == pytest.approx(list(softmax(weights, 0.05)))
    assert result.top_evidence == 1 and sum(result.evidence_shares) == pytest.approx(1.0)
    # by default the out-of-scope answer keeps none of the answer's values ("8443"): its similarity is halved
    sharp = surrogate().attribute(QUESTION, nodes, f"{PORT} [Source 2]")
    assert [c.contribution for c in sharp.clusters] == pytest.approx([0.0, 0.95 * (1 - s / 2), 0.0], abs=1e-9)
    # each evidence's counterfactual answers: those of the answered masks that dropped it
    assert result.clusters[1].counterfactual_answers == [OUT_OF_SCOPE] * 4
    assert result.clusters[1].similarities == pytest.approx([s] * 4)
    assert result.clusters[0].similarities == pytest.approx([s, s, 1.0, 1.0])


def test_without_penalty_or_anchor_the_fit_is_still_exact():
    nodes = evidences(OTHER, PORT, THIRD)
    result = surrogate(alpha=0.0, anchor=False, assertions=False).attribute(QUESTION, nodes, f"{PORT} [Source 2]")
    s = out_of_scope_similarity()
    assert [c.contribution for c in result.clusters] == pytest.approx([0.0, 1 - s, 0.0], abs=1e-9)
    assert result.settings["fit"]["r2"] == pytest.approx(1.0)


def test_redundant_copies_share_the_weight_where_leave_one_out_sees_nothing():
    nodes = evidences(PORT, OTHER, PORT)
    result = surrogate(alpha=0.0).attribute(QUESTION, nodes, f"{PORT} [Source 1]")
    w = [c.contribution for c in result.clusters]
    assert w[0] == pytest.approx(w[2]) and w[0] > 0.1 and abs(w[1]) < 1e-9
    assert result.evidence_shares[0] == pytest.approx(result.evidence_shares[2])
    assert result.evidence_shares[0] > result.evidence_shares[1]


def test_many_evidences_sampled_masks_find_the_cause_deterministically():
    fillers = [f"Evidence number {i} about topic {i}." for i in range(9)]
    nodes = evidences(*fillers[:6], PORT, *fillers[6:])
    first = surrogate(n_masks=16, seed=3).attribute(QUESTION, nodes, f"{PORT} [Source 7]")
    again = surrogate(n_masks=16, seed=3).attribute(QUESTION, nodes, f"{PORT} [Source 7]")
    assert first.top_evidence == 6
    assert first.evidence_shares == again.evidence_shares
    assert first.settings["fit"]["masks"] == again.settings["fit"]["masks"]
    assert len(set(first.settings["fit"]["masks"])) == 16
    assert first.llm_calls == 16 - first.settings["fit"]["masks"].count("0" * 10)
    other = surrogate(n_masks=16, seed=4).attribute(QUESTION, nodes, f"{PORT} [Source 7]")
    assert other.settings["fit"]["masks"] != first.settings["fit"]["masks"] and other.top_evidence == 6


def test_calls_run_concurrently_within_the_bound():
    llm = KeywordLLM(delay=0.05)
    nodes = evidences(*[f"Evidence number {i} about topic {i}." for i in range(9)], PORT)
    result = asyncio.run(surrogate(llm=llm, n_masks=12, max_concurrency=4).aattribute(QUESTION, nodes, PORT))
    assert result.llm_calls == 12 and llm.max_in_flight == 4


def test_failed_masks_are_dropped_from_the_fit_and_reported():
    # the LLM times out whenever "Onboarding" (THIRD) is missing: masks 010, 100, 110 fail twice each
    nodes = evidences(OTHER, PORT, THIRD)
    result = surrogate(llm=KeywordLLM(fail_without="Onboarding")).attribute(QUESTION, nodes, f"{PORT} [Source 2]")
    fit = result.settings["fit"]
    assert sorted(fit["failed_masks"]) == [2, 4, 6]
    assert all("TimeoutError" in e for e in fit["failed_masks"].values())
    assert [fit["similarities"][i] is None for i in range(7)] == [False, False, True, False, True, False, True]
    assert result.llm_calls == 3 + 3 * 2  # 001, 011, 101 answered; three masks failed with their retries
    assert result.top_evidence == 1 and sum(result.evidence_shares) == pytest.approx(1.0)
    # the fit used rows 000, 001, 011, 101 and the anchor 111: y = s, s, 1, s, 1 -> PORT explains it all
    s = out_of_scope_similarity()
    exact = surrogate(llm=KeywordLLM(fail_without="Onboarding"), alpha=0.0, assertions=False).attribute(
        QUESTION, nodes, PORT
    )
    assert [c.contribution for c in exact.clusters] == pytest.approx([0.0, 1 - s, 0.0], abs=1e-9)


def test_too_few_answered_masks_give_no_shares_not_a_guess():
    result = surrogate(llm=KeywordLLM(fail_without="nowhere"), retries=0).attribute(
        QUESTION, evidences(PORT, OTHER, THIRD), PORT
    )
    assert result.evidence_shares == [None, None, None] and result.top_evidence is None
    assert all("only 1 of 7 masks answered (need 4)" in c.error for c in result.clusters)
    assert result.llm_calls == 6
    lines = result.to_text().splitlines()  # issue 17: what failed comes first
    assert lines[0].startswith("Not computed: only 1 of 7 masks answered (at least 4 needed); 6 failed")
    assert lines[1].startswith("Not attributed: cluster 1 [Evidence 1]")


def test_an_evidence_never_dropped_among_answered_masks_gets_no_share():
    # fails whenever OTHER (evidence 1) is missing; pick a seed whose masks hold no empty mask and
    # at least two masks keeping evidence 1, among which evidences 2-4 each vary: the answered
    # masks never drop evidence 1, so only its weight is unknown
    def fits(m):
        kept = m[m[:, 0] == 1]
        return m.any(axis=1).all() and len(kept) >= 2 and (kept[:, 1:].min(axis=0) != kept[:, 1:].max(axis=0)).all()

    seed = next(s for s in range(1000) if fits(sample_masks(4, 4, 0.5, s)))
    nodes = evidences(OTHER, PORT, THIRD, "Aurora is a release train.")
    result = surrogate(llm=KeywordLLM(fail_without="Aurora 2.0"), n_masks=4, seed=seed, anchor=False).attribute(
        QUESTION, nodes, PORT
    )
    assert result.evidence_shares[0] is None and "weight unknown" in result.clusters[0].error
    assert all(share is not None for share in result.evidence_shares[1:])
    # not renormalised over the identified evidences (issue 17): the unknown weight is held at 0
    assert sum(result.evidence_shares[1:]) + result.unattributed_share == pytest.approx(1.0)
    assert result.unattributed_share > 0 and not result.complete


def test_no_evidence_is_an_empty_attribution():
    empty = surrogate().attribute(QUESTION, [], OUT_OF_SCOPE)
    assert empty.evidence_shares == [] and empty.clusters == [] and empty.llm_calls == 0
    one = surrogate().attribute(QUESTION, evidences(PORT), PORT)
    assert one.llm_calls == 0  # the only mask is the empty one
    assert one.evidence_shares == [1.0]


# -- failed masks are reported (issue 17) ----------------------------------------
def test_failed_masks_say_how_many_and_that_the_fit_is_still_valid():
    from test_attribution import FailingCallsLLM

    nodes = evidences(OTHER, PORT, THIRD)
    llm = FailingCallsLLM(fail_when_missing=[THIRD])  # masks 010, 100, 110 fail
    result = surrogate(llm=llm, retries=0).attribute(QUESTION, nodes, f"{PORT} [Source 2]")
    assert sorted(result.failed_masks) == [2, 4, 6] and result.n_masks == 7 and result.min_masks == 4
    assert not result.complete and result.failed_clusters == []  # every weight still identified
    assert sum(result.evidence_shares) == pytest.approx(1.0) and result.unattributed_share == 0.0
    first = result.to_text().splitlines()[0]
    assert first.startswith("Incomplete: 3 of 7 masks failed (ConnectionError: provider unavailable)")
    assert "the fit on the 4 answered masks is still valid (at least 4 needed)" in first
    data = result.to_dict()
    assert data["complete"] is False and data["failed_masks"] == 3 and data["n_masks"] == 7
    clean = surrogate().attribute(QUESTION, nodes, f"{PORT} [Source 2]")
    assert clean.complete and clean.incompleteness() is None and clean.failed_masks == {}


def test_held_softmax_without_held_places_is_exactly_the_softmax():
    from llama_index_ragonite.explain.math import held_softmax

    scores = [0.0, 0.37, 0.01, 0.2]
    assert held_softmax(scores, 0, 0.05).tolist() == softmax(scores, 0.05).tolist()  # benchmark numbers unchanged
    held = held_softmax(scores, 2, 0.05)
    assert len(held) == 4 and held.sum() < 1
    assert held.tolist() == pytest.approx(softmax(scores + [0.0, 0.0], 0.05)[:4].tolist())
    assert held_softmax([], 1).tolist() == []
    with pytest.raises(ValueError):
        held_softmax(scores, -1)
