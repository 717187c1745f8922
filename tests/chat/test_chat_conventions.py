"""RagoniteChatEngine follows LlamaIndex's chat engine conventions: from_defaults, Settings.llm,
node postprocessors between retrieval and the prompt, callback manager and trace."""

import asyncio
from typing import Any, List, Optional

import pytest
from fakes import HashingEmbedding
from llama_index.core import Settings
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.callbacks import CallbackManager, CBEventType, EventPayload, LlamaDebugHandler
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import Document, NodeWithScore, QueryBundle, TextNode

from llama_index_ragonite import RagoniteChatEngine
from llama_index_ragonite.chat.completion import LLMQuestionCompleter, OfflineQuestionCompleter
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.models.extractive import ExtractiveAnswerer
from llama_index_ragonite.prompts import OUT_OF_SCOPE

POOL = [("Alice parses wiki pages.", 0.9), ("Bob ranks evidences.", 0.7), ("Carol writes tests.", 0.4)]
POOL += [("Dave deploys the OTA server.", 0.2)]


class PoolRetriever(BaseRetriever):
    """Always the same four scored nodes, best first."""

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        return [NodeWithScore(node=TextNode(id_=f"n{i}", text=t), score=s) for i, (t, s) in enumerate(POOL)]


class RecordingLLM(CustomLLM):
    """Answers ``answer`` and records every prompt."""

    answer: str = "From the sources [Source 1]."
    prompts: List[str] = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="recording")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        return CompletionResponse(text=self.answer)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        self.prompts.append(prompt)
        yield CompletionResponse(text=self.answer, delta=self.answer)


class ReverseAndDrop(BaseNodePostprocessor):
    """Reverses the pool and drops the node holding ``drop``; records the queries and which path ran."""

    drop: str = "Bob"
    calls: List[tuple] = []

    @classmethod
    def class_name(cls) -> str:
        return "ReverseAndDrop"

    def _postprocess_nodes(self, nodes, query_bundle: Optional[QueryBundle] = None):
        self.calls.append(("sync", query_bundle.query_str, len(nodes)))
        return [n for n in reversed(nodes) if self.drop not in n.node.get_content()]

    async def _apostprocess_nodes(self, nodes, query_bundle: Optional[QueryBundle] = None):
        self.calls.append(("async", query_bundle.query_str, len(nodes)))
        return [n for n in reversed(nodes) if self.drop not in n.node.get_content()]


def sources_in(prompt: str) -> List[str]:
    """The evidence texts of an answer prompt, in their numbered order."""
    return sorted((text for text, _ in POOL if text in prompt), key=prompt.index)


@pytest.fixture
def settings_llm(monkeypatch):
    """``Settings.llm`` set for one test only (restored afterwards, never read through its OpenAI default)."""
    llm = RecordingLLM(answer="Settings answered [Source 1].")
    monkeypatch.setattr(Settings, "_llm", llm)
    return llm


def test_from_defaults_builds_the_engine_like_core_chat_engines(caplog):
    llm = RecordingLLM()
    history = [
        ChatMessage(role=MessageRole.USER, content="Who parses?"),
        ChatMessage(role="assistant", content="Alice"),
    ]
    chat = RagoniteChatEngine.from_defaults(PoolRetriever(), llm=llm, chat_history=history, top_k=2, verbose=True)
    assert chat.llm is llm and isinstance(chat._completer, LLMQuestionCompleter)
    assert [m.content for m in chat.chat_history] == ["Who parses?", "Alice"]
    assert "ignores verbose" in caplog.text
    response = RagoniteChatEngine.from_defaults(PoolRetriever(), llm=llm, top_k=2, complete_questions=False).chat(
        "Who?"
    )
    assert len(response.source_nodes) == 2 and response.response == llm.answer
    with pytest.raises(ValueError, match="chat_history or memory"):
        RagoniteChatEngine.from_defaults(PoolRetriever(), memory=chat.memory, chat_history=history)


def test_without_settings_the_default_is_the_offline_stack(monkeypatch):
    monkeypatch.setattr(Settings, "_llm", None)  # nothing assigned
    chat = RagoniteChatEngine.from_defaults(PoolRetriever())
    assert isinstance(chat.llm, ExtractiveAnswerer) and isinstance(chat._completer, OfflineQuestionCompleter)


def test_settings_llm_is_used_when_set_and_an_explicit_llm_wins(settings_llm):
    chat = RagoniteChatEngine.from_defaults(PoolRetriever())
    assert chat.llm is settings_llm and isinstance(chat._completer, LLMQuestionCompleter)
    assert chat.chat("Who parses wiki pages?").response == "Settings answered [Source 1]."
    [prompt, suggestions] = settings_llm.prompts  # the answer, then the follow-up suggestions
    assert "follow-up questions" in suggestions
    assert "### Source 1 ###" in prompt and "User: Who parses wiki pages?" in prompt
    explicit = RecordingLLM(answer="Explicit [Source 1].")
    chat = RagoniteChatEngine(PoolRetriever(), llm=explicit)
    assert chat.llm is explicit and chat.chat("Who parses wiki pages?").response == "Explicit [Source 1]."
    assert len(settings_llm.prompts) == 2  # the explicit LLM answered, Settings' did not


