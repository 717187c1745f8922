"""The persistent ConfQuestions ``EvidenceStore`` that the retrieval, completion and attribution
scripts under ``benchmarks/`` share: one folder per contextualization (and embedding) under a cache.

Why shared: embedding the 215 pages takes minutes on a CPU, so the completion and attribution
scripts reuse the store the retrieval script built (``retrieval-ALL``) instead of their own.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, Optional, Tuple

from llama_index.core.base.embeddings.base import BaseEmbedding

from llama_index_ragonite.bench.confquestions import load_corpus
from llama_index_ragonite.index.store import EvidenceStore
from llama_index_ragonite.parsing.contextualizer import EvidenceContextualizer

ALL_STORE = "retrieval-ALL"  # the embedded default's store with ALL context


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
    return store, report.seconds if report.nodes_written else {}


def open_all_store(folder: Path, data: Path) -> EvidenceStore:
    """The ALL-contextualized store at ``folder``, opened as is; built first when ``folder``
    is a missing ``retrieval-ALL`` (never re-ingested when it exists)."""
    if folder.is_dir():
        return EvidenceStore(folder, contextualizer=EvidenceContextualizer.from_setting("ALL"))
    if folder.name != ALL_STORE:
        raise SystemExit(f"{folder} does not exist; only a folder named {ALL_STORE} is built automatically")
    print(f"building {folder} (parse, contextualize, embed 215 pages)", file=sys.stderr)
    return build_store(data, folder.parent, "ALL")[0]
