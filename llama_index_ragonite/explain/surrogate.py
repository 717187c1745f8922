"""``SurrogateAttributor``: ContextCite-style attribution for closed models (a third option beside Algorithm 1).

Why: Algorithm 1 removes one cluster at a time, so it sees each evidence only against all the
others present; two evidences that each suffice for the answer both look unimportant. A
surrogate model sees many random subsets at once and needs nothing but answers (no token
probabilities), so it works with any hosted LLM:

1. ``math.sample_masks``: ``n_masks`` random keep/drop masks over the evidences, each evidence
   kept with probability ``keep_probability``, drawn from a seeded generator. No mask twice,
   never the all-kept mask (that is the original answer: asking again costs a call and
   tells nothing), and every evidence both kept and dropped somewhere, so every weight is
   identifiable. With few evidences (``2**n - 1 <= n_masks``) all masks are used instead.
2. For each mask, the answer from the kept evidences (in prompt order), all calls concurrent
   through ``AnswerRegenerator``; the empty mask needs no call (out of scope by definition).
3. Target y = cosine(emb(q + a), emb(q + a_mask)), ``[Source n]`` markers stripped — the
   same similarity as ``CounterfactualAttributor`` (``BaseAttributor.answer_similarities``).
   The original answer is a free observation (all kept, y = 1) when ``anchor`` is on.
4. ``math.lasso``: y ≈ w·mask + b, sparse, with the L1 penalty ``alpha`` × ``alpha_max`` (the
   penalty that zeroes every weight): a fraction, because similarities from one embedding
   model span 0.8–1 and from another 0.2–1, and an absolute penalty (ContextCite's 0.01 on
   log-odds) would zero real effects on the compressed scale. w_i is how much keeping evidence i keeps the answer:
   the evidence's ``contribution``; shares = softmax(w / ``temperature``), like Algorithm 1
   (w and 1 − similarity are on the same scale: the similarity lost without the evidence).

Every evidence is its own (singleton) cluster. Masks whose call fails after its retry are
dropped from the fit and listed in ``Attribution.failed_masks`` (and
``settings["fit"]["failed_masks"]``): the result is not ``complete`` and ``to_text`` says how
many failed and that the fit on the answered ones is still valid. If fewer than
``min_success_rate`` of the masks answered, no share is given (all ``None``, each cluster
carries the error, ``to_text`` starts "Not computed: …") — never a distribution fitted on too
little. An evidence that was never dropped (or never kept) among the answered masks gets
``None`` too: its weight is unknown, so it is a failed cluster, held in the softmax at weight 0
(what the Lasso gives a column that never varies) without a share: the others are not
renormalised over the identified evidences (``math.held_softmax``, ``explain.results``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Dict, List, cast

import numpy as np
from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.explain.attribution import BaseAttributor
from llama_index_ragonite.explain.math import alpha_max, held_softmax, lasso, sample_masks
from llama_index_ragonite.explain.regeneration import AnswerRegenerator
from llama_index_ragonite.explain.results import Attribution, ClusterAttribution

__all__ = ["SurrogateAttributor"]


class SurrogateAttributor(BaseAttributor):
    """Random evidence-ablation masks, answer similarity as target, a sparse linear fit (ContextCite-style).

    Costs ``n_masks`` LLM calls (plus retries; the empty mask is free), all concurrent up to
    ``max_concurrency``. ``seed`` makes the masks, hence the result with a deterministic LLM,
    reproducible.
    """

    METHOD: ClassVar[str] = "surrogate"

    n_masks: int = Field(
        default=16,
        ge=1,
        description="Random masks, i.e. LLM calls (fewer when 2**n - 1 is smaller). 16: about Algorithm 1's cost "
        "for 10 evidences and one concurrent wave at max_concurrency=16; 32 doubles the cost for a gain that "
        "was not significant on ConfQuestions (benchmarks/results/attribution_confquestions.md).",
    )
    keep_probability: float = Field(default=0.5, gt=0, lt=1, description="Chance that a mask keeps an evidence.")
    alpha: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="Lasso L1 penalty as a fraction of alpha_max (the penalty that zeroes every weight), "
        "so sparsity does not depend on how compressed the embedding model's similarities are.",
    )
    anchor: bool = Field(default=True, description="Add the original answer (all kept, similarity 1) as a free row.")
    seed: int = Field(default=0, description="Seed of the mask sampler.")
    prepend_question: bool = Field(
        default=True, description="Embed question+answer (as Algorithm 1), not the answer alone."
    )
    min_success_rate: float = Field(
        default=0.5, ge=0, le=1, description="Below this share of answered masks, no shares are given."
    )

    async def _aexplain(
        self, query: str, nodes: List[NodeWithScore], answer: str, regenerator: AnswerRegenerator
    ) -> Attribution:
        masks = sample_masks(len(nodes), self.n_masks, self.keep_probability, self.seed)
        kept = [[node for node, keep in zip(nodes, mask) if keep] for mask in masks]
        answers = await regenerator.aanswer_many(query, kept, among=nodes)
        failures = dict(regenerator.failures)
        ok = [i for i, a in enumerate(answers) if a is not None]
        y = await self.answer_similarities(
            query, answer, [cast(str, answers[i]) for i in ok], self.prepend_question, nodes=nodes
        )
        sim: Dict[int, float] = dict(zip(ok, y))

        clusters = []
        for j in range(len(nodes)):
            dropped = [i for i in ok if not masks[i, j]]
            answers_without = [answers[i] for i in dropped]
            clusters.append(ClusterAttribution([j], None, None, answers_without, [sim[i] for i in dropped]))
        fit: Dict[str, Any] = {
            "masks": ["".join(str(int(v)) for v in mask) for mask in masks],
            "similarities": [sim.get(i) for i in range(len(masks))],
            "failed_masks": {int(i): e for i, e in failures.items()},
            "intercept": None,
            "r2": None,
        }
        needed = max(1, math.ceil(self.min_success_rate * len(masks)))
        if nodes and len(ok) < needed:
            error = f"only {len(ok)} of {len(masks)} masks answered (need {needed})"
            if failures:
                error += f"; last error: {list(failures.values())[-1]}"
            for c in clusters:
                c.error = error
        elif nodes:
            fit.update(self._fit(masks[ok].astype(float), np.asarray(y, dtype=float), clusters))
        return self._result(
            query,
            nodes,
            answer,
            clusters,
            settings={"fit": fit},
            n_masks=len(masks),
            failed_masks=dict(fit["failed_masks"]),
            min_masks=needed,
        )

    def _fit(self, X: np.ndarray, y: np.ndarray, clusters: List[ClusterAttribution]) -> Dict[str, Any]:
        """Fit y ≈ w·mask + b; each evidence's weight is its contribution, softmax gives the shares.

        Returns the fit's intercept, absolute penalty and R² (for ``settings["fit"]``).
        """
        if self.anchor:
            X, y = np.vstack([X, np.ones((1, X.shape[1]))]), np.append(y, 1.0)
        penalty = self.alpha * alpha_max(X, y)
        w, b = lasso(X, y, penalty)
        spread = float(((y - y.mean()) ** 2).sum())
        r2 = 1.0 - float(((y - (X @ w + b)) ** 2).sum()) / spread if spread > 0 else None
        varied = X.min(axis=0) != X.max(axis=0)
        for j, c in enumerate(clusters):
            if varied[j]:
                c.contribution = float(w[j]) + 0.0  # no -0.0
            else:
                c.error = "never both kept and dropped in the answered masks: weight unknown"
        live = [c for c in clusters if not c.failed]
        held = len(clusters) - len(live)  # unknown weights keep their place at 0, without a share
        for c, share in zip(live, held_softmax([c.contribution or 0.0 for c in live], held, self.softmax_temperature)):
            c.share = float(share)
        return {"intercept": b, "alpha_absolute": penalty, "r2": r2}
