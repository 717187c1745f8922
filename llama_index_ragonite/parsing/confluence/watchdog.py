"""``Watchdog``: a request's overall deadline, however slowly its status line and headers arrive.

Why: httpx's timeouts are per read, and a read that gets one byte starts over; a server that
sends its headers a byte every few seconds keeps a request alive for as long as it likes. The
client reads bodies as streams and checks the deadline between chunks, but the status line and
headers are read inside httpx. So a timer shuts the client's sockets down when the deadline
passes: a read waiting on them returns at once and the request fails, which the client reports
as the deadline. The sockets are reached through httpx's transport and httpcore's connections
(their public ``get_extra_info("socket")`` at the end, private attributes on the way there):
should those change, the watchdog closes the whole client instead, which ends the request at its
next read.
"""

from __future__ import annotations

import socket
import threading
from typing import Any, Iterator

import httpx

__all__ = ["Watchdog"]


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


def _open_sockets(client: httpx.Client) -> Iterator[socket.socket]:
    pool = getattr(getattr(client, "_transport", None), "_pool", None)
    for connection in getattr(pool, "connections", None) or []:
        stream = getattr(getattr(connection, "_connection", None), "_network_stream", None)
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            yield sock
