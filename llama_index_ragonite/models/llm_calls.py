"""LLM calls that note what went wrong: transport failures become clear errors, garbled output a warned fallback.

With a ``CallRecord`` (the chat engine's turn): a timeout, an unreachable server or a failed hosted call
raises ``LLMCallError`` (the user should see it); a reply the client cannot parse is logged, recorded as
the record's warning and answered out of scope (the conversation goes on); a stream that breaks off marks
the record truncated. Without one (an explainer's regeneration, a stock query engine) every error is
raised as the client raised it, so the caller's own retries see it. Here, under ``models/``, because the
answer synthesizers make these calls (``synthesizers.CitedSynthesizer``).
"""

from __future__ import annotations

import asyncio
import functools
import gc
import json
import logging
import threading
import time
from typing import Any, AsyncGenerator, Generator, Iterator, List, Optional, Protocol, Sequence, Tuple

from llama_index.core.llms.llm import LLM

from llama_index_ragonite.errors import LLMCallError
from llama_index_ragonite.redaction import one_line
from llama_index_ragonite.text import valid_unicode

__all__ = [
    "MALFORMED",
    "CallRecord",
    "acall_llm",
    "aiter_items",
    "astream_llm",
    "call_llm",
    "close_stream",
    "llm_error",
    "stream_llm",
]

logger = logging.getLogger(__name__)


class CallRecord(Protocol):
    """What a call notes for its caller (``chat.responses.TurnResult`` is one)."""

    warning: Optional[str]
    truncated: bool

    def warn(self, message: str) -> None: ...


# What clients raise on garbled replies (AttributeError: an SDK handed a body it could not parse on as text).
MALFORMED = (json.JSONDecodeError, TypeError, KeyError, IndexError, AttributeError)


def llm_error(err: Exception) -> Exception:
    """``err`` as the user should see it: ``LLMCallError`` for transport and service failures.

    Told apart by exception type (``transport_errors``), never by a class's name. The service's
    own text goes in as one printable line with credentials redacted: a service or a proxy may echo
    the request's API key or ``Authorization`` header back in its error."""
    timeouts, unreachable, service = transport_errors()
    name, said = type(err).__name__, one_line(str(err))
    if isinstance(err, timeouts):
        return LLMCallError(f"The LLM did not answer in time ({name}: {said})")
    if isinstance(err, unreachable):
        return LLMCallError(f"The LLM could not be reached ({name}: {said})")
    if isinstance(err, service):  # rate limits and server errors, after the client's retries
        return LLMCallError(f"The LLM service failed ({name}: {said})")
    return err


@functools.lru_cache(maxsize=1)
def transport_errors() -> Tuple[Tuple[type, ...], Tuple[type, ...], Tuple[type, ...]]:
    """(timeouts, unreachable, service failures): the exception types of asyncio, httpx (which
    LlamaIndex's HTTP clients use) and, when installed, the OpenAI SDK (whose timeout is also a
    connection error: timeouts are checked first)."""
    import httpx  # here: the chat engine imports without the HTTP stack

    timeouts: List[type] = [TimeoutError, asyncio.TimeoutError, httpx.TimeoutException]
    unreachable: List[type] = [ConnectionError, httpx.NetworkError, httpx.RemoteProtocolError]
    service: List[type] = []
    try:
        import openai
    except ImportError:  # the [openai] extra is not installed: no OpenAI client can have raised
        pass
    else:
        timeouts.append(openai.APITimeoutError)
        unreachable.append(openai.APIConnectionError)
        service.append(openai.OpenAIError)
    return tuple(timeouts), tuple(unreachable), tuple(service)


COLLECT_INTERVAL = 1.0  # seconds between two collections, however many answers are stopped


