"""``CombinationExplainer``: the smallest set of evidences whose removal or retention gives a counterfactual.

RAGE's combination insight. Top-down starts from the full context and removes evidences
until the answer changes; bottom-up starts from the empty context (the answer the LLM gives
with no evidence, the reference) and keeps evidences until the answer is the target (by
default the original answer). Either way candidate sets are tried in increasing size, and
sets of one size in decreasing summed relevance (retrieval scores, or attention), so the first
counterfactual found is the smallest and, among the smallest, the most relevant. Sets are
generated lazily: ten evidences already give 1,023 candidates, and the search usually stops
long before.
"""

from __future__ import annotations

import heapq
import math
from itertools import chain
from typing import Iterator, List, Literal, Optional, Sequence, Tuple

from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.explain.answers import Perturbation
from llama_index_ragonite.explain.perturbations import RageExplainer
from llama_index_ragonite.explain.regeneration import AnswerRegenerator, normalize_answer

__all__ = ["CombinationExplainer", "candidate_sets", "ranked_subsets"]


def ranked_subsets(scores: Sequence[float], size: int) -> Iterator[Tuple[int, ...]]:
    """All ``size``-subsets of ``range(len(scores))``, highest summed score first, lazily.

    Best-first search over positions in the score ranking (ties by index): a subset's
    successors move one member to the next lower-ranked evidence, so they never score
    higher; a heap keyed by (−sum, positions) then yields every subset once, in order.
    Equal sums come out with the higher-ranked members first. Subsets are sorted tuples.
    """
    n = len(scores)
    if not 0 <= size <= n:
        return
    ranking = sorted(range(n), key=lambda i: (-scores[i], i))
    values = [float(scores[i]) for i in ranking]

    def key(positions: Tuple[int, ...]):
        return (-math.fsum(values[p] for p in positions), positions)  # fsum: rounding keeps the order monotone

    start = tuple(range(size))
    heap, seen = [key(start)], {start}
    while heap:
        _, positions = heapq.heappop(heap)
        yield tuple(sorted(ranking[p] for p in positions))
        for j, p in enumerate(positions):
            nxt = p + 1
            if nxt < n and (j == size - 1 or nxt < positions[j + 1]):
                child = positions[:j] + (nxt,) + positions[j + 1 :]
                if child not in seen:
                    seen.add(child)
                    heapq.heappush(heap, key(child))


def candidate_sets(scores: Sequence[float], mode: str) -> Iterator[Tuple[int, ...]]:
    """The sets to remove (top-down: sizes 1..n) or keep (bottom-up: sizes 1..n−1), in search order."""
    n = len(scores)
    sizes = range(1, n + 1) if mode == "top-down" else range(1, n)
    return chain.from_iterable(ranked_subsets(scores, k) for k in sizes)


class CombinationExplainer(RageExplainer):
    """RAGE's combination explanation: the smallest set of evidences to remove, or to keep, for a counterfactual.

    Args:
        llm: the LLM that answered (default: ``Settings.llm`` when set, else the offline ``ExtractiveAnswerer``).
        mode: ``"top-down"``: the smallest set whose removal from the full context changes the
            answer; ``"bottom-up"``: starting from the empty-context answer (the LLM asked with no
            evidence: the reference), the smallest set whose retention yields ``target``.
        target: the answer to reach (compared by ``normalize_answer``): bottom-up, ``None`` is the
            original answer; top-down, the smallest removal whose answer is ``target`` (``None``:
            any change). See also the fields of ``RageExplainer``.

    Equal-size sets are tried in decreasing summed relevance. Removing every evidence
    (top-down) needs no LLM call: the answer is then out of scope. Bottom-up: when the
    empty-context answer already is the target, the explanation is keeping no evidence; when
    no smaller set yields the original answer, it is keeping them all.
    """

    mode: Literal["top-down", "bottom-up"] = Field(
        default="top-down", description="top-down: remove evidences; bottom-up: keep only some."
    )
    target: Optional[str] = Field(
        default=None,
        description="The answer to reach: bottom-up by keeping evidences (None: the original); top-down, the smallest "
        "removal that gives it (None: any change of the answer).",
    )

    @property
    def distribution_kind(self) -> str:
        return "remove" if self.mode == "top-down" else "keep"

    def _candidates(self, nodes: Sequence[NodeWithScore], scores: Sequence[float]) -> Iterator[Perturbation]:
        everything = range(len(nodes))
        for subset in candidate_sets(scores, self.mode):
            rest = tuple(i for i in everything if i not in subset)
            if self.mode == "top-down":
                yield Perturbation("remove", evidences=rest, removed=subset)
            else:
                yield Perturbation("keep", evidences=subset, removed=rest)

    async def _goal(
        self, question: str, nodes: List[NodeWithScore], answer: str, regenerator: AnswerRegenerator
    ) -> Tuple[Optional[str], Optional[str]]:
        if self.mode == "top-down":
            return answer, self.target
        return await regenerator.aanswer_without_sources(question), self.target if self.target is not None else answer

    def _trivial(self, reference: Optional[str], target: Optional[str], n: int) -> Optional[Perturbation]:
        if (
            self.mode == "top-down"
            or target is None
            or reference is None
            or normalize_answer(reference) != normalize_answer(target)
        ):
            return None
        return Perturbation("keep", evidences=(), removed=tuple(range(n)), answer=reference, changed=True)

    def _exhausted(self, evaluated: List[Perturbation], target: str, answer: str, n: int) -> Optional[Perturbation]:
        if (
            self.mode == "top-down"
            or any(p.failed for p in evaluated)
            or normalize_answer(target) != normalize_answer(answer)
        ):
            return None
        return Perturbation("keep", evidences=tuple(range(n)), answer=answer, changed=True)  # the full context
