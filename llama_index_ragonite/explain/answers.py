"""The vocabulary of RAGE explanations: one evaluated perturbation, an answer's share, an answer rule.

Shared by the search (``perturbations.py``: which perturbation changes the answer) and the
answer-distribution analysis (``distribution.py``: what answers a set of perturbations gives).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, cast

from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.explain.regeneration import normalize_answer
from llama_index_ragonite.prompts import strip_citations

__all__ = [
    "AnswerRule",
    "AnswerShare",
    "Perturbation",
    "PerturbationCounts",
    "answer_distribution",
    "answer_groups",
    "answer_rules",
    "evidence_labels",
    "relevance",
    "short_answer",
]


def evidence_labels(indices: Iterable[int]) -> str:
    """``"Evidence 1, 3"`` for the 0-based indices ``(0, 2)`` (labels are 1-based, as in the paper)."""
    return "Evidence " + ", ".join(str(i + 1) for i in indices)


def relevance(nodes: Sequence[NodeWithScore]) -> List[float]:
    """The retrieval scores; when any is missing, the retrieval rank instead (first = most relevant)."""
    if any(n.score is None for n in nodes):
        return [float(len(nodes) - i) for i in range(len(nodes))]
    return [float(cast(float, n.score)) for n in nodes]


def short_answer(text: str, limit: int = 70) -> str:
    text = strip_citations(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass
class Perturbation:
    """One counterfactual prompt and what the LLM answered to it.

    ``evidences`` are 0-based indices into the explained ``nodes`` in the order the LLM saw
    them; ``removed`` the ones left out. ``answer`` is ``None`` when the LLM call failed.
    ``changed``: the answer is a counterfactual, what the search looks for — top-down and
    permutations: it differs from the original answer; bottom-up: it is the target answer
    (turning the empty-context answer into it).
    """

    kind: str  # "remove", "keep" (combinations) or "reorder" (permutations)
    evidences: Tuple[int, ...]
    removed: Tuple[int, ...] = ()
    kendall_tau: Optional[float] = None  # reorderings: closeness to the original order
    origin: str = ""  # reorderings: "kendall", "optimal" or "random"
    answer: Optional[str] = None
    changed: bool = False

    @property
    def failed(self) -> bool:
        return self.answer is None

    @property
    def subset(self) -> Tuple[int, ...]:
        """What the explanation is about: the removed evidences, the kept ones, or the new order."""
        return self.removed if self.kind == "remove" else self.evidences

    def describe(self) -> str:
        if self.kind == "remove":
            return f"removing {evidence_labels(self.removed)}"
        if self.kind == "keep" and not self.evidences:
            return "keeping no evidence"
        if self.kind == "keep":
            return f"keeping only {evidence_labels(self.evidences)}"
        return f"the order {evidence_labels(self.evidences)} (Kendall's tau {self.kendall_tau:.2f})"

    def to_dict(self) -> Dict[str, Any]:
        return {
            "kind": self.kind,
            "evidences": list(self.evidences),
            "removed": list(self.removed),
            "kendall_tau": self.kendall_tau,
            "origin": self.origin,
            "answer": self.answer,
            "changed": self.changed,
            "failed": self.failed,
            "description": self.describe(),
        }


class PerturbationCounts:
    """Mixin of the results holding ``perturbations``: how many failed, whether all were answered."""

    perturbations: List[Perturbation]

    @property
    def failures(self) -> int:
        """Perturbations whose LLM call failed (never counted as changes, left out of the distribution)."""
        return sum(p.failed for p in self.perturbations)

    @property
    def complete(self) -> bool:
        """True when every perturbation was answered (no failed LLM call)."""
        return not self.failures


@dataclass
class AnswerShare:
    """One distinct answer (by ``normalize_answer``) among the evaluated perturbations."""

    answer: str  # normalized
    text: str  # the first answer with this normalized form, as the LLM wrote it
    count: int
    share: float
    original: bool  # the same answer as the unperturbed prompt


@dataclass
class AnswerRule:
    """A regularity of the perturbations giving one answer, e.g. all of them include Evidence 1."""

    answer: str  # normalized
    support: int  # perturbations giving this answer
    relation: str  # "include" / "exclude" (combinations) or "position" (orderings)
    evidences: Tuple[int, ...]
    position: Optional[int] = None  # 0-based, for "position"
    text: str = ""


def answer_distribution(perturbations: Sequence[Perturbation], original_answer: str) -> List[AnswerShare]:
    """Counts and shares of the distinct answers (failed calls left out), most frequent first."""
    groups: Dict[str, List[str]] = {}
    for p in perturbations:
        if p.answer is not None:
            groups.setdefault(normalize_answer(p.answer), []).append(p.answer)
    total = sum(len(texts) for texts in groups.values())
    original = normalize_answer(original_answer)
    shares = [
        AnswerShare(key, texts[0], len(texts), len(texts) / total, key == original) for key, texts in groups.items()
    ]
    return sorted(shares, key=lambda s: -s.count)  # stable: ties in order of first appearance


def answer_groups(
    perturbations: Sequence[Perturbation], distribution: Sequence[AnswerShare]
) -> List[Tuple[AnswerShare, List[Perturbation]]]:
    """(share, the answered perturbations giving it) for each answer of ``distribution``, in its order."""
    members: Dict[str, List[Perturbation]] = {s.answer: [] for s in distribution}
    for p in perturbations:
        if p.answer is not None:
            members.setdefault(normalize_answer(p.answer), []).append(p)
    return [(s, members[s.answer]) for s in distribution]


def answer_rules(
    perturbations: Sequence[Perturbation], distribution: Sequence[AnswerShare], min_support: int = 2
) -> List[AnswerRule]:
    """Regularities of the perturbations giving each answer (given by at least ``min_support`` of them).

    Combinations: the evidences all of them include, and all of them exclude; orderings: an
    evidence all of them put at the same position.
    """
    rules = []
    for share, group in answer_groups(perturbations, distribution):
        if share.count < min_support or not group:
            continue
        orderings = group[0].kind == "reorder"
        prefix = (
            f"All {share.count} {'orderings' if orderings else 'combinations'} giving '{short_answer(share.text, 50)}'"
        )
        if orderings:
            for position in range(len(group[0].evidences)):
                at = {p.evidences[position] for p in group}
                if len(at) == 1:
                    (i,) = at
                    text = f"{prefix} put Evidence {i + 1} at position {position + 1}"
                    rules.append(AnswerRule(share.answer, share.count, "position", (i,), position=position, text=text))
            continue
        for relation, sets in (("include", [p.evidences for p in group]), ("exclude", [p.removed for p in group])):
            common = tuple(sorted(set.intersection(*map(set, sets))))
            if common:
                text = f"{prefix} {relation} {evidence_labels(common)}"
                rules.append(AnswerRule(share.answer, share.count, relation, common, text=text))
    return rules
