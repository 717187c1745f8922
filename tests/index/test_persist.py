"""persist.py: atomic writes, verified reads, one error family; and stores written before it still load."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import bm25s
import numpy as np
import pytest
from fakes import HashingEmbedding, wiki_documents
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

from llama_index_ragonite.errors import (
    StoreCorruptError,
    StoreError,
    StoreFileError,
    StoreLockedError,
    StoreVersionError,
)
from llama_index_ragonite.index import persist
from llama_index_ragonite.index.latent import LatentTermIndex, embed_nodes
from llama_index_ragonite.index.lexical import MANIFEST_NAME, LexicalIndex, LexicalIndexError
from llama_index_ragonite.index.persist import (
    atomic_file,
    atomic_folder,
    check_format_version,
    file_checksums,
    read_json,
    read_npz,
    verify_checksums,
    write_json,
    write_npz,
)
from llama_index_ragonite.index.store import EvidenceStore

OLD = Path(__file__).parent / "data" / "v1"


class Interrupted(Exception):
    """Stands for a crash in the middle of a write."""


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def node(node_id: str, text: str, page: str) -> TextNode:
    relationships = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=page)}
    return TextNode(id_=node_id, text=text, relationships=relationships)


def vec(pairs):
    return np.array([i for i, _ in pairs], np.int32), np.array([w for _, w in pairs], np.float32)


# ---------------------------------------------------------------- the error family


def test_one_error_family_that_old_except_clauses_still_catch():
    assert LexicalIndexError is StoreFileError
    for error in (StoreCorruptError, StoreVersionError):
        assert issubclass(error, LexicalIndexError) and issubclass(error, ValueError) and issubclass(error, StoreError)
    assert issubclass(StoreLockedError, StoreError)


# ---------------------------------------------------------------- round trips


def test_json_round_trip_is_atomic_and_keeps_the_dump_options(tmp_path):
    file = tmp_path / "sub" / "manifest.json"
    data = {"b": [1, 2.5, None], "a": "ünïcode"}
    write_json(file, data, indent=1, sort_keys=True)
    assert read_json(file, "a manifest") == data
    assert file.read_text(encoding="utf-8") == json.dumps(data, indent=1, sort_keys=True)
    assert names(file.parent) == ["manifest.json"]  # no temporary file left behind


def test_files_get_ordinary_permissions(tmp_path):
    umask = os.umask(0o022)
    os.umask(umask)
    with atomic_file(tmp_path / "f") as handle:
        handle.write(b"x")
    assert (tmp_path / "f").stat().st_mode & 0o777 == 0o666 & ~umask


def test_npz_round_trip_carries_a_checksum(tmp_path):
    arrays = {"ids": np.arange(5, dtype=np.int32), "names": np.array(["a", "bé"]), "dim": np.array(7)}
    write_npz(tmp_path / "x.npz", arrays)
    back = read_npz(tmp_path / "x.npz", "test arrays")
    assert sorted(back) == sorted(arrays)
    for name, array in arrays.items():
        assert back[name].dtype == array.dtype and np.array_equal(back[name], array)
    with np.load(tmp_path / "x.npz") as raw:
        assert persist.NPZ_CHECKSUM in raw.files


@pytest.mark.fault(
    "BM25 file tampered with or deleted",
    "StoreCorruptError naming the file ('checksum mismatch' / 'missing')",
)
def test_folder_round_trip_and_checksums(tmp_path):
    target = tmp_path / "idx"
    for version in ("one", "two"):
        with atomic_folder(target) as tmp:
            (tmp / "data.bin").write_text(version)
            sums = file_checksums(tmp)
        assert (target / "data.bin").read_text() == version
    assert names(tmp_path) == ["idx"]
    verify_checksums(target, sums, "test")
    (target / "data.bin").write_text("tampered")
    with pytest.raises(StoreCorruptError, match="checksum mismatch") as excinfo:
        verify_checksums(target, sums, "test")
    assert str(target / "data.bin") in str(excinfo.value)
    (target / "data.bin").unlink()
    with pytest.raises(StoreCorruptError, match="missing"):
        verify_checksums(target, sums, "test")


# ---------------------------------------------------------------- damage names the file


@pytest.mark.fault("store manifest truncated", "StoreCorruptError naming the file ('truncated')")
@pytest.mark.fault(
    "store manifest missing or not UTF-8",
    "StoreCorruptError naming the file ('missing' / 'unreadable')",
)
def test_missing_truncated_or_unparsable_json_is_corrupt(tmp_path):
    file = tmp_path / "m.json"
    with pytest.raises(StoreCorruptError, match="missing") as excinfo:
        read_json(file, "the manifest")
    assert str(file) in str(excinfo.value)
    write_json(file, {"pages": {"a": "1" * 50}})
    file.write_bytes(file.read_bytes()[:20])
    with pytest.raises(StoreCorruptError, match="truncated") as excinfo:
        read_json(file, "the manifest")
    assert str(file) in str(excinfo.value)
    file.write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(StoreCorruptError, match="unreadable"):
        read_json(file, "the manifest")


@pytest.mark.fault(
    "latent-term arrays truncated or altered (stale checksum)",
    "StoreCorruptError naming the file ('damaged' / 'checksum mismatch')",
)
def test_truncated_altered_or_missing_npz_is_corrupt(tmp_path):
    file = tmp_path / "x.npz"
    arrays = {"weights": np.linspace(0, 1, 50, dtype=np.float32)}
    write_npz(file, arrays)
    whole = file.read_bytes()
    file.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(StoreCorruptError, match="damaged") as excinfo:
        read_npz(file, "test arrays")
    assert str(file) in str(excinfo.value)
    # Valid zip, valid arrays, stale checksum: only the sha256 can tell.
    file.write_bytes(whole)
    with np.load(file) as raw:
        digest = raw[persist.NPZ_CHECKSUM]
    np.savez(file, weights=arrays["weights"] * 2, **{persist.NPZ_CHECKSUM: digest})
    with pytest.raises(StoreCorruptError, match="checksum mismatch") as excinfo:
        read_npz(file, "test arrays")
    assert str(file) in str(excinfo.value)
    with pytest.raises(StoreCorruptError, match="missing"):
        read_npz(tmp_path / "nowhere.npz", "test arrays")


@pytest.mark.fault("format version field missing or not an integer", "StoreCorruptError ('no valid format version')")
def test_format_versions():
    check_format_version(1, 1, Path("f"), "a file")
    with pytest.raises(StoreVersionError, match="newer version"):
        check_format_version(2, 1, Path("f"), "a file")
    for junk in (None, "1", True, [1]):
        with pytest.raises(StoreCorruptError, match="no valid format version"):
            check_format_version(junk, 1, Path("f"), "a file")


# ---------------------------------------------------------------- interrupted writes keep the old version


@pytest.mark.fault("process dies while writing a JSON file", "the previous version stays; no temporary file left")
def test_an_interrupted_file_write_leaves_the_previous_version(tmp_path):
    file = tmp_path / "manifest.json"
    write_json(file, {"version": 1})
    with pytest.raises(Interrupted):
        with atomic_file(file) as handle:
            handle.write(b'{"version": 2, "pa')
            raise Interrupted
    assert read_json(file, "the manifest") == {"version": 1}
    assert names(tmp_path) == ["manifest.json"]


def test_an_interrupted_folder_write_leaves_the_previous_version(tmp_path):
    with atomic_folder(tmp_path / "idx") as tmp:
        (tmp / "a").write_text("old")
    with pytest.raises(Interrupted):
        with atomic_folder(tmp_path / "idx") as tmp:
            (tmp / "a").write_text("new")
            raise Interrupted
    assert (tmp_path / "idx" / "a").read_text() == "old" and names(tmp_path) == ["idx"]


@pytest.mark.fault("process dies while saving the BM25 index", "the previous BM25 index loads; no half-written folder")
def test_an_interrupted_lexical_persist_leaves_the_previous_index(tmp_path, monkeypatch):
    index = LexicalIndex()
    index.upsert([node("a", "alpha release notes", "p")])
    index.persist(tmp_path / "lex")
    index.upsert([node("b", "beta release notes", "q")])

    def crash(self, save_dir, **kwargs):
        Path(save_dir).mkdir(parents=True)
        (Path(save_dir) / "params.index.json").write_text("{")
        raise Interrupted

    monkeypatch.setattr(bm25s.BM25, "save", crash)
    with pytest.raises(Interrupted):
        index.persist(tmp_path / "lex")
    assert LexicalIndex.load(tmp_path / "lex").node_ids() == ["a"]
    assert names(tmp_path) == ["lex"]


@pytest.mark.fault("process dies while saving the latent-term index", "the previous latent-term index loads")
def test_an_interrupted_latent_persist_leaves_the_previous_index(tmp_path, monkeypatch):
    index = LatentTermIndex(dim=8)
    index.upsert([node("a", "a", "p")], [vec([(1, 1.0)])])
    index.persist(tmp_path)
    index.upsert([node("b", "b", "q")], [vec([(1, 2.0)])])

    def crash(file, **arrays):
        file.write(b"PK\x03\x04 half a zip")
        raise Interrupted

    monkeypatch.setattr(np, "savez", crash)
    with pytest.raises(Interrupted):
        index.persist(tmp_path)
    monkeypatch.undo()
    assert LatentTermIndex.load(tmp_path).search(vec([(1, 1.0)])) == [("a", 1.0)]
    assert names(tmp_path) == ["latent.npz"]


# ---------------------------------------------------------------- each persisted part, damaged


@pytest.mark.fault("store manifest of a newer format version", "StoreVersionError naming the file ('newer version')")
@pytest.mark.fault("store manifest is JSON but not an object", "StoreCorruptError ('unreadable')")
def test_damaged_lexical_latent_and_store_files_raise_the_family_errors(tmp_path):
    index = LexicalIndex()
    index.upsert([node("a", "alpha", "p")])
    index.persist(tmp_path / "lex")
    manifest = tmp_path / "lex" / MANIFEST_NAME
    manifest.write_bytes(manifest.read_bytes()[:50])
    with pytest.raises(StoreCorruptError, match="truncated") as excinfo:
        LexicalIndex.load(tmp_path / "lex")
    assert str(manifest) in str(excinfo.value)

    (tmp_path / "latent.npz").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(StoreCorruptError, match="damaged") as excinfo:
        LatentTermIndex.load(tmp_path)
    assert str(tmp_path / "latent.npz") in str(excinfo.value)
    write_npz(tmp_path / "latent.npz", {"format_version": np.array(3), "dim": np.array(8)})
    with pytest.raises(StoreVersionError, match="newer"):
        LatentTermIndex.load(tmp_path)

    store = tmp_path / "store"
    write_json(store / "manifest.json", {"format": 2, "pages": {}})
    with pytest.raises(StoreVersionError, match="newer") as excinfo:
        EvidenceStore(store, embed_model=HashingEmbedding())
    assert str(store / "manifest.json") in str(excinfo.value)
    write_json(store / "manifest.json", ["not", "a", "manifest"])
    with pytest.raises(StoreCorruptError, match="unreadable"):
        EvidenceStore(store, embed_model=HashingEmbedding())


# ---------------------------------------------------------------- files written by the previous code


def test_old_lexical_index_loads_and_ranks_as_before():
    index = LexicalIndex.load(OLD / "lexical")
    assert index.node_ids() == ["k8s", "backup"]
    hits = [(r.node.node_id, r.score) for r in index.search("postgresql 7.0 cluster")]
    assert hits == [("backup", 2.8865447640419006), ("k8s", 0.18674446269869804)]
    assert index.search_titles("db ops") == [("db", 0.6931471824645996), ("ops", 0.6931471824645996)]


def test_old_latent_file_without_version_or_checksum_loads():
    index = LatentTermIndex.load(OLD / "latent")
    assert index.dim == 8 and index.search(vec([(3, 1.0)])) == [("b", 2.0), ("a", 0.5)]


@pytest.mark.fault(
    "store written by an older version (format 1)",
    "opens, ingests and is rewritten in the current format",
)
def test_old_store_opens_ingests_and_is_rewritten_in_a_readable_format(tmp_path):
    shutil.copytree(OLD / "store", tmp_path / "store")
    store = EvidenceStore(tmp_path / "store", embed_model=HashingEmbedding())
    assert store.page_ids() == ["faq", "install", "team"] and len(store) == 6
    assert len(store.latent) == 0  # HashingEmbedding makes no latent terms
    # The fixture carries no Chroma files (not a stable format to commit): fill Chroma from the
    # lexical copies, else the store is inconsistent and its first ingest repairs it.
    nodes = [store.lexical.get_node(node_id) for node_id in store.lexical.node_ids()]
    embed_nodes(store.embed_model, nodes)
    store._open_vector_store().add(nodes)
    old_manifest = (tmp_path / "store" / "manifest.json").read_text()
    report = store.ingest(wiki_documents())
    assert sorted(report.unchanged) == ["faq", "install", "team"]  # same fingerprints: the manifest was understood
    assert report.refilled == 6 and report.nodes_written == 0  # only the structure fields were written
    # same bytes as the old writer, plus the generation each completed write now increments (0 before: none recorded)
    with_generation = old_manifest.replace('\n "format": 1,\n', '\n "format": 1,\n "generation": 1,\n')
    # ... and the row context such a store keeps, now written out (stores from before it: neighbouring rows)
    with_generation = with_generation.replace(
        '"neighbour_words": 40,\n', '"neighbour_words": 40,\n  "row_context": "neighbours",\n'
    )
    # ... and the structure fields' version, now that every evidence carries them
    with_generation = with_generation.rstrip().removesuffix("\n}") + ',\n "structure": 1\n}'
    assert (tmp_path / "store" / "manifest.json").read_text() == with_generation != old_manifest
    reopened = EvidenceStore(tmp_path / "store", embed_model=HashingEmbedding())
    assert reopened.page_ids() == store.page_ids() and len(reopened) == 6
