"""The app's state: domains and their retrievers, the LLMs, and the conversations of each user.

Everything here is synchronous and CPU-bound (retrieval, embedding, the offline answerer);
the routes call it through ``anyio.to_thread``. Retrievers are shared per (domain, fusion),
loaded once; a chat engine is built per turn (cheap: its memory reads the conversation from
the chat store), and turns of one conversation run one at a time under that conversation's
lock, so concurrent users never share or corrupt a memory.
"""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from pathlib import Path
from queue import Empty
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from llama_index.core.base.llms.types import MessageRole

from llama_index_ragonite.chat.answering import is_offline
from llama_index_ragonite.chat.chat_store import SQLiteChatStore, UnknownConversationError
from llama_index_ragonite.chat.completion import LLMQuestionCompleter, OfflineQuestionCompleter
from llama_index_ragonite.chat.engine import RagoniteChatEngine
from llama_index_ragonite.chat.responses import truncated_message, without_truncated
from llama_index_ragonite.errors import ChatStoreError
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.models.specs import embedding_from_spec, llm_from_spec
from llama_index_ragonite.redaction import redacted
from llama_index_ragonite.retrieval.retriever import HybridRetriever
from llama_index_ragonite.serve.config import ServeConfig
from llama_index_ragonite.serve.records import ServeRecords
from llama_index_ragonite.serve.turn_control import TurnDeadlineError, TurnMemory, TurnStop
from llama_index_ragonite.serve.turns import TurnTrace, node_record, turn_json

__all__ = ["FUSIONS", "HistoryGoneError", "NotFound", "Sessions", "TooManyConversations", "public_spec"]

FUSIONS = ("rrf", "rerank", "rerank+rrf")
TOP_K_MAX = 20
BUSY_TIMEOUT = 5.0  # seconds a request waits for another process's write lock on the history (then 503)


class TooManyConversations(ValueError):
    """A user has as many conversations as ``--max-conversations-per-user`` (409 kind input)."""


def public_spec(spec: str) -> str:
    """An LLM spec as users may see it: no credentials in its URL, no query string."""
    return re.sub(r"[?#].*$", "", redacted(spec)) if "://" in spec else spec


class HistoryGoneError(ChatStoreError):
    """The history file was removed or replaced while the server ran (503, kind ``store``)."""


def _identity(path: Path) -> Optional[Tuple[int, int]]:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


class NotFound(LookupError):
    """No such conversation or turn for this user (another user's id is not found either)."""


