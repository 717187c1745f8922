"""The on-disk format of a ``LexicalIndex`` folder: a JSON manifest plus bm25s's own files.

Why apart from ``LexicalIndex``: the index is about ranking; this module is about what a
folder must hold to be trusted. The manifest (``lexical.json``) keeps the constructor
config, every node's id, page, title and offset in ``nodes.jsonl`` (row ``i`` of the bm25s matrix is
line ``i``) and the sha256 of that file and of each bm25s file, so damage is an error on load and not
silently bad ranking. ``term_counts.npz`` holds the matrix's term counts (``index.term_counts``: an
audience's statistics); a folder written before it existed has none, and they are counted on first need. The folder is
written through :func:`~llama_index_ragonite.index.persist.atomic_folder`.
"""

from __future__ import annotations

import hashlib
import json
import mmap
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Optional, Tuple

import bm25s
import numpy as np
from llama_index.core.schema import BaseNode
from llama_index.core.storage.docstore.utils import doc_to_json, json_to_doc

from llama_index_ragonite.errors import StoreCorruptError, StoreFileError
from llama_index_ragonite.index.persist import (
    atomic_folder,
    check_format_version,
    file_checksums,
    read_json,
    read_npz,
    verify_checksums,
    write_npz,
)
from llama_index_ragonite.index.term_counts import TermCounts

__all__ = [
    "BM25_DIR_NAME",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MANIFEST_NAME",
    "NODES_NAME",
    "NodesFile",
    "load_bm25",
    "format1_rows",
    "load_term_counts",
    "node_json",
    "node_of_json",
    "node_title",
    "read_manifest",
    "write_folder",
]

FORMAT_NAME = "ragonite-lexical-index"
# 2: nodes in nodes.jsonl, read in place (``NodesFile``); 1: every node inline in the manifest, parsed at load
FORMAT_VERSION = 2
MANIFEST_NAME = "lexical.json"
NODES_NAME = "nodes.jsonl"
NodeRow = Tuple[str, str, Optional[str], Optional[str]]  # (node id, node JSON, ref_doc_id, title)
BM25_DIR_NAME = "bm25s"
TERM_COUNTS_NAME = "term_counts.npz"


def write_folder(
    path: Path, config: dict[str, Any], rows: Iterable[NodeRow], bm25: bm25s.BM25 | None, counts: TermCounts | None
) -> None:
    """Write (or atomically replace) the index folder ``path``; ``rows`` are the nodes in matrix row order.

    Each node's JSON goes to ``nodes.jsonl`` as the index already holds it (one line each: JSON text
    has no raw newline), its id, page and title and its byte offset to the manifest. ``rows`` is
    read once, so a large index is never held as one list of texts to be saved.
    """
    if path.exists() and not _is_replaceable(path):
        raise StoreFileError(f"{path}: refusing to overwrite, it is not an empty folder or a lexical index folder")
    with atomic_folder(path) as tmp:
        ids: list[str] = []
        pages: list[str | None] = []
        titles: list[str | None] = []
        offsets, digest = [0], hashlib.sha256()
        with open(tmp / NODES_NAME, "wb") as file:
            for node_id, payload, page, title in rows:
                line = payload.encode("utf-8") + b"\n"
                file.write(line)
                digest.update(line)
                offsets.append(offsets[-1] + len(line))
                ids.append(node_id)
                pages.append(page)
                titles.append(title)
        bm25_manifest = None
        if bm25 is not None:
            bm25.save(tmp / BM25_DIR_NAME, show_progress=False)
            bm25_manifest = {"num_docs": len(ids), "files": file_checksums(tmp / BM25_DIR_NAME)}
        if counts is not None:
            write_npz(tmp / TERM_COUNTS_NAME, counts.arrays(bm25.scores if bm25 is not None else None))
        manifest = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "bm25s_version": bm25s.__version__,
            "config": config,
            "bm25": bm25_manifest,
            "term_counts": {"name": TERM_COUNTS_NAME} if counts is not None else None,
            "nodes_file": {"name": NODES_NAME, "sha256": digest.hexdigest()},
            "ids": ids,
            "pages": pages,
            "titles": titles,
            "offsets": offsets,
        }
        # No atomic_file needed: the whole folder becomes visible at once, after an fsync.
        (tmp / MANIFEST_NAME).write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")


