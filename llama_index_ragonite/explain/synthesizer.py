"""``AttributedSynthesizer``: counterfactual attribution inside any LlamaIndex query engine.

Why a response synthesizer: it is the one place in a ``RetrieverQueryEngine`` that sees both
the nodes (after retrieval and the node postprocessors) and the answer, and it *is* the way
the answer was produced. The wrapper answers with the wrapped synthesizer, then regenerates
the counterfactual answers with the same synthesizer — same templates, response mode and LLM
— on the evidence subsets, so a removal that changes nothing leaves the answer unchanged and
the attribution measures the evidences, not a change of prompt. The result goes into
``response.metadata["attribution"]`` and onto each source node (``annotation.py``).

    engine = index.as_query_engine(llm=llm, response_synthesizer=AttributedSynthesizer.from_defaults(llm=llm))

(``as_query_engine`` reads ``Settings.llm`` unless ``llm=`` is given, even with a synthesizer.)

A synthesizer that answers from the nodes without a template (``answers_from_nodes``, as
``ExtractiveSynthesizer``) is taken as it is. Refused at construction, with what to do instead: a
streaming synthesizer (attribution needs the whole answer) and a synthesizer whose templates take
the question but not the evidences
(a template without ``{context_str}``/``{context_msg}``, or no template at all as in ``no_text``:
its answers cannot depend on them).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, cast

from llama_index.core.base.response.schema import RESPONSE_TYPE
from llama_index.core.llms.llm import LLM
from llama_index.core.prompts.mixin import PromptDictType, PromptMixinType
from llama_index.core.response_synthesizers import BaseSynthesizer, get_response_synthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle, QueryType

from llama_index_ragonite.compat import llama_index_core
from llama_index_ragonite.explain.annotation import attach_attribution
from llama_index_ragonite.explain.attribution import BaseAttributor, CounterfactualAttributor
from llama_index_ragonite.explain.results import Attribution
from llama_index_ragonite.models.defaults import resolve_llm
from llama_index_ragonite.prompts import STOCK_CONTEXT_VARIABLES

__all__ = ["AttributedSynthesizer"]

# plus the content-block templates (chat_content_*) of multimodal synthesis
_CONTEXT_VARIABLES = {*STOCK_CONTEXT_VARIABLES, "context_messages"}


def check_synthesizer(synthesizer: BaseSynthesizer) -> None:
    """Refuse synthesizers whose counterfactual answers would mean nothing (see the module doc)."""
    if llama_index_core.synthesizer_streams(synthesizer):  # a private flag only (compat)
        raise ValueError(
            "AttributedSynthesizer needs the whole answer: use a synthesizer with streaming=False "
            "(or explain a streamed response afterwards with explain_response)"
        )
    if getattr(synthesizer, "answers_from_nodes", False):  # no template: it reads the nodes themselves
        return
    prompts = synthesizer.get_prompts()
    blind = [name for name, t in prompts.items() if not set(t.template_vars) & _CONTEXT_VARIABLES]
    if blind or not prompts:
        raise ValueError(
            f"{type(synthesizer).__name__}'s {', '.join(blind) or 'answers'} take no {{context_str}}/{{context_msg}}: "
            "its answers do not depend on the evidences, so no removal can change them. Use a response mode that "
            "answers from the context (compact, refine, tree_summarize, simple_summarize, accumulate) and "
            "templates that include it."
        )


class AttributedSynthesizer(BaseSynthesizer):
    """Any ``BaseSynthesizer`` whose responses come back with their counterfactual attribution.

    Args:
        synthesizer: the synthesizer that writes the answers (default: ``get_response_synthesizer``
            with ``llm`` — passed, else ``Settings.llm`` when set, else the offline answerer).
        attributor: how to attribute (default ``CounterfactualAttributor()``); a copy of it is
            bound to ``synthesizer``, so its own ``llm``/``prompt`` are not used.
    """

    def __init__(
        self,
        synthesizer: Optional[BaseSynthesizer] = None,
        attributor: Optional[BaseAttributor] = None,
        llm: Optional[LLM] = None,
    ) -> None:
        synthesizer = synthesizer or get_response_synthesizer(llm=resolve_llm(llm))
        check_synthesizer(synthesizer)
        self._synthesizer = synthesizer
        self._attributor = (attributor or CounterfactualAttributor()).with_synthesizer(synthesizer)
        # the wrapped one's LLM (private, compat): without it our base class would resolve Settings.llm (OpenAI)
        super().__init__(
            llm=llama_index_core.synthesizer_llm(synthesizer), callback_manager=synthesizer.callback_manager
        )

    @classmethod
    def from_defaults(
        cls, llm: Optional[LLM] = None, attributor: Optional[BaseAttributor] = None, **synthesizer_kwargs: Any
    ) -> "AttributedSynthesizer":
        """``get_response_synthesizer(llm=..., **synthesizer_kwargs)`` (``response_mode``, ``text_qa_template`` …), attributed."""
        return cls(get_response_synthesizer(llm=resolve_llm(llm), **synthesizer_kwargs), attributor)

    @property
    def synthesizer(self) -> BaseSynthesizer:
        """The wrapped synthesizer that writes the answers."""
        return self._synthesizer

    @property
    def attributor(self) -> BaseAttributor:
        """The attributor, bound to the wrapped synthesizer."""
        return cast(BaseAttributor, self._attributor)

    # -- prompts live in the wrapped synthesizer --------------------------------
    def _get_prompts(self) -> PromptDictType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        pass

    def _get_prompt_modules(self) -> PromptMixinType:
        return {"synthesizer": self._synthesizer}

    # -- answer, then attribute -------------------------------------------------
    def synthesize(
        self,
        query: QueryType,
        nodes: list[NodeWithScore],
        additional_source_nodes: Optional[Sequence[NodeWithScore]] = None,
        **response_kwargs: Any,
    ) -> RESPONSE_TYPE:
        response = self._synthesizer.synthesize(query, nodes, additional_source_nodes, **response_kwargs)
        if nodes:
            answer = str(getattr(response, "response", "") or "")
            attribution = cast(Attribution, self._attributor.explain(_question(query), nodes, answer))
            attach_attribution(response, attribution)
        return response

    async def asynthesize(
        self,
        query: QueryType,
        nodes: list[NodeWithScore],
        additional_source_nodes: Optional[Sequence[NodeWithScore]] = None,
        **response_kwargs: Any,
    ) -> RESPONSE_TYPE:
        response = await self._synthesizer.asynthesize(query, nodes, additional_source_nodes, **response_kwargs)
        if nodes:
            answer = str(getattr(response, "response", "") or "")
            attribution = cast(Attribution, await self._attributor.aexplain(_question(query), nodes, answer))
            attach_attribution(response, attribution)
        return response

    def get_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> Any:
        """Text chunks carry no nodes to attribute to: answered by the wrapped synthesizer as is."""
        return self._synthesizer.get_response(query_str, text_chunks, **kwargs)

    async def aget_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> Any:
        return await self._synthesizer.aget_response(query_str, text_chunks, **kwargs)


def _question(query: QueryType) -> str:
    return query.query_str if isinstance(query, QueryBundle) else str(query)
