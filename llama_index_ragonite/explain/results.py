"""The attributors' result: how much each evidence (and cluster of evidences) caused an answer.

``Attribution`` follows the results protocol of ``explain.base`` (text, dict, JSON, chart);
``ClusterAttribution`` is one cluster's share and the counterfactual answers behind it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.explain.base import JSONResult
from llama_index_ragonite.explain.charts import attribution_chart

__all__ = ["Attribution", "ClusterAttribution"]


@dataclass
class ClusterAttribution:
    """One cluster of evidences and what removing it did to the answer."""

    members: List[int]  # 0-based positions in ``Attribution.nodes``
    share: Optional[float]  # None when the cluster failed
    contribution: Optional[float] = None  # 1 - mean similarity (the attributor's raw score)
    counterfactual_answers: List[Optional[str]] = field(default_factory=list)
    similarities: List[float] = field(default_factory=list)
    error: Optional[str] = None  # why the cluster failed

    @property
    def failed(self) -> bool:
        return self.error is not None

    def label(self, number: int) -> str:
        return f"cluster {number} [Evidence {', '.join(str(m + 1) for m in self.members)}]"


@dataclass
class Attribution(JSONResult):
    """How much each evidence (and cluster of evidences) caused an answer.

    ``evidence_shares`` is aligned with ``nodes`` (the evidences in prompt order); an
    entry is ``None`` when its cluster failed. ``settings`` records every parameter used,
    so a reported number always says how it was computed.
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

    @property
    def counterfactual_answers(self) -> List[List[Optional[str]]]:
        """Per cluster (same order as ``clusters``), the answers regenerated without it."""
        return [c.counterfactual_answers for c in self.clusters]

    @property
    def failed_clusters(self) -> List[int]:
        """0-based indices of clusters whose LLM calls failed."""
        return [i for i, c in enumerate(self.clusters) if c.failed]

    def ranking(self) -> List[int]:
        """Evidence positions by decreasing share (ties: prompt order); failed evidences last."""
        return sorted(
            range(len(self.nodes)),
            key=lambda i: (self.evidence_shares[i] is None, -(self.evidence_shares[i] or 0.0), i),
        )

    @property
    def top_evidence(self) -> Optional[int]:
        """The position of the most attributed evidence (None if there is none)."""
        ranked = [i for i in self.ranking() if self.evidence_shares[i] is not None]
        return ranked[0] if ranked else None

    def to_text(self) -> str:
        """The paper's form, one line per cluster, largest share first."""
        order = sorted(
            range(len(self.clusters)),
            key=lambda i: (self.clusters[i].failed, -(self.clusters[i].share or 0.0), i),
        )
        lines = []
        for i in order:
            c = self.clusters[i]
            if c.failed:
                lines.append(f"Not attributed: {c.label(i + 1)}: the LLM call failed ({c.error})")
            else:
                lines.append(f"Attributed {100 * c.share:.2f}% to {c.label(i + 1)}")
        return "\n".join(lines)

    def to_dict(self) -> Dict[str, Any]:
        """A JSON-serializable form (evidences by node id, page URL and title)."""
        return {
            **self._fields("method", "question", "answer"),
            "evidences": [
                {
                    "position": i + 1,
                    "node_id": n.node.node_id,
                    "url": n.node.metadata.get("url"),
                    "title": n.node.metadata.get("title"),
                    "share": self.evidence_shares[i],
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
                }
                for i, c in enumerate(self.clusters)
            ],
            **self._fields("llm_calls", "wall_time_s", "settings"),
        }

    def plot(self, path: Union[str, Path]) -> Path:
        """A bar chart of the cluster shares with evidence labels; PNG or SVG by the file extension."""
        return attribution_chart(self, path)
