"""RagoniteChatEngine: completion, retrieval, cited answers, memory, streaming, errors, trace."""

import asyncio
import json
import re
import time
from typing import Any, List, Sequence

import pytest
from fakes import HashingEmbedding
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.schema import Document, NodeWithScore, QueryBundle

from llama_index_ragonite import RagoniteChatEngine, SQLiteChatStore
from llama_index_ragonite.chat.chat_store import UnknownConversationError
from llama_index_ragonite.chat.completion import LLMQuestionCompleter, QuestionCompleter
from llama_index_ragonite.chat.engine import LLMCallError
from llama_index_ragonite.chat.trace import TraceRecorder
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.prompts import OUT_OF_SCOPE
from llama_index_ragonite.retrieval.retriever import HybridRetriever

PAGES = {
    "team": "<title>Team</title><h1>Members</h1><table><tr><th>Member</th><th>Task</th></tr>"
    "<tr><td>Alice</td><td>Parsing wiki pages</td></tr><tr><td>Bob</td><td>Ranking evidences</td></tr></table>",
    "install": "<title>Install guide</title><h1>Install</h1><ol><li>Boot the installer</li>"
    "<li>Choose Erase and Install</li></ol><p>Installing takes ten minutes.</p>",
}


class ScriptedLLM(CustomLLM):
    """Answers with ``answer`` (a string or a function of the prompt); records every prompt."""

    answer: Any = "Alice parses wiki pages [Source 1]."
    prompts: List[str] = []
    fail_with: Any = None

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted")

    def _text(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if self.fail_with is not None:
            raise self.fail_with
        return self.answer(prompt) if callable(self.answer) else self.answer

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._text(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = ""
        for word in self._text(prompt).split(" "):
            delta = word if not text else " " + word
            text += delta
            yield CompletionResponse(text=text, delta=delta)


class RecordingCompleter(QuestionCompleter):
    calls: List[Any] = []

    @classmethod
    def class_name(cls) -> str:
        return "RecordingCompleter"

    def _complete(self, history: Sequence[ChatMessage], message: str) -> str:
        self.calls.append(([m.content for m in history], message))
        return f"{message} (about: {history[0].content})"


class NothingRetriever(BaseRetriever):
    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        return []


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = EvidenceStore(tmp_path_factory.mktemp("store"), embed_model=HashingEmbedding())
    s.ingest([Document(id_=k, text=v, metadata={"url": f"https://wiki.example/{k}"}) for k, v in PAGES.items()])
    return s


def engine(store, **kwargs):
    kwargs.setdefault("llm", ScriptedLLM())
    kwargs.setdefault("completer", RecordingCompleter())
    return RagoniteChatEngine(HybridRetriever.from_store(store), **kwargs)


def test_first_turn_is_not_completed_follow_ups_are(store):
    chat = engine(store)
    first = chat.chat("Who parses wiki pages?")
    assert first.completed_question == "Who parses wiki pages?" and chat._completer.calls == []
    second = chat.chat("And who ranks?")
    assert chat._completer.calls == [(["Who parses wiki pages?", first.response], "And who ranks?")]
    assert second.completed_question == "And who ranks? (about: Who parses wiki pages?)"
    # retrieval and the prompt use the completed question; memory keeps what the user typed
    assert "User: And who ranks? (about: Who parses wiki pages?)\nAssistant:" in second.turn.prompts["answer"]
    assert [m.content for m in chat.chat_history][2] == "And who ranks?"
    assert (
        RagoniteChatEngine(HybridRetriever.from_store(store), llm=ScriptedLLM(), complete_questions=False)
        .chat("x y")
        .completed_question
        == "x y"
    )


def test_an_llm_rephrasing_that_answers_is_not_used_and_the_turn_says_so(store):
    llm = ScriptedLLM(prompts=[], answer="Alice parses wiki pages [Source 1].")
    chat = RagoniteChatEngine(HybridRetriever.from_store(store), llm=llm, completer=LLMQuestionCompleter(llm=llm))
    chat.chat("Who parses wiki pages?")
    follow_up = chat.chat("And who ranks them?")
    assert follow_up.completed_question == "And who ranks them?"  # the raw turn, not the LLM's answer
    assert "rephrasing of the turn was not used (it cites sources)" in follow_up.turn.warning


def test_citations_map_back_to_the_nodes_in_prompt_order(store):
    llm = ScriptedLLM(answer="Bob ranks evidences [Source 2], Alice parses [Source 1] [Source 9].")
    response = engine(store, llm=llm).chat("Who ranks evidences and who parses?")
    [prompt, _suggestions] = llm.prompts  # the answer, then the follow-up suggestions
    assert response.turn.prompts["answer"] == prompt
    for i, hit in enumerate(response.source_nodes, 1):  # numbered in retrieval order
        assert f"### Source {i} ###\n{hit.node.get_content(metadata_mode='llm').strip()}" in prompt
    assert response.turn.cited == [2, 1]  # [Source 9] does not exist: dropped
    assert response.cited_nodes == [response.source_nodes[1], response.source_nodes[0]]
    assert response.metadata["cited_node_ids"] == [n.node.node_id for n in response.cited_nodes]
    assert response.metadata["completed_question"] == "Who ranks evidences and who parses?"


def test_no_evidence_means_the_out_of_scope_sentence_without_an_llm_call():
    llm = ScriptedLLM()
    response = RagoniteChatEngine(NothingRetriever(), llm=llm).chat("Anything?")
    assert response.response == OUT_OF_SCOPE and response.source_nodes == [] and llm.prompts == []
    assert response.turn.cited == [] and response.turn.follow_ups == []


@pytest.mark.fault(
    "LLM call times out or the LLM server refuses connections",
    "LLMCallError ('did not answer in time' / 'could not be reached')",
)
@pytest.mark.parametrize(
    "fail, expected",
    [
        (TimeoutError("read timed out"), "did not answer in time"),
        (ConnectionError("refused"), "could not be reached"),
    ],
)
def test_unreachable_llm_is_a_clear_error(store, fail, expected):
    with pytest.raises(LLMCallError, match=expected):
        engine(store, llm=ScriptedLLM(fail_with=fail)).chat("Who parses?")


@pytest.mark.fault(
    "LLM output cannot be parsed (not JSON, no choices)",
    "out-of-scope answer with a warning; the conversation goes on",
)
@pytest.mark.fault("LLM returns empty text", "out-of-scope answer with a 'no text' warning")
@pytest.mark.parametrize("fail", [json.JSONDecodeError("Expecting value", "<html>", 0), TypeError("no choices")])
def test_garbled_llm_output_answers_out_of_scope_with_a_warning(store, fail):
    chat = engine(store, llm=ScriptedLLM(fail_with=fail))
    response = chat.chat("Who parses?")
    assert response.response == OUT_OF_SCOPE and "malformed output" in response.turn.warning
    empty = engine(store, llm=ScriptedLLM(answer="   ")).chat("Who parses?")
    assert empty.response == OUT_OF_SCOPE and "no text" in empty.metadata["warning"]
    assert chat.chat("And Bob?").response == OUT_OF_SCOPE  # the engine keeps working


@pytest.mark.fault("question is blank or None", "ValueError ('Empty message'); nothing written to the history")
@pytest.mark.fault(
    "question is very long (100,000 characters)",
    "ValueError ('longer than 20,000'); nothing written to the history",
)
def test_bad_messages(store):
    chat = engine(store)
    for bad in ("", "   ", None):
        with pytest.raises(ValueError, match="Empty message"):
            chat.chat(bad)
    with pytest.raises(ValueError, match="longer than"):
        chat.chat("x" * 100_000)
    assert chat.chat_history == []  # nothing half-written


def test_history_persists_in_sqlite_and_conversations_can_be_deleted_and_restored(store, tmp_path):
    db = tmp_path / "chats.sqlite"
    chats = SQLiteChatStore(db)
    memory = ChatMemoryBuffer.from_defaults(chat_store=chats, chat_store_key="c1", token_limit=2000)
    engine(store, memory=memory).chat("Who parses wiki pages?")
    # a new process: the conversation continues from the file
    chats2 = SQLiteChatStore(db)
    later = engine(store, memory=ChatMemoryBuffer.from_defaults(chat_store=chats2, chat_store_key="c1"))
    later.chat("And who ranks?")
    assert later._completer.calls[-1][0][0] == "Who parses wiki pages?"
    assert [m.role for m in chats2.get_messages("c1")] == [MessageRole.USER, MessageRole.ASSISTANT] * 2
    assert [c.id for c in chats2.list_conversations()] == ["c1"]
    chats2.add_feedback("c1", 1, 1, "right person")
    chats2.delete_conversation("c1")
    assert chats2.list_conversations() == []
    chats2.restore_conversation("c1")
    assert chats2.list_conversations()[0].message_count == 4
    assert chats2.get_feedback("c1")[0].comment == "right person"
    with pytest.raises(UnknownConversationError):
        chats2.restore_conversation("no-such-conversation")


def test_from_store_wires_memory_to_a_conversation(store, tmp_path):
    chats = SQLiteChatStore(tmp_path / "c.sqlite")
    chat = RagoniteChatEngine.from_store(
        store.path, embed_model=HashingEmbedding(), llm=ScriptedLLM(), chat_store=chats, conversation_id="abc"
    )
    chat.chat("Who parses?")
    assert len(chats.get_messages("abc")) == 2


def test_streaming_yields_tokens_and_the_same_final_metadata(store):
    llm = ScriptedLLM(answer="Bob ranks evidences [Source 2].")
    chat = engine(store, llm=llm)
    expected = engine(store, llm=ScriptedLLM(answer=llm.answer)).chat("Who ranks evidences?")
    streamed = chat.stream_chat("Who ranks evidences?")
    tokens = list(streamed.response_gen)
    assert len(tokens) > 1 and "".join(tokens).strip() == expected.response
    assert streamed.turn.cited == expected.turn.cited == [2]
    assert streamed.metadata["cited_node_ids"] == expected.metadata["cited_node_ids"]
    assert [m.content for m in chat.chat_history] == ["Who ranks evidences?", expected.response]


class SlowLLM(ScriptedLLM):
    """ScriptedLLM whose stream waits 50 ms between words."""

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = ""
        for word in self._text(prompt).split(" "):
            time.sleep(0.05)
            text += word if not text else " " + word
            yield CompletionResponse(text=text, delta=word if text == word else " " + word)


def test_a_cancelled_stream_keeps_what_was_written_as_truncated_and_out_of_memory(store):
    cancelled = RagoniteChatEngine(NothingRetriever(), llm=ScriptedLLM()).stream_chat("Anything?")
    cancelled.cancel()  # an out-of-scope answer streams from a plain iterator: nothing to close, no error
    "".join(cancelled.response_gen)
    assert cancelled.exception is None
    chat = engine(store, llm=SlowLLM(prompts=[], answer="Alice parses wiki pages and Bob ranks them [Source 1]."))
    streamed = chat.stream_chat("Who parses wiki pages?")
    words = streamed.response_gen
    first = next(words)
    streamed.cancel()
    rest = "".join(words)
    assert streamed.turn.truncated and "stopped before the answer was finished" in streamed.turn.warning
    assert "ranks them" not in first + rest
    assert chat.chat_history[-1].additional_kwargs.get("truncated") is True
    follow_up = chat.chat("And who ranks?")
    assert follow_up.turn.prompts["answer"].count("User:") == 1  # the broken-off exchange is no memory


def test_streaming_with_no_evidence_streams_the_out_of_scope_sentence():
    streamed = RagoniteChatEngine(NothingRetriever(), llm=ScriptedLLM()).stream_chat("Anything?")
    assert "".join(streamed.response_gen).strip() == OUT_OF_SCOPE


def test_async_paths_match_sync(store):
    sync = engine(store).chat("Who parses wiki pages?")

    async def run():
        chat = engine(store)
        answer = await chat.achat("Who parses wiki pages?")
        streamed = await chat.astream_chat("And who ranks?")
        tokens = [t async for t in streamed.async_response_gen()]
        return answer, streamed, tokens, chat

    answer, streamed, tokens, chat = asyncio.run(run())
    assert answer.response == sync.response and answer.turn.cited == sync.turn.cited
    assert [n.node.node_id for n in answer.source_nodes] == [n.node.node_id for n in sync.source_nodes]
    assert "".join(tokens).strip() == streamed.response and streamed.turn.cited == [1]
    assert streamed.completed_question == "And who ranks? (about: Who parses wiki pages?)"
    assert len(chat.chat_history) == 4


def test_trace_shows_every_step(store):
    chat = engine(store)
    chat.chat("Who parses wiki pages?")
    with TraceRecorder.attached() as trace:
        chat.chat("And who ranks?")
    names = [e.class_name() for e in trace.events]
    assert names[0] == "QuestionCompletedEvent" and names[-2:] == ["AnswerPromptEvent", "AnswerEvent"]
    assert {e.source for e in trace.events if e.class_name() == "RetrievalHitsEvent"} == {
        "lexical",
        "dense",
        "title",
        "fused",
    }
    text = trace.render()
    for part in (
        "Completion (RecordingCompleter)",
        "Lexical hits",
        "Dense hits",
        "Fused hits",
        "Answer prompt",
        "cites Source 1",
    ):
        assert part in text


def test_follow_up_suggestions_come_from_the_retrieved_evidences(store):
    response = engine(store).chat("Who parses wiki pages?")
    assert 1 <= len(response.turn.follow_ups) <= 3, response.turn.follow_ups
    retrieved = " ".join(
        f"{n.node.metadata.get('title', '')} {n.node.get_content()}" for n in response.source_nodes
    ).lower()
    for question in response.turn.follow_ups:  # each a question about something the evidences hold
        assert question.endswith("?")
        assert any(len(w) > 3 and w in retrieved for w in re.findall(r"[a-z]+", question.lower())), question
    assert engine(store, follow_ups=0).chat("Who parses wiki pages?").turn.follow_ups == []


def test_default_is_the_offline_extractive_stack(store):
    from llama_index_ragonite.chat.completion import OfflineQuestionCompleter
    from llama_index_ragonite.models.extractive import ExtractiveAnswerer

    chat = RagoniteChatEngine(HybridRetriever.from_store(store))
    assert isinstance(chat.llm, ExtractiveAnswerer) and isinstance(chat._completer, OfflineQuestionCompleter)
    response = chat.chat("Which task does Bob have?")
    assert response.response == OUT_OF_SCOPE or response.turn.cited


# -- citations validated against the prompt's sources -------------------------------------------


def test_check_citations_names_out_of_range_and_malformed_markers():
    from llama_index_ragonite.prompts import check_citations

    checked = check_citations("A [Sources 2, 99]. B [Source x] and [Source] c \\[Source 3\\] [Source 0].", 10)
    assert checked.cited == [2]
    assert checked.invalid == ["[Source 99]", "[Source x]", "[Source]", "[Source 0]"]
    assert checked.answer == "A [Source 2]. B and c \\[Source 3\\]."  # page text's escaped marker stays
    assert check_citations("fine [Source 1].", 1).invalid == []


def keyword_engine(store, **kwargs):
    from fakes import KeywordLLM

    llm = KeywordLLM(keyword="Bob", fixed_answer="X [Source 99] [Source 0]", prompts=[])
    return RagoniteChatEngine(HybridRetriever.from_store(store), llm=llm, complete_questions=False, **kwargs)


@pytest.mark.fault(
    "the LLM cites [Source 99] of ten sources and [Source 0]",
    "dropped from the citations, removed from the answer, named in the turn's warning",
)
def test_invalid_citations_are_dropped_with_a_warning(store):
    response = keyword_engine(store).chat("Which task does Bob have?")
    [n] = response.turn.cited  # KeywordLLM cites the first source naming Bob after the fixed answer
    assert "Bob" in response.source_nodes[n - 1].node.get_content()
    assert response.response == f"X [Source {n}]"
    assert response.turn.invalid_citations == ["[Source 99]", "[Source 0]"]
    assert "[Source 99], [Source 0]" in response.turn.warning and response.metadata["warning"] == response.turn.warning
    assert response.metadata["invalid_citations"] == ["[Source 99]", "[Source 0]"]
    assert response.turn.follow_ups  # the turn goes on as usual


def test_streamed_and_async_answers_validate_citations_too(store):
    streamed = keyword_engine(store).stream_chat("Which task does Bob have?")
    text = "".join(streamed.response_gen)
    assert "[Source 99] [Source 0]" in text  # already streamed: the tokens stay, the warning names them
    assert streamed.turn.invalid_citations == ["[Source 99]", "[Source 0]"] and len(streamed.turn.cited) == 1
    answered = asyncio.run(keyword_engine(store).achat("Which task does Bob have?"))
    assert answered.response.startswith("X [Source ") and "[Source 99]" in answered.turn.warning


def test_an_answer_of_only_invalid_citations_is_out_of_scope():
    llm = ScriptedLLM(answer="[Source 42]")
    response = RagoniteChatEngine(PoolRetrieverOfTwo(), llm=llm, follow_ups=0).chat("Who?")
    assert response.response == OUT_OF_SCOPE and response.turn.cited == []
    assert "[Source 42]" in response.turn.warning and "out of scope" in response.turn.warning


class PoolRetrieverOfTwo(BaseRetriever):
    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        from llama_index.core.schema import TextNode

        return [NodeWithScore(node=TextNode(text=t), score=1.0) for t in ("Alice parses.", "Bob ranks.")]


def test_cli_and_api_show_the_citation_warning(store):
    from llama_index_ragonite.cli import render_turn
    from llama_index_ragonite.serve.turns import turn_json

    response = keyword_engine(store).chat("Which task does Bob have?")
    assert f"Warning: {response.turn.warning}" in render_turn(response)
    turn = turn_json("Which task does Bob have?", response.response, response.turn, response.source_nodes, [], 0.1)
    assert turn["warning"] == response.turn.warning and turn["invalid_citations"] == ["[Source 99]", "[Source 0]"]
    assert turn["cited"] == response.turn.cited


def test_the_offline_answer_scores_with_the_store_s_model_and_explainers_regenerate_through_it():
    from llama_index.core.embeddings import MockEmbedding

    from llama_index_ragonite import CounterfactualAttributor, ExtractiveAnswerer

    class StoreRetriever(BaseRetriever):
        embed_model = MockEmbedding(embed_dim=8)

        def _retrieve(self, query_bundle):
            return []

    answerer = ExtractiveAnswerer()
    engine = RagoniteChatEngine.from_defaults(StoreRetriever(), llm=answerer, follow_ups=0)
    assert engine.answer_synthesizer.answerer.embed_model is StoreRetriever.embed_model
    assert answerer.embed_model is None  # the user's answerer is not changed: the engine uses a copy
    assert CounterfactualAttributor.from_engine(engine)._synthesizer is engine.answer_synthesizer


def test_with_an_llm_the_engine_answers_through_the_cited_synthesizer_and_explainers_regenerate_through_it(store):
    import asyncio as _asyncio

    from llama_index_ragonite import CitedSynthesizer, CounterfactualAttributor
    from llama_index_ragonite.explain.regeneration import AnswerRegenerator

    llm = ScriptedLLM(prompts=[], answer="Alice parses wiki pages [Source 1].")
    chat = engine(store, llm=llm)
    response = chat.chat("Which task does Alice have?")
    synthesizer = chat.answer_synthesizer
    assert isinstance(synthesizer, CitedSynthesizer)
    views = [n.node.get_content(metadata_mode="llm") for n in response.source_nodes]
    # the prompt the LLM was sent is the one the synthesizer writes for these nodes
    assert (
        llm.prompts[0] == response.turn.prompts["answer"] == synthesizer.prompt(response.turn.completed_question, views)
    )
    assert CounterfactualAttributor.from_engine(chat)._synthesizer is synthesizer
    # RAGE's bottom-up reference still asks the LLM with no source through it (not the out-of-scope sentence)
    regenerator = AnswerRegenerator(llm, synthesizer=synthesizer)
    llm.prompts.clear()
    # (its marker names no source, so it is removed)
    assert (
        _asyncio.run(regenerator.aanswer_without_sources("Which task does Alice have?")) == "Alice parses wiki pages."
    )
    assert len(llm.prompts) == 1 and "### Source" not in llm.prompts[0]
