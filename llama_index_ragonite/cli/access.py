"""``--as USER --groups G,…`` (search, ask and chat as that user), ``--space-readers`` (index confluence), and
``ragonite users`` (the users file of ``ragonite serve``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Dict, List, Optional

if TYPE_CHECKING:  # the Confluence package loads httpx: imported when a command runs, not for --help
    from llama_index_ragonite.index.access import Principal
    from llama_index_ragonite.parsing.confluence.permissions import Readers

__all__ = ["add_principal_arguments", "add_users_commands", "principal_of", "space_readers_of"]


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
    from llama_index_ragonite.index.access import Principal

    return Principal.of(args.as_user, args.groups.split(","))


def space_readers_of(values: List[str]) -> Dict[str, Readers]:
    """``KEY=GROUP,GROUP`` (``KEY=*``: anyone who may log in) for each space whose permissions are unreadable."""
    from llama_index_ragonite.parsing.confluence.permissions import Readers

    out: Dict[str, Readers] = {}
    for value in values:
        key, sep, groups = value.partition("=")
        if not sep or not key.strip() or not groups.strip():
            raise ValueError(f"--space-readers {value!r}: write KEY=GROUP[,GROUP] (or KEY=*)")
        names = tuple(g.strip() for g in groups.split(",") if g.strip())
        out[key.strip()] = Readers(anyone=True) if names == ("*",) else Readers(groups=names)
    return out


def add_users_commands(sub: Any) -> None:
    """``ragonite users add|list|sync-groups FILE``: the users file of ``ragonite serve --users``."""
    p = sub.add_parser("users", help="the users file of `ragonite serve --users` (tokens, Confluence ids, groups)")
    users = p.add_subparsers(dest="users_command", required=True)
    add = users.add_parser("add", help="add a user (or give them a new token); prints the token once")
    add.add_argument("file", help="the users file (JSON; created when missing)")
    add.add_argument("name", help="the user's Confluence id: account id (Cloud), user name or user key")
    add.add_argument("--groups", default="", metavar="G,G", help="their groups (or sync them: sync-groups)")
    add.set_defaults(func=_add_user)
    listing = users.add_parser("list", help="the users and their groups (never tokens)")
    listing.add_argument("file")
    listing.set_defaults(func=_list_users)
    sync = users.add_parser("sync-groups", help="set every user's groups to their Confluence group memberships")
    sync.add_argument("file")
    sync.add_argument("--url", help="Confluence base URL (default $CONFLUENCE_URL; credentials as for index)")
    sync.add_argument(
        "--id-kind", default="accountId", choices=["accountId", "username", "key"], help="what the names are"
    )
    sync.set_defaults(func=_sync_groups)


def _add_user(args: argparse.Namespace) -> int:
    from llama_index_ragonite.serve.identities import UsersFile, add_user

    users = UsersFile.load(args.file)
    token = add_user(users, args.name, [g for g in args.groups.split(",") if g.strip()])
    print(f"{args.name}: token {token}\n(stored only as its SHA-256 in {args.file}: give it to the user now)")
    return 0


def _list_users(args: argparse.Namespace) -> int:
    from llama_index_ragonite.serve.identities import UsersFile

    for user in UsersFile.load(args.file).users:
        print(f"{user.name}\t{','.join(sorted(user.groups)) or '-'}")
    return 0


def _sync_groups(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from llama_index_ragonite.parsing.confluence import ConfluenceClient
    from llama_index_ragonite.parsing.confluence.permissions import fetch_groups
    from llama_index_ragonite.serve.identities import UsersFile

    users = UsersFile.load(args.file)
    with ConfluenceClient(args.url) as client:
        synced = [replace(u, groups=frozenset(fetch_groups(client, u.name, args.id_kind))) for u in users.users]
    for old, new in zip(users.users, synced):
        gone, added = sorted(old.groups - new.groups), sorted(new.groups - old.groups)
        print(
            f"{new.name}: {len(new.groups)} groups" + (f"; +{added}" if added else "") + (f"; -{gone}" if gone else "")
        )
    users.users = synced
    users.save()
    return 0
