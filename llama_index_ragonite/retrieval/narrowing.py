"""Narrowing retrieval to what a user may read and what LlamaIndex ``MetadataFilters`` select, before ranking.

Why before ranking, on every side: a user who may read few pages must still get their ten best
hits among those pages, not ten hits of which the readable ones are kept (a post-filter returns
few or none). So every side searches only the allowed evidences: BM25 and latent terms mask their
rows, page titles rank only allowed pages, Chroma is asked with ``ids=`` (``SimpleVectorStore``
with ``node_ids``). The allowed set is computed once per store generation, filters and principal,
from the lexical index's copy of every node (its metadata) and the store's ``AccessMap``.

``MetadataFilters`` are evaluated here with LlamaIndex's semantics (``and``/``or``/``not``, nested
filters, every ``FilterOperator``); a metadata string holding a comma-separated list (Confluence
``labels``: "howto, release") is read as its items by ``contains``, ``any`` and ``all``.
"""

from __future__ import annotations

import contextvars
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, Iterator, List, Mapping, Optional, Tuple

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters

from llama_index_ragonite.index.access import AccessMap, Principal
from llama_index_ragonite.index.lexical import LexicalIndex

__all__ = ["ActingRetriever", "Allowed", "Narrowing", "acting_as", "current_principal", "matches"]

_ACTING: contextvars.ContextVar[Optional[Principal]] = contextvars.ContextVar("ragonite_principal", default=None)


@contextmanager
def acting_as(principal: Optional[Principal]) -> Iterator[None]:
    """Retrieval inside the block (this thread or task) reads only what ``principal`` may read
    (``None``: as outside the block)."""
    if principal is None:
        yield
        return
    token = _ACTING.set(principal)
    try:
        yield
    finally:
        _ACTING.reset(token)


class ActingRetriever(BaseRetriever):
    """Any retriever, asked on behalf of ``principal`` (its other attributes are the wrapped one's)."""

    def __init__(self, retriever: BaseRetriever, principal: Principal) -> None:
        self.retriever, self.principal = retriever, principal
        super().__init__(callback_manager=retriever.callback_manager)

    def __getattr__(self, name: str) -> Any:  # embed_model, stored_embeddings, sides, …
        if name.startswith("__") or name in ("retriever", "principal"):
            raise AttributeError(name)
        return getattr(self.retriever, name)

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        with acting_as(self.principal):
            return self.retriever.retrieve(query_bundle)

    async def _aretrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        with acting_as(self.principal):
            return await self.retriever.aretrieve(query_bundle)


def current_principal() -> Optional[Principal]:
    return _ACTING.get()


def _items(value: Any) -> List[Any]:
    if isinstance(value, (list, tuple, set, frozenset)):
        return list(value)
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return [value]


def _compare(value: Any, f: MetadataFilter) -> bool:
    op, target = f.operator, f.value
    if op == FilterOperator.IS_EMPTY:
        return value is None or value == "" or value == []
    if value is None:
        return op in (FilterOperator.NE, FilterOperator.NIN)
    try:
        if op == FilterOperator.EQ:
            return value == target
        if op == FilterOperator.NE:
            return value != target
        if op == FilterOperator.GT:
            return value > target
        if op == FilterOperator.GTE:
            return value >= target
        if op == FilterOperator.LT:
            return value < target
        if op == FilterOperator.LTE:
            return value <= target
    except TypeError:
        return False
    if op == FilterOperator.IN:
        return value in _items(target) or any(v in _items(target) for v in _items(value))
    if op == FilterOperator.NIN:
        return not any(v in _items(target) for v in _items(value))
    if op == FilterOperator.CONTAINS:
        return target in _items(value)
    if op == FilterOperator.ANY:
        return any(t in _items(value) for t in _items(target))
    if op == FilterOperator.ALL:
        return all(t in _items(value) for t in _items(target))
    if op == FilterOperator.TEXT_MATCH:
        return str(target) in str(value)
    if op == FilterOperator.TEXT_MATCH_INSENSITIVE:
        return str(target).casefold() in str(value).casefold()
    raise ValueError(f"Filter operator {op!r} is not supported")


def matches(metadata: Mapping[str, Any], filters: MetadataFilters) -> bool:
    """Whether a node's ``metadata`` passes ``filters`` (LlamaIndex's conditions, nested filters too)."""
    results = [
        matches(metadata, f) if isinstance(f, MetadataFilters) else _compare(metadata.get(f.key), f)
        for f in filters.filters
    ]
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.OR:
        return any(results)
    if condition == FilterCondition.NOT:
        return not any(results)
    return all(results)


@dataclass(frozen=True)
class Allowed:
    """The evidences a narrowed search may return, and their pages; and, when the principal may not read
    everything, the evidences and pages they may read (``audience_nodes``/``audience_pages``): the
    statistics a side that ranks by them (BM25, titles) must use, so that no score depends on a page
    the principal cannot read. None: the whole store's (filters alone narrow what is readable to all)."""

    nodes: FrozenSet[str]
    pages: FrozenSet[str]
    audience_nodes: Optional[FrozenSet[str]] = None
    audience_pages: Optional[FrozenSet[str]] = None


class Narrowing:
    """The evidences a retriever may return: ``filters`` and the principal's readable pages, cached."""

    def __init__(self, filters: Optional[MetadataFilters] = None, principal: Optional[Principal] = None) -> None:
        self.filters, self.principal = filters, principal
        self._lock = threading.Lock()
        self._cache: Dict[Tuple[Any, ...], Allowed] = {}

    def allowed(self, lexical: LexicalIndex, access: AccessMap) -> Optional[Allowed]:
        """The node ids to search (None: all). Both this narrowing's principal and the one ``acting_as``
        set must be able to read a page (a retriever made for one user never widens for another)."""
        principals = tuple(p for p in (self.principal, current_principal()) if p is not None)
        if self.filters is None and (not principals or not access.restricted()):
            return None
        key = (id(lexical), lexical.version, id(access), access.version, principals)
        with self._lock:
            found = self._cache.get(key)
            if found is None:
                found = self._compute(lexical, access, principals)
                if len(self._cache) > 64:  # principals come and go: keep a bounded few
                    self._cache.clear()
                self._cache[key] = found
        return found

    def _compute(self, lexical: LexicalIndex, access: AccessMap, principals: Tuple[Principal, ...]) -> Allowed:
        every = lexical.node_pages()  # a node of no page, or of a page without an entry, is readable by all
        readable = {node: page for node, page in every.items() if all(access.readable(page, p) for p in principals)}
        nodes, pages = _sets(readable)
        audience = (nodes, pages) if len(readable) < len(every) else (None, None)
        if self.filters is not None:
            nodes, pages = _sets(
                {n: p for n, p in readable.items() if matches(lexical.get_node(n).metadata, self.filters)}
            )
        return Allowed(nodes, pages, *audience)  # without filters, the audience's own sets: one cache entry each


def _sets(pages: Mapping[str, Optional[str]]) -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """The node ids and the page ids of ``pages`` (node id -> page id)."""
    return frozenset(pages), frozenset(p for p in pages.values() if p is not None)
