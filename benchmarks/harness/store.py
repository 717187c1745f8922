"""The persistent ConfQuestions ``EvidenceStore`` that the retrieval, completion and attribution
scripts under ``benchmarks/`` share: one folder per contextualization (and embedding) under a cache.

Why shared: embedding the 215 pages takes minutes on a CPU, so the completion and attribution
scripts reuse the store the retrieval script built (``retrieval-ALL``) instead of their own.

Every script settles the store before it reads it (``settle_vectors``): the whole HNSW graph on
disk, so the processes a benchmark compares (HEAD and this tree) search one and the same graph.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional, Tuple

from llama_index.core.base.embeddings.base import BaseEmbedding

from llama_index_ragonite.bench.confquestions import load_corpus
from llama_index_ragonite.index.chroma_access import open_collection
from llama_index_ragonite.index.store import CHROMA_DIR, EvidenceStore
from llama_index_ragonite.parsing.contextualizer import EvidenceContextualizer

ALL_STORE = "retrieval-ALL"  # the embedded default's store with ALL context
_BATCH = 500  # records per Chroma add when a collection is built again


def store_folder(cache: Path, setting: str, label: str = "") -> Path:
    """``label``: a prefix naming a non-default embedding model (e.g. ``minilm-``)."""
    return cache / f"retrieval-{label}{setting}"


def build_store(
    data: Path, cache: Path, setting: str, embed_model: Optional[BaseEmbedding] = None, label: str = ""
) -> Tuple[EvidenceStore, Dict[str, float]]:
    """The store for one contextualization, built unless cached; returns (store, seconds per step).

    The seconds are empty when nothing had to be written (the cached store was up to date).
    """
    store = EvidenceStore(
        store_folder(cache, setting, label),
        embed_model=embed_model,
        contextualizer=EvidenceContextualizer.from_setting(setting),
    )
    report = store.ingest(load_corpus(data), remove_missing=True, show_progress=True)
    settle_vectors(store.path)
    return store, report.seconds if report.nodes_written else {}


def open_all_store(folder: Path, data: Path) -> EvidenceStore:
    """The ALL-contextualized store at ``folder``, opened as is; built first when ``folder``
    is a missing ``retrieval-ALL`` (never re-ingested when it exists)."""
    if folder.is_dir():
        print(settle_vectors(folder), file=sys.stderr)
        return EvidenceStore(folder, contextualizer=EvidenceContextualizer.from_setting("ALL"))
    if folder.name != ALL_STORE:
        raise SystemExit(f"{folder} does not exist; only a folder named {ALL_STORE} is built automatically")
    print(f"building {folder} (parse, contextualize, embed 215 pages)", file=sys.stderr)
    return build_store(data, folder.parent, "ALL")[0]


def settle_vectors(folder: Path) -> str:
    """Write the store's whole HNSW graph to disk; returns how much of it is there, for the report.

    Why: embedded Chroma saves the graph only every ``sync_threshold`` (1000) records, and a process
    that opens the store inserts the rest from its log in parallel, in an order of its own
    (docs/deployment.md): two processes then rank a few questions differently, and a benchmark
    comparing HEAD with this tree measures that noise too. A process that has not loaded the
    collection yet takes a lowered threshold when it loads it, and saves the graph then, so the
    work runs in a fresh child process (this one may hold the collection already).
    """
    here = Path(__file__).resolve().parents  # the harness (benchmarks/) and the checkout's package
    paths = [str(here[1]), str(here[2]), os.environ.get("PYTHONPATH")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, paths)))
    code = "import sys; from harness.store import _settle; print(_settle(sys.argv[1]))"
    done = subprocess.run(
        [sys.executable, "-c", code, str(folder / CHROMA_DIR)], env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise RuntimeError(f"{folder}: settling the HNSW graph failed: {done.stderr.strip()[-2000:]}")
    return done.stdout.strip()


def _settle(chroma_folder: str) -> str:
    """In a process that has not opened the collection: load it with ``sync_threshold`` 1, which saves
    the graph with every record replayed, then put the stored threshold back."""
    import chromadb

    client = chromadb.PersistentClient(path=chroma_folder)
    (collection,) = client.list_collections()
    threshold = collection.configuration["hnsw"]["sync_threshold"]
    collection.modify(configuration={"hnsw": {"sync_threshold": 1}})
    collection = client.get_collection(collection.name)
    count = collection.count()
    if count:
        collection.query(query_embeddings=collection.get(limit=1, include=["embeddings"])["embeddings"], n_results=1)
    collection.modify(configuration={"hnsw": {"sync_threshold": threshold}})
    saved = [pickle.loads(p.read_bytes()) for p in Path(chroma_folder).glob("*/index_metadata.pickle")]
    on_disk = sum(len(ids.get("id_to_label", ())) for ids in saved)
    return f"HNSW graph on disk: {on_disk} of {count} vectors"


def rebuilt_copy(folder: Path, copy: Path) -> str:
    """A copy of the store at ``copy`` whose Chroma collection is built again from the same records.

    Why: Chroma's HNSW graph differs from build to build (even with one insertion thread), so a
    result measured on one store's graph may move when a user builds the store again; the copy
    measures by how much without embedding the pages again. Returns ``settle_vectors``' line."""
    import shutil

    import chromadb

    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns(CHROMA_DIR))
    (source,) = chromadb.PersistentClient(path=str(folder / CHROMA_DIR)).list_collections()
    records = source.get(include=["embeddings", "metadatas", "documents"])
    target = open_collection(copy / CHROMA_DIR, None, source.name, writable=True)
    for start in range(0, len(records["ids"]), _BATCH):
        part = slice(start, start + _BATCH)
        target.add(
            ids=records["ids"][part],
            embeddings=records["embeddings"][part],
            metadatas=records["metadatas"][part],
            documents=records["documents"][part],
        )
    return settle_vectors(copy)
