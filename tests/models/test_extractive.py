from __future__ import annotations

import asyncio

import pytest
from fakes import HashingEmbedding, parse
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite import EvidenceContextualizer, ExtractiveAnswerer
from llama_index_ragonite.models.extractive import (
    DEFAULT_LABEL,
    Unit,
    identifiers,
    language,
    parse_prompt,
    score_units,
    similarity,
    split_source,
    split_units,
    trim_words,
)
from llama_index_ragonite.models.extractive.scope import ScopeModel, feature_names
from llama_index_ragonite.models.extractive.units import whole_list
from llama_index_ragonite.prompts import ANSWER_PROMPT, OUT_OF_SCOPE, cited_sources, format_history, format_sources

RELEASE_PAGE = """
<h1>Release 9 testing</h1>
<p>The release candidate was built on 3 May. Testing took two weeks. The OTA server was upgraded to
version 2.4.1 before the tests began.</p>
<h2>Assignments</h2>
<table>
  <tr><th>Member</th><th>Task</th><th>Deadline</th></tr>
  <tr><td>Alice</td><td>Similarity function</td><td>12 May</td></tr>
  <tr><td>Bob</td><td>OTA server</td><td>19 May</td></tr>
</table>
<h2>Checklist</h2>
<ul><li>Install the guest tools first.</li><li>Reboot the host after the upgrade.</li></ul>
"""

HARDWARE_PAGE = """
<h1>Hardware matrix</h1>
<table>
  <tr><th>Platform</th><th>BIOS</th><th>TPM</th></tr>
  <tr><td>Dell OptiPlex 9010</td><td>A21</td><td>1.2</td></tr>
  <tr><td>Dell OptiPlex 7040</td><td>1.14.0</td><td>2.0</td></tr>
  <tr><td>Dell Latitude 7470</td><td>1.21.6</td><td>2.0</td></tr>
</table>
"""

BUDGET_PAGE = """
<h1>Community budget</h1>
<p>The board approved the travel budget for the summit in Berlin. Sponsors cover the venue.</p>
"""


def prompt_for(nodes, question: str, history=()) -> str:
    sources = format_sources([NodeWithScore(node=n, score=1.0) for n in nodes])
    return ANSWER_PROMPT.format(sources=sources, history=format_history(list(history)), question=question)


@pytest.fixture(scope="module")
def release():
    return list(EvidenceContextualizer()(parse(RELEASE_PAGE, doc_id="release")))


@pytest.fixture(scope="module")
def hardware():
    return list(EvidenceContextualizer()(parse(HARDWARE_PAGE, doc_id="hardware")))


@pytest.fixture(scope="module")
def budget():
    return list(EvidenceContextualizer()(parse(BUDGET_PAGE, doc_id="budget")))


ALWAYS = ScopeModel(weights=(0.0,) * len(feature_names()), bias=10.0)  # which unit is quoted, not whether
NEVER = ScopeModel(weights=(0.0,) * len(feature_names()), bias=-10.0)


def by_text(nodes, start: str):
    (node,) = [n for n in nodes if n.get_content().startswith(start)]
    return node


def body(answer: str) -> str:
    assert answer.startswith(DEFAULT_LABEL), answer
    return answer[len(DEFAULT_LABEL) :]


# ------------------------------------------------------------------ answers


def test_picks_the_table_row_and_cites_its_source(release, budget):
    bob = by_text(release, "Row 2 in Table 1")
    alice = by_text(
        release, "Row 1 in Table 1: Member is Alice, and Task is Similarity function, and Deadline is 12 May\nRow"
    )
    sources = [budget[0], alice, bob]  # the table node holds both rows; the row node is source 3
    answer = ExtractiveAnswerer().complete(prompt_for(sources, "What is the deadline of Bob's task?")).text
    text = body(answer)
    assert "19 May" in text and "Alice" not in text.split("[Source")[0]
    assert cited_sources(answer, 3)[0] in (2, 3)
    # With the row alone as the only table evidence, it is cited by its number.
    answer = ExtractiveAnswerer(max_units=1).complete(prompt_for([budget[0], bob], "Who works on the OTA server?")).text
    assert "Bob" in answer and cited_sources(answer, 2) == [2]
    assert "Row 2 in Table 1" not in answer  # the row position is dropped from the quote


