"""The original file of an attachment source, served only through a turn its caller may still read.

Why through the turn: an attachment's url is a ``file:`` path on the server (a folder index) that no
browser can open, and serving files by path would serve any file. The route takes a source of a turn:
``Sessions.stored_turn`` checks the conversation is the caller's and every page the turn showed is still
readable to them (the container page's permissions: an attachment's are its page's), and only a path
the store recorded for that evidence, of an attachment format, is sent.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Any, Tuple
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

from llama_index_ragonite.parsing.attachments import ATTACHMENT_SUFFIXES
from llama_index_ragonite.parsing.structure import ATTACHMENT
from llama_index_ragonite.serve.sessions import NotFound
from llama_index_ragonite.serve.turns import nodes_from_records

__all__ = ["original_file", "original_path"]


def original_path(metadata: Any) -> Path | None:
    """The local file an attachment evidence came from (its ``file:`` url), else None."""
    url = str(metadata.get("url") or "")
    if not metadata.get(ATTACHMENT) or not url.startswith("file:"):
        return None
    path = Path(url2pathname(unquote(urlparse(url).path)))
    return path if path.suffix.lower() in ATTACHMENT_SUFFIXES else None


def original_file(
    sessions: Any, owner: str, conversation_id: str, number: int, source: int, principal: Any = None
) -> Tuple[Path, str]:
    """(path, media type) of source ``source`` of turn ``number``, an attachment on this server's disk."""
    turn, records, _ = sessions.stored_turn(owner, conversation_id, number, principal)
    nodes = nodes_from_records(records)
    if not 1 <= source <= len(nodes):
        raise NotFound(f"Turn {number} has no source {source}")
    path = original_path(nodes[source - 1].node.metadata)
    if path is None or not path.is_file():
        raise NotFound(f"Source {source} of turn {number} has no original file on this server")
    sessions.access_log.write("original", principal, owner, conversation_id, turn=number, pages=[path.name])
    return path, mimetypes.guess_type(path.name)[0] or "application/octet-stream"
