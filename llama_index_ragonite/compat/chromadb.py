"""Chroma's per-process table of embedded systems (checked on chromadb 1.5.9).

Chroma 1.x keeps one system per folder per process (``SharedSystemClient._identifier_to_system``, keyed
by the folder's path as passed); after another process wrote, that system answers from memory. The
public ``SharedSystemClient.clear_system_cache()`` drops every folder's system, stopping clients that
other stores of this process still use; dropping one entry needs the private table.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["forget_embedded_system"]


def forget_embedded_system(folder: Path) -> None:
    """Make the next ``chromadb.PersistentClient(folder)`` of this process read the files again: drop the
    folder's entry of ``SharedSystemClient._identifier_to_system`` (without that table: clear them all)."""
    from chromadb.api.shared_system_client import SharedSystemClient

    systems = getattr(SharedSystemClient, "_identifier_to_system", None)
    if isinstance(systems, dict):
        systems.pop(str(folder), None)
    else:  # pragma: no cover - another chromadb layout
        SharedSystemClient.clear_system_cache()