def test_picks_the_sentence_of_a_passage(release, budget):
    passage = by_text(release, "The release candidate")
    answer = (
        ExtractiveAnswerer()
        .complete(prompt_for([budget[0], passage], "Which version was the OTA server upgraded to?"))
        .text
    )
    assert body(answer) == "The OTA server was upgraded to version 2.4.1 before the tests began [Source 2]."


def test_picks_the_list_item(release):
    checklist = by_text(release, "- Install")
    answer = ExtractiveAnswerer().complete(prompt_for([checklist], "What should be rebooted after the upgrade?")).text
    assert body(answer) == "Reboot the host after the upgrade [Source 1]."


def test_german_question_with_product_name_finds_the_row(hardware, budget):
    rows = [n for n in hardware if n.metadata["evidence_type"] == "table_row"]
    prompt = prompt_for([budget[0], *rows], "Welche BIOS-Version hatte der Dell OptiPlex 7040?")
    answer = ExtractiveAnswerer(max_units=1).complete(prompt).text
    assert "1.14.0" in answer and "7040" in answer
    assert cited_sources(answer, 4) == [3]


def test_unrelated_question_is_out_of_scope(release, budget):
    prompt = prompt_for([budget[0], *release[:2]], "How do I configure the printer driver on Windows?")
    assert ExtractiveAnswerer().complete(prompt).text == OUT_OF_SCOPE


def test_no_sources_or_no_question_is_out_of_scope(release):
    empty = ANSWER_PROMPT.format(sources="", history="", question="Who works on the OTA server?")
    assert ExtractiveAnswerer().complete(empty).text == OUT_OF_SCOPE
    assert ExtractiveAnswerer().complete("").text == OUT_OF_SCOPE
    no_question = format_sources([NodeWithScore(node=release[0], score=1.0)])
    assert ExtractiveAnswerer().complete(no_question).text == OUT_OF_SCOPE


def test_answer_has_label_citations_and_word_budget(release, hardware):
    prompt = prompt_for(
        [*release, *hardware], "What is the TPM of the Dell OptiPlex 7040 and the deadline of the OTA server?"
    )
    answer = ExtractiveAnswerer(max_words=12).complete(prompt).text
    assert answer.startswith(DEFAULT_LABEL)
    assert cited_sources(answer, len(release) + len(hardware))
    quoted = body(answer)
    for i in range(1, 20):
        quoted = quoted.replace(f"[Source {i}]", "")
    assert len(quoted.split()) <= 12 + 2  # + the "…" marks of a trimmed unit
    custom = ExtractiveAnswerer(label="[offline] ").complete(prompt).text
    assert custom.startswith("[offline] ") and custom[len("[offline] ") :] == body(
        ExtractiveAnswerer().complete(prompt).text
    )


def test_scope_field(release):
    """The out-of-scope decision is a calibrated ScopeModel (scope.py); one passed in replaces the default."""
    prompt = prompt_for([by_text(release, "- Install")], "What should be rebooted after the upgrade?")
    assert ExtractiveAnswerer().complete(prompt).text.startswith(DEFAULT_LABEL)
    assert ExtractiveAnswerer(scope=NEVER).complete(prompt).text == OUT_OF_SCOPE
    weak = prompt_for([by_text(release, "- Install")], "Where is the summit?")
    assert ExtractiveAnswerer().complete(weak).text == OUT_OF_SCOPE
    assert ExtractiveAnswerer(scope=ALWAYS).complete(weak).text.startswith(DEFAULT_LABEL)


def test_second_unit_comes_from_another_source(hardware):
    rows = [n for n in hardware if n.metadata["evidence_type"] == "table_row"]
    table = [n for n in hardware if n.metadata["evidence_type"] == "table"]
    prompt = prompt_for([*table, *rows], "Which platforms have TPM 2.0?")
    answer = ExtractiveAnswerer(max_units=2, close_ratio=0.0, scope=ALWAYS).complete(prompt).text
    cited = cited_sources(answer, 4)
    assert len(cited) == 2 and cited[0] != cited[1]


