"""Question completion: turn a conversational follow-up into a self-contained question.

Why: "And what about TPM?" retrieves nothing useful on its own; the paper found
completion to be the bottleneck of conversational RAG (P@1 0.528 with LLM completion
vs 0.658 with human completion). Two completers share one interface:

* ``LLMQuestionCompleter`` — the paper's prompt (dialog as ``User:``/``Assistant:``
  lines, the new turn, "Rephrase the user's last statement into an independent
  question or statement.") on any LlamaIndex ``LLM``.
* ``OfflineQuestionCompleter`` — the embedded default: no model, no network,
  deterministic. It puts the content words of the conversation's first user turn
  (the topic) and of the previous user turn in front of the new turn. The output is
  a retrieval query more than a fluent question — what a retriever (BM25 + dense)
  needs; ``benchmarks/completion_confquestions.py`` measures it against gold completions.
"""

from __future__ import annotations

import asyncio
import re
from abc import abstractmethod
from typing import List, Optional, Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import Field
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.llms import LLM
from llama_index.core.prompts import PromptTemplate
from llama_index.core.schema import BaseComponent

from llama_index_ragonite.events import QuestionCompletedEvent
from llama_index_ragonite.models.defaults import settings_llm
from llama_index_ragonite.text import COMPLETION_STOPWORDS, carried_terms, content_terms

dispatcher = get_dispatcher(__name__)

__all__ = [
    "COMPLETION_STOPWORDS",
    "DEFAULT_COMPLETION_PROMPT",
    "LLMQuestionCompleter",
    "OfflineQuestionCompleter",
    "QuestionCompleter",
    "carried_terms",
    "content_terms",
]


class QuestionCompleter(BaseComponent):
    """Rewrite the user's new turn into an intent-explicit, self-contained question.

    ``history`` is the conversation so far (USER and ASSISTANT messages, oldest first),
    without the new turn. With no user message in it the new turn is returned as is.
    Subclasses implement ``_complete`` (and ``_acomplete`` when they have a native
    async path); the public methods fire a ``QuestionCompletedEvent``.
    """

    @classmethod
    def class_name(cls) -> str:
        return "QuestionCompleter"

    @dispatcher.span
    def complete(self, history: Sequence[ChatMessage], message: str) -> str:
        completed = self._complete(list(history), message) if _user_turns(history) else message
        self._fire(message, completed)
        return completed

    @dispatcher.span
    async def acomplete(self, history: Sequence[ChatMessage], message: str) -> str:
        completed = await self._acomplete(list(history), message) if _user_turns(history) else message
        self._fire(message, completed)
        return completed

    @abstractmethod
    def _complete(self, history: List[ChatMessage], message: str) -> str:
        """Complete ``message``; ``history`` holds at least one user turn."""

    async def _acomplete(self, history: List[ChatMessage], message: str) -> str:
        return await asyncio.to_thread(self._complete, history, message)

    def _fire(self, message: str, completed: str) -> None:
        dispatcher.event(QuestionCompletedEvent(message=message, completed=completed, completer=self.class_name()))


def _user_turns(history: Sequence[ChatMessage]) -> List[str]:
    return [m.content or "" for m in history if m.role == MessageRole.USER]


# ---------------------------------------------------------------------- LLM completion

DEFAULT_COMPLETION_TEMPLATE = """\
Below is a conversation between a user and an assistant about a company wiki, followed \
by the user's new turn. The new turn may leave out things said earlier (it may use \
"it", "that", "there", or be a fragment such as "and for version 9?").

Conversation so far:
{history}

New turn:
User: {message}

Rephrase the user's last statement into an independent question or statement. \
Keep the language of the user's last turn. Answer with the rephrased text only."""

DEFAULT_COMPLETION_PROMPT = PromptTemplate(DEFAULT_COMPLETION_TEMPLATE)

# "Question:", "Rephrased question:", "Standalone Question:", "Umformulierte Frage:" …
_PREFIX = re.compile(
    r"^\s*(?:(?:rephrased|rewritten|independent|standalone|completed|umformulierte|eigenständige)\s+)?"
    r"(?:question|statement|frage|aussage)\s*:\s*",
    re.I,
)
_QUOTES = "\"'`“”„‘’«»"


