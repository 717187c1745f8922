"""Question completion: turn a conversational follow-up into a self-contained question.

Why: "And what about TPM?" retrieves nothing useful on its own; the paper found
completion to be the bottleneck of conversational RAG (P@1 0.528 with LLM completion
vs 0.658 with human completion). Two completers share one interface:

* ``LLMQuestionCompleter`` — the paper's prompt (dialog as ``User:``/``Assistant:``
  lines, the new turn, "Rephrase the user's last statement into an independent
  question or statement.") on any LlamaIndex ``LLM``.
* ``OfflineQuestionCompleter`` — the embedded default: no model, no network,
  deterministic. It puts the salient terms of the conversation's first user turn
  (the topic) and of the previous user turn in front of the new turn. The output is
  a retrieval query more than a fluent question, which is what a retriever (BM25 +
  dense) needs; ``benchmarks/completion_confquestions.py`` measures it.
"""

from __future__ import annotations

import asyncio
import math
import re
from abc import abstractmethod
from collections import Counter
from typing import Dict, Iterable, List, Optional, Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import Field
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.llms import LLM
from llama_index.core.prompts import PromptTemplate
from llama_index.core.schema import BaseComponent

from llama_index_ragonite.events import QuestionCompletedEvent

dispatcher = get_dispatcher(__name__)

