"""``SurrogateAttributor``: ContextCite-style attribution for closed models (a third option beside Algorithm 1).

Why: Algorithm 1 removes one cluster at a time, so it sees each evidence only against all the
others present; two evidences that each suffice for the answer both look unimportant. A
surrogate model sees many random subsets at once and needs nothing but answers (no token
probabilities), so it works with any hosted LLM:

1. ``sample_masks``: ``n_masks`` random keep/drop masks over the evidences, each evidence
   kept with probability ``keep_probability``, drawn from a seeded generator. No mask twice,
   never the all-kept mask (that is the original answer: asking again costs a call and
   tells nothing), and every evidence both kept and dropped somewhere, so every weight is
   identifiable. With few evidences (``2**n - 1 <= n_masks``) all masks are used instead.
2. For each mask, the answer from the kept evidences (in prompt order), all calls concurrent
   through ``AnswerRegenerator``; the empty mask needs no call (out of scope by definition).
3. Target y = cosine(emb(q + a), emb(q + a_mask)), ``[Source n]`` markers stripped — the
   same similarity as ``CounterfactualAttributor`` (``BaseAttributor.answer_similarities``).
   The original answer is a free observation (all kept, y = 1) when ``anchor`` is on.
4. ``lasso``: y ≈ w·mask + b, sparse, with the L1 penalty ``alpha`` × ``alpha_max`` (the
   penalty that zeroes every weight): a fraction, because similarities from one embedding
   model span 0.8–1 and from another 0.2–1, and an absolute penalty (ContextCite's 0.01 on
   log-odds) would zero real effects on the compressed scale. w_i is how much keeping evidence i keeps the answer:
   the evidence's ``contribution``; shares = softmax(w / ``temperature``), like Algorithm 1
   (w and 1 − similarity are on the same scale: the similarity lost without the evidence).

Every evidence is its own (singleton) cluster. Masks whose call fails after its retry are
dropped from the fit and listed in ``settings["fit"]["failed_masks"]``; if fewer than
``min_success_rate`` of the masks answered, no share is given (all ``None``, each cluster
carries the error) — never a distribution fitted on too little. An evidence that was never
dropped (or never kept) among the answered masks gets ``None`` too: its weight is unknown.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Tuple

import numpy as np
from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.explain.attribution import Attribution, BaseAttributor, ClusterAttribution, softmax
from llama_index_ragonite.explain.regeneration import AnswerRegenerator

_MAX_EXHAUSTIVE = 20  # above this many evidences 2**n is never enumerated


# -- the math (pure functions) -------------------------------------------------
def lasso(
    X: np.ndarray, y: np.ndarray, alpha: float, max_iter: int = 10_000, tol: float = 1e-10
) -> Tuple[np.ndarray, float]:
    """Lasso by cyclic coordinate descent: (w, b) minimizing ``||y - Xw - b||² / (2N) + alpha·||w||₁``.

    The scikit-learn objective (the intercept ``b`` is not penalized): columns and target are
    centred, each coordinate is soft-thresholded in turn until no weight moves more than
    ``tol``. ``alpha=0`` is ordinary least squares (minimum-norm is not guaranteed when
    columns are collinear). A constant column gets weight 0.

    Args:
        X: N×p design (here: 0/1 masks).
        y: N targets.
        alpha: L1 penalty, ≥ 0.

    Returns:
        (w of shape (p,), b).
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if alpha < 0:
        raise ValueError("alpha must be >= 0")
    n, p = X.shape
    if n == 0:
        raise ValueError("lasso needs at least one row")
    x_mean, y_mean = X.mean(axis=0), y.mean()
    Xc, yc = X - x_mean, y - y_mean
    norms = (Xc**2).sum(axis=0) / n
    w = np.zeros(p)
    residual = yc.copy()
    for _ in range(max_iter):
        largest = 0.0
        for j in range(p):
            if norms[j] <= 1e-15:
                continue
            old = w[j]
            rho = Xc[:, j] @ residual / n + norms[j] * old
            new = math.copysign(max(abs(rho) - alpha, 0.0), rho) / norms[j]
            if new != old:
                residual -= Xc[:, j] * (new - old)
                w[j] = new
                largest = max(largest, abs(new - old))
        if largest <= tol:
            break
    return w, float(y_mean - x_mean @ w)


