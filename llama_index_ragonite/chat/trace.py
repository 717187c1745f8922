"""A "behind the scenes" trace of chat turns, built from the instrumentation events alone.

``TraceRecorder`` is an ordinary LlamaIndex event handler: attach it to the root
dispatcher (``with TraceRecorder.attached() as trace:``) and it keeps the events our
components fire — question completion, lexical / dense / latent / title / reranked / fused hits, the
answer prompt an LLM received (offline: the sources the answerer read; it writes no prompt) and the
answer. ``render()`` prints them as text, as the paper's demo showed them next to the conversation.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional

from llama_index.core.bridge.pydantic import Field
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent

from llama_index_ragonite.events import (
    AnswerEvent,
    AnswerPromptEvent,
    AnswerSourcesEvent,
    ConversationRetrievalEvent,
    QueryCutEvent,
    QuestionCompletedEvent,
    RetrievalHitsEvent,
)

TRACED = (
    "QuestionCompletedEvent",
    "QueryCutEvent",
    "RetrievalHitsEvent",
    "ConversationRetrievalEvent",
    "AnswerPromptEvent",
    "AnswerSourcesEvent",
    "AnswerEvent",
)


class TraceRecorder(BaseEventHandler):
    """Keeps the events of the ragonite pipeline steps, in order."""

    events: List[BaseEvent] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "TraceRecorder"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        if event.class_name() in TRACED:
            self.events.append(event)

    def clear(self) -> None:
        self.events.clear()

    @classmethod
    @contextmanager
    def attached(cls) -> Iterator["TraceRecorder"]:
        """Record while the block runs (on the root dispatcher, so every component is seen)."""
        recorder = cls()
        root = get_dispatcher()
        root.add_event_handler(recorder)
        try:
            yield recorder
        finally:
            root.event_handlers.remove(recorder)

    def last_turn(self) -> List[BaseEvent]:
        """The events since the last question completion or first retrieval that started a turn."""
        start = 0
        for i, event in enumerate(self.events):
            if event.class_name() == "AnswerEvent" and i + 1 < len(self.events):
                start = i + 1
        return self.events[start:]

    def render(self, titles: Optional[Dict[str, str]] = None, top: int = 5, prompt_chars: int = 600) -> str:
        return render_trace(self.last_turn(), titles=titles, top=top, prompt_chars=prompt_chars)


def render_trace(
    events: List[BaseEvent], titles: Optional[Dict[str, str]] = None, top: int = 5, prompt_chars: int = 600
) -> str:
    """Text form of one turn's events. ``titles`` maps node ids to labels (else ids are shown)."""
    titles = titles or {}
    lines: List[str] = []
    cut = set()
    for event in events:
        if isinstance(event, QueryCutEvent):
            if event.query not in cut:  # every search embeds it: say it once
                cut.add(event.query)
                lines.append(query_cut_line(event))
        elif isinstance(event, QuestionCompletedEvent):
            lines.append(f"Completion ({event.completer}): {event.message!r} -> {event.completed!r}")
        elif isinstance(event, RetrievalHitsEvent):
            lines.append(f"{event.source.capitalize()} hits for {event.query!r}:")
            for rank, (node_id, score) in enumerate(zip(event.node_ids[:top], event.scores[:top]), 1):
                shown = "" if score is None else f"{score:.4f}"
                lines.append(f"  {rank:>2}. {shown:>8}  {titles.get(node_id, node_id)}")
            if len(event.node_ids) > top:
                lines.append(f"  … {len(event.node_ids) - top} more")
        elif isinstance(event, ConversationRetrievalEvent):
            lines.append(f"Conversation retrieval: used the {event.choice} ranking ({event.reason}): {event.query!r}")
        elif isinstance(event, AnswerPromptEvent):
            prompt = event.prompt if len(event.prompt) <= prompt_chars else event.prompt[:prompt_chars] + " …"
            lines.append(f"Answer prompt ({event.n_sources} sources, {len(event.prompt):,} chars):")
            lines.extend("  | " + line for line in prompt.splitlines())
        elif isinstance(event, AnswerSourcesEvent):
            lines.append(f"Answer read {event.n_sources} sources (offline, no prompt):")
            lines.extend(f"  {n:>2}. {titles.get(i, i)}" for n, i in enumerate(event.node_ids, 1))
            if event.decision:
                lines.append(decision_line(event.decision))
        elif isinstance(event, AnswerEvent):
            cited = ", ".join(f"Source {i}" for i in event.cited) or "none"
            lines.append(f"Answer (cites {cited}): {event.answer}")
            if event.warning:
                lines.append(f"  warning: {event.warning}")
    return "\n".join(lines)


def decision_line(decision: Dict[str, Any]) -> str:
    """The offline scope decision in one line: answered or refused, on which unit, with which scores."""
    unit, cell = decision.get("unit"), decision.get("cell")
    verdict = "answered" if decision.get("answered") else "refused (out of scope)"
    on = f" on Source {unit['source']}" if unit else ""
    scores = ", ".join(f"{k} {v}" for k, v in decision.get("features", {}).items())
    named = (
        f"; cell: row {', '.join(cell['row'])} → {', '.join(cell['columns'])} (named {cell['named']}, fit {cell['fit']})"
        if cell
        else ""
    )
    return f"  decision: {verdict}{on}, in-scope probability {decision.get('probability')}{named}; {scores}"


def query_cut_line(event: QueryCutEvent) -> str:
    """What a query longer than the embedding window lost: it is embedded only in part, searched by words whole."""
    rest = len(event.query) - len(event.embedded)
    return (
        f"Query of {event.tokens:,} tokens is longer than the embedding window ({event.window}): embedded "
        f"{event.embedded!r}; the other {rest:,} characters were searched by words (BM25) only"
    )