def read_manifest(path: Path) -> dict[str, Any]:
    """The checked manifest of index folder ``path``: right format name and version, a node list (format 1)
    or the node file's table (format 2)."""
    if not path.is_dir():
        raise StoreCorruptError(f"{path}: lexical index folder does not exist")
    file = path / MANIFEST_NAME
    manifest = read_json(file, "the lexical index manifest")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise StoreCorruptError(f"{file}: not a lexical index manifest")
    if manifest.get("format_version") != 1:  # format 1 (nodes inline) is still read
        check_format_version(manifest.get("format_version"), FORMAT_VERSION, file, "the lexical index")
    if manifest["format_version"] == 1 and not isinstance(manifest.get("nodes"), list):
        raise StoreCorruptError(f"{file}: the lexical index manifest has no node list")
    if manifest["format_version"] == FORMAT_VERSION:
        lists = [manifest.get(key) for key in ("ids", "pages", "titles", "offsets")]
        if not all(isinstance(values, list) for values in lists) or not isinstance(manifest.get("nodes_file"), dict):
            raise StoreCorruptError(f"{file}: the lexical index manifest has no node table")
        lengths = [len(values) for values in lists if isinstance(values, list)]
        if len(set(lengths[:3])) != 1 or lengths[3] != lengths[0] + 1:
            raise StoreCorruptError(f"{file}: the lexical index's node table has columns of different lengths")
    return manifest


class NodesFile:
    """The nodes of a format-2 folder, read where they lie: ``nodes.jsonl`` memory-mapped, a row's bytes
    found by its offsets. Why: a reader of a million evidences reads the few it shows, and the pages it
    touches are page cache that every process serving the store shares, not a private copy each."""

    def __init__(self, path: Path, manifest: dict[str, Any]) -> None:
        self.file = file = path / NODES_NAME
        self._offsets = np.asarray(manifest["offsets"], dtype=np.int64)
        digest, ends, size = hashlib.sha256(), [np.zeros(1, np.int64)], 0
        try:
            with open(file, "rb") as handle:  # read, not mapped: checking must not make the file resident
                while chunk := handle.read(1 << 22):
                    digest.update(chunk)
                    ends.append(np.flatnonzero(np.frombuffer(chunk, np.uint8) == 10) + (size + 1))
                    size += len(chunk)
        except FileNotFoundError:
            raise StoreCorruptError(f"{file}: lexical index file {NODES_NAME} is missing") from None
        if digest.hexdigest() != manifest["nodes_file"].get("sha256"):
            raise StoreCorruptError(f"{file}: lexical index file {NODES_NAME} is damaged (checksum mismatch)")
        if not np.array_equal(np.concatenate(ends), self._offsets):  # each row one line: JSON has no raw newline
            raise StoreCorruptError(f"{file}: the node offsets do not match the file's lines")
        self._map: mmap.mmap | None = None
        if size:
            with open(file, "rb") as handle:
                self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)

    def payload(self, row: int) -> str:
        """Row ``row``'s node JSON."""
        assert self._map is not None  # a row exists only in a file that has rows
        return self._map[int(self._offsets[row]) : int(self._offsets[row + 1]) - 1].decode("utf-8")

    def node(self, row: int) -> BaseNode:
        """Row ``row``'s node; one that does not parse (written so: its checksum held) is named as damage."""
        try:
            return json_to_doc(json.loads(self.payload(row)))
        except Exception as exc:  # pydantic, KeyError, ValueError...: all mean a damaged record
            raise StoreCorruptError(f"{self.file}: node record {row} is damaged ({exc!r})") from exc


def format1_rows(path: Path, entries: list[Any]) -> list[tuple[str, str, Optional[str], Optional[str]]]:
    """(node id, node JSON, page, title) of a format-1 manifest's inline nodes, in order; damage or a
    repeated id is an error."""
    records: dict[str, tuple[str, str, Optional[str], Optional[str]]] = {}
    for position in range(len(entries)):
        # Each parsed node is let go once stored: a large index is not held twice (dicts and records)
        entry, entries[position] = entries[position], None
        try:
            node = json_to_doc(entry)
        except Exception as exc:  # pydantic, KeyError, ValueError...: all mean a damaged record
            raise StoreCorruptError(f"{path}: node record {position} is damaged ({exc!r})") from exc
        if node.node_id in records:
            raise StoreCorruptError(f"{path}: node id {node.node_id!r} appears twice")
        records[node.node_id] = (node.node_id, json.dumps(entry, ensure_ascii=False), node.ref_doc_id, node_title(node))
    return list(records.values())


