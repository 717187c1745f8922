"""What every explainer shares: one run protocol (span, events, errors) and one result protocol.

Two families explain an answer: attributors (``attribution.py``, ``surrogate.py``: how much
each evidence caused it) and RAGE explainers (``combinations.py``, ``permutations.py``: which
perturbation of the evidences changes it). Both ask the LLM again over altered evidence
lists, so they share ``BaseExplainer``: the LLM (``models.defaults.resolve_llm``),
the answer prompt, the concurrency bound and retries of those calls, and the run itself:

* ``explain`` / ``aexplain`` open an instrumentation span, fire the family's start event,
  answer the question first when no answer is given, call the ``_aexplain`` hook with an
  ``AnswerRegenerator``, record the LLM calls and the wall time on the result, and fire the
  end event. Attributors keep their names ``attribute`` / ``aattribute`` as aliases.
* Errors, the same for both families: a blank question is a ``ValueError`` (an explanation
  is about the completed question the answer was produced for); an LLM call that still
  fails after its retries marks only what it was for as failed (a cluster, a mask, a
  perturbation), never a guess and never a crash; the one exception is the unperturbed
  answer, computed when ``answer`` is ``None``: without it there is nothing to explain, so
  ``LLMCallError`` is raised. The sync ``explain`` re-raises the original exception: the
  RAGE behaviour, kept over the attributors' former one, where llama-index's
  ``asyncio_run`` turned every ``RuntimeError`` into a misleading "nested async" error.
  An exception leaves the span as dropped (``SpanDropEvent``) and fires no end event.

Results (``Attribution``, ``PerturbationReport``) follow ``ExplanationResult``: ``to_text``,
``to_dict``, ``to_json``, ``plot``, and their cost (``llm_calls``, ``wall_time_s``).
"""

from __future__ import annotations

import json
import time
from abc import abstractmethod
from pathlib import Path
from typing import Any, Dict, List, Optional, Protocol, Sequence, Union, runtime_checkable

from llama_index.core.async_utils import asyncio_run
from llama_index.core.bridge.pydantic import Field, PrivateAttr, SerializeAsAny
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.llms.llm import LLM
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.schema import BaseComponent, NodeWithScore

from llama_index_ragonite.errors import LLMCallError
from llama_index_ragonite.explain.regeneration import AnswerRegenerator, check_answer_prompt
from llama_index_ragonite.models.defaults import resolve_llm
from llama_index_ragonite.prompts import ANSWER_PROMPT

dispatcher = get_dispatcher(__name__)

__all__ = ["BaseExplainer", "ExplanationResult", "JSONResult"]

_NOT_A_POSTPROCESSOR = (
    "{cls} is not a node postprocessor: it explains an answer, so it runs after the answer is written. "
    "In a query engine, wrap the response synthesizer instead: "
    "index.as_query_engine(response_synthesizer=AttributedSynthesizer.from_defaults(attributor={cls}(...))); "
    "for a finished response, call explain_response(response, {cls}(...))."
)


@runtime_checkable
class ExplanationResult(Protocol):
    """What every explanation returns: renderings for people and machines, and what it cost."""

    llm_calls: int
    wall_time_s: float

    def to_text(self) -> str: ...

    def to_dict(self) -> Dict[str, Any]: ...

    def to_json(self, **kwargs: Any) -> str: ...

    def plot(self, path: Union[str, Path]) -> Path: ...


class JSONResult:
    """Mixin: ``to_json`` from ``to_dict`` (UTF-8 kept readable; ``kwargs`` go to ``json.dumps``)."""

    def to_dict(self) -> Dict[str, Any]:
        raise NotImplementedError

    def _fields(self, *names: str) -> Dict[str, Any]:
        """``{name: self.name}`` for the plain (already JSON-ready) attributes of ``to_dict``, in order."""
        return {name: getattr(self, name) for name in names}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, **kwargs)


