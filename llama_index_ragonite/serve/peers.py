"""The TCP peer of a request, as ``--trust-proxy`` must compare it: never an address a header named.

Why: ASGI servers can rewrite ``scope["client"]`` from the request's own forwarding headers before
the app runs (uvicorn's ``proxy_headers``, on by default, believes ``X-Forwarded-For`` from
127.0.0.1; hypercorn's ``ProxyFixMiddleware``; daphne's ``--proxy-headers``). A client on the
proxy's host could then name the proxy's address and be believed. ``ragonite serve`` runs uvicorn
with ``proxy_headers=False``; for ``create_app`` under any other server, ``peer_address`` refuses
to believe an address that such a rewrite could have produced:

* port 0: uvicorn (for a bare address) and hypercorn write ``(host, 0)``; a TCP peer never has port 0;
* a host and a port that the forwarding headers name (``X-Forwarded-For: 10.0.0.5:4000``, which
  uvicorn 0.30+ turns into ``("10.0.0.5", 4000)``; ``X-Forwarded-Port``, which daphne reads).

A real peer's ephemeral port matching a port its own proxy wrote next to that very host is a
coincidence a legitimate request meets about once in 28,000 tries at worst; it is then refused
(fail closed), never believed.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
from collections import OrderedDict
from typing import Any, Dict, Iterable, List, Set, Tuple

__all__ = ["FORWARDING_HEADERS", "OnceEach", "forwarded_names", "peer_address"]

FORWARDING_HEADERS = (b"x-forwarded-for", b"forwarded", b"x-real-ip", b"x-forwarded-port")


def peer_address(scope: Dict[str, Any]) -> Tuple[str, str]:
    """(the TCP peer's host, "") or ("", why it cannot be believed): no client, port 0, or an address
    the request's forwarding headers name (see the module doc)."""
    client = scope.get("client")
    if not client:
        return "", "the server gave no client address"
    host, port = str(client[0]), client[1] if len(client) > 1 else 0
    if not port:
        return "", f"the server gave the client address {host!r} without a port (rewritten from a forwarding header)"
    hosts, ports = forwarded_names(v for k, v in scope.get("headers", ()) if k.lower() in FORWARDING_HEADERS)
    if _normal(host) in hosts and str(port) in ports:
        return "", f"the client address {host}:{port} is one the request's forwarding headers name"
    return host, ""


def forwarded_names(values: Iterable[bytes]) -> Tuple[Set[str], Set[str]]:
    """The hosts and ports named in forwarding header values (``X-Forwarded-For``/``X-Real-IP`` entries
    ``host``, ``host:port``, ``[v6]:port``; ``Forwarded``'s ``for=``; ``X-Forwarded-Port``'s numbers)."""
    hosts: Set[str] = set()
    ports: Set[str] = set()
    for raw in values:
        for item in raw.decode("latin-1").replace(";", ",").split(","):
            item = item.strip()
            if item[:4].lower() == "for=":
                item = item[4:]
            elif "=" in item:  # Forwarded's by=, proto=, host=: not a client
                continue
            item = item.strip().strip('"')
            if item.isdigit():
                ports.add(str(int(item)))
                continue
            host, port = _split(item)
            if host:
                hosts.add(_normal(host))
            if port:
                ports.add(port)
    return hosts, ports


def _split(item: str) -> Tuple[str, str]:
    if item.startswith("["):
        host, _, rest = item[1:].partition("]")
        return host, rest[1:] if rest.startswith(":") and rest[1:].isdigit() else ""
    if item.count(":") == 1:
        host, port = item.split(":")
        return (host, str(int(port))) if port.isdigit() else (item, "")
    return item, ""


def _normal(host: str) -> str:
    """One spelling per address (``::FFFF:10.0.0.5`` is ``10.0.0.5``), names lower case."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host.strip().lower()
    mapped = getattr(address, "ipv4_mapped", None)
    return str(mapped or address)


class OnceEach:
    """Log a warning once per key (a peer), remembering at most ``size`` keys, the least recent forgotten first:
    a flood of forged requests gives one line per sender, and memory stays bounded."""

    def __init__(self, logger: logging.Logger, size: int = 1024) -> None:
        self.logger, self.size = logger, size
        self._seen: "OrderedDict[str, None]" = OrderedDict()
        self._lock = threading.Lock()

    def warn(self, key: str, message: str, *args: Any) -> bool:
        with self._lock:
            if key in self._seen:
                self._seen.move_to_end(key)
                return False
            self._seen[key] = None
            while len(self._seen) > self.size:
                self._seen.popitem(last=False)
        self.logger.warning(message, *args)
        return True

    def keys(self) -> List[str]:
        with self._lock:
            return list(self._seen)
