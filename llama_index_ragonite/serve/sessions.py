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
from typing import AbstractSet, Any, Callable, Dict, List, Optional, Sequence, Tuple

from llama_index_ragonite.chat.answering import is_offline
from llama_index_ragonite.chat.chat_store import SQLiteChatStore, UnknownConversationError
from llama_index_ragonite.chat.completion import LLMQuestionCompleter, OfflineQuestionCompleter
from llama_index_ragonite.chat.engine import RagoniteChatEngine
from llama_index_ragonite.errors import ChatStoreError
from llama_index_ragonite.index.access import Principal
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.models.defaults import settings_tokenizer
from llama_index_ragonite.models.specs import embedding_from_spec, llm_from_spec
from llama_index_ragonite.redaction import redacted
from llama_index_ragonite.retrieval.retriever import HybridRetriever
from llama_index_ragonite.serve.config import ServeConfig
from llama_index_ragonite.serve.identities import UsersFile, owner_of
from llama_index_ragonite.serve.reading import (
    AccessLog,
    NotReadable,
    has_restrictions,
    hidden_turn,
    readable_counts,
    reader,
    turn_pages,
    visible,
)
from llama_index_ragonite.serve.records import ServeRecords
from llama_index_ragonite.serve.turn_control import TurnDeadlineError, TurnMemory, TurnStop, streamed_turn
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
        self.access_log = AccessLog(config.access_log)
        if config.users:  # a token's conversations move to its user once the token is in the users file
            for user in UsersFile.load(config.users).users:
                self.records.reassign(user.legacy_owner, owner_of(user.name))
        self._retrievers: Dict[Tuple[str, str], HybridRetriever] = {}
        self._lock = threading.Lock()
        self._conversation_locks: Dict[str, threading.Lock] = {}
        TurnTrace.install()
        for name in self.stores:
            self.retriever(name, "rrf")  # load every domain now: the first turn should not wait for it

    # -- resources ------------------------------------------------------------------------
    @property
    def restricted(self) -> bool:
        """Whether some page of some domain is not readable by everyone, as the newest sync says."""
        return any(has_restrictions(store) for store in self.stores.values())

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

    def domains(self, principal: Optional[Principal] = None) -> List[Dict[str, Any]]:
        """Every domain, with the counts of what the caller may read."""
        principal = reader(self, principal)
        # the folder's name: the server's paths are not the users' business
        return [
            {"name": name, "store": store.path.name, **readable_counts(store, principal)}
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

    def conversation(
        self, owner: str, conversation_id: str, turns: bool = False, principal: Optional[Principal] = None
    ) -> Dict[str, Any]:
        """A conversation (with its turns: each one the caller may no longer fully read comes back hidden)."""
        record = self.owned(owner, conversation_id)
        try:
            out = self._json(self.chat_store.get_conversation(conversation_id), record["settings"])
        except UnknownConversationError as err:
            raise NotFound(f"No conversation {conversation_id!r}") from err
        if turns:
            ratings = {f.message_index: f.rating for f in self.chat_store.get_feedback(conversation_id)}
            out["turns"] = []
            for turn, message_index in self.records.turns(conversation_id):
                turn = self.shown_turn(conversation_id, turn, None, principal)
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

    def engine(
        self, conversation_id: str, settings: Dict[str, Any], principal: Optional[Principal] = None
    ) -> Tuple[RagoniteChatEngine, Any]:
        """The chat engine for one turn with these settings, retrieving what ``principal`` may read."""
        llm = self.llms[settings["llm"]]
        completer = OfflineQuestionCompleter() if is_offline(llm) else LLMQuestionCompleter(llm=llm)
        memory = TurnMemory.from_defaults(
            tokenizer_fn=settings_tokenizer,
            token_limit=3000,
            chat_store=self.chat_store,
            chat_store_key=conversation_id,
        )
        engine = RagoniteChatEngine(
            self.retriever(settings["domain"], settings["fusion"]),
            llm=llm,
            completer=completer,
            memory=memory,
            top_k=int(settings["top_k"]),
            complete_questions=bool(settings["complete_questions"]),
            principal=principal,
            may_read=self.may_read(principal),
        )
        return engine, completer

    def chat(
        self,
        owner: str,
        conversation_id: str,
        message: str,
        on_delta: Optional[Callable[[str], None]] = None,
        stop: Optional[TurnStop] = None,
        principal: Optional[Principal] = None,
    ) -> Dict[str, Any]:
        """One turn (streamed to ``on_delta`` when given), stored and returned as the contract's JSON.

        A streamed turn ends early when ``stop`` says so (the client left, or its deadline passed):
        the partial answer is stored with ``truncated`` and, past the deadline, ``TurnDeadlineError``
        is raised after storing it.
        """
        principal = reader(self, principal)
        settings = self.owned(owner, conversation_id)["settings"]
        with self.conversation_lock(conversation_id):
            engine, completer = self.engine(conversation_id, settings, principal)
            history = engine.readable_history()  # what the engine itself reads
            started = time.perf_counter()
            with TurnTrace.collecting() as events:
                if on_delta is None:
                    response = engine.chat(message)
                    answer = response.response
                else:
                    response, answer = streamed_turn(self.chat_store, engine, message, on_delta, stop or TurnStop())
            seconds = time.perf_counter() - started
            rephraser = None
            if isinstance(completer, LLMQuestionCompleter) and settings["complete_questions"] and history:
                rephraser = completer.format_prompt(history, message)
            titles = self._titles(settings["domain"], events)
            turn = turn_json(message, answer, response.turn, response.source_nodes, events, seconds, rephraser, titles)
            records = [node_record(n) for n in response.source_nodes]
            pages = turn_pages(turn, records, self.stores[settings["domain"]].lexical.page_of)
            built = pages | set(response.turn.pages)  # and the pages of the earlier turns it was built from
            turn.update(domain=settings["domain"], llm=settings["llm"], pages=sorted(built))
            self.check_files()  # a history file removed meanwhile: say so instead of storing into the void
            message_index = len(self.chat_store.get_messages(conversation_id)) - 1
            self.records.add_turn(conversation_id, message_index, turn, records)
        self.access_log.write("turn", principal, owner, conversation_id, question=message, pages=pages)
        if stop is not None and stop.timed_out:
            raise TurnDeadlineError(
                f"The turn took longer than {self.config.turn_deadline:g} s and was stopped; "
                "its partial answer is stored, marked truncated"
            )
        return turn

    def turn_settings(self, turn: Dict[str, Any], settings: Dict[str, Any]) -> Dict[str, Any]:
        """``settings`` with the LLM and domain the turn was answered with, where they are still configured."""
        run = dict(settings)
        if turn.get("llm") in self.llms:
            run["llm"] = turn["llm"]
        if turn.get("domain") in self.stores:
            run["domain"] = turn["domain"]
        return run

    def stored_turn(self, owner: str, conversation_id: str, number: int, principal: Optional[Principal] = None):
        """(turn JSON, evidences, settings) of a stored turn the caller may still read (else ``NotReadable``)."""
        settings = self.owned(owner, conversation_id)["settings"]
        stored = self.records.turn(conversation_id, number)
        if stored is None:
            raise NotFound(f"No turn {number} in conversation {conversation_id!r}")
        if self.shown_turn(conversation_id, stored[0], stored[1], principal).get("hidden"):
            raise NotReadable(f"Turn {number} showed pages you may no longer read")
        return stored[0], stored[1], settings

    def shown_turn(
        self, conversation_id: str, turn: Dict[str, Any], records: Optional[List[dict]], principal: Optional[Principal]
    ) -> Dict[str, Any]:
        """``turn`` when the caller may read every page it showed, else ``reading.hidden_turn``."""
        principal = reader(self, principal)
        store = self.stores.get(turn.get("domain") or self.config.default_domain)
        if principal is None:
            return turn
        if records is None and "pages" not in turn:  # a turn stored before pages were recorded with it
            records = (self.records.turn(conversation_id, turn["index"]) or (None, []))[1]
        pages = turn_pages(turn, records or [], store.lexical.page_of) if store is not None else {""}
        return turn if store is not None and self.may_read(principal)(pages) else hidden_turn(turn)

    def may_read(self, principal: Optional[Principal]) -> Callable[[AbstractSet[str]], bool]:
        """Whether ``principal`` may read every one of a set of pages now: under the newest access map of every
        domain (a conversation can change domains). Reopened turns and a new turn's history are both read so."""
        return lambda pages: all(visible(store, pages, principal) for store in self.stores.values())
