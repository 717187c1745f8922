"""``Watchdog``: a request's overall deadline, however slowly its status line and headers arrive.

Why: httpx's timeouts are per read, and a read that gets one byte starts over; a server that
sends its headers a byte every few seconds keeps a request alive for as long as it likes. The
client reads bodies as streams and checks the deadline between chunks, but the status line and
headers are read inside httpx. So a timer shuts the client's sockets down when the deadline
passes: a read waiting on them returns at once and the request fails, which the client reports
as the deadline. The sockets are those httpcore reports opening through the request extension
``trace`` (public in httpx and httpcore: ``traced(client)`` on each request) and the streams'
public ``get_extra_info("socket")``; no transport's private pool is read. Where none was reported
(another transport), the watchdog closes the whole client instead, which ends the request at its
next read.
"""

from __future__ import annotations

import socket
import threading
import weakref
from typing import Any, Dict, List

import httpx

__all__ = ["Watchdog", "traced"]


class Watchdog:
    """``with Watchdog(client, seconds) as dog: …``; ``dog.fired`` says whether the time ran out."""

    def __init__(self, client: httpx.Client, seconds: float) -> None:
        self.client = client
        self._fired = threading.Event()
        self._timer = threading.Timer(max(seconds, 0.0), self._expire)
        self._timer.daemon = True

    @property
    def fired(self) -> bool:
        return self._fired.is_set()

    def __enter__(self) -> "Watchdog":
        self._timer.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._timer.cancel()

    def _expire(self) -> None:
        self._fired.set()
        sockets = list(_open_sockets(self.client))
        if not sockets:
            self.client.close()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # closed meanwhile
                pass


class SocketLog:
    """The sockets a client's connections run on, as httpcore's ``trace`` reports them opened."""

    OPENED = (
        "connection.connect_tcp.complete",
        "connection.connect_unix_socket.complete",
        "connection.start_tls.complete",  # TLS wraps (and detaches) the plain socket: the wrapper is the one open
    )

    def __init__(self) -> None:
        self._sockets: "weakref.WeakSet[socket.socket]" = weakref.WeakSet()  # gone with their connections
        self._lock = threading.Lock()

    def trace(self, event: str, info: Dict[str, Any]) -> None:
        if event in self.OPENED:
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if isinstance(sock, socket.socket):
                with self._lock:
                    self._sockets.add(sock)

    def open_sockets(self) -> List[socket.socket]:
        with self._lock:
            return [sock for sock in self._sockets if sock.fileno() != -1]


_LOGS: "weakref.WeakKeyDictionary[httpx.Client, SocketLog]" = weakref.WeakKeyDictionary()
_LOGS_LOCK = threading.Lock()


def _log_of(client: httpx.Client) -> SocketLog:
    with _LOGS_LOCK:
        log = _LOGS.get(client)
        if log is None:
            log = _LOGS[client] = SocketLog()
        return log


def traced(client: httpx.Client) -> Dict[str, Any]:
    """The request extensions (``build_request(..., extensions=traced(client))``) that tell ``client``'s
    watchdogs which sockets its connections opened."""
    return {"trace": _log_of(client).trace}


def _open_sockets(client: httpx.Client) -> List[socket.socket]:
    return _log_of(client).open_sockets()
