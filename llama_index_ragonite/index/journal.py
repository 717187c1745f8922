"""The store's writer coordination: one writer at a time, and a journal of the pages it is writing.

Why a journal: an ingest writes three things that cannot change together (Chroma, the
lexical index with the latent terms, the manifest). Before its first destructive write
the writer records, atomically, which pages it is about to replace or remove; the record
goes away only after the manifest is written. A journal left behind by a writer that no
longer holds the lock therefore means "interrupted": the next writer drops those pages
everywhere and indexes them again, and a reader refuses the store with a clear message
rather than serving a mix of old and new evidences.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

from llama_index_ragonite.errors import (
    StoreCorruptError,
    StoreLockedError,
)
from llama_index_ragonite.index.persist import fsync_dir, read_json, write_json

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory lock, one writer is on the user
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "JOURNAL",
    "LOCK_FILE",
    "begin_journal",
    "finish_journal",
    "read_journal",
    "writer_active",
    "writer_lock",
]

LOCK_FILE = ".ingest.lock"
JOURNAL = "ingest.journal.json"


@contextmanager
def writer_lock(folder: Path) -> Iterator[None]:
    """Hold the store's exclusive writer lock; ``StoreLockedError`` if another process holds it."""
    with open(folder / LOCK_FILE, "a") as handle:
        if fcntl is not None:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise StoreLockedError(
                    f"{folder} is being updated by another process; run again when it has finished"
                ) from None
        yield  # the lock goes with the file handle


def writer_active(folder: Path) -> bool:
    """Whether a process holds the writer lock now (probed read-only: works on a read-only store)."""
    if fcntl is None:  # pragma: no cover
        return False
    try:
        handle = open(folder / LOCK_FILE, "rb")
    except OSError:  # no lock file: nobody ever wrote here, or it cannot be read
        return False
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def begin_journal(folder: Path, pages: Iterable[str]) -> None:
    """Record, atomically and durably, the pages about to be replaced or removed."""
    record = {"format": 1, "started": time.time(), "pid": os.getpid(), "pages": sorted(set(pages))}
    write_json(folder / JOURNAL, record, indent=1)


def finish_journal(folder: Path) -> None:
    """The write completed (manifest written): forget the journal."""
    (folder / JOURNAL).unlink(missing_ok=True)
    fsync_dir(folder)


def read_journal(folder: Path) -> Optional[dict[str, Any]]:
    """The journal of an unfinished write (``pages``: the page ids it touched), or None."""
    file = folder / JOURNAL
    if not file.exists():
        return None
    record = read_json(file, "the store's write journal")
    if not isinstance(record, dict) or not isinstance(record.get("pages"), list):
        raise StoreCorruptError(f"{file}: the store's write journal is damaged; run `ragonite check --repair`")
    return record
