"""A local OpenAI-compatible chat-completions server whose replies come from a function.

Why: the attribution latency benchmark times the real ``llama-index-llms-openai`` client
(HTTP, JSON, its async pool) against an LLM of known latency, with no network; the serve load
benchmark holds streams open on one that streams slowly. ``POST /v1/chat/completions`` is served,
streamed word by word (``chunk_interval`` seconds apart) when the request asks for a stream; the
test suite has a scriptable stub.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Optional

Reply = Callable[[Dict[str, Any]], str]  # request body -> the assistant's text


def completion(body: Dict[str, Any], text: str) -> Dict[str, Any]:
    """An OpenAI chat completion object answering ``body`` with ``text``."""
    return {
        "id": "chatcmpl-local",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "local"),
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": None, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


class _Handler(BaseHTTPRequestHandler):
    reply: Reply  # set on the subclass made by LocalLLMServer.start
    chunk_interval: float = 0.0
    owner: "LocalLLMServer"

    def log_message(self, format: str, *args: Any) -> None:  # keep benchmark output clean
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"not served: {self.path}", "type": "invalid_request_error"}})
            return
        owner = type(self).owner
        with owner.lock:
            owner.open_connections += 1
        try:
            text = type(self).reply(body)
            if body.get("stream"):
                self._stream(body, text)
            else:
                self._send(200, completion(body, text))
        finally:
            with owner.lock:
                owner.open_connections -= 1

    def _stream(self, body: Dict[str, Any], text: str) -> None:
        """Server-sent chunks, one word each; stops when the client closes the connection."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()  # HTTP/1.0: the stream ends when the connection closes
        words = [w + " " for w in text.split()]
        chunks = [{"content": w} for w in words] + [None]
        try:
            for n, delta in enumerate(chunks):
                if n:
                    time.sleep(type(self).chunk_interval)
                choice = {"index": 0, "delta": delta or {}, "finish_reason": None if delta else "stop"}
                event = {"id": "chatcmpl-local", "object": "chat.completion.chunk", "created": int(time.time()),
                         "model": body.get("model", "local"), "choices": [choice]}  # fmt: skip
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
        except (BrokenPipeError, ConnectionResetError):
            return

    def _send(self, status: int, payload: Dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class LoopbackServer:
    """An HTTP server on 127.0.0.1 (a free port) in a daemon thread; subclasses give ``_handler()``.

    Shared by the benchmark's ``LocalLLMServer`` and the test suite's scriptable OpenAI stub.
    """

    thread_name = "loopback-server"
    poll_interval = 0.5  # how often serve_forever checks for shutdown
    block_on_close = True  # False: stop() does not wait for handlers still running

    def __init__(self) -> None:
        self._server: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    def _handler(self) -> type:
        raise NotImplementedError

    @property
    def port(self) -> int:
        assert self._server is not None, "the server is not running"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self):
        server_class = type("Server", (ThreadingHTTPServer,), {"request_queue_size": 128})  # concurrent clients
        self._server = server_class(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.block_on_close = self.block_on_close
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": self.poll_interval},
            name=self.thread_name,
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class LocalLLMServer(LoopbackServer):
    """``start()`` serves on 127.0.0.1 (a free port) in a thread; pass ``base_url`` as ``api_base``."""

    thread_name = "local-llm"

    def __init__(self, reply: Reply, chunk_interval: float = 0.0) -> None:
        super().__init__()
        self.reply, self.chunk_interval = reply, chunk_interval
        self.open_connections = 0  # requests being answered (HTTP/1.0: one connection each)
        self.lock = threading.Lock()

    def _handler(self) -> type:
        fields = {"reply": staticmethod(self.reply), "chunk_interval": self.chunk_interval, "owner": self}
        return type("Handler", (_Handler,), fields)
