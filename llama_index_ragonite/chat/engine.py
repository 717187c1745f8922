"""``RagoniteChatEngine``: complete the question, retrieve, answer with cited sources.

One turn: the new message is completed into an intent-explicit question from the
conversation (skipped on the first turn), the completed question is retrieved, the
top evidences are numbered ``### Source i ###`` in the answer prompt, and the answer
cites ``[Source i]``. Citations are mapped back to the nodes they name. When
retrieval finds nothing, the answer is the exact out-of-scope sentence (never
"Empty Response"). Every step fires an instrumentation event, so a trace shows
the completed question, the lexical, dense and fused hits, the prompt and the answer.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass, field
from threading import Thread
from typing import Any, AsyncGenerator, Dict, Generator, List, Optional, Sequence

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.chat_engine.types import AgentChatResponse, BaseChatEngine, StreamingAgentChatResponse
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.llms.llm import LLM
from llama_index.core.memory import BaseMemory, ChatMemoryBuffer
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.chat.completion import OfflineQuestionCompleter, QuestionCompleter
from llama_index_ragonite.events import AnswerEvent, AnswerPromptEvent
from llama_index_ragonite.prompts import ANSWER_PROMPT, OUT_OF_SCOPE, cited_sources, format_history, format_sources
from llama_index_ragonite.errors import LLMCallError

logger = logging.getLogger(__name__)
dispatcher = get_dispatcher(__name__)

MAX_MESSAGE_CHARS = 20_000



@dataclass
class TurnResult:
    """What one turn produced besides the answer text; also copied into ``response.metadata``."""

    completed_question: str = ""
    cited: List[int] = field(default_factory=list)  # 1-based source numbers the answer cites
    prompts: Dict[str, str] = field(default_factory=dict)  # "answer" -> the prompt sent
    follow_ups: List[str] = field(default_factory=list)
    warning: Optional[str] = None  # e.g. the LLM returned no usable text


class _TurnView:
    """The two views every response type gives of its ``turn``."""

    turn: TurnResult
    source_nodes: List[NodeWithScore]

    @property
    def completed_question(self) -> str:
        return self.turn.completed_question

    @property
    def cited_nodes(self) -> List[NodeWithScore]:
        return [self.source_nodes[i - 1] for i in self.turn.cited]


@dataclass
class RagoniteChatResponse(_TurnView, AgentChatResponse):
    """An ``AgentChatResponse`` with the completed question and the citations mapped to nodes."""

    turn: TurnResult = field(default_factory=TurnResult)


@dataclass
class RagoniteStreamingChatResponse(_TurnView, StreamingAgentChatResponse):
    """Streams the answer; ``turn`` (citations, follow-ups) is complete once the stream is consumed."""

    turn: TurnResult = field(default_factory=TurnResult)


class RagoniteChatEngine(BaseChatEngine):
    """Condense-question chat over any retriever and any LlamaIndex LLM, with cited answers.

    Args:
        retriever: any ``BaseRetriever`` (``HybridRetriever`` by default via ``from_store``).
        llm: any LlamaIndex ``LLM``; ``None`` means the offline ``ExtractiveAnswerer``.
        completer: rewrites follow-ups into self-contained questions; ``None`` picks the LLM
            completer for a real LLM and the offline one for the extractive answerer.
        memory: chat memory (token-limited); give it a ``SQLiteChatStore`` to persist conversations.
        top_k: evidences in the answer prompt.
        complete_questions: ``False`` retrieves with the raw message.
        follow_ups: number of suggested next questions (0 disables them).
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
    ) -> None:
        from llama_index_ragonite.models.extractive import ExtractiveAnswerer

        if top_k < 1:
            raise ValueError("top_k must be >= 1")
        self._retriever = retriever
        self._llm = llm if llm is not None else ExtractiveAnswerer()
        if completer is None:
            completer = _default_completer(self._llm)
        self._completer = completer
        self._memory = memory if memory is not None else ChatMemoryBuffer.from_defaults(token_limit=token_limit)
        self._answer_prompt = answer_prompt
        self._top_k, self._complete_questions, self._follow_ups = top_k, complete_questions, follow_ups

    @classmethod
    def from_store(
        cls,
        path,
        llm: Optional[LLM] = None,
        embed_model=None,
        chat_store=None,
        conversation_id: str = "default",
        token_limit: int = 3000,
        retriever_kwargs: Optional[Dict[str, Any]] = None,
        **kwargs: Any,
    ) -> "RagoniteChatEngine":
        """The whole pipeline on a store built by ``ragonite index``; ``llm=None`` is the offline default."""
        from llama_index_ragonite.retrieval.retriever import HybridRetriever

        retriever = HybridRetriever.from_store(path, embed_model=embed_model, **(retriever_kwargs or {}))
        memory = (
            ChatMemoryBuffer.from_defaults(
                token_limit=token_limit, chat_store=chat_store, chat_store_key=conversation_id
            )
            if chat_store is not None
            else None
        )
        return cls(retriever, llm=llm, memory=memory, token_limit=token_limit, **kwargs)

    # -- state ------------------------------------------------------------------
    @property
    def llm(self) -> LLM:
        return self._llm

    @property
    def retriever(self) -> BaseRetriever:
        return self._retriever

    @property
    def answer_prompt(self) -> BasePromptTemplate:
        return self._answer_prompt

    @property
    def memory(self) -> BaseMemory:
        return self._memory

    @property
    def chat_history(self) -> List[ChatMessage]:
        return self._memory.get_all()

    def reset(self) -> None:
        self._memory.reset()

    # -- the turn's steps -------------------------------------------------------
    def _history(self, chat_history: Optional[List[ChatMessage]]) -> List[ChatMessage]:
        if chat_history is not None:
            self._memory.set(chat_history)
        return self._memory.get()

    def _needs_completion(self, history: Sequence[ChatMessage]) -> bool:
        return self._complete_questions and any(m.role == MessageRole.USER for m in history)

    def _prompt(self, question: str, history: Sequence[ChatMessage], nodes: Sequence[NodeWithScore]) -> str:
        prompt = self._answer_prompt.format(
            sources=format_sources(nodes), history=format_history(history), question=question
        )
        dispatcher.event(AnswerPromptEvent(question=question, prompt=prompt, n_sources=len(nodes)))
        return prompt

    def _finish(self, turn: TurnResult, answer: str, nodes: Sequence[NodeWithScore]) -> str:
        answer = (answer or "").strip()
        if not answer:
            if turn.warning is None:
                turn.warning = "The LLM returned no text; answered out of scope."
                logger.warning(turn.warning)
            answer = OUT_OF_SCOPE
        turn.cited = [] if _is_out_of_scope(answer) else cited_sources(answer, len(nodes))
        turn.follow_ups = suggest_follow_ups(nodes, turn.completed_question, self._follow_ups)
        dispatcher.event(AnswerEvent(answer=answer, cited=turn.cited, warning=turn.warning))
        return answer

    def _response(self, answer: str, nodes: List[NodeWithScore], turn: TurnResult) -> RagoniteChatResponse:
        return RagoniteChatResponse(response=answer, source_nodes=nodes, metadata=_metadata(turn, nodes), turn=turn)

    # -- sync -------------------------------------------------------------------
    @dispatcher.span
    def chat(self, message: str, chat_history: Optional[List[ChatMessage]] = None) -> RagoniteChatResponse:
        message, history, turn, nodes = self._begin(message, chat_history)
        if nodes:
            turn.prompts["answer"] = self._prompt(turn.completed_question, history, nodes)
            answer = self._finish(turn, _call(self._llm.complete, turn.prompts["answer"], turn), nodes)
        else:
            answer = self._finish(turn, OUT_OF_SCOPE, nodes)
        self._memory.put(ChatMessage(role=MessageRole.USER, content=message))
        self._memory.put(ChatMessage(role=MessageRole.ASSISTANT, content=answer))
        return self._response(answer, nodes, turn)

    def _begin(self, message: str, chat_history: Optional[List[ChatMessage]]):
        """Check the message, complete it from the history, retrieve for the completed question."""
        message = _checked(message)
        history = self._history(chat_history)
        completed = self._completer.complete(history, message) if self._needs_completion(history) else message
        turn = TurnResult(completed_question=completed)
        return message, history, turn, list(self._retriever.retrieve(completed))[: self._top_k]

    @dispatcher.span
    def stream_chat(
        self, message: str, chat_history: Optional[List[ChatMessage]] = None
    ) -> RagoniteStreamingChatResponse:
        message, history, turn, nodes = self._begin(message, chat_history)
        if nodes:
            turn.prompts["answer"] = self._prompt(turn.completed_question, history, nodes)
            deltas = _stream(self._llm, turn.prompts["answer"], turn)
        else:
            deltas = iter([OUT_OF_SCOPE])
        self._memory.put(ChatMessage(role=MessageRole.USER, content=message))
        response = RagoniteStreamingChatResponse(source_nodes=nodes, turn=turn)
        response.chat_stream = self._finishing_stream(deltas, turn, nodes, response)
        thread = Thread(target=response.write_response_to_history, args=(self._memory,))
        response.write_response_to_history_thread = thread
        thread.start()
        return response

    def _finishing_stream(self, deltas, turn, nodes, response) -> Generator[ChatResponse, None, None]:
        text = ""
        for delta in deltas:
            text += delta
            yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text), delta=delta)
        answer = self._finish(turn, text, nodes)
        if answer != text.strip():  # empty stream -> the out-of-scope sentence
            yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=answer), delta=answer)
        response.metadata = _metadata(turn, nodes)

    # -- async ------------------------------------------------------------------
    @dispatcher.span
    async def achat(self, message: str, chat_history: Optional[List[ChatMessage]] = None) -> RagoniteChatResponse:
        message, history, turn, nodes = await self._abegin(message, chat_history)
        if nodes:
            turn.prompts["answer"] = self._prompt(turn.completed_question, history, nodes)
            answer = self._finish(turn, await _acall(self._llm.acomplete, turn.prompts["answer"], turn), nodes)
        else:
            answer = self._finish(turn, OUT_OF_SCOPE, nodes)
        await self._memory.aput(ChatMessage(role=MessageRole.USER, content=message))
        await self._memory.aput(ChatMessage(role=MessageRole.ASSISTANT, content=answer))
        return self._response(answer, nodes, turn)

    async def _abegin(self, message: str, chat_history: Optional[List[ChatMessage]]):
        message = _checked(message)
        history = self._history(chat_history)
        needs = self._needs_completion(history)
        completed = await self._completer.acomplete(history, message) if needs else message
        turn = TurnResult(completed_question=completed)
        return message, history, turn, list(await self._retriever.aretrieve(completed))[: self._top_k]

    @dispatcher.span
    async def astream_chat(
        self, message: str, chat_history: Optional[List[ChatMessage]] = None
    ) -> RagoniteStreamingChatResponse:
        message, history, turn, nodes = await self._abegin(message, chat_history)
        if nodes:
            turn.prompts["answer"] = self._prompt(turn.completed_question, history, nodes)
            deltas = _astream(self._llm, turn.prompts["answer"], turn)
        else:
            deltas = _aiter([OUT_OF_SCOPE])
        await self._memory.aput(ChatMessage(role=MessageRole.USER, content=message))
        response = RagoniteStreamingChatResponse(source_nodes=nodes, turn=turn)
        response.achat_stream = self._afinishing_stream(deltas, turn, nodes, response)
        response.awrite_response_to_history_task = asyncio.create_task(
            response.awrite_response_to_history(self._memory)
        )
        return response

    async def _afinishing_stream(self, deltas, turn, nodes, response) -> AsyncGenerator[ChatResponse, None]:
        text = ""
        async for delta in deltas:
            text += delta
            yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text), delta=delta)
        answer = self._finish(turn, text, nodes)
        if answer != text.strip():
            yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=answer), delta=answer)
        response.metadata = _metadata(turn, nodes)


