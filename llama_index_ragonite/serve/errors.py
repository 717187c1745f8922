"""Every failure as the API reports it: an HTTP status and ``{"error": message, "kind": ...}``.

Kinds: ``llm`` (502: the LLM failed), ``store`` (503: an index or the history cannot be
used), ``input`` (400/409/413/422), ``not_found`` (404, also for another user's
conversation), ``auth`` (401), ``internal`` (500, logged; the message names no internals).
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Tuple

from llama_index_ragonite.errors import (
    ChatStoreError,
    ConversationDeletedError,
    LLMCallError,
    StoreError,
    UnknownConversationError,
)
from llama_index_ragonite.serve.sessions import NotFound

__all__ = ["error_payload"]

logger = logging.getLogger(__name__)


def error_payload(err: Exception) -> Tuple[int, Dict[str, Any]]:
    """(status, body) for an exception raised while serving a request."""
    if isinstance(err, (NotFound, UnknownConversationError)):
        return 404, {"error": str(err), "kind": "not_found"}
    if isinstance(err, ConversationDeletedError):
        return 409, {"error": f"{err}", "kind": "input"}
    if isinstance(err, LLMCallError):
        return 502, {"error": str(err), "kind": "llm"}
    if isinstance(err, (StoreError, ChatStoreError)):
        return 503, {"error": str(err), "kind": "store"}
    if isinstance(err, ValueError):
        return 422, {"error": str(err), "kind": "input"}
    logger.exception("Unexpected error while serving a request", exc_info=err)
    return 500, {"error": f"Internal error ({type(err).__name__})", "kind": "internal"}