class _Collector:
    """Runs ``gc.collect()`` on a thread of its own when asked; requests made meanwhile share one run.

    Why: clients such as the OpenAI SDK keep a stream's generator in a reference cycle, so closing
    the generator early leaves its HTTP response open until the cycle is collected. A stopped
    answer asks for a collection, so the LLM's connection closes now; many answers stopped at once
    (a user closing many tabs) cost one or two collections, not one each.
    """

    def __init__(self) -> None:
        self._wanted = threading.Event()
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None

    def request(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ragonite-stream-collector", daemon=True)
                self._thread.start()
        self._wanted.set()

    def _run(self) -> None:
        last = 0.0
        while True:
            self._wanted.wait()
            time.sleep(max(0.0, last + COLLECT_INTERVAL - time.monotonic()))  # a full collection holds the GIL
            self._wanted.clear()
            gc.collect()
            last = time.monotonic()


_collector = _Collector()


def close_stream(deltas: Iterator[str]) -> None:
    """Stop an answer's stream early: close its generator (a plain iterator has nothing to close) and
    have its HTTP response collected."""
    close = getattr(deltas, "close", None)
    if close is not None:
        close()
        _collector.request()


def _malformed(record: CallRecord, err: Exception) -> str:
    record.warning = f"The LLM returned malformed output ({type(err).__name__}: {err}); answered out of scope."
    logger.warning(record.warning, exc_info=err)
    return ""


def _failed(record: Optional[CallRecord], err: Exception) -> Any:
    """What a failed call gives: ``""`` with a warning (garbled output, a record to note it in), else raised."""
    if record is None:
        raise err
    if isinstance(err, MALFORMED):
        return _malformed(record, err)
    raise llm_error(err) from err


def call_llm(llm: LLM, prompt: str, record: Optional[CallRecord] = None, **kwargs: Any) -> str:
    """``llm.complete(prompt, **kwargs).text``; with ``record``, ``""`` and a warning on garbled output."""
    try:
        return valid_unicode(llm.complete(prompt, **kwargs).text or "")
    except Exception as err:
        return _failed(record, err)


async def acall_llm(llm: LLM, prompt: str, record: Optional[CallRecord] = None, **kwargs: Any) -> str:
    """``call_llm`` through ``llm.acomplete``."""
    try:
        return valid_unicode((await llm.acomplete(prompt, **kwargs)).text or "")
    except Exception as err:
        return _failed(record, err)


def stream_llm(llm: LLM, prompt: str, record: Optional[CallRecord] = None, **kwargs: Any) -> Generator[str, None, None]:
    """The answer's text deltas; on garbled output, what arrived so far and a warning; a stream
    that ends without a finish reason (where the LLM reports them) marks the record truncated."""
    ending = _Ending()
    try:
        for chunk in llm.stream_complete(prompt, **kwargs):
            ending.see(chunk.raw)
            if chunk.delta:
                yield valid_unicode(chunk.delta)
    except Exception as err:  # garbled: keep what arrived; the warning says the rest was garbled
        _failed(record, err)
        _cut(record)
        return
    ending.check(record)


async def astream_llm(
    llm: LLM, prompt: str, record: Optional[CallRecord] = None, **kwargs: Any
) -> AsyncGenerator[str, None]:
    """``stream_llm`` through the LLM's async API."""
    ending = _Ending()
    try:
        async for chunk in await llm.astream_complete(prompt, **kwargs):
            ending.see(chunk.raw)
            if chunk.delta:
                yield valid_unicode(chunk.delta)
    except Exception as err:
        _failed(record, err)
        _cut(record)
        return
    ending.check(record)


def _cut(record: Optional[CallRecord]) -> None:
    if record is not None:
        record.truncated = True


class _Ending:
    """How an OpenAI-style stream ended: a ``finish_reason`` on its last choice, or none (it broke off).

    Only streams whose chunks carry ``choices`` are judged: an LLM that reports no finish
    reasons at all (the offline answerer, a mock) cannot be told to have broken off.
    """

    def __init__(self) -> None:
        self.judged, self.reason = False, None

    def see(self, raw: Any) -> None:
        choices = raw.get("choices") if isinstance(raw, dict) else getattr(raw, "choices", None)
        if not isinstance(choices, (list, tuple)):
            return
        self.judged = True
        for choice in choices:
            reason = choice.get("finish_reason") if isinstance(choice, dict) else getattr(choice, "finish_reason", None)
            if reason:
                self.reason = reason

    def check(self, record: Optional[CallRecord]) -> None:
        if record is not None and self.judged and self.reason in (None, "length"):
            record.truncated = True
            record.warn(
                "The LLM stopped at its token limit: the answer is incomplete."
                if self.reason == "length"
                else "The LLM's answer broke off (its stream ended without a finish reason): the answer is incomplete."
            )


async def aiter_items(items: Sequence[str]) -> AsyncGenerator[str, None]:
    """``items`` as an async stream (the out-of-scope answer needs no LLM)."""
    for item in items:
        yield item
