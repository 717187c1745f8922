"""The offline answerer under prompts it did not write: template variables, refine steps,
tree_summarize's upper levels (its own answers as context) and chat messages."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.chat_engine.condense_plus_context import (
    DEFAULT_CONDENSE_PROMPT_TEMPLATE,
    DEFAULT_CONTEXT_PROMPT_TEMPLATE,
)
from llama_index.core.chat_engine.context import DEFAULT_CONTEXT_TEMPLATE
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.prompts import PromptTemplate
from llama_index.core.prompts.default_prompts import DEFAULT_REFINE_PROMPT, DEFAULT_TREE_SUMMARIZE_PROMPT

from llama_index_ragonite import ExtractiveAnswerer
from llama_index_ragonite.models.extractive.llm_adapter.templates import (
    context_sources,
    request_from_variables,
    stock_templates,
)
from llama_index_ragonite.prompts import ANSWER_PROMPT, OUT_OF_SCOPE
from llama_index_ragonite.text import carried_terms

CONTEXT = "Page: OTA update server\n\nBob owns the OTA server.\n\nPage: Aurora 2.0\n\nAurora 2.0 ships in May."
AURORA = "Extractive answer: Aurora 2.0 ships in May."


# -- which variable is the question ------------------------------------------------------------
def test_a_question_variable_next_to_a_context_is_the_question():
    llm = ExtractiveAnswerer()
    plain = PromptTemplate("Context:\n{context_str}\nQuestion: {question}\nAnswer:")
    assert llm.predict(plain, context_str=CONTEXT, question="When does Aurora 2.0 ship?") == AURORA
    with_history = PromptTemplate("{context_str}\n\nConversation:\n{chat_history}\nQuestion: {question}")
    answer = llm.predict(
        with_history,
        context_str=CONTEXT,
        chat_history="user: hello\nassistant: hi",
        question="When does Aurora 2.0 ship?",
    )
    assert answer == AURORA  # not a condense request: the context is there to answer from
    request = request_from_variables({"context_str": CONTEXT, "chat_history": "user: hi", "question": "Who?"})
    assert request is not None and not request.condense and request.question == "Who?"


def test_condense_requests_have_no_context_and_carry_the_topic():
    history = "user: Who owns the OTA server?\nassistant: Bob."
    answer = ExtractiveAnswerer().predict(
        PromptTemplate(DEFAULT_CONDENSE_PROMPT_TEMPLATE), chat_history=history, question="How often do devices poll it?"
    )
    terms = carried_terms(["Who owns the OTA server?"], "How often do devices poll it?")
    assert terms and answer == " ".join([*terms, "How often do devices poll it?"])


def test_every_stock_template_asks_a_question():
    """Context-only templates can never match as a request: they are read as chat system messages instead."""
    for template in stock_templates():
        assert {"query_str", "question"} & set(template.template_vars), template.template_vars


# -- several calls: tree_summarize's upper levels and refine steps -----------------------------
def test_tree_summarize_upper_level_reads_earlier_answers_without_doubling_the_label():
    llm = ExtractiveAnswerer()
    answers = f"Extractive answer: Bob owns the OTA server.\n\n{OUT_OF_SCOPE}\n\n{AURORA}"
    answer = llm.predict(DEFAULT_TREE_SUMMARIZE_PROMPT, context_str=answers, query_str="When does Aurora 2.0 ship?")
    assert answer == AURORA
    custom = ExtractiveAnswerer(label="[offline] ")
    answers = "[offline] Bob owns the OTA server.\n\n[offline] Aurora 2.0 ships in May."
    answer = custom.predict(DEFAULT_TREE_SUMMARIZE_PROMPT, context_str=answers, query_str="Who owns the OTA server?")
    assert answer == "[offline] Bob owns the OTA server."
    only_misses = f"{OUT_OF_SCOPE}\n\n{OUT_OF_SCOPE}"
    assert llm.predict(DEFAULT_TREE_SUMMARIZE_PROMPT, context_str=only_misses, query_str="Who?") == OUT_OF_SCOPE


def test_refine_replaces_a_weak_answer_with_a_better_supported_unit():
    question = "What does the OTA server deliver?"
    answer = ExtractiveAnswerer().predict(
        DEFAULT_REFINE_PROMPT,
        query_str=question,
        existing_answer="Extractive answer: The server is a stateless HTTPS service behind the load balancer.",
        context_msg="The OTA update server delivers signed Aurora images to devices in the field.",
    )
    assert answer == "Extractive answer: The OTA update server delivers signed Aurora images to devices in the field."


def test_refine_keeps_an_answer_the_new_context_does_not_beat():
    llm = ExtractiveAnswerer()
    kept = llm.predict(
        DEFAULT_REFINE_PROMPT,
        query_str="When does Aurora 2.0 ship?",
        existing_answer=AURORA,
        context_msg="Onboarding takes two weeks.",
    )
    assert kept == AURORA
    # The answer is re-scored with the page it quoted: "OTA server" is in its topic, not its words.
    first = llm.predict(
        DEFAULT_TREE_SUMMARIZE_PROMPT,
        context_str="Page: OTA server\n\nBob owns the service.",
        query_str="Who owns the OTA server?",
    )
    assert first == "Extractive answer: Bob owns the service."
    refined = llm.predict(
        DEFAULT_REFINE_PROMPT,
        query_str="Who owns the OTA server?",
        existing_answer=first,
        context_msg="The OTA server listens on port 8443.",
    )
    assert refined == first
    missing = llm.predict(
        DEFAULT_REFINE_PROMPT, query_str="Who owns the OTA server?", existing_answer=OUT_OF_SCOPE, context_msg=CONTEXT
    )
    assert missing == "Extractive answer: Bob owns the OTA server."


def test_a_node_header_cut_from_its_text_is_no_evidence():
    sources, numbered = context_sources("Bob owns the OTA server.\n\nPage: Aurora 2.0\nSection: Plan")
    assert not numbered and [s.evidence for s in sources] == ["Bob owns the OTA server."]
    sources, _ = context_sources("Bob owns the OTA server.\n\nStatus: shipped")  # other metadata stays evidence
    assert [s.evidence for s in sources] == ["Bob owns the OTA server.", "Status: shipped"]


# -- chat messages -----------------------------------------------------------------------------
def _messages(system: str, question: str):
    return [
        ChatMessage(role=MessageRole.SYSTEM, content=system),
        ChatMessage(role=MessageRole.USER, content="Hello"),
        ChatMessage(role=MessageRole.ASSISTANT, content="Hi, how can I help?"),
        ChatMessage(role=MessageRole.USER, content=question),
    ]


@pytest.mark.parametrize("template", [DEFAULT_CONTEXT_PROMPT_TEMPLATE, DEFAULT_CONTEXT_TEMPLATE, "{context_str}"])
def test_chat_reads_the_context_system_message_and_the_last_user_message(template):
    llm = ExtractiveAnswerer()
    messages = _messages(template.format(context_str=CONTEXT), "When does Aurora 2.0 ship?")
    assert llm.chat(messages).message.content == AURORA
    assert asyncio.run(llm.achat(messages)).message.content == AURORA
    streamed = list(llm.stream_chat(messages))
    assert streamed[-1].message.content == "".join(r.delta for r in streamed) == AURORA

    async def astreamed():
        return [r.delta async for r in await llm.astream_chat(messages)]

    assert "".join(asyncio.run(astreamed())) == AURORA
    assert llm.chat(_messages(template.format(context_str=CONTEXT), "What is the weather?")).message.content == (
        OUT_OF_SCOPE
    )


def test_chat_with_a_whole_answer_prompt_is_read_as_before():
    prompt = ANSWER_PROMPT.format(
        sources="### Source 1 ###\nBob owns the OTA server.", history="", question="Who owns the OTA server?"
    )
    llm = ExtractiveAnswerer()
    expected = llm.complete(prompt).text
    assert expected == "Extractive answer: Bob owns the OTA server [Source 1]."
    system = ChatMessage(role=MessageRole.SYSTEM, content="You are a helpful assistant.")
    assert llm.chat([system, ChatMessage(role=MessageRole.USER, content=prompt)]).message.content == expected
