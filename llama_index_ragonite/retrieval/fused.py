"""``FusedNode``: a retrieved node with the trace of how fusion ranked it."""

from __future__ import annotations

from typing import Dict, Optional

from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import NodeWithScore

__all__ = ["FusedNode"]


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

    # -- read-only names of earlier releases (deprecated, kept for one release) --
    lexical_rank = property(lambda self: self.ranks.get("lexical"))
    lexical_score = property(lambda self: self.scores.get("lexical"))
    dense_rank = property(lambda self: self.ranks.get("dense"))
    dense_score = property(lambda self: self.scores.get("dense"))
    latent_rank = property(lambda self: self.ranks.get("latent"))
    latent_score = property(lambda self: self.scores.get("latent"))
    title_rank = property(lambda self: self.ranks.get("title"))
    title_score = property(lambda self: self.scores.get("title"))
    rerank_rank = property(lambda self: self.ranks.get("rerank"))
    rerank_score = property(lambda self: self.scores.get("rerank"))
