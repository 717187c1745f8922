"""Span attribution: each claim of an answer attributed from the counterfactual answers already made."""

from __future__ import annotations

from typing import Any, List

from fakes import HashingEmbedding
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.schema import NodeWithScore, TextNode

from llama_index_ragonite import CounterfactualAttributor
from llama_index_ragonite.explain.spans import answer_claims
from llama_index_ragonite.models.extractive import parse_prompt
from llama_index_ragonite.prompts import OUT_OF_SCOPE

OWNER, PORT, OTHER = "Bob owns the OTA server.", "The OTA server listens on port 8443.", "Aurora 2.0 ships in May."


class ComposingLLM(CustomLLM):
    """Composes its answer from two sources: one claim per source that states a fact it looks for."""

    facts: List[str] = ["Bob", "8443"]
    calls: int = 0

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="composing")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.calls += 1
        sources = parse_prompt(prompt).sources
        claims = [
            f"{s.evidence.rstrip('.')} [Source {s.number}]."
            for fact in self.facts
            for s in sources
            if fact in s.evidence
        ]
        return CompletionResponse(text=" ".join(claims) or OUT_OF_SCOPE)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):
        raise NotImplementedError


def nodes(*texts: str) -> List[NodeWithScore]:
    return [NodeWithScore(node=TextNode(id_=f"e{i}", text=t), score=1.0 / (i + 1)) for i, t in enumerate(texts)]


def test_claims_end_at_sentences_and_at_their_own_citations():
    answer = "Extractive answer: Bob owns it [Source 2]; the port is 8443 [Source 1]. Ask Dana [Sources 1, 3]."
    claims = answer_claims(answer, 3)
    assert [c.text for c in claims] == [
        "Extractive answer: Bob owns it [Source 2]",
        "the port is 8443 [Source 1].",
        "Ask Dana [Sources 1, 3].",
    ]
    assert [c.cited for c in claims] == [[1], [0], [0, 2]]
    assert all(answer[c.start : c.end] == c.text for c in claims)
    assert answer_claims("[Source 1].", 1) == []  # markers only: no claim


def test_each_claim_gets_the_evidence_it_came_from_without_another_llm_call():
    llm = ComposingLLM()
    evidences = nodes(OTHER, OWNER, PORT)
    from llama_index_ragonite.explain.regeneration import AnswerRegenerator

    answer = llm.complete(AnswerRegenerator(llm).prompt_for("Who owns the server and on which port?", evidences)).text
    assert answer == "Bob owns the OTA server [Source 2]. The OTA server listens on port 8443 [Source 3]."
    llm.calls = 0
    result = CounterfactualAttributor(llm=llm, embed_model=HashingEmbedding()).attribute(
        "Who owns the server and on which port?", evidences, answer
    )
    assert llm.calls == 3  # one per evidence, as without claims
    first, second = result.claims
    assert (first.cited, first.top) == ([1], 1) and (second.cited, second.top) == ([2], 2)
    assert abs(sum(first.shares) - 1) < 1e-9 and first.shares[1] > 0.9
    data = result.to_dict()["claims"]
    assert [c["top"] for c in data] == [2, 3] and data[0]["text"].startswith("Bob owns")
    text = result.to_text()
    assert 'Per claim:\n  1. "Bob owns the OTA server [Source 2].": Evidence 2' in text


def test_claims_can_be_turned_off_and_a_one_claim_answer_adds_no_lines():
    llm = ComposingLLM(facts=["8443"])
    evidences = nodes(OTHER, PORT)
    answer = "The OTA server listens on port 8443 [Source 2]."
    result = CounterfactualAttributor(llm=llm, embed_model=HashingEmbedding()).attribute("Port?", evidences, answer)
    assert len(result.claims) == 1 and result.claims[0].top == 1 and "Per claim" not in result.to_text()
    off = CounterfactualAttributor(llm=llm, embed_model=HashingEmbedding(), claims=False)
    assert off.attribute("Port?", evidences, answer).claims == []


def test_the_cli_shows_every_claim_however_many_evidences_there_are():
    from llama_index_ragonite.cli import render_attribution
    from llama_index_ragonite.explain.regeneration import AnswerRegenerator

    llm = ComposingLLM()
    fillers = [f"Filler page {i} says nothing about servers." for i in range(6)]
    evidences = nodes(*fillers, OWNER, PORT)
    answer = llm.complete(AnswerRegenerator(llm).prompt_for("Who and which port?", evidences)).text
    result = CounterfactualAttributor(llm=llm, embed_model=HashingEmbedding()).attribute(
        "Who and which port?", evidences, answer
    )
    text = render_attribution(result)
    assert "more lines" in text  # eight cluster lines are cut to five ...
    assert (
        "Per claim:" in text and '2. "The OTA server listens on port 8443 [Source 8].": Evidence 8' in text
    )  # ... not the claims


def test_markers_stay_with_their_sentence_and_a_marker_inside_a_sentence_ends_no_claim():
    after = answer_claims("The fee is 80 EUR. [Source 1] Dogs cost 50 EUR. [Source 2]", 2)
    assert [(c.text, c.cited) for c in after] == [
        ("The fee is 80 EUR. [Source 1]", [0]),
        ("Dogs cost 50 EUR. [Source 2]", [1]),
    ]
    inside = answer_claims("According to [Source 1], the port is 8443. See also (ours [Source 2]).", 2)
    assert [(c.text, c.cited) for c in inside] == [
        ("According to [Source 1], the port is 8443.", [0]),
        ("See also (ours [Source 2]).", [1]),
    ]


def test_max_answer_tokens_reaches_the_llm_through_the_cited_synthesizer():
    from llama_index_ragonite import CitedSynthesizer
    from llama_index_ragonite.explain.regeneration import AnswerRegenerator

    seen = []

    class Limited(ComposingLLM):
        async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            seen.append(kwargs.get("max_tokens"))
            return self.complete(prompt)

    llm = Limited()
    regenerator = AnswerRegenerator(llm, synthesizer=CitedSynthesizer(llm=llm), max_answer_tokens=7)
    import asyncio

    asyncio.run(regenerator.aanswer("Who?", nodes(OWNER, PORT)))
    asyncio.run(regenerator.aanswer_without_sources("Who?"))
    assert seen == [7, 7]
