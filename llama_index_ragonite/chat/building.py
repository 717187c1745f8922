"""How a ``RagoniteChatEngine`` is built the LlamaIndex way: ``from_defaults`` (``index.as_chat_engine`` style
arguments) and ``from_store`` (the whole pipeline on a store made by ``ragonite index``). A mixin of the
engine's, so that ``engine.py`` holds the turn itself."""

from __future__ import annotations

import inspect
import logging
from functools import partial
from typing import Any, Callable, Dict, List, Optional, Sequence, Type, TypeVar

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.callbacks import CallbackManager
from llama_index.core.llms.llm import LLM
from llama_index.core.memory import BaseMemory, ChatMemoryBuffer
from llama_index.core.postprocessor.types import BaseNodePostprocessor

from llama_index_ragonite.models.defaults import settings_tokenizer

__all__ = ["EngineBuilding", "new_memory"]

logger = logging.getLogger("llama_index_ragonite.chat.engine")
new_memory = partial(ChatMemoryBuffer.from_defaults, tokenizer_fn=settings_tokenizer)  # loads it at a first count
E = TypeVar("E", bound="EngineBuilding")


class EngineBuilding:
    """``from_defaults`` and ``from_store`` of ``RagoniteChatEngine``."""

    @classmethod
    def from_defaults(
        cls: Type[E],
        retriever: BaseRetriever,
        llm: Optional[LLM] = None,
        chat_history: Optional[List[ChatMessage]] = None,
        memory: Optional[BaseMemory] = None,
        node_postprocessors: Optional[Sequence[BaseNodePostprocessor]] = None,
        callback_manager: Optional[CallbackManager] = None,
        token_limit: int = 3000,
        **kwargs: Any,
    ) -> E:
        """The engine the way LlamaIndex builds chat engines (``index.as_chat_engine`` style arguments).

        ``kwargs``: the other arguments of the class (``completer``, ``answer_prompt``, ``top_k``,
        ``complete_questions``, ``follow_ups``); other chat engines' options (``system_prompt``,
        ``verbose``…) are ignored with a warning. ``chat_history`` seeds a new memory; with
        ``memory=`` too it is an error (the memory already holds a conversation).
        """
        ignored = sorted(set(kwargs) - set(inspect.signature(cls.__init__).parameters))
        if ignored:
            logger.warning("RagoniteChatEngine.from_defaults ignores %s", ", ".join(ignored))
        if memory is not None and chat_history:
            raise ValueError("Pass chat_history or memory, not both (memory.set(chat_history) replaces its history)")
        if memory is None:
            memory = new_memory(chat_history=list(chat_history or []), token_limit=token_limit)
        engine: Callable[..., E] = cls  # RagoniteChatEngine's own arguments
        return engine(
            retriever,
            llm=llm,
            memory=memory,
            token_limit=token_limit,
            node_postprocessors=node_postprocessors,
            callback_manager=callback_manager,
            **{k: v for k, v in kwargs.items() if k not in ignored},
        )

    @classmethod
    def from_store(
        cls: Type[E],
        path,
        llm: Optional[LLM] = None,
        embed_model=None,
        chat_store=None,
        conversation_id: str = "default",
        token_limit: int = 3000,
        retriever_kwargs: Optional[Dict[str, Any]] = None,
        **kwargs: Any,
    ) -> E:
        """The whole pipeline on a store built by ``ragonite index``; ``kwargs`` go to ``from_defaults``."""
        from llama_index_ragonite.retrieval.retriever import HybridRetriever

        retriever = HybridRetriever.from_store(path, embed_model=embed_model, **(retriever_kwargs or {}))
        memory = (
            new_memory(token_limit=token_limit, chat_store=chat_store, chat_store_key=conversation_id)
            if chat_store is not None
            else None
        )
        return cls.from_defaults(retriever, llm=llm, memory=memory, token_limit=token_limit, **kwargs)
