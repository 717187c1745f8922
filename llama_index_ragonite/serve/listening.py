"""The listening socket of ``ragonite serve``: bound before anything loads, and named as it was bound.

Why: binding only after the models loaded made a port in use, an address not on this machine or a
name that does not resolve a late failure, and the start line repeated ``--port`` whatever uvicorn
then did. ``bind`` binds first (``ServeConfigError``, exit 2, with what to change), ``url`` reads the
socket's own address, so ``--port 0`` (any free port) prints the port it got.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from typing import List, Tuple

from llama_index_ragonite.serve.config import ServeConfigError

__all__ = ["bind", "url"]


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound (not yet listening) to ``host:port``; IPv4 first for a name, as uvicorn does."""
    try:
        candidates = _addresses(host, port)
    except socket.gaierror as err:
        raise ServeConfigError(f"--host {host!r}: not an address, or a name that does not resolve ({err})") from None
    failure: OSError = OSError(errno.EADDRNOTAVAIL, "no address")
    for family, address in candidates:
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
            return sock
        except OSError as err:
            sock.close()
            failure = err
    raise ServeConfigError(_why(host, port, failure))


def url(sock: socket.socket, host: str) -> str:
    """``http://HOST:PORT/`` with the port the socket got, and its address unless ``host`` is a name
    (a name is what the Host header check answers to)."""
    bound, port = sock.getsockname()[:2]
    shown = bound if _is_address(host) else host
    return f"http://[{shown}]:{port}/" if ":" in shown else f"http://{shown}:{port}/"


def _addresses(host: str, port: int) -> List[Tuple[int, tuple]]:
    found = socket.getaddrinfo(host.strip("[]") or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    found.sort(key=lambda item: item[0] != socket.AF_INET)
    return list(dict.fromkeys((family, address) for family, _, _, _, address in found))


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        return False


def _why(host: str, port: int, err: OSError) -> str:
    if err.errno == errno.EADDRINUSE:
        return f"--port {port}: already in use on {host} (another server?); pick another, or --port 0 for any free one"
    if err.errno == errno.EACCES:
        return f"--port {port}: this user may not listen on it (ports below 1024 need privileges); pick one above 1023"
    if err.errno == errno.EADDRNOTAVAIL:
        return f"--host {host}: not an address of this machine; give one of its addresses, or 127.0.0.1"
    return f"Cannot listen on {host}:{port}: {err.strerror or err}"
