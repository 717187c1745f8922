"""A store write that runs out of disk space, told as such: ``StoreError("disk full at <store> …")``.

Why apart: a full disk surfaces in many shapes during one ingest. The store's own files (the
journal, the BM25 folder, the latent terms, the manifest) raise ``OSError(ENOSPC)``; SQLite
says "database or disk is full"; Chroma's core reports "Error in compaction: Failed to apply
logs to the metadata segment", with neither an errno nor the word "disk". Every writer
(``EvidenceStore.ingest``, ``check(repair=True)``, a Confluence sync's state, the whole of ``ragonite
index``) runs under ``disk_full_as_store_error``, which recognises the first two from the exception
chain and, for any other failure of Chroma, SQLite or the OS, asks ``shutil.disk_usage`` whether the
store's file system has under ``LOW_SPACE`` free. Not a share of the file system: SQLite gives back
what it had taken when its write fails, so on a small disk the room left afterwards is no sign (an
804 KB disk: Chroma's compaction failed with 472 KB free, needing its database to grow from 328 KB
to about 880 KB). Nothing else changes: the journal written before the first write lets the next
run repair the store.
"""

from __future__ import annotations

import errno
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

from llama_index_ragonite.errors import DiskFullError
from llama_index_ragonite.index.journal import JOURNAL

__all__ = ["DiskFullError", "disk_full_as_store_error", "disk_full_cause", "nearly_full"]

_ERRNOS = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
_MESSAGES = ("no space left on device", "database or disk is full", "disk quota exceeded", "os error 28", "disk full")
LOW_SPACE = 64 << 20  # bytes: with less free, a storage failure means a full disk


def _chain(first: BaseException) -> Iterator[BaseException]:
    seen = set()
    err: Optional[BaseException] = first
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        yield err
        err = err.__cause__ or (None if err.__suppress_context__ else err.__context__)


def disk_full_cause(err: BaseException) -> Optional[str]:
    """What in ``err``'s chain says the disk is full (an ``OSError`` errno or a known message), else None."""
    for link in _chain(err):
        if isinstance(link, OSError) and link.errno in _ERRNOS:
            where = f" writing {link.filename}" if link.filename else ""
            return f"{link.strerror or 'No space left on device'}{where}"
        text = str(link)
        if any(message in text.lower() for message in _MESSAGES):
            return f"{type(link).__name__}: {text}"
    return None


def nearly_full(path: Path) -> Optional[str]:
    """``"N KB free of M KB"`` when the file system holding ``path`` has (almost) no space left, else None."""
    folder = Path(path)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        usage = shutil.disk_usage(folder)
    except OSError:
        return None
    if usage.free >= LOW_SPACE:
        return None
    return f"{usage.free // 1024} KB free of {usage.total // 1024} KB"


_OTHER_CAUSES = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EEXIST}


def _storage_failure(err: BaseException) -> bool:
    """Whether Chroma, SQLite or the OS failed (anywhere in the chain), not a refusal of this package nor an
    OS error that names another cause (no permission, a read-only or missing folder)."""
    chain = list(_chain(err))
    if any(isinstance(link, OSError) and link.errno in _OTHER_CAUSES for link in chain):
        return False
    return any(
        isinstance(link, (OSError, sqlite3.Error)) or type(link).__module__.split(".")[0] == "chromadb"
        for link in chain
    )


@contextmanager
def disk_full_as_store_error(store: Path, state: str = "the store was not changed") -> Iterator[None]:
    """Raise ``DiskFullError`` naming ``store`` when the block fails because its disk is full (``state``: what
    that left, when no write journal says the store's write was interrupted)."""
    try:
        yield
    except DiskFullError:
        raise
    except Exception as err:
        cause = disk_full_cause(err)
        usage = nearly_full(store)
        if cause is None and (usage is None or not _storage_failure(err)):
            raise
        detail = "; ".join(part for part in (cause or f"{type(err).__name__}: {err}", usage) if part)
        if (Path(store) / JOURNAL).exists():
            state = (
                "the write was interrupted: readers refuse the store until the next `ragonite index` "
                "(or `ragonite check --repair`) repairs it"
            )
        raise DiskFullError(
            f"disk full at {store} ({detail}); {state}. Free space on that disk, then run `ragonite index` again"
        ) from err