def alpha_max(X: np.ndarray, y: np.ndarray) -> float:
    """The smallest L1 penalty at which ``lasso`` sets every weight to 0: ``max_j |x̃_j · ỹ| / N`` (centred)."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if len(X) == 0:
        return 0.0
    return float(np.abs((X - X.mean(axis=0)).T @ (y - y.mean())).max(initial=0.0) / len(X))


def sample_masks(n: int, n_masks: int, keep_probability: float = 0.5, seed: int = 0) -> np.ndarray:
    """``n_masks`` distinct keep (1) / drop (0) masks over ``n`` evidences, as an m×n 0/1 array.

    Never the all-kept mask. When at most ``n_masks`` masks exist besides it (``2**n - 1``),
    all of them, in binary order. Otherwise each entry is kept with ``keep_probability``
    (``numpy.random.default_rng(seed)``), duplicates are redrawn, and a column that came out
    constant is repaired by flipping it in one mask (one that stays distinct and not all-kept),
    so each evidence is both kept and dropped at least once whenever ``n_masks >= 2``.
    """
    if n < 0 or n_masks < 0:
        raise ValueError("n and n_masks must be >= 0")
    if not 0.0 < keep_probability < 1.0:
        raise ValueError("keep_probability must be in (0, 1)")
    if n == 0 or n_masks == 0:
        return np.zeros((0, n), dtype=int)
    if n <= _MAX_EXHAUSTIVE and 2**n - 1 <= n_masks:
        return np.array([[(k >> (n - 1 - j)) & 1 for j in range(n)] for k in range(2**n - 1)], dtype=int)
    rng = np.random.default_rng(seed)
    seen: set = set()
    rows: List[Tuple[int, ...]] = []
    attempts = 0
    while len(rows) < n_masks and attempts < 1000 * n_masks:
        attempts += 1
        row = tuple(int(v) for v in rng.random(n) < keep_probability)
        if all(row) or row in seen:
            continue
        seen.add(row)
        rows.append(row)
    masks = np.array(rows, dtype=int).reshape(len(rows), n)
    if len(masks) >= 2:
        for j in range(n):
            column = masks[:, j]
            if column.min() != column.max():
                continue
            for i in rng.permutation(len(masks)):
                flipped = masks[i].copy()
                flipped[j] = 1 - flipped[j]
                key = tuple(int(v) for v in flipped)
                if not flipped.all() and key not in seen:
                    seen.discard(tuple(int(v) for v in masks[i]))
                    seen.add(key)
                    masks[i] = flipped
                    break
    return masks


# -- the attributor --------------------------------------------------------------
class SurrogateAttributor(BaseAttributor):
    """Random evidence-ablation masks, answer similarity as target, a sparse linear fit (ContextCite-style).

    Costs ``n_masks`` LLM calls (plus retries; the empty mask is free), all concurrent up to
    ``max_concurrency``. ``seed`` makes the masks, hence the result with a deterministic LLM,
    reproducible.
    """

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
    max_concurrency: int = Field(default=16, ge=1, description="LLM calls in flight at once.")
    retries: int = Field(default=1, ge=0, description="Retries of a failed call before its mask is dropped.")

    @classmethod
    def class_name(cls) -> str:
        return "SurrogateAttributor"

    @classmethod
    def method_name(cls) -> str:
        return "surrogate"

    async def _aattribute(self, query: str, nodes: List[NodeWithScore], answer: str) -> Attribution:
        n = len(nodes)
        masks = sample_masks(n, self.n_masks, self.keep_probability, self.seed)
        regenerator = AnswerRegenerator(self.llm, self._prompt, self.max_concurrency, self.retries)
        kept = [[node for node, keep in zip(nodes, mask) if keep] for mask in masks]
        answers = await regenerator.aanswer_many(query, kept)
        failures = dict(regenerator.failures)
        ok = [i for i, a in enumerate(answers) if a is not None]

        y_masks = await self.answer_similarities(query, answer, [answers[i] for i in ok], self.prepend_question)
        sim: Dict[int, float] = dict(zip(ok, y_masks))

        clusters = []
        for j in range(n):
            dropped = [i for i in ok if not masks[i, j]]
            clusters.append(
                ClusterAttribution(
                    [j],
                    None,
                    counterfactual_answers=[answers[i] for i in dropped],
                    similarities=[sim[i] for i in dropped],
                )
            )
        fit: Dict[str, Any] = {
            "masks": ["".join(str(int(v)) for v in mask) for mask in masks],
            "similarities": [sim.get(i) for i in range(len(masks))],
            "failed_masks": {int(i): e for i, e in failures.items()},
            "intercept": None,
            "r2": None,
        }

        needed = max(1, math.ceil(self.min_success_rate * len(masks)))
        if n and len(ok) < needed:
            error = f"only {len(ok)} of {len(masks)} masks answered (need {needed})"
            if failures:
                error += f"; last error: {list(failures.values())[-1]}"
            for c in clusters:
                c.error = error
        elif n:
            X = masks[ok].astype(float)
            y = np.asarray(y_masks, dtype=float)
            if self.anchor:
                X, y = np.vstack([X, np.ones((1, n))]), np.append(y, 1.0)
            penalty = self.alpha * alpha_max(X, y)
            w, b = lasso(X, y, penalty)
            predicted = X @ w + b
            spread = float(((y - y.mean()) ** 2).sum())
            fit["intercept"], fit["alpha_absolute"] = b, penalty
            fit["r2"] = 1.0 - float(((y - predicted) ** 2).sum()) / spread if spread > 0 else None
            varied = X.min(axis=0) != X.max(axis=0)
            for j, c in enumerate(clusters):
                if varied[j]:
                    c.contribution = float(w[j]) + 0.0  # no -0.0
                else:
                    c.error = "never both kept and dropped in the answered masks: weight unknown"
            live = [c for c in clusters if not c.failed]
            for c, share in zip(live, softmax([c.contribution for c in live], self.temperature)):
                c.share = float(share)
        return self._result(query, nodes, answer, clusters, llm_calls=regenerator.calls, settings={"fit": fit})
