"""ConversationRetrieval: a follow-up is retrieved with its conversation, the evidence picks the ranking."""

from __future__ import annotations

import asyncio
from typing import Dict, List

import pytest
from fakes import HashingEmbedding, collected_events
from llama_index.core import Document
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode

from llama_index_ragonite import RagoniteChatEngine
from llama_index_ragonite.chat.completion import LLMQuestionCompleter, OfflineQuestionCompleter
from llama_index_ragonite.chat.conversation_retrieval import TOPIC_KEY, ConversationRetrieval, topic_of
from llama_index_ragonite.chat.trace import TraceRecorder
from llama_index_ragonite.events import ConversationRetrievalEvent
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.prompts import OUT_OF_SCOPE
from llama_index_ragonite.retrieval.retriever import FusedNode, HybridRetriever


def hit(page: str, n: int = 0, **ranks) -> FusedNode:
    node = TextNode(id_=f"{page}-{n}", text=f"{page} text {n}", metadata={"title": page.title()})
    node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=page)
    return FusedNode(node=node, score=1.0, ranks=ranks)


def user(text: str, **kwargs) -> ChatMessage:
    return ChatMessage(role=MessageRole.USER, content=text, additional_kwargs=kwargs)


def test_queries_come_from_the_completed_turn_the_conversation_and_the_topic_page():
    history = [user("Who owns the OTA server?", **{TOPIC_KEY: "OTA Upgrades"})]
    queries = ConversationRetrieval().queries(history, "What is VirtIO?", "What is VirtIO?")
    assert queries == {
        "turn": "What is VirtIO?",
        "conversation": "owns OTA server What is VirtIO?",
        "topic page": "OTA Upgrades What is VirtIO?",
    }
    assert set(ConversationRetrieval(use_topic_page=False).queries(history, "Why?", "Why?")) == {"turn", "conversation"}
    assert ConversationRetrieval().queries([], "Why?", "Why?") == {"turn": "Why?"}


def test_the_ranking_two_queries_agree_on_wins():
    choose = ConversationRetrieval().choose
    assert choose({"turn": [hit("a")], "conversation": [hit("b")], "topic page": [hit("b")]})[0] == "conversation"
    assert choose({"turn": [hit("a")], "conversation": [hit("b")], "topic page": [hit("a")]})[0] == "topic page"
    assert choose({"turn": [hit("a")], "conversation": [hit("b")], "topic page": [hit("c")]})[0] == "conversation"
    assert choose({"turn": [hit("a")]}) == ("turn", "no conversation query")


def test_a_turn_that_strongly_retrieves_its_own_page_keeps_it():
    strong = [hit("a", lexical=1, dense=1, title=1)]
    name, reason = ConversationRetrieval().choose(
        {"turn": strong, "conversation": [hit("b")], "topic page": [hit("b")]}
    )
    assert name == "turn" and "3 retrieval sides" in reason
    two_sides = [hit("a", lexical=1, dense=1)]
    rankings = {"turn": two_sides, "conversation": [hit("b")], "topic page": [hit("b")]}
    assert ConversationRetrieval().choose(rankings)[0] == "conversation"
    assert ConversationRetrieval(strong_sides=2).choose(rankings)[0] == "turn"


def test_the_strong_sides_are_the_retrievers_own_not_a_list_of_names():
    """A side of yours counts as the built-in ones do; the reranker's ranking is no side."""
    rankings = {"turn": [hit("a", lexical=1, mine=1, rerank=1)], "conversation": [hit("b")], "topic page": [hit("b")]}
    assert ConversationRetrieval(strong_sides=2).choose(rankings)[0] == "turn"
    assert ConversationRetrieval(strong_sides=3).choose(rankings)[0] == "conversation"
    five = [hit("a", lexical=1, dense=1, latent=1, title=1, mine=1)]
    assert ConversationRetrieval(strong_sides=5).choose({"turn": five, "conversation": [hit("b")]})[0] == "turn"


def test_topic_of_is_the_top_evidence_page_title():
    assert topic_of([hit("gpu passthrough"), hit("other")]) == "Gpu Passthrough"
    assert topic_of([]) is None


class PagesRetriever(BaseRetriever):
    """Ranks pages by how many of their words the query holds; records the queries."""

    def __init__(self, pages: Dict[str, str]) -> None:
        self.pages, self.queries = pages, []
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        self.queries.append(query_bundle.query_str)
        query = set(query_bundle.query_str.lower().replace("?", "").split())
        scored = sorted(self.pages, key=lambda p: -len(query & set(self.pages[p].lower().split())))
        return [hit(p) for p in scored]


PAGES = {"ota upgrades": "OTA server owned by Bob upgrades poll", "virtio": "VirtIO Argo meeting notes owners"}


