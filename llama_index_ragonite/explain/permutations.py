"""``PermutationExplainer``: the reordering closest to the original that changes the answer.

RAGE's permutation insight: LLMs read the start and the end of a prompt more closely than
its middle, so the order of the evidences can change the answer. Trying all n! orders is
out of the question; the candidates are ``n_random`` uniform samples (Fisher–Yates) and the
``n_optimal`` orderings that best put relevant evidences into high-attention positions
under a position prior (V-shaped by default) — the k best solutions of an assignment
problem. They are evaluated in decreasing Kendall's tau to the original order.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np
from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.explain.math import fisher_yates, k_best_assignments, kendall_tau
from llama_index_ragonite.explain.perturbations import AnswerRule, AnswerShare, Perturbation, RageExplainer, relevance

__all__ = ["PermutationExplainer", "optimal_orderings", "v_shaped_prior"]


def v_shaped_prior(n: int, start: float = 1.0, middle: float = 0.0, end: float = 0.8) -> np.ndarray:
    """Attention per prompt position: ``start`` first, falling linearly to ``middle`` at the centre, rising to ``end`` last.

    The "lost in the middle" shape; ``start > end`` by default because the first sources
    weigh a little more than the last ones, which also makes the best ordering unique.
    """
    if n <= 1:
        return np.full(n, float(start))
    centre = (n - 1) / 2
    p = np.arange(n, dtype=float)
    left = start + (middle - start) * p / centre
    right = middle + (end - middle) * (p - centre) / centre
    return np.where(p <= centre, left, right)


def optimal_orderings(scores: Sequence[float], attention: Sequence[float], k: int) -> List[Tuple[int, ...]]:
    """The ``k`` orderings with the highest sum of relevance × attention of the position, best first.

    An assignment of evidences (rows) to positions (columns) with cost −score·attention,
    solved k-best by ``math.k_best_assignments``. Orderings list evidence indices by position.
    """
    scores, attention = np.asarray(scores, dtype=float), np.asarray(attention, dtype=float)
    if attention.shape != scores.shape:
        raise ValueError(f"the position prior gave {attention.size} weights for {scores.size} evidences")
    cost = -np.outer(scores, attention)
    return [tuple(int(i) for i in np.argsort(cols)) for _, cols in k_best_assignments(cost, k)]


class PermutationExplainer(RageExplainer):
    """The reordering of the evidences closest to the original (by Kendall's tau) that changes the answer.

    Args:
        llm: the LLM that answered (default: ``Settings.llm`` when set, else the offline ``ExtractiveAnswerer``).
        position_prior: ``n -> n`` attention weights per position; default ``v_shaped_prior``
            with the ``*_attention`` fields. See also the fields of ``RageExplainer``.

    Orderings equal in tau keep their generation order: optimal ones first, then random ones.
    """

    n_random: int = Field(default=20, ge=0, description="Random orderings sampled by Fisher–Yates.")
    n_optimal: int = Field(default=5, ge=0, description="Best orderings under the position prior (RAGE's s).")
    seed: int = Field(default=0, description="Seed of the random orderings (same seed, same candidates).")
    start_attention: float = Field(default=1.0, description="V-shaped prior: weight of the first position.")
    middle_attention: float = Field(default=0.0, description="V-shaped prior: weight of the middle position.")
    end_attention: float = Field(default=0.8, description="V-shaped prior: weight of the last position.")
    position_prior: Optional[Callable[[int], Sequence[float]]] = Field(
        default=None, exclude=True, description="Custom prior: n -> attention weight of each of the n positions."
    )

    @property
    def mode(self) -> str:
        return "permutation"

    def attention(self, n: int) -> np.ndarray:
        if self.position_prior is not None:
            return np.asarray(self.position_prior(n), dtype=float)
        return v_shaped_prior(n, self.start_attention, self.middle_attention, self.end_attention)

    def orderings(self, nodes: Sequence[NodeWithScore]) -> List[Perturbation]:
        """The candidate orderings in search order: distinct, the original left out, decreasing tau."""
        n = len(nodes)
        if n < 2:
            return []
        original = tuple(range(n))
        # one extra: the original order may be among the best, and is no candidate
        optimal = optimal_orderings(relevance(nodes), self.attention(n), self.n_optimal + 1)
        optimal = [o for o in optimal if o != original][: self.n_optimal]
        rng = np.random.default_rng(self.seed)
        random = [tuple(fisher_yates(n, rng)) for _ in range(self.n_random)]
        seen, candidates = {original}, []
        for origin, orders in (("optimal", optimal), ("random", random)):
            for order in orders:
                if order not in seen:
                    seen.add(order)
                    tau = kendall_tau(original, order)
                    candidates.append(Perturbation("reorder", evidences=order, kendall_tau=tau, origin=origin))
        return sorted(candidates, key=lambda p: -p.kendall_tau)

    def _candidates(self, nodes: Sequence[NodeWithScore]) -> List[Perturbation]:
        return self.orderings(nodes)

    def _rules(self, perturbations: Sequence[Perturbation], distribution: Sequence[AnswerShare]) -> List[AnswerRule]:
        rules = []
        for share, members in self._groups(perturbations, distribution):
            prefix = self._rule_prefix(share, "orderings")
            for position in range(len(members[0].evidences)):
                at = {p.evidences[position] for p in members}
                if len(at) == 1:
                    (i,) = at
                    text = f"{prefix} put Evidence {i + 1} at position {position + 1}"
                    rules.append(AnswerRule(share.answer, share.count, "position", (i,), position=position, text=text))
        return rules
