"""Issue 44: hostile files in a source folder — symbolic links out of it and in loops, file names
that are not UTF-8, JSON files that are not pages. Each test builds its folder in ``tmp_path``
and is bounded in time (a link loop must not hang the walk)."""

from __future__ import annotations

import json
import logging
import os
import threading

import pytest
from fakes import HashingEmbedding

from llama_index_ragonite.errors import PageLoadError
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.parsing.loaders import display_path, load_pages
from llama_index_ragonite.retrieval.retriever import HybridRetriever

PAGE = "<title>{0}</title><p>{0} is a page of the wiki.</p>"


def pages(folder, *names):
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text(PAGE.format(name.split(".")[0]), encoding="utf-8")
    return folder


def ids(docs):
    return [doc.id_ for doc in docs]


def bounded(function, seconds=20):
    """``function()``'s result, failing the test if it does not return within ``seconds`` (a hang)."""
    result, thread = [], threading.Thread(target=lambda: result.append(function()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert result, f"did not return within {seconds} s"
    return result[0]


@pytest.mark.fault(
    "symbolic link in the source folder to a file outside it (/etc/passwd renamed x.html)",
    "skipped with a warning naming the link; never indexed nor searchable; follow_symlinks=True reads it",
)
def test_a_link_to_a_file_outside_the_source_is_skipped(tmp_path, caplog):
    source = pages(tmp_path / "src", "team.html")
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    (source / "x.html").symlink_to(secret)
    with caplog.at_level(logging.WARNING):
        docs = load_pages(source)
    assert ids(docs) == ["team.html"]
    assert "x.html: skipped, a symbolic link to a file outside the source folder" in caplog.text
    assert not any("root:x" in doc.text for doc in docs)
    assert ids(load_pages(source, follow_symlinks=True)) == ["team.html", "x.html"]


@pytest.mark.fault(
    "symbolic link in the source folder to a folder outside it",
    "skipped with a warning naming the link; nothing under it is read; follow_symlinks=True reads it",
)
def test_a_link_to_a_folder_outside_the_source_is_skipped(tmp_path, caplog):
    source = pages(tmp_path / "src", "team.html")
    pages(tmp_path / "elsewhere", "private.html", "other.json")
    (tmp_path / "elsewhere" / "other.json").write_text(json.dumps({"id": "other", "content": "<p>x</p>"}))
    (source / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with caplog.at_level(logging.WARNING):
        assert ids(load_pages(source)) == ["team.html"]
    assert "linked: skipped, a symbolic link to a folder outside the source folder" in caplog.text
    assert ids(load_pages(source, follow_symlinks=True)) == ["other", "linked/private.html", "team.html"]


@pytest.mark.fault(
    "symbolic link loop in the source folder (a link to its own folder, links to each other, a followed link back)",
    "the walk ends (bounded); each page read once; a loop of broken links skipped with a warning",
)
@pytest.mark.parametrize("follow", [False, True])
def test_link_loops_do_not_hang_and_read_each_page_once(tmp_path, caplog, follow):
    source = pages(tmp_path / "src", "team.html")
    pages(source / "sub", "deep.html")
    (source / "sub" / "self").symlink_to(source / "sub", target_is_directory=True)
    (source / "sub" / "up").symlink_to(source, target_is_directory=True)
    (source / "a.html").symlink_to(source / "b.html")  # a -> b -> a: neither resolves
    (source / "b.html").symlink_to(source / "a.html")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "back").symlink_to(source, target_is_directory=True)  # followed out, then back in
    (outside / "round").symlink_to(outside, target_is_directory=True)
    (outside / "far.html").write_text(PAGE.format("Far"))
    (source / "out").symlink_to(outside, target_is_directory=True)
    with caplog.at_level(logging.WARNING):
        docs = bounded(lambda: load_pages(source, follow_symlinks=follow))
    expected = ["out/far.html", "sub/deep.html", "team.html"] if follow else ["sub/deep.html", "team.html"]
    assert ids(docs) == expected
    assert "a.html: skipped, a broken symbolic link or a link loop" in caplog.text


@pytest.mark.fault(
    "symbolic links that stay inside the source folder (to a page, to a folder)",
    "each page read once, under its own path; a link to a file the walk does not reach is read under its name",
)
def test_links_inside_the_source_give_each_page_once(tmp_path):
    source = pages(tmp_path / "src", "team.html")
    pages(source / "docs", "setup.html")
    (source / "docs" / "notes.xhtml").write_text(PAGE.format("Notes"))  # a file type the walk does not read
    (source / "alias.html").symlink_to(source / "team.html")
    (source / "mirror").symlink_to(source / "docs", target_is_directory=True)
    (source / "notes.html").symlink_to(source / "docs" / "notes.xhtml")
    docs = load_pages(source)
    assert ids(docs) == ["docs/setup.html", "notes.html", "team.html"]
    assert sum("Notes" in doc.text for doc in docs) == 1


@pytest.mark.fault(
    "page file name is not UTF-8 (b'caf\\xe9.html')",
    "indexed; id and messages carry the name with \\xNN escapes (no lone surrogates), stable between runs",
)
def test_a_file_name_that_is_not_utf8_is_indexed_with_an_escaped_id(tmp_path, caplog):
    source = pages(tmp_path / "src", "team.html")
    with open(os.fsencode(source) + b"/caf\xe9.html", "wb") as page:
        page.write(b"<title>Caf\xc3\xa9</title><p>The espresso machine is on floor 3.</p>")
    with open(os.fsencode(source) + b"/bad\xff.json", "wb") as page:
        page.write(b"{not json")
    with caplog.at_level(logging.WARNING):
        docs = load_pages(source)
    assert ids(docs) == ["caf\\xe9.html", "team.html"]
    assert "bad\\xff.json: not valid JSON" in caplog.text  # messages: the same escapes
    assert display_path(os.fsdecode(b"caf\xe9.html")) == "caf\\xe9.html"
    for doc in docs:  # valid UTF-8 everywhere: ids, metadata (the url is percent-encoded)
        doc.id_.encode("utf-8")
        json.dumps(doc.metadata).encode("utf-8")
    assert docs[0].metadata["url"].endswith("/caf%E9.html")

    store = tmp_path / "store"
    report = EvidenceStore(store, embed_model=HashingEmbedding()).ingest(docs)
    assert report.added == ["caf\\xe9.html", "team.html"]
    manifest = (store / "manifest.json").read_bytes().decode("utf-8")
    assert "caf\\\\xe9.html" in manifest and "\\udc" not in manifest
    again = EvidenceStore(store, embed_model=HashingEmbedding()).ingest(load_pages(source), remove_missing=True)
    assert again.unchanged == ["caf\\xe9.html", "team.html"] and not again.added and not again.removed
    retriever = HybridRetriever.from_store(EvidenceStore(store, embed_model=HashingEmbedding()), top_n=1)
    assert retriever.retrieve("espresso machine floor")[0].node.ref_doc_id == "caf\\xe9.html"


@pytest.mark.fault(
    "a JSON file in the source folder that is not a page (package.json, a list, invalid JSON)",
    "skipped with a warning naming it; strict=True (--strict), or the file given alone, is a PageLoadError",
)
def test_json_files_that_are_not_pages_are_skipped_unless_strict(tmp_path, caplog):
    source = pages(tmp_path / "src", "team.html")
    (source / "package.json").write_text(json.dumps({"name": "wiki", "version": "1.0.0"}))
    (source / "list.json").write_text("[1, 2]")
    (source / "broken.json").write_text("{not json")
    (source / "deep.json").write_text("[" * 200_000 + "]" * 200_000)  # nested past the JSON reader's limit
    (source / "page.json").write_text(json.dumps({"id": "conf-7", "title": "P", "content": "<p>y</p>"}))
    with caplog.at_level(logging.WARNING):
        assert ids(load_pages(source)) == ["conf-7", "team.html"]
    for name in ("package.json", "list.json", "broken.json", "deep.json"):
        assert f"{name}: " in caplog.text and "skipped" in caplog.text
    with pytest.raises(PageLoadError, match="broken.json: not valid JSON"):
        load_pages(source, strict=True)
    with pytest.raises(PageLoadError, match="package.json: expected a JSON object with a string 'content'"):
        load_pages(source / "package.json")  # a file named alone must be a page
    with pytest.raises(PageLoadError, match="list.json"):
        load_pages(source / "list.json", strict=False)


@pytest.mark.fault(
    "a JSON page with lone surrogates (\\ud800) in its id, title or content",
    "indexed: ids and metadata escaped, content with U+FFFD; the run goes on",
)
def test_a_json_page_with_lone_surrogates_in_its_fields_gets_clean_ids_and_metadata(tmp_path):
    page = tmp_path / "p.json"
    page.write_text('{"id": "conf-\\ud800", "title": "T\\udfff", "content": "<p>x \\ud800 y</p>"}')
    [doc] = load_pages(page)
    assert doc.id_ == "conf-\\ud800" and doc.metadata == {"title": "T\\udfff"}
    doc.id_.encode("utf-8")
    doc.text.encode("utf-8")
    store = EvidenceStore(tmp_path / "store", embed_model=HashingEmbedding())
    store.ingest([doc], show_progress=False)  # the parser hashes the text: a surrogate aborted the run
    assert len(store) >= 1
