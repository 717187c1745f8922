"""What the RAGE explainers share: the evaluated perturbation, the report, and the search loop.

A RAGE explanation asks the LLM the same question over perturbed evidence lists (some
evidences removed or kept, or reordered) until the answer changes. ``CombinationExplainer``
and ``PermutationExplainer`` differ only in which perturbations they try, in which order, and
in the answer rules they read off the results; ``RageExplainer`` runs the search for both —
in concurrent batches through ``AnswerRegenerator``, answers compared by ``normalize_answer`` —
and ``PerturbationReport`` renders the outcome (text table, dict, JSON, pie chart). The run
itself (span, start/end events, error handling) is ``explain.base.BaseExplainer``'s.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import asdict, dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.events import PerturbationEndEvent, PerturbationStartEvent
from llama_index_ragonite.explain.base import BaseExplainer, JSONResult
from llama_index_ragonite.explain.charts import chart_path, figure, save
from llama_index_ragonite.explain.regeneration import AnswerRegenerator, normalize_answer
from llama_index_ragonite.prompts import strip_citations

__all__ = [
    "AnswerRule",
    "AnswerShare",
    "Perturbation",
    "PerturbationEndEvent",
    "PerturbationReport",
    "PerturbationStartEvent",
    "RageExplainer",
    "answer_distribution",
    "evidence_labels",
    "relevance",
]


def evidence_labels(indices: Iterable[int]) -> str:
    """``"Evidence 1, 3"`` for the 0-based indices ``(0, 2)`` (labels are 1-based, as in the paper)."""
    return "Evidence " + ", ".join(str(i + 1) for i in indices)


def relevance(nodes: Sequence[NodeWithScore]) -> List[float]:
    """The retrieval scores; when any is missing, the retrieval rank instead (first = most relevant)."""
    if any(n.score is None for n in nodes):
        return [float(len(nodes) - i) for i in range(len(nodes))]
    return [float(n.score) for n in nodes]


def _short(text: str, limit: int = 70) -> str:
    text = strip_citations(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass
class Perturbation:
    """One counterfactual prompt and what the LLM answered to it.

    ``evidences`` are 0-based indices into the explained ``nodes`` in the order the LLM saw
    them; ``removed`` the ones left out. ``answer`` is ``None`` when the LLM call failed.
    """

    kind: str  # "remove", "keep" (combinations) or "reorder" (permutations)
    evidences: Tuple[int, ...]
    removed: Tuple[int, ...] = ()
    kendall_tau: Optional[float] = None  # reorderings: closeness to the original order
    origin: str = ""  # reorderings: "optimal" or "random"
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


@dataclass
class PerturbationReport(JSONResult):
    """Outcome of one RAGE explanation: what changes the answer, and what every perturbation gave."""

    mode: str  # "top-down", "bottom-up" or "permutation"
    question: str
    original_answer: str
    n_evidences: int
    explanation: Optional[Perturbation]  # the first perturbation (in search order) that changed the answer
    perturbations: List[Perturbation]  # every evaluated one, in evaluation order
    distribution: List[AnswerShare]
    rules: List[AnswerRule]
    llm_calls: int = 0
    wall_time_s: float = 0.0
    errors: List[str] = field(default_factory=list)  # one line per LLM call that failed after its retries

    @property
    def found(self) -> bool:
        return self.explanation is not None

    @property
    def counterfactual_answer(self) -> Optional[str]:
        return self.explanation.answer if self.explanation else None

    @property
    def failures(self) -> int:
        """Perturbations whose LLM call failed (never counted as changes, left out of the distribution)."""
        return sum(p.failed for p in self.perturbations)

    @property
    def complete(self) -> bool:
        """True when every evaluated perturbation was answered (no failed LLM call)."""
        return not self.failures

    @property
    def failed_before_explanation(self) -> int:
        """Failed perturbations that precede the explanation in search order (all failed ones when
        none was found): any of them might have changed the answer, so the explanation found may
        not be the smallest or most relevant one, and "none changes it" is not established."""
        end = self.perturbations.index(self.explanation) if self.explanation else len(self.perturbations)
        return sum(p.failed for p in self.perturbations[:end])

    def incompleteness(self) -> Optional[str]:
        """What failed, in one sentence; ``None`` when every perturbation was answered."""
        if self.complete:
            return None
        failed = [p for p in self.perturbations if p.failed]
        which = "; ".join(p.describe() for p in failed[:3]) + ("; …" if len(failed) > 3 else "")
        line = f"Incomplete: {len(failed)} of {len(self.perturbations)} {self.noun} failed (LLM error): {which}."
        if not self.found:
            line += " Any of them might have changed the answer."
        elif self.failed_before_explanation:
            earlier = self.failed_before_explanation
            line += f" {earlier} came before the explanation in the search order: it may not be the smallest or most relevant."
        return line

    @property
    def noun(self) -> str:
        return "orderings" if self.mode == "permutation" else "combinations"

    def to_text(self) -> str:
        lines = [f"RAGE {self.mode} explanation for: {self.question}", f"Original answer: {self.original_answer}"]
        if self.explanation:
            lines.append(
                f"Explanation: {self.explanation.describe()} changes the answer to: {self.counterfactual_answer}"
            )
        elif self.failures:
            answered = len(self.perturbations) - self.failures
            lines.append(f"Explanation: none of the {answered} answered {self.noun} changes the answer.")
        else:
            lines.append(
                f"Explanation: none of the {len(self.perturbations)} evaluated {self.noun} changes the answer."
            )
        if not self.complete:
            lines.append(self.incompleteness())
        failed = f", {self.failures} failed" if self.failures else ""
        lines += [f"Answer distribution over {len(self.perturbations)} {self.noun}{failed}:", "  count   share  answer"]
        for s in self.distribution:
            mark = "  (original)" if s.original else ""
            lines.append(f"  {s.count:5d}  {s.share:6.1%}  {_short(s.text)}{mark}")
        if self.rules:
            lines += ["Rules:"] + [f"  - {r.text}" for r in self.rules]
        lines.append(f"LLM calls: {self.llm_calls}, wall time: {self.wall_time_s:.2f} s")
        return "\n".join(lines)

    def to_dict(self) -> Dict[str, Any]:
        """JSON-serializable form (indices 0-based, aligned with the explained nodes)."""
        return {
            **self._fields("mode", "question", "original_answer", "n_evidences", "found"),
            "explanation": self.explanation.to_dict() if self.explanation else None,
            "counterfactual_answer": self.counterfactual_answer,
            "perturbations": [p.to_dict() for p in self.perturbations],
            "distribution": [asdict(s) for s in self.distribution],
            "rules": [{**asdict(r), "evidences": list(r.evidences)} for r in self.rules],
            **self._fields("llm_calls", "wall_time_s", "failures", "complete", "failed_before_explanation"),
            "incomplete": self.incompleteness(),
            "errors": list(self.errors),
        }

    def plot(self, path: Union[str, Path]) -> Path:
        """Pie chart of the answer distribution, PNG or SVG by the file extension."""
        path = chart_path(path)
        fig = figure(8, 4)
        ax = fig.add_subplot()
        if self.distribution:
            wedges, _, _ = ax.pie(
                [s.count for s in self.distribution], autopct="%1.0f%%", startangle=90, counterclock=False
            )
            labels = [
                f"{_short(s.text, 60)} ({s.count}){' — original' if s.original else ''}" for s in self.distribution
            ]
            ax.legend(wedges, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
        else:
            ax.text(0.5, 0.5, "no answers", ha="center", va="center")
            ax.axis("off")
        ax.set_title(f"Answers over {len(self.perturbations)} {self.noun} ({self.mode})", fontsize=10)
        return save(fig, path)


class RageExplainer(BaseExplainer):
    """Search loop shared by the RAGE explainers; subclasses say which perturbations to try, in order.

    Candidates are evaluated in batches of ``max_concurrency`` (concurrent LLM calls); the
    search stops after the first batch holding a change, or at ``max_evaluations``, and the
    explanation is the first changing candidate in the subclass's order. Subclasses define
    ``mode`` (``top-down``, ``bottom-up`` or ``permutation``). The LLM follows the package's
    precedence rule (passed, else ``Settings.llm``, else the offline ``ExtractiveAnswerer``);
    pass the one (and ``prompt``) the answer came from.
    """

    max_evaluations: int = Field(default=128, ge=1, description="At most this many perturbations are evaluated.")
    min_rule_support: int = Field(
        default=2, ge=1, description="Answer rules only for answers given by at least this many perturbations."
    )

    @abstractmethod
    def _candidates(self, nodes: Sequence[NodeWithScore]) -> Iterable[Perturbation]:
        """Perturbations to try, in search order (may be lazy and longer than ``max_evaluations``)."""

    @abstractmethod
    def _rules(self, perturbations: Sequence[Perturbation], distribution: Sequence[AnswerShare]) -> List[AnswerRule]:
        """Answer rules read off the evaluated perturbations."""

    async def _aexplain(
        self, question: str, nodes: List[NodeWithScore], answer: str, regenerator: AnswerRegenerator
    ) -> PerturbationReport:
        original = normalize_answer(answer)
        candidates = iter(self._candidates(nodes))
        evaluated: List[Perturbation] = []
        explanation = None
        while explanation is None and len(evaluated) < self.max_evaluations:
            batch = list(islice(candidates, min(self.max_concurrency, self.max_evaluations - len(evaluated))))
            if not batch:
                break
            answers = await regenerator.aanswer_many(question, [[nodes[i] for i in p.evidences] for p in batch])
            for p, text in zip(batch, answers):
                p.answer = text
                p.changed = text is not None and normalize_answer(text) != original
            evaluated += batch
            explanation = next((p for p in batch if p.changed), None)
        distribution = answer_distribution(evaluated, answer)
        return PerturbationReport(
            mode=self.mode,
            question=question,
            original_answer=answer,
            n_evidences=len(nodes),
            explanation=explanation,
            perturbations=evaluated,
            distribution=distribution,
            rules=self._rules(evaluated, distribution),
            errors=list(regenerator.errors),
        )

    def _start_event(self, question: str, nodes: List[NodeWithScore]) -> PerturbationStartEvent:
        return PerturbationStartEvent(mode=self.mode, question=question, n_evidences=len(nodes))

    def _end_event(self, result: PerturbationReport, **cost: Any) -> PerturbationEndEvent:
        evaluated, failures = len(result.perturbations), result.failures
        return PerturbationEndEvent(mode=self.mode, found=result.found, evaluated=evaluated, failures=failures, **cost)

    def _groups(self, perturbations: Sequence[Perturbation], distribution: Sequence[AnswerShare]):
        """(share, perturbations giving it) for the answers with at least ``min_rule_support`` of them."""
        for share in distribution:
            if share.count >= self.min_rule_support:
                members = [
                    p for p in perturbations if p.answer is not None and normalize_answer(p.answer) == share.answer
                ]
                yield share, members

    @staticmethod
    def _rule_prefix(share: AnswerShare, noun: str) -> str:
        return f"All {share.count} {noun} giving '{_short(share.text, 50)}'"