class Sessions:
    """Domains, LLMs and conversations behind the API (see the module doc)."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        history = config.history_file()
        self.chat_store = SQLiteChatStore(history, busy_timeout=BUSY_TIMEOUT)
        self.records = ServeRecords(history.with_name(history.stem + ".serve.sqlite"), busy_timeout=BUSY_TIMEOUT)
        self._files = {path: _identity(path) for path in (history, self.records.path)}
        self.embed_model = embedding_from_spec(config.embedding, device=config.device)
        self.llms = {name: llm_from_spec(spec) for name, spec in config.llms.items()}
        self.reranker = None
        if config.reranker:
            from llama_index_ragonite.models.hub_models import default_reranker

            self.reranker = default_reranker(device=config.device)
        self.stores: Dict[str, EvidenceStore] = config.open_stores(self.embed_model)  # on --chroma-server if given
        self._retrievers: Dict[Tuple[str, str], HybridRetriever] = {}
        self._lock = threading.Lock()
        self._conversation_locks: Dict[str, threading.Lock] = {}
        TurnTrace.install()
        for name in self.stores:
            self.retriever(name, "rrf")  # load every domain now: the first turn should not wait for it

    # -- resources ------------------------------------------------------------------------
    @property
    def fusions(self) -> List[str]:
        return list(FUSIONS) if self.reranker is not None else ["rrf"]

    def retriever(self, domain: str, fusion: str) -> HybridRetriever:
        with self._lock:
            key = (domain, fusion)
            if key not in self._retrievers:
                extra = {"reranker": self.reranker} if fusion != "rrf" else {}
                self._retrievers[key] = HybridRetriever.from_store(
                    self.stores[domain], top_n=TOP_K_MAX, fusion=fusion, **extra
                )
            return self._retrievers[key]

    def domains(self) -> List[Dict[str, Any]]:
        return [
            {
                "name": name,
                "store": store.path.name,  # the folder's name: the server's paths are not the users' business
                "evidences": len(store),
                "pages": len(store.manifest.get("pages") or {}),
            }
            for name, store in self.stores.items()
        ]

    def llm_list(self) -> List[Dict[str, Any]]:
        default = self.config.default_llm
        return [
            {"name": name, "spec": public_spec(spec), "default": name == default}
            for name, spec in self.config.llms.items()
        ]

    def default_settings(self, domain: Optional[str] = None) -> Dict[str, Any]:
        return {
            "domain": domain or self.config.default_domain,
            "fusion": "rrf",
            "top_k": 10,
            "complete_questions": True,
            "llm": self.config.default_llm,
        }

    def check_settings(self, settings: Dict[str, Any]) -> Dict[str, Any]:
        """``settings`` when every value is one this server offers; ``ValueError`` (422) otherwise."""
        if settings["domain"] not in self.stores:
            raise ValueError(f"Unknown domain {settings['domain']!r}: choose one of {', '.join(self.stores)}")
        if settings["llm"] not in self.llms:
            raise ValueError(f"Unknown LLM {settings['llm']!r}: choose one of {', '.join(self.llms)}")
        if settings["fusion"] not in self.fusions:
            raise ValueError(
                f"Fusion {settings['fusion']!r} needs the reranker (start with --reranker and the [bge] extra); "
                f"available: {', '.join(self.fusions)}"
            )
        if not 1 <= int(settings["top_k"]) <= TOP_K_MAX:
            raise ValueError(f"top_k must be between 1 and {TOP_K_MAX}")
        return settings

    def check_files(self) -> None:
        """``HistoryGoneError`` when a history file was removed or replaced since the server started.

        SQLite would go on writing into the removed file (its open handle keeps it alive) and
        every conversation since would vanish at the next restart: refuse instead, saying so.
        """
        for path, identity in self._files.items():
            if _identity(path) != identity:
                raise HistoryGoneError(
                    f"The conversation history file ({path.name}) was removed or replaced while the server ran, "
                    "so nothing more can be saved: restore it, or restart the server to begin a new one"
                )

    # -- conversations ----------------------------------------------------------------------
    def conversation_lock(self, conversation_id: str) -> threading.Lock:
        with self._lock:
            return self._conversation_locks.setdefault(conversation_id, threading.Lock())

    def create(self, owner: str, domain: Optional[str] = None) -> Dict[str, Any]:
        self.check_files()
        settings = self.check_settings(self.default_settings(domain))
        cap = self.config.max_conversations_per_user
        conversation_id = uuid.uuid4().hex
        with self._lock:  # count and add together: concurrent creates cannot pass the cap
            if self.records.count(owner) >= cap:
                raise TooManyConversations(
                    f"You have {cap:,} conversations, as many as this server keeps per user: purge some first"
                )
            self.chat_store.set_messages(conversation_id, [])  # listed from now on
            self.records.add(conversation_id, owner, settings)
        return self.conversation(owner, conversation_id)

    def owned(self, owner: str, conversation_id: str) -> Dict[str, Any]:
        self.check_files()
        record = self.records.get(conversation_id, owner)
        if record is None:
            raise NotFound(f"No conversation {conversation_id!r}")
        return record

    def _json(self, info, settings: Dict[str, Any]) -> Dict[str, Any]:
        return {
            "id": info.id,
            "domain": settings["domain"],
            "title": info.title,
            "created": info.created_at.isoformat(),
            "updated": info.updated_at.isoformat(),
            "deleted": info.deleted,
            "messages": info.message_count,
            "settings": settings,
        }

    def conversation(self, owner: str, conversation_id: str, turns: bool = False) -> Dict[str, Any]:
        record = self.owned(owner, conversation_id)
        try:
            out = self._json(self.chat_store.get_conversation(conversation_id), record["settings"])
        except UnknownConversationError as err:
            raise NotFound(f"No conversation {conversation_id!r}") from err
        if turns:
            ratings = {f.message_index: f.rating for f in self.chat_store.get_feedback(conversation_id)}
            out["turns"] = []
            for turn, message_index in self.records.turns(conversation_id):
                out["turns"].append({**turn, "feedback": ratings.get(message_index)})
        return out

    def conversations(self, owner: str, include_deleted: bool = False) -> List[Dict[str, Any]]:
        self.check_files()
        mine = self.records.owned(owner)
        infos = self.chat_store.list_conversations(include_deleted=include_deleted, ids=list(mine))
        return [self._json(info, mine[info.id]) for info in infos if info.id in mine]

    def delete(self, owner: str, conversation_id: str) -> None:
        self.owned(owner, conversation_id)
        self.chat_store.delete_conversation(conversation_id)

    def restore(self, owner: str, conversation_id: str) -> Dict[str, Any]:
        self.owned(owner, conversation_id)
        self.chat_store.restore_conversation(conversation_id)
        return self.conversation(owner, conversation_id)

    def update_settings(self, owner: str, conversation_id: str, changes: Dict[str, Any]) -> Dict[str, Any]:
        record = self.owned(owner, conversation_id)
        settings = self.check_settings({**record["settings"], **{k: v for k, v in changes.items() if v is not None}})
        self.records.set_settings(conversation_id, settings)
        return settings

    def feedback(self, owner: str, conversation_id: str, number: int, rating: int, comment: Optional[str]) -> Dict:
        self.owned(owner, conversation_id)
        stored = self.records.turn(conversation_id, number)
        if stored is None:
            raise NotFound(f"No turn {number} in conversation {conversation_id!r}")
        given = self.chat_store.add_feedback(conversation_id, stored[2], rating, comment)
        return {
            "turn": number,
            "rating": given.rating,
            "comment": given.comment,
            "created": given.created_at.isoformat(),
        }

    # -- turns --------------------------------------------------------------------------------
    def _titles(self, domain: str, events: Sequence[Any]) -> Dict[str, str]:
        """The page title of every node a ranking of the turn names (behind the scenes shows titles, not
        bare ids), read from the domain's lexical index."""
        lexical = self.stores[domain].lexical
        titles = {}
        for node_id in {i for e in events for i in getattr(e, "node_ids", None) or []}:
            try:
                titles[node_id] = str(lexical.get_node(node_id).metadata.get("title") or "")
            except KeyError:
                continue
        return titles

    def engine(self, conversation_id: str, settings: Dict[str, Any]) -> Tuple[RagoniteChatEngine, Any]:
        """The chat engine for one turn with these settings, and its question completer."""
        llm = self.llms[settings["llm"]]
        completer = OfflineQuestionCompleter() if is_offline(llm) else LLMQuestionCompleter(llm=llm)
        memory = TurnMemory.from_defaults(token_limit=3000, chat_store=self.chat_store, chat_store_key=conversation_id)
        engine = RagoniteChatEngine(
            self.retriever(settings["domain"], settings["fusion"]),
            llm=llm,
            completer=completer,
            memory=memory,
            top_k=int(settings["top_k"]),
            complete_questions=bool(settings["complete_questions"]),
        )
        return engine, completer

    def chat(
        self,
        owner: str,
        conversation_id: str,
        message: str,
        on_delta: Optional[Callable[[str], None]] = None,
        stop: Optional[TurnStop] = None,
    ) -> Dict[str, Any]:
        """One turn (streamed to ``on_delta`` when given), stored and returned as the contract's JSON.

        A streamed turn ends early when ``stop`` says so (the client left, or its deadline passed):
        the partial answer is stored with ``truncated`` and, past the deadline, ``TurnDeadlineError``
        is raised after storing it.
        """
        settings = self.owned(owner, conversation_id)["settings"]
        with self.conversation_lock(conversation_id):
            engine, completer = self.engine(conversation_id, settings)
            history = without_truncated(engine.memory.get())  # what the engine itself reads
            started = time.perf_counter()
            with TurnTrace.collecting() as events:
                if on_delta is None:
                    response = engine.chat(message)
                    answer = response.response
                else:
                    response, answer = self._streamed(engine, conversation_id, message, on_delta, stop or TurnStop())
            seconds = time.perf_counter() - started
            rephraser = None
            if isinstance(completer, LLMQuestionCompleter) and settings["complete_questions"] and history:
                rephraser = completer.format_prompt(history, message)
            titles = self._titles(settings["domain"], events)
            turn = turn_json(message, answer, response.turn, response.source_nodes, events, seconds, rephraser, titles)
            turn.update(domain=settings["domain"], llm=settings["llm"])
            self.check_files()  # a history file removed meanwhile: say so instead of storing into the void
            message_index = len(self.chat_store.get_messages(conversation_id)) - 1
            self.records.add_turn(conversation_id, message_index, turn, [node_record(n) for n in response.source_nodes])
        if stop is not None and stop.timed_out:
            raise TurnDeadlineError(
                f"The turn took longer than {self.config.turn_deadline:g} s and was stopped; "
                "its partial answer is stored, marked truncated"
            )
        return turn

    def _streamed(self, engine: RagoniteChatEngine, conversation_id: str, message: str, on_delta, stop: TurnStop):
        """(response, answer text) of a streamed turn; see ``chat`` for how it ends early."""
        response = engine.stream_chat(message)
        writer = response.write_response_to_history_thread
        streamed = ""
        try:
            while True:
                if stop.should_stop():
                    response.cancel()  # the writer stops at the next delta, closing the LLM's stream
                if (
                    response.cancelled.is_set()
                    and stop.grace_over()
                    and self._abandoned(engine, response, streamed, stop)
                ):
                    return response, streamed
                try:
                    delta = response.queue.get(timeout=0.05)
                except Empty:
                    if response.exception is not None:
                        raise response.exception from None
                    if (response.is_done or not writer.is_alive()) and response.queue.empty():
                        break
                    continue
                if delta:
                    streamed += delta
                    on_delta(delta)
            writer.join()
            if response.exception is not None:
                raise response.exception
        except Exception:
            messages = self.chat_store.get_messages(conversation_id)
            if messages and messages[-1].role == MessageRole.USER:  # the question whose answer failed
                self.chat_store.delete_last_message(conversation_id)
            raise
        return response, response.response or streamed

    def _abandoned(self, engine: RagoniteChatEngine, response, streamed: str, stop: TurnStop) -> bool:
        """Store ``streamed`` as the truncated answer of an LLM that stalled after the turn was stopped;
        False when the writer thread stored its answer meanwhile (the turn then ends as usual).

        The writer may still be waiting for the LLM (its connection closes at the next chunk or at the
        LLM's read timeout): its memory is shut so that it can never append to the conversation after
        the next turn began, and ``stop.abandoned`` names it, so the route holds the user's turn slot
        until it has ended.
        """
        conversation_id = engine.memory.chat_store_key

        def store() -> None:
            self.chat_store.add_message(conversation_id, truncated_message(streamed))

        if not engine.memory.shut_unless_written(2, store):  # 1: the question, 2: the writer's answer
            return False
        stop.abandoned = response.write_response_to_history_thread
        response.turn.stop_early()
        return True

    def turn_settings(self, turn: Dict[str, Any], settings: Dict[str, Any]) -> Dict[str, Any]:
        """``settings`` with the LLM and domain the turn was answered with, where they are still configured."""
        run = dict(settings)
        if turn.get("llm") in self.llms:
            run["llm"] = turn["llm"]
        if turn.get("domain") in self.stores:
            run["domain"] = turn["domain"]
        return run

    def stored_turn(self, owner: str, conversation_id: str, number: int):
        """(turn JSON, evidences, settings) of a stored turn."""
        settings = self.owned(owner, conversation_id)["settings"]
        stored = self.records.turn(conversation_id, number)
        if stored is None:
            raise NotFound(f"No turn {number} in conversation {conversation_id!r}")
        return stored[0], stored[1], settings
