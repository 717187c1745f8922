"""One route from nodes to an answer (issue 59): the chat engine answers through its synthesizer's
``synthesize``, citations are checked once, and the trace shows an answer prompt only where an LLM got one."""

import asyncio
from typing import Any, List

import pytest
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from test_chat_conventions import PoolRetriever, RecordingLLM

from llama_index_ragonite import RagoniteChatEngine
from llama_index_ragonite.chat.trace import TraceRecorder
from llama_index_ragonite.models import cited_answers
from llama_index_ragonite.models.synthesizers import CitedSynthesizer, ExtractiveSynthesizer
from llama_index_ragonite.prompts import OUT_OF_SCOPE


def _all_four(chat: RagoniteChatEngine) -> list:
    """A chat, a stream_chat, an achat and an astream_chat turn, each with its streamed text consumed."""
    responses = [chat.chat("Who parses wiki pages?")]
    streamed = chat.stream_chat("Who ranks evidences?")
    "".join(streamed.response_gen)
    responses.append(streamed)

    async def run():
        answer = await chat.achat("Who writes tests?")
        astreamed = await chat.astream_chat("Who deploys?")
        [t async for t in astreamed.async_response_gen()]
        return [answer, astreamed]

    return responses + asyncio.run(run())


@pytest.mark.parametrize("offline", [False, True])
def test_every_kind_of_turn_answers_through_the_synthesizer(monkeypatch, offline):
    llm = None if offline else RecordingLLM(prompts=[])
    chat = RagoniteChatEngine.from_defaults(PoolRetriever(), llm=llm, complete_questions=False, follow_ups=0)
    synthesizer = chat.answer_synthesizer
    assert isinstance(synthesizer, ExtractiveSynthesizer if offline else CitedSynthesizer)
    seen: List[dict] = []
    kind = type(synthesizer)
    for name in ("get_response", "aget_response"):
        real = getattr(kind, name)

        def spy(self, *args: Any, _real=real, **kwargs: Any):
            seen.append(kwargs)
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(kind, name, spy)
    responses = _all_four(chat)
    assert [bool(k.get("streaming")) for k in seen] == [False, True, False, True]
    assert [k["record"] for k in seen] == [r.turn for r in responses]  # the turn takes the synthesizer's notes
    if not offline:  # the LLM received exactly the prompt the trace shows, once a turn
        assert llm.prompts == [r.turn.prompts["answer"] for r in responses]


def test_the_citations_are_checked_once_a_turn(monkeypatch):
    calls: List[str] = []
    real = cited_answers.check_citations

    def counting(answer: str, n_sources: int):
        calls.append(answer)
        return real(answer, n_sources)

    monkeypatch.setattr(cited_answers, "check_citations", counting)
    llm = RecordingLLM(prompts=[], answer="Alice [Source 1] [Source 9].")
    chat = RagoniteChatEngine.from_defaults(PoolRetriever(), llm=llm, complete_questions=False, follow_ups=0)
    responses = _all_four(chat)
    assert calls == [llm.answer] * 4
    for response in responses:
        assert response.turn.invalid_citations == ["[Source 9]"] and response.turn.cited == [1]
        assert "[Source 9], which name none of the 4 sources" in response.turn.warning


def test_offline_the_trace_says_what_was_read_and_shows_no_prompt():
    chat = RagoniteChatEngine.from_defaults(PoolRetriever(), complete_questions=False)
    with TraceRecorder.attached() as trace:
        response = chat.chat("Who parses wiki pages?")
    names = [e.class_name() for e in trace.events]
    assert "AnswerPromptEvent" not in names and names[-2:] == ["AnswerSourcesEvent", "AnswerEvent"]
    read = trace.events[-2]
    assert read.node_ids == ["n0", "n1", "n2", "n3"] == response.turn.read and read.n_sources == 4
    assert "answer" not in response.turn.prompts and response.metadata["read"] == read.node_ids
    shown = trace.render(titles={"n0": "Alice's page"})
    assert "Answer read 4 sources (offline, no prompt):" in shown and " 1. Alice's page" in shown
    assert "Answer prompt" not in shown and "### Source" not in shown
    # the one scope decision, explained: which unit, which scores (issue 60)
    decision = response.metadata["decision"]
    assert decision == read.decision == response.turn.decision and decision["answered"] is True
    assert decision["unit"]["source"] in response.turn.cited and decision["probability"] >= 0.5
    assert set(decision["features"]) >= {"lexical", "meaning", "cell_named", "cell_fit", "type_missing"}
    assert f"decision: answered on Source {decision['unit']['source']}, in-scope probability" in shown
    refused = chat.chat("What is the weather on Mars tomorrow?")
    assert refused.metadata["decision"]["answered"] is False and refused.metadata["decision"]["probability"] < 0.5


def test_with_an_llm_the_trace_shows_the_prompt_it_received():
    llm = RecordingLLM(prompts=[])
    chat = RagoniteChatEngine.from_defaults(PoolRetriever(), llm=llm, complete_questions=False, follow_ups=0)
    with TraceRecorder.attached() as trace:
        response = chat.chat("Who parses wiki pages?")
    names = [e.class_name() for e in trace.events]
    assert "AnswerSourcesEvent" not in names and names[-2:] == ["AnswerPromptEvent", "AnswerEvent"]
    assert trace.events[-2].prompt == llm.prompts[0] == response.turn.prompts["answer"] and response.turn.read == []


class GarbledLLM(CustomLLM):
    """A client that cannot parse its server's reply."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="garbled")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise KeyError("choices")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        raise KeyError("choices")


def test_a_garbled_reply_is_a_warned_turn_in_chat_and_an_error_for_a_caller_without_a_record():
    chat = RagoniteChatEngine.from_defaults(PoolRetriever(), llm=GarbledLLM(), complete_questions=False, follow_ups=0)
    response = chat.chat("Who parses wiki pages?")
    assert response.response == OUT_OF_SCOPE and "malformed output (KeyError" in response.turn.warning
    nodes = PoolRetriever().retrieve("Who?")
    with pytest.raises(KeyError):  # an explainer's regeneration retries, then marks the call failed
        chat.answer_synthesizer.synthesize("Who parses wiki pages?", nodes)
