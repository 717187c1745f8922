"""The page an evidence came from, as the parser read it, with that evidence marked.

Why: a citation is only as good as the reader's chance to check it. The page view shows the
whole page in reading order (headings, passages, lists, tables), built from the store's own
evidences of that page, and marks the evidence the answer used (for a table row: its row in the
table), so "what does the page say around it" is one click away, beside the link to the original.
Only a source of a turn the caller owns can be opened: the view is reached through the turn.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from llama_index_ragonite.serve.originals import original_path
from llama_index_ragonite.serve.sessions import NotFound
from llama_index_ragonite.serve.turns import KINDS, nodes_from_records, table_cells

__all__ = ["page_view"]


def _blocks(nodes: List[Any], marked_id: str, marked_table: Optional[int], marked_row: Optional[int]) -> List[dict]:
    blocks: List[dict] = []
    path: List[str] = []
    for node in nodes:
        meta = node.metadata
        if meta.get("evidence_type") == "table_row":
            continue  # shown as a row of its table
        headings = [h.strip() for h in str(meta.get("heading_path") or "").split(" > ") if h.strip()]
        for level, heading in enumerate(headings):
            if level >= len(path) or path[level] != heading:
                blocks.append({"kind": "heading", "level": level + 1, "text": heading, "marked": False})
        path = headings
        kind = KINDS.get(meta.get("evidence_type"), "passage")
        text = node.get_content()
        table = meta.get("table_index") == marked_table and kind == "table"
        blocks.append(
            {
                "kind": kind,
                "text": text,
                "table": table_cells(text, kind, meta.get("column_headers")),
                "marked": node.node_id == marked_id or (table and marked_row is not None),
                "marked_row": marked_row if table else None,
            }
        )
    return blocks


def page_view(
    sessions: Any, owner: str, conversation_id: str, number: int, source: int, principal: Any = None
) -> Dict[str, Any]:
    """Source ``source`` (1-based) of turn ``number``: its page's evidences in reading order, it marked
    (only while the caller may still read every page of the turn: ``Sessions.stored_turn``)."""
    turn, records, settings = sessions.stored_turn(owner, conversation_id, number, principal)
    nodes = nodes_from_records(records)
    if not 1 <= source <= len(nodes):
        raise NotFound(f"Turn {number} has no source {source}")
    evidence = nodes[source - 1].node
    lexical = sessions.stores[sessions.turn_settings(turn, settings)["domain"]].lexical
    page = evidence.ref_doc_id
    ids = [i for i, doc in lexical.node_pages().items() if doc == page]
    found = []
    for node_id in ids:
        try:
            found.append(lexical.get_node(node_id))
        except KeyError:  # removed by a sync meanwhile
            continue
    found.sort(key=lambda n: n.metadata.get("position") or 0)
    sessions.access_log.write("page", principal, owner, conversation_id, turn=number, pages=[page])
    meta = evidence.metadata
    row = meta.get("row_index") if meta.get("evidence_type") == "table_row" else None
    table = meta.get("table_index") if row is not None else None
    return {
        "source": source,
        "title": meta.get("title") or "",
        "url": meta.get("url"),
        "original": original_path(meta) is not None,  # an attachment on this server: .../sources/N/original
        "current": any(n.node_id == evidence.node_id for n in found),
        "blocks": _blocks(found, evidence.node_id, table, row),
    }
