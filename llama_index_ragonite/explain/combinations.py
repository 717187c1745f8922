"""``CombinationExplainer``: the smallest set of evidences whose removal or retention changes the answer.

RAGE's combination insight. Top-down removes evidences, bottom-up keeps only some; either
way candidate sets are tried in increasing size, and sets of one size in decreasing summed
relevance (retrieval scores), so the first change found is the smallest and, among the
smallest, the most relevant. Sets are generated lazily: ten evidences already give 1,023
candidates, and the search usually stops long before.
"""

from __future__ import annotations

import heapq
import math
from itertools import chain
from typing import Iterator, List, Literal, Sequence, Tuple

from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.explain.perturbations import (
    AnswerRule,
    AnswerShare,
    Perturbation,
    RageExplainer,
    evidence_labels,
    relevance,
)

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
    """The smallest set of evidences whose removal (top-down) or retention (bottom-up) changes the answer.

    Args:
        llm: the LLM that answered (default: ``Settings.llm`` when set, else the offline ``ExtractiveAnswerer``).
        mode: ``"top-down"`` or ``"bottom-up"``; see also the fields of ``RageExplainer``.

    Removing every evidence (top-down) needs no LLM call: the answer is then out of scope.
    """

    mode: Literal["top-down", "bottom-up"] = Field(
        default="top-down", description="top-down: remove evidences; bottom-up: keep only some."
    )

    def _candidates(self, nodes: Sequence[NodeWithScore]) -> Iterator[Perturbation]:
        everything = range(len(nodes))
        for subset in candidate_sets(relevance(nodes), self.mode):
            rest = tuple(i for i in everything if i not in subset)
            if self.mode == "top-down":
                yield Perturbation("remove", evidences=rest, removed=subset)
            else:
                yield Perturbation("keep", evidences=subset, removed=rest)

    def _rules(self, perturbations: Sequence[Perturbation], distribution: Sequence[AnswerShare]) -> List[AnswerRule]:
        rules = []
        for share, members in self._groups(perturbations, distribution):
            prefix = self._rule_prefix(share, "combinations")
            for relation, sets in (
                ("include", [p.evidences for p in members]),
                ("exclude", [p.removed for p in members]),
            ):
                common = tuple(sorted(set.intersection(*map(set, sets))))
                if common:
                    text = f"{prefix} {relation} {evidence_labels(common)}"
                    rules.append(AnswerRule(share.answer, share.count, relation, common, text=text))
        return rules
