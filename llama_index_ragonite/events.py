"""Instrumentation events fired by ragonite components (observe them with a LlamaIndex event handler)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from llama_index.core.instrumentation.events import BaseEvent


class RagoniteEvent(BaseEvent):
    """Base of ragonite's events: ``class_name()`` is the subclass's own name, so handlers can filter by it."""

    @classmethod
    def class_name(cls) -> str:
        return cls.__name__


class EvidencesParsedEvent(RagoniteEvent):
    """One page was split into evidences."""

    document_id: str
    counts: Dict[str, int]  # evidence type -> number of nodes


class EvidencesContextualizedEvent(RagoniteEvent):
    """A batch of nodes received its context header."""

    setting: str  # NONE / TTL / HDR / BEF / AFT / ALL, or a custom mix such as "TTL+HDR"
    nodes: int
    missing_neighbours: int  # PREVIOUS/NEXT targets not in the batch, so left out of the context


class RetrievalHitsEvent(RagoniteEvent):
    """One retrieval step's ranking: ``source`` is "lexical", "dense", "latent", "title", "rerank" or "fused"."""

    query: str
    source: str
    node_ids: List[str]  # best first
    scores: List[Optional[float]]


class AnswerPromptEvent(RagoniteEvent):
    """The answer prompt of one chat turn, as sent to the LLM."""

    question: str  # the completed question the sources were retrieved for
    prompt: str
    n_sources: int


class AnswerSourcesEvent(RagoniteEvent):
    """The sources the offline answerer read for one chat turn: it reads the nodes, so no prompt was written."""

    question: str  # the completed question the sources were retrieved for
    node_ids: List[str]  # source 1, 2, … in order
    n_sources: int
    decision: Dict[str, Any] = {}  # answered or refused, on which unit, with which scores (Assessment.explained)


class AnswerEvent(RagoniteEvent):
    """The answer of one chat turn and the sources it cites (1-based, as numbered in the prompt)."""

    answer: str
    cited: List[int]
    warning: Optional[str] = None


class QuestionCompletedEvent(RagoniteEvent):
    """A conversational turn was rewritten into a self-contained question."""

    message: str  # the user's turn as asked
    completed: str  # what retrieval will see
    completer: str  # class name of the QuestionCompleter


class ConversationRetrievalEvent(RagoniteEvent):
    """A follow-up was retrieved with its conversation: the queries tried, the ranking chosen and why."""

    message: str  # the user's turn as asked
    queries: Dict[str, str]  # "turn" (the completed question), "conversation", "topic page" -> query
    choice: str  # the name of the ranking used
    query: str  # its query
    reason: str


class AttributionStartEvent(RagoniteEvent):
    """An attributor starts explaining an answer."""

    method: str  # "counterfactual", "similarity" or "surrogate"
    question: str
    n_evidences: int


class AttributionEndEvent(RagoniteEvent):
    """An attribution is done: the evidence shares (None for failed clusters) and its cost."""

    method: str
    evidence_shares: List[Optional[float]]
    failed_clusters: List[int]  # 0-based cluster indices whose LLM calls failed
    complete: bool = True  # False: some calls failed and the shares are partial (see Attribution.complete)
    llm_calls: int
    wall_time_s: float


class PerturbationStartEvent(RagoniteEvent):
    """A RAGE explainer starts explaining an answer."""

    mode: str  # "top-down", "bottom-up" or "permutation"
    question: str
    n_evidences: int


class PerturbationEndEvent(RagoniteEvent):
    """A RAGE explanation is done: whether a perturbation changed the answer, and its cost."""

    mode: str
    found: bool
    evaluated: int  # perturbations evaluated
    failures: int  # of which the LLM call failed
    llm_calls: int
    wall_time_s: float


class QueryCutEvent(RagoniteEvent):
    """A query longer than the embedding window: only ``embedded`` was embedded (``models.asking``); the
    lexical side still searched the whole ``query``."""

    query: str
    embedded: str
    tokens: int  # the whole query's
    window: int  # the model's query window, in tokens
