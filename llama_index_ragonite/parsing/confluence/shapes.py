"""Checked reads of Confluence's answers: every JSON field the connector uses, of the type it needs,
the ``Retry-After`` header, and the server's own error message made safe to show.

Why one module: a server, or a proxy in front of it, can answer JSON of any shape. Every field
the connector reads goes through ``get_field`` (or ``content_id``), so a wrong shape is a
``ConfluenceError`` that says what was wrong, never a ``TypeError`` from deep inside.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from typing import Any, Optional, Sequence

from llama_index_ragonite.errors import ConfluenceError
from llama_index_ragonite.redaction import one_line

__all__ = ["checked_page_id", "content_id", "expect", "get_field", "retry_after_seconds", "server_message"]

_KINDS = {dict: "an object", list: "a list", str: "a string", int: "an integer", bool: "a boolean"}
_ID = re.compile(r"[0-9]{1,30}")


def get_field(data: Any, path: str, kind: type, what: str, default: Any = None, at: str = "") -> Any:
    """``data["a"]["b"]`` for ``path="a.b"``, checked: ``default`` when a step is absent or null; a
    ``ConfluenceError`` naming the path (after ``at``, where ``data`` sits in the answer) when a
    step is not an object or the value is not a ``kind``.

    Why one helper: a server, or a proxy in front of it, can answer JSON of any shape; every field
    the connector reads goes through here (or ``content_id``), so a wrong shape is an error that
    says what was wrong, never a ``TypeError`` from deep inside."""
    steps = [at] * bool(at) + path.split(".")
    for i, key in enumerate(steps[bool(at) :], start=bool(at)):
        expect(data, dict, ".".join(steps[:i]) or "the answer", what)
        data = data.get(key)
        if data is None:
            return default
    return expect(data, kind, ".".join(steps), what)


def content_id(item: Any, what: str, name: str = "") -> str:
    """The ``id`` of a content object (``name`` says where it is) as a string of digits.

    Confluence's content ids are numbers; anything else (a path, a query) would end up in the
    URL of a later request, so it is refused."""
    expect(item, dict, name or "the answer", what)
    value = item.get("id")
    where = f"{name}.id" if name else "id"
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)
    if isinstance(value, str) and _ID.fullmatch(value):
        return value
    raise ConfluenceError(f"{what}: malformed answer: {where} is {_describe(value)}, not a page id (digits)")


def expect(value: Any, kind: type, name: str, what: str) -> Any:
    if isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool):
        return value
    raise ConfluenceError(f"{what}: malformed answer: {name} is {_describe(value)}, not {_KINDS[kind]}")


def _describe(value: Any) -> str:
    if value is None:
        return "null or missing"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"a string ({value[:40]!r})"
    return _KINDS.get(type(value), type(value).__name__)


def checked_page_id(value: object) -> str:
    """A page id given by a caller (``--page-id``, ``page_ids=``), as digits; ``ValueError`` otherwise.

    The id goes into a request's path: ``1003/../../admin`` or ``1003?expand=…`` would send an
    authenticated request somewhere else on the site."""
    text = str(value).strip()
    if not _ID.fullmatch(text):
        raise ValueError(f"Confluence page id {text[:40]!r}: a page id is digits (e.g. 123456)")
    return text


def retry_after_seconds(value: Optional[str]) -> Optional[float]:
    """``Retry-After`` as seconds: a number, or an HTTP date (None when absent or unreadable)."""
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()


def server_message(body: bytes, secrets: Sequence[str]) -> str:
    """The server's own ``message``, as one printable line with the credentials redacted (a server
    may echo the request's headers; its text must not forge log lines or drive a terminal)."""
    try:
        message = json.loads(body).get("message")
    except (ValueError, AttributeError, RecursionError):
        return ""
    return f": {one_line(str(message), secrets, limit=200)}" if message else ""
