"""How a reader notices that another process rewrote its store, cheaply, and what may be loaded then.

Why: a reader holds BM25, the latent terms and a Chroma handle in memory, and without a look
at the disk it would go on serving evidences a re-index deleted. Every completed write ends by
replacing the manifest (a rename: a new inode) with the next ``generation`` number, and the
write journal (:mod:`~llama_index_ragonite.index.journal`) exists for the whole destructive
part of a write. So two ``stat`` calls per query tell whether anything may have changed; only
then is the manifest read. Embedded Chroma caches one system per folder and process, whose
in-memory vector index does not see another process's writes: a reload drops that cached
system so that the new client reads the files again.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from llama_index_ragonite.compat.chromadb import forget_embedded_system
from llama_index_ragonite.errors import StoreInterruptedError
from llama_index_ragonite.index.chroma_access import open_collection
from llama_index_ragonite.index.journal import JOURNAL, read_journal, writer_active

__all__ = ["DiskState", "GenerationWatch", "forget_embedded_client", "reopen_vector_store", "write_under_way"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DiskState:
    """What a ``stat`` of the manifest and of the journal says; equal states mean nothing was written."""

    manifest: Optional[tuple[int, int, int]]  # inode, size, mtime (ns); None when there is no manifest
    journal: bool  # a write is under way, or was interrupted


class GenerationWatch:
    """The state of a store folder when its handle last loaded it, and the look that compares it with now."""

    def __init__(self, folder: Path, manifest_name: str) -> None:
        self.folder = folder
        self._manifest, self._journal = str(folder / manifest_name), str(folder / JOURNAL)  # joined once
        self.seen = self.now()
        self._deferred: Optional[DiskState] = None

    def now(self) -> DiskState:
        try:
            stat = os.stat(self._manifest)
            manifest: Optional[tuple[int, int, int]] = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        except OSError:  # none, or the folder is not one: reading it says why
            manifest = None
        return DiskState(manifest, os.path.exists(self._journal))

    def changed(self) -> bool:
        """Whether anything was written since ``seen``: two ``stat`` calls (about a microsecond each)."""
        return self.now() != self.seen

    def write_under_way(self, state: DiskState, generation: int) -> bool:
        """Whether ``state`` shows another process writing: then generation ``generation`` stays served (warned once)."""
        if not state.journal or not write_under_way(self.folder):
            return False
        if state != self._deferred:
            logger.warning(
                "%s is being written by another process: generation %d is served until the write ends",
                self.folder, generation,
            )  # fmt: skip
        self._deferred = state
        return True


def reopen_vector_store(chroma_folder: Path, client: Any, name: str, lookup: Callable[[str], Any]):
    """A new vector store on the collection, reading what is on disk now (embedded) or on the server.

    ``lookup``: node id -> the store's node, or None (see ``NodeLookupChromaVectorStore``).
    """
    from llama_index_ragonite.index.node_lookup_chroma import NodeLookupChromaVectorStore

    if client is None:
        forget_embedded_client(chroma_folder)
    collection = open_collection(chroma_folder, client, name, writable=False)
    return NodeLookupChromaVectorStore(lookup=lookup, chroma_collection=collection)


def write_under_way(folder: Path) -> bool:
    """With a journal seen: True while its writer runs, False when it has just finished.

    A journal that no writer holds the lock for is an interrupted write: Chroma may already
    hold part of it, so no generation can be served consistently (``StoreInterruptedError``).
    """
    if writer_active(folder):
        return True
    journal = read_journal(folder)
    if journal is None:  # removed since the stat: the write completed
        return False
    if writer_active(folder):  # a new write began right after the last one
        return True
    pages = journal["pages"]
    raise StoreInterruptedError(
        f"{folder}: a write was interrupted while changing {len(pages)} page(s) ({', '.join(pages[:3])}"
        f"{', …' if len(pages) > 3 else ''}); this reader stops rather than mix old and new evidences. "
        f"Run `ragonite index` again (it repairs and finishes the write) or `ragonite check --store {folder} --repair`"
    )


def forget_embedded_client(chroma_folder: Path) -> None:
    """Make the next ``chromadb.PersistentClient(chroma_folder)`` of this process read the files again.

    Chroma (1.x) keeps one system per folder per process (``SharedSystemClient``); after another
    process wrote, its vector index answers from memory (``InternalError: Error finding id``, or
    old neighbours). Only this folder's entry is dropped: clients already open keep their system
    (reference counts stay, so closing either client later stops the right one). A chromadb
    without that table gets the public, process-wide ``clear_system_cache()``.
    """
    forget_embedded_system(chroma_folder)  # the identifier of an embedded client is its path, as passed
