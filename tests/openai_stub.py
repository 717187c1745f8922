"""An OpenAI-compatible chat-completions server on 127.0.0.1 that plays a script, for tests.

It lets the real ``openai`` / ``llama-index-llms-openai`` clients run end to end with no
network: every request body is recorded (so a test can assert the prompts that arrived),
and each request consumes the next scripted behaviour — a reply, an HTTP error, a delay,
or a malformed body. When the script is empty, ``default`` (a function of the request
body) gives the reply text; the built-in default echoes the last user message.

    with OpenAIStub() as stub:
        stub.script(rate_limited(), server_error(), reply("Berlin [Source 1]"))
        llm = OpenAI(model="gpt-4o", api_base=stub.base_url, api_key="test-key")
        llm.complete("Capital?")
        assert len(stub.requests) == 3

Both layers of retries in ``llama-index-llms-openai`` honour the server's delay headers,
so errors send ``Retry-After`` (seconds; the OpenAI SDK ignores 0) together with
``retry-after-ms`` (which the SDK reads first): retried requests follow each other in
about a millisecond instead of the SDK's 0.5 s+ exponential backoff.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable, Dict, Iterator, List, Optional, Union

import pytest
from harness.llm_server import LoopbackServer

__all__ = [
    "Behaviour",
    "OpenAIStub",
    "RecordedRequest",
    "delay",
    "echo_last_user_message",
    "ending_stream",
    "http_error",
    "malformed",
    "openai_stub",
    "rate_limited",
    "reply",
    "server_error",
    "slow_stream",
]

MALFORMED_KINDS = ("not_json", "no_choices", "null_content", "truncated_stream")


@dataclass(frozen=True)
class Behaviour:
    """What the stub does with one request (build it with the helpers below)."""

    kind: str  # "reply" | "error" | "delay" | "malformed"
    text: Optional[str] = None
    status: int = 200
    retry_after: Optional[float] = None
    seconds: float = 0.0
    then: Optional["Behaviour"] = None
    malformed: Optional[str] = None
    pieces: int = 0  # slow streams: how many chunks
    ending: str = "stop"  # streams: "stop", "length" (the token limit) or "none" (broken off: no finish, no [DONE])


def reply(text: str) -> Behaviour:
    """Answer with ``text`` (a JSON completion, or SSE chunks when the request streams)."""
    return Behaviour("reply", text=text)


def http_error(status: int, retry_after: Optional[float] = 0.001, message: str = "scripted error") -> Behaviour:
    """An OpenAI-style JSON error with HTTP ``status``; ``retry_after`` seconds go into the retry headers."""
    return Behaviour("error", status=status, retry_after=retry_after, text=message)


def rate_limited(retry_after: float = 0.001) -> Behaviour:
    """HTTP 429 with ``Retry-After: 0`` (and ``retry-after-ms``)."""
    return http_error(429, retry_after, "Rate limit reached for gpt-4o (scripted)")


def server_error(retry_after: Optional[float] = 0.001) -> Behaviour:
    """HTTP 500."""
    return http_error(500, retry_after, "The server had an error while processing your request (scripted)")


def delay(seconds: float, then: Optional[Behaviour] = None) -> Behaviour:
    """Wait ``seconds`` before answering (``then``, or the default reply): provokes client timeouts."""
    return Behaviour("delay", seconds=seconds, then=then)


def slow_stream(pieces: int, interval: float, ending: str = "stop") -> Behaviour:
    """A streamed answer of ``pieces`` chunks, one every ``interval`` seconds (a slow LLM); it stops
    early when the client closes the connection (``open_requests`` then drops)."""
    return Behaviour("slow", pieces=pieces, seconds=interval, ending=ending)


def ending_stream(text: str, ending: str) -> Behaviour:
    """A streamed answer that ends with finish reason ``length``, or (``none``) breaks off: no finish, no [DONE]."""
    return Behaviour("reply", text=text, ending=ending)


def malformed(kind: str = "not_json") -> Behaviour:
    """A 200 response the client cannot use.

    ``not_json``: the body is not JSON. ``no_choices``: a JSON completion without ``choices``.
    ``null_content``: a choice whose message content is ``null``. ``truncated_stream``: for
    streaming requests, one good chunk and then a ``data:`` line that is not JSON.
    """
    if kind not in MALFORMED_KINDS:
        raise ValueError(f"malformed kind must be one of {MALFORMED_KINDS}, got {kind!r}")
    return Behaviour("malformed", malformed=kind)


def echo_last_user_message(body: Dict[str, Any]) -> str:
    """The default reply: ``Echo: <text of the last user message>``."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # content parts
                content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
            return f"Echo: {content}"
    return "Echo: (no user message)"


