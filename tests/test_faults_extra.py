"""Fault classes no other test reproduced: bad pages, damaged store files, odd questions, failing models.

Each test injects one fault into real components (parser, store, Chroma, SQLite, the OpenAI
client against a loopback stub), is bounded in time and uses loopback only. A fault whose
promised behaviour does not hold yet is ``xfail(strict=True)`` with the reproduction in its
reason: it turns into a failure as soon as it is fixed, so the marker has to go then.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes import WIKI_PAGES, HashingEmbedding, KeywordLLM, wiki_documents
from llama_index.core.llms import ChatMessage
from llama_index.core.schema import Document
from openai_stub import OpenAIStub, server_error

from llama_index_ragonite.chat.chat_store import SQLiteChatStore
from llama_index_ragonite.chat.engine import RagoniteChatEngine
from llama_index_ragonite.cli import main
from llama_index_ragonite.errors import (
    ChatStoreError,
    ConversationDeletedError,
    LLMCallError,
    PageLoadError,
    RagoniteError,
    StoreCorruptError,
    StoreError,
    StoreInconsistentError,
)
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.models.llms import openai_llm
from llama_index_ragonite.parsing.loaders import load_pages
from llama_index_ragonite.parsing.parser import HTMLEvidenceParser
from llama_index_ragonite.retrieval.retriever import HybridRetriever

QUESTION = "Who ranks evidences?"
NEW_PAGE = {**WIKI_PAGES, "extra": "<title>Extra</title><p>Release notes ship on Fridays.</p>"}


def store_at(path, embed_model=None) -> EvidenceStore:
    return EvidenceStore(path, embed_model=embed_model or HashingEmbedding())


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A three-page store to copy (never written by the tests)."""
    path = tmp_path_factory.mktemp("faults") / "base"
    store_at(path).ingest(wiki_documents())
    return path


@pytest.fixture
def store(built, tmp_path) -> Path:
    copy = tmp_path / "store"
    shutil.copytree(built, copy)
    return copy


def top_text(path: Path) -> str:
    return HybridRetriever.from_store(store_at(path), top_n=1).retrieve(QUESTION)[0].node.text


def control_characters(text: str) -> bool:
    return any(ord(c) < 32 and c not in "\n\t" for c in text)


# ---- parsing ------------------------------------------------------------------------------------


@pytest.mark.fault("page file is empty (0 bytes)", "the page is recorded with no evidences; no error", area="parsing")
def test_an_empty_page_file_is_a_page_without_evidences(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "empty.html").write_bytes(b"")
    docs = load_pages(tmp_path / "src")
    assert [d.id_ for d in docs] == ["empty.html"]
    report = store_at(tmp_path / "s").ingest(docs)
    assert report.added == ["empty.html"] and report.nodes_written == 0


@pytest.mark.fault(
    "page file saved as UTF-16 (with its BOM)", "read as the page it is, not refused as binary", area="parsing"
)
def test_a_utf16_page_is_read_not_refused(tmp_path):
    page = tmp_path / "team.html"
    page.write_bytes("<title>Team</title><p>Bob ranks evidences.</p>".encode("utf-16"))
    [doc] = load_pages(page)
    assert "Bob ranks evidences" in doc.text


@pytest.mark.fault(
    "binary file with an .html extension",
    "PageLoadError naming the file, or the file skipped with a warning; never control characters indexed",
    area="parsing",
)
def test_a_binary_file_named_html_is_not_indexed_as_text(tmp_path):
    page = tmp_path / "image.html"
    page.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8)
    try:
        docs = load_pages(page)
    except PageLoadError as err:
        assert "image.html" in str(err)
        return
    nodes = HTMLEvidenceParser().get_nodes_from_documents(docs)
    assert not any(control_characters(n.text) for n in nodes)


@pytest.mark.fault(
    "page with neither <title> nor heading",
    "indexed and retrievable with an empty title; no error",
    area="parsing",
)
def test_a_page_without_title_or_heading_is_indexed(tmp_path):
    doc = Document(id_="untitled", text="<p>The staging server restarts at midnight.</p>")
    nodes = HTMLEvidenceParser().get_nodes_from_documents([doc])
    assert [n.text for n in nodes] == ["The staging server restarts at midnight."]
    assert not nodes[0].metadata.get("title")
    store_at(tmp_path).ingest([doc])
    hits = HybridRetriever.from_store(store_at(tmp_path), top_n=1).retrieve("when does staging restart")
    assert hits[0].node.ref_doc_id == "untitled"


