"""What the previous release wrote keeps working: its store and its chat database, used as they are.

The fixtures (``tests/data/release_d648acb``, see its README) were written by commit d648acb, the
last release that landed. Each format carries its version (the store manifest's ``format``, the chat
database's ``PRAGMA user_version``); a version this code does not know is refused with the fix
(``tests/index/test_persist.py``, ``tests/chat/test_chat_store.py``).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from fakes import HashingEmbedding, wiki_documents
from llama_index.core.base.llms.types import ChatMessage, MessageRole

from llama_index_ragonite import EvidenceStore, HybridRetriever, SQLiteChatStore
from llama_index_ragonite.chat.chat_store import SCHEMA_VERSION
from llama_index_ragonite.index.latent import embed_nodes
from llama_index_ragonite.index.store import FORMAT_VERSION

RELEASE = Path(__file__).parent / "data" / "release_d648acb"


def test_a_store_of_the_previous_release_is_searched_and_updated_without_reindexing(tmp_path):
    shutil.copytree(RELEASE / "store", tmp_path / "store")
    manifest = tmp_path / "store" / "manifest.json"
    written = manifest.read_text()
    store = EvidenceStore(tmp_path / "store", embed_model=HashingEmbedding())
    assert store.manifest["format"] == FORMAT_VERSION and store.page_ids() == ["faq", "install", "team"]
    # No Chroma files in the fixture (see its README): refill Chroma from the lexical copies.
    nodes = [store.lexical.get_node(node_id) for node_id in store.lexical.node_ids()]
    embed_nodes(store.embed_model, nodes)
    store._open_vector_store().add(nodes)

    report = store.ingest(wiki_documents())
    assert sorted(report.unchanged) == ["faq", "install", "team"] and report.nodes_written == 0  # nothing re-embedded
    assert report.refilled == len(nodes)  # the release predates the structure fields: filled in place
    filled = manifest.read_text()
    assert filled != written and json.loads(filled)["pages"] == json.loads(written)["pages"]
    assert store.ingest(wiki_documents()).refilled == 0
    assert manifest.read_text() == filled  # from then on a no-op ingest leaves the manifest byte for byte
    top = HybridRetriever.from_store(store, top_n=3).retrieve("Who is ranking evidences?")[0]
    assert top.node.ref_doc_id == "team" and top.ranks["lexical"] == 1
    assert store.check().ok


def test_a_chat_database_of_the_previous_release_is_read_and_written(tmp_path):
    shutil.copy(RELEASE / "conversations.sqlite", tmp_path / "chats.sqlite")
    version = sqlite3.connect(tmp_path / "chats.sqlite").execute("PRAGMA user_version").fetchone()[0]
    assert version == SCHEMA_VERSION
    with SQLiteChatStore(str(tmp_path / "chats.sqlite")) as chats:
        assert [info.id for info in chats.list_conversations()] == ["alice-1"]  # bob-2 stays deleted
        messages = chats.get_messages("alice-1")
        assert [m.content for m in messages][-1] == "Alice [Source 1]." and len(messages) == 4
        feedback = chats.get_feedback("alice-1")
        assert [(f.message_index, f.rating, f.comment) for f in feedback] == [(1, 1, "right person")]
        chats.restore_conversation("bob-2")
        chats.add_message("bob-2", ChatMessage(role=MessageRole.ASSISTANT, content="Boot the installer."))
        assert len(chats.get_messages("bob-2")) == 2
        assert {info.id for info in chats.list_conversations()} == {"alice-1", "bob-2"}
