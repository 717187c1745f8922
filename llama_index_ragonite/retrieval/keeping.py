"""Built-in sides kept over where the nodes live: following a store's generations, or mirroring a stock index.

Why apart from the retriever: fusing rankings is one job; keeping the sides in step with where
the nodes live is another. Both are :class:`~.built_in.BuiltInSides` that swap their sides when
they see a change; ``HybridRetriever`` asks them around each query (``query``, ``follow``,
``stale_hit``):

* :class:`BuiltInSides` (sides given): a dense ``VectorIndexRetriever``'s hit that the lexical
  side lacks is a ``StoreError`` (never fuse two sides over different nodes);
* :class:`MirroredSides` (``HybridRetriever.from_index``): before each query the lexical and latent
  sides are rebuilt when the index changed, and a stale hit rebuilds them (``IndexMirror``);
* :class:`FollowingSides` (``HybridRetriever.from_store``): before each query a newer store
  generation is loaded and swapped in whole (``StoreFollower``).
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AbstractContextManager
from typing import Dict, List, Optional, cast

from llama_index.core.indices.vector_store import VectorStoreIndex
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.index.latent import LatentTermIndex
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.retrieval.built_in import BuiltInSides, SideSettings
from llama_index_ragonite.retrieval.index_nodes import IndexMirror
from llama_index_ragonite.retrieval.narrowing import Narrowing
from llama_index_ragonite.retrieval.store_follow import StoreFollower, StoreParts, store_parts

__all__ = ["FollowingSides", "MirroredSides"]

STORE_LATENT = object()  # FollowingSides: the store's own latent terms, followed with it


class FollowingSides(BuiltInSides):
    """The built-in sides over a store's loaded generation, swapped for a newer one between queries.

    ``latent``: the store's latent terms (followed with it; None when not every evidence has its
    vector), or a ``LatentTermIndex`` of yours (kept), or None (no latent side).
    """

    def __init__(
        self,
        store: EvidenceStore,
        settings: Optional[SideSettings] = None,
        narrowing: Optional[Narrowing] = None,
        latent: object = STORE_LATENT,
    ) -> None:
        parts = store_parts(store)
        self.own_latent = latent is STORE_LATENT
        chosen = parts.latent if self.own_latent else cast(Optional[LatentTermIndex], latent)
        super().__init__(parts.index, parts.lexical, chosen, settings, parts.access, narrowing)
        self.store = store
        self.follower = StoreFollower(store, self._use_parts, parts.generation)

    def _use_parts(self, new: StoreParts) -> None:  # between queries: serve a newer store generation
        if self.own_latent:
            self.use(dense=new.index, lexical=new.lexical, access=new.access, latent=new.latent)
        else:
            self.use(dense=new.index, lexical=new.lexical, access=new.access)

    def query(self) -> AbstractContextManager:
        return self.follower.query()

    async def abegin(self) -> None:
        await asyncio.to_thread(self.follower.begin)  # stat calls, and a reload, off the event loop

    def aend(self) -> None:
        self.follower.end()


class MirroredSides(BuiltInSides):
    """The lexical (and latent) side mirror a stock ``VectorStoreIndex``: built from its nodes, rebuilt
    when it changes (``IndexMirror``). ``latent``: None builds latent terms when the index's embedding
    model makes them, True requires it, False skips it; ``lexical``: an empty ``LexicalIndex`` to fill."""

    blocking = True  # its checks read the index (Chroma: a call)

    def __init__(
        self,
        index: VectorStoreIndex,
        lexical: Optional[LexicalIndex] = None,
        latent: Optional[bool] = None,
        settings: Optional[SideSettings] = None,
        narrowing: Optional[Narrowing] = None,
    ) -> None:
        lexical = LexicalIndex() if lexical is None else lexical
        super().__init__(index, lexical, None, settings, None, narrowing, empty_lexical=True)
        self.mirror = IndexMirror(index, lexical)
        self.use(latent=self.mirror.add_latent(self.embed_model, latent))
        self.mirror.sync()

    def follow(self) -> None:
        if self.mirror.changed():
            self._resync("the index changed")

    def stale_hit(self, hits: Dict[str, List[NodeWithScore]]) -> Optional[str]:
        """Any of these sides' hit deleted from the index, changed there, or missing from the lexical side."""
        return self.mirror.stale_hit({name: found for name, found in hits.items() if name in self})

    def out_of_sync(self, node_id: str) -> None:
        why = f"hit {node_id!r} was missing from the lexical side or differs from the index"
        self._resync(why, logging.WARNING)

    def refresh(self) -> None:
        self._resync("refresh() was called")

    def _resync(self, why: str, level: int = logging.INFO) -> None:
        self.mirror.sync(why, level)
        self.use(dense=self.mirror.index)  # a fresh as_retriever(): it fixes the node ids it searches
