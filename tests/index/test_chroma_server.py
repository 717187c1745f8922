"""The same store and retriever against a real Chroma server (`chroma run` on 127.0.0.1)."""

from pathlib import Path

import pytest
from fakes import HashingEmbedding
from llama_index.core.schema import Document
from processes import chroma_server as running_chroma

from llama_index_ragonite.cli import main
from llama_index_ragonite.errors import VectorStoreAddressError
from llama_index_ragonite.index.chroma_access import chroma_address
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.retrieval.retriever import HybridRetriever


@pytest.fixture
def chroma_server(tmp_path):
    with running_chroma(tmp_path / "server-data") as (_, client, _):
        yield client


def test_ragonite_index_and_check_write_to_a_chroma_server(tmp_path, capsys):
    """The one writer of docs/deployment.md: `ragonite index --chroma-server`, vectors on the server only."""
    sample = Path(__file__).resolve().parents[2] / "examples" / "sample_wiki"
    store = tmp_path / "store"
    with running_chroma(tmp_path / "server-data") as (_, client, port):
        server = ["--chroma-server", f"127.0.0.1:{port}", "--chroma-collection", "wiki"]
        assert main(["index", str(sample), "--store", str(store), "--quiet", *server]) == 0
        indexed = len(EvidenceStore(store, chroma_client=client, collection="wiki"))
        assert indexed > 0 and client.get_collection("wiki").count() == indexed
        assert not (store / "chroma").exists()  # nothing embedded beside the BM25 files
        assert main(["check", "--store", str(store), *server]) == 0
        assert "consistent: Chroma, lexical index, latent terms and manifest agree" in capsys.readouterr().out
        # the same store read without the server has no vectors: `check` says so instead of passing
        assert main(["check", "--store", str(store)]) != 0
    assert main(["index", str(sample), "--store", str(tmp_path / "x"), "--chroma-collection", "wiki"]) == 2
    assert "--chroma-collection needs --chroma-server" in capsys.readouterr().err


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


@pytest.mark.parametrize(
    "address, expected",
    [
        ("127.0.0.1:8001", ("127.0.0.1", 8001, False)),
        (" chroma.internal ", ("chroma.internal", 8000, False)),
        ("https://chroma.example.org", ("chroma.example.org", 443, True)),
        ("http://[::1]:9000/", ("::1", 9000, False)),
    ],
)
def test_chroma_address_forms(address, expected):
    assert chroma_address(address) == expected


@pytest.mark.parametrize("address", ["", "ftp://host:1", "host:port", "http://host:1/some/path"])
def test_a_bad_chroma_address_is_refused(address):
    with pytest.raises(VectorStoreAddressError, match="write HOST:PORT"):
        chroma_address(address)