@pytest.mark.fault(
    "one passage of a million characters (no markup breaks)",
    "parsed into one passage and indexed within seconds",
    area="parsing",
)
def test_a_huge_single_passage_is_parsed_and_indexed_in_bounded_time(tmp_path):
    text = "<p>" + "firmware " * 120_000 + "ends here</p>"
    start = time.perf_counter()
    nodes = HTMLEvidenceParser().get_nodes_from_documents([Document(id_="big", text=text)])
    assert len(nodes) == 1 and nodes[0].text.endswith("ends here")
    assert store_at(tmp_path).ingest([Document(id_="big", text=text)]).nodes_written == 1
    assert time.perf_counter() - start < 30


# ---- index --------------------------------------------------------------------------------------

STORE_FILES = ["manifest.json", "latent.npz", "lexical/lexical.json", "lexical/bm25s/params.index.json"]


@pytest.mark.fault(
    "store file is zero bytes (manifest, latent terms, BM25 manifest or BM25 data)",
    "StoreCorruptError naming the file, for readers and writers alike; the store is not overwritten",
    area="index",
)
@pytest.mark.parametrize("name", STORE_FILES)
def test_a_zero_byte_store_file_is_corrupt_and_named(store, name):
    (store / name).write_bytes(b"")
    with pytest.raises(StoreCorruptError) as err:
        top_text(store)
    assert name.rsplit("/", 1)[-1] in str(err.value)
    with pytest.raises(StoreCorruptError):
        store_at(store).ingest(wiki_documents(NEW_PAGE))
    assert (store / name).stat().st_size == 0  # nothing written over the evidence of the damage


@pytest.mark.fault(
    "Chroma's SQLite file is zero bytes",
    "StoreInconsistentError with the counts and the fix; the next index rebuilds the vectors",
    area="index",
)
def test_a_zero_byte_chroma_database_is_reported_and_repaired_by_the_next_index(store):
    (store / "chroma" / "chroma.sqlite3").write_bytes(b"")
    with pytest.raises(StoreInconsistentError, match="Chroma holds 0 evidences"):
        top_text(store)
    store_at(store).ingest(wiki_documents())
    assert store_at(store).check().ok and "Bob" in top_text(store)


@pytest.mark.fault(
    "writer lock file left by a process that died holding it",
    "the next ingest proceeds (the lock died with the process); nothing lost",
    area="index",
)
def test_a_lock_file_left_by_a_dead_process_does_not_block(store):
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import fcntl,os,sys; f=open(sys.argv[1],'a'); fcntl.flock(f, fcntl.LOCK_EX); os._exit(9)",
            str(store / ".ingest.lock"),
        ],
        timeout=60,
    )
    assert done.returncode == 9 and (store / ".ingest.lock").exists()
    assert store_at(store).ingest(wiki_documents(NEW_PAGE)).added == ["extra"]
    assert store_at(store).page_ids() == ["extra", "faq", "install", "team"] and store_at(store).check().ok


@pytest.mark.fault(
    "store path is a file, or a store that does not exist",
    "StoreError naming the path (cannot create the folder / holds no pages yet); nothing created",
    area="index",
)
def test_a_store_path_that_is_a_file_or_missing_is_a_store_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a store")
    with pytest.raises(StoreError, match="cannot create the store folder") as err:
        store_at(blocker).ingest(wiki_documents())
    assert str(blocker) in str(err.value)
    for path in (blocker, tmp_path / "missing"):
        with pytest.raises(StoreError, match="holds no pages yet") as err:
            HybridRetriever.from_store(store_at(path))
        assert str(path) in str(err.value)
    assert blocker.read_text() == "not a store" and not (tmp_path / "missing").exists()


class NaNEmbedding(HashingEmbedding):
    """A model that returns NaN in one coordinate (a broken ONNX export, an fp16 overflow)."""

    def _get_text_embedding(self, text: str) -> list[float]:
        return [float("nan")] + super()._get_text_embedding(text)[1:]


class ShortEmbedding(HashingEmbedding):
    """Same class and model name as the store's, but 128 dimensions (a truncated Matryoshka model)."""

    dim: int = 128


