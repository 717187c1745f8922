"""Who a caller of ``ragonite serve`` is, for what they may read: a users file, or a trusted reverse proxy.

Why: a token separates conversations, not what a caller may read. Confluence restrictions name
users and groups, so the app must know both for every request:

* A users file (``--users FILE``, JSON) maps tokens to users: ``{"users": [{"name": "acc-alice",
  "groups": ["eng"], "token_sha256": "…"}]}``. ``name`` is the user's Confluence id (account id, user
  name or user key: what restrictions name). Tokens are stored as their SHA-256 only; they are random
  32-byte secrets (``add_user`` makes them), which need no slow password hash.
* A reverse proxy that authenticates users (SSO) may pass the user and groups in headers. They are
  read only from the proxy addresses the operator names, compared with the TCP peer (``peers.py``: never
  an address a forwarding header named); the same headers from any other peer are refused (403), never
  ignored, since they can only be a forgery or a misconfigured proxy. Each such peer is logged once.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple, Union

from llama_index_ragonite.index.access import Principal
from llama_index_ragonite.index.persist import write_json
from llama_index_ragonite.serve.peers import OnceEach

__all__ = [
    "ProxyTrust",
    "ServeUser",
    "UsersFile",
    "UsersFileError",
    "add_user",
    "owner_of",
    "token_owner",
    "token_sha256",
]

logger = logging.getLogger(__name__)
Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]


class UsersFileError(ValueError):
    """A users file or proxy setting that cannot be used (the message says what to fix)."""


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_owner(digest: str) -> str:
    """The owner id of a bare ``--token``'s conversations, from its SHA-256 (the token itself is never stored)."""
    return "token:" + digest[:32]


def owner_of(user: str) -> str:
    """The owner id of a known user's conversations (a bare token's are ``token:…``, a cookie's a hex id)."""
    return "user:" + user


@dataclass(frozen=True)
class ServeUser:
    name: str
    groups: FrozenSet[str] = frozenset()
    token_sha256: str = ""

    @property
    def principal(self) -> Principal:
        return Principal.of(self.name, self.groups)

    @property
    def legacy_owner(self) -> str:
        """The owner id this user's token had before it was in a users file (a bare token's)."""
        return token_owner(self.token_sha256)


@dataclass
class UsersFile:
    """The users of the app, by token hash (see the module doc)."""

    path: Path
    users: List[ServeUser] = field(default_factory=list)
    _stamp: Optional[Tuple[int, int]] = field(default=None, repr=False, compare=False)

    @classmethod
    def load(cls, path: Union[str, Path]) -> "UsersFile":
        path = Path(path)
        if not path.exists():
            return cls(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            users = [
                ServeUser(
                    str(u["name"]).strip(), frozenset(map(str, u.get("groups", ()))), str(u.get("token_sha256", ""))
                )
                for u in data["users"]
            ]
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise UsersFileError(
                f"{path}: not a users file ({{'users': [{{'name', 'groups', 'token_sha256'}}]}}: {err}"
            ) from None
        for user in users:
            if not user.name or len(user.token_sha256) not in (0, 64):
                raise UsersFileError(f"{path}: user {user.name!r} needs a name and a 64-digit token_sha256")
        names = [u.name for u in users]
        if len(set(names)) < len(names):
            raise UsersFileError(f"{path}: a user is named twice")
        return cls(path, users)

    def current(self) -> "UsersFile":
        """This file as it is on disk now (re-read when it changed: a user added or synced needs no restart)."""
        try:
            found = os.stat(self.path)
        except OSError:
            return self
        stamp = (found.st_mtime_ns, found.st_size)
        if stamp != self._stamp:
            try:
                self.users = UsersFile.load(self.path).users
            except UsersFileError as err:  # half-edited: keep the users it had, say why
                logger.warning("%s; the users read before stay in effect", err)
            self._stamp = stamp
        return self

    def by_token(self, token: Optional[str]) -> Optional[ServeUser]:
        return self.by_token_hash(token_sha256(token)) if token else None

    def by_token_hash(self, digest: str) -> Optional[ServeUser]:
        """The user whose token has this SHA-256 (the first, should two share one), or None."""
        found = None
        for user in self.users:  # every entry compared, in constant time each
            if user.token_sha256 and hmac.compare_digest(digest, user.token_sha256) and found is None:
                found = user
        return found

    def save(self) -> None:
        entries = [{"name": u.name, "groups": sorted(u.groups), "token_sha256": u.token_sha256} for u in self.users]
        write_json(self.path, {"users": entries})


def add_user(users: UsersFile, name: str, groups: Iterable[str] = ()) -> str:
    """Add (or give a new token to) user ``name`` and save; returns the token, which is stored nowhere."""
    token = secrets.token_urlsafe(32)
    kept = [u for u in users.users if u.name != name]
    old = next((u for u in users.users if u.name == name), None)
    merged = frozenset(groups) or (old.groups if old else frozenset())
    users.users = [*kept, ServeUser(Principal.of(name).user, merged, token_sha256(token))]
    users.save()
    return token


@dataclass(frozen=True)
class ProxyTrust:
    """Trust the user and groups headers only from these proxy addresses (``10.0.0.5``, ``10.0.0.0/24``)."""

    networks: Tuple[Network, ...]
    user_header: str = "x-forwarded-user"
    groups_header: str = "x-forwarded-groups"
    refused: OnceEach = field(default_factory=lambda: OnceEach(logger), compare=False, repr=False)

    @classmethod
    def from_args(
        cls, addresses: Sequence[str], user_header: str = "X-Forwarded-User", groups_header: str = "X-Forwarded-Groups"
    ) -> "ProxyTrust":
        networks = []
        for address in addresses:
            try:
                networks.append(ipaddress.ip_network(address.strip(), strict=False))
            except ValueError as err:
                raise UsersFileError(f"--trust-proxy {address!r}: not an address or network ({err})") from None
        return cls(tuple(networks), user_header.lower(), groups_header.lower())

    def trusts(self, client: Optional[str]) -> bool:
        try:
            address = ipaddress.ip_address(client or "")
        except ValueError:
            return False
        return any(address in network for network in self.networks)

    def claimed(self, headers: Dict[str, str]) -> bool:
        """Whether a request carries the proxy's user or groups header (with a value)."""
        return bool(headers.get(self.user_header, "").strip() or headers.get(self.groups_header, "").strip())

    def refusal(self, peer: str, why_unknown: str = "") -> Optional[str]:
        """Why a request from TCP peer ``peer`` may not name a user with the headers (None: it may);
        ``why_unknown``: why the peer address is not known (``peers.peer_address``). Logged once per peer."""
        if peer and self.trusts(peer):
            return None
        if why_unknown:
            self.refused.warn(
                "?" + why_unknown,
                "Refused user headers: %s; run the ASGI server with its proxy headers off (docs/serve.md)",
                why_unknown,
            )
            return "User headers refused: this server cannot tell the proxy's address (see its log)"
        self.refused.warn(
            peer, "Refused user headers from %s: not a --trust-proxy address (further ones from it not logged)", peer
        )
        return "User headers are accepted only from the configured proxy addresses"

    def user(self, headers: Dict[str, str]) -> Optional[ServeUser]:
        """The user the proxy names (None when it names none); groups are comma-separated."""
        name = headers.get(self.user_header, "").strip()
        if not name:
            return None
        groups = frozenset(g.strip() for g in headers.get(self.groups_header, "").split(",") if g.strip())
        return ServeUser(name, groups)
