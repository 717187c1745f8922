"""Explain any finished LlamaIndex response: attribute its answer to its source nodes.

Works on ``Response`` (query engines) and ``AgentChatResponse`` (chat engines, ours or
stock): the attribution goes into ``response.metadata["attribution"]`` (JSON form) and onto
each source node (``attribution_share``, ``attribution_cluster`` metadata, hidden from the
LLM and embedding views). Source nodes are copied before they are annotated, so the index's
own node objects never change. ``AttributedQueryEngine`` does this for every query of any
query engine.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import RESPONSE_TYPE
from llama_index.core.schema import QueryBundle

from llama_index_ragonite.explain.attribution import Attribution, BaseAttributor, CounterfactualAttributor

SHARE_KEY, CLUSTER_KEY = "attribution_share", "attribution_cluster"


def _answer(response: Any) -> str:
    text = getattr(response, "response", None)
    if isinstance(text, str) and text.strip():
        return text
    if getattr(response, "response_gen", None) is not None or getattr(response, "chat_stream", None) is not None:
        raise ValueError("Explain a streaming response after its stream has been consumed")
    raise ValueError("The response has no answer text to explain")


def _question(response: Any, question: Optional[str]) -> str:
    question = question or (getattr(response, "metadata", None) or {}).get("completed_question")
    if not question:
        raise ValueError("Pass the question the answer was produced for (question=...)")
    return question


def attach_attribution(response: Any, attribution: Attribution) -> Any:
    """Put ``attribution`` into the response's metadata and onto copies of its source nodes."""
    response.metadata = dict(getattr(response, "metadata", None) or {})
    response.metadata["attribution"] = attribution.to_dict()
    cluster_of: Dict[int, int] = {m: k + 1 for k, c in enumerate(attribution.clusters) for m in c.members}
    annotated = []
    for i, hit in enumerate(response.source_nodes):
        node = hit.node.model_copy(deep=False)
        node.metadata = {**hit.node.metadata, SHARE_KEY: attribution.evidence_shares[i], CLUSTER_KEY: cluster_of.get(i)}
        node.excluded_llm_metadata_keys = [*node.excluded_llm_metadata_keys, SHARE_KEY, CLUSTER_KEY]
        node.excluded_embed_metadata_keys = [*node.excluded_embed_metadata_keys, SHARE_KEY, CLUSTER_KEY]
        annotated.append(hit.model_copy(update={"node": node}))
    response.source_nodes[:] = annotated
    return response


def explain_response(
    response: Any, attributor: Optional[BaseAttributor] = None, question: Optional[str] = None
) -> Attribution:
    """Attribute ``response``'s answer to its source nodes and attach the result (see module doc).

    ``question``: the question the answer was produced for; our chat engine's responses carry
    it (the completed question), other responses need it passed.
    """
    attributor = attributor or CounterfactualAttributor()
    attribution = attributor.attribute(_question(response, question), response.source_nodes, _answer(response))
    attach_attribution(response, attribution)
    return attribution


async def aexplain_response(
    response: Any, attributor: Optional[BaseAttributor] = None, question: Optional[str] = None
) -> Attribution:
    attributor = attributor or CounterfactualAttributor()
    attribution = await attributor.aattribute(_question(response, question), response.source_nodes, _answer(response))
    attach_attribution(response, attribution)
    return attribution


class AttributedQueryEngine(BaseQueryEngine):
    """Wraps any query engine: every response comes back with its attribution attached.

    Give the attributor the LLM (and prompt) the wrapped engine answers with, so the
    counterfactual answers are produced the same way as the original.
    """

    def __init__(self, query_engine: BaseQueryEngine, attributor: Optional[BaseAttributor] = None) -> None:
        self._engine = query_engine
        self._attributor = attributor or CounterfactualAttributor()
        super().__init__(callback_manager=query_engine.callback_manager)

    def _get_prompt_modules(self) -> Dict[str, Any]:
        return {"query_engine": self._engine}

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        response = self._engine.query(query_bundle)
        explain_response(response, self._attributor, query_bundle.query_str)
        return response

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        response = await self._engine.aquery(query_bundle)
        await aexplain_response(response, self._attributor, query_bundle.query_str)
        return response
