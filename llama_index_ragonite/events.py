"""Instrumentation events fired by ragonite components (observe them with a LlamaIndex event handler)."""

from __future__ import annotations

from typing import Dict, List, Optional

from llama_index.core.instrumentation.events import BaseEvent


class EvidencesParsedEvent(BaseEvent):
    """One page was split into evidences."""

    document_id: str
    counts: Dict[str, int]  # evidence type -> number of nodes

    @classmethod
    def class_name(cls) -> str:
        return "EvidencesParsedEvent"


class EvidencesContextualizedEvent(BaseEvent):
    """A batch of nodes received its context header."""

    setting: str  # NONE / TTL / HDR / BEF / AFT / ALL, or a custom mix such as "TTL+HDR"
    nodes: int
    missing_neighbours: int  # PREVIOUS/NEXT targets not in the batch, so left out of the context

    @classmethod
    def class_name(cls) -> str:
        return "EvidencesContextualizedEvent"


class RetrievalHitsEvent(BaseEvent):
    """One retrieval step's ranking: ``source`` is "lexical", "dense", "latent", "title", "rerank" or "fused"."""

    query: str
    source: str
    node_ids: List[str]  # best first
    scores: List[Optional[float]]

    @classmethod
    def class_name(cls) -> str:
        return "RetrievalHitsEvent"


class AnswerPromptEvent(BaseEvent):
    """The answer prompt of one chat turn, as sent to the LLM."""

    question: str  # the completed question the sources were retrieved for
    prompt: str
    n_sources: int

    @classmethod
    def class_name(cls) -> str:
        return "AnswerPromptEvent"


class AnswerEvent(BaseEvent):
    """The answer of one chat turn and the sources it cites (1-based, as numbered in the prompt)."""

    answer: str
    cited: List[int]
    warning: Optional[str] = None

    @classmethod
    def class_name(cls) -> str:
        return "AnswerEvent"


class QuestionCompletedEvent(BaseEvent):
    """A conversational turn was rewritten into a self-contained question."""

    message: str  # the user's turn as asked
    completed: str  # what retrieval will see
    completer: str  # class name of the QuestionCompleter

    @classmethod
    def class_name(cls) -> str:
        return "QuestionCompletedEvent"


class AttributionStartEvent(BaseEvent):
    """An attributor starts explaining an answer."""

    method: str  # "counterfactual", "similarity" or "surrogate"
    question: str
    n_evidences: int

    @classmethod
    def class_name(cls) -> str:
        return "AttributionStartEvent"


class AttributionEndEvent(BaseEvent):
    """An attribution is done: the evidence shares (None for failed clusters) and its cost."""

    method: str
    evidence_shares: List[Optional[float]]
    failed_clusters: List[int]  # 0-based cluster indices whose LLM calls failed
    llm_calls: int
    wall_time_s: float

    @classmethod
    def class_name(cls) -> str:
        return "AttributionEndEvent"