def _default_completer(llm: LLM) -> QuestionCompleter:
    from llama_index_ragonite.chat.completion import LLMQuestionCompleter
    from llama_index_ragonite.models.extractive import ExtractiveAnswerer

    return OfflineQuestionCompleter() if isinstance(llm, ExtractiveAnswerer) else LLMQuestionCompleter(llm=llm)


def _checked(message: str) -> str:
    if not isinstance(message, str) or not message.strip():
        raise ValueError("Empty message: ask a question")
    if len(message) > MAX_MESSAGE_CHARS:
        raise ValueError(
            f"Message of {len(message):,} characters is longer than {MAX_MESSAGE_CHARS:,}: ask a question, "
            "not a document (index documents with `ragonite index`)"
        )
    return message.strip()


def _is_out_of_scope(answer: str) -> bool:
    return OUT_OF_SCOPE.rstrip(".").lower() in answer.lower()


def _metadata(turn: TurnResult, nodes: Sequence[NodeWithScore]) -> Dict[str, Any]:
    return {
        "completed_question": turn.completed_question,
        "cited_sources": list(turn.cited),
        "cited_node_ids": [nodes[i - 1].node.node_id for i in turn.cited],
        "prompts": dict(turn.prompts),
        "follow_ups": list(turn.follow_ups),
        "warning": turn.warning,
    }


