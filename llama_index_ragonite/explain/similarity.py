"""``SimilarityAttributor``: the naive baseline of the paper, a softmax over cosine(answer, evidence).

No LLM calls: it says which evidences the answer resembles, not which caused it (the counterfactual
attributor does); kept as the baseline the paper compares against.
"""

from __future__ import annotations

from typing import ClassVar, List

import numpy as np
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.explain.attribution import BaseAttributor
from llama_index_ragonite.explain.math import cosine_matrix, softmax
from llama_index_ragonite.explain.regeneration import AnswerRegenerator
from llama_index_ragonite.explain.results import Attribution, ClusterAttribution
from llama_index_ragonite.prompts import strip_citations

__all__ = ["SimilarityAttributor"]


class SimilarityAttributor(BaseAttributor):
    """The naive baseline: softmax over cosine(answer, evidence). No LLM calls; a heuristic, not a cause."""

    METHOD: ClassVar[str] = "similarity"

    async def _aexplain(
        self, query: str, nodes: List[NodeWithScore], answer: str, regenerator: AnswerRegenerator
    ) -> Attribution:
        clusters = [ClusterAttribution([i], None) for i in range(len(nodes))]
        if nodes:
            evidence = await self.evidence_embeddings(nodes)
            answer_vector = await self.embed_model.aget_query_embedding(strip_citations(answer) or query)
            sims = cosine_matrix(np.asarray([answer_vector]), evidence)[0]
            for c, sim, share in zip(clusters, sims, softmax(sims, self.softmax_temperature)):
                c.contribution, c.share = float(sim), float(share)
        return self._result(query, nodes, answer, clusters)
