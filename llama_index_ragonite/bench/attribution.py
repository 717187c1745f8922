"""Attribution accuracy inside benchmark runs: which evidence each attributor puts on top.

``ragonite bench --attribution counterfactual+clusters`` explains every answer of a run with
the run's own LLM, embedding model and index vectors; the report then gives, per method, how
often the top-attributed evidence's page is gold (over questions whose gold page was retrieved).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Sequence

if TYPE_CHECKING:  # the attributors load LlamaIndex: imported when one is made, not for ``ragonite bench --help``
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.llms.llm import LLM

    from llama_index_ragonite.bench.runner import AttributionHook
    from llama_index_ragonite.explain.attribution import BaseAttributor


def _naive(**kw: Any) -> BaseAttributor:
    from llama_index_ragonite.explain.similarity import SimilarityAttributor

    return SimilarityAttributor(**kw)


def _counterfactual(**kw: Any) -> BaseAttributor:
    from llama_index_ragonite.explain.attribution import CounterfactualAttributor

    return CounterfactualAttributor(cluster=False, **kw)


def _counterfactual_clusters(**kw: Any) -> BaseAttributor:
    from llama_index_ragonite.explain.attribution import CounterfactualAttributor

    return CounterfactualAttributor(**kw)


def _surrogate(**kw: Any) -> BaseAttributor:
    from llama_index_ragonite.explain.surrogate import SurrogateAttributor

    return SurrogateAttributor(**kw)


METHODS: Dict[str, Callable[..., BaseAttributor]] = {
    "naive": _naive,
    "counterfactual": _counterfactual,
    "counterfactual+clusters": _counterfactual_clusters,
    "surrogate": _surrogate,
}


def attribution_hook(
    methods: Sequence[str], llm: LLM, embed_model: BaseEmbedding, embedding_lookup=None
) -> AttributionHook:
    """(question, response) -> {method: URL of the top-attributed evidence ("" when none)}."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"Unknown attribution method(s) {unknown}; choose from {sorted(METHODS)}")
    attributors = {
        m: METHODS[m](llm=llm, embed_model=embed_model, embedding_lookup=embedding_lookup)
        for m in dict.fromkeys(methods)
    }

    def hook(question, response) -> Dict[str, str]:
        out = {}
        for name, attributor in attributors.items():
            result = attributor.attribute(response.completed_question, response.source_nodes, response.response)
            top = result.top_evidence
            out[name] = "" if top is None else response.source_nodes[top].node.metadata.get("url", "")
        return out

    return hook