@pytest.mark.fault(
    "embedding model returns NaN",
    "an error naming the model and NaN before anything is written; the store stays readable",
    area="index",
)
def test_an_embedding_that_returns_nan_is_refused_and_leaves_the_store_readable(store):
    with pytest.raises((RagoniteError, ValueError), match="NaN"):
        store_at(store, NaNEmbedding()).ingest(wiki_documents(NEW_PAGE))
    assert "Bob" in top_text(store)


@pytest.mark.fault(
    "embedding model returns vectors of the wrong dimension",
    "an error naming both dimensions before anything is written; the store stays readable",
    area="index",
)
def test_an_embedding_of_the_wrong_dimension_is_refused_and_leaves_the_store_readable(store):
    with pytest.raises((RagoniteError, ValueError), match="128"):
        store_at(store, ShortEmbedding()).ingest(wiki_documents(NEW_PAGE))
    assert "Bob" in top_text(store)


# ---- retrieval ----------------------------------------------------------------------------------


@pytest.mark.fault(
    "store folder deleted while a reader is open",
    "StoreError saying the store is gone (never a silent empty result)",
    area="retrieval",
)
def test_a_store_deleted_under_an_open_reader_is_an_error(store):
    retriever = HybridRetriever.from_store(store_at(store), top_n=2)
    assert retriever.retrieve(QUESTION)
    shutil.rmtree(store)
    with pytest.raises(StoreError):
        retriever.retrieve(QUESTION)


# ---- chat ---------------------------------------------------------------------------------------


def chat_engine(store: Path, chats: SQLiteChatStore, conversation: str = "c", llm=None) -> RagoniteChatEngine:
    return RagoniteChatEngine.from_store(
        store, llm=llm, embed_model=HashingEmbedding(), chat_store=chats, conversation_id=conversation
    )


