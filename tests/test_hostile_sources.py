"""Issue 44 through the `ragonite` command: a store folder inside the source folder, ``--strict``,
and `ragonite chat` with standard input closed. Each run is bounded; loopback only."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys

import pytest
from fakes import REPO, HashingEmbedding, wiki_documents
from llama_index.core import Settings

from llama_index_ragonite.cli import main
from llama_index_ragonite.index.store import EvidenceStore

SAMPLE = REPO / "examples" / "sample_wiki"
TIMEOUT = 180


@pytest.fixture
def hashing_settings(monkeypatch):
    """`ragonite index` in this process embeds with ``HashingEmbedding`` (no model to load)."""
    monkeypatch.setattr(Settings, "_embed_model", HashingEmbedding())


@pytest.mark.fault(
    "the store folder inside the source folder (`ragonite index wiki --store wiki/index`), or another store there",
    "skipped with a warning naming it (nothing under it read as a page); every run completes, the second changes nothing",
)
def test_index_skips_a_store_inside_its_source(tmp_path, capsys, caplog, hashing_settings):
    source = shutil.copytree(SAMPLE, tmp_path / "wiki")
    store = source / "index"
    argv = ["index", str(source), "--store", str(store), "--quiet"]
    assert main(argv) == 0
    assert "4 added" in capsys.readouterr().out
    assert main(argv) == 0
    assert "4 unchanged pages; 0 evidences written" in capsys.readouterr().out
    assert "index: skipped, it is the store folder" in caplog.text
    EvidenceStore(source / "old-index", embed_model=HashingEmbedding()).ingest(wiki_documents())
    assert main(argv) == 0
    assert "0 added, 0 updated, 0 removed, 4 unchanged pages" in capsys.readouterr().out
    assert "old-index: skipped, it holds an index store" in caplog.text
    assert EvidenceStore(store).page_ids() == sorted(p.name for p in SAMPLE.glob("*.html"))


def test_index_strict_stops_at_a_json_file_that_is_not_a_page(tmp_path, capsys, caplog, hashing_settings):
    source = shutil.copytree(SAMPLE, tmp_path / "wiki")
    (source / "package.json").write_text('{"name": "wiki", "private": true}')
    store = str(tmp_path / "store")
    assert main(["index", str(source), "--store", store, "--quiet", "--strict"]) == 2
    assert "package.json: expected a JSON object with a string 'content' field" in capsys.readouterr().err
    assert not (tmp_path / "store").exists()
    assert main(["index", str(source), "--store", store, "--quiet"]) == 0
    assert "4 added" in capsys.readouterr().out
    assert "package.json: expected a JSON object" in caplog.text and "skipped" in caplog.text


@pytest.fixture(scope="module")
def chat_store(tmp_path_factory):
    store = tmp_path_factory.mktemp("chat") / "store"
    assert main(["index", str(SAMPLE), "--store", str(store), "--quiet"]) == 0  # the embedded default model
    return store


@pytest.mark.fault(
    "`ragonite chat` with standard input at EOF or closed (</dev/null, 0<&-, a closed stdin object)",
    "the chat ends cleanly: exit 0, no traceback",
)
@pytest.mark.parametrize("stdin", ["/dev/null", "closed fd", "closed object"])
def test_chat_without_input_ends_cleanly(chat_store, tmp_path, stdin, monkeypatch, capsys):
    argv = ["chat", "--store", str(chat_store), "--conversations", str(tmp_path / "chats.sqlite")]
    if stdin == "closed object":  # e.g. an embedding app that closed sys.stdin: input() raises ValueError
        closed = io.StringIO()
        closed.close()
        monkeypatch.setattr(sys, "stdin", closed)
        assert main(argv) == 0
        assert "Conversation" in capsys.readouterr().out
        return
    run = subprocess.run(
        [sys.executable, "-m", "llama_index_ragonite.cli", *argv],
        stdin=subprocess.DEVNULL,
        preexec_fn=(lambda: os.close(0)) if stdin == "closed fd" else None,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr and "Conversation" in run.stdout
