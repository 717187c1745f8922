"""RAGE's answer-distribution analysis, separate from the search for an explanation.

The search (``perturbations.py``) stops at the first perturbation that changes the answer, so
the answers it saw depend on where it stopped. The distribution answers another question —
over a fixed population of perturbations, which answers come out and how often — so it is
computed over that population alone:

* combinations: every removal (``mode="remove"``) or retention (``"keep"``) of 1 to
  ``max_size`` evidences; permutations: every ordering with 1 to ``max_size`` inversions
  (Kendall distance) to the original (``max_size=None``: every subset or ordering);
* or a seeded uniform random sample of ``sample`` of them (same seed, same sample).

The population is enumerated (or sampled) before any LLM call and reported in its own order,
so the result depends only on the evidences, ``max_size``, ``sample`` and ``seed`` — never on
``max_concurrency``, which only sets how many of the calls run at once. It carries the
distribution (pie chart), the groupings table (answer → the perturbations that gave it) and
the answer rules.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from itertools import combinations
from math import comb
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Literal, Optional, Sequence, Tuple, Union

from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.events import PerturbationEndEvent, PerturbationStartEvent
from llama_index_ragonite.explain.answers import (
    AnswerRule,
    AnswerShare,
    Perturbation,
    PerturbationCounts,
    answer_distribution,
    answer_groups,
    answer_rules,
    short_answer,
)
from llama_index_ragonite.explain.base import BaseExplainer, JSONResult
from llama_index_ragonite.explain.charts import answer_pie
from llama_index_ragonite.explain.kendall import (
    mahonian,
    orderings_with_inversions,
    random_ordering_with_inversions,
    tau_of_inversions,
)
from llama_index_ragonite.explain.regeneration import AnswerRegenerator, normalize_answer

__all__ = ["AnswerDistribution", "AnswerDistributionAnalyzer", "aevaluate", "population", "population_size"]

POPULATION_LIMIT = 100_000  # larger populations are only sampled, never enumerated
Kind = Literal["remove", "keep", "reorder"]


def _top(kind: str, n: int, max_size: Optional[int]) -> int:
    most = n * (n - 1) // 2 if kind == "reorder" else n
    return most if max_size is None else min(max_size, most)


def _level_sizes(kind: str, n: int, max_size: Optional[int]) -> List[int]:
    """How many perturbations the population holds at each size (inversion count) 1..top."""
    if kind == "reorder":
        counts = mahonian(n)[n]
        return [counts[d] for d in range(1, _top(kind, n, max_size) + 1)]
    return [comb(n, size) for size in range(1, _top(kind, n, max_size) + 1)]


def population_size(kind: str, n: int, max_size: Optional[int]) -> int:
    """The number of perturbations in the population (see the module doc)."""
    return sum(_level_sizes(kind, n, max_size))


def _level(kind: str, n: int, size: int) -> Iterator[Tuple[int, ...]]:
    return orderings_with_inversions(n, size) if kind == "reorder" else combinations(range(n), size)


def _draw(kind: str, n: int, size: int, rng: random.Random) -> Tuple[int, ...]:
    if kind == "reorder":
        return random_ordering_with_inversions(n, size, rng)
    return tuple(sorted(rng.sample(range(n), size)))


def population(
    kind: str, n: int, max_size: Optional[int] = 2, sample: Optional[int] = None, seed: int = 0
) -> List[Tuple[int, int, Tuple[int, ...]]]:
    """The population as (size, index-in-level, subset or ordering), in population order.

    ``sample``: a seeded uniform sample of that many (all when the population is smaller).
    Without ``sample`` a population over ``POPULATION_LIMIT`` is refused (a ``ValueError``).
    """
    sizes = _level_sizes(kind, n, max_size)
    total = sum(sizes)
    if sample is None or sample >= total:
        if total > POPULATION_LIMIT:
            raise ValueError(f"{total} perturbations are too many to try all: give a sample size (sample=)")
        return [(s, i, item) for s in range(1, len(sizes) + 1) for i, item in enumerate(_level(kind, n, s))]
    rng = random.Random(seed)
    if total <= POPULATION_LIMIT:
        chosen = sorted(rng.sample(range(total), sample))
        everything = population(kind, n, max_size)
        return [everything[i] for i in chosen]
    drawn: Dict[Tuple[int, ...], int] = {}
    while len(drawn) < sample:  # a size by its share of the population, then uniformly within it
        size = rng.choices(range(1, len(sizes) + 1), weights=sizes)[0]
        drawn.setdefault(_draw(kind, n, size, rng), size)
    return sorted((size, 0, item) for item, size in drawn.items())


def perturbation(kind: str, n: int, item: Tuple[int, ...], origin: str = "") -> Perturbation:
    """The perturbation that removes, keeps only, or puts in this order the evidences ``item``."""
    if kind == "reorder":
        inversions = sum(1 for i in range(n) for j in range(i + 1, n) if item[i] > item[j])
        return Perturbation("reorder", evidences=item, kendall_tau=tau_of_inversions(inversions, n), origin=origin)
    rest = tuple(i for i in range(n) if i not in item)
    if kind == "remove":
        return Perturbation("remove", evidences=rest, removed=item)
    return Perturbation("keep", evidences=item, removed=rest)


async def aevaluate(
    perturbations: Sequence[Perturbation],
    question: str,
    nodes: Sequence[NodeWithScore],
    regenerator: AnswerRegenerator,
    is_counterfactual: Callable[[str], bool],
    cache: Optional[Dict[Tuple[int, ...], str]] = None,
) -> None:
    """Answer each perturbation (concurrently, under the regenerator's bound) and mark the counterfactuals.

    ``cache``: answers already known by prompt (the evidences in prompt order); the new ones are added.
    """
    cache = {} if cache is None else cache
    todo = [p for p in perturbations if p.evidences not in cache]
    unique = list(dict.fromkeys(p.evidences for p in todo))
    answers = await regenerator.aanswer_many(question, [[nodes[i] for i in order] for order in unique], among=nodes)
    cache.update({order: text for order, text in zip(unique, answers) if text is not None})
    failed = {order for order, text in zip(unique, answers) if text is None}
    for p in perturbations:
        p.answer = None if p.evidences in failed else cache.get(p.evidences)
        p.changed = p.answer is not None and is_counterfactual(p.answer)


@dataclass
class AnswerDistribution(PerturbationCounts, JSONResult):
    """What answers a population of perturbations gives: shares, groupings, rules (see the module doc)."""

    kind: str  # "remove", "keep" or "reorder"
    question: str
    original_answer: str
    n_evidences: int
    max_size: Optional[int]
    sample: Optional[int]
    seed: int
    population: int  # perturbations in the population sampled from
    perturbations: List[Perturbation]  # in population order
    distribution: List[AnswerShare]
    rules: List[AnswerRule]
    llm_calls: int = 0
    wall_time_s: float = 0.0
    errors: List[str] = field(default_factory=list)

    @property
    def noun(self) -> str:
        return "orderings" if self.kind == "reorder" else "combinations"

    @property
    def groupings(self) -> List[Tuple[AnswerShare, List[Perturbation]]]:
        """The groupings table: each answer (most frequent first) with the perturbations that gave it."""
        return answer_groups(self.perturbations, self.distribution)

    def describe_population(self) -> str:
        limit = "any number of" if self.max_size is None else f"up to {self.max_size}"
        what = {
            "remove": f"all removals of {limit} evidences",
            "keep": f"all retentions of {limit} evidences",
            "reorder": f"all orderings with {limit} inversions",
        }[self.kind]
        if len(self.perturbations) < self.population:
            return f"a random sample (seed {self.seed}) of {len(self.perturbations)} of {self.population}: {what}"
        return what

    def lines(self, groupings: int = 3) -> List[str]:
        """The text view's lines: distribution, groupings (``groupings`` perturbations each), rules."""
        failed = f", {self.failures} failed" if self.failures else ""
        lines = [
            f"Answer distribution over {len(self.perturbations)} {self.noun} ({self.describe_population()}){failed}:",
            "  count   share  answer",
        ]
        for s in self.distribution:
            mark = "  (original)" if s.original else ""
            lines.append(f"  {s.count:5d}  {s.share:6.1%}  {short_answer(s.text)}{mark}")
        if self.distribution:
            lines.append("Answer groupings:")
            for share, members in self.groupings:
                shown = "; ".join(p.describe() for p in members[:groupings])
                more = f"; … {len(members) - groupings} more" if len(members) > groupings else ""
                lines.append(f"  '{short_answer(share.text, 50)}': {shown}{more}")
        if self.rules:
            lines += ["Rules:"] + [f"  - {r.text}" for r in self.rules]
        return lines

    def to_text(self) -> str:
        head = [f"RAGE answer distribution for: {self.question}", f"Original answer: {self.original_answer}"]
        return "\n".join(head + self.lines() + [f"LLM calls: {self.llm_calls}, wall time: {self.wall_time_s:.2f} s"])

    def to_dict(self) -> Dict[str, Any]:
        """JSON-serializable form (indices 0-based, aligned with the explained nodes)."""
        return {
            **self._fields("kind", "question", "original_answer", "n_evidences", "max_size", "sample", "seed"),
            "population": self.population,
            "description": self.describe_population(),
            "perturbations": [p.to_dict() for p in self.perturbations],
            "distribution": [asdict(s) for s in self.distribution],
            "groupings": [
                {"answer": s.text, "original": s.original, "count": s.count, "perturbations": [p.describe() for p in m]}
                for s, m in self.groupings
            ],
            "rules": [{**asdict(r), "evidences": list(r.evidences)} for r in self.rules],
            **self._fields("llm_calls", "wall_time_s", "failures", "complete"),
            "errors": list(self.errors),
        }

    def plot(self, path: Union[str, Path]) -> Path:
        """Pie chart of the answer distribution, PNG or SVG by the file extension."""
        return answer_pie(self.distribution, f"Answers over {self.describe_population()}", path)


async def aanalyze(
    kind: str,
    question: str,
    nodes: Sequence[NodeWithScore],
    answer: str,
    regenerator: AnswerRegenerator,
    max_size: Optional[int] = 2,
    sample: Optional[int] = None,
    seed: int = 0,
    min_rule_support: int = 2,
    cache: Optional[Dict[Tuple[int, ...], str]] = None,
) -> AnswerDistribution:
    """The distribution of the answers over the population (``cache``: answers already known by prompt)."""
    n, earlier_errors = len(nodes), len(regenerator.errors)
    cache = dict(cache or {})
    cache.setdefault(tuple(range(n)), answer)  # the unperturbed prompt
    members = [perturbation(kind, n, item) for _, _, item in population(kind, n, max_size, sample, seed)]
    original = normalize_answer(answer)
    await aevaluate(members, question, nodes, regenerator, lambda text: normalize_answer(text) != original, cache)
    shares = answer_distribution(members, answer)
    return AnswerDistribution(
        kind=kind,
        question=question,
        original_answer=answer,
        n_evidences=n,
        max_size=max_size,
        sample=sample,
        seed=seed,
        population=population_size(kind, n, max_size),
        perturbations=members,
        distribution=shares,
        rules=answer_rules(members, shares, min_rule_support),
        errors=regenerator.errors[earlier_errors:],
    )


class AnswerDistributionAnalyzer(BaseExplainer):
    """The answer distribution over all removals, retentions or orderings up to ``max_size``, or a sample.

    Args:
        llm: the LLM that answered (default: ``Settings.llm`` when set, else the offline ``ExtractiveAnswerer``).
        kind: ``"remove"`` / ``"keep"`` (combinations) or ``"reorder"`` (permutations).
        max_size: at most this many evidences removed or kept, or inversions; ``None``: no bound.
        sample: a seeded random sample of this many perturbations instead of all.
    """

    kind: Literal["remove", "keep", "reorder"] = Field(default="remove", description="What the perturbations do.")
    max_size: Optional[int] = Field(default=2, ge=1, description="Largest set (or inversion count); None: all.")
    sample: Optional[int] = Field(default=None, ge=1, description="A random sample of this many instead of all.")
    seed: int = Field(default=0, description="Seed of the sample (same seed, same perturbations).")
    min_rule_support: int = Field(default=2, ge=1, description="Rules for answers given at least this often.")

    async def _aexplain(
        self, question: str, nodes: List[NodeWithScore], answer: str, regenerator: AnswerRegenerator
    ) -> AnswerDistribution:
        return await aanalyze(
            self.kind,
            question,
            nodes,
            answer,
            regenerator,
            self.max_size,
            self.sample,
            self.seed,
            self.min_rule_support,
        )

    def _start_event(self, question: str, nodes: List[NodeWithScore]) -> PerturbationStartEvent:
        return PerturbationStartEvent(mode=f"distribution:{self.kind}", question=question, n_evidences=len(nodes))

    def _end_event(self, result: AnswerDistribution, **cost: Any) -> PerturbationEndEvent:
        evaluated = len(result.perturbations)
        return PerturbationEndEvent(
            mode=f"distribution:{self.kind}", found=False, evaluated=evaluated, failures=result.failures, **cost
        )
