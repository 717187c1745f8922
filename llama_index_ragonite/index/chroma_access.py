"""How the store reaches its Chroma collection: in place, from a copy when read-only, or on a server.

Why apart from the store: two failure modes live here. Chroma (1.x) needs write access
to its SQLite file even to read, so a store deployed read-only is opened from a private
temporary copy of its ``chroma`` folder. And a Chroma server that goes away would surface
as a raw ``httpx.ConnectError`` deep inside a query: every collection call goes through
:class:`GuardedCollection`, which turns transport failures into ``VectorStoreUnavailableError``
naming the server and the cause. Retrieval does not fall back to BM25 then: a hybrid
ranking without its dense side would silently change the answers.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import urlsplit

from llama_index_ragonite.errors import (
    StoreError,
    VectorStoreAddressError,
    VectorStoreUnavailableError,
)

__all__ = [
    "GuardedCollection",
    "check_vectors",
    "chroma_address",
    "chroma_http_client",
    "open_collection",
    "server_name",
]

logger = logging.getLogger(__name__)

# search_ef 100 (Chroma's default is 10): near-exact top-10, dense P@1 +0.01 on ConfQuestions
COLLECTION_METADATA = {"hnsw:space": "cosine", "hnsw:search_ef": 100}


def _outage_types() -> tuple[type[BaseException], ...]:
    types: list[type[BaseException]] = [ConnectionError, TimeoutError]
    try:
        import httpx

        types.append(httpx.TransportError)  # connect, read, write, pool and protocol failures
    except ImportError:  # pragma: no cover - chromadb depends on httpx
        pass
    return tuple(types)


def chroma_address(address: str) -> tuple[str, int, bool]:
    """``HOST:PORT``, ``HOST`` (port 8000) or an ``http(s)://HOST:PORT`` URL -> (host, port, ssl)."""
    text = address.strip()
    parts = urlsplit(text if "://" in text else f"http://{text}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 8000)
    except ValueError:
        port = None
    if parts.scheme not in ("http", "https") or not parts.hostname or port is None or parts.path not in ("", "/"):
        raise VectorStoreAddressError(
            f"Chroma server {address!r}: write HOST:PORT (e.g. 127.0.0.1:8000) or http(s)://HOST:PORT"
        )
    return parts.hostname, port, parts.scheme == "https"


def chroma_http_client(address: str) -> Any:
    """A ``chromadb.HttpClient`` for ``address`` (see ``chroma_address``); a server that does not answer is an error."""
    import chromadb

    host, port, ssl = chroma_address(address)
    try:
        client = chromadb.HttpClient(host=host, port=port, ssl=ssl)
        client.heartbeat()
    except Exception as err:  # refused, timed out, not a Chroma server
        raise VectorStoreUnavailableError(f"Chroma server {address}: no Chroma server answers there ({err})") from err
    return client


def server_name(client: Any) -> str:
    """``host:port`` of a Chroma HTTP client, for messages; a generic label otherwise."""
    try:
        settings = client.get_settings()
        host, port = settings.chroma_server_host, settings.chroma_server_http_port
    except Exception:  # not an HTTP client, or another chromadb version: a label is enough
        return "the Chroma server"
    return f"the Chroma server at {host}:{port}" if host else "the Chroma server"


class GuardedCollection:
    """A Chroma collection whose calls raise ``VectorStoreUnavailableError`` when the server is gone."""

    def __init__(self, collection: Any, where: str) -> None:
        self._collection = collection
        self._server = where

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._collection, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            return guarded(self._server, attr, *args, **kwargs)

        return call


def guarded(server: str, function, /, *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, a transport failure raised as ``VectorStoreUnavailableError``."""
    try:
        return function(*args, **kwargs)
    except _outage_types() as err:
        raise VectorStoreUnavailableError(
            f"{server} cannot be reached ({type(err).__name__}: {err}); start it again or check the address. "
            "Retrieval does not fall back to BM25 alone: that would silently change the ranking"
        ) from err


def check_vectors(collection: Any, nodes: Sequence[Any], model: str) -> None:
    """Refuse vectors Chroma would reject mid-write: not finite, or not the collection's dimension.

    Called after embedding and before any write, so a misbehaving model leaves the store as it was
    (Chroma's own error would come after the old evidences of the pages were deleted).
    """
    import numpy as np  # here, not at the top: serve.config imports this module, and ``ragonite --help`` loads no numpy

    vectors = [node.embedding for node in nodes]
    if not vectors:
        return
    dims = {len(v) for v in vectors}
    bad = next((node.node_id for node, v in zip(nodes, vectors) if not np.all(np.isfinite(v))), None)
    if bad is not None:
        raise StoreError(
            f"The embedding model {model} returned NaN or infinite values (evidence {bad}); nothing written"
        )
    stored = collection.get(limit=1, include=["embeddings"])["embeddings"] if collection.count() else []
    expected = {len(stored[0])} if len(stored) else set()
    if len(dims | expected) > 1:
        raise StoreError(
            f"The embedding model {model} returned {'/'.join(map(str, sorted(dims)))}-dimensional vectors, "
            f"the store holds {'/'.join(map(str, sorted(expected or dims)))}-dimensional ones; nothing written"
        )


def open_collection(folder: Path, client: Any, name: str, writable: bool) -> Any:
    """The store's collection: on ``client`` (a server, guarded) if given, else the embedded database in ``folder``.

    ``writable=False`` and a folder this process cannot write: the database is opened from a
    temporary copy (removed at exit), as Chroma writes to its SQLite file even to read.
    """
    if client is not None:
        where = server_name(client)
        collection = guarded(
            where, client.get_or_create_collection, name, metadata=COLLECTION_METADATA, embedding_function=None
        )
        return GuardedCollection(collection, where)
    import chromadb

    where = str(folder)
    if not writable and folder.is_dir() and not _can_write(folder):
        folder = _private_copy(folder)
        logger.info("%s is read-only: Chroma reads it from a temporary copy at %s", where, folder)
    try:
        collection = chromadb.PersistentClient(path=str(folder)).get_or_create_collection(
            name, metadata=COLLECTION_METADATA, embedding_function=None
        )
    except Exception as err:  # chromadb raises its own types for locked/corrupt files
        raise StoreError(f"{where}: cannot open the Chroma database ({err})") from err
    return collection  # embedded: no transport to fail


def _can_write(folder: Path) -> bool:
    files = [folder, *(p for p in folder.rglob("*"))]
    return all(os.access(p, os.W_OK) for p in files)


def _private_copy(folder: Path) -> Path:
    tmp = Path(tempfile.mkdtemp(prefix="ragonite-chroma-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    copy = tmp / folder.name
    try:
        shutil.copytree(folder, copy)
    except OSError as err:
        raise StoreError(f"{folder}: cannot read the Chroma database ({err})") from err
    for path in [copy, *copy.rglob("*")]:  # the copy is ours: Chroma may write to it
        path.chmod(0o700 if path.is_dir() else 0o600)
    return copy
