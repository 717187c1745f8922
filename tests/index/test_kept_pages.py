"""Issue 58: nothing lost by a bad file, and disk full in Chroma's compaction.

A page indexed before whose file now fails to read or parse (NUL bytes in what was HTML, JSON cut
short) keeps its previous evidences, reported as "kept the previous version: <reason>"; only a page
whose file is gone is removed; a new file that fails is skipped as before. And `ragonite index` on a
real 804 KB file system, where Chroma's compaction is what runs out of room ("Error in compaction:
Failed to apply logs to the metadata segment", no errno, and SQLite gives the room back before the
error arrives), ends in the documented disk-full error: exit 2, no traceback.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from fakes import HashingEmbedding
from test_disk_full import contents, ragonite_index, tmpfs, write_pages

from llama_index_ragonite import EvidenceStore, load_pages
from llama_index_ragonite.cli import main

PAGE = "<title>{title}</title><h1>{title}</h1><p>{text}</p>"


def write_wiki(folder):
    folder.mkdir()
    (folder / "boot.html").write_text(PAGE.format(title="Boot order", text="The laptop boots from USB first."))
    (folder / "rack.html").write_text(PAGE.format(title="Rack", text="The staging server sits in rack 4."))
    (folder / "old.html").write_text(PAGE.format(title="Old", text="An old page about the firmware matrix."))
    record = {"id": "confluence-77", "title": "Release", "content": "<p>Releases ship on Thursdays.</p>"}
    (folder / "release.json").write_text(json.dumps(record))
    return folder


def evidences(store_path):
    store = EvidenceStore(store_path, embed_model=HashingEmbedding())
    return {page: sorted(n for n, p in store.lexical.node_pages().items() if p == page) for page in store.page_ids()}


@pytest.fixture
def cli(monkeypatch):
    from llama_index.core import Settings

    monkeypatch.setattr(Settings, "_embed_model", HashingEmbedding())
    return main


@pytest.mark.fault(
    "a previously indexed page that now fails to parse (NUL bytes in what was HTML, JSON cut short)",
    "it keeps its previous evidences, reported as 'kept the previous version: <reason>'; only a page whose file"
    " is gone is removed; a new file that fails is skipped",
    area="index",
)
def test_a_page_that_no_longer_parses_keeps_its_previous_version(cli, tmp_path, capsys):
    source, store = write_wiki(tmp_path / "wiki"), tmp_path / "store"
    assert cli(["index", str(source), "--store", str(store), "--quiet"]) == 0
    before = evidences(store)
    assert set(before) == {"boot.html", "rack.html", "old.html", "confluence-77"} and all(before.values())
    capsys.readouterr()

    good_html, good_json = (source / "boot.html").read_bytes(), (source / "release.json").read_bytes()
    (source / "boot.html").write_bytes(b"\x00\x01binary now\x00" * 40)  # a transient bad copy
    (source / "release.json").write_bytes(good_json[: len(good_json) // 2])  # cut short: invalid JSON
    (source / "old.html").unlink()  # gone: removed
    (source / "new.html").write_bytes(b"\x00" * 64)  # new and bad: skipped
    assert cli(["index", str(source), "--store", str(store), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "boot.html: kept the previous version:" in out and "binary content" in out
    assert "confluence-77: kept the previous version:" in out and "not valid JSON" in out
    assert "1 removed" in out and "2 kept their previous version" in out
    after = evidences(store)
    assert after == {page: ids for page, ids in before.items() if page != "old.html"}  # the same evidences

    (source / "boot.html").write_bytes(good_html)  # the good files back: nothing to do
    (source / "release.json").write_bytes(good_json)
    assert cli(["index", str(source), "--store", str(store), "--quiet"]) == 0
    assert "0 added, 0 updated, 0 removed, 3 unchanged" in capsys.readouterr().out


def test_the_python_api_keeps_them_too_and_a_json_page_is_found_by_its_id(tmp_path):
    source = write_wiki(tmp_path / "wiki")
    (source / "release.json").rename(source / "renamed-file.json")  # its id is not its file name
    store = EvidenceStore(tmp_path / "store", embed_model=HashingEmbedding())
    store.ingest(load_pages(source), remove_missing=True)
    (source / "renamed-file.json").write_text('{"id": "confluence-77", "title": "Release", "content": "<p>cut')
    skipped: dict = {}
    docs = load_pages(source, skipped=skipped)
    assert "confluence-77" in skipped and "renamed-file" in skipped  # the id it shows, and its file name
    report = store.ingest(docs, remove_missing=True, failed=skipped)
    assert set(report.kept) == {"confluence-77"} and not report.removed
    assert "confluence-77" in store.page_ids()
    report = store.ingest(docs, remove_missing=True)  # without `failed`: missing, as before
    assert report.removed == ["confluence-77"]


@pytest.mark.fault(
    "disk full in Chroma's compaction on a real small filesystem (`ragonite index` on an 804 KB tmpfs)",
    "exit 2, 'disk full at <store>' naming Chroma's error and no traceback; with room again the next run"
    " repairs and completes, and the store equals a clean build",
    area="index",
)
@pytest.mark.parametrize("pages", [30, 60])
def test_disk_full_in_chromas_compaction_on_a_tiny_disk(tmp_path, pages):
    source = write_pages(tmp_path / "src", pages)
    clean = ragonite_index(source, tmp_path / "clean")
    assert clean.returncode == 0, clean.stderr
    with tmpfs(tmp_path / "disk", 1) as disk:
        assert subprocess.run(["mount", "-o", "remount,size=804k", str(disk)], timeout=30).returncode == 0
        store = disk / "store"
        full = ragonite_index(source, store)
        assert full.returncode == 2, full.stderr
        assert "Traceback" not in full.stderr, full.stderr
        assert f"disk full at {store}" in full.stderr and "Error in compaction" in full.stderr, full.stderr

        assert subprocess.run(["mount", "-o", "remount,size=40m", str(disk)], timeout=30).returncode == 0
        resumed = ragonite_index(source, store)
        assert resumed.returncode == 0, resumed.stderr
        after = contents(store, tmp_path / "copy")
    assert main(["check", "--store", str(tmp_path / "copy")]) == 0
    assert after == contents(tmp_path / "clean", tmp_path / "clean-copy")


def test_a_read_only_disk_with_little_room_is_not_called_full(tmp_path):
    """Under 64 MB free makes a storage failure a full disk, unless the OS names another cause."""
    from llama_index_ragonite.errors import DiskFullError, StoreError

    with tmpfs(tmp_path / "disk", 1) as disk:
        assert subprocess.run(["mount", "-o", "remount,ro", str(disk)], timeout=30).returncode == 0
        store = EvidenceStore(disk / "store", embed_model=HashingEmbedding())
        with pytest.raises(StoreError, match="Read-only file system") as raised:
            store.ingest(load_pages(write_wiki(tmp_path / "wiki")))
        assert not isinstance(raised.value, DiskFullError)