def clean_completion(text: str) -> str:
    """Strip what LLMs wrap around a rewrite: a ``Question:`` label, quotes, surrounding blanks."""
    text = (text or "").strip()
    for _ in range(2):  # 'Question: "…"' or '"Question: …"'
        text = _PREFIX.sub("", text).strip()
        if len(text) >= 2 and text[0] in _QUOTES and text[-1] in _QUOTES:
            text = text[1:-1].strip()
    return text


class LLMQuestionCompleter(QuestionCompleter):
    """The paper's LLM completion; any LlamaIndex ``LLM`` (defaults to ``Settings.llm``)."""

    llm: Optional[LLM] = Field(default=None, description="The LLM; None means Settings.llm (as set at call time).")
    prompt: PromptTemplate = Field(
        default=DEFAULT_COMPLETION_PROMPT, description="Template with {history} and {message}."
    )
    max_history_turns: Optional[int] = Field(
        default=10,
        ge=1,
        description="Show the first and the last this many user turns (each with its answer); None: all.",
    )

    @classmethod
    def class_name(cls) -> str:
        return "LLMQuestionCompleter"

    def _llm(self) -> LLM:
        llm = self.llm if self.llm is not None else settings_llm()
        if llm is None:
            raise ValueError("LLMQuestionCompleter needs an LLM: pass llm= or set Settings.llm")
        return llm

    def format_prompt(self, history: Sequence[ChatMessage], message: str) -> str:
        """The prompt for one turn: the kept history as ``User:``/``Assistant:`` lines, then the new turn."""
        history = list(history)
        starts = [i for i, m in enumerate(history) if m.role == MessageRole.USER]
        if self.max_history_turns and len(starts) > self.max_history_turns + 1:
            # The first turn stays: it usually names the topic that later turns refer to.
            history = history[: starts[1]] + history[starts[-self.max_history_turns] :]
        lines = [
            f"{'User' if m.role == MessageRole.USER else 'Assistant'}: {' '.join(m.content.split())}"
            for m in history
            if m.role in (MessageRole.USER, MessageRole.ASSISTANT) and (m.content or "").strip()
        ]
        return self.prompt.format(history="\n".join(lines), message=message.strip())

    def _complete(self, history: List[ChatMessage], message: str) -> str:
        response = self._llm().complete(self.format_prompt(history, message))
        return clean_completion(response.text) or message

    async def _acomplete(self, history: List[ChatMessage], message: str) -> str:
        response = await self._llm().acomplete(self.format_prompt(history, message))
        return clean_completion(response.text) or message


# ---------------------------------------------------------------------- offline completion


class OfflineQuestionCompleter(QuestionCompleter):
    """Deterministic, model-free completion: carry the conversation's topic terms into the new turn.

    ``"Where is it located?"`` after ``"What color does the XT shield become after an
    upgrade?"`` becomes ``"color XT shield become upgrade Where is it located?"``: the
    content words of the first user turn (the topic) and of the previous user turn that the
    new turn lacks, then the new turn verbatim. ``context_first=False`` appends the terms
    instead; on ConfQuestions neither order is reliably better (P@1 0.788 vs 0.778 on one
    retrieval stack, 0.772 vs 0.780 on the next, 0.810 vs 0.805 with latent terms; McNemar p = 0.3).

    Every follow-up gets the terms, even one that looks self-contained: wiki conversations
    mostly stay on a page, and leaving such turns alone cost 0.10 P@1 on ConfQuestions
    (no shape or IDF test told real topic switches apart). A turn that already names the
    topic gains little, as known terms are skipped. A conversation that moves to another
    page keeps pulling towards the first one: that is where gold completions still win.
    Only user turns are read: assistant answers are long and may be wrong.
    """

    max_terms: int = Field(default=20, ge=0, description="Most terms carried over from the history.")
    context_first: bool = Field(
        default=True, description="Carried terms before the new turn (True) or after it (False)."
    )
    extra_stopwords: List[str] = Field(
        default_factory=list, description="More words never to carry (domain filler such as the wiki's name)."
    )

    @classmethod
    def class_name(cls) -> str:
        return "OfflineQuestionCompleter"

    def _complete(self, history: List[ChatMessage], message: str) -> str:
        terms = carried_terms(_user_turns(history), message, self.max_terms, self.extra_stopwords)
        if not terms:
            return message
        context = " ".join(terms)
        return f"{context} {message.strip()}" if self.context_first else f"{message.strip()} {context}"