_HEADING_SPLIT = re.compile(r"\s*>\s*")


def suggest_follow_ups(nodes: Sequence[NodeWithScore], asked: str, limit: int = 3) -> List[str]:
    """Up to ``limit`` next questions the retrieved evidences can answer, from their titles and headings.

    Offline and deterministic: each distinct (page, section) among the retrieved evidences, in
    retrieval order, becomes "What does <page> say about <section>?", skipping what was just asked.
    """
    out: List[str] = []
    asked_lower = asked.lower()
    for hit in nodes if limit > 0 else []:
        meta = hit.node.metadata
        title = str(meta.get("title") or "").strip()
        section = _HEADING_SPLIT.split(str(meta.get("heading_path") or ""))[-1].strip()
        if not title:
            continue
        question = f"What does '{title}' say about {section}?" if section else f"What is '{title}' about?"
        if question not in out and (section or title).lower() not in asked_lower:
            out.append(question)
        if len(out) >= limit:
            break
    return out


# -- LLM calls: transport failures become clear errors, garbled output a warned fallback --
MALFORMED = (json.JSONDecodeError, TypeError, KeyError, IndexError)  # what clients raise on garbled replies


def _llm_error(err: Exception) -> Exception:
    name = type(err).__name__
    if "Timeout" in name or isinstance(err, (TimeoutError, asyncio.TimeoutError)):
        return LLMCallError(f"The LLM did not answer in time ({name}: {err})")
    if "Connection" in name or isinstance(err, ConnectionError):
        return LLMCallError(f"The LLM could not be reached ({name}: {err})")
    if type(err).__module__.split(".")[0] == "openai":  # rate limits and server errors, after the client's retries
        return LLMCallError(f"The LLM service failed ({name}: {err})")
    return err