@pytest.mark.fault(
    "chat store file corrupted (truncated, or its header overwritten)",
    "ChatStoreError naming the file ('not a usable SQLite chat store'); the file left as it was",
    area="chat",
)
@pytest.mark.parametrize("damage", ["truncated", "header"])
def test_a_corrupted_chat_store_is_named_in_the_error(tmp_path, damage):
    db = tmp_path / "chats.sqlite"
    with SQLiteChatStore(db) as chats:
        for i in range(150):
            chats.add_message("c", ChatMessage(role="user", content=f"question {i} " * 20))
    data = db.read_bytes()
    damaged = data[: len(data) // 3] if damage == "truncated" else b"X" * 16 + data[16:]
    db.write_bytes(damaged)
    with pytest.raises(ChatStoreError, match="not a usable SQLite") as err:
        SQLiteChatStore(db).get_messages("c")
    assert str(db) in str(err.value) and db.read_bytes() == damaged


@pytest.mark.fault(
    "chatting in a soft-deleted conversation",
    "ConversationDeletedError saying to restore it; its history unchanged",
    area="chat",
)
def test_chatting_in_a_deleted_conversation_is_refused(store, tmp_path):
    chats = SQLiteChatStore(tmp_path / "chats.sqlite")
    chat_engine(store, chats).chat(QUESTION)
    chats.delete_conversation("c")
    with pytest.raises(ConversationDeletedError, match="restore_conversation"):
        chat_engine(store, chats).chat("And who parses?")
    assert [m.content for m in chats.get_messages("c")][0] == QUESTION and len(chats.get_messages("c")) == 2


@pytest.mark.fault(
    "LLM raises its own error on every call",
    "the LLM's error reaches the caller unchanged; no half-written turn in the history",
    area="chat",
)
def test_an_llm_that_always_raises_leaves_no_half_turn(store, tmp_path):
    chats = SQLiteChatStore(tmp_path / "chats.sqlite")
    with pytest.raises(RuntimeError, match="cannot answer"):
        chat_engine(store, chats, llm=KeywordLLM(fail_on="Source")).chat(QUESTION)
    assert chats.get_messages("c") == []


@pytest.mark.fault(
    "LLM returns garbled, non-UTF-8 text (lone surrogates)",
    "answered with U+FFFD in place of the bad bytes; the turn stored whole",
    area="chat",
)
def test_non_utf8_llm_output_is_answered_and_stored_whole(store, tmp_path):
    chats = SQLiteChatStore(tmp_path / "chats.sqlite")
    llm = KeywordLLM(keyword="Bob", fixed_answer="Bob \udcff\udcfe ranks them")
    try:
        response = chat_engine(store, chats, llm=llm).chat(QUESTION)
    finally:
        stored = [m.content for m in chats.get_messages("c")]
    assert "Bob" in response.response and "\udcff" not in response.response
    assert len(stored) == 2


@pytest.mark.fault(
    "question holds control characters (NUL, ANSI escapes, BEL) among words",
    "answered; the question is stored as typed",
    area="chat",
)
def test_a_question_with_control_characters_is_answered(store, tmp_path):
    chats = SQLiteChatStore(tmp_path / "chats.sqlite")
    question = "Who\x00 ranks\x1b[31m evidences?\x07"
    response = chat_engine(store, chats).chat(question)
    assert "Bob" in response.response
    assert chats.get_messages("c")[0].content == question


@pytest.mark.fault(
    "question is only control characters",
    "ValueError ('Empty message'), as for a blank question",
    area="chat",
)
def test_a_question_of_only_control_characters_is_empty(store, tmp_path):
    chats = SQLiteChatStore(tmp_path / "chats.sqlite")
    with pytest.raises(ValueError, match="Empty message"):
        chat_engine(store, chats).chat("\x00\x01\x02\x1b")
    assert chats.get_messages("c") == []


@pytest.fixture
def stub():
    with OpenAIStub() as server:
        yield server


@pytest.mark.fault(
    "OpenAI-compatible server keeps answering HTTP 500",
    "LLMCallError ('service failed … InternalServerError') after the client's retries",
    area="chat",
)
def test_an_llm_server_that_keeps_failing_is_a_clear_error(store, stub):
    stub.script(server_error(), server_error(), server_error(), server_error())
    llm = openai_llm("gpt-4o", api_base=stub.base_url, api_key="test-key", max_retries=1, timeout=5.0)
    with pytest.raises(LLMCallError, match="service failed.*InternalServerError"):
        RagoniteChatEngine(HybridRetriever.from_store(store_at(store)), llm=llm).chat(QUESTION)


@pytest.mark.fault(
    "OpenAI-compatible server not listening (connection refused)",
    "LLMCallError ('could not be reached') within seconds",
    area="chat",
)
def test_an_llm_server_that_is_not_listening_is_a_clear_error(store):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed when the block ends: nothing listens there
    llm = openai_llm("gpt-4o", api_base=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0, timeout=5.0)
    start = time.perf_counter()
    with pytest.raises(LLMCallError, match="could not be reached"):
        RagoniteChatEngine(HybridRetriever.from_store(store_at(store)), llm=llm).chat(QUESTION)
    assert time.perf_counter() - start < 20


# ---- cli ----------------------------------------------------------------------------------------


@pytest.mark.fault(
    "unknown CLI subcommand, unknown option or a non-integer --top",
    "exit 2 with argparse's usage line naming the bad argument",
    area="cli",
)
@pytest.mark.parametrize(
    "argv, message",
    [
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["search", "q", "--store", "s", "--bogus"], "unrecognized arguments: --bogus"),
        (["search", "q", "--store", "s", "--top", "x"], "invalid int value: 'x'"),
    ],
)
def test_bad_command_lines_exit_2_with_usage(capsys, argv, message):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "usage: ragonite" in err and message in err


@pytest.mark.fault(
    "`ragonite index` of a source folder that does not exist",
    "exit 2, 'no such file or folder' naming it; no store created",
    area="cli",
)
def test_indexing_a_missing_source_exits_2_and_creates_nothing(capsys, tmp_path):
    assert main(["index", str(tmp_path / "nowhere"), "--store", str(tmp_path / "s"), "--quiet"]) == 2
    assert "nowhere: no such file or folder" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


@pytest.mark.fault(
    "`ragonite search` / `ask` on a store that does not exist",
    "exit 2, 'holds no pages yet: run `ragonite index`'; no folder created",
    area="cli",
)
@pytest.mark.parametrize("command", ["search", "ask"])
def test_searching_a_missing_store_exits_2(capsys, tmp_path, command):
    missing = str(tmp_path / "missing")
    argv = ["search", "q", "--store", missing] if command == "search" else ["ask", "--store", missing, "Who?"]
    assert main(argv) == 2
    assert "holds no pages yet" in capsys.readouterr().err
    assert not (tmp_path / "missing").exists()
