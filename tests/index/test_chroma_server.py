"""The same store and retriever against a real Chroma server (`chroma run` on 127.0.0.1)."""

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes import HashingEmbedding
from llama_index.core.schema import Document

from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.retrieval.retriever import HybridRetriever


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def chroma_server(tmp_path):
    chroma = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    if not Path(chroma).exists():
        pytest.fail("the `chroma` command (from the chromadb package) is missing")
    import chromadb

    port = _free_port()
    proc = subprocess.Popen(
        [chroma, "run", "--path", str(tmp_path / "server-data"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                client = chromadb.HttpClient(host="127.0.0.1", port=port)
                client.heartbeat()
                break
            except Exception:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("chroma server did not start") from None
                time.sleep(0.3)
        yield client
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


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