@dataclass
class RecordedRequest:
    path: str
    headers: Dict[str, str]  # lower-cased names
    body: Any  # the parsed JSON body (or the raw text when it is not JSON)
    at: float = field(default_factory=time.monotonic)

    @property
    def messages(self) -> List[Dict[str, Any]]:
        return self.body.get("messages", []) if isinstance(self.body, dict) else []


class OpenAIStub(LoopbackServer):
    """The server. ``base_url`` is what to pass as ``api_base``; use it as a context manager."""

    thread_name = "openai-stub"
    poll_interval = 0.05
    block_on_close = False  # a handler still sleeping in delay() must not block stop()

    def __init__(self, default: Callable[[Dict[str, Any]], str] = echo_last_user_message) -> None:
        self.default = default
        self.requests: List[RecordedRequest] = []
        self._queue: deque = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.open_requests = 0  # requests being answered right now (each is one connection: HTTP/1.0)
        self.stream_default: Optional[Behaviour] = None  # what streaming requests get when the script is empty
        super().__init__()

    # -- control ------------------------------------------------------------------------
    def script(self, *behaviours: Union[Behaviour, str]) -> "OpenAIStub":
        """Queue behaviours for the next requests, in order (a plain string is ``reply(text)``)."""
        with self._lock:
            self._queue.extend(reply(b) if isinstance(b, str) else b for b in behaviours)
        return self

    def clear_script(self) -> None:
        """Drop the behaviours not consumed yet."""
        with self._lock:
            self._queue.clear()

    @property
    def pending(self) -> int:
        """Scripted behaviours not consumed yet."""
        with self._lock:
            return len(self._queue)

    def _handler(self) -> type:
        return type("Handler", (_Handler,), {"stub": self})

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in delay()
        super().stop()

    # -- called by the handler ----------------------------------------------------------
    def _record(self, request: RecordedRequest) -> Behaviour:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.popleft()
            streams = isinstance(request.body, dict) and bool(request.body.get("stream"))
            return self.stream_default if streams and self.stream_default else Behaviour("reply")


@pytest.fixture
def openai_stub() -> Iterator[OpenAIStub]:
    """A running stub (echo default, empty script); stopped after the test."""
    with OpenAIStub() as stub:
        yield stub


def _completion(body: Dict[str, Any], text: Optional[str]) -> Dict[str, Any]:
    prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages") or [])
    completion_tokens = len((text or "").split())
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "stub"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _chunk(body: Dict[str, Any], delta: Dict[str, Any], finish_reason: Optional[str] = None) -> Dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", "stub"),
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }


def _pieces(text: str) -> List[str]:
    """Split into word-sized chunks that concatenate back to ``text``."""
    words = text.split(" ")
    return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)] if text else []


