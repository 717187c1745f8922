"""LLM failures are told apart by exception type (asyncio, httpx, openai), never by a class's name."""

import asyncio

import httpx
import openai
import pytest

from llama_index_ragonite.errors import LLMCallError
from llama_index_ragonite.models.llm_calls import llm_error

REQUEST = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")


@pytest.mark.parametrize(
    ("err", "said"),
    [
        (asyncio.TimeoutError(), "did not answer in time"),
        (httpx.ReadTimeout("read"), "did not answer in time"),
        (openai.APITimeoutError(request=REQUEST), "did not answer in time"),  # also a connection error
        (httpx.ConnectError("refused"), "could not be reached"),
        (ConnectionResetError("reset"), "could not be reached"),
        (openai.APIConnectionError(request=REQUEST), "could not be reached"),
        (openai.RateLimitError("slow", response=httpx.Response(429, request=REQUEST), body=None), "service failed"),
        (openai.InternalServerError("boom", response=httpx.Response(500, request=REQUEST), body=None), "failed"),
    ],
)
def test_transport_and_service_failures_become_llm_call_errors(err, said):
    shown = llm_error(err)
    assert isinstance(shown, LLMCallError) and said in str(shown) and type(err).__name__ in str(shown)


def test_a_name_that_looks_like_a_timeout_is_not_one():
    class RetrievalTimeoutBudget(ValueError):  # a bug of ours, named like a transport failure
        pass

    err = RetrievalTimeoutBudget("bad budget")
    assert llm_error(err) is err