def test_a_similarity_cutoff_drops_nodes_before_the_prompt():
    chat = RagoniteChatEngine.from_defaults(
        PoolRetriever(), llm=RecordingLLM(), node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=0.5)]
    )
    response = chat.chat("Who parses wiki pages?")
    assert [n.score for n in response.source_nodes] == [0.9, 0.7]
    assert sources_in(response.turn.prompts["answer"]) == ["Alice parses wiki pages.", "Bob ranks evidences."]
    assert "### Source 3 ###" not in response.turn.prompts["answer"]


def test_a_custom_postprocessor_reorders_and_drops_and_top_k_cuts_after_it():
    reorder = ReverseAndDrop(calls=[])
    chat = RagoniteChatEngine.from_defaults(
        PoolRetriever(), llm=RecordingLLM(), node_postprocessors=[reorder], top_k=2, complete_questions=False
    )
    response = chat.chat("Who deploys?")
    assert reorder.calls == [("sync", "Who deploys?", 4)]  # the whole pool, with the question as QueryBundle
    # reversed, Bob dropped, then the top 2: what top_k before the postprocessor would never give
    assert sources_in(response.turn.prompts["answer"]) == ["Dave deploys the OTA server.", "Carol writes tests."]
    assert [n.node.node_id for n in response.source_nodes] == ["n3", "n2"]
    assert response.cited_nodes == response.source_nodes[:1]


def test_postprocessors_get_the_completed_question():
    reorder = ReverseAndDrop(calls=[])
    chat = RagoniteChatEngine.from_defaults(
        PoolRetriever(), llm=RecordingLLM(), completer=OfflineQuestionCompleter(), node_postprocessors=[reorder]
    )
    chat.chat("Who deploys the OTA server?")
    chat.chat("And who tests it?")
    assert reorder.calls[0][1] == "Who deploys the OTA server?"
    completed = reorder.calls[1][1]
    assert completed.startswith("And who tests it (") and "OTA server" in completed  # the referent, in place


def test_postprocessors_that_drop_everything_mean_out_of_scope():
    llm = RecordingLLM()
    chat = RagoniteChatEngine.from_defaults(
        PoolRetriever(), llm=llm, node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=0.99)]
    )
    assert chat.chat("Who?").response == OUT_OF_SCOPE and llm.prompts == []


def test_async_paths_postprocess_asynchronously():
    reorder = ReverseAndDrop(calls=[])
    chat = RagoniteChatEngine.from_defaults(
        PoolRetriever(),
        llm=RecordingLLM(),
        node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=0.3), reorder],
        complete_questions=False,
    )

    async def run():
        answer = await chat.achat("Who tests?")
        streamed = await chat.astream_chat("Who parses?")
        tokens = [t async for t in streamed.async_response_gen()]
        return answer, streamed, tokens

    answer, streamed, tokens = asyncio.run(run())
    assert reorder.calls == [("async", "Who tests?", 3), ("async", "Who parses?", 3)]  # after the cutoff
    expected = ["Carol writes tests.", "Alice parses wiki pages."]
    assert sources_in(answer.turn.prompts["answer"]) == expected == sources_in(streamed.turn.prompts["answer"])
    assert "".join(tokens).strip() == RecordingLLM().answer


def test_from_store_passes_node_postprocessors_through(tmp_path):
    store = EvidenceStore(tmp_path / "store", embed_model=HashingEmbedding())
    store.ingest([Document(id_="p", text="<title>Team</title><p>Alice parses wiki pages.</p>")])
    drop_all = SimilarityPostprocessor(similarity_cutoff=2.0)
    chat = RagoniteChatEngine.from_store(
        store.path, embed_model=HashingEmbedding(), llm=RecordingLLM(), node_postprocessors=[drop_all]
    )
    assert chat.chat("Who parses wiki pages?").response == OUT_OF_SCOPE


def test_a_callback_manager_sees_the_chat_trace_and_events():
    debug = LlamaDebugHandler()
    manager = CallbackManager([debug])
    reorder = ReverseAndDrop(calls=[])
    chat = RagoniteChatEngine.from_defaults(PoolRetriever(), node_postprocessors=[reorder], callback_manager=manager)
    assert chat.callback_manager is manager and reorder.callback_manager is manager
    response = chat.chat("Who parses wiki pages?")
    assert debug._cur_trace_id == "chat"
    [(start, end)] = debug.get_event_pairs(CBEventType.SYNTHESIZE)
    assert start.payload[EventPayload.QUERY_STR] == "Who parses wiki pages?"
    assert end.payload[EventPayload.RESPONSE].response == response.response
    assert debug.get_llm_inputs_outputs() == []  # offline the synthesizer reads the nodes: no LLM call to report
    assert "answer" not in response.turn.prompts  # offline no prompt is written: the trace says what was read
    assert response.turn.read == [n.node.node_id for n in response.source_nodes]
    debug.flush_event_logs()
    asyncio.run(chat.achat("And Bob?"))
    assert len(debug.get_event_pairs(CBEventType.SYNTHESIZE)) == 1


def test_the_default_callback_manager_is_settings(monkeypatch):
    manager = CallbackManager([LlamaDebugHandler()])
    monkeypatch.setattr(Settings, "_callback_manager", manager)
    assert RagoniteChatEngine.from_defaults(PoolRetriever(), llm=RecordingLLM()).callback_manager is manager