class BaseExplainer(BaseComponent):
    """Explains an answer by asking the LLM again over altered evidence lists (see the module doc).

    Subclasses implement ``_aexplain`` (the explanation itself) and ``_start_event`` /
    ``_end_event`` (their family's instrumentation events). ``llm=None`` is ``Settings.llm`` when
    set, else the offline ``ExtractiveAnswerer`` (``models.defaults``), never a cloud default; pass the LLM and ``prompt`` the answer
    came from, so the counterfactual answers are produced the same way — or bind it to the
    response synthesizer that wrote the answer (``synthesizer=`` / ``with_synthesizer``).
    ``prompt`` must take the evidences (``{sources}``+``{question}`` or ``{context_str}``+``{query_str}``):
    any other prompt is refused at construction.
    """

    prompt: SerializeAsAny[BasePromptTemplate] = Field(
        default=ANSWER_PROMPT, description="Answer prompt ({sources}, {history}, {question}) the answer came from."
    )
    max_concurrency: int = Field(default=16, ge=1, description="LLM calls in flight at once.")
    retries: int = Field(
        default=1, ge=0, description="Extra attempts for a failing LLM call before what it was for counts as failed."
    )
    max_answer_tokens: Optional[int] = Field(
        default=None,
        ge=1,
        description="At most this many tokens per regenerated answer (the LLM's max_tokens; None: the LLM's own "
        "limit). The offline answerer has no tokens to limit and ignores it; a synthesizer uses its own LLM's.",
    )

    _llm: LLM = PrivateAttr()  # set in __init__
    _synthesizer: Any = PrivateAttr(default=None)

    def __init__(self, llm: Optional[LLM] = None, synthesizer: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._llm, self._synthesizer = resolve_llm(llm), synthesizer
        if synthesizer is None:
            check_answer_prompt(self.prompt)

    def with_synthesizer(self, synthesizer: Any) -> "BaseExplainer":
        """A copy of this explainer that regenerates answers with ``synthesizer`` (a LlamaIndex
        ``BaseSynthesizer``: its templates, response mode and LLM), as ``AttributedSynthesizer`` does."""
        bound = self.model_copy()
        bound._synthesizer = synthesizer
        return bound

    # -- not a node postprocessor: say so where LlamaIndex would treat it as one ---------------
    def __setattr__(self, name: str, value: Any) -> None:
        if name == "callback_manager":  # RetrieverQueryEngine/chat engines set it on each node postprocessor
            raise TypeError(_NOT_A_POSTPROCESSOR.format(cls=type(self).__name__))
        super().__setattr__(name, value)

    def postprocess_nodes(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(_NOT_A_POSTPROCESSOR.format(cls=type(self).__name__))

    async def apostprocess_nodes(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(_NOT_A_POSTPROCESSOR.format(cls=type(self).__name__))

    @classmethod
    def class_name(cls) -> str:
        return cls.__name__

    @property
    def llm(self) -> LLM:
        """The LLM that answers the altered prompts: the one given, else ``Settings.llm``, else the offline answerer."""
        return self._llm

    @dispatcher.span
    def explain(self, question: str, nodes: Sequence[NodeWithScore], answer: Optional[str] = None) -> ExplanationResult:
        """Explain ``answer`` to ``question`` from ``nodes`` (in prompt order); ``None``: answer it first."""

        async def captured():  # llama-index's asyncio_run rewrites every RuntimeError as "nested async"
            try:
                return await self.aexplain(question, nodes, answer), None
            except Exception as err:
                return None, err

        result, error = asyncio_run(captured())
        if error is not None:
            raise error
        return result

    @dispatcher.span
    async def aexplain(
        self, question: str, nodes: Sequence[NodeWithScore], answer: Optional[str] = None
    ) -> ExplanationResult:
        if not isinstance(question, str) or not question.strip():
            raise ValueError("an explanation needs the (completed) question the answer was produced for")
        nodes = list(nodes)
        dispatcher.event(self._start_event(question, nodes))
        started = time.perf_counter()
        regenerator = AnswerRegenerator(
            self.llm, self.prompt, self.max_concurrency, self.retries, self._synthesizer, self.max_answer_tokens
        )
        if answer is None:
            answer = await regenerator.aanswer(question, nodes)
            if answer is None:
                raise LLMCallError(f"The LLM failed to answer the unperturbed prompt: {regenerator.errors[-1]}")
        result = await self._aexplain(question, nodes, answer, regenerator)
        result.llm_calls = regenerator.calls
        result.wall_time_s = time.perf_counter() - started
        dispatcher.event(self._end_event(result, llm_calls=result.llm_calls, wall_time_s=result.wall_time_s))
        return result

    @abstractmethod
    async def _aexplain(
        self, question: str, nodes: List[NodeWithScore], answer: str, regenerator: AnswerRegenerator
    ) -> ExplanationResult:
        """The explanation; every LLM call goes through ``regenerator`` (its calls are the result's cost)."""

    @abstractmethod
    def _start_event(self, question: str, nodes: List[NodeWithScore]) -> BaseEvent:
        """The event that announces an explanation."""

    @abstractmethod
    def _end_event(self, result: Any, **cost: Any) -> BaseEvent:
        """The event that reports a finished explanation; ``cost``: its ``llm_calls`` and ``wall_time_s``."""
