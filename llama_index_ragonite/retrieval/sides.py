"""The sides of hybrid retrieval: each a LlamaIndex ``BaseRetriever``, fused by ``HybridRetriever``.

Why: a side is any retriever, ours or a user's (LlamaIndex's ``BM25Retriever``, a
``VectorIndexRetriever`` over another vector store), composed with a weight as
``QueryFusionRetriever`` composes its ``retriever_weights``. The built-in sides are built
with these same classes: :class:`LexicalRetriever` (BM25), the dense index's own retriever,
:class:`LatentTermRetriever` and :class:`PageTitleRetriever`.
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Protocol, Sequence, Union, cast, runtime_checkable

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store import VectorIndexRetriever, VectorStoreIndex
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llama_index_ragonite.compat import llama_index_core
from llama_index_ragonite.index.latent import LatentTermIndex
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.models.protocols import QueryTermsEmbedding
from llama_index_ragonite.retrieval.index_nodes import is_chroma
from llama_index_ragonite.retrieval.narrowing import Allowed

__all__ = [
    "IndexDenseRetriever",
    "LatentTermRetriever",
    "LexicalRetriever",
    "PageTitleRetriever",
    "PoolAwareRetriever",
    "Side",
    "own_bundles",
]


@dataclass
class Side:
    """One named ranking of a ``HybridRetriever``: a retriever, its weight in RRF, how many of its hits count.

    ``weight``: a number, or a function of the question (the lexical side counts less for a
    question in another language than the pages). ``top_k``: its hits are cut to this many
    (None: as many as it returns; 0: the side is not asked). ``ranks_pages``: its hits' node ids
    are page ids (``ref_doc_id``); it re-orders the pool, every pooled node sharing its page's
    rank, and adds no node (page titles).
    """

    retriever: BaseRetriever
    weight: Union[float, Callable[[str], float]] = 1.0
    top_k: Optional[int] = None
    ranks_pages: bool = False

    def weight_for(self, query: str) -> float:
        return float(self.weight(query) if callable(self.weight) else self.weight)

    def cut(self, hits: List[NodeWithScore]) -> List[NodeWithScore]:
        return hits if self.top_k is None else hits[: self.top_k]


@runtime_checkable
class PoolAwareRetriever(Protocol):
    """A side asked after the others, with their hits (the latent side scores them too when it bounds its search)."""

    def retrieve_also(self, query_bundle: QueryBundle, also: Sequence[NodeWithScore]) -> List[NodeWithScore]: ...


class _InProcessRetriever(BaseRetriever):
    """A CPU-bound in-process side: its async path runs it off the event loop."""

    async def _aretrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        return await asyncio.to_thread(self._retrieve, query_bundle)


Narrowed = Callable[[], Optional[Allowed]]  # what a side may return now (None: everything)


def _everything() -> Optional[Allowed]:
    return None


class _LexicalSide(_InProcessRetriever):
    """A side over a :class:`LexicalIndex`, narrowed by ``allowed`` (the retriever's narrowing)."""

    def __init__(
        self, lexical: LexicalIndex, similarity_top_k: int = 10, allowed: Narrowed = _everything, **kwargs
    ) -> None:
        self.lexical, self.similarity_top_k, self.allowed = lexical, similarity_top_k, allowed
        super().__init__(**kwargs)


class LexicalRetriever(_LexicalSide):
    """BM25 over a :class:`LexicalIndex`: top ``similarity_top_k`` nodes with raw BM25 scores
    (among the ``allowed`` ones: the retriever's narrowing, before ranking)."""

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        if not self.similarity_top_k:
            return []
        allowed = self.allowed()
        if allowed is None:
            return self.lexical.search(query_bundle.query_str, self.similarity_top_k)
        return self.lexical.search(query_bundle.query_str, self.similarity_top_k, allowed.nodes, allowed.audience_nodes)


class LatentTermRetriever(_InProcessRetriever):
    """Latent terms (``LatentTermIndex``): the question's terms from ``embed_model.get_query_terms``,
    nodes read from ``lexical`` (which holds the same nodes)."""

    def __init__(
        self,
        latent: LatentTermIndex,
        lexical: LexicalIndex,
        embed_model: BaseEmbedding,
        similarity_top_k: int = 10,
        allowed: Narrowed = _everything,
        **kwargs,
    ) -> None:
        self.latent, self.lexical, self.embed_model = latent, lexical, embed_model
        self.similarity_top_k, self.allowed = similarity_top_k, allowed
        super().__init__(**kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        return self.retrieve_also(query_bundle, ())

    def retrieve_also(self, query_bundle: QueryBundle, also: Sequence[NodeWithScore]) -> List[NodeWithScore]:
        """``also``: the other sides' hits, scored too when a large store bounds the search; their nodes are reused."""
        if not self.similarity_top_k:
            return []
        terms = cast(QueryTermsEmbedding, self.embed_model).get_query_terms(query_bundle.query_str)
        held = {hit.node.node_id: hit.node for hit in also}
        allowed = self.allowed()
        hits = self.latent.search(
            terms, self.similarity_top_k, also=list(held), allowed=None if allowed is None else allowed.nodes
        )
        return [
            NodeWithScore(node=held.get(i) or self.lexical.get_node(i), score=s) for i, s in hits if i in self.lexical
        ]


class PageTitleRetriever(_LexicalSide):
    """Pages by how well the question matches their title (BM25 over titles): one hit per page,
    whose node id is the page id (``ref_doc_id``); use it as a side with ``ranks_pages=True``."""

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        allowed = self.allowed()
        if allowed is None:
            pages = self.lexical.search_titles(query_bundle.query_str, self.similarity_top_k)
        else:
            query, k = query_bundle.query_str, self.similarity_top_k
            pages = self.lexical.search_titles(query, k, allowed.pages, allowed.audience_pages)
        return [NodeWithScore(node=TextNode(id_=page, text=""), score=score) for page, score in pages]


class IndexDenseRetriever(BaseRetriever):
    """The dense side over a ``VectorStoreIndex``, narrowed before ranking: Chroma is asked with
    ``ids=`` the allowed evidences, other vector stores with ``node_ids``."""

    def __init__(
        self,
        index: VectorStoreIndex,
        plain: BaseRetriever,
        similarity_top_k: int = 10,
        allowed: Narrowed = _everything,
        **kwargs,
    ) -> None:
        """``plain``: the index's own retriever, asked as it is when nothing narrows."""
        self.index, self._plain, self.similarity_top_k, self.allowed = index, plain, similarity_top_k, allowed
        super().__init__(**kwargs)

    def _narrowed(self) -> Optional[BaseRetriever]:
        allowed = self.allowed()
        if allowed is None:
            return self._plain
        if not allowed.nodes:
            return None
        ids, k = sorted(allowed.nodes), self.similarity_top_k  # the index's own embedding model, as ``plain``'s
        if is_chroma(self.index.vector_store):
            return VectorIndexRetriever(self.index, k, vector_store_kwargs={"ids": ids})
        return VectorIndexRetriever(self.index, k, node_ids=ids)

    # The inner retriever's own steps, not its public call: this side's retrieve already emits the
    # retrieval span and events, which a nested public call would emit a second time (~0.15 ms a query).
    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        retriever = self._narrowed()
        return llama_index_core.retrieve_quietly(retriever, query_bundle) if retriever is not None else []

    async def _aretrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        retriever = self._narrowed()
        return await llama_index_core.aretrieve_quietly(retriever, query_bundle) if retriever is not None else []


def own_bundles(bundle: QueryBundle, sides: Mapping[str, Side]) -> Dict[str, QueryBundle]:
    """A copy of the question per side: a vector retriever stores its query embedding on the bundle,
    which another side with another embedding model must not read. The dense side gets the
    caller's bundle (and any embedding the caller computed)."""
    return {name: bundle if name == "dense" else copy.copy(bundle) for name in sides}
