"""What a ``RagoniteChatEngine`` turn returns: the answer plus the completed question and its citations."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from threading import Event
from typing import Any, Dict, List, Optional, Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.chat_engine.types import AgentChatResponse, StreamingAgentChatResponse
from llama_index.core.schema import NodeWithScore

__all__ = [
    "TRUNCATED_KEY",
    "RagoniteChatResponse",
    "RagoniteStreamingChatResponse",
    "TurnResult",
    "truncated_message",
    "turn_metadata",
    "without_truncated",
]

logger = logging.getLogger(__name__)


@dataclass
class TurnResult:
    """What one turn produced besides the answer text; also copied into ``response.metadata``."""

    completed_question: str = ""
    cited: List[int] = field(default_factory=list)  # 1-based source numbers the answer cites
    prompts: Dict[str, str] = field(default_factory=dict)  # "answer" -> the prompt an LLM received (offline: none)
    read: List[str] = field(default_factory=list)  # offline: the node ids the answerer read, as sources 1..n
    decision: Dict[str, Any] = field(default_factory=dict)  # offline: answered or refused, on which unit, which scores
    follow_ups: List[str] = field(default_factory=list)
    warning: Optional[str] = None  # e.g. the LLM returned no usable text; all warnings, one per sentence
    invalid_citations: List[str] = field(default_factory=list)  # markers naming no source, e.g. "[Source 99]"
    language: str = ""  # "en" or "de": the user's turn's, which the follow-ups are written in
    retrieval: Dict[str, Any] = field(default_factory=dict)  # conversation retrieval: choice, query, reason
    truncated: bool = False  # the answer ended early (the LLM's stream broke off, or the turn was cancelled)
    pages: List[str] = field(default_factory=list)  # every page it was built from, earlier turns' too (turn_access)
    embedded: str = ""  # a question longer than the embedding window: the part embedded (the rest: words only)

    def stop_early(self) -> None:
        """The turn was stopped (its client left, its deadline passed) before the answer was finished."""
        self.truncated = True
        self.warn("The turn was stopped before the answer was finished: the answer is incomplete.")

    def warn(self, message: str) -> None:
        """Add ``message`` to ``warning`` (earlier warnings, such as a garbled reply, stay) and log it."""
        self.warning = message if not self.warning else f"{self.warning} {message}"
        logger.warning(message)

    def flag_invalid_citations(self, invalid: Sequence[str], n_sources: int) -> None:
        """Record citation markers that name none of the prompt's ``n_sources`` sources, with a warning."""
        if invalid:
            self.invalid_citations = list(invalid)
            self.warn(
                f"The answer cited {', '.join(invalid)}, which name none of the {n_sources} sources; "
                "removed from the citations."
            )


class _TurnView:
    """The two views every response type gives of its ``turn``."""

    turn: TurnResult
    source_nodes: List[NodeWithScore]

    @property
    def completed_question(self) -> str:
        return self.turn.completed_question

    @property
    def cited_nodes(self) -> List[NodeWithScore]:
        return [self.source_nodes[i - 1] for i in self.turn.cited]


@dataclass
class RagoniteChatResponse(_TurnView, AgentChatResponse):
    """An ``AgentChatResponse`` with the completed question and the citations mapped to nodes."""

    turn: TurnResult = field(default_factory=TurnResult)


@dataclass
class RagoniteStreamingChatResponse(_TurnView, StreamingAgentChatResponse):
    """Streams the answer; ``turn`` (citations, follow-ups) is complete once the stream is consumed.

    ``cancel()`` (from any thread) stops a ``stream_chat`` answer at the next delta: the LLM's stream
    is closed, which closes its HTTP connection, and the partial answer is kept with ``turn.truncated``.
    An ``astream_chat`` answer is stopped the asyncio way, by cancelling the task that reads it.
    """

    turn: TurnResult = field(default_factory=TurnResult)
    cancelled: Event = field(default_factory=Event)

    def cancel(self) -> None:
        self.cancelled.set()


def turn_metadata(turn: TurnResult, nodes: Sequence[NodeWithScore]) -> Dict[str, Any]:
    """The turn as plain data for ``response.metadata`` (cited sources also as node ids)."""
    return {
        "completed_question": turn.completed_question,
        "cited_sources": list(turn.cited),
        "cited_node_ids": [nodes[i - 1].node.node_id for i in turn.cited],
        "prompts": dict(turn.prompts),
        "read": list(turn.read),
        "decision": dict(turn.decision),
        "follow_ups": list(turn.follow_ups),
        "warning": turn.warning,
        "invalid_citations": list(turn.invalid_citations),
        "retrieval": dict(turn.retrieval),
        "truncated": turn.truncated,
        "pages": list(turn.pages),
        "embedded": turn.embedded,
    }


TRUNCATED_KEY = "truncated"  # on an assistant message's additional_kwargs: an answer that broke off


def truncated_message(text: str) -> ChatMessage:
    """The assistant message of an answer that broke off, marked so that memory leaves it out."""
    return ChatMessage(role=MessageRole.ASSISTANT, content=text, additional_kwargs={TRUNCATED_KEY: True})


def without_truncated(history: Sequence[ChatMessage]) -> List[ChatMessage]:
    """``history`` less the exchanges whose answer broke off: an incomplete answer is no memory to build on."""
    kept: List[ChatMessage] = []
    for message in history:
        if message.role == MessageRole.ASSISTANT and message.additional_kwargs.get(TRUNCATED_KEY):
            if kept and kept[-1].role == MessageRole.USER:
                kept.pop()
            continue
        kept.append(message)
    return kept
