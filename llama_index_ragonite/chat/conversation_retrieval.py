"""Retrieval for a follow-up turn that reads the conversation, not only the completed question.

Why: the offline completer must leave a self-contained turn as asked ("What is the capital of
France?" after a turn on the OTA server), yet most follow-ups that name things of their own still
need the page the conversation is on ("What is VirtIO?" in a conversation on the VirtIO/Argo
meeting). The completed text cannot tell them apart; what retrieval finds can. So a follow-up is
retrieved up to three ways and the rankings vote:

* ``turn``: the completed question as the completer wrote it (the user's turn when it was left
  unchanged);
* ``conversation``: the turn behind the terms of the conversation's first and previous user turns
  (``text.carried_terms``);
* ``topic page``: the turn behind the title of the page the previous turn's top evidence came from
  (recorded on that user message, ``TOPIC_KEY`` in ``additional_kwargs``).

The ranking whose top page at least two of them agree on is used (``conversation`` first, then
``topic page``, then ``turn``); with no agreement, ``conversation``. A turn that retrieves its own
page strongly — its ``turn`` ranking's top page is first on ``strong_sides`` of the hybrid
retriever's sides (``FusedNode.side_ranks``: built-in and yours) — keeps its own ranking. On ConfQuestions this
lifts conversational P@1 above every-turn completion while every self-contained turn is shown and
answered as asked (``benchmarks/results/completion_confquestions.md``). The choice, its reason and
every query are in a ``ConversationRetrievalEvent`` and in ``response.metadata["retrieval"]``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import Field
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.schema import BaseComponent, NodeWithScore

from llama_index_ragonite.events import ConversationRetrievalEvent
from llama_index_ragonite.text import carried_terms

__all__ = ["TOPIC_KEY", "ConversationHits", "ConversationRetrieval", "topic_of", "topic_page"]

dispatcher = get_dispatcher(__name__)

TOPIC_KEY = "ragonite_topic_page"  # additional_kwargs of a user message: its top evidence's page title
TURN, CONVERSATION, TOPIC = "turn", "conversation", "topic page"


@dataclass
class ConversationHits:
    """The ranking chosen for a turn, and why (also ``response.metadata["retrieval"]``)."""

    nodes: List[NodeWithScore]
    choice: str = TURN
    reason: str = "no conversation"
    queries: Dict[str, str] = field(default_factory=dict)

    def record(self) -> Dict[str, object]:
        return {"choice": self.choice, "query": self.queries.get(self.choice, ""), "reason": self.reason,
                "queries": dict(self.queries)}  # fmt: skip


def topic_page(message: ChatMessage) -> str:
    """The page title recorded on a user message (``TOPIC_KEY``), stripped; "" when none was."""
    title = (message.additional_kwargs or {}).get(TOPIC_KEY)
    return title.strip() if isinstance(title, str) else ""


def topic_of(nodes: Sequence[NodeWithScore]) -> Optional[str]:
    """The title of the page the top evidence comes from (what a later follow-up is likely about)."""
    return next((n.node.metadata.get("title") for n in nodes[:1] if n.node.metadata.get("title")), None)


def _page(hit: NodeWithScore) -> str:
    return hit.node.ref_doc_id or hit.node.metadata.get("url") or hit.node.node_id


def _strong_sides(nodes: Sequence[NodeWithScore]) -> int:
    """On how many of the hybrid retriever's sides the top hit's page is ranked first."""
    if not nodes:
        return 0
    page = _page(nodes[0])
    return len({side for n in nodes if _page(n) == page for side, rank in _side_ranks(n).items() if rank == 1})


def _side_ranks(hit: NodeWithScore) -> Dict[str, int]:
    return getattr(hit, "side_ranks", {})  # a FusedNode's; other retrievers' hits have none


class ConversationRetrieval(BaseComponent):
    """Choose, per follow-up, between the completed turn's ranking and the conversation's (see module doc)."""

    strong_sides: int = Field(
        default=3, ge=1, description="A turn whose own top page is first on this many sides keeps it."
    )
    max_terms: int = Field(default=20, ge=0, description="Most conversation terms put before the turn.")
    use_topic_page: bool = Field(default=True, description="Also retrieve behind the previous turn's page title.")

    @classmethod
    def class_name(cls) -> str:
        return "ConversationRetrieval"

    def queries(self, history: Sequence[ChatMessage], message: str, completed: str) -> Dict[str, str]:
        """The queries of one turn by name; ``turn`` always, the others when the history gives them."""
        users = [m for m in history if m.role == MessageRole.USER]
        out = {TURN: completed}
        terms = carried_terms([m.content or "" for m in users], message, self.max_terms) if users else []
        if terms:
            out[CONVERSATION] = f"{' '.join(terms)} {message.strip()}"
        title = topic_page(users[-1]) if users else ""
        if self.use_topic_page and title:
            out[TOPIC] = f"{title} {completed}"
        return out

    def choose(self, rankings: Dict[str, List[NodeWithScore]]) -> tuple:
        """(name, reason): which ranking to use."""
        own = rankings[TURN]
        others = [n for n in (CONVERSATION, TOPIC) if rankings.get(n)]
        if not others:
            return TURN, "no conversation query"
        if _strong_sides(own) >= self.strong_sides and all(_page(own[0]) != _page(rankings[n][0]) for n in others):
            return TURN, f"the turn's own top page is first on {_strong_sides(own)} retrieval sides"
        order = [*others, TURN]
        votes = Counter(_page(rankings[n][0]) for n in order if rankings.get(n))
        page, count = votes.most_common(1)[0]
        if count >= 2:
            name = next(n for n in order if rankings.get(n) and _page(rankings[n][0]) == page)
            agree = [n for n in order if rankings.get(n) and _page(rankings[n][0]) == page]
            return name, f"{' and '.join(agree)} agree on the top page"
        return others[0], "no agreement: the conversation's ranking"

    def _decided(self, queries: Dict[str, str], ranked: Dict[str, List[NodeWithScore]], message: str):
        rankings = {name: ranked[text] for name, text in queries.items()}
        choice, reason = self.choose(rankings)
        hits = ConversationHits(nodes=list(rankings[choice]), choice=choice, reason=reason, queries=queries)
        dispatcher.event(
            ConversationRetrievalEvent(
                message=message, queries=dict(queries), choice=choice, query=queries[choice], reason=reason
            )
        )
        return hits

    @dispatcher.span
    def retrieve(
        self, retriever: BaseRetriever, history: Sequence[ChatMessage], message: str, completed: str
    ) -> ConversationHits:
        queries = self.queries(history, message, completed)
        ranked = {text: retriever.retrieve(text) for text in dict.fromkeys(queries.values())}
        return self._decided(queries, ranked, message)

    @dispatcher.span
    async def aretrieve(
        self, retriever: BaseRetriever, history: Sequence[ChatMessage], message: str, completed: str
    ) -> ConversationHits:
        queries = self.queries(history, message, completed)
        texts = list(dict.fromkeys(queries.values()))
        ranked = dict(zip(texts, await asyncio.gather(*(retriever.aretrieve(t) for t in texts))))
        return self._decided(queries, ranked, message)
