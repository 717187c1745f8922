"""A retriever built on a store follows the store's newer generations, one whole generation per query.

Why: a long-lived reader (a chat server, a notebook) opened before a re-index would otherwise
serve the deleted evidences still in its BM25 and latent-term copies. Before each query the
follower looks at the store folder (two ``stat`` calls, :class:`~llama_index_ragonite.index.generation.GenerationWatch`);
only when a newer completed generation is there does it load one, every part of it, and swap it
in while no other query of this retriever runs, so no query ever mixes two generations. Queries
that overlap the load keep the generation they started with; the last of them to finish swaps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Optional

from llama_index.core.indices.vector_store import VectorStoreIndex

from llama_index_ragonite.index.access import AccessMap
from llama_index_ragonite.index.latent import LatentTermIndex
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.models.protocols import QueryTermsEmbedding

__all__ = ["StoreFollower", "StoreParts", "store_parts"]


@dataclass(frozen=True)
class StoreParts:
    """What a retriever reads of one store generation."""

    index: VectorStoreIndex
    lexical: LexicalIndex
    latent: Optional[LatentTermIndex]  # None unless every evidence has its latent-term vector
    generation: int
    access: AccessMap  # who may read which page


def store_parts(store: EvidenceStore) -> StoreParts:
    """The dense index, BM25 and (when complete and the model makes them) latent terms of the loaded generation."""
    # the store's pipeline as its transformations, so that the index does not build Settings' default
    # SentenceSplitter (its tiktoken load was 0.57 s of a one-shot ask); write through store.ingest, not insert
    index = VectorStoreIndex.from_vector_store(
        store.vector_store, embed_model=store.embed_model, transformations=store.pipeline
    )
    complete = len(store.latent) == len(store.lexical) and isinstance(store.embed_model, QueryTermsEmbedding)
    return StoreParts(index, store.lexical, store.latent if complete else None, store.generation, store.access)


class StoreFollower:
    """Brackets a retriever's queries (``with follower.query():``) and hands it newer generations (``apply``).

    A reload that fails raises from ``query()`` (``StoreInterruptedError``, ``StoreInconsistentError``,
    …); a write still under way is not a failure: the loaded generation stays, with a warning.
    """

    def __init__(self, store: EvidenceStore, apply: Callable[[StoreParts], None], generation: int) -> None:
        self.store, self.generation = store, generation
        self._apply = apply
        self._lock = threading.Condition()
        self._in_flight = 0
        self._loading = False
        self._pending: Optional[StoreParts] = None

    @contextmanager
    def query(self) -> Iterator[None]:
        self.begin()
        try:
            yield
        finally:
            self.end()

    def begin(self) -> None:
        """Before a query: two ``stat`` calls; a load only when the store has a newer generation.

        A query starting while another loads waits for that load (which needs no other query),
        so that every query starting after a completed write is answered from it.
        """
        with self._lock:
            while self._loading:
                self._lock.wait()
            self._swap_if_alone(0)
            if self._pending is not None or not self._newer():
                self._in_flight += 1
                return
            self._loading = True
        try:
            reloaded = self.store.reload()  # False while another process is still writing
            parts = store_parts(self.store) if reloaded or self.store.generation != self.generation else None
        except BaseException:
            with self._lock:
                self._loading = False
                self._lock.notify_all()
            raise
        with self._lock:
            self._loading, self._pending = False, parts  # only one load at a time, and only with none pending
            self._in_flight += 1
            self._swap_if_alone(1)  # this query has read nothing yet
            self._lock.notify_all()

    def end(self) -> None:
        with self._lock:
            self._in_flight -= 1
            self._swap_if_alone(0)

    def _newer(self) -> bool:
        return self.store.stale() or self.store.generation != self.generation

    def _swap_if_alone(self, in_flight: int) -> None:
        if self._pending is not None and self._in_flight <= in_flight:
            self._apply(self._pending)
            self.generation, self._pending = self._pending.generation, None
