"""Issue 17's store faults, each reproduced in-process: stale evidences after a crash, mass removal,
read-only stores, a Chroma server that goes away. Every test is bounded and uses loopback only."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fakes import WIKI_PAGES, HashingEmbedding, wiki_documents
from llama_index.core.schema import Document
from processes import chroma_server

from llama_index_ragonite.chat.chat_db import default_history_file
from llama_index_ragonite.chat.chat_store import SQLiteChatStore
from llama_index_ragonite.cli import main
from llama_index_ragonite.errors import (
    ChatStoreError,
    MassRemovalError,
    StoreError,
    StoreInconsistentError,
    StoreInterruptedError,
    VectorStoreUnavailableError,
)
from llama_index_ragonite.index.journal import JOURNAL
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.retrieval.retriever import HybridRetriever

TESTS = Path(__file__).resolve().parents[1]
EDITED = dict(WIKI_PAGES, team="<title>Team</title><h1>Members</h1><p>Carol leads the team now.</p>")


def store_at(path, **kwargs):
    return EvidenceStore(path, embed_model=HashingEmbedding(), **kwargs)


def chroma_texts(store):
    got = store._open_vector_store().client.get(include=["documents"])
    return dict(zip(got["ids"], got["documents"]))


def interrupted_write(path, pages, fail_at="persist"):
    """An ingest that dies after Chroma has its evidences but before the manifest records them."""

    class Killed(BaseException):  # like SIGKILL: nothing after it runs, no except clause catches it
        pass

    store = store_at(path)

    def die(*args, **kwargs):
        raise Killed

    store._write = die
    with pytest.raises(Killed):
        store.ingest(wiki_documents(pages))


# ---- case 1: crash, edit, resume ------------------------------------------------------


@pytest.mark.fault(
    "crash after Chroma wrote a page, before the manifest recorded it; page edited",
    "StoreInterruptedError for readers; the next index repairs: nothing stale in Chroma",
)
def test_a_page_written_to_chroma_before_a_crash_leaves_nothing_stale_after_an_edit(tmp_path):
    store_at(tmp_path).ingest(wiki_documents({"install": WIKI_PAGES["install"]}))
    interrupted_write(tmp_path, WIKI_PAGES)  # "team" and "faq" reach Chroma, not the manifest
    with pytest.raises(StoreInterruptedError, match="interrupted while writing"):
        HybridRetriever.from_store(store_at(tmp_path))

    report = store_at(tmp_path).ingest(wiki_documents(EDITED))
    assert sorted(report.repaired) == ["faq", "team"] and sorted(report.added) == ["faq", "team"]
    store = store_at(tmp_path)
    texts = chroma_texts(store)
    assert sorted(texts) == sorted(store.lexical.node_ids())
    assert not any("Bob" in text for text in texts.values())  # the old table rows are gone
    assert store.check().ok and not (tmp_path / JOURNAL).exists()

    clean = store_at(tmp_path / "clean")
    clean.ingest(wiki_documents(EDITED))
    assert chroma_texts(clean) == texts


@pytest.mark.fault(
    "inconsistent store without a journal (Chroma and BM25 disagree)",
    "StoreInconsistentError with the counts; the next index repairs",
)
def test_every_written_page_replaces_its_evidences_even_without_a_journal(tmp_path):
    """A store left inconsistent by an older version (no journal): the counts disagree, the next write repairs."""
    store_at(tmp_path).ingest(wiki_documents({"install": WIKI_PAGES["install"]}))
    interrupted_write(tmp_path, WIKI_PAGES)
    (tmp_path / JOURNAL).unlink()
    with pytest.raises(StoreInconsistentError, match="Chroma holds 6 evidences, the lexical index 2"):
        HybridRetriever.from_store(store_at(tmp_path))
    found = store_at(tmp_path).check()
    assert not found.ok and len(found.only_in_chroma) == 4 and found.bad_pages == {"faq", "team"}
    assert "4 evidences only in Chroma" in str(found)

    store_at(tmp_path).ingest(wiki_documents(EDITED))
    store = store_at(tmp_path)
    assert store.check().ok and not any("Bob" in t for t in chroma_texts(store).values())


@pytest.mark.fault(
    "evidence text altered in Chroma behind the store's back",
    "`check` names the page; `--repair` drops it; the next index restores it",
)
def test_check_repair_drops_the_differing_pages_and_the_next_index_restores_them(tmp_path, capsys):
    store_at(tmp_path).ingest(wiki_documents())
    store = store_at(tmp_path)
    node_id = next(i for i in store.lexical.node_ids() if store.lexical.get_node(i).ref_doc_id == "faq")
    store._open_vector_store().client.update(ids=[node_id], documents=["tampered text"], embeddings=[[0.1] * 256])
    found = store_at(tmp_path).check()
    assert found.texts_differ == [node_id] and found.bad_pages == {"faq"}

    assert not store_at(tmp_path).check(repair=True).ok  # what it found
    repaired = store_at(tmp_path)
    assert repaired.check().ok and repaired.page_ids() == ["install", "team"]
    assert store_at(tmp_path).ingest(wiki_documents()).added == ["faq"]
    assert store_at(tmp_path).check().ok


@pytest.mark.fault(
    "`ragonite check` on an interrupted store or on a folder that is no store",
    "exit 1 with the differences, 0 after --repair; exit 2 for a folder that is no store",
)
def test_cli_check_reports_and_repairs(tmp_path, capsys):
    store_at(tmp_path / "s").ingest(wiki_documents({"install": WIKI_PAGES["install"]}))
    interrupted_write(tmp_path / "s", WIKI_PAGES)
    store = str(tmp_path / "s")
    assert main(["check", "--store", store]) == 1
    out = capsys.readouterr().out
    assert "pages of an interrupted write: faq, team" in out and "4 evidences only in Chroma" in out
    assert main(["check", "--store", store, "--repair"]) == 0
    assert "Repaired" in capsys.readouterr().out
    assert main(["check", "--store", store]) == 0
    assert "consistent" in capsys.readouterr().out
    assert main(["check", "--store", str(tmp_path / "nothing")]) == 2


# ---- case 2: an empty or wrong source folder --------------------------------------------


@pytest.mark.fault(
    "ingest would remove most or all indexed pages",
    "MassRemovalError ('would remove N of the M indexed pages'), store unchanged, unless allow_removal=",
)
def test_an_ingest_that_would_remove_most_pages_refuses(tmp_path):
    store_at(tmp_path).ingest(wiki_documents())
    with pytest.raises(MassRemovalError, match="would remove 3 of the 3 indexed pages"):
        store_at(tmp_path).ingest([], remove_missing=True)
    only_team = {"team": WIKI_PAGES["team"]}
    with pytest.raises(MassRemovalError, match="remove 2 of the 3"):
        store_at(tmp_path).ingest(wiki_documents(only_team), remove_missing=True)
    assert store_at(tmp_path).page_ids() == ["faq", "install", "team"]  # nothing changed
    assert store_at(tmp_path).ingest([], remove_missing=False).removed == []

    two = dict(WIKI_PAGES)
    del two["faq"]
    assert store_at(tmp_path).ingest(wiki_documents(two), remove_missing=True).removed == ["faq"]  # 1 of 3: fine
    report = store_at(tmp_path).ingest(wiki_documents(only_team), remove_missing=True, allow_removal=True)
    assert report.removed == ["install"] and store_at(tmp_path).page_ids() == ["team"]
    with pytest.raises(ValueError, match="max_removal_share"):
        store_at(tmp_path).ingest([], remove_missing=True, max_removal_share=2)


@pytest.mark.fault(
    "`ragonite index` of an empty (unmounted) source folder",
    "exit 2, store kept; --prune empties it on purpose",
)
def test_cli_index_of_an_empty_folder_exits_2_and_keeps_the_store(tmp_path, capsys, monkeypatch):
    from llama_index.core import Settings

    store = tmp_path / "s"
    store_at(store).ingest(wiki_documents())
    (tmp_path / "empty").mkdir()
    assert main(["index", str(tmp_path / "empty"), "--store", str(store), "--quiet"]) == 2
    assert "would remove 3 of the 3 indexed pages" in capsys.readouterr().err
    assert store_at(store).page_ids() == ["faq", "install", "team"]
    monkeypatch.setattr(Settings, "_embed_model", HashingEmbedding())
    assert main(["index", str(tmp_path / "empty"), "--store", str(store), "--quiet", "--prune"]) == 0
    assert store_at(store).page_ids() == []


# ---- case 4: read-only stores ---------------------------------------------------------------

READER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[2])
    from fakes import HashingEmbedding
    from llama_index_ragonite.chat.chat_db import default_history_file
    from llama_index_ragonite.chat.chat_store import SQLiteChatStore
    from llama_index_ragonite.chat.engine import RagoniteChatEngine
    from llama_index_ragonite.errors import ChatStoreError
    from llama_index_ragonite.index.store import EvidenceStore
    from llama_index_ragonite.retrieval.retriever import HybridRetriever

    store = EvidenceStore(sys.argv[1], embed_model=HashingEmbedding())
    try:
        open(sys.argv[1] + "/probe", "w")
        print("PROBE-WROTE")
    except OSError:
        pass
    print("CHECK", store.check().ok)
    print("HIT", HybridRetriever.from_store(store, top_n=1).retrieve("who ranks evidences")[0].node.text)
    history = default_history_file(sys.argv[1])
    engine = RagoniteChatEngine.from_store(sys.argv[1], embed_model=HashingEmbedding(),
                                           chat_store=SQLiteChatStore(history), conversation_id="ro")
    print("ANSWER", engine.chat("Who ranks evidences?").response)
    print("HISTORY", history)
    try:
        SQLiteChatStore(sys.argv[1] + "/conversations.sqlite").add_message("x", engine.chat_history[0])
    except ChatStoreError as err:
        print("REFUSED", err)
    """
)