# ------------------------------------------------------------------ LLM interface


def test_streaming_async_chat_and_determinism(release, hardware):
    llm = ExtractiveAnswerer()
    prompt = prompt_for([*release, *hardware], "What is the deadline of Bob's task?")
    text = llm.complete(prompt).text
    chunks = list(llm.stream_complete(prompt))
    assert len(chunks) > 3
    assert "".join(c.delta for c in chunks) == text == chunks[-1].text
    assert asyncio.run(llm.acomplete(prompt)).text == text

    async def astream():
        return [c.delta async for c in await llm.astream_complete(prompt)]

    assert "".join(asyncio.run(astream())) == text
    assert ExtractiveAnswerer().complete(prompt).text == text  # a fresh instance agrees
    chat = llm.chat([ChatMessage(role=MessageRole.USER, content=prompt)])
    assert chat.message.content == text
    oos = list(llm.stream_complete(""))
    assert "".join(c.delta for c in oos) == OUT_OF_SCOPE


def test_metadata():
    meta = ExtractiveAnswerer().metadata
    assert meta.model_name == "ragonite-extractive" and not meta.is_chat_model and meta.context_window > 0
    assert ExtractiveAnswerer.class_name() == "ExtractiveAnswerer"
    assert ExtractiveAnswerer(scope=NEVER).to_dict()["scope"]["bias"] == NEVER.bias


def test_history_is_not_the_question(release, budget):
    history = [
        ChatMessage(role=MessageRole.USER, content="Who works on the OTA server?"),
        ChatMessage(role=MessageRole.ASSISTANT, content="Bob [Source 2]."),
    ]
    prompt = prompt_for([by_text(release, "The release candidate"), *budget], "Who covers the venue?", history)
    parsed = parse_prompt(prompt)
    assert parsed.question == "Who covers the venue?"
    assert parsed.history == ["User: Who works on the OTA server?", "Assistant: Bob [Source 2]."]
    answer = ExtractiveAnswerer().complete(prompt).text
    assert body(answer) == "Sponsors cover the venue [Source 2]."


class ConceptEmbedding(BaseEmbedding):
    """A toy bilingual model: words map to shared concept dimensions, so German meets English."""

    model_name: str = "concepts"
    calls: int = 0

    def _vec(self, text: str):
        concepts = {"venue": 0, "veranstaltungsort": 0, "cover": 1, "bezahlt": 1, "sponsors": 2, "budget": 3}
        v = [0.0] * 5
        for word in text.lower().replace(".", " ").replace("?", " ").split():
            v[concepts.get(word, 4)] += 1.0 if word in concepts else 0.0
        return v

    def _get_query_embedding(self, query: str):
        return self._vec(query)

    def _get_text_embedding(self, text: str):
        self.calls += 1
        return self._vec(text)

    async def _aget_query_embedding(self, query: str):
        return self._vec(query)


def test_embed_model_lets_a_translated_question_find_its_unit(budget):
    prompt = prompt_for(budget, "Wer bezahlt den Veranstaltungsort?")
    assert ExtractiveAnswerer(by_meaning=False).complete(prompt).text == OUT_OF_SCOPE  # no shared word
    model = ConceptEmbedding()
    # a model without a calibration of its own gets the lexical one (scope.scope_model_for); this toy model's
    # calibration, as the calibrate_scope experiment would fit one: in scope from a cosine of 0.5
    scope = ScopeModel(weights=(0.0, 20.0, 0.0, 0.0, 0.0, 0.0, 0.0), bias=-10.0)
    llm = ExtractiveAnswerer(embed_model=model, embed_floor=0.0, scope=scope)
    assert body(llm.complete(prompt).text) == "Sponsors cover the venue [Source 1]."
    calls = model.calls
    assert calls == 2  # the budget passage has two sentences
    assert llm.complete(prompt).text == llm.complete(prompt).text
    assert model.calls == calls  # unit embeddings are cached by text


