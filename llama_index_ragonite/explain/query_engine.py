"""Explain any finished LlamaIndex response: attribute its answer to its source nodes.

``explain_response`` works on ``Response`` (query engines) and ``AgentChatResponse`` (chat
engines, ours or stock); the attribution goes where ``annotation.py`` puts it. Pass the
attributor the LLM and prompt the answer came from (``from_engine`` does for our chat engine).

``AttributedQueryEngine`` attributes every response of a query engine: for a
``RetrieverQueryEngine`` (what ``index.as_query_engine`` returns) it is the same engine with
its synthesizer wrapped in ``AttributedSynthesizer``, so the counterfactual answers come from
the engine's own synthesizer; any other engine needs an attributor given the LLM and prompt
it answers with.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import RESPONSE_TYPE
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import QueryBundle

from llama_index_ragonite.compat import llama_index_core
from llama_index_ragonite.explain.annotation import CLUSTER_KEY, SHARE_KEY, attach_attribution
from llama_index_ragonite.explain.attribution import Attribution, BaseAttributor, CounterfactualAttributor
from llama_index_ragonite.explain.synthesizer import AttributedSynthesizer
from llama_index_ragonite.prompts import is_out_of_scope

__all__ = [
    "CLUSTER_KEY",
    "NO_EVIDENCE",
    "OUT_OF_SCOPE_ANSWER",
    "SHARE_KEY",
    "AttributedQueryEngine",
    "aexplain_response",
    "attach_attribution",
    "explain_response",
    "nothing_to_explain",
]

OUT_OF_SCOPE_ANSWER = "This answer is out of scope: it rests on no evidence, so there is nothing to explain"
NO_EVIDENCE = "This answer used no evidence: there is nothing to explain"


def nothing_to_explain(answer: str, n_evidences: int, out_of_scope: Optional[bool] = None) -> Optional[str]:
    """Why an answer has nothing to explain, in the words the web API and ``ragonite chat`` share; None if it has.

    An out-of-scope answer rests on no evidence: removing any one leaves it as it is, so counterfactual
    shares come out uniform and would read as if every evidence counted alike. ``out_of_scope``: as
    recorded with the answer (the API's stored turn), else read from ``answer``.
    """
    if is_out_of_scope(answer) if out_of_scope is None else out_of_scope:
        return OUT_OF_SCOPE_ANSWER
    return NO_EVIDENCE if not n_evidences else None


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


def explain_response(
    response: Any, attributor: Optional[BaseAttributor] = None, question: Optional[str] = None
) -> Attribution:
    """Attribute ``response``'s answer to its source nodes and attach the result (see module doc).

    ``question``: the question the answer was produced for; our chat engine's responses carry
    it (the completed question), other responses need it passed.
    """
    attributor = attributor or CounterfactualAttributor()
    attribution = attributor.attribute(_question(response, question), response.source_nodes, _answer(response))
    return attach_attribution(response, attribution)


async def aexplain_response(
    response: Any, attributor: Optional[BaseAttributor] = None, question: Optional[str] = None
) -> Attribution:
    attributor = attributor or CounterfactualAttributor()
    attribution = await attributor.aattribute(_question(response, question), response.source_nodes, _answer(response))
    return attach_attribution(response, attribution)


class AttributedQueryEngine(BaseQueryEngine):
    """Wraps a query engine: every response comes back with its attribution attached (see the module doc).

    Raises:
        ValueError: ``query_engine`` is not a ``RetrieverQueryEngine`` and no ``attributor`` says
            how it answers (its LLM and prompt): the counterfactuals would use another prompt.
    """

    def __init__(self, query_engine: BaseQueryEngine, attributor: Optional[BaseAttributor] = None) -> None:
        self._attributor: Optional[BaseAttributor] = None
        if isinstance(query_engine, RetrieverQueryEngine):
            # its synthesizer and postprocessors are private (compat; with_retriever reuses them the same way)
            stock, postprocessors = llama_index_core.query_engine_parts(query_engine)
            query_engine = RetrieverQueryEngine(
                retriever=query_engine.retriever,
                response_synthesizer=AttributedSynthesizer(stock, attributor),
                node_postprocessors=postprocessors,
                callback_manager=query_engine.callback_manager,
            )
        elif attributor is None:
            raise ValueError(
                f"{type(query_engine).__name__} is not a RetrieverQueryEngine: pass an attributor with the LLM and "
                "prompt it answers with (e.g. CounterfactualAttributor(llm=..., prompt=...)), or build the engine "
                "with response_synthesizer=AttributedSynthesizer(...)"
            )
        else:
            self._attributor = attributor
        self._engine = query_engine
        super().__init__(callback_manager=query_engine.callback_manager)

    def _get_prompt_modules(self) -> Dict[str, Any]:
        return {"query_engine": self._engine}

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        response = self._engine.query(query_bundle)
        if self._attributor is not None:
            explain_response(response, self._attributor, query_bundle.query_str)
        return response

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        response = await self._engine.aquery(query_bundle)
        if self._attributor is not None:
            await aexplain_response(response, self._attributor, query_bundle.query_str)
        return response
