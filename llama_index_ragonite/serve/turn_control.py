"""Ending a streamed turn early: when its client leaves, or when its deadline passes.

Why: a turn over a slow LLM can run for minutes. When the browser goes away nobody will read
the rest, yet the LLM would keep writing, the conversation's lock would stay held (the user's
next turn waits) and the whole answer would be stored as if read. ``TurnStop`` is what the route
tells the worker thread (the client left; the deadline); the worker then cancels the engine's
stream, which closes the LLM's HTTP stream at its next chunk, and stores what was streamed as a
truncated answer. ``TurnMemory`` is the turn's memory, which the worker can shut when the LLM
stalls past a short grace, so that a late writer thread can never append to the conversation.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from queue import Empty
from typing import Any, Callable, List, Optional

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.memory import ChatMemoryBuffer

from llama_index_ragonite.chat.responses import truncated_message
from llama_index_ragonite.errors import RagoniteError

__all__ = ["STOP_GRACE_SECONDS", "TurnDeadlineError", "TurnMemory", "TurnStop", "streamed_turn"]

STOP_GRACE_SECONDS = 0.5  # after a stop, how long the worker waits for the LLM's next chunk before giving up on it


class TurnDeadlineError(RagoniteError, TimeoutError):
    """A turn ran past the server's turn deadline (``--turn-deadline``); its partial answer is stored."""


@dataclass
class TurnStop:
    """Why a running turn should stop: ``client_gone`` (set by the route) or ``deadline`` (monotonic seconds)."""

    deadline: float = math.inf
    client_gone: threading.Event = field(default_factory=threading.Event)
    grace: float = STOP_GRACE_SECONDS
    timed_out: bool = False
    stopped_at: Optional[float] = None
    abandoned: Optional[threading.Thread] = None  # a writer thread still waiting for a stalled LLM

    @classmethod
    def within(cls, seconds: float) -> "TurnStop":
        return cls(deadline=time.monotonic() + seconds)

    def should_stop(self) -> bool:
        """True once, when the client has left or the deadline has passed."""
        if self.stopped_at is not None:
            return False
        gone = self.client_gone.is_set()
        if gone or time.monotonic() > self.deadline:
            self.timed_out, self.stopped_at = not gone, time.monotonic()
            return True
        return False

    def grace_over(self) -> bool:
        return self.stopped_at is not None and time.monotonic() - self.stopped_at > self.grace


class TurnMemory(ChatMemoryBuffer):
    """``ChatMemoryBuffer`` whose writes can be shut off: ``shut_unless_written(n, then)`` runs ``then``
    and ignores every later write, unless ``n`` writes were made already (one lock for both, so a
    writer thread can never slip an answer in beside the one ``then`` stores). Reads keep working."""

    _shut: bool = PrivateAttr(default=False)
    _writes: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @classmethod
    def class_name(cls) -> str:
        return "TurnMemory"

    def shut_unless_written(self, writes: int, then: Callable[[], None]) -> bool:
        """Shut the memory and run ``then``; False (nothing done) when ``writes`` writes happened already."""
        with self._lock:
            if self._writes >= writes:
                return False
            self._shut = True
            then()
            return True

    def _write(self, write: Callable[[], None]) -> None:
        with self._lock:
            if not self._shut:
                write()
                self._writes += 1

    def put(self, message: ChatMessage) -> None:
        self._write(lambda: super(TurnMemory, self).put(message))

    def put_messages(self, messages: List[ChatMessage]) -> None:
        self._write(lambda: super(TurnMemory, self).put_messages(messages))

    def set(self, messages: List[ChatMessage]) -> None:
        self._write(lambda: super(TurnMemory, self).set(messages))


def streamed_turn(chat_store: Any, engine: Any, message: str, on_delta: Callable[[str], None], stop: TurnStop):
    """(response, answer text) of a streamed turn, ended early when ``stop`` says so (the module doc)."""
    response = engine.stream_chat(message)
    writer = response.write_response_to_history_thread
    streamed = ""
    try:
        while True:
            if stop.should_stop():
                response.cancel()  # the writer stops at the next delta, closing the LLM's stream
            if (
                response.cancelled.is_set()
                and stop.grace_over()
                and _abandoned(chat_store, engine, response, streamed, stop)
            ):
                return response, streamed
            try:
                delta = response.queue.get(timeout=0.05)
            except Empty:
                if response.exception is not None:
                    raise response.exception from None
                if (response.is_done or not writer.is_alive()) and response.queue.empty():
                    break
                continue
            if delta:
                streamed += delta
                on_delta(delta)
        writer.join()
        if response.exception is not None:
            raise response.exception
    except Exception:
        messages = chat_store.get_messages(engine.memory.chat_store_key)
        if messages and messages[-1].role == MessageRole.USER:  # the question whose answer failed
            chat_store.delete_last_message(engine.memory.chat_store_key)
        raise
    return response, response.response or streamed


def _abandoned(chat_store: Any, engine: Any, response: Any, streamed: str, stop: TurnStop) -> bool:
    """Store ``streamed`` as the truncated answer of an LLM that stalled after the turn was stopped;
    False when the writer thread stored its answer meanwhile (the turn then ends as usual).

    The writer may still be waiting for the LLM (its connection closes at the next chunk or at the
    LLM's read timeout): its memory is shut so that it can never append to the conversation after
    the next turn began, and ``stop.abandoned`` names it, so the route holds the user's turn slot
    until it has ended.
    """
    conversation_id = engine.memory.chat_store_key

    def store() -> None:
        chat_store.add_message(conversation_id, truncated_message(streamed))

    if not engine.memory.shut_unless_written(2, store):  # 1: the question, 2: the writer's answer
        return False
    stop.abandoned = response.write_response_to_history_thread
    response.turn.stop_early()
    return True