__all__ = [
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

_PREFIX = re.compile(
    r"^\s*(?:(?:rephrased|independent|completed|standalone)?\s*(?:question|statement|frage)\s*:\s*)", re.I
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

    llm: Optional[LLM] = Field(default=None, description="The LLM; None means Settings.llm at call time.")
    prompt: PromptTemplate = Field(
        default=DEFAULT_COMPLETION_PROMPT, description="Template with {history} and {message}."
    )
    max_history_turns: Optional[int] = Field(
        default=10, ge=1, description="Keep the last this many messages of the history (None: all)."
    )

    @classmethod
    def class_name(cls) -> str:
        return "LLMQuestionCompleter"

    def _llm(self) -> LLM:
        if self.llm is not None:
            return self.llm
        from llama_index.core import Settings

        return Settings.llm

    def format_prompt(self, history: Sequence[ChatMessage], message: str) -> str:
        kept = list(history)[-self.max_history_turns :] if self.max_history_turns else list(history)
        lines = []
        for m in kept:
            if m.role in (MessageRole.USER, MessageRole.ASSISTANT) and (m.content or "").strip():
                who = "User" if m.role == MessageRole.USER else "Assistant"
                lines.append(f"{who}: {' '.join(m.content.split())}")
        return self.prompt.format(history="\n".join(lines), message=message.strip())

    def _complete(self, history: List[ChatMessage], message: str) -> str:
        response = self._llm().complete(self.format_prompt(history, message))
        return clean_completion(response.text) or message

    async def _acomplete(self, history: List[ChatMessage], message: str) -> str:
        response = await self._llm().acomplete(self.format_prompt(history, message))
        return clean_completion(response.text) or message


# ---------------------------------------------------------------------- offline completion

# Words that never name what a question is about: function words, question words and
# conversational filler, English and German (ConfQuestions asks in both).
STOPWORDS_EN = frozenset(
    """a an the and or but if of in on at to for from by with about into over after before under between
    as is are was were be been being am do does did done have has had having will would shall should can could
    may might must i me my we us our you your he him his she her it its they them their this that these those
    there here then than so such what which who whom whose when where why how whether also just only very too
    more most much many some any all both each other another same own not no nor yes oh ok okay well please
    tell know like now again still even back coming way one ones thing things something anything get got make
    made use used using show give want need wanted think guess seems seem seemed bit lot interested mention
    mentioned thanks thank anyway actually really""".split()
)
STOPWORDS_DE = frozenset(
    """der die das den dem des ein eine einer einem einen eines und oder aber wenn ob von vom zu zum zur in im ins
    an am auf aus bei mit nach seit für über unter vor hinter neben zwischen durch gegen ohne um als wie auch noch
    nur schon sehr ist sind war waren wird werden wurde wurden worden sein bin bist seid hat haben hatte hatten
    habe kann können konnte muss müssen soll sollte sollen darf dürfen will wollen möchte mag gibt gab es er sie
    ihr ihre ihren ihrem ihm ihn wir uns unser du dich dir ich mich mir man sich dies diese dieser diesem diesen
    dieses dass jene jener was welche welcher welches welchem welchen wer wen wem wessen wann wo woher wohin
    warum weshalb wieso wofür wozu womit worauf worüber wodurch viel viele alle allen alles jede jeder jedes
    andere anderen kein keine nicht ja nein dort da hier dann denn so also doch mal bitte nenne nennen sag sage
    sagen zurück übrigens eigentlich davon dafür dazu damit darauf darüber daran dabei etwas würde würden gerne
    gern mehr erfahren weiß wissen glaube denke scheint tun erzähl erzähle interessiert verwendet genutzt benutzt
    eingesetzt""".split()
)
STOPWORDS = STOPWORDS_EN | STOPWORDS_DE

# Identifiers stay whole: "9.0.2", "OXT-243", "DISTRO_FEATURE", "TXT-Testing".
_TOKEN = re.compile(r"\w+(?:[.\-_/]\w+)*")


def content_terms(text: str, stopwords: Iterable[str] = STOPWORDS) -> List[str]:
    """The words of ``text`` that can name a topic: no stopwords, no single letters (digits stay)."""
    stop = stopwords if isinstance(stopwords, (set, frozenset)) else set(stopwords)
    return [t for t in _TOKEN.findall(text) if t.lower() not in stop and (len(t) > 1 or t.isdigit())]


def carried_terms(
    user_turns: Sequence[str],
    message: str,
    max_terms: int = 20,
    stopwords: Iterable[str] = STOPWORDS,
    idf: Optional[Dict[str, float]] = None,
    min_idf: float = 0.0,
) -> List[str]:
    """Terms to carry into ``message``: first-turn terms (the topic), then previous-turn terms.

    Terms already in ``message`` are skipped (case-insensitive), each term comes once,
    at most ``max_terms`` in all. With an ``idf`` table (lower-cased term -> idf), terms
    below ``min_idf`` are not carried; terms unknown to the table are kept.
    """
    stop = set(stopwords)
    seen = {t.lower() for t in content_terms(message, stop)}
    sources = [user_turns[0]] + ([user_turns[-1]] if len(user_turns) > 1 else [])
    out: List[str] = []
    for source in sources:
        for term in content_terms(source, stop):
            key = term.lower()
            if key in seen or (idf is not None and idf.get(key, math.inf) < min_idf):
                continue
            seen.add(key)
            out.append(term)
    return out[:max_terms]


def idf_table(texts: Iterable[str]) -> Dict[str, float]:
    """BM25's inverse document frequency ``log(1 + (N - df + 0.5) / (df + 0.5))`` (always > 0) per lower-cased term."""
    df: Counter = Counter()
    n = 0
    for text in texts:
        n += 1
        df.update({t.lower() for t in _TOKEN.findall(text)})
    return {term: math.log(1 + (n - count + 0.5) / (count + 0.5)) for term, count in df.items()}


class OfflineQuestionCompleter(QuestionCompleter):
    """Deterministic, model-free completion: carry the conversation's topic terms into the new turn.

    ``"Where is it located?"`` after ``"What color does the XT shield become after an
    upgrade?"`` becomes ``"XT shield color upgrade Where is it located?"``. Only user turns
    are read: assistant answers are long and may be wrong, and carrying them did not
    help retrieval in our measurements. Terms come from the first user turn (the topic:
    ConfQuestions conversations stay on a page or two) and the previous one.
    """

    max_terms: int = Field(default=20, ge=0, description="Most terms carried over from the history.")
    context_first: bool = Field(
        default=True, description="Put the carried terms before the new turn (measured better than after)."
    )
    extra_stopwords: List[str] = Field(
        default_factory=list, description="More words never to carry (domain filler such as the wiki's name)."
    )
    idf: Optional[Dict[str, float]] = Field(
        default=None, description="Optional term -> idf table (see idf_table); None works without a corpus."
    )
    min_idf: float = Field(default=0.0, description="With idf: do not carry terms rarer in value than this.")

    @classmethod
    def class_name(cls) -> str:
        return "OfflineQuestionCompleter"

    @classmethod
    def from_corpus(cls, texts: Iterable[str], **kwargs) -> "OfflineQuestionCompleter":
        return cls(idf=idf_table(texts), **kwargs)

    def _complete(self, history: List[ChatMessage], message: str) -> str:
        stop = STOPWORDS | {w.lower() for w in self.extra_stopwords}
        terms = carried_terms(_user_turns(history), message, self.max_terms, stop, self.idf, self.min_idf)
        if not terms:
            return message
        context = " ".join(terms)
        return f"{context} {message.strip()}" if self.context_first else f"{message.strip()} {context}"
