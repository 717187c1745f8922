"""The store check: do Chroma, the lexical index (BM25), the latent terms and the manifest agree?

Why: the three indexes of a store are written one after the other. A write journal
(:mod:`llama_index_ragonite.index.journal`) names the pages of an interrupted write, but a
store written by an older version, or damaged by hand, needs a check that trusts nothing:
this one compares node ids, texts and pages across all of them. Repair is by removal: every
page with a difference is dropped from all indexes and from the manifest, so the next
``ragonite index`` (or ``EvidenceStore.ingest``) indexes it again from its source.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Set

from llama_index.core.schema import MetadataMode

from llama_index_ragonite.errors import (
    StoreCorruptError,
    StoreInconsistentError,
    StoreInterruptedError,
)
from llama_index_ragonite.index.journal import read_journal, writer_active

__all__ = [
    "StoreCheckReport",
    "check_readable",
    "check_store",
    "count_mismatch",
    "drop_pages",
]

logger = logging.getLogger(__name__)

_EXAMPLES = 5
_BATCH = 1000


@dataclass
class StoreCheckReport:
    """What a full check found; ``ok`` when nothing differs. ``bad_pages`` are the pages a repair drops."""

    path: Path
    counts: Dict[str, int] = field(default_factory=dict)  # evidences per index, pages in the manifest
    only_in_chroma: List[str] = field(default_factory=list)
    only_in_lexical: List[str] = field(default_factory=list)
    texts_differ: List[str] = field(default_factory=list)
    only_in_latent: List[str] = field(default_factory=list)
    missing_latent: List[str] = field(default_factory=list)
    unlisted_pages: List[str] = field(default_factory=list)  # evidences of pages the manifest does not list
    interrupted_pages: List[str] = field(default_factory=list)  # named by the journal of an unfinished write
    bad_pages: Set[str] = field(default_factory=set)
    stray_ids: Set[str] = field(default_factory=set)  # differing evidences that name no page

    @property
    def ok(self) -> bool:
        return not (self.bad_pages or self.stray_ids or self.interrupted_pages)

    def __str__(self) -> str:
        lines = [f"{self.path}: " + ", ".join(f"{v} {k}" for k, v in self.counts.items())]
        for label, items in (
            ("evidences only in Chroma", self.only_in_chroma),
            ("evidences only in the lexical index", self.only_in_lexical),
            ("evidences whose text differs between Chroma and the lexical index", self.texts_differ),
            ("latent-term vectors without an evidence", self.only_in_latent),
            ("evidences without latent-term vector", self.missing_latent),
            ("pages with evidences but missing from the manifest", self.unlisted_pages),
            ("pages of an interrupted write", self.interrupted_pages),
        ):
            if items:
                examples = ", ".join(sorted(items)[:_EXAMPLES]) + (", …" if len(items) > _EXAMPLES else "")
                lines.append(f"  {len(items)} {label}: {examples}")
        if self.ok:
            lines.append("  consistent: Chroma, lexical index, latent terms and manifest agree")
        else:
            lines.append(f"  {len(self.bad_pages)} page(s) to drop and index again")
        return "\n".join(lines)


def count_mismatch(collection: Any, lexical: Any, latent: Any) -> Optional[str]:
    """The cheap check run at open: evidence counts only. A sentence saying what differs, or None."""
    chroma, words, terms = collection.count(), len(lexical), len(latent)
    if chroma != words:
        return f"Chroma holds {chroma} evidences, the lexical index {words}"
    if terms not in (0, words):
        return f"the latent-term index holds {terms} vectors for {words} evidences"
    return None


def check_readable(path: Path, collection: Any, lexical: Any, latent: Any) -> None:
    """What a reader checks at open: ``StoreInterruptedError`` or ``StoreInconsistentError``, naming the fix.

    Skipped (with a warning) while a writer holds the lock: its run is not over yet.
    """
    if writer_active(path):
        logger.warning("%s is being updated by another process: results may mix old and new pages", path)
        return
    journal = read_journal(path)
    if journal is not None:
        pages = journal["pages"]
        raise StoreInterruptedError(
            f"{path}: an ingest was interrupted while writing {len(pages)} page(s) "
            f"({', '.join(pages[:3])}{', …' if len(pages) > 3 else ''}); its indexes may disagree. "
            f"Run `ragonite index` again (it repairs and finishes the write) or `ragonite check --store {path} --repair`"
        )
    mismatch = count_mismatch(collection, lexical, latent)
    if mismatch:
        raise StoreInconsistentError(
            f"{path}: the store's indexes disagree ({mismatch}). "
            f"Run `ragonite check --store {path}` for details, `--repair` to fix, then `ragonite index` again"
        )


def check_store(path: Path, manifest: Dict[str, Any], collection: Any, lexical: Any, latent: Any) -> StoreCheckReport:
    """Compare every evidence id, text and page across the store's parts (reads all of Chroma)."""
    pages = set(manifest.get("pages", {}))
    chroma_texts, chroma_pages = _chroma_contents(collection)
    lexical_pages, latent_pages = lexical.node_pages(), latent.node_pages()
    report = StoreCheckReport(path)
    report.counts = {
        "evidences in Chroma": len(chroma_texts),
        "in the lexical index": len(lexical_pages),
        "latent-term vectors": len(latent_pages),
        "pages in the manifest": len(pages),
    }
    report.only_in_chroma = sorted(set(chroma_texts) - set(lexical_pages))
    report.only_in_lexical = sorted(set(lexical_pages) - set(chroma_texts))
    report.texts_differ = sorted(
        node_id
        for node_id in set(chroma_texts) & set(lexical_pages)
        if lexical.get_node(node_id).get_content(MetadataMode.NONE) != chroma_texts[node_id]
    )
    if latent_pages:  # a model without latent terms leaves the index empty: nothing to compare
        report.only_in_latent = sorted(set(latent_pages) - set(lexical_pages))
        report.missing_latent = sorted(set(lexical_pages) - set(latent_pages))
    page_of = {**latent_pages, **chroma_pages, **lexical_pages}
    report.unlisted_pages = sorted({p for p in page_of.values() if p is not None} - pages)
    report.interrupted_pages = _journal_pages(path)
    differing = (
        report.only_in_chroma + report.only_in_lexical + report.texts_differ
        + report.only_in_latent + report.missing_latent
    )  # fmt: skip
    for node_id in differing:
        page = page_of.get(node_id)
        if page is None:
            report.stray_ids.add(node_id)
        else:
            report.bad_pages.add(page)
    report.bad_pages.update(report.unlisted_pages, report.interrupted_pages)
    return report


