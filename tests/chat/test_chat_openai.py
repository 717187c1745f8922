"""The chat engine end to end with the real OpenAI client against the local stub server."""

import asyncio

import pytest
from fakes import HashingEmbedding
from llama_index.core.schema import Document
from openai_stub import OpenAIStub, delay, malformed, rate_limited, reply, server_error

from llama_index_ragonite import RagoniteChatEngine, openai_llm
from llama_index_ragonite.chat.completion import LLMQuestionCompleter
from llama_index_ragonite.chat.engine import LLMCallError
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.prompts import OUT_OF_SCOPE
from llama_index_ragonite.retrieval.retriever import HybridRetriever

PAGE = (
    "<title>Release 9.0 tests</title><h1>BIOS</h1><table><tr><th>Platform</th><th>BIOS</th></tr>"
    "<tr><td>Dell OptiPlex 7040</td><td>A16</td></tr><tr><td>HP EliteDesk 800</td><td>2.61</td></tr></table>"
)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = EvidenceStore(tmp_path_factory.mktemp("store"), embed_model=HashingEmbedding())
    s.ingest([Document(id_="bios", text=PAGE, metadata={"url": "https://wiki.example/bios"})])
    return s


@pytest.fixture
def stub():
    with OpenAIStub() as server:
        yield server


def engine(store, stub, **llm_kwargs):
    llm_kwargs.setdefault("max_retries", 2)
    llm_kwargs.setdefault("timeout", 5.0)
    llm = openai_llm("gpt-4o", api_base=stub.base_url, api_key="test-key", **llm_kwargs)
    # follow_ups=0: these tests script each request; the suggestions' own request is tested in test_suggestions
    return RagoniteChatEngine(HybridRetriever.from_store(store), llm=llm, follow_ups=0)


def test_prompts_arrive_and_the_llm_completes_follow_ups(store, stub):
    chat = engine(store, stub)
    assert isinstance(chat._completer, LLMQuestionCompleter)  # a real LLM completes questions too
    stub.script(reply("A16 [Source 1]"))
    first = chat.chat("Which BIOS did the Dell OptiPlex 7040 run?")
    assert first.response == "A16 [Source 1]" and first.cited_nodes == first.source_nodes[:1]
    [request] = stub.requests
    assert request.body["model"] == "gpt-4o"
    prompt = request.messages[-1]["content"]
    assert prompt == first.turn.prompts["answer"] and "### Source 1 ###" in prompt
    assert prompt.rstrip().endswith("User: Which BIOS did the Dell OptiPlex 7040 run?\nAssistant:")

    stub.script(reply("Which BIOS did the HP EliteDesk 800 run?"), reply("2.61 [Source 2]"))
    second = chat.chat("And the HP?")
    completion_prompt = stub.requests[1].messages[-1]["content"]
    assert (
        "User: Which BIOS did the Dell OptiPlex 7040 run?" in completion_prompt and "And the HP?" in completion_prompt
    )
    assert second.completed_question == "Which BIOS did the HP EliteDesk 800 run?"
    assert "User: Which BIOS did the HP EliteDesk 800 run?\nAssistant:" in stub.requests[2].messages[-1]["content"]


@pytest.mark.fault(
    "OpenAI-compatible server answers HTTP 429 then 500, then recovers",
    "retried by the client; the answer arrives",
)
def test_rate_limits_and_server_errors_are_retried(store, stub):
    stub.script(rate_limited(), server_error(), reply("A16 [Source 1]"))
    assert engine(store, stub).chat("Which BIOS did the Dell run?").response == "A16 [Source 1]"
    assert len(stub.requests) == 3


@pytest.mark.fault(
    "OpenAI-compatible server keeps answering HTTP 429",
    "LLMCallError ('service failed … RateLimitError') after the retries",
)
def test_errors_that_outlast_the_retries_are_clear(store, stub):
    stub.script(rate_limited(), rate_limited())
    with pytest.raises(LLMCallError, match="service failed.*RateLimitError"):
        engine(store, stub, max_retries=1).chat("Which BIOS did the Dell run?")


@pytest.mark.fault(
    "OpenAI-compatible server answers too late",
    "LLMCallError ('did not answer in time') within the timeout",
)
def test_a_timeout_is_a_clear_error(store, stub):
    stub.script(delay(2.0, then=reply("late")))
    with pytest.raises(LLMCallError, match="did not answer in time"):
        engine(store, stub, max_retries=0, timeout=0.3).chat("Which BIOS did the Dell run?")


@pytest.mark.fault(
    "OpenAI-compatible server sends a malformed body (not JSON, no choices, null content)",
    "out-of-scope answer with a warning; the next turn works",
)
@pytest.mark.parametrize("kind", ["not_json", "no_choices", "null_content"])
def test_malformed_output_does_not_crash_the_engine(store, stub, kind):
    chat = engine(store, stub, max_retries=0)
    stub.script(malformed(kind))
    response = chat.chat("Which BIOS did the Dell run?")
    assert response.response == OUT_OF_SCOPE and response.turn.warning
    stub.script(reply("Which BIOS did the HP run?"), reply("2.61 [Source 2]"))
    assert chat.chat("And the HP?").response == "2.61 [Source 2]"  # the conversation goes on


def test_streaming_and_async_through_the_client(store, stub):
    chat = engine(store, stub)
    stub.script(reply("A16 for the Dell [Source 1]"))
    streamed = chat.stream_chat("Which BIOS did the Dell OptiPlex 7040 run?")
    assert "".join(streamed.response_gen).strip() == "A16 for the Dell [Source 1]"
    assert streamed.turn.cited == [1] and stub.requests[-1].body["stream"] is True

    async def run():
        stub.script(reply("Which BIOS did the HP run?"), reply("2.61 [Source 2]"))
        return await chat.achat("And the HP?")

    assert asyncio.run(run()).response == "2.61 [Source 2]"