def test_engine_records_the_choice_the_topic_page_and_fires_the_event():
    retriever = PagesRetriever(PAGES)
    chat = RagoniteChatEngine.from_defaults(retriever, follow_ups=0)
    assert isinstance(chat._completer, OfflineQuestionCompleter)
    first = chat.chat("Who owns the OTA server?")
    assert first.metadata["retrieval"] == {} and retriever.queries == ["Who owns the OTA server?"]
    assert chat.chat_history[0].additional_kwargs[TOPIC_KEY] == "Ota Upgrades"
    with collected_events() as events, TraceRecorder.attached() as trace:
        second = chat.chat("What is the capital of France?")
    assert second.completed_question == "What is the capital of France?"  # shown and answered as asked
    record = second.metadata["retrieval"]
    assert record["choice"] == "conversation" and record["queries"]["topic page"].startswith("Ota Upgrades ")
    fired = [e for e in events if isinstance(e, ConversationRetrievalEvent)]
    assert len(fired) == 1 and fired[0].choice == "conversation" and fired[0].message == second.completed_question
    assert "Conversation retrieval: used the conversation ranking" in trace.render()


def test_async_path_chooses_the_same_ranking():
    def play(run):
        retriever = PagesRetriever(PAGES)
        chat = RagoniteChatEngine.from_defaults(retriever, follow_ups=0)
        return [run(chat, m).metadata["retrieval"] for m in ("Who owns the OTA server?", "And its poll interval?")]

    sync = play(lambda chat, m: chat.chat(m))
    async_ = play(lambda chat, m: asyncio.run(chat.achat(m)))
    assert sync == async_ and sync[1]["choice"] in ("conversation", "topic page", "turn")


def test_off_by_flag_and_for_the_llm_completer():
    retriever = PagesRetriever(PAGES)
    chat = RagoniteChatEngine.from_defaults(retriever, follow_ups=0, conversation_retrieval=False)
    chat.chat("Who owns the OTA server?")
    assert chat.chat("And its poll interval?").metadata["retrieval"] == {} and len(retriever.queries) == 2
    completer = LLMQuestionCompleter(llm=None)
    assert RagoniteChatEngine.from_defaults(retriever, completer=completer)._conversation is None
    on = RagoniteChatEngine.from_defaults(retriever, completer=completer, conversation_retrieval=True)
    assert isinstance(on._conversation, ConversationRetrieval)


@pytest.fixture(scope="module")
def wiki(tmp_path_factory):
    store = EvidenceStore(tmp_path_factory.mktemp("store"), embed_model=HashingEmbedding())
    pages = {
        "ota": "<title>OTA Upgrades</title><p>Bob owns the OTA server. It polls for upgrades every hour.</p>",
        "gpu": "<title>GPU Passthrough</title><p>The GPU passthrough tests ran QEMU 1.4 on the HP 8300.</p>",
    }
    store.ingest([Document(id_=k, text=v, metadata={"url": f"https://wiki.example/{k}"}) for k, v in pages.items()])
    return store


def test_off_topic_question_after_a_conversation_is_answered_out_of_scope(wiki):
    chat = RagoniteChatEngine.from_defaults(HybridRetriever.from_store(wiki), follow_ups=0)
    chat.chat("Who owns the OTA server?")
    for message in ("What is the capital of France?", "Was ist die Hauptstadt von Frankreich?"):
        response = chat.chat(message)
        assert response.completed_question == message and response.response == OUT_OF_SCOPE


class TextPagesRetriever(PagesRetriever):
    """PagesRetriever whose nodes hold their page's text, for the answerer to read."""

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        ranked = super()._retrieve(query_bundle)
        for n in ranked:
            n.node.set_content(TEXTS[n.node.ref_doc_id])
        return ranked


TEXTS = {
    "ota upgrades": "Bob owns the OTA server. Devices poll the OTA server every six hours for upgrades.",
    "virtio": "The VirtIO Argo meeting notes list the owners of each action.",
}


def test_a_new_request_is_shown_as_asked_and_answered_out_of_scope():
    def after_ota(message: str):
        chat = RagoniteChatEngine.from_defaults(TextPagesRetriever(TEXTS), follow_ups=0)
        chat.chat("Who owns the OTA server?")
        return chat.chat(message)

    cake = after_ota("How do I bake a chocolate cake?")
    assert cake.completed_question == "How do I bake a chocolate cake?"  # points back to nothing: as asked
    assert cake.response == OUT_OF_SCOPE  # no source answers it
    poll = after_ota("How often do devices poll it?")
    assert poll.completed_question != "How often do devices poll it?" and "six hours" in poll.response