def drop_pages(report: StoreCheckReport, pages: Dict[str, str], collection: Any, lexical: Any, latent: Any) -> None:
    """Remove the report's bad pages and stray evidences from every index and from ``pages`` (in place)."""
    bad = sorted(report.bad_pages)
    for start in range(0, len(bad), _BATCH):
        collection.delete(where={"document_id": {"$in": bad[start : start + _BATCH]}})
    for page in bad:
        lexical.delete_ref_doc(page)
        latent.delete_ref_doc(page)
        pages.pop(page, None)
    if report.stray_ids:
        collection.delete(ids=sorted(report.stray_ids))
        lexical.delete(report.stray_ids)
        latent.delete(report.stray_ids)


def _chroma_contents(collection: Any) -> tuple[Dict[str, str], Dict[str, Optional[str]]]:
    """Node id -> text and node id -> page of every evidence in the collection, read in batches."""
    texts: Dict[str, str] = {}
    pages: Dict[str, Optional[str]] = {}
    offset = 0
    while True:
        got = collection.get(include=["documents", "metadatas"], limit=_BATCH, offset=offset)
        for node_id, text, meta in zip(got["ids"], got["documents"], got["metadatas"]):
            texts[node_id] = text or ""
            pages[node_id] = (meta or {}).get("document_id") or None
        if len(got["ids"]) < _BATCH:
            return texts, pages
        offset += _BATCH


def _journal_pages(path: Path) -> List[str]:
    try:
        journal = read_journal(path)
    except StoreCorruptError:  # a damaged journal: the full comparison decides alone
        return []
    return sorted(journal["pages"]) if journal else []
