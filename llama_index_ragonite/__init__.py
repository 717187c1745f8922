"""RAGonite for LlamaIndex: evidence parsing and contextualization for wiki RAG."""

from llama_index_ragonite.contextualizer import EvidenceContextualizer
from llama_index_ragonite.extraction import Evidence, extract_evidences
from llama_index_ragonite.linearize import LINEARIZERS
from llama_index_ragonite.loaders import PageLoadError, load_pages
from llama_index_ragonite.parser import HTMLEvidenceParser

__all__ = [
    "Evidence",
    "EvidenceContextualizer",
    "HTMLEvidenceParser",
    "LINEARIZERS",
    "PageLoadError",
    "extract_evidences",
    "load_pages",
]
