"""What the chat store hands back besides messages: conversation-list rows and answer feedback."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Optional, overload

from llama_index.core.base.llms.types import ChatMessage

__all__ = ["ConversationInfo", "Feedback", "RATINGS", "check_conversation_id", "conversation_title", "utc"]

RATINGS = (-1, 1)


@dataclass(frozen=True)
class ConversationInfo:
    """One row of the conversation list."""

    id: str
    title: str  # the first user message, whitespace collapsed and truncated ("" before the first one)
    created_at: datetime  # UTC
    updated_at: datetime  # UTC, last change to the messages
    message_count: int
    deleted: bool
    deleted_at: Optional[datetime] = None


@dataclass(frozen=True)
class Feedback:
    """A user's rating of one answer."""

    conversation_id: str
    message_index: int  # index of the rated assistant message in ``get_messages(conversation_id)``
    rating: int  # 1 = helpful, -1 = not helpful
    comment: Optional[str]
    created_at: datetime  # UTC


@overload
def utc(ts: float) -> datetime: ...
@overload
def utc(ts: None) -> None: ...
def utc(ts: Optional[float]) -> Optional[datetime]:
    """A stored epoch timestamp as an aware UTC datetime (``None`` stays ``None``)."""
    return None if ts is None else datetime.fromtimestamp(ts, tz=timezone.utc)


def check_conversation_id(key: Any) -> str:
    if not isinstance(key, str) or not key.strip():
        raise ValueError(f"A conversation id must be a non-empty string, got {key!r}")
    return key


def conversation_title(message_json: Optional[str], limit: int) -> str:
    """The first user message (stored JSON), whitespace collapsed and cut to ``limit`` characters."""
    if message_json is None:
        return ""
    text = " ".join((ChatMessage.model_validate_json(message_json).content or "").split())
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"
