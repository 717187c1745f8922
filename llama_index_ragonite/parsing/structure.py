"""An evidence's structure as node metadata: the keys, and its lists as flat values.

Why flat: vector stores such as Chroma take only str, int and float metadata, so a list (the heading
path, a table's headers, a row's cells) is kept as a JSON array in a string and read back with
``structure_list``. Every key here is hidden from the EMBED and LLM views (``STRUCTURE_KEYS``): the text
the embedding model and the LLM see stays what the context header renders. Nodes of stores built before
these keys existed lack them; readers fall back to the rendered text for those.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from typing import Any, List, Mapping, Sequence, Tuple
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

PAGE_ID = "page_id"  # the page's document id
MODIFIED = "modified"  # when the page was last modified, as its source declares it
MODIFIED_SOURCE = "modified_source"  # where ``modified`` came from (``MODIFIED_SOURCES``)
HEADINGS = "headings"  # the heading path, outermost first (JSON list)
TABLE_ID = "table_id"  # node id of the table a table or row node belongs to (when the table is a node)
HEADERS = "headers"  # a table's column headers, one per column (JSON list); "" where unknown
CELLS = "cells"  # a row's cells, aligned with ``headers`` (JSON list); "" where empty or a span's tail
BEFORE_ID, BEFORE_TEXT = "before_id", "before_text"  # the evidence that gives the Before line, and its line
AFTER_ID, AFTER_TEXT = "after_id", "after_text"  # the evidence that gives the After line, and its line

# an attachment's evidences (parsing/attachments): the file name, its page, sheet or slide, and which of those
ATTACHMENT, LOCATION, LOCATION_KIND = "attachment", "location", "location_kind"
ATTACHMENT_KEYS = (ATTACHMENT, LOCATION, LOCATION_KIND)

# a document's own evidence kind: its passages and lists are parsed as this type (a page comment's: ``COMMENT``)
EVIDENCE_KIND, COMMENT = "evidence_kind", "comment"
# a Confluence page comment's evidences (parsing/confluence/comments): who wrote it when, where, resolved or open
COMMENT_ID, AUTHOR, CREATED, RESOLVED = "comment_id", "author", "created", "resolved"
COMMENT_LOCATION = "comment_location"  # "footer" or "inline"
COMMENT_KEYS = (EVIDENCE_KIND, COMMENT_ID, AUTHOR, CREATED, COMMENT_LOCATION, RESOLVED)

STRUCTURE_VERSION = 1  # recorded in a store's manifest; a store without it gets the fields from ``ragonite index``
PARSER_KEYS = (PAGE_ID, MODIFIED, MODIFIED_SOURCE, HEADINGS, TABLE_ID, HEADERS, CELLS)
NEIGHBOUR_KEYS = (BEFORE_ID, BEFORE_TEXT, AFTER_ID, AFTER_TEXT)
STRUCTURE_KEYS = PARSER_KEYS + NEIGHBOUR_KEYS

# Where ``modified`` came from: a Confluence page's ``version.when`` (or its export's "last modified"
# line), a JSON page's ``date`` field, an HTML ``<meta>``; a file's mtime only when nothing is declared
# (a git checkout's mtimes are checkout times).
MODIFIED_SOURCES = ("confluence", "page_field", "html_meta", "file_mtime")


def as_list(values: Sequence[str]) -> str:
    """A list of strings as a metadata value (a JSON array)."""
    return json.dumps(list(values), ensure_ascii=False)


def structure_list(metadata: Mapping[str, Any], key: str) -> List[str]:
    """A list key of ``metadata`` as a list ([] when the key is missing: a node of an older store)."""
    value = metadata.get(key)
    if isinstance(value, list):
        return [str(v) for v in value]
    if not isinstance(value, str) or not value:
        return []
    try:
        parsed = json.loads(value)
    except ValueError:
        return []
    return [str(v) for v in parsed] if isinstance(parsed, list) else []


def declared_modified(page_metadata: Mapping[str, Any], html_meta: str) -> Tuple[str, str]:
    """``(modified, source)`` of a page: what it declares, else its file's mtime (UTC ISO), else ("", "")."""
    if page_metadata.get("last_modified"):
        return str(page_metadata["last_modified"]), "confluence"
    if page_metadata.get("date"):
        return str(page_metadata["date"]), "page_field"
    if html_meta:
        return html_meta, "html_meta"
    url = str(page_metadata.get("url") or "")
    if url.startswith("file:"):
        try:
            mtime = os.stat(url2pathname(unquote(urlparse(url).path))).st_mtime
        except (OSError, ValueError):
            return "", ""
        return datetime.fromtimestamp(mtime, timezone.utc).isoformat(timespec="seconds"), "file_mtime"
    return "", ""
