"""Sides of hybrid retrieval are LlamaIndex retrievers: yours is fused like ours (weight, reranking, trace)."""

import asyncio
from typing import List

import pytest
from fakes import HashingEmbedding, KeywordReranker, collected_events, wiki_documents
from llama_index.core import VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llama_index_ragonite import BuiltInSides, HybridRetriever, LexicalIndex, LexicalRetriever, Side
from llama_index_ragonite.events import RetrievalHitsEvent
from llama_index_ragonite.parsing.contextualizer import EvidenceContextualizer
from llama_index_ragonite.parsing.parser import HTMLEvidenceParser
from llama_index_ragonite.retrieval.fusion import RRF_K, rrf_fuse

QUESTION = "Who is ranking evidences in the team?"


def wiki_nodes():
    return IngestionPipeline(transformations=[HTMLEvidenceParser(), EvidenceContextualizer()]).run(
        documents=wiki_documents()
    )


class Listed(BaseRetriever):
    """A user's retriever: returns fixed nodes, best first (one of them no other side holds)."""

    def __init__(self, nodes: List[TextNode]) -> None:
        self.nodes = nodes
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        return [NodeWithScore(node=n, score=1.0 / (i + 1)) for i, n in enumerate(self.nodes)]


def other_index_retriever(nodes):
    """A ``VectorIndexRetriever`` over another (in-memory) vector store, as a user would add."""
    return VectorStoreIndex(nodes, embed_model=HashingEmbedding(dim=64)).as_retriever(similarity_top_k=5)


def test_a_user_retriever_is_a_side_with_its_weight_its_ranks_and_its_events():
    nodes = wiki_nodes()
    retriever = HybridRetriever.from_index(VectorStoreIndex(nodes, embed_model=HashingEmbedding()), top_n=50)
    plain = {h.node.node_id: h.score for h in retriever.retrieve(QUESTION)}
    retriever.add_side("mine", other_index_retriever(nodes), weight=0.5)
    assert list(retriever.sides) == ["lexical", "dense", "title", "mine"]
    with collected_events() as events:
        hits = retriever.retrieve(QUESTION)
    mine = [e for e in events if isinstance(e, RetrievalHitsEvent) and e.source == "mine"]
    assert len(mine) == 1 and len(mine[0].node_ids) == 5
    for hit in hits:  # the fused score is the old one plus weight / (k + rank) on the new side
        extra = 0.5 / (RRF_K + hit.ranks["mine"]) if "mine" in hit.ranks else 0.0
        assert hit.score == pytest.approx(plain.get(hit.node.node_id, 0.0) + extra)
    assert {h.node.node_id for h in hits if "mine" in h.ranks} == set(mine[0].node_ids)


def test_a_side_only_node_is_fused_and_reranked():
    nodes = wiki_nodes()
    own = TextNode(id_="elsewhere", text="Ranking evidences: notes from another system")
    retriever = HybridRetriever.from_index(
        VectorStoreIndex(nodes, embed_model=HashingEmbedding()),
        fusion="rerank+rrf",
        reranker=KeywordReranker(),
        sides={"mine": Side(Listed([own]), weight=2.0)},
        top_n=50,
    )
    hit = next(h for h in retriever.retrieve(QUESTION) if h.node.node_id == "elsewhere")
    assert hit.ranks["mine"] == 1 and hit.ranks["rerank"] >= 1 and "lexical" not in hit.ranks
    assert hit.lexical_rank is None and hit.rerank_rank == hit.ranks["rerank"]  # the old names, read-only


def test_sides_alone_fuse_by_weighted_rrf_sync_and_async():
    nodes = [TextNode(id_=f"n{i}", text=f"node {i}") for i in range(6)]
    first, second = Listed(nodes[:4]), Listed(list(reversed(nodes[2:])))
    retriever = HybridRetriever(sides={"a": Side(first), "b": Side(second, weight=lambda q: 2.0, top_k=3)}, top_n=6)
    expected = rrf_fuse([[n.node_id for n in nodes[:4]], ["n5", "n4", "n3"]], weights=[1.0, 2.0])
    got = retriever.retrieve("anything")
    assert [(h.node.node_id, h.score) for h in got] == [(i, pytest.approx(s)) for i, s in expected]
    again = asyncio.run(retriever.aretrieve("anything"))
    assert [(h.node.node_id, h.score, h.ranks) for h in again] == [(h.node.node_id, h.score, h.ranks) for h in got]


def test_built_in_sides_are_the_public_retrievers():
    nodes = wiki_nodes()
    lexical = LexicalIndex()
    lexical.upsert(nodes)
    stock = HybridRetriever(BuiltInSides(VectorStoreIndex(nodes, embed_model=HashingEmbedding()), lexical), top_n=20)
    by_hand = HybridRetriever(
        sides={
            "lexical": Side(LexicalRetriever(lexical, 10), weight=stock.built_in.settings.lexical_weight, top_k=10),
            "dense": Side(stock.dense, top_k=10),
            "title": stock.sides["title"],
        },
        top_n=20,
    )
    assert isinstance(stock.sides["lexical"].retriever, LexicalRetriever)
    mine = [(h.node.node_id, h.score, h.ranks) for h in by_hand.retrieve(QUESTION)]
    assert mine == [(h.node.node_id, h.score, h.ranks) for h in stock.retrieve(QUESTION)]


def test_from_defaults_takes_one_source_and_sides(tmp_path):
    nodes = wiki_nodes()
    retriever = HybridRetriever.from_defaults(
        nodes=nodes, embed_model=HashingEmbedding(), sides={"mine": Listed(nodes[:1])}, top_n=5
    )
    assert set(retriever.sides) == {"lexical", "dense", "title", "mine"} and retriever.sides["mine"].weight == 1.0
    assert retriever.retrieve(QUESTION)[0].node.ref_doc_id == "team"
    with pytest.raises(ValueError, match="exactly one"):
        HybridRetriever.from_defaults()
    with pytest.raises(ValueError, match="exists already"):
        retriever.add_side("dense", Listed(nodes))
    with pytest.raises(ValueError, match="reserved"):
        retriever.add_side("rerank", Listed(nodes))


def test_old_rank_attributes_are_read_only():
    hit = HybridRetriever.from_defaults(nodes=wiki_nodes(), embed_model=HashingEmbedding()).retrieve(QUESTION)[0]
    assert hit.dense_rank == hit.ranks["dense"] and hit.dense_score == hit.scores["dense"]
    with pytest.raises((AttributeError, ValueError)):
        hit.dense_rank = 7
