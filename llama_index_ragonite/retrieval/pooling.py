"""Pooling the sides' hits by node id and fusing their rankings into ``FusedNode``s, each step an event.

Why apart from the retriever: this is what every composition of sides shares, whichever sides
they are and however they are kept in step (``keeping``); the rank arithmetic itself is in
:mod:`~llama_index_ragonite.retrieval.fusion`.
"""

from __future__ import annotations

from typing import AbstractSet, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.schema import NodeWithScore, QueryBundle

from llama_index_ragonite.events import RetrievalHitsEvent
from llama_index_ragonite.retrieval.fused import RERANK, FusedNode
from llama_index_ragonite.retrieval.fusion import rrf_fuse
from llama_index_ragonite.retrieval.narrowing import Allowed
from llama_index_ragonite.retrieval.sides import Side

__all__ = ["checked_query", "fuse", "in_order", "pool_hits", "rerank_copies"]

dispatcher = get_dispatcher("llama_index_ragonite.retrieval.retriever")  # one source of retrieval events


def pool_hits(query: str, hits: Mapping[str, List[NodeWithScore]], sides: Mapping[str, Side]) -> Dict[str, FusedNode]:
    """``hits``: each node side's hits by name, best first. Then each page side (``ranks_pages``)
    ranks the pooled nodes by their page (``ref_doc_id``), adding none."""
    pool: Dict[str, FusedNode] = {}
    for name, found in hits.items():
        _event(query, name, found)
        for rank, hit in enumerate(found, start=1):
            pool.setdefault(hit.node.node_id, FusedNode(node=hit.node)).place(name, rank, hit.score)
    for name, side in sides.items():
        if side.ranks_pages and side.top_k != 0 and pool:
            pages = side.cut(side.retriever.retrieve(query))
            by_page = {h.node.node_id: (rank, h.score) for rank, h in enumerate(pages, start=1)}
            for fused in pool.values():
                if fused.node.ref_doc_id in by_page:
                    fused.place(name, *by_page[fused.node.ref_doc_id])
            ranked = sorted((f for f in pool.values() if name in f.ranks), key=lambda f: (f.ranks[name], f.node_id))
            _event(query, name, ranked, [f.scores[name] for f in ranked])
    return pool


def fuse(
    query: str,
    pool: Dict[str, FusedNode],
    weights: Mapping[str, float],
    page_sides: AbstractSet[str],
    fusion: str,
    reranked: Optional[List[NodeWithScore]],
    rrf_k: int,
    top_n: int,
) -> List[FusedNode]:
    """The pool's top ``top_n``: by the reranker (``"rerank"``), else by weighted RRF over every
    side's ranking (in ``weights``' order), the reranker's counted 1 (``"rerank+rrf"``)."""
    if reranked is not None:
        for rank, hit in enumerate(reranked, start=1):
            if hit.node.node_id in pool:
                pool[hit.node.node_id].place(RERANK, rank, hit.score)
        _event(query, RERANK, reranked)
    if fusion == "rerank":
        order: List[Tuple[Any, Optional[float]]] = [(h.node.node_id, h.score) for h in reranked or []]
    else:
        rankings = [_ranking(pool, name, name in page_sides) for name in weights]
        counts = list(weights.values())
        if fusion == "rerank+rrf":
            rankings.append(_ranking(pool, RERANK, False))
            counts.append(1.0)
        order = list(rrf_fuse(rankings, k=rrf_k, weights=counts))
    out = []
    for node_id, score in order[:top_n]:
        pool[node_id].score = score
        out.append(pool[node_id])
    _event(query, "fused", out)
    return out


def rerank_copies(pool: Dict[str, FusedNode]) -> List[NodeWithScore]:
    """Rerankers overwrite scores in place: hand them copies, keep our trace intact."""
    return [NodeWithScore(node=f.node, score=f.scores.get("dense") or f.scores.get("lexical")) for f in pool.values()]


def _ranking(pool: Dict[str, FusedNode], side: str, by_page: bool):
    """A node side's ranking best first; a page side's as node id -> its page's rank (a page's nodes tie)."""
    if by_page:
        return {node_id: f.ranks[side] for node_id, f in pool.items() if side in f.ranks}
    return [node_id for _, node_id in sorted((f.ranks[side], i) for i, f in pool.items() if side in f.ranks)]


def _event(query: str, source: str, hits: Sequence[NodeWithScore], scores: Optional[List] = None) -> None:
    dispatcher.event(
        RetrievalHitsEvent(
            query=query,
            source=source,
            node_ids=[h.node.node_id for h in hits],
            scores=[h.score for h in hits] if scores is None else scores,
        )
    )


def in_order(
    hits: Dict[str, List[NodeWithScore]], sides: Mapping[str, Side], allowed: Optional[Allowed]
) -> Dict[str, List[NodeWithScore]]:
    """The sides' hits in the sides' order; when narrowed, only allowed evidences (whatever a side of
    yours returned: nodes this store does not know are dropped, never shown to a principal)."""
    if allowed is None:
        return {name: hits[name] for name in sides}
    return {name: [h for h in hits[name] if h.node.node_id in allowed.nodes] for name in sides}


def checked_query(bundle: QueryBundle) -> str:
    query = bundle.query_str
    if not query or not query.strip():
        raise ValueError("Empty query: HybridRetriever needs a question to search for")
    return query
