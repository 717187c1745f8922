"""Text that is safe to show: secrets redacted, control characters escaped, one line.

Why: error messages carry text that others wrote (an LLM service's error body, a Confluence
server's ``message``, a page title) to users, logs and terminals. A server that echoes the
request's ``Authorization`` header, or an API key, must not make us show it; a message with
newlines or terminal escape codes must not forge log lines or drive the operator's terminal.
"""

from __future__ import annotations

import os
import re
import unicodedata
from typing import Iterable

__all__ = ["SECRET_VARIABLES", "one_line", "printable", "redacted"]

SECRET_VARIABLES = (
    "OPENAI_API_KEY",
    "OPENAI_COMPATIBLE_API_KEY",
    "CONFLUENCE_API_TOKEN",
    "CONFLUENCE_PAT",
    "RAGONITE_TOKEN",
)
MASK = "[redacted]"
_AUTH = re.compile(
    r"(?i)\b((?:bearer|basic)\s+|(?:token|api[_-]?key|x-api-key|password|secret)\s*[:=]\s*)[A-Za-z0-9._~+/=-]{6,}"
)
_URL_USER = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s]*@")
_KEY = re.compile(r"\bsk-[A-Za-z0-9_-]{8,}")
_BIDI = {"\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f"}


def redacted(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with ``secrets``, the credential environment variables' values, bearer/basic tokens,
    API keys (``sk-…``) and the user info of URLs replaced by ``[redacted]``."""
    for secret in (*secrets, *(os.environ.get(name) or "" for name in SECRET_VARIABLES)):
        if secret and len(secret) >= 6:
            text = text.replace(secret, MASK)
    text = _AUTH.sub(lambda m: f"{m.group(1)}{MASK}", text)
    text = _URL_USER.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    return _KEY.sub("sk-" + MASK, text)


def printable(text: str) -> str:
    """``text`` without control characters (C0, C1, escape sequences' ESC) and bidirectional overrides;
    line breaks and tabs become spaces."""
    out = []
    for char in text:
        if char in "\r\n\t\v\f\x85\u2028\u2029":
            out.append(" ")
        elif char in _BIDI or unicodedata.category(char) == "Cc":
            continue
        else:
            out.append(char)
    return "".join(out)


def one_line(text: str, secrets: Iterable[str] = (), limit: int = 300) -> str:
    """Someone else's text for a message of ours: redacted, printable, at most ``limit`` characters."""
    shown = " ".join(printable(redacted(text, secrets)).split())
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"
