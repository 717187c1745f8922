"""``PermutationExplainer``: the reordering closest to the original that changes the answer.

RAGE's permutation insight: LLMs read the start and the end of a prompt more closely than
its middle, so the order of the evidences can change the answer. RAGE tries orderings in
decreasing Kendall's tau to the original order, so the first change found is the closest
one: by default every ordering by increasing inversion count (``kendall.py``: exact for up to
eight evidences, each tau level sampled beyond). The other strategies RAGE describes are
selectable: ``n_random`` uniform samples (Fisher–Yates) and the ``n_optimal`` orderings that
best put relevant evidences into high-attention positions under a position prior (V-shaped
by default) — the k best solutions of an assignment problem — also tried in decreasing tau.
"""

from __future__ import annotations

from typing import Callable, Iterator, List, Literal, Optional, Sequence, Tuple, Union

import numpy as np
from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.explain.answers import Perturbation, relevance
from llama_index_ragonite.explain.distribution import perturbation
from llama_index_ragonite.explain.kendall import EXACT_UP_TO, orderings_by_tau
from llama_index_ragonite.explain.math import fisher_yates, k_best_assignments
from llama_index_ragonite.explain.perturbations import RageExplainer

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


def optimal_orderings(
    scores: Sequence[float], attention: Union[Sequence[float], np.ndarray], k: int
) -> List[Tuple[int, ...]]:
    """The ``k`` orderings with the highest sum of relevance × attention of the position, best first.

    An assignment of evidences (rows) to positions (columns) with cost −score·attention,
    solved k-best by ``math.k_best_assignments``. Orderings list evidence indices by position.
    """
    relevance, weights = np.asarray(scores, dtype=float), np.asarray(attention, dtype=float)
    if weights.shape != relevance.shape:
        raise ValueError(f"the position prior gave {weights.size} weights for {relevance.size} evidences")
    cost = -np.outer(relevance, weights)
    return [tuple(int(i) for i in np.argsort(cols)) for _, cols in k_best_assignments(cost, k)]


class PermutationExplainer(RageExplainer):
    """The reordering of the evidences closest to the original (by Kendall's tau) that changes the answer.

    Args:
        llm: the LLM that answered (default: ``Settings.llm`` when set, else the offline ``ExtractiveAnswerer``).
        strategy: which orderings are tried, always in decreasing tau (ties keep generation order):
            ``"kendall"`` (default) every ordering by increasing inversion count — the adjacent
            swaps first — exactly for up to ``exact_up_to`` evidences, levels sampled beyond
            (``kendall.orderings_by_tau``); ``"random"``: ``n_random`` Fisher–Yates samples;
            ``"optimal"``: the ``n_optimal`` best orderings under the position prior;
            ``"optimal+random"``: both (the former default).
        position_prior: ``n -> n`` attention weights per position; default ``v_shaped_prior``
            with the ``*_attention`` fields. See also the fields of ``RageExplainer``.
    """

    strategy: Literal["kendall", "random", "optimal", "optimal+random"] = Field(
        default="kendall", description="Which orderings are tried (all in decreasing Kendall's tau)."
    )
    exact_up_to: int = Field(default=EXACT_UP_TO, ge=0, description="kendall: exact enumeration up to this many.")
    level_sample: int = Field(default=32, ge=1, description="kendall: orderings sampled per tau level beyond it.")
    n_random: int = Field(default=20, ge=0, description="Random orderings sampled by Fisher–Yates.")
    n_optimal: int = Field(default=5, ge=0, description="Best orderings under the position prior (RAGE's s).")
    start_attention: float = Field(default=1.0, description="V-shaped prior: weight of the first position.")
    middle_attention: float = Field(default=0.0, description="V-shaped prior: weight of the middle position.")
    end_attention: float = Field(default=0.8, description="V-shaped prior: weight of the last position.")
    position_prior: Optional[Callable[[int], Sequence[float]]] = Field(
        default=None, exclude=True, description="Custom prior: n -> attention weight of each of the n positions."
    )

    @property
    def mode(self) -> str:
        return "permutation"

    @property
    def distribution_kind(self) -> str:
        return "reorder"

    def attention_prior(self, n: int) -> np.ndarray:
        """Attention per prompt position (the prior the optimal orderings maximise)."""
        if self.position_prior is not None:
            return np.asarray(self.position_prior(n), dtype=float)
        return v_shaped_prior(n, self.start_attention, self.middle_attention, self.end_attention)

    def orderings(
        self, nodes: Sequence[NodeWithScore], scores: Optional[Sequence[float]] = None
    ) -> Iterator[Perturbation]:
        """The candidate orderings in search order: distinct, the original left out, decreasing tau.

        ``scores``: the evidences' relevance for the optimal orderings (default: retrieval scores).
        """
        n = len(nodes)
        if n < 2:
            return iter(())
        if self.strategy == "kendall":
            orders = orderings_by_tau(n, self.exact_up_to, self.level_sample, self.seed)
            return (perturbation("reorder", n, order, origin="kendall") for order in orders)
        original = tuple(range(n))
        generated: List[Tuple[str, Tuple[int, ...]]] = []
        if "optimal" in self.strategy:
            scores = relevance(nodes) if scores is None else scores
            # one extra: the original order may be among the best, and is no candidate
            optimal = optimal_orderings(scores, self.attention_prior(n), self.n_optimal + 1)
            generated += [("optimal", o) for o in optimal if o != original][: self.n_optimal]
        if "random" in self.strategy:
            rng = np.random.default_rng(self.seed)
            generated += [("random", tuple(fisher_yates(n, rng))) for _ in range(self.n_random)]
        seen, candidates = {original}, []
        for origin, order in generated:
            if order not in seen:
                seen.add(order)
                candidates.append(perturbation("reorder", n, order, origin=origin))
        return iter(sorted(candidates, key=lambda p: -(p.kendall_tau or 0.0)))

    def _candidates(self, nodes: Sequence[NodeWithScore], scores: Sequence[float]) -> Iterator[Perturbation]:
        return self.orderings(nodes, scores)
