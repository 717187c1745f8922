"""Explaining finished responses: our chat engine, a stock query engine, a stock chat engine."""

from __future__ import annotations

import asyncio

import pytest
from fakes import CountingEmbedding, HashingEmbedding, KeywordLLM, collected_events
from llama_index.core import VectorStoreIndex
from llama_index.core.base.response.schema import Response
from llama_index.core.schema import Document, MetadataMode, NodeWithScore, TextNode

from llama_index_ragonite.chat.engine import RagoniteChatEngine
from llama_index_ragonite.events import AttributionEndEvent, AttributionStartEvent
from llama_index_ragonite.explain.attribution import CounterfactualAttributor
from llama_index_ragonite.explain.query_engine import AttributedQueryEngine, aexplain_response, explain_response
from llama_index_ragonite.explain.similarity import SimilarityAttributor
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.prompts import OUT_OF_SCOPE
from llama_index_ragonite.retrieval.retriever import HybridRetriever

PAGES = {
    "ota": "<title>OTA update server</title><h1>Ports</h1><p>The OTA server listens on port 8443.</p>"
    "<h1>Owner</h1><p>Bob owns the OTA server.</p>",
    "aurora": "<title>Aurora 2.0</title><h1>Schedule</h1><p>Aurora 2.0 ships in May.</p>",
    "onboarding": "<title>Onboarding</title><h1>Duration</h1><p>Onboarding takes two weeks.</p>",
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = EvidenceStore(tmp_path_factory.mktemp("explain"), embed_model=HashingEmbedding())
    s.ingest([Document(id_=k, text=v, metadata={"url": f"https://wiki.example/pages/{k}"}) for k, v in PAGES.items()])
    return s


def test_chat_engine_explains_a_turn_with_the_index_vectors(store):
    embed = CountingEmbedding()
    embed.texts = []
    retriever = HybridRetriever.from_store(store, top_n=4)
    retriever.dense._embed_model = embed  # count what the explanation embeds
    chat = RagoniteChatEngine(retriever, llm=KeywordLLM(), top_k=4)
    response = chat.chat("Which port does the OTA server listen on?")
    port = next(i for i, n in enumerate(response.source_nodes) if "8443" in n.node.text)
    assert f"[Source {port + 1}]" in response.response
    embed.texts = []
    with collected_events() as events:
        attribution = explain_response(response, CounterfactualAttributor.from_engine(chat))
    assert attribution.top_evidence == port
    assert attribution.question == response.completed_question
    assert attribution.llm_calls == 4
    # evidences came from Chroma; of the answers only the distinct texts were embedded: the
    # answer and "out of scope" (three removals left the answer unchanged), then their claims
    answers = ("The OTA server listens on port 8443.", OUT_OF_SCOPE)
    assert embed.texts == [f"{response.completed_question}\n{a}" for a in answers] + [answers[0].rstrip(".")]
    assert [type(e) for e in events if isinstance(e, (AttributionStartEvent, AttributionEndEvent))] == [
        AttributionStartEvent,
        AttributionEndEvent,
    ]
    # attached to the response and to copies of its source nodes
    data = response.metadata["attribution"]
    assert data["evidences"][port]["share"] == attribution.evidence_shares[port]
    # the metadata holds the Attribution itself, also the read-only mapping of its JSON form
    import json
    import pickle

    from llama_index_ragonite import Attribution

    assert data is attribution and isinstance(data, Attribution) and data.to_text().startswith("Attributed")
    assert json.loads(json.dumps(response.metadata))["attribution"] == json.loads(attribution.to_json())
    with pytest.raises(TypeError, match="read-only"):
        data["evidences"] = []
    again = pickle.loads(pickle.dumps(data))
    assert again == data and dict(again) == dict(data) and again.to_text() == data.to_text()
    top = response.source_nodes[port].node
    assert top.metadata["attribution_share"] == attribution.evidence_shares[port]
    assert top.metadata["attribution_cluster"] is not None
    assert "attribution" not in top.get_content(MetadataMode.LLM) and "attribution" not in top.get_content(
        MetadataMode.EMBED
    )
    assert "attribution_share" not in store.lexical.get_node(top.node_id).metadata  # the index is untouched


def test_async_explain_matches_sync(store):
    chat = RagoniteChatEngine(HybridRetriever.from_store(store, top_n=4), llm=KeywordLLM(), top_k=4)
    response = chat.chat("Which port does the OTA server listen on?")
    sync = explain_response(response, CounterfactualAttributor.from_engine(chat)).evidence_shares
    again = asyncio.run(aexplain_response(response, CounterfactualAttributor.from_engine(chat))).evidence_shares
    assert again == pytest.approx(sync)


def test_any_attributor_can_be_passed(store):
    chat = RagoniteChatEngine(HybridRetriever.from_store(store, top_n=4), llm=KeywordLLM(), top_k=4)
    response = chat.chat("Which port does the OTA server listen on?")
    naive = explain_response(response, SimilarityAttributor(embed_model=HashingEmbedding()))
    assert naive.method == "similarity" and naive.llm_calls == 0
    assert response.metadata["attribution"]["method"] == "similarity"


def test_attributed_query_engine_wraps_a_stock_query_engine():
    nodes = [
        TextNode(id_="a", text="The OTA server listens on port 8443."),
        TextNode(id_="b", text="Aurora 2.0 ships in May."),
        TextNode(id_="c", text="Onboarding takes two weeks."),
    ]
    index = VectorStoreIndex(nodes, embed_model=HashingEmbedding())
    llm = KeywordLLM()
    stock = index.as_query_engine(llm=llm, similarity_top_k=3)
    engine = AttributedQueryEngine(stock, CounterfactualAttributor(llm=llm, embed_model=HashingEmbedding()))
    response = engine.query("Which port does the OTA server use?")
    data = response.metadata["attribution"]
    top = max(data["evidences"], key=lambda e: e["share"])
    assert top["node_id"] == "a"
    assert data["llm_calls"] == 3
    aresponse = asyncio.run(engine.aquery("Which port does the OTA server use?"))
    assert max(aresponse.metadata["attribution"]["evidences"], key=lambda e: e["share"])["node_id"] == "a"


def test_stock_chat_engine_response_with_the_question_passed():
    nodes = [TextNode(id_="a", text="The OTA server listens on port 8443."), TextNode(id_="b", text="Aurora ships.")]
    index = VectorStoreIndex(nodes, embed_model=HashingEmbedding())
    llm = KeywordLLM()
    chat = index.as_chat_engine(chat_mode="context", llm=llm, similarity_top_k=2)
    response = chat.chat("Which port does the OTA server use?")
    attributor = CounterfactualAttributor(llm=llm, embed_model=HashingEmbedding())
    with pytest.raises(ValueError, match="question"):
        explain_response(response, attributor)
    attribution = explain_response(response, attributor, question="Which port does the OTA server use?")
    assert response.source_nodes[attribution.top_evidence].node.node_id == "a"


def test_responses_without_an_answer_are_refused():
    nodes = [NodeWithScore(node=TextNode(text="x"), score=1.0)]
    with pytest.raises(ValueError, match="no answer"):
        explain_response(Response(response="", source_nodes=nodes), question="q?")
