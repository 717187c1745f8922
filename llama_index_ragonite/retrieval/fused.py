"""``FusedNode``: a retrieved node with the trace of how fusion ranked it."""

from __future__ import annotations

from typing import Dict, Optional

from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import NodeWithScore

__all__ = ["RERANK", "FusedNode"]

RERANK = "rerank"  # the reranker's ranking, kept beside the sides' (not a side)


class FusedNode(NodeWithScore):
    """A retrieved node with its rank and score on each side; ``score`` is the final (fused) score.

    ``ranks`` and ``scores`` are keyed by side name (``lexical``, ``dense``, ``latent``, ``title``,
    any side you add, and ``rerank``); a side that did not return the node has no key. Ranks are
    1-based. The attributes ``lexical_rank``, ``dense_score``, … of earlier releases stay as
    read-only properties for one release (deprecated: read ``ranks`` and ``scores``).
    """

    ranks: Dict[str, int] = Field(default_factory=dict, description="Side name -> 1-based rank.")
    scores: Dict[str, Optional[float]] = Field(default_factory=dict, description="Side name -> that side's score.")

    @classmethod
    def class_name(cls) -> str:
        return "FusedNode"

    def place(self, side: str, rank: int, score: Optional[float]) -> None:
        self.ranks[side], self.scores[side] = rank, score

    @property
    def side_ranks(self) -> Dict[str, int]:
        """Its rank on each side that returned it (``ranks`` less the reranker's)."""
        return {side: rank for side, rank in self.ranks.items() if side != RERANK}

    # -- read-only names of earlier releases (deprecated, kept for one release) --
    @property
    def lexical_rank(self) -> Optional[int]:
        return self.ranks.get("lexical")

    @property
    def lexical_score(self) -> Optional[float]:
        return self.scores.get("lexical")

    @property
    def dense_rank(self) -> Optional[int]:
        return self.ranks.get("dense")

    @property
    def dense_score(self) -> Optional[float]:
        return self.scores.get("dense")

    @property
    def latent_rank(self) -> Optional[int]:
        return self.ranks.get("latent")

    @property
    def latent_score(self) -> Optional[float]:
        return self.scores.get("latent")

    @property
    def title_rank(self) -> Optional[int]:
        return self.ranks.get("title")

    @property
    def title_score(self) -> Optional[float]:
        return self.scores.get("title")

    @property
    def rerank_rank(self) -> Optional[int]:
        return self.ranks.get(RERANK)

    @property
    def rerank_score(self) -> Optional[float]:
        return self.scores.get(RERANK)