class _Handler(BaseHTTPRequestHandler):
    stub: OpenAIStub  # set on the subclass made by OpenAIStub.start
    server_version = "openai-stub/1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        self.stub._record(RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, None))
        self._json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8", "replace")
        try:
            body: Any = json.loads(raw)
        except json.JSONDecodeError:
            body = raw
        behaviour = self.stub._record(RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        with self.stub._lock:
            self.stub.open_requests += 1
        try:
            self._answer(behaviour, body)
        finally:
            with self.stub._lock:
                self.stub.open_requests -= 1

    def _answer(self, behaviour: Behaviour, body: Any) -> None:
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
            return
        if not isinstance(body, dict):
            self._json(
                400, {"error": {"message": "request body is not a JSON object", "type": "invalid_request_error"}}
            )
            return
        try:
            self._play(behaviour, body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout) before we answered
            pass

    # -- behaviours ---------------------------------------------------------------------
    def _play(self, behaviour: Behaviour, body: Dict[str, Any]) -> None:
        while behaviour.kind == "delay":
            if self.stub._stopping.wait(behaviour.seconds):
                return
            behaviour = behaviour.then or Behaviour("reply")
        stream = bool(body.get("stream"))
        if behaviour.kind == "error":
            headers = {}
            if behaviour.retry_after is not None:
                headers["Retry-After"] = str(int(behaviour.retry_after))
                headers["retry-after-ms"] = str(max(1, math.ceil(behaviour.retry_after * 1000)))
            kind = "rate_limit_exceeded" if behaviour.status == 429 else "server_error"
            self._json(behaviour.status, {"error": {"message": behaviour.text, "type": kind, "code": kind}}, headers)
        elif behaviour.kind == "malformed":
            self._malformed(behaviour.malformed or "not_json", body, stream)
        elif behaviour.kind == "slow":
            self._slow(body, behaviour)
        else:
            text = behaviour.text if behaviour.text is not None else self.stub.default(body)
            if stream:
                self._stream(body, text, behaviour.ending)
            else:
                self._json(200, _completion(body, text))

    def _malformed(self, kind: str, body: Dict[str, Any], stream: bool) -> None:
        if kind == "no_choices":
            payload = _completion(body, "x")
            del payload["choices"]
            self._json(200, payload)
        elif kind == "null_content":
            if stream:
                self._sse([_chunk(body, {"role": "assistant", "content": None}), _chunk(body, {}, "stop")])
            else:
                self._json(200, _completion(body, None))
        elif stream:  # not_json / truncated_stream while streaming: a good chunk, then garbage
            self._sse([_chunk(body, {"role": "assistant", "content": "Partial "}), "{not json"])
        else:
            self._send(200, b"<html><body>502 Bad Gateway (a proxy answered)</body>", "application/json")

    def _stream(self, body: Dict[str, Any], text: str, ending: str = "stop") -> None:
        events: List[Any] = [_chunk(body, {"role": "assistant", "content": ""})]
        events += [_chunk(body, {"content": piece}) for piece in _pieces(text)]
        if ending == "none":  # the connection just closes: no finish reason, no [DONE]
            self._sse(events, done=False)
            return
        events.append(_chunk(body, {}, ending))
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = _completion(body, text)["usage"]
            events.append({**_chunk(body, {}), "choices": [], "usage": usage})
        self._sse(events)

    def _slow(self, body: Dict[str, Any], behaviour: Behaviour) -> None:
        self._sse([_chunk(body, {"role": "assistant", "content": ""})], done=False)
        try:
            for n in range(behaviour.pieces):
                if self.stub._stopping.wait(behaviour.seconds):
                    return
                self._event(_chunk(body, {"content": f"w{n} "}))
            if behaviour.ending != "none":
                self._event(_chunk(body, {}, behaviour.ending))
                self._event("[DONE]")
        except (BrokenPipeError, ConnectionResetError):  # the client closed the stream
            return

    # -- wire ----------------------------------------------------------------------------
    def _sse(self, events: List[Any], done: bool = True) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()  # HTTP/1.0: the stream ends when the connection closes
        for event in events + (["[DONE]"] if done else []):
            self._event(event)

    def _event(self, event: Any) -> None:
        data = event if isinstance(event, str) else json.dumps(event)
        self.wfile.write(f"data: {data}\n\n".encode())
        self.wfile.flush()

    def _json(self, status: int, payload: Any, headers: Optional[Dict[str, str]] = None) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json", headers)

    def _send(self, status: int, data: bytes, content_type: str, headers: Optional[Dict[str, str]] = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
