"""``--as USER --groups G,…`` (search, ask and chat as that user) and ``--space-readers`` (index confluence)."""

from __future__ import annotations

import argparse
from typing import Dict, List, Optional

from llama_index_ragonite.index.access import Principal
from llama_index_ragonite.parsing.confluence.permissions import Readers

__all__ = ["add_principal_arguments", "principal_of", "space_readers_of"]


def add_principal_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--as",
        dest="as_user",
        metavar="USER",
        help="retrieve only what this user may read (a Confluence account id or user name; see docs/security.md)",
    )
    p.add_argument("--groups", default="", metavar="G,G", help="the groups of --as USER, comma-separated")


def principal_of(args: argparse.Namespace) -> Optional[Principal]:
    if not getattr(args, "as_user", None):
        if getattr(args, "groups", ""):
            raise ValueError("--groups goes with --as USER")
        return None
    return Principal.of(args.as_user, args.groups.split(","))


def space_readers_of(values: List[str]) -> Dict[str, Readers]:
    """``KEY=GROUP,GROUP`` (``KEY=*``: anyone who may log in) for each space whose permissions are unreadable."""
    out: Dict[str, Readers] = {}
    for value in values:
        key, sep, groups = value.partition("=")
        if not sep or not key.strip() or not groups.strip():
            raise ValueError(f"--space-readers {value!r}: write KEY=GROUP[,GROUP] (or KEY=*)")
        names = tuple(g.strip() for g in groups.split(",") if g.strip())
        out[key.strip()] = Readers(anyone=True) if names == ("*",) else Readers(groups=names)
    return out