def _malformed(turn: TurnResult, err: Exception) -> str:
    turn.warning = f"The LLM returned malformed output ({type(err).__name__}: {err}); answered out of scope."
    logger.warning(turn.warning, exc_info=err)
    return ""


def _call(fn, prompt: str, turn: TurnResult) -> str:
    try:
        return fn(prompt).text or ""
    except MALFORMED as err:
        return _malformed(turn, err)
    except Exception as err:
        raise _llm_error(err) from err


async def _acall(fn, prompt: str, turn: TurnResult) -> str:
    try:
        return (await fn(prompt)).text or ""
    except MALFORMED as err:
        return _malformed(turn, err)
    except Exception as err:
        raise _llm_error(err) from err


def _stream(llm: LLM, prompt: str, turn: TurnResult) -> Generator[str, None, None]:
    try:
        for chunk in llm.stream_complete(prompt):
            if chunk.delta:
                yield chunk.delta
    except MALFORMED as err:  # keep what arrived; the warning says the rest was garbled
        _malformed(turn, err)
    except Exception as err:
        raise _llm_error(err) from err


async def _astream(llm: LLM, prompt: str, turn: TurnResult) -> AsyncGenerator[str, None]:
    try:
        async for chunk in await llm.astream_complete(prompt):
            if chunk.delta:
                yield chunk.delta
    except MALFORMED as err:
        _malformed(turn, err)
    except Exception as err:
        raise _llm_error(err) from err


async def _aiter(items: Sequence[str]) -> AsyncGenerator[str, None]:
    for item in items:
        yield item
