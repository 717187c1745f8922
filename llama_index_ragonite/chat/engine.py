"""``RagoniteChatEngine``: complete the question, retrieve, answer with cited sources.

One turn: the new message is completed into an intent-explicit question from the conversation
(skipped on the first turn), the completed question is retrieved, the node postprocessors run, the
top evidences go to the engine's one answer synthesizer (``answering.py``: with an LLM numbered
``### Source i ###`` in the answer prompt, offline read as nodes), and the answer cites ``[Source i]``,
mapped back to the nodes; with no evidence left it is the exact out-of-scope sentence. Every step fires an
instrumentation event: a trace shows the completed question, each side's hits, the prompt an LLM received
(offline: the sources the answerer read), the answer.
"""

from __future__ import annotations

import asyncio
import logging
from operator import attrgetter
from threading import Thread
from typing import AsyncGenerator, Generator, List, Optional, Sequence

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.callbacks import CallbackManager, CBEventType, EventPayload, trace_method
from llama_index.core.chat_engine.types import BaseChatEngine
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.llms.llm import LLM
from llama_index.core.memory import BaseMemory
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.schema import NodeWithScore
from llama_index.core.settings import Settings

from llama_index_ragonite.chat.answering import Answering, answered, apostprocessed, is_offline, postprocessed
from llama_index_ragonite.chat.building import EngineBuilding, new_memory
from llama_index_ragonite.chat.completion import OfflineQuestionCompleter, QuestionCompleter
from llama_index_ragonite.chat.conversation_retrieval import ConversationRetrieval
from llama_index_ragonite.chat.responses import (
    RagoniteChatResponse,
    RagoniteStreamingChatResponse,
    TurnResult,
    truncated_message,
    turn_metadata,
    without_truncated,
)
from llama_index_ragonite.chat.suggestions import FollowUpSuggester, suggest_follow_ups
from llama_index_ragonite.chat.turn_access import MayRead, built_from, readable_history, store_reader
from llama_index_ragonite.chat.turn_start import (
    MAX_MESSAGE_CHARS,
    checked_message,
    default_completer,
    is_out_of_scope,
    note_cut,
    turn_for,
    user_message,
)
from llama_index_ragonite.errors import LLMCallError
from llama_index_ragonite.events import AnswerEvent, AnswerPromptEvent, AnswerSourcesEvent
from llama_index_ragonite.index.access import Principal
from llama_index_ragonite.models.defaults import resolve_llm, settings_llm
from llama_index_ragonite.models.llm_calls import aiter_items, close_stream
from llama_index_ragonite.prompts import ANSWER_PROMPT, OUT_OF_SCOPE
from llama_index_ragonite.retrieval.narrowing import ActingRetriever

__all__ = [
    "LLMCallError",
    "MAX_MESSAGE_CHARS",
    "RagoniteChatEngine",
    "RagoniteChatResponse",
    "RagoniteStreamingChatResponse",
    "TurnResult",
    "suggest_follow_ups",
]

logger = logging.getLogger(__name__)
dispatcher = get_dispatcher(__name__)


