"""The attributors' result: how much each evidence (and cluster of evidences) caused an answer.

``Attribution`` follows the results protocol of ``explain.base`` (text, dict, JSON, chart);
``ClusterAttribution`` is one cluster's share and the counterfactual answers behind it.

Failed LLM calls never hide: a cluster whose call failed (or, for the surrogate, whose weight
the answered masks cannot identify) gets no share (``None``), keeps its place in the softmax at
the smallest contribution (0: as if its removal changed nothing), and the others are *not*
renormalised over the survivors. Their shares are therefore upper bounds (the failed cluster's
true contribution is ≥ 0, which can only lower them), they sum to less than 1, and the rest,
``unattributed_share``, is the least the failed clusters hold together. ``complete`` says whether
anything failed, and ``to_text`` / ``to_dict`` / ``plot`` say so first. A run with no failure
is exactly the plain softmax.

Ties are reported, never hidden: ``tied_top`` lists every evidence with the top share, ``to_text``
ends with a "Tie at the top" line, and the order inside a tie is the tie-break signal's
(``tie_signal``, named by ``tie_break``: the retrieval score by default, recorded by the
counterfactual attributor) — prompt order only where that signal ties too (``unresolved_top``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, List, Optional, Union, cast

from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.explain.base import JSONResult
from llama_index_ragonite.explain.charts import attribution_chart
from llama_index_ragonite.explain.spans import ClaimAttribution

__all__ = ["AttachedAttribution", "Attribution", "ClusterAttribution"]


@dataclass
class ClusterAttribution:
    """One cluster of evidences and what removing it did to the answer."""

    members: List[int]  # 0-based positions in ``Attribution.nodes``
    share: Optional[float]  # None when the cluster failed
    contribution: Optional[float] = None  # 1 - mean similarity (the attributor's raw score)
    counterfactual_answers: List[Optional[str]] = field(default_factory=list)
    similarities: List[float] = field(default_factory=list)
    error: Optional[str] = None  # why the cluster failed
    tie_signal: Optional[float] = None  # the tie-break signal of its best member (``Attribution.tie_break``)

    @property
    def failed(self) -> bool:
        return self.error is not None

    def label(self, number: int) -> str:
        return f"cluster {number} [Evidence {', '.join(str(m + 1) for m in self.members)}]"


@dataclass
class Attribution(JSONResult):
    """How much each evidence (and cluster of evidences) caused an answer.

    ``evidence_shares`` is aligned with ``nodes`` (the evidences in prompt order); an
    entry is ``None`` when its cluster failed, and then the other shares are upper bounds
    that sum to less than 1 (see the module doc, ``complete`` and ``unattributed_share``).
    ``settings`` records every parameter used, so a reported number always says how it was
    computed. ``n_masks`` / ``failed_masks`` / ``min_masks``: the surrogate's masks, those whose
    call failed (mask index -> error) and how many answered masks a fit needs (0 otherwise).
    """

    method: str  # "counterfactual", "similarity" or "surrogate"
    question: str
    answer: str
    nodes: List[NodeWithScore]
    evidence_shares: List[Optional[float]]
    clusters: List[ClusterAttribution]
    llm_calls: int = 0
    wall_time_s: float = 0.0
    settings: Dict[str, Any] = field(default_factory=dict)
    n_masks: int = 0
    failed_masks: Dict[int, str] = field(default_factory=dict)
    min_masks: int = 0
    tie_signal: List[Optional[float]] = field(default_factory=list)  # per evidence: orders equal shares
    tie_break: Optional[str] = None  # what ``tie_signal`` is, in words ("retrieval score"); None: prompt order
    claims: List[ClaimAttribution] = field(default_factory=list)  # per claim of the answer (``spans.py``)

    def _signal(self, i: int) -> float:
        """Evidence ``i``'s tie-break signal, rounded to 1e-9 so that copies of one text (equal up to
        rounding) stay tied; -inf when none was recorded: prompt order decides."""
        known = i < len(self.tie_signal) and self.tie_signal[i] is not None
        return round(float(cast(float, self.tie_signal[i])), 9) if known else -math.inf

    @property
    def counterfactual_answers(self) -> List[List[Optional[str]]]:
        """Per cluster (same order as ``clusters``), the answers regenerated without it."""
        return [c.counterfactual_answers for c in self.clusters]

    @property
    def failed_clusters(self) -> List[int]:
        """0-based indices of clusters whose LLM calls failed."""
        return [i for i, c in enumerate(self.clusters) if c.failed]

    @property
    def failed_evidences(self) -> List[int]:
        """0-based positions of the evidences of failed clusters (their share is ``None``)."""
        return sorted(m for c in self.clusters if c.failed for m in c.members)

    @property
    def complete(self) -> bool:
        """True when no LLM call failed: every cluster has a share and the shares are the full softmax."""
        return not self.failed_clusters and not self.failed_masks

    @property
    def unattributed_share(self) -> float:
        """1 − the clusters' shares: the least the failed clusters hold together (0.0 when none failed)."""
        if not self.failed_clusters:
            return 0.0
        return max(0.0, 1.0 - math.fsum(c.share for c in self.clusters if c.share is not None))

    def incompleteness(self) -> Optional[str]:
        """What failed, in one sentence (the first line of ``to_text``); ``None`` when complete."""
        if self.complete:
            return None
        notes = []
        if self.failed_masks:
            failed, answered = len(self.failed_masks), self.n_masks - len(self.failed_masks)
            error = list(self.failed_masks.values())[-1]
            if answered < self.min_masks:
                return (
                    f"Not computed: only {answered} of {self.n_masks} masks answered "
                    f"(at least {self.min_masks} needed); {failed} failed ({error})."
                )
            notes.append(
                f"{failed} of {self.n_masks} masks failed ({error}); the fit on the {answered} answered "
                f"masks is still valid (at least {self.min_masks} needed)"
            )
        failed_clusters = self.failed_clusters
        if failed_clusters:
            which = "; ".join(f"{self.clusters[i].label(i + 1)} ({self.clusters[i].error})" for i in failed_clusters)
            notes.append(
                f"{len(failed_clusters)} of {len(self.clusters)} clusters failed: {which}. Failed clusters get "
                f"no share and the others are upper bounds, not renormalised: "
                f"{100 * self.unattributed_share:.2f}% of the answer is left unattributed"
            )
        return "Incomplete: " + "; ".join(notes) + "."

    def shared_note(self, cluster: ClusterAttribution) -> Optional[str]:
        """How a cluster of near-duplicates holds its share ("near-duplicates, 24.50% each"); ``None``
        for one evidence. Split (the default) each member holds its part and the evidences' shares sum
        to 1; inherited (``spread="inherit"``) each shows the whole share."""
        if len(cluster.members) < 2 or cluster.share is None:
            return None
        if self.settings.get("spread") == "inherit":
            return "near-duplicates, each shown with the whole share"
        return f"near-duplicates, {100 * cluster.share / len(cluster.members):.2f}% each"

    def _cluster_signal(self, k: int) -> float:
        signal = self.clusters[k].tie_signal
        return round(signal, 9) if signal is not None else -math.inf

    def ranking(self) -> List[int]:
        """Evidence positions by decreasing share; equal shares by decreasing ``tie_signal`` (the
        tie-break signal), then prompt order; failed evidences last."""
        return sorted(
            range(len(self.nodes)),
            key=lambda i: (self.evidence_shares[i] is None, -(self.evidence_shares[i] or 0.0), -self._signal(i), i),
        )

    @property
    def top_evidence(self) -> Optional[int]:
        """The position of the most attributed evidence (None if there is none).

        A tie goes to the evidence with the highest ``tie_signal`` (when recorded, e.g. the
        retrieval score), else to the first in prompt order: ``tied_top`` lists every evidence with the
        top share, ``unresolved_top`` those prompt order had to choose from. On an incomplete attribution this is the top among the attributed
        evidences; a failed cluster may have caused more (see ``complete``).
        """
        ranked = [i for i in self.ranking() if self.evidence_shares[i] is not None]
        return ranked[0] if ranked else None

    @property
    def tied_top(self) -> List[int]:
        """The positions of every evidence with the top share (more than one: a tie; the
        members of one cluster share its share under ``spread="inherit"``); [] if none."""
        known = [s for s in self.evidence_shares if s is not None]
        if not known:
            return []
        top = max(known)
        return [i for i, s in enumerate(self.evidence_shares) if s is not None and math.isclose(s, top, abs_tol=1e-12)]

    @property
    def unresolved_top(self) -> List[int]:
        """The evidences of ``tied_top`` that the tie-break signal cannot tell apart either (more than
        one: prompt order chose ``top_evidence``); ``tied_top`` itself when no signal was recorded."""
        tied = self.tied_top
        if not tied:
            return []
        best = max(self._signal(i) for i in tied)
        return [i for i in tied if self._signal(i) == best]

    def tie_note(self) -> Optional[str]:
        """One sentence on a tie at the top (the last line of ``to_text``); ``None`` without a tie."""
        tied = self.tied_top
        if len(tied) < 2:
            return None
        names = ", ".join(f"Evidence {i + 1}" for i in tied)
        note = f"Tie at the top: {names} have the same share ({100 * (self.evidence_shares[tied[0]] or 0.0):.2f}%)"
        unresolved = self.unresolved_top
        if len(unresolved) < 2:
            return f"{note}; ranked by {self.tie_break}: Evidence {cast(int, self.top_evidence) + 1} first."
        if self.tie_break is None:
            return f"{note}; the order among them is prompt order, not a finding."
        which = ", ".join(f"Evidence {i + 1}" for i in unresolved)
        return f"{note}; {which} are not told apart by {self.tie_break} either (prompt order)."

    def to_text(self) -> str:
        """The paper's form, one line per cluster, largest share first; first, when anything
        failed, the ``incompleteness`` line ("Incomplete: 1 of 8 clusters failed: …")."""
        order = sorted(
            range(len(self.clusters)),
            key=lambda i: (self.clusters[i].failed, -(self.clusters[i].share or 0.0), -self._cluster_signal(i), i),
        )
        lines = [cast(str, self.incompleteness())] if not self.complete else []
        for i in order:
            c = self.clusters[i]
            if c.failed:
                lines.append(f"Not attributed: {c.label(i + 1)}: the LLM call failed ({c.error})")
            else:
                shared = self.shared_note(c)
                lines.append(
                    f"Attributed {100 * (c.share or 0.0):.2f}% to {c.label(i + 1)}" + (f" ({shared})" if shared else "")
                )
        tie = self.tie_note()
        return "\n".join(lines + ([tie] if tie else []) + self.claim_lines())

    def claim_lines(self) -> List[str]:
        """One line per claim when the answer makes more than one: its text and its top evidences."""
        if len(self.claims) < 2:
            return []
        lines = ["Per claim:"]
        for number, claim in enumerate(self.claims, 1):
            known = {i: s for i, s in enumerate(claim.shares) if s is not None}
            ranked = sorted(known, key=lambda i: -known[i])
            best = ", ".join(f"Evidence {i + 1} {100 * known[i]:.2f}%" for i in ranked[:2])
            lines.append(f'  {number}. "{claim.text}": {best or "not attributed"}')
        return lines

    def to_dict(self) -> Dict[str, Any]:
        """A JSON-serializable form (evidences by node id, page URL and title; numbers 1-based)."""
        return {
            **self._fields("method", "question", "answer", "complete"),
            "incomplete": self.incompleteness(),
            "failed_clusters": [i + 1 for i in self.failed_clusters],
            "failed_evidences": [i + 1 for i in self.failed_evidences],
            "unattributed_share": self.unattributed_share,
            "tied_top": [i + 1 for i in self.tied_top],
            "unresolved_top": [i + 1 for i in self.unresolved_top],
            "tie": self.tie_note(),
            "tie_break": self.tie_break,
            "evidences": [
                {
                    "position": i + 1,
                    "node_id": n.node.node_id,
                    "url": n.node.metadata.get("url"),
                    "title": n.node.metadata.get("title"),
                    "share": self.evidence_shares[i],
                    "tie_signal": self.tie_signal[i] if i < len(self.tie_signal) else None,
                }
                for i, n in enumerate(self.nodes)
            ],
            "clusters": [
                {
                    "cluster": i + 1,
                    "evidences": [m + 1 for m in c.members],
                    "share": c.share,
                    "contribution": c.contribution,
                    "similarities": c.similarities,
                    "counterfactual_answers": c.counterfactual_answers,
                    "error": c.error,
                    "tie_signal": c.tie_signal,
                    "shared": self.shared_note(c),
                }
                for i, c in enumerate(self.clusters)
            ],
            "claims": [c.to_dict() for c in self.claims],
            **self._fields("n_masks", "min_masks"),
            "failed_masks": len(self.failed_masks),  # which: settings["fit"]["failed_masks"]
            **self._fields("llm_calls", "wall_time_s", "settings"),
        }

    def plot(self, path: Union[str, Path]) -> Path:
        """A bar chart of the cluster shares with evidence labels; PNG or SVG by the file extension."""
        return attribution_chart(self, path)