def test_embed_model_keeps_lexical_answers_and_out_of_scope(release, budget):
    prompt = prompt_for(
        [budget[0], by_text(release, "The release candidate")], "Which version was the OTA server upgraded to?"
    )
    llm = ExtractiveAnswerer(embed_model=HashingEmbedding(), embed_floor=0.0)
    answer = llm.complete(prompt).text
    assert "2.4.1" in answer and cited_sources(answer, 2) == [2]
    unrelated = prompt_for([budget[0]], "How do I configure the printer driver on Windows?")
    assert llm.complete(unrelated).text == OUT_OF_SCOPE


def test_similarity_rescales_cosine():
    assert similarity(0.75, 0.75) == 0.0 and similarity(0.5, 0.75) == 0.0
    assert similarity(1.0, 0.75) == pytest.approx(1.0)
    assert similarity(0.875, 0.75) == pytest.approx(0.5)


# ------------------------------------------------------------------ parsing (pure functions)


def test_split_source_separates_context_header():
    text = (
        "Page: Release\nSection: Tests > Legacy\nBefore: Row 1 in Table 1: x is y\nAfter: z\n\nRow 2 in Table 1: a is b"
    )
    assert split_source(text) == ("Release Tests > Legacy", "Row 2 in Table 1: a is b")
    assert split_source("Page: not a header because no blank line follows\nmore text") == (
        "",
        "Page: not a header because no blank line follows\nmore text",
    )
    assert split_source("just evidence") == ("", "just evidence")


def test_split_units():
    evidence = (
        "Row 3 in Table 2: Name is Dr. Smith. Senior, and Role is Lead\n"
        "- First item. Still first item? No: second sentence.\n"
        "The build uses e.g. Yocto. It runs on v2.3.1 hosts.\n"
        "These are the steps:\n"
        "- Install\n"
    )
    assert split_units(evidence) == [
        "Row 3 in Table 2: Name is Dr. Smith. Senior, and Role is Lead",
        "First item.",
        "Still first item?",
        "No: second sentence.",
        "The build uses e.g. Yocto.",
        "It runs on v2.3.1 hosts.",
        "These are the steps: Install",
    ]


def test_parse_prompt_numbers_sources_and_ignores_header_lookalikes():
    prompt = (
        "Instructions.\n\n-----------\n"
        "### Source 1 ###\nPage: Notes\n\nThe answer format uses ### Source 2 ### markers inline.\n"
        "### Source 7 ###\nThis line quotes an out-of-sequence header above.\n\n"
        "### Source 2 ###\nSecond evidence.\n"
        "-----------\n\nUser: first question\nAssistant: first answer\nUser: What is the marker format?\nAssistant:"
    )
    parsed = parse_prompt(prompt)
    assert [s.number for s in parsed.sources] == [1, 2]
    assert parsed.sources[0].topic == "Notes"
    assert "### Source 7 ###" in parsed.sources[0].evidence and "inline" in parsed.sources[0].evidence
    assert parsed.sources[1].evidence == "Second evidence."
    assert parsed.question == "What is the marker format?"
    assert parsed.history == ["User: first question", "Assistant: first answer"]


def test_evidence_line_equal_to_the_next_header_splits_there():
    # Documented limit: such a line is indistinguishable from a real boundary.
    prompt = "### Source 1 ###\nfirst\n### Source 2 ###\nquoted\n\n### Source 2 ###\nsecond\nUser: q?\nAssistant:"
    parsed = parse_prompt(prompt)
    assert [s.evidence for s in parsed.sources] == ["first", "quoted\n\n### Source 2 ###\nsecond"]


def test_header_lookalike_in_evidence_does_not_break_answering(release):
    bob = by_text(release, "Row 2 in Table 1")
    tricky = "Page: Notes\n\nSee ### Source 9 ### for details.\n### Source 4 ###\nnot a real header"
    prompt = ANSWER_PROMPT.format(
        sources=f"### Source 1 ###\n{tricky}\n\n### Source 2 ###\n{bob.get_content(metadata_mode='llm')}",
        history="",
        question="Who works on the OTA server?",
    )
    answer = ExtractiveAnswerer().complete(prompt).text
    assert "Bob" in answer and cited_sources(answer, 2) == [2]