class RagoniteChatEngine(EngineBuilding, BaseChatEngine):
    """Condense-question chat over any retriever and any LlamaIndex LLM, with cited answers.

    Build it like LlamaIndex's own chat engines with ``from_defaults`` (or ``from_store`` for a
    store made by ``ragonite index``).

    Args:
        retriever: any ``BaseRetriever`` (``HybridRetriever`` by default via ``from_store``).
        llm: any LlamaIndex ``LLM``; ``None`` means ``Settings.llm`` when the user set one, else
            the offline ``ExtractiveAnswerer`` (``models.defaults.resolve_llm``).
        completer: rewrites follow-ups into self-contained questions; ``None`` picks the LLM
            completer for a real LLM and the offline one for the extractive answerer.
        memory: chat memory (token-limited); give it a ``SQLiteChatStore`` to persist conversations.
        answer_prompt: the prompt the evidences are numbered in.
        top_k: evidences in the answer prompt, cut *after* the node postprocessors, so that a
            reranker or a similarity cutoff sees the retriever's whole pool.
        complete_questions: ``False`` retrieves with the raw message.
        follow_ups: number of suggested next questions (0 disables them), in the language of the
            user's turn; a real LLM writes them in one extra short call (offline ones if it fails).
        token_limit: the default memory's token limit.
        node_postprocessors: applied in order to the retrieved nodes, with the completed question
            as ``QueryBundle`` (e.g. ``SimilarityPostprocessor``, ``BGEReranker``); each gets the
            engine's callback manager, as in LlamaIndex's chat engines.
        callback_manager: gets the ``chat`` trace and a ``SYNTHESIZE`` event per answer;
            default ``Settings.callback_manager``.
        conversation_retrieval: retrieves a follow-up with its conversation too and keeps the ranking
            the evidence favours (``chat.conversation_retrieval``); ``None``: on with the offline
            completer, off otherwise; ``False``: off.
        principal: who asks: retrieval returns only what they may read (``index.access``).
        may_read: whether the caller may read every page of a set now (default, with ``principal``: under the
            store's newest access map); a new turn never reads an earlier one it refuses (``chat.turn_access``).
    """

    def __init__(
        self,
        retriever: BaseRetriever,
        llm: Optional[LLM] = None,
        completer: Optional[QuestionCompleter] = None,
        memory: Optional[BaseMemory] = None,
        answer_prompt: BasePromptTemplate = ANSWER_PROMPT,
        top_k: int = 10,
        complete_questions: bool = True,
        follow_ups: int = 3,
        token_limit: int = 3000,
        node_postprocessors: Optional[Sequence[BaseNodePostprocessor]] = None,
        callback_manager: Optional[CallbackManager] = None,
        conversation_retrieval: Optional[ConversationRetrieval | bool] = None,
        principal: Optional[Principal] = None,
        may_read: Optional[MayRead] = None,
    ) -> None:
        if top_k < 1:
            raise ValueError("top_k must be >= 1")
        self.callback_manager = callback_manager or Settings.callback_manager
        self._retriever = retriever if principal is None else ActingRetriever(retriever, principal)
        self._may_read = may_read or (store_reader(retriever, principal) if principal is not None else None)
        self._llm = resolve_llm(llm)
        if llm is None and settings_llm() is None:  # our own default, wired like Settings' default LLM
            self._llm.callback_manager = self.callback_manager
        self._completer = completer if completer is not None else default_completer(self._llm)
        if conversation_retrieval is None or conversation_retrieval is True:
            auto = conversation_retrieval or isinstance(self._completer, OfflineQuestionCompleter)
            conversation_retrieval = ConversationRetrieval() if auto else None
        self._conversation = conversation_retrieval or None
        self._memory = memory if memory is not None else new_memory(token_limit=token_limit)
        self._answer_prompt = answer_prompt
        self._top_k, self._complete_questions, self._follow_ups = top_k, complete_questions, follow_ups
        self._suggester = FollowUpSuggester(llm=None if is_offline(self._llm) else self._llm, limit=follow_ups)
        self._answering = Answering(
            self._llm, getattr(retriever, "embed_model", None), answer_prompt, callback_manager=self.callback_manager
        )
        self._node_postprocessors = list(node_postprocessors or [])
        for postprocessor in self._node_postprocessors:
            postprocessor.callback_manager = self.callback_manager

    # -- state ------------------------------------------------------------------
    llm = property(attrgetter("_llm"), doc="The LLM that writes the answers.")
    retriever = property(attrgetter("_retriever"), doc="Finds the evidences for the completed question.")
    answer_prompt = property(attrgetter("_answer_prompt"), doc="The prompt the evidences are numbered in.")
    answer_synthesizer = property(
        lambda self: self._answering.synthesizer,
        doc="The synthesizer that answers from the nodes (offline: ExtractiveSynthesizer; with an LLM: "
        "CitedSynthesizer on the answer prompt): explainers regenerate through it.",
    )
    memory = property(attrgetter("_memory"), doc="The conversation so far (token-limited).")

    chat_history = property(
        lambda self: readable_history(self._memory.get_all(), self._may_read),
        doc="Every message of the conversation the caller may still read (``may_read``).",
    )

    def reset(self) -> None:
        self._memory.reset()

    # -- the turn's steps -------------------------------------------------------
    def readable_history(self) -> List[ChatMessage]:
        """What the next turn builds on, the one place it is assembled: the memory's window less the answers
        that broke off and every exchange the caller may no longer fully read (``chat.turn_access``)."""
        return readable_history(without_truncated(self._memory.get()), self._may_read)

    def _history(self, chat_history: Optional[List[ChatMessage]]) -> List[ChatMessage]:
        if chat_history is not None:
            self._memory.set(chat_history)
        return self.readable_history()

    def _needs_completion(self, history: Sequence[ChatMessage]) -> bool:
        return self._complete_questions and any(m.role == MessageRole.USER for m in history)

    def _traced(self, turn: TurnResult, nodes: Sequence[NodeWithScore]) -> None:
        """What the answer step read, for the trace: the prompt an LLM received, or (offline) the sources."""
        question, n = turn.completed_question, len(nodes)
        if "answer" in turn.prompts:
            dispatcher.event(AnswerPromptEvent(question=question, prompt=turn.prompts["answer"], n_sources=n))
        else:
            dispatcher.event(
                AnswerSourcesEvent(
                    question=question, node_ids=list(turn.read), n_sources=n, decision=dict(turn.decision)
                )
            )

    def _finish(
        self, turn: TurnResult, answer: str, nodes: Sequence[NodeWithScore], suggested: Optional[List[str]] = None
    ) -> str:
        """The follow-ups of the answer (checked by the synthesizer: ``turn.cited``), and its event."""
        answered = not is_out_of_scope(answer)
        turn.follow_ups = suggested or self._suggester.offline(
            nodes, turn.completed_question, turn.language, turn.cited, answered
        )
        dispatcher.event(AnswerEvent(answer=answer, cited=turn.cited, warning=turn.warning))
        return answer

    def _response(self, answer: str, nodes: List[NodeWithScore], turn: TurnResult) -> RagoniteChatResponse:
        return RagoniteChatResponse(response=answer, source_nodes=nodes, metadata=turn_metadata(turn, nodes), turn=turn)

    def _synthesize_event(self, turn: TurnResult):
        """The callback event around writing the answer (what a response synthesizer fires in core)."""
        return self.callback_manager.event(
            CBEventType.SYNTHESIZE, payload={EventPayload.QUERY_STR: turn.completed_question}
        )

    # -- sync -------------------------------------------------------------------
    @dispatcher.span
    @trace_method("chat")
    def chat(self, message: str, chat_history: Optional[List[ChatMessage]] = None) -> RagoniteChatResponse:
        message, history, turn, nodes = self._begin(message, chat_history)
        if nodes:  # the synthesizer fires the SYNTHESIZE event on our callback manager
            text = self._answering.text(turn, history, nodes)
            self._traced(turn, nodes)
            suggested = self._suggester.ask(nodes, turn.completed_question, turn.language, turn.prompts)
            answer = self._finish(turn, text, nodes, suggested)
        else:
            with self._synthesize_event(turn) as event:
                answer = self._finish(turn, OUT_OF_SCOPE, nodes)
                answered(event, answer, nodes)
        self._memory.put(user_message(message, nodes, turn.pages, turn.cited))
        self._memory.put(ChatMessage(role=MessageRole.ASSISTANT, content=answer))
        return self._response(answer, nodes, turn)

    def _begin(self, message: str, chat_history: Optional[List[ChatMessage]]):
        """Check the message, complete it from the history, retrieve and postprocess for the completed question."""
        message = checked_message(message)
        history = self._history(chat_history)
        completed = self._completer.complete(history, message) if self._needs_completion(history) else message
        turn = turn_for(message, completed)
        if self._conversation is None or not self._needs_completion(history):
            found = self._retriever.retrieve(completed)
        else:
            hits = self._conversation.retrieve(self._retriever, history, message, completed)
            turn.retrieval, found = hits.record(), hits.nodes
        note_cut(turn, getattr(self._retriever, "embed_model", None), turn.retrieval.get("query") or completed)
        nodes = postprocessed(self._node_postprocessors, self._top_k, completed, found)
        turn.pages = built_from(history, nodes)
        return message, history, turn, nodes

    @dispatcher.span
    @trace_method("chat")
    def stream_chat(
        self, message: str, chat_history: Optional[List[ChatMessage]] = None
    ) -> RagoniteStreamingChatResponse:
        message, history, turn, nodes = self._begin(message, chat_history)
        if nodes:  # its SYNTHESIZE event ends when the stream is set up, as core's streaming synthesizers
            deltas = self._answering.deltas(turn, history, nodes)
            self._traced(turn, nodes)
        else:
            with self._synthesize_event(turn):
                deltas = iter([OUT_OF_SCOPE])
        response = RagoniteStreamingChatResponse(source_nodes=nodes, turn=turn)
        response.chat_stream = self._finishing_stream(deltas, turn, nodes, response, message)
        thread = Thread(target=response.write_response_to_history, args=(self._memory,))
        response.write_response_to_history_thread = thread
        thread.start()
        return response

    def _finishing_stream(self, deltas, turn, nodes, response, message) -> Generator[ChatResponse, None, None]:
        """The stream; when it ends, the user's turn goes to memory with the page that answered (its cited
        source's, known only now: the next turn's referent), before the answer (``write_response_to_history``)."""
        text = ""
        try:
            for delta in deltas:
                text += delta
                yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text), delta=delta)
                if response.cancelled.is_set():
                    turn.stop_early()
                    close_stream(deltas)  # closes the LLM's HTTP response too; the text so far is checked
                    break
            suggested = (
                None
                if turn.truncated
                else self._suggester.ask(nodes, turn.completed_question, turn.language, turn.prompts)
            )
            answer = self._finish(turn, _checked(deltas), nodes, suggested)  # what was streamed keeps invalid markers
        finally:
            self._memory.put(user_message(message, nodes, turn.pages, turn.cited))
        if not text.strip():  # empty stream -> the out-of-scope sentence
            yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=answer), delta=answer)
        if turn.truncated:  # the message memory stores: marked, so later turns do not build on it
            yield ChatResponse(message=truncated_message(text), delta="")
        response.metadata = turn_metadata(turn, nodes)

    # -- async ------------------------------------------------------------------
    @dispatcher.span
    @trace_method("chat")
    async def achat(self, message: str, chat_history: Optional[List[ChatMessage]] = None) -> RagoniteChatResponse:
        message, history, turn, nodes = await self._abegin(message, chat_history)
        if nodes:
            text = await self._answering.atext(turn, history, nodes)
            self._traced(turn, nodes)
            suggested = await self._suggester.aask(nodes, turn.completed_question, turn.language, turn.prompts)
            answer = self._finish(turn, text, nodes, suggested)
        else:
            with self._synthesize_event(turn) as event:
                answer = self._finish(turn, OUT_OF_SCOPE, nodes)
                answered(event, answer, nodes)
        await self._memory.aput(user_message(message, nodes, turn.pages, turn.cited))
        await self._memory.aput(ChatMessage(role=MessageRole.ASSISTANT, content=answer))
        return self._response(answer, nodes, turn)

    async def _abegin(self, message: str, chat_history: Optional[List[ChatMessage]]):
        message = checked_message(message)
        history = self._history(chat_history)
        needs = self._needs_completion(history)
        completed = await self._completer.acomplete(history, message) if needs else message
        turn = turn_for(message, completed)
        if self._conversation is None or not needs:
            found = await self._retriever.aretrieve(completed)
        else:
            hits = await self._conversation.aretrieve(self._retriever, history, message, completed)
            turn.retrieval, found = hits.record(), hits.nodes
        note_cut(turn, getattr(self._retriever, "embed_model", None), turn.retrieval.get("query") or completed)
        nodes = await apostprocessed(self._node_postprocessors, self._top_k, completed, found)
        turn.pages = built_from(history, nodes)
        return message, history, turn, nodes

    @dispatcher.span
    @trace_method("chat")
    async def astream_chat(
        self, message: str, chat_history: Optional[List[ChatMessage]] = None
    ) -> RagoniteStreamingChatResponse:
        message, history, turn, nodes = await self._abegin(message, chat_history)
        if nodes:
            deltas = await self._answering.adeltas(turn, history, nodes)
            self._traced(turn, nodes)
        else:
            with self._synthesize_event(turn):
                deltas = aiter_items([OUT_OF_SCOPE])
        response = RagoniteStreamingChatResponse(source_nodes=nodes, turn=turn)
        response.achat_stream = self._afinishing_stream(deltas, turn, nodes, response, message)
        response.awrite_response_to_history_task = asyncio.create_task(
            response.awrite_response_to_history(self._memory)
        )
        return response

    async def _afinishing_stream(self, deltas, turn, nodes, response, message) -> AsyncGenerator[ChatResponse, None]:
        text = ""
        try:
            async for delta in deltas:
                text += delta
                yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text), delta=delta)
            asked = (nodes, turn.completed_question, turn.language, turn.prompts)
            suggested = None if turn.truncated else await self._suggester.aask(*asked)
            answer = self._finish(turn, _checked(deltas), nodes, suggested)
        finally:  # as _finishing_stream: the user's turn with the page that answered, before the answer
            await self._memory.aput(user_message(message, nodes, turn.pages, turn.cited))
        if not text.strip():
            yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=answer), delta=answer)
        if turn.truncated:
            yield ChatResponse(message=truncated_message(text), delta="")
        response.metadata = turn_metadata(turn, nodes)


def _checked(deltas: object) -> str:
    """A finished stream's answer, its citations checked by the synthesizer (no nodes: the out-of-scope sentence)."""
    return getattr(deltas, "answer", None) or OUT_OF_SCOPE
