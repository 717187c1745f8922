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
import logging
import re
from abc import abstractmethod
from typing import List, Optional, Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import Field
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.llms import LLM
from llama_index.core.prompts import PromptTemplate
from llama_index.core.schema import BaseComponent

from llama_index_ragonite.chat.llm_calls import MALFORMED, llm_error
from llama_index_ragonite.events import QuestionCompletedEvent
from llama_index_ragonite.models.defaults import settings_llm
from llama_index_ragonite.text import (
    COMPLETION_STOPWORDS,
    carried_terms,
    content_terms,
    detect_language,
    is_fragment,
    is_request,
    refers_back,
    salient_terms,
    words,
)

logger = logging.getLogger(__name__)
dispatcher = get_dispatcher(__name__)

__all__ = [
    "COMPLETION_STOPWORDS",
    "Completion",
    "DEFAULT_COMPLETION_PROMPT",
    "LLMQuestionCompleter",
    "OfflineQuestionCompleter",
    "QuestionCompleter",
    "carried_terms",
    "checked_rephrasing",
    "content_terms",
    "rephrasing_problem",
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
        try:
            response = self._llm().complete(self.format_prompt(history, message))
        except MALFORMED as err:
            return _garbled(err, message)
        except Exception as err:
            raise llm_error(err) from err
        return checked_rephrasing(message, clean_completion(response.text))

    async def _acomplete(self, history: List[ChatMessage], message: str) -> str:
        try:
            response = await self._llm().acomplete(self.format_prompt(history, message))
        except MALFORMED as err:
            return _garbled(err, message)
        except Exception as err:
            raise llm_error(err) from err
        return checked_rephrasing(message, clean_completion(response.text))


class Completion(str):
    """A completed question that carries a ``warning`` for the turn (the engine shows it)."""

    warning: Optional[str] = None

    def __new__(cls, text: str, warning: Optional[str] = None) -> "Completion":
        completed = super().__new__(cls, text)
        completed.warning = warning
        return completed


_CITATION = re.compile(r"\[\s*(?:source|quelle)\s*\d+", re.I)


def rephrasing_problem(message: str, reply: str) -> Optional[str]:
    """Why an LLM's reply to the rephrasing prompt is no rephrased request, or None when it is one.

    The signals: it cites sources (``[Source 1]``: it answered from a context), it is in another
    language than the turn, or the turn asks or requests something and the reply does neither
    (it is an answer: "Dogs cost 120 EUR.")."""
    if _CITATION.search(reply):
        return "it cites sources"
    asked, written = detect_language(message, tie=""), detect_language(reply, tie="")
    if asked and written and asked != written:
        return f"it is in another language ({written}) than the turn ({asked})"
    if is_request(message) and not is_request(reply):
        return "it answers instead of asking"
    return None


def checked_rephrasing(message: str, reply: str) -> str:
    """``reply`` when it is a rephrased request; else the turn as asked, with a warning saying why."""
    if not reply:
        return message
    problem = rephrasing_problem(message, reply)
    if problem is None:
        return reply
    warning = f"The LLM's rephrasing of the turn was not used ({problem}); the turn was searched as asked."
    logger.warning("%s Reply: %r", warning, reply[:200])
    return Completion(message, warning)


def _garbled(err: Exception, message: str) -> str:
    """A rephrasing reply the client could not parse: the turn is used as the user wrote it."""
    logger.warning("The LLM's rephrasing was garbled (%s: %s); the turn is used as asked", type(err).__name__, err)
    return message


# ---------------------------------------------------------------------- offline completion


class OfflineQuestionCompleter(QuestionCompleter):
    """Deterministic, model-free completion: add the conversation's topic to a turn that needs it.

    A turn needs its conversation when it points back (a pronoun or demonstrative: "it",
    "these tests", "dessen", "dort", "dafür"; an ellipsis: "And the kernel?", "What about
    TPM?", "Und die Firmware?"), is a short fragment ("TPM?"), or names nothing of its own
    (no number, version, identifier, acronym or name: "What is the recommended
    configuration?"); see ``text.refers_back`` / ``salient_terms``. A pointer is taken as
    resolved when the turn itself repeats two of the topic's names ("this upgrade from 8.0.1
    to 9.0"). Every other turn is self-contained and passes unchanged: "What is the capital of
    France?" after a turn about the OTA server stays as asked, and so does the next topic.

    A completed turn gets the topic's terms, then the previous turn's, then itself verbatim:
    ``"Where is it located?"`` after ``"What color does the XT shield become after an
    upgrade?"`` becomes ``"color XT shield become upgrade Where is it located?"``. The topic is
    the last self-contained turn (the first turn to begin with); a self-contained turn that
    shares a term with the topic narrows it (its terms first, the older topic's names after),
    one that shares none replaces it. Only user turns are read: assistant answers are long and
    may be wrong. That is ``every_turn=False``. The default, ``every_turn=True``, is still the
    completer before issue 16 (every follow-up gets the first and the previous turn's terms):
    on ConfQuestions most follow-ups that name something of their own ("What is VirtIO?") still
    need the first turn's page, and no rule on the turn's wording tells them from the truly
    self-contained ones, so the strict rule costs 0.13 P@1 (0.705 vs 0.833);
    ``benchmarks/completion_confquestions.py`` measures both against gold completions.
    """

    max_terms: int = Field(default=20, ge=0, description="Most terms carried over from the history.")
    context_first: bool = Field(
        default=True, description="Carried terms before the new turn (True) or after it (False)."
    )
    extra_stopwords: List[str] = Field(
        default_factory=list, description="More words never to carry (domain filler such as the wiki's name)."
    )
    every_turn: bool = Field(
        default=False,
        description="True: complete every follow-up from the first and the previous turn, self-contained or not "
        "(the completer before issue 16). False (default): only the turns that need it; the chat engine's "
        "conversation retrieval recovers the conversation's page for the others "
        "(benchmarks/results/completion_confquestions.md).",
    )

    @classmethod
    def class_name(cls) -> str:
        return "OfflineQuestionCompleter"

    def needs_context(self, message: str, topic: Sequence[str] = ()) -> bool:
        """Does ``message`` lack what it is about? ``topic``: the terms the conversation is on."""
        named = salient_terms(message, self.extra_stopwords)
        if not named or is_fragment(message):
            return True
        if not refers_back(message):
            return False
        known = {t.lower() for t in topic}
        return sum(t.lower() in known for t in named) < 2  # "this upgrade from 8.0.1 to 9.0" names it again

    def topic(self, user_turns: Sequence[str]) -> List[str]:
        """The terms to complete a follow-up with after ``user_turns``: the turn that opened the
        topic, the topic's latest self-contained turn, the previous turn; each term once."""
        extra = self.extra_stopwords
        opened = topic = content_terms(user_turns[0], extra) if user_turns else []
        previous: List[str] = []
        for turn in user_turns[1:]:
            terms = content_terms(turn, extra)
            if self.needs_context(turn, _unique(opened + topic + previous)):
                previous = terms
                continue
            if not _words(terms) & _words(opened + topic):
                opened = terms  # shares no word with the topic: a new one
            topic, previous = terms, []
        return _unique(opened + topic + previous)

    def _complete(self, history: List[ChatMessage], message: str) -> str:
        turns = _user_turns(history)
        if self.every_turn:
            terms = carried_terms(turns, message, self.max_terms, self.extra_stopwords)
        else:
            topic = self.topic(turns)
            if not self.needs_context(message, topic):
                return message
            known = {t.lower() for t in content_terms(message, self.extra_stopwords)}
            terms = [t for t in topic if t.lower() not in known][: self.max_terms]
        if not terms:
            return message
        context = " ".join(terms)
        return f"{context} {message.strip()}" if self.context_first else f"{message.strip()} {context}"


def _words(terms: Sequence[str]) -> set:
    """The lower-cased words of ``terms``, identifiers split ("OTA-Server": ota, server)."""
    return {w for term in terms for w in words(term)}


def _unique(terms: Sequence[str]) -> List[str]:
    """``terms`` without repeats (case-insensitive), first occurrence kept."""
    seen: set = set()
    return [t for t in terms if not (t.lower() in seen or seen.add(t.lower()))]
