"""What the RAGE explainers share: the report and the search loop.

A RAGE explanation asks the LLM the same question over perturbed evidence lists (some
evidences removed or kept, or reordered) until it finds a counterfactual: an answer other
than the original (top-down, permutations) or, bottom-up, the target answer reached from the
empty-context answer. ``CombinationExplainer`` and ``PermutationExplainer`` differ only in
which perturbations they try and in which order; ``RageExplainer`` runs the search for both —
in concurrent batches through ``AnswerRegenerator``, answers compared by ``normalize_answer`` —
then, separately, the answer-distribution analysis (``distribution.py``) over a fixed
population, and ``PerturbationReport`` renders both (text, dict, JSON, pie chart). The run
itself (span, start/end events, error handling) is ``explain.base.BaseExplainer``'s.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import asdict, dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Dict, Iterable, List, Literal, Optional, Sequence, Tuple, Union, cast

from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.events import PerturbationEndEvent, PerturbationStartEvent
from llama_index_ragonite.explain.answers import (
    AnswerRule,
    AnswerShare,
    Perturbation,
    PerturbationCounts,
    answer_distribution,
    evidence_labels,
    relevance,
    short_answer,
)
from llama_index_ragonite.explain.base import BaseExplainer, JSONResult
from llama_index_ragonite.explain.charts import answer_pie
from llama_index_ragonite.explain.distribution import AnswerDistribution, aanalyze, aevaluate
from llama_index_ragonite.explain.regeneration import AnswerRegenerator, normalize_answer

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


@dataclass
class PerturbationReport(PerturbationCounts, JSONResult):
    """Outcome of one RAGE explanation: the counterfactual found, every perturbation tried, the distribution.

    ``perturbations`` is the answer-counterfactuals table (each tried perturbation, its answer,
    ``changed`` when it is a counterfactual); ``analysis`` the separate answer-distribution
    analysis, whose shares and rules are also ``distribution`` and ``rules``.
    """

    mode: str  # "top-down", "bottom-up" or "permutation"
    question: str
    original_answer: str
    n_evidences: int
    explanation: Optional[Perturbation]  # the first counterfactual in search order
    perturbations: List[Perturbation]  # every tried one, in evaluation (= search) order
    distribution: List[AnswerShare]
    rules: List[AnswerRule]
    llm_calls: int = 0
    wall_time_s: float = 0.0
    errors: List[str] = field(default_factory=list)  # one line per LLM call that failed after its retries
    reference_answer: Optional[str] = None  # bottom-up: the answer with no evidence (None: that call failed)
    target_answer: Optional[str] = None  # bottom-up: the answer the kept evidences must yield
    analysis: Optional[AnswerDistribution] = None
    relevance: str = "retrieval"
    scores: List[float] = field(default_factory=list)  # relevance of each evidence (the search order's key)

    @property
    def found(self) -> bool:
        return self.explanation is not None

    @property
    def counterfactual_answer(self) -> Optional[str]:
        return self.explanation.answer if self.explanation else None

    @property
    def counterfactuals(self) -> List[Perturbation]:
        """The tried perturbations whose answer is a counterfactual."""
        return [p for p in self.perturbations if p.changed]

    @property
    def failed_before_explanation(self) -> int:
        """Failed perturbations that precede the explanation in search order (all failed ones when
        none was found): any of them might have changed the answer, so the explanation found may
        not be the smallest or most relevant one, and "none changes it" is not established."""
        end = self.perturbations.index(self.explanation) if self.explanation in self.perturbations else None
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

    def _explanation_line(self) -> str:
        if self.explanation and self.mode == "bottom-up":
            return f"Explanation: {self.explanation.describe()} turns the empty-context answer into the target answer."
        if self.explanation and self.target_answer is not None:
            return f"Explanation: {self.explanation.describe()} gives the target answer: {self.counterfactual_answer}"
        if self.explanation:
            return f"Explanation: {self.explanation.describe()} changes the answer to: {self.counterfactual_answer}"
        goal = "gives the target answer" if self.target_answer is not None else "changes the answer"
        if self.failures:
            answered = len(self.perturbations) - self.failures
            return f"Explanation: none of the {answered} answered {self.noun} {goal}."
        return f"Explanation: none of the {len(self.perturbations)} evaluated {self.noun} {goal}."

    def counterfactual_lines(self, limit: int = 12) -> List[str]:
        """The answer-counterfactuals table: each tried perturbation and its answer, counterfactuals marked."""
        lines = [
            f"Answer counterfactuals ({len(self.perturbations)} tried, {len(self.counterfactuals)} counterfactual):"
        ]
        for p in self.perturbations[:limit]:
            answer = "(LLM call failed)" if p.failed else short_answer(p.answer or "", 60)
            lines.append(f"  {'*' if p.changed else ' '} {p.describe()} -> {answer}")
        if len(self.perturbations) > limit:
            lines.append(f"    … {len(self.perturbations) - limit} more (to_dict() lists them all)")
        return lines

    def to_text(self) -> str:
        lines = [f"RAGE {self.mode} explanation for: {self.question}", f"Original answer: {self.original_answer}"]
        if self.mode == "bottom-up":
            reference = self.reference_answer if self.reference_answer is not None else "(LLM call failed)"
            lines += [f"Empty-context answer: {reference}", f"Target answer: {self.target_answer}"]
        elif self.target_answer is not None:
            lines.append(f"Target answer: {self.target_answer}")
        if self.relevance != "retrieval":
            lines.append(f"Relevance: {self.relevance} ({', '.join(f'{s:.3f}' for s in self.scores)})")
        lines.append(self._explanation_line())
        if not self.complete:
            lines.append(cast(str, self.incompleteness()))
        lines += self.counterfactual_lines()
        if self.analysis is not None:
            lines += self.analysis.lines()
        lines.append(f"LLM calls: {self.llm_calls}, wall time: {self.wall_time_s:.2f} s")
        return "\n".join(lines)

    def to_dict(self) -> Dict[str, Any]:
        """JSON-serializable form (indices 0-based, aligned with the explained nodes)."""
        return {
            **self._fields("mode", "question", "original_answer", "reference_answer", "target_answer"),
            **self._fields("n_evidences", "found", "relevance", "scores"),
            "explanation": self.explanation.to_dict() if self.explanation else None,
            "counterfactual_answer": self.counterfactual_answer,
            "perturbations": [p.to_dict() for p in self.perturbations],
            "distribution": [asdict(s) for s in self.distribution],
            "rules": [{**asdict(r), "evidences": list(r.evidences)} for r in self.rules],
            "analysis": self.analysis.to_dict() if self.analysis else None,
            **self._fields("llm_calls", "wall_time_s", "failures", "complete", "failed_before_explanation"),
            "incomplete": self.incompleteness(),
            "errors": list(self.errors),
        }

    def plot(self, path: Union[str, Path]) -> Path:
        """Pie chart of the answer distribution, PNG or SVG by the file extension."""
        over = self.analysis.describe_population() if self.analysis else f"{len(self.perturbations)} {self.noun}"
        return answer_pie(self.distribution, f"Answers over {over} ({self.mode})", path)


class RageExplainer(BaseExplainer):
    """Search loop shared by the RAGE explainers; subclasses say which perturbations to try, in order.

    Candidates are evaluated in batches of ``max_concurrency`` (concurrent LLM calls); the
    search stops after the first batch holding a counterfactual, or at ``max_evaluations``, and
    the explanation is the first counterfactual in the subclass's order. Then the answer
    distribution is computed over its own population (``distribution_size``,
    ``distribution_sample``, ``seed``; ``distribution_size=0`` skips it), reusing the answers the
    search already has. ``relevance="attention"`` orders by the attention a local Transformers
    model pays to each evidence (``attention=``, see ``explain.attention``) instead of the
    retrieval scores. Subclasses define ``mode`` and ``distribution_kind``.
    """

    max_evaluations: int = Field(default=128, ge=1, description="At most this many perturbations are evaluated.")
    min_rule_support: int = Field(
        default=2, ge=1, description="Answer rules only for answers given by at least this many perturbations."
    )
    distribution_size: Optional[int] = Field(
        default=2, ge=0, description="Answer distribution over perturbations up to this size (inversions); 0: none."
    )
    distribution_sample: Optional[int] = Field(
        default=None, ge=1, description="A seeded random sample of this many perturbations for the distribution."
    )
    seed: int = Field(default=0, description="Seed of every random choice (same seed, same perturbations).")
    relevance: Literal["retrieval", "attention", "none"] = Field(
        default="retrieval",
        description="What orders equal-size candidates: retrieval scores, LLM attention, or none (prompt order).",
    )
    attention: Optional[Any] = Field(
        default=None, exclude=True, description="An explain.attention.AttentionRelevance for relevance='attention'."
    )

    @property
    @abstractmethod
    def distribution_kind(self) -> str:
        """``"remove"``, ``"keep"`` or ``"reorder"``: the perturbations of the answer distribution."""

    @abstractmethod
    def _candidates(self, nodes: Sequence[NodeWithScore], scores: Sequence[float]) -> Iterable[Perturbation]:
        """Perturbations to try, in search order (may be lazy and longer than ``max_evaluations``)."""

    async def _goal(
        self, question: str, nodes: List[NodeWithScore], answer: str, regenerator: AnswerRegenerator
    ) -> Tuple[Optional[str], Optional[str]]:
        """(reference, target): a counterfactual differs from the reference, or, with a target, equals it."""
        return answer, None

    def _trivial(self, reference: Optional[str], target: Optional[str], n: int) -> Optional[Perturbation]:
        """An explanation that needs no search (bottom-up: the empty context already gives the target)."""
        return None

    def scores(self, question: str, nodes: Sequence[NodeWithScore], answer: str) -> List[float]:
        """Each evidence's relevance: its retrieval score, the attention the LLM pays to it, or (``none``)
        the same for all, so candidates are tried in prompt order (RAGE without a relevance prior)."""
        if self.relevance == "none":
            return [1.0] * len(nodes)
        if self.relevance == "retrieval":
            return relevance(nodes)
        from llama_index_ragonite.explain.attention import attention_scorer

        scorer = attention_scorer(self.attention, self.llm)
        prompt = AnswerRegenerator(self.llm, self.prompt).prompt_for(question, nodes)
        return scorer.relevance(prompt, nodes, answer)

    async def _aexplain(
        self, question: str, nodes: List[NodeWithScore], answer: str, regenerator: AnswerRegenerator
    ) -> PerturbationReport:
        scores = self.scores(question, nodes, answer)
        reference, target = await self._goal(question, nodes, answer, regenerator)
        wanted = normalize_answer(target if target is not None else reference or "")

        def is_counterfactual(text: str) -> bool:
            return (normalize_answer(text) == wanted) == (target is not None)

        cache: Dict[Tuple[int, ...], str] = {tuple(range(len(nodes))): answer}
        evaluated: List[Perturbation] = []
        explanation = self._trivial(reference, target, len(nodes))
        candidates = iter(self._candidates(nodes, scores)) if explanation is None else iter(())
        while explanation is None and len(evaluated) < self.max_evaluations:
            batch = list(islice(candidates, min(self.max_concurrency, self.max_evaluations - len(evaluated))))
            if not batch:
                break
            await aevaluate(batch, question, nodes, regenerator, is_counterfactual, cache)
            evaluated += batch
            explanation = next((p for p in batch if p.changed), None)
        if explanation is None and target is not None and len(evaluated) < self.max_evaluations:
            explanation = self._exhausted(evaluated, target, answer, len(nodes))
        analysis, errors = None, list(regenerator.errors)  # the search's; the analysis keeps its own
        if self.distribution_size != 0:
            analysis = await aanalyze(
                self.distribution_kind, question, nodes, answer, regenerator, self.distribution_size,
                self.distribution_sample, self.seed, self.min_rule_support, cache,
            )  # fmt: skip
        return PerturbationReport(
            mode=str(cast(Any, self).mode),
            question=question,
            original_answer=answer,
            n_evidences=len(nodes),
            explanation=explanation,
            perturbations=evaluated,
            distribution=analysis.distribution if analysis else [],
            rules=analysis.rules if analysis else [],
            errors=errors,
            reference_answer=reference if target is not None else None,
            target_answer=target,
            analysis=analysis,
            relevance=self.relevance,
            scores=list(scores),
        )

    def _exhausted(self, evaluated: List[Perturbation], target: str, answer: str, n: int) -> Optional[Perturbation]:
        """Every candidate tried, none a counterfactual: what the search knows without them (bottom-up: all)."""
        return None

    def _start_event(self, question: str, nodes: List[NodeWithScore]) -> PerturbationStartEvent:
        return PerturbationStartEvent(mode=str(cast(Any, self).mode), question=question, n_evidences=len(nodes))

    def _end_event(self, result: PerturbationReport, **cost: Any) -> PerturbationEndEvent:
        evaluated, failures = len(result.perturbations), result.failures
        return PerturbationEndEvent(
            mode=str(cast(Any, self).mode), found=result.found, evaluated=evaluated, failures=failures, **cost
        )
