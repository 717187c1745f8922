"""The on-disk format of a ``LexicalIndex`` folder: a JSON manifest plus bm25s's own files.

Why apart from ``LexicalIndex``: the index is about ranking; this module is about what a
folder must hold to be trusted. The manifest (``lexical.json``) keeps the constructor
config, every node (row ``i`` of the bm25s matrix is ``nodes[i]``) and the sha256 of each
bm25s file, so damage is an error on load and not silently bad ranking. The folder is
written through :func:`~llama_index_ragonite.index.persist.atomic_folder`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import bm25s

from llama_index_ragonite.errors import StoreCorruptError, StoreFileError
from llama_index_ragonite.index.persist import (
    atomic_folder,
    check_format_version,
    file_checksums,
    read_json,
    verify_checksums,
)

__all__ = [
    "BM25_DIR_NAME",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MANIFEST_NAME",
    "load_bm25",
    "read_manifest",
    "write_folder",
]

FORMAT_NAME = "ragonite-lexical-index"
FORMAT_VERSION = 1
MANIFEST_NAME = "lexical.json"
BM25_DIR_NAME = "bm25s"


def write_folder(path: Path, config: dict[str, Any], payloads: list[str], bm25: bm25s.BM25 | None) -> None:
    """Write (or atomically replace) the index folder ``path``; ``payloads`` are the nodes' JSON, in matrix row order.

    The nodes are written as the JSON texts the index already holds, one after another, so a
    large index is not parsed back into dicts to be saved (a 20,000-row page: ~130 MB less).
    """
    if path.exists() and not _is_replaceable(path):
        raise StoreFileError(f"{path}: refusing to overwrite, it is not an empty folder or a lexical index folder")
    with atomic_folder(path) as tmp:
        bm25_manifest = None
        if bm25 is not None:
            bm25.save(tmp / BM25_DIR_NAME, show_progress=False)
            bm25_manifest = {"num_docs": len(payloads), "files": file_checksums(tmp / BM25_DIR_NAME)}
        head = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "bm25s_version": bm25s.__version__,
            "config": config,
            "bm25": bm25_manifest,
        }
        # No atomic_file needed: the whole folder becomes visible at once, after an fsync.
        with open(tmp / MANIFEST_NAME, "w", encoding="utf-8") as file:
            file.write(json.dumps(head, ensure_ascii=False)[:-1] + ', "nodes": [')
            for position, payload in enumerate(payloads):
                file.write(", " + payload if position else payload)
            file.write("]}")


def read_manifest(path: Path) -> dict[str, Any]:
    """The checked manifest of index folder ``path``: right format name and version, a node list."""
    if not path.is_dir():
        raise StoreCorruptError(f"{path}: lexical index folder does not exist")
    file = path / MANIFEST_NAME
    manifest = read_json(file, "the lexical index manifest")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise StoreCorruptError(f"{file}: not a lexical index manifest")
    check_format_version(manifest.get("format_version"), FORMAT_VERSION, file, "the lexical index")
    if not isinstance(manifest.get("nodes"), list):
        raise StoreCorruptError(f"{file}: the lexical index manifest has no node list")
    return manifest


def load_bm25(path: Path, bm25_manifest: Any, num_docs: int, params: tuple[float, float, str]) -> bm25s.BM25 | None:
    """Load the bm25s matrix and cross-check it against its checksums, ``num_docs`` and ``(k1, b, method)``."""
    if bm25_manifest is None:  # persisted with nothing searchable
        return None
    if not isinstance(bm25_manifest, dict) or not isinstance(bm25_manifest.get("files"), dict):
        raise StoreCorruptError(f"{path / MANIFEST_NAME}: malformed 'bm25' section")
    bm25_dir = path / BM25_DIR_NAME
    verify_checksums(bm25_dir, bm25_manifest["files"], "bm25s")
    try:
        bm25 = bm25s.BM25.load(bm25_dir, show_progress=False)
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
    return bm25


def _is_replaceable(path: Path) -> bool:
    """Only an empty folder or a previous index may be replaced: persist must not wipe user data."""
    return path.is_dir() and (not any(path.iterdir()) or (path / MANIFEST_NAME).is_file())
