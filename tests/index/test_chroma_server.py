"""The same store and retriever against a real Chroma server (`chroma run` on 127.0.0.1)."""

import pytest
from fakes import HashingEmbedding
from llama_index.core.schema import Document
from processes import chroma_server as running_chroma

from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.retrieval.retriever import HybridRetriever


@pytest.fixture
def chroma_server(tmp_path):
    with running_chroma(tmp_path / "server-data") as (_, client, _):
        yield client


def test_index_and_query_through_a_chroma_server(chroma_server, tmp_path):
    docs = [
        Document(id_="a", text="<h1>Install</h1><p>Boot the installer and choose Erase and Install.</p>"),
        Document(id_="b", text="<h1>Team</h1><table><tr><th>Member</th></tr><tr><td>Alice</td></tr></table>"),
    ]
    store = EvidenceStore(tmp_path / "local", embed_model=HashingEmbedding(), chroma_client=chroma_server)
    assert store.ingest(docs).nodes_written == 3
    assert store.ingest(docs).nodes_written == 0  # idempotent over the server too
    assert chroma_server.get_collection("ragonite").count() == 3
    hits = HybridRetriever.from_store(store, top_n=2).retrieve("choose erase and install")
    assert hits[0].node.text == "Boot the installer and choose Erase and Install."
    assert hits[0].dense_rank == 1 and hits[0].lexical_rank == 1
    stored = HybridRetriever.from_store(store).stored_embeddings([hits[0].node.node_id])
    assert list(stored) == [hits[0].node.node_id] and len(stored[hits[0].node.node_id]) == HashingEmbedding().dim
