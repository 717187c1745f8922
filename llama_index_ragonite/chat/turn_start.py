"""What a chat turn starts from: the user's message checked, its language, its result so far, and the
user message the memory keeps (with the page its answer came from, the next turn's topic, and every page
the turn was built from, which decides whether a later turn may read it: ``turn_access``)."""

from __future__ import annotations

from typing import Any, Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms.llm import LLM
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.chat.answering import is_offline
from llama_index_ragonite.chat.completion import OfflineQuestionCompleter, QuestionCompleter
from llama_index_ragonite.chat.conversation_retrieval import TOPIC_KEY, topic_of
from llama_index_ragonite.chat.responses import TurnResult
from llama_index_ragonite.chat.suggestions import question_language
from llama_index_ragonite.chat.turn_access import PAGES_KEY
from llama_index_ragonite.prompts import is_out_of_scope

__all__ = [
    "MAX_MESSAGE_CHARS",
    "checked_message",
    "default_completer",
    "is_out_of_scope",
    "note_cut",
    "turn_for",
    "user_message",
]

MAX_MESSAGE_CHARS = 20_000


def turn_for(message: str, completed: str) -> TurnResult:
    """The turn's result so far: its completed question, its language, and the completer's warning if any
    (``Completion.warning``: an LLM's rephrasing that was not used)."""
    turn = TurnResult(completed_question=str(completed), language=turn_language(message, completed))
    warning = getattr(completed, "warning", None)  # a ``Completion``'s
    if warning:
        turn.warn(warning)
    return turn


def note_cut(turn: TurnResult, embed_model: Any, query: str) -> None:
    """Note on ``turn`` what of a query longer than ``embed_model``'s window it embedded (``models.asking``):
    a pasted log plus a question is searched by words whole, by meaning only in the part that asks."""
    cut = getattr(embed_model, "embedded_part", None)
    if callable(cut) and (embedded := cut(query)) != query:
        turn.embedded = embedded


def user_message(
    message: str, nodes: Sequence[NodeWithScore], pages: Sequence[str], cited: Sequence[int] = ()
) -> ChatMessage:
    """The user's turn for the memory, with the page that answered it (the next turn's topic: the page of its
    first ``cited`` source, 1-based; without a citation its top evidence's) and ``pages``, every page the turn
    was built from (``TurnResult.pages``). Why the cited page: when an older copy ranks first and the answer
    comes from the current page, a follow-up is about the current one."""
    answered = [nodes[i - 1] for i in cited if 0 < i <= len(nodes)]
    topic = topic_of(answered[:1]) or topic_of(nodes)
    kept = {TOPIC_KEY: topic, PAGES_KEY: list(pages)} if topic else {PAGES_KEY: list(pages)}
    return ChatMessage(role=MessageRole.USER, content=message, additional_kwargs=kept)


def default_completer(llm: LLM) -> QuestionCompleter:
    """The offline completer for the extractive answerer, the paper's LLM completion for a real LLM."""
    from llama_index_ragonite.chat.completion import LLMQuestionCompleter

    return OfflineQuestionCompleter() if is_offline(llm) else LLMQuestionCompleter(llm=llm)


def turn_language(message: str, completed: str) -> str:
    """The user's turn's language; a message too short to tell ("Bob?") takes the completed question's."""
    return question_language(message) or question_language(completed) or "en"


def checked_message(message: str) -> str:
    if not isinstance(message, str) or not any(c.isprintable() and not c.isspace() for c in message):
        raise ValueError("Empty message: ask a question")  # blank, or nothing but control characters
    if len(message) > MAX_MESSAGE_CHARS:
        raise ValueError(
            f"Message of {len(message):,} characters is longer than {MAX_MESSAGE_CHARS:,}: ask a question, "
            "not a document (index documents with `ragonite index`)"
        )
    return message.strip()