def _read_only_runner():
    """A command prefix under which the store's owner cannot write a read-only folder (root: drop the override)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot take away root's right to write read-only files")
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search,-fowner"]


@pytest.mark.fault(
    "store folder is read-only",
    "search and ask work; history goes to the state folder; writing history into the store is a ChatStoreError",
)
def test_a_read_only_store_can_be_searched_and_asked(tmp_path):
    """Real permissions: the store is chmod'ed read-only; as root, the reader runs without CAP_DAC_OVERRIDE."""
    store = tmp_path / "ro"
    store_at(store).ingest(wiki_documents())
    state = tmp_path / "state"
    for path in [store, *store.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        done = subprocess.run(
            [*_read_only_runner(), sys.executable, "-c", READER, str(store), str(TESTS)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "XDG_STATE_HOME": str(state)},
        )
    finally:
        for path in [store, *store.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "PROBE-WROTE" not in out and "CHECK True" in out and "Bob" in out.split("HIT", 1)[1].splitlines()[1]
    assert "ANSWER" in out and "Bob" in out.split("ANSWER", 1)[1]
    history = Path(out.split("HISTORY ", 1)[1].splitlines()[0])
    assert history.parent == state / "ragonite" and history.is_file()
    assert "REFUSED" in out and "cannot write the chat history" in out
    assert sorted(p.name for p in store.iterdir()) == sorted(p.name for p in (tmp_path / "ro").iterdir())
    assert not (store / "conversations.sqlite").exists()


@pytest.mark.fault(
    "chat history path not writable",
    "history falls back to $XDG_STATE_HOME/ragonite; an unusable path is a ChatStoreError ('cannot write the chat history there')",
    area="chat",
)
def test_history_goes_beside_a_writable_store_and_to_the_state_folder_otherwise(tmp_path, monkeypatch):
    assert default_history_file(tmp_path) == tmp_path / "conversations.sqlite"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if Path(path) == tmp_path else real_access(path, mode))
    elsewhere = default_history_file(tmp_path)
    assert elsewhere.parent == tmp_path / "state" / "ragonite" and elsewhere.name.startswith(
        f"conversations-{tmp_path.name}-"
    )
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(ChatStoreError, match="cannot write the chat history there"):
        SQLiteChatStore(blocker / "sub" / "chats.sqlite")


# ---- vector-store outages -----------------------------------------------------------------------


@pytest.mark.fault(
    "Chroma server stops mid-session",
    "VectorStoreUnavailableError naming host:port; no silent fallback to BM25",
)
def test_a_chroma_server_that_goes_away_is_a_store_error_naming_it(tmp_path):
    with chroma_server(tmp_path / "data") as (process, client, port):
        store = store_at(tmp_path / "local", chroma_client=client)
        store.ingest(wiki_documents())
        retriever = HybridRetriever.from_store(store, top_n=2)
        assert retriever.retrieve("who ranks evidences")
        process.kill()
        process.wait(timeout=20)
    with pytest.raises(VectorStoreUnavailableError, match=f"Chroma server at 127.0.0.1:{port} cannot be reached"):
        retriever.retrieve("who ranks evidences")
    with pytest.raises(StoreError, match="does not fall back to BM25"):
        store_at(tmp_path / "local", chroma_client=client).ingest(wiki_documents(EDITED))
    with pytest.raises(StoreError, match="cannot be reached"):
        HybridRetriever.from_store(store_at(tmp_path / "local", chroma_client=client))


@pytest.mark.fault(
    "evidence deleted from Chroma behind the store's back",
    "`check --repair` then index restores the same node ids",
)
def test_documents_keep_their_ids_through_a_repair(tmp_path):
    """Node ids are stable (page id, granularity, position): a repaired page comes back with the same ids."""
    store_at(tmp_path).ingest(wiki_documents())
    before = sorted(store_at(tmp_path).lexical.node_ids())
    store = store_at(tmp_path)
    store._open_vector_store().client.delete(ids=before[:1])
    store_at(tmp_path).check(repair=True)
    store_at(tmp_path).ingest([Document(id_=d.id_, text=d.text, metadata=d.metadata) for d in wiki_documents()])
    assert sorted(store_at(tmp_path).lexical.node_ids()) == before
    assert sorted(chroma_texts(store_at(tmp_path))) == before
