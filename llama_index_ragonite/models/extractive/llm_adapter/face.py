"""``PromptReading``: the extractive answerer as a LlamaIndex LLM, for engines that send it prompt text.

Why: a user may pass ``ExtractiveAnswerer()`` as ``llm=`` to a stock engine (``index.as_query_engine``,
``CondensePlusContextChatEngine``), which formats the nodes into a prompt; this face reads the prompt back
(``prompt.py``: our ``### Source i ###`` blocks; ``templates.py``: the stock templates) and answers through
the same core as the nodes do (``ExtractiveAnswerer.answer_sources``). Response synthesizers call
``predict``/``stream`` with the template and its variables, kept for the call (a context variable:
concurrent calls never mix); ``chat`` reads its messages alike. Plain strings (``complete``) are matched
against the stock templates and the answerer's ``templates``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseAsyncGen,
    CompletionResponseGen,
)
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM
from llama_index.core.prompts import BasePromptTemplate

from llama_index_ragonite.models.extractive.calls import (
    VARIABLES,
    as_async,
    call_variables,
    streamed,
    template_variables,
)
from llama_index_ragonite.models.extractive.llm_adapter.prompt import parse_prompt
from llama_index_ragonite.models.extractive.llm_adapter.templates import (
    TemplateRequest,
    chat_variables,
    match_templates,
    request_from_variables,
    stock_templates,
    template_pattern,
)
from llama_index_ragonite.models.extractive.sources import PromptSource
from llama_index_ragonite.models.extractive.units import Unit
from llama_index_ragonite.prompts import OUT_OF_SCOPE
from llama_index_ragonite.text import carried_terms

__all__ = ["PromptReading"]


class PromptReading(CustomLLM):
    """The LLM methods of ``ExtractiveAnswerer``: a prompt in, the core's answer out."""

    if TYPE_CHECKING:  # the answerer's fields and core (answerer.py)
        label: str
        templates: List[BasePromptTemplate]
        _patterns: Optional[List[Any]]
        _topics: Dict[str, str]

        def answer_sources(self, question: str, sources: Sequence[PromptSource], numbered: bool = True) -> str: ...

        def _select(self, question: str, sources: Sequence[PromptSource]) -> Tuple[List[Unit], List[int]]: ...

        def _compose(self, units: Sequence[Unit], chosen: Sequence[int], question: str, numbered: bool) -> str: ...

    def answer(self, prompt: str, variables: Optional[Dict[str, Any]] = None) -> str:
        """The answer text for one prompt (what ``complete`` returns); ``variables``: the template's, when known."""
        request = self.read_request(prompt, variables)
        if request.condense:
            terms = carried_terms(request.history, request.question) if request.history else []
            return " ".join([*terms, request.question])
        sources = [self._with_topic(s) if s.earlier_answer else s for s in request.sources]
        if request.existing_answer:
            return self._refine(request, sources)
        return self.answer_sources(request.question, sources, request.numbered)

    def read_request(self, prompt: str, variables: Optional[Dict[str, Any]] = None) -> TemplateRequest:
        """What the prompt asks: from the template variables, our ``### Source`` format, or a known template."""
        request = request_from_variables(variables, self.label) if variables else None
        if request is not None:
            return request
        parsed = parse_prompt(prompt)
        if not (parsed.sources and parsed.question):
            found = match_templates(prompt, self._template_patterns())
            request = request_from_variables(found, self.label) if found else None
            if request is not None:
                return request
        return TemplateRequest(parsed.question, parsed.sources, numbered=True)

    def _template_patterns(self) -> List[Any]:
        if self._patterns is None:
            patterns = (template_pattern(t, self) for t in [*self.templates, *stock_templates()])
            self._patterns = [p for p in patterns if p is not None]
        return self._patterns

    def _with_topic(self, source: PromptSource) -> PromptSource:
        """An earlier answer with the topic of the page it quoted (when this answerer wrote it)."""
        return replace(source, topic=source.topic or self._topics.get(source.evidence, ""))

    def _refine(self, request: TemplateRequest, sources: Sequence[PromptSource]) -> str:
        """A refine step keeps the better-supported of the existing answer and the new context's best units.

        The existing answer competes as the first source (it came from higher-ranked nodes), with
        its page topic when this answerer wrote it, so a quote is not re-scored without the page it
        came from. It stays when the new context holds nothing better; an out-of-scope answer
        always gives way to an in-scope one."""
        existing = request.existing_answer
        if OUT_OF_SCOPE in existing:
            units, chosen = self._select(request.question, sources)
            return self._compose(units, chosen, request.question, request.numbered) if chosen else existing
        body = existing[len(self.label) :].strip() if existing.startswith(self.label) else existing
        earlier = self._with_topic(PromptSource(0, "", body, earlier_answer=True))
        units, chosen = self._select(request.question, [earlier, *sources])
        new = [i for i in chosen if units[i].source != 0]
        if not chosen or units[chosen[0]].source == 0 or not new:
            return existing
        return self._compose(units, new, request.question, request.numbered)

    # -- predict/stream/chat: keep the call's template variables for the completion it makes ------
    def predict(self, prompt: BasePromptTemplate, **prompt_args: Any) -> str:
        with call_variables(template_variables(prompt, prompt_args)):
            return super().predict(prompt, **prompt_args)

    async def apredict(self, prompt: BasePromptTemplate, **prompt_args: Any) -> str:
        with call_variables(template_variables(prompt, prompt_args)):
            return await super().apredict(prompt, **prompt_args)

    def stream(self, prompt: BasePromptTemplate, **prompt_args: Any):
        with call_variables(template_variables(prompt, prompt_args)):
            return super().stream(prompt, **prompt_args)  # the answer is computed before the stream is returned

    async def astream(self, prompt: BasePromptTemplate, **prompt_args: Any):
        with call_variables(template_variables(prompt, prompt_args)):
            return await super().astream(prompt, **prompt_args)

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """A context system message and the last user message read as a stock QA request (else the
        messages as one prompt); ``achat`` comes here too."""
        with call_variables(VARIABLES.get() or chat_variables(messages)):
            return super().chat(messages, **kwargs)

    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        with call_variables(VARIABLES.get() or chat_variables(messages)):
            return super().stream_chat(messages, **kwargs)

    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseAsyncGen:
        return as_async(self.stream_chat(messages, **kwargs))  # answered now, not in the stream as CustomLLM does

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self.answer(prompt, VARIABLES.get()))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        return streamed(self.answer(prompt, VARIABLES.get()))

    @llm_completion_callback()
    async def astream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseAsyncGen:
        return as_async(streamed(self.answer(prompt, VARIABLES.get())))  # answered now, while the variables are set