def node_title(node: BaseNode) -> str | None:
    title = node.metadata.get("title")
    return str(title).strip() or None if title is not None else None


def node_json(node: BaseNode) -> str:
    """A node as the index stores it: its JSON without the embedding."""
    data = doc_to_json(node)
    # Vectors live in the vector store; a copy here would dominate memory and file size.
    data["__data__"]["embedding"] = None
    try:
        return json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"node {node.node_id!r} cannot be stored: not JSON-serializable ({exc})") from exc


def node_of_json(payload: str) -> BaseNode:
    return json_to_doc(json.loads(payload))


def load_bm25(path: Path, bm25_manifest: Any, num_docs: int, params: tuple[float, float, str]) -> bm25s.BM25 | None:
    """Load the bm25s matrix and cross-check it against its checksums, ``num_docs`` and ``(k1, b, method)``."""
    if bm25_manifest is None:  # persisted with nothing searchable
        return None
    if not isinstance(bm25_manifest, dict) or not isinstance(bm25_manifest.get("files"), dict):
        raise StoreCorruptError(f"{path / MANIFEST_NAME}: malformed 'bm25' section")
    bm25_dir = path / BM25_DIR_NAME
    verify_checksums(bm25_dir, bm25_manifest["files"], "bm25s")
    try:
        bm25 = bm25s.BM25.load(bm25_dir, mmap=True, show_progress=False)  # read in place, as NodesFile
    except Exception as exc:
        raise StoreCorruptError(f"{bm25_dir}: bm25s index cannot be loaded ({exc!r})") from exc
    problems = []
    if bm25.scores.get("num_docs") != num_docs or bm25_manifest.get("num_docs") != num_docs:
        problems.append(f"it has {bm25.scores.get('num_docs')} rows for {num_docs} nodes")
    if len(bm25.scores["indptr"]) != len(bm25.vocab_dict) + 1:
        problems.append("its vocabulary does not match its matrix")
    if (bm25.k1, bm25.b, bm25.method) != params:
        problems.append("its parameters differ from the config")
    if problems:
        raise StoreCorruptError(f"{bm25_dir}: bm25s index is inconsistent: {'; '.join(problems)}")
    for name, array in bm25.scores.items():  # plain views of the maps: numpy.memmap's slicing costs ~4 us a slice
        if isinstance(array, np.memmap):
            bm25.scores[name] = array.view(np.ndarray)
    return bm25


def load_term_counts(path: Path, section: Any, bm25: bm25s.BM25 | None) -> Optional[TermCounts]:
    """The matrix's term counts, mapped and checked (None: the folder predates them, or nothing is searchable)."""
    if section is None or bm25 is None:
        return None
    if not isinstance(section, dict) or section.get("name") != TERM_COUNTS_NAME:
        raise StoreCorruptError(f"{path / MANIFEST_NAME}: malformed 'term_counts' section")
    arrays = read_npz(path / TERM_COUNTS_NAME, "the lexical index's term counts", mapped=True)
    try:
        counts = TermCounts.from_arrays({name: a.view(np.ndarray) for name, a in arrays.items()}, bm25.scores)
    except (KeyError, ValueError) as exc:
        raise StoreCorruptError(
            f"{path / TERM_COUNTS_NAME}: the term counts do not fit the bm25s matrix ({exc})"
        ) from exc
    if len(counts.lengths) != bm25.scores["num_docs"] or len(counts.indptr) != len(bm25.vocab_dict) + 1:
        raise StoreCorruptError(f"{path / TERM_COUNTS_NAME}: the term counts do not fit the bm25s matrix")
    return counts


def _is_replaceable(path: Path) -> bool:
    """Only an empty folder or a previous index may be replaced: persist must not wipe user data."""
    return path.is_dir() and (not any(path.iterdir()) or (path / MANIFEST_NAME).is_file())
