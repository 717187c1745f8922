"""A chat turn as the page shows it: JSON for the answer, its sources, citations and trace.

The trace is collected per request: ``TurnTrace`` is a root event handler that hands each
event to the sink of the thread-local context that fired it (a ``ContextVar``), so the
lexical and dense hits of one user's turn never land in another's trace, however many
turns run at once. Evidences are also kept as plain dicts (``node_record``) so a turn can
be explained later from the exact evidences, in prompt order, that the answer saw.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Dict, Iterator, List, Optional, Sequence

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.schema import NodeWithScore, TextNode

from llama_index_ragonite.events import QuestionCompletedEvent, RetrievalHitsEvent
from llama_index_ragonite.parsing.contextualizer import shown_context
from llama_index_ragonite.parsing.rendering import row_line_cells
from llama_index_ragonite.parsing.structure import CELLS, HEADERS, structure_list
from llama_index_ragonite.prompts import OUT_OF_SCOPE
from llama_index_ragonite.text import detect_language

__all__ = ["TurnTrace", "node_record", "nodes_from_records", "source_json", "table_cells", "turn_json"]

KINDS = {"passage": "passage", "list": "list", "table": "table", "table_row": "row", "comment": "comment"}
_sink: ContextVar[Optional[List[BaseEvent]]] = ContextVar("ragonite_serve_trace", default=None)


class TurnTrace(BaseEventHandler):
    """Routes pipeline events to the collecting request (see the module doc); install once."""

    _installed: bool = PrivateAttr(default=False)

    @classmethod
    def class_name(cls) -> str:
        return "TurnTrace"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        sink = _sink.get()
        if sink is not None and event.class_name() in ("QuestionCompletedEvent", "RetrievalHitsEvent"):
            sink.append(event)

    @classmethod
    def install(cls) -> "TurnTrace":
        root = get_dispatcher()
        for handler in root.event_handlers:
            if isinstance(handler, cls):
                return handler
        handler = cls()
        root.add_event_handler(handler)
        return handler

    @staticmethod
    @contextmanager
    def collecting() -> Iterator[List[BaseEvent]]:
        """The events fired in this context (call it inside the worker thread that runs the turn)."""
        events: List[BaseEvent] = []
        token = _sink.set(events)
        try:
            yield events
        finally:
            _sink.reset(token)


def table_cells(text: str, kind: str, headers: Optional[Sequence[str]] = None) -> Optional[List[List[str]]]:
    """The cells of a verbalized table or row ("Row 1 in Table 1: A is x, and B is y"), header row first.

    ``None`` when the text is not in that form (another linearizer). Rows may name different
    headers (verbalization leaves empty cells out; merged header cells name sub-columns): the
    header row is their union in order of appearance, a cell a row does not name is empty.
    """
    if kind not in ("table", "row"):
        return None
    rows = [row_line_cells(line) for line in text.splitlines()]
    if not rows or any(row is None for row in rows):
        return None
    header = list(dict.fromkeys(h for row in rows for h, _ in row or ()))
    cells = [dict(row or ()) for row in rows]
    return [header] + [[row.get(h, "") for h in header] for row in cells]


def row_cells(metadata: Dict[str, Any]) -> Optional[List[List[str]]]:
    """A row's header and cells from its structure fields: the columns it fills, as its sentence names them.

    ``None`` for a node without the fields (a store built before them) or a row whose filled cells lack a
    header (a row-label column): ``table_cells`` reads those from the text, as whole tables are.
    """
    pairs = [(h, c) for h, c in zip(structure_list(metadata, HEADERS), structure_list(metadata, CELLS)) if c]
    if CELLS not in metadata or not pairs or not all(h for h, _ in pairs):
        return None
    return [[h for h, _ in pairs], [c for _, c in pairs]]


def _rank(hit: NodeWithScore, side: str) -> Optional[int]:
    return getattr(hit, "ranks", {}).get(side)  # a FusedNode's; other retrievers' hits have none


def source_json(n: int, hit: NodeWithScore) -> Dict[str, Any]:
    node, meta = hit.node, hit.node.metadata
    kind = KINDS.get(str(meta.get("evidence_type")), "passage")
    text = node.get_content()
    return {
        "n": n,
        "id": node.node_id,
        "title": meta.get("title") or "",
        "url": meta.get("url"),
        "text": text,
        "context": shown_context(hit.node),
        "kind": kind,
        "table": (kind == "row" and row_cells(meta)) or table_cells(text, kind, meta.get("column_headers")),
        "score": None if hit.score is None else float(hit.score),
        "lexical_rank": _rank(hit, "lexical"),
        "dense_rank": _rank(hit, "dense"),
        "latent_rank": _rank(hit, "latent"),
    }


def _trace(turn: Any, events: Sequence[BaseEvent], rephraser: Optional[str], titles) -> Dict[str, Any]:
    """``answer_prompt``: the prompt an LLM received (offline none is written: ``None``, and ``answer_read``
    lists the sources the offline answerer read instead)."""
    prompts: Dict[str, str] = turn.prompts
    trace: Dict[str, Any] = {"answer_prompt": prompts.get("answer")}
    if getattr(turn, "read", None):
        trace["answer_read"] = [{"n": n, "id": i, "title": titles.get(i, "")} for n, i in enumerate(turn.read, 1)]
    if getattr(turn, "decision", None):  # offline: answered or refused, on which unit, with which scores
        trace["answer_decision"] = turn.decision
    if getattr(turn, "embedded", ""):  # a question longer than the embedding window: the part embedded
        trace["embedded"] = turn.embedded
    if rephraser:
        trace["rephraser_prompt"] = rephraser
    if prompts.get("follow_ups"):  # the LLM's follow-up suggestions call
        trace["follow_ups_prompt"] = prompts["follow_ups"]
    for event in events:
        if isinstance(event, QuestionCompletedEvent):
            trace["completion"] = {"message": event.message, "completed": event.completed, "by": event.completer}
        elif isinstance(event, RetrievalHitsEvent) and event.source in ("lexical", "dense", "latent", "fused"):
            trace[event.source] = [
                {"id": i, "title": titles.get(i, ""), "rank": r, "score": s}
                for r, (i, s) in enumerate(zip(event.node_ids[:20], event.scores[:20]), 1)
            ]
    for side in ("lexical", "dense"):
        trace.setdefault(side, [])
    return trace


def turn_json(
    question: str,
    answer: str,
    turn: Any,
    nodes: Sequence[NodeWithScore],
    events: Sequence[BaseEvent],
    seconds: float,
    rephraser_prompt: Optional[str] = None,
    titles: Optional[Dict[str, str]] = None,
) -> Dict[str, Any]:
    """The contract's turn JSON (``index`` is set when the turn is stored)."""
    out_of_scope = OUT_OF_SCOPE.rstrip(".").lower() in answer.lower()
    titles = dict(titles or {}) | {n.node.node_id: n.node.metadata.get("title") or "" for n in nodes}
    return {
        "index": None,
        "question": question,
        "completed_question": turn.completed_question,
        "answer": answer,
        "cited": list(turn.cited),
        "sources": [source_json(i, hit) for i, hit in enumerate(nodes, 1)],
        "follow_ups": list(turn.follow_ups),
        "warning": turn.warning,  # e.g. "The answer cited [Source 99], which name none of the 10 sources; …"
        "invalid_citations": list(getattr(turn, "invalid_citations", [])),
        "out_of_scope": out_of_scope,
        "truncated": bool(getattr(turn, "truncated", False)),  # the answer broke off: shown marked, never memory
        "language": detect_language(question),
        "trace": _trace(turn, events, rephraser_prompt, titles),
        "seconds": round(seconds, 4),
    }


def node_record(hit: NodeWithScore) -> Dict[str, Any]:
    """What an explanation needs of an evidence: the node as stored, and its score."""
    return {"node": hit.node.to_dict(), "score": hit.score}


def nodes_from_records(records: Sequence[Dict[str, Any]]) -> List[NodeWithScore]:
    return [NodeWithScore(node=TextNode.from_dict(r["node"]), score=r["score"]) for r in records]
