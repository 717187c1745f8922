"""The OpenAI path through the real ``llama-index-llms-openai`` client, against ``openai_stub`` on 127.0.0.1.

What the real client raises (llama-index-llms-openai 0.8.3, openai 2.x) — the chat engine
catches these to keep running:

=====================================  ==============================================================
server does                            client raises
=====================================  ==============================================================
429 (after the retries)                ``openai.RateLimitError``         (an ``openai.APIStatusError``)
500 / 502 / 503 (after the retries)    ``openai.InternalServerError``    (an ``openai.APIStatusError``)
400 / 401 (never retried)              ``openai.BadRequestError`` / ``openai.AuthenticationError``
answers later than ``timeout``         ``openai.APITimeoutError``        (an ``openai.APIConnectionError``)
200 with a body that is not JSON       ``json.JSONDecodeError`` — raw, NOT wrapped in an ``openai`` error
200 JSON without ``choices``           ``TypeError`` ('NoneType' object is not subscriptable)
200 with ``content: null``             nothing: the message content is ``None``
stream with a ``data:`` line not JSON  ``json.JSONDecodeError`` mid-stream, after the good deltas
=====================================  ==============================================================

All ``openai`` errors above derive from ``openai.APIError``. ``OpenAI(max_retries=n)`` retries in
the SDK *and* in a tenacity loop around it (``n * (n + 1)`` requests when every one fails);
``llama_index_ragonite.models.llms.openai_llm`` keeps the SDK layer only (``n + 1``).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import openai
import pytest
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.llms.openai import OpenAI
from openai_stub import OpenAIStub, delay, http_error, malformed, rate_limited, reply, server_error

from llama_index_ragonite.models.llms import openai_llm
from llama_index_ragonite.models.openai_compatible import openai_compatible_llm

MESSAGES = [
    ChatMessage(role=MessageRole.SYSTEM, content="Answer only from the sources. Cite them as [Source i]."),
    ChatMessage(role=MessageRole.USER, content="Which BIOS version did the Dell OptiPlex 7040 run?"),
]


@pytest.fixture
def stub():
    with OpenAIStub() as server:
        yield server


def client(stub: OpenAIStub, **kwargs) -> OpenAI:
    kwargs.setdefault("max_retries", 2)
    kwargs.setdefault("timeout", 5.0)
    return OpenAI(model="gpt-4o", api_base=stub.base_url, api_key="test-key", **kwargs)


def sent(stub: OpenAIStub, i: int = -1) -> list:
    return [(m["role"], m["content"]) for m in stub.requests[i].messages]


# -- the happy path -----------------------------------------------------------------------------
def test_chat_sends_the_messages_and_model(stub):
    stub.script(reply("A16 [Source 1]"))
    response = client(stub, temperature=0.0).chat(MESSAGES)
    assert response.message.role == MessageRole.ASSISTANT
    assert response.message.content == "A16 [Source 1]"
    request = stub.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.body["model"] == "gpt-4o" and request.body["temperature"] == 0.0
    assert request.body["stream"] is False
    assert sent(stub) == [
        ("system", "Answer only from the sources. Cite them as [Source i]."),
        ("user", "Which BIOS version did the Dell OptiPlex 7040 run?"),
    ]


def test_complete_goes_through_chat_completions(stub):
    response = client(stub).complete("Rephrase: and the 7050?")
    assert response.text == "Echo: Rephrase: and the 7050?"  # the default reply echoes the last user turn
    assert sent(stub) == [("user", "Rephrase: and the 7050?")]


def test_achat(stub):
    stub.script("A16")
    response = asyncio.run(client(stub).achat(MESSAGES))
    assert response.message.content == "A16"
    assert sent(stub)[1][0] == "user" and len(stub.requests) == 1


def test_stream_chat_and_astream_chat(stub):
    text = "The OptiPlex 7040 ran BIOS A16 [Source 2]."
    stub.script(text, text)
    deltas = [chunk.delta for chunk in client(stub).stream_chat(MESSAGES)]
    assert "".join(deltas) == text and len([d for d in deltas if d]) > 3  # it really streamed in pieces
    assert stub.requests[0].body["stream"] is True

    async def collect():
        return [chunk async for chunk in await client(stub).astream_chat(MESSAGES)]

    chunks = asyncio.run(collect())
    assert chunks[-1].message.content == text
    assert sent(stub, 1) == sent(stub, 0)


# -- failures -------------------------------------------------------------------------------------
def test_rate_limit_then_server_error_then_success_is_retried(stub):
    stub.script(rate_limited(), server_error(), reply("A16"))
    start = time.monotonic()
    assert client(stub, max_retries=2).chat(MESSAGES).message.content == "A16"
    assert len(stub.requests) == 3
    assert time.monotonic() - start < 2  # Retry-After / retry-after-ms from the server, no long backoff
    assert sent(stub, 0) == sent(stub, 2)  # the same prompt each time

    stub.script(rate_limited(), server_error(), reply("A16 again"))
    assert asyncio.run(client(stub, max_retries=2).achat(MESSAGES)).message.content == "A16 again"
    assert len(stub.requests) == 6


def test_a_slow_server_raises_api_timeout_error_in_bounded_time(stub):
    stub.script(delay(10, then=reply("too late")))
    start = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        client(stub, max_retries=0, timeout=0.3).chat(MESSAGES)
    assert time.monotonic() - start < 3
    assert len(stub.requests) == 1

    stub.script(delay(10))
    with pytest.raises(openai.APITimeoutError):
        asyncio.run(client(stub, max_retries=0, timeout=0.3).achat(MESSAGES))


def test_errors_that_are_not_retried(stub):
    stub.script(http_error(400, retry_after=None, message="context length exceeded"))
    with pytest.raises(openai.BadRequestError, match="context length exceeded"):
        client(stub).chat(MESSAGES)
    stub.script(http_error(401, retry_after=None))
    with pytest.raises(openai.AuthenticationError):
        client(stub).chat(MESSAGES)
    assert len(stub.requests) == 2


def test_malformed_answers_raise_these_types(stub):
    llm = client(stub, max_retries=0)
    stub.script(malformed("not_json"))
    with pytest.raises(json.JSONDecodeError):
        llm.chat(MESSAGES)
    stub.script(malformed("no_choices"))
    with pytest.raises(TypeError):
        llm.chat(MESSAGES)
    stub.script(malformed("null_content"))
    assert llm.chat(MESSAGES).message.content is None  # no error: callers must handle an empty answer
    stub.script(malformed("truncated_stream"))
    received = []
    with pytest.raises(json.JSONDecodeError):
        for chunk in llm.stream_chat(MESSAGES):
            received.append(chunk.delta)
    assert "".join(received) == "Partial "
    assert len(stub.requests) == 4 and stub.pending == 0


def test_retries_multiply_in_the_plain_client_and_not_in_openai_llm(stub):
    stub.script(*[rate_limited()] * 10)
    with pytest.raises(openai.RateLimitError):
        client(stub, max_retries=2).chat(MESSAGES)
    assert len(stub.requests) == 6  # 2 tenacity attempts x (1 + 2 SDK retries)

    stub.clear_script()
    stub.script(*[rate_limited()] * 10)
    llm = openai_llm(api_base=stub.base_url, api_key="test-key", max_retries=2, timeout=5.0)
    with pytest.raises(openai.RateLimitError):
        llm.chat(MESSAGES)
    assert len(stub.requests) == 6 + 3  # 1 + 2 retries
    stub.clear_script()
    stub.script(rate_limited(), server_error(), "A16")
    assert asyncio.run(llm.achat(MESSAGES)).message.content == "A16"
    assert len(stub.requests) == 12


def test_openai_llm_passes_settings_through(stub):
    llm = openai_llm("gpt-4o-mini", api_base=stub.base_url, api_key="k2", temperature=0.0, max_tokens=64)
    assert llm.model == "gpt-4o-mini" and llm.max_retries == 0
    assert llm.complete("Hi").text == "Echo: Hi"
    body = stub.requests[-1].body
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("gpt-4o-mini", 0.0, 64)
    assert stub.requests[-1].headers["authorization"] == "Bearer k2"

    stub.script(delay(10), delay(10), delay(10))
    start = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        openai_llm(api_base=stub.base_url, api_key="k", max_retries=1, timeout=0.3).chat(MESSAGES)
    assert len(stub.requests) == 1 + 2 and time.monotonic() - start < 4
    with pytest.raises(ValueError, match="reuse_client"):
        openai_llm(api_base=stub.base_url, api_key="k", reuse_client=False)


def test_openai_compatible_llm_retries_once_per_layer_with_the_clients_it_built(stub):
    """Its retrying SDK clients are the ones it made (no longer read back from an ``OpenAI``'s private fields)."""
    stub.script(*[rate_limited()] * 10)
    llm = openai_compatible_llm("llama3:8b", stub.base_url, api_key="k3", max_retries=2, timeout=5.0, temperature=0.0)
    assert llm.max_retries == 0 and llm.timeout == 5.0 and llm.metadata.context_window == 8192
    with pytest.raises(openai.RateLimitError):
        llm.chat(MESSAGES)
    assert len(stub.requests) == 1 + 2  # the SDK's retries only
    stub.clear_script()
    assert asyncio.run(llm.acomplete("Hi")).text == "Echo: Hi"
    body, headers = stub.requests[-1].body, stub.requests[-1].headers
    assert (body["model"], body["temperature"], headers["authorization"]) == ("llama3:8b", 0.0, "Bearer k3")


def test_openai_llm_names_the_extra_when_the_client_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_index.llms.openai", None)
    with pytest.raises(ImportError, match=r"llama-index-ragonite\[openai\]"):
        openai_llm()


# -- the stub itself ----------------------------------------------------------------------------------
def test_stub_default_reply_is_a_function_of_the_request():
    with OpenAIStub(default=lambda body: f"{len(body['messages'])} messages to {body['model']}") as stub:
        assert client(stub).chat(MESSAGES).message.content == "2 messages to gpt-4o"
        with pytest.raises(ValueError, match="malformed kind"):
            malformed("garbage")
    with pytest.raises(AssertionError):
        _ = stub.port  # stopped


def test_stub_rejects_unknown_routes(stub):
    with pytest.raises(openai.NotFoundError):
        openai.OpenAI(base_url=stub.base_url, api_key="k", max_retries=0).embeddings.create(
            model="text-embedding-3-small", input="x"
        )
    assert stub.requests[0].path == "/v1/embeddings"