def _field_values(attribution: Attribution) -> Dict[str, Any]:
    return {f.name: getattr(attribution, f.name) for f in fields(Attribution)}


def _read_only(self: Any, *args: Any, **kwargs: Any) -> None:
    raise TypeError("an attached Attribution is read-only: its mapping is the attribution's JSON form (to_dict())")


class AttachedAttribution(Attribution, dict):
    """The ``Attribution`` a response carries in ``metadata["attribution"]``: the attribution itself
    (``to_text()``, ``evidence_shares``, ``plot``) and, read-only, the mapping of its JSON form
    (``["evidences"]``), so ``json.dumps(response.metadata)`` keeps working and code that read the
    dict before keeps reading it. Built by ``attach``; pickles as a plain ``Attribution`` re-attached.
    The mapping is taken when it is built (``dataclasses.replace`` builds a new one). Serializers that
    walk dataclasses (pydantic's, FastAPI's ``jsonable_encoder``) see the fields, not the mapping: give
    them ``to_dict()``."""

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _read_only  # type: ignore[assignment]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        Attribution.__init__(self, *args, **kwargs)
        dict.update(self, self.to_dict())  # a snapshot: later changes to the fields do not reach it

    @classmethod
    def attach(cls, attribution: Attribution) -> "AttachedAttribution":
        return cls(**_field_values(attribution))

    def detached(self) -> Attribution:
        """The plain ``Attribution`` (not a mapping)."""
        return Attribution(**_field_values(self))

    def __reduce__(self):
        return (AttachedAttribution.attach, (self.detached(),))
