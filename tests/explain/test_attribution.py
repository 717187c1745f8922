"""Counterfactual and similarity attribution against hand-computed values."""

from __future__ import annotations

import asyncio
import json
from typing import List

import numpy as np
import pytest
from fakes import CountingEmbedding, HashingEmbedding, KeywordLLM, collected_events
from llama_index.core.schema import NodeWithScore, TextNode

from llama_index_ragonite.events import AttributionEndEvent, AttributionStartEvent
from llama_index_ragonite.explain.attribution import CounterfactualAttributor, SimilarityAttributor
from llama_index_ragonite.explain.math import softmax
from llama_index_ragonite.models.extractive import parse_prompt
from llama_index_ragonite.prompts import OUT_OF_SCOPE

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
    result = attributor().attribute(QUESTION, nodes, answer)
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


def test_duplicates_form_one_cluster_that_inherits_or_splits_its_share():
    nodes = evidences(PORT, OTHER, PORT, THIRD)
    result = attributor().attribute(QUESTION, nodes, f"{PORT} [Source 1]")
    assert [c.members for c in result.clusters] == [[0, 2], [1], [3]]
    assert result.llm_calls == 3  # one regeneration per cluster, not per evidence
    assert result.clusters[0].counterfactual_answers == [OUT_OF_SCOPE]  # both copies removed together
    share = result.clusters[0].share
    assert share > 0.9
    assert result.evidence_shares[0] == result.evidence_shares[2] == share  # inherited (paper)
    split = attributor(spread="split").attribute(QUESTION, nodes, f"{PORT} [Source 1]")
    assert split.evidence_shares[0] == split.evidence_shares[2] == pytest.approx(share / 2)
    assert sum(split.evidence_shares) == pytest.approx(1.0)
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

    CounterfactualAttributor(llm=KeywordLLM(), embed_model=embed, embedding_lookup=lookup).attribute(
        QUESTION, nodes, PORT
    )
    assert lookups == [["e0", "e1"]]
    # no evidence embedded; of the answers only the distinct ones: removing evidence 2 left the answer as it was
    assert embed.texts == [f"{QUESTION}\n{PORT}", f"{QUESTION}\n{OUT_OF_SCOPE}"]
    nodes[0].node.embedding = [1.0, 0.0]
    nodes[1].node.embedding = [1.0, 0.0]  # identical vectors -> one cluster
    embed.texts = []
    result = CounterfactualAttributor(llm=KeywordLLM(), embed_model=embed).attribute(QUESTION, nodes, PORT)
    assert [c.members for c in result.clusters] == [[0, 1]]
    assert embed.texts == [f"{QUESTION}\n{PORT}", f"{QUESTION}\n{OUT_OF_SCOPE}"]


def test_failed_cluster_is_marked_and_left_out_of_the_distribution():
    # the LLM times out whenever "Onboarding" is missing: removing evidence 3 fails twice (call + retry)
    llm = KeywordLLM(fail_without="Onboarding")
    nodes = evidences(OTHER, PORT, THIRD)
    result = attributor(llm=llm).attribute(QUESTION, nodes, f"{PORT} [Source 2]")
    failed = result.clusters[2]
    assert failed.failed and failed.share is None and "TimeoutError" in failed.error
    assert result.failed_clusters == [2]
    assert result.evidence_shares[2] is None
    assert sum(result.evidence_shares[:2]) == pytest.approx(1.0)
    assert result.top_evidence == 1
    assert result.llm_calls == 4  # 2 good calls + 1 failed call + its retry
    assert (
        "Not attributed: cluster 3 [Evidence 3]: the LLM call failed (TimeoutError: stub timed out)" in result.to_text()
    )
    assert result.to_text().splitlines()[-1].startswith("Not attributed")


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
    bare = attributor(prepend_question=False).attribute(QUESTION, nodes, answer)
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
    assert ends[0].evidence_shares == result.evidence_shares and ends[0].llm_calls == 2

    lines = result.to_text().splitlines()
    share = result.clusters[0].share
    assert lines[0] == f"Attributed {100 * share:.2f}% to cluster 1 [Evidence 1, 3]"
    assert lines[1].startswith("Attributed ") and lines[1].endswith("to cluster 2 [Evidence 2]")

    data = json.loads(result.to_json())
    assert data["clusters"][0]["evidences"] == [1, 3]
    assert data["evidences"][1]["url"] == "https://wiki.example/pages/1"
    assert data["evidences"][0]["share"] == pytest.approx(share)

    svg = tmp_path / "a.svg"
    result.plot(tmp_path / "a.png")
    result.plot(svg)
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in svg.read_text()[:2000] and "Evidence 1, 3" in svg.read_text()
    with pytest.raises(ValueError):
        result.plot(tmp_path / "a.jpg")


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
