"""Who may view a Confluence page, as the REST API v1 says it: a page's read restriction and its space's view permission.

Why read at every sync: changing a restriction bumps no page version, so a sync that compared
versions only would keep serving a page after its restriction was added. The listing asks for
each page's read restriction (``READ_EXPAND``); restrictions of ancestors outside the listing are
read one request each; a space's viewers come from ``space/{key}?expand=permissions``, which
Confluence answers only to space administrators (``None`` otherwise: the caller decides, never
"everyone"). Users are named by every id Confluence gives them (Cloud ``accountId``, Data
Center ``username`` and ``userKey``), so a principal matches by any of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from llama_index_ragonite.errors import ConfluenceError
from llama_index_ragonite.parsing.confluence.shapes import checked_page_id, get_field

__all__ = [
    "READ_EXPAND",
    "Readers",
    "checked_space_key",
    "fetch_restriction",
    "fetch_space_readers",
    "read_restriction",
    "space_readers",
]

READ_EXPAND = "restrictions.read.restrictions.user,restrictions.read.restrictions.group"
_USER_IDS = ("accountId", "username", "userKey")
_SPACE_KEY = re.compile(r"[A-Za-z0-9~_-]{1,255}")


@dataclass(frozen=True)
class Readers:
    """Users (by any of their ids) and groups a permission or restriction lets read; ``anyone``: all."""

    users: Tuple[str, ...] = ()
    groups: Tuple[str, ...] = ()
    anyone: bool = False


def checked_space_key(key: str) -> str:
    """A space key, checked before it goes into a request's path (``ValueError`` otherwise)."""
    if not _SPACE_KEY.fullmatch(key or ""):
        raise ValueError(f"Confluence space key {str(key)[:40]!r}: letters, digits, ~, _ and - only")
    return key


def _subjects(holder: Dict[str, Any], what: str, at: str) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """The user ids and group names of ``holder`` (``{"user": {"results": …}, "group": …}``, found at ``at``)."""
    users: List[str] = []
    for i, user in enumerate(get_field(holder, "user.results", list, what, [], at=at)):
        users += [get_field(user, key, str, what, "", at=f"{at}.user.results[{i}]") for key in _USER_IDS]
    groups = [
        get_field(group, "name", str, what, "", at=f"{at}.group.results[{i}]")
        for i, group in enumerate(get_field(holder, "group.results", list, what, [], at=at))
    ]
    return tuple(dict.fromkeys(u for u in users if u)), tuple(dict.fromkeys(g for g in groups if g))


def read_restriction(page: Dict[str, Any], what: str) -> Optional[Readers]:
    """The page's own read restriction (``None``: unrestricted); a ``ConfluenceError`` when the answer
    does not say (a server or proxy that dropped the expansion: unknown is not unrestricted)."""
    restrictions = get_field(page, "restrictions.read.restrictions", dict, what)
    if restrictions is None:
        raise ConfluenceError(f"{what}: the answer holds no read restrictions (expand={READ_EXPAND})")
    users, groups = _subjects(restrictions, what, "restrictions.read.restrictions")
    return Readers(users, groups) if users or groups else None


def space_readers(space: Dict[str, Any], what: str) -> Optional[Readers]:
    """Who may view the space; ``None`` when the answer lists no permissions (not a space admin)."""
    permissions = get_field(space, "permissions", list, what)
    if not permissions:
        return None
    users: Tuple[str, ...] = ()
    groups: Tuple[str, ...] = ()
    anyone = False
    for i, permission in enumerate(permissions):
        at = f"permissions[{i}]"
        operation = get_field(permission, "operation.operation", str, what, "", at=at)
        if operation != "read" or get_field(permission, "operation.targetType", str, what, "", at=at) != "space":
            continue
        anyone = anyone or bool(get_field(permission, "anonymousAccess", bool, what, False, at=at))
        subjects = get_field(permission, "subjects", dict, what, {}, at=at)
        more_users, more_groups = _subjects(subjects, what, f"{at}.subjects")
        users, groups = users + more_users, groups + more_groups
    return Readers(tuple(dict.fromkeys(users)), tuple(dict.fromkeys(groups)), anyone)


def fetch_restriction(client: Any, page_id: str) -> Optional[Readers]:
    """One page's read restriction, asked for alone (an ancestor outside the listing: restrictions inherit)."""
    page_id = checked_page_id(page_id)  # it goes into the path
    what = f"page {page_id}"
    return read_restriction(client.get(f"content/{page_id}", {"expand": READ_EXPAND}, what, "list"), what)


def fetch_space_readers(client: Any, key: str) -> Optional[Readers]:
    """Who may view a space (``None``: Confluence lists a space's permissions to its administrators only)."""
    what = f"space {key}"
    return space_readers(client.get(f"space/{checked_space_key(key)}", {"expand": "permissions"}, what, "list"), what)


MAX_GROUP_PAGES = 100  # 200 groups a page: a user in more than 20,000 groups is a misbehaving server


def fetch_groups(client: Any, user_id: str, id_kind: str = "accountId") -> List[str]:
    """The groups Confluence says a user is in (``user/memberof``; ``id_kind``: ``accountId`` on Cloud,
    ``username`` or ``key`` on Data Center), every page of them, for the app's users file."""
    if id_kind not in ("accountId", "username", "key"):
        raise ValueError(f"id_kind {id_kind!r}: accountId, username or key")
    what, groups, start = f"groups of user {user_id!r}", [], 0
    for _ in range(MAX_GROUP_PAGES):
        data = client.get("user/memberof", {id_kind: user_id, "start": start, "limit": 200}, what, "list")
        results = get_field(data, "results", list, what, [])
        groups += [get_field(r, "name", str, what, "", at=f"results[{i}]") for i, r in enumerate(results)]
        if not results or len(results) < get_field(data, "limit", int, what, 0):
            return list(dict.fromkeys(g for g in groups if g))
        start += len(results)
    raise ConfluenceError(f"{what}: the listing goes on past {MAX_GROUP_PAGES} pages; stopped")
