"""Dense hits from the store's Chroma collection: ids and distances from Chroma, nodes from the store."""

import chromadb
from fakes import HashingEmbedding
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import Document, TextNode
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters, VectorStoreQuery
from llama_index.vector_stores.chroma import ChromaVectorStore

from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.index.node_lookup_chroma import NodeLookupChromaVectorStore
from llama_index_ragonite.index.store import EvidenceStore

PAGES = {
    "ota": "<h1>OTA server</h1><p>Bob owns the OTA server.</p><p>It runs on port 8443.</p>",
    "gpu": "<h1>GPU passthrough</h1><p>QEMU 1.4 was used.</p><p>The AMD Radeon HD 7750 was tested.</p>",
}


def _nodes(n=12):
    return [
        TextNode(id_=f"n{i}", text=f"evidence {i} about {'ota server' if i % 2 else 'gpu passthrough'} number {i}",
                 metadata={"title": "OTA" if i % 2 else "GPU", "rank": i})
        for i in range(n)
    ]  # fmt: skip


def _stores(nodes, lookup):
    collection = chromadb.EphemeralClient().get_or_create_collection(f"c{id(nodes)}", metadata={"hnsw:space": "cosine"})
    embed = HashingEmbedding()
    for node in nodes:
        node.embedding = embed.get_text_embedding(node.get_content())
    stock = ChromaVectorStore(chroma_collection=collection)
    stock.add(nodes)
    return stock, NodeLookupChromaVectorStore(lookup=lookup, chroma_collection=collection), embed


def test_hits_scores_and_nodes_equal_the_stock_store():
    nodes = _nodes()
    lexical = LexicalIndex()
    lexical.upsert(nodes)
    stock, ours, embed = _stores(nodes, lambda node_id: lexical.get_node(node_id) if node_id in lexical else None)
    for text in ["ota server", "gpu passthrough number 4", "evidence 7"]:
        query = VectorStoreQuery(query_embedding=embed.get_query_embedding(text), similarity_top_k=5)
        want, got = stock.query(query), ours.query(query)
        assert got.ids == want.ids and got.similarities == want.similarities
        assert [n.get_content() for n in got.nodes] == [n.get_content() for n in want.nodes]
        assert [n.metadata for n in got.nodes] == [n.metadata for n in want.nodes]
    filtered = VectorStoreQuery(
        query_embedding=embed.get_query_embedding("ota"),
        similarity_top_k=5,
        filters=MetadataFilters(filters=[MetadataFilter(key="title", value="GPU")]),
    )
    got = ours.query(filtered)
    assert got.ids == stock.query(filtered).ids and {n.metadata["title"] for n in got.nodes} == {"GPU"}


def test_the_nodes_come_from_the_lookup_and_the_stock_path_from_chroma():
    """Through the public ``query``: plain queries (and a ``where=``) read the lookup's nodes; filters, a
    caller's own ``include`` and queries without an embedding read Chroma's copies."""
    nodes = _nodes()
    held = {n.node_id: TextNode(id_=n.node_id, text="held " + n.text, metadata=n.metadata) for n in nodes}
    stock, ours, embed = _stores(nodes, held.get)
    query = VectorStoreQuery(query_embedding=embed.get_query_embedding("ota server"), similarity_top_k=4)
    got = ours.query(query)
    assert got.ids == stock.query(query).ids and all(n.text.startswith("held ") for n in got.nodes)
    where = ours.query(query, where={"title": "GPU"})
    assert where.ids == stock.query(query, where={"title": "GPU"}).ids and all(
        n.text.startswith("held ") for n in where.nodes
    )
    title = MetadataFilters(filters=[MetadataFilter(key="title", value="GPU")])
    filtered = VectorStoreQuery(query_embedding=query.query_embedding, similarity_top_k=4, filters=title)
    for stock_path in (ours.query(filtered), ours.query(query, include=["documents", "metadatas", "distances"])):
        assert stock_path.nodes and not any(n.text.startswith("held ") for n in stock_path.nodes)


def test_a_hit_the_lookup_lacks_takes_the_stock_path():
    nodes = _nodes()
    held = {n.node_id: n for n in nodes[:3]}  # the lexical side lost most nodes: out of step
    stock, ours, embed = _stores(nodes, held.get)
    query = VectorStoreQuery(query_embedding=embed.get_query_embedding("evidence 9"), similarity_top_k=4)
    got, want = ours.query(query), stock.query(query)
    assert got.ids == want.ids and [n.node_id for n in got.nodes] == want.ids  # rebuilt from Chroma, not dropped


def test_the_store_serves_dense_hits_from_its_own_nodes(tmp_path):
    store = EvidenceStore(tmp_path / "store", embed_model=HashingEmbedding())
    store.ingest([Document(id_=k, text=v, metadata={"title": k}) for k, v in PAGES.items()])
    assert isinstance(store.vector_store, NodeLookupChromaVectorStore)
    index = VectorStoreIndex.from_vector_store(store.vector_store, embed_model=store.embed_model)
    hits = index.as_retriever(similarity_top_k=3).retrieve("Who owns the OTA server?")
    assert hits and all(h.node.get_content() == store.lexical.get_node(h.node.node_id).get_content() for h in hits)
    assert all(h.node.metadata == store.lexical.get_node(h.node.node_id).metadata for h in hits)
