"""Question completion: turn a conversational follow-up into a self-contained question.

Why: "And what about TPM?" retrieves nothing useful on its own; the paper found
completion to be the bottleneck of conversational RAG (P@1 0.528 with LLM completion
vs 0.658 with human completion). Two completers share one interface:

* ``LLMQuestionCompleter`` — the paper's prompt (dialog as ``User:``/``Assistant:``
  lines, the new turn, "Rephrase the user's last statement into an independent
  question or statement.") on any LlamaIndex ``LLM``.
* ``OfflineQuestionCompleter`` — the embedded default: no model, no network,
  deterministic. It leaves a turn that names its subject as asked and gives a turn that
  points back its referent (the previous turn's page), in parentheses;
  the benchmark experiment ``completion`` measures it against gold completions.
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

from llama_index_ragonite.chat.conversation_retrieval import topic_page
from llama_index_ragonite.events import QuestionCompletedEvent
from llama_index_ragonite.languages import alternation
from llama_index_ragonite.models.defaults import settings_llm
from llama_index_ragonite.models.llm_calls import MALFORMED, llm_error
from llama_index_ragonite.text import (
    COMPLETION_STOPWORDS,
    carried_terms,
    content_terms,
    detect_language,
    is_fragment,
    is_request,
    pointing_end,
    pointing_word,
    refers_back,
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
    "with_referent",
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
    rf"^\s*(?:{alternation('rephrase_labels')}\s+)?{alternation('rephrase_nouns')}\s*:\s*",
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
            f"{'User' if m.role == MessageRole.USER else 'Assistant'}: {' '.join((m.content or '').split())}"
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


_CITATION = re.compile(rf"\[\s*{alternation('source_words')}\s*\d+", re.I)


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
    """Deterministic, model-free completion: name what a turn points back to, and nothing else.

    A turn is completed only when it cannot be understood alone: it points back (a pronoun or
    demonstrative: "it", "these tests", "dessen", "dort", "dafür"; an ellipsis: "And the kernel?",
    "What about TPM?", "Und die Firmware?") or is a short fragment ("TPM?"); see
    ``text.refers_back`` / ``is_fragment``. Every other turn is shown and answered as the user wrote
    it: one that names its own subject needs no words of earlier turns (retrieval still consults the
    conversation: ``ConversationRetrieval``, which the chat engine runs with this completer).

    A turn with a word that points back gets its referent after that word, in parentheses: the title of
    the page the previous turn was answered from (the engine records it on that user message,
    ``TOPIC_KEY``), else the previous user turn's content words: "Who's in charge of it (IT
    equipment)?". An ellipsis or a fragment leaves out what is asked, so its referent is the previous
    question, after the turn, without the numbers the turn brings its own of ("And in Aurora 1.9?
    (Which platform failed the UEFI OTA upgrade in Aurora?)"), and with its page when it pointed back
    itself. The user's words stay as written; no bag of earlier keywords is put in front of them.

    ``every_turn=True`` is the completer of earlier releases: every follow-up gets the content words of
    the first and the previous user turn in front (``text.carried_terms``), a retrieval query more than a
    question; the benchmark experiment ``completion`` measures both.
    """

    max_terms: int = Field(default=20, ge=0, description="Most terms carried over from the history.")
    context_first: bool = Field(
        default=True, description="every_turn: carried terms before the new turn (True) or after it (False)."
    )
    extra_stopwords: List[str] = Field(
        default_factory=list, description="More words never to carry (domain filler such as the wiki's name)."
    )
    every_turn: bool = Field(
        default=False,
        description="True: complete every follow-up with the first and the previous turn's words (earlier "
        "releases). False (default): only a turn that points back, with its referent.",
    )

    @classmethod
    def class_name(cls) -> str:
        return "OfflineQuestionCompleter"

    def needs_context(self, message: str) -> bool:
        """Does ``message`` lack what it is about (it points back, or is a fragment)?"""
        return refers_back(message) or is_fragment(message)

    def referent(self, history: Sequence[ChatMessage], message: str = "") -> str:
        """What ``message`` after ``history`` points back to (class doc); "" when there is no earlier turn."""
        users = [m for m in history if m.role == MessageRole.USER]
        if not users:
            return ""
        previous = users[-1].content or ""
        title = " ".join(topic_page(users[-1]).split())
        topic = title or " ".join(content_terms(previous, self.extra_stopwords)[: self.max_terms])
        if pointing_word(message) is not None:
            return topic
        asked = previous.strip()
        if any(c.isdigit() for c in message):  # the turn's own number replaces the previous one's
            asked = " ".join(w for w in asked.split() if not any(c.isdigit() for c in w))
        return f"{asked} – {title}" if title and self.needs_context(previous) else asked

    def _complete(self, history: List[ChatMessage], message: str) -> str:
        message = message.strip()
        if self.every_turn:
            terms = carried_terms(_user_turns(history), message, self.max_terms, self.extra_stopwords)
            if not terms:
                return message
            context = " ".join(terms)
            return f"{context} {message}" if self.context_first else f"{message} {context}"
        referent = self.referent(history, message) if self.needs_context(message) else ""
        if not referent or referent.lower() in message.lower():
            return message
        return with_referent(message, referent)


def with_referent(message: str, referent: str) -> str:
    """``message`` with ``(referent)`` after its word that points back, else after the whole turn."""
    end = pointing_end(message)
    if end is None:
        return f"{message} ({referent})"
    return f"{message[:end]} ({referent}){message[end:]}"