def test_custom_prompt_without_separator():
    prompt = "Sources:\n### Source 1 ###\nThe venue is in Berlin.\n\n### Source 2 ###\nThe budget is 5000 EUR.\nUser: How much is the budget?\nAssistant:"
    parsed = parse_prompt(prompt)
    assert [s.evidence for s in parsed.sources] == ["The venue is in Berlin.", "The budget is 5000 EUR."]
    # which unit is quoted (the out-of-scope decision is calibrated on real retrieval: test_scope.py)
    assert (
        body(ExtractiveAnswerer(scope=ALWAYS).complete(prompt).text) == "5000 EUR [Source 2]."
    )  # the subject restates the question


def test_identifiers_and_language():
    assert identifiers("Welche BIOS-Version hatte der Dell OptiPlex 7040 mit v2.3.1 und qemu_dm?") == [
        "bios-version",
        "optiplex",
        "7040",
        "v2.3.1",
        "qemu_dm",
    ]
    assert language("Welche Version hatte der Server?") == "de"
    assert language("Which version did the server have?") == "en"
    assert language("OptiPlex 7040") == ""


def test_header_words_count_at_header_weight():
    units = [
        Unit(source=1, rank=0, text="The deadline is 19 May.", topic="Budget review"),
        Unit(source=2, rank=1, text="The budget review deadline is 19 May.", topic="Other"),
    ]
    q = "When is the budget review deadline?"
    full, low = score_units(q, units, header_weight=1.0, novelty=0), score_units(q, units, header_weight=0.2, novelty=0)
    assert full[0] == pytest.approx(full[1])
    assert low[0] < low[1]


def test_trim_words_keeps_matching_row_pairs():
    row = (
        "Row 4 in Table 1: Platform is Dell OptiPlex 7040, and BIOS is 1.14.0, and TPM is 2.0, and Notes is "
        + " ".join(["filler"] * 40)
    )
    trimmed = trim_words(row, "Which BIOS did the OptiPlex 7040 run?", 12)
    assert trimmed.startswith("Platform is Dell OptiPlex 7040, and BIOS is 1.14.0")
    assert "Row 4" not in trimmed and trimmed.endswith("…")
    assert trim_words("short text", "anything", 12) == "short text"


def test_a_whole_list_is_a_unit_that_gives_way_to_its_one_answering_item():
    evidence = "To volunteer you need:\n1. a signed volunteer agreement\n2. a tetanus vaccination\n3. closed shoes.\nOther:\n- x\n- y"
    assert (
        whole_list(evidence)
        == "To volunteer you need: a signed volunteer agreement; a tetanus vaccination; closed shoes."
    )
    assert "To volunteer you need:" not in split_units(evidence)  # the lead-in goes with the whole list
    llm = ExtractiveAnswerer(scope=ALWAYS)
    prompt = "### Source 1 ###\n" + evidence + "\nUser: What do I need to volunteer?\nAssistant:"
    assert all(item in llm.complete(prompt).text for item in ("agreement", "tetanus", "closed shoes"))
    item = "### Source 1 ###\n" + evidence + "\nUser: Is a tetanus vaccination required?\nAssistant:"
    assert body(llm.complete(item).text) == "2. a tetanus vaccination [Source 1]"  # a middle item, alone


def test_a_list_that_opens_its_evidence_takes_its_lead_in_from_the_evidence_above():
    items = "- a signed volunteer agreement\n- a tetanus vaccination\n- closed shoes"
    assert whole_list(items, before="To volunteer you need:").startswith("To volunteer you need: a signed")
    assert whole_list(items, before="Volunteers walk dogs.") == whole_list(items)  # no colon: no lead-in
    assert whole_list("Bring:\n" + items, before="Other:").startswith("Bring: a signed")  # its own comes first
    header = "Page: Volunteering\nBefore: To volunteer you need:\n\n"
    prompt = f"### Source 1 ###\n{header}{items}\nUser: What do I need to volunteer?\nAssistant:"
    answer = ExtractiveAnswerer(scope=ALWAYS).complete(prompt).text
    assert all(item in answer for item in ("agreement", "tetanus", "closed shoes")), answer
