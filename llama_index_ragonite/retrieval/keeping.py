"""How a ``HybridRetriever``'s sides stay over the same nodes: checked, mirrored from an index, or following a store.

Why apart from the retriever: fusing rankings is one job; keeping its sides in step with
where the nodes live is another, and which one applies depends on how the retriever was made:

* :class:`Checked` (a retriever given its sides): a dense ``VectorIndexRetriever``'s hit that
  the lexical side lacks is a ``StoreError`` (never fuse two sides over different nodes);
* :class:`Mirrored` (``HybridRetriever.from_index``): before each query the lexical and latent
  sides are rebuilt when the index changed, and a stale hit rebuilds them (``IndexMirror``);
* :class:`Following` (``HybridRetriever.from_store``): before each query a newer store
  generation is loaded and swapped in whole (``StoreFollower``).
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Dict, List, Optional, Protocol

from llama_index.core.indices.vector_store import VectorIndexRetriever
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.errors import StoreError
from llama_index_ragonite.retrieval.index_nodes import NOT_FROM_INDEX, OUT_OF_SYNC, IndexMirror
from llama_index_ragonite.retrieval.store_follow import StoreFollower

__all__ = ["BUILT_IN", "Checked", "Following", "Mirrored", "settled"]

BUILT_IN = ("lexical", "dense", "latent")  # the node sides a store or an index keeps; user sides are not checked


class KeptRetriever(Protocol):
    """What keeping reads and sets of the retriever it keeps (``retriever.HybridRetriever``)."""

    k_lexical: int
    k_dense: int
    dense: Any  # set to an index: searched through its retriever
    lexical: Any


class Checked:
    """The sides were given: check that a dense index hit is one the lexical side holds."""

    blocking = False  # its checks read no index: no need to leave the event loop

    def query(self) -> AbstractContextManager:
        return nullcontext()

    async def abegin(self) -> None:
        return None

    def aend(self) -> None:
        return None

    def follow(self, retriever: KeptRetriever) -> None:
        """Before a query: nothing to bring in line."""

    def stale_hit(self, retriever: KeptRetriever, sides: Dict[str, List[NodeWithScore]]) -> Optional[str]:
        """Only a dense ``VectorIndexRetriever``'s hit the lexical side lacks: other dense
        retrievers may return nodes of their own (merged parents)."""
        if not retriever.k_lexical or not isinstance(retriever.dense, VectorIndexRetriever):
            return None
        return next((h.node.node_id for h in sides.get("dense", ()) if h.node.node_id not in retriever.lexical), None)

    def out_of_sync(self, retriever: KeptRetriever, node_id: str) -> None:
        raise StoreError(OUT_OF_SYNC.format(node_id=node_id))

    def refresh(self, retriever: KeptRetriever) -> None:
        raise StoreError(NOT_FROM_INDEX)


class Mirrored(Checked):
    """The lexical (and latent) side mirror a stock ``VectorStoreIndex`` (``from_index``)."""

    blocking = True  # its checks read the index (Chroma: a call)

    def __init__(self, mirror: IndexMirror) -> None:
        self.mirror = mirror

    def follow(self, retriever: KeptRetriever) -> None:
        if self.mirror.changed():
            self._resync(retriever, "the index changed")

    def stale_hit(self, retriever: KeptRetriever, sides: Dict[str, List[NodeWithScore]]) -> Optional[str]:
        """Any built-in side's hit deleted from the index, changed there, or missing from the lexical side."""
        return self.mirror.stale_hit({name: hits for name, hits in sides.items() if name in BUILT_IN})

    def out_of_sync(self, retriever: KeptRetriever, node_id: str) -> None:
        why = f"hit {node_id!r} was missing from the lexical side or differs from the index"
        self._resync(retriever, why, logging.WARNING)

    def refresh(self, retriever: KeptRetriever) -> None:
        self._resync(retriever, "refresh() was called")

    def _resync(self, retriever: KeptRetriever, why: str, level: int = logging.INFO) -> None:
        self.mirror.sync(why, level)
        retriever.dense = self.mirror.index.as_retriever(
            similarity_top_k=retriever.k_dense
        )  # fixes node ids at creation


class Following(Checked):
    """The sides are those of a store's loaded generation, swapped for a newer one between queries."""

    def __init__(self, follower: StoreFollower) -> None:
        self.follower = follower

    def query(self) -> AbstractContextManager:
        return self.follower.query()

    async def abegin(self) -> None:
        await asyncio.to_thread(self.follower.begin)  # stat calls, and a reload, off the event loop

    def aend(self) -> None:
        self.follower.end()


def settled(stale: Optional[str]) -> None:
    """After a rebuild: a hit still out of step is not fused (the index changed under the query)."""
    if stale is not None:
        raise StoreError(
            f"Node {stale!r} is still out of step right after a rebuild: the index's node listing lacks it, "
            "or the index changed during the query (retry)"
        )
