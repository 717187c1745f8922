"""Every failure as the API reports it: an HTTP status and ``{"error": message, "kind": ...}``.

Kinds: ``llm`` (502: the LLM failed), ``store`` (503: an index or the history cannot be
used, or is busy), ``timeout`` (504: the turn ran past its deadline), ``busy`` (429: too many
turns running), ``host`` (400: a Host header this server does not answer to), ``input``
(400/409/413/422), ``not_found`` (404, also for another user's conversation), ``auth`` (401),
``internal`` (500, logged; the message names no internals). Store messages never carry a
server path: the server's folders are no business of its users.
"""

from __future__ import annotations

import logging
import re
import sqlite3
from typing import Any, Dict, Tuple

from llama_index_ragonite.errors import (
    ChatStoreError,
    ConversationDeletedError,
    LLMCallError,
    StoreError,
    UnknownConversationError,
)
from llama_index_ragonite.serve.limits import TooManyTurns
from llama_index_ragonite.serve.reading import NotReadable
from llama_index_ragonite.serve.sessions import NotFound, TooManyConversations
from llama_index_ragonite.serve.turn_control import TurnDeadlineError

__all__ = ["error_payload"]

logger = logging.getLogger(__name__)

_BUSY = re.compile(r"database (table )?is locked|database is busy", re.I)
_PATH = re.compile(r"(?<![^\s'\"(=])(?:[A-Za-z]:)?(?:[/\\][^\s/\\'\"():,;<>]+)+[/\\]?")


def without_paths(message: str) -> str:
    """``message`` with every absolute file path replaced by its last part."""
    return _PATH.sub(lambda m: m.group(0).rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1], message)


def error_payload(err: Exception) -> Tuple[int, Dict[str, Any]]:
    """(status, body) for an exception raised while serving a request; no message names a server path."""
    status, body = _payload(err)
    return status, {**body, "error": without_paths(body["error"])}


def _payload(err: Exception) -> Tuple[int, Dict[str, Any]]:
    if isinstance(err, NotReadable):
        return 403, {"error": str(err), "kind": "auth"}
    if isinstance(err, (NotFound, UnknownConversationError)):
        return 404, {"error": str(err), "kind": "not_found"}
    if isinstance(err, (ConversationDeletedError, TooManyConversations)):
        return 409, {"error": f"{err}", "kind": "input"}
    if isinstance(err, LLMCallError):
        return 502, {"error": str(err), "kind": "llm"}
    if isinstance(err, TooManyTurns):
        return 429, {"error": str(err), "kind": "busy"}
    if isinstance(err, TurnDeadlineError):
        return 504, {"error": str(err), "kind": "timeout"}
    if isinstance(err, (StoreError, ChatStoreError)):
        return 503, {"error": str(err), "kind": "store"}
    if isinstance(err, sqlite3.OperationalError) and _BUSY.search(str(err)):
        return 503, {
            "error": "The conversation history is busy (locked by another process); try again",
            "kind": "store",
        }
    if isinstance(err, ValueError):
        return 422, {"error": str(err), "kind": "input"}
    logger.exception("Unexpected error while serving a request", exc_info=err)
    return 500, {"error": f"Internal error ({type(err).__name__})", "kind": "internal"}
