"""What llama-index-core keeps private and the package needs (checked on llama-index-core 0.14.25; we require 0.14.x).

- ``Settings._llm`` / ``_embed_model`` / ``_prompt_helper`` / ``_chat_prompt_helper``: whether the user
  assigned one. The public properties resolve a default on first read (``Settings.llm`` builds OpenAI's,
  which needs a key), and there is no public "is it set" accessor.
- ``BaseSynthesizer._llm`` / ``_streaming``: a stock synthesizer's LLM and streaming flag, which it
  takes in ``__init__`` and exposes nowhere (wrapping one must answer with the same LLM and refuse a
  streaming one).
- ``RetrieverQueryEngine._response_synthesizer`` / ``_node_postprocessors``: rebuilding an engine around
  a wrapped synthesizer, as its own ``with_retriever`` does; no accessor.
- ``VectorIndexRetriever._embed_model`` / ``_vector_store``: a stock dense retriever we were handed
  without its index (from a store or an index, the package keeps what it was given instead).
- ``BaseRetriever._retrieve`` / ``_aretrieve``: an inner retriever's own step, where the public
  ``retrieve`` would emit the retrieval span and events a second time inside our side's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.llms.llm import LLM
    from llama_index.core.response_synthesizers import BaseSynthesizer
    from llama_index.core.schema import NodeWithScore, QueryBundle

__all__ = [
    "aretrieve_quietly",
    "query_engine_parts",
    "retrieve_quietly",
    "retriever_embed_model",
    "retriever_vector_store",
    "settings_chat_prompt_helper",
    "settings_embed_model",
    "settings_llm",
    "settings_prompt_helper",
    "synthesizer_llm",
    "synthesizer_streams",
]


def settings_llm() -> Optional["LLM"]:
    """``Settings.llm`` when the user assigned one, else ``None`` (reads ``Settings._llm``)."""
    from llama_index.core import Settings

    return Settings._llm


def settings_embed_model() -> Optional["BaseEmbedding"]:
    """``Settings.embed_model`` when the user assigned one, else ``None`` (reads ``Settings._embed_model``)."""
    from llama_index.core import Settings

    return Settings._embed_model


def settings_prompt_helper() -> Any:
    """``Settings.prompt_helper`` when assigned, else ``None`` (reads ``Settings._prompt_helper``)."""
    from llama_index.core import Settings

    return Settings._prompt_helper


def settings_chat_prompt_helper() -> Any:
    """``Settings.chat_prompt_helper`` when assigned, else ``None`` (``_chat_prompt_helper``; versions
    before it existed have none)."""
    from llama_index.core import Settings

    return getattr(Settings, "_chat_prompt_helper", None)


def synthesizer_llm(synthesizer: "BaseSynthesizer") -> "LLM":
    """The LLM a stock synthesizer answers with (reads ``BaseSynthesizer._llm``)."""
    return synthesizer._llm


def synthesizer_streams(synthesizer: "BaseSynthesizer") -> bool:
    """Whether a stock synthesizer streams its answers (reads ``BaseSynthesizer._streaming``)."""
    return bool(getattr(synthesizer, "_streaming", False))


def query_engine_parts(engine: Any) -> Tuple["BaseSynthesizer", List[Any]]:
    """A ``RetrieverQueryEngine``'s synthesizer and node postprocessors (its private
    ``_response_synthesizer`` and ``_node_postprocessors``)."""
    return engine._response_synthesizer, engine._node_postprocessors


def retriever_embed_model(retriever: Any) -> Optional["BaseEmbedding"]:
    """The model a ``VectorIndexRetriever`` embeds queries with (``_embed_model``); None for other retrievers."""
    from llama_index.core.indices.vector_store import VectorIndexRetriever

    return retriever._embed_model if isinstance(retriever, VectorIndexRetriever) else None


def retriever_vector_store(retriever: Any) -> Any:
    """The vector store a ``VectorIndexRetriever`` searches (``_vector_store``); None for other retrievers."""
    from llama_index.core.indices.vector_store import VectorIndexRetriever

    return retriever._vector_store if isinstance(retriever, VectorIndexRetriever) else None


def retrieve_quietly(retriever: "BaseRetriever", bundle: "QueryBundle") -> List["NodeWithScore"]:
    """``retriever``'s own retrieval step (``_retrieve``), without a second span and events."""
    return retriever._retrieve(bundle)


async def aretrieve_quietly(retriever: "BaseRetriever", bundle: "QueryBundle") -> List["NodeWithScore"]:
    """``retriever``'s own async retrieval step (``_aretrieve``), without a second span and events."""
    return await retriever._aretrieve(bundle)
