"""Who may view a Confluence page, as the REST API v1 says it: a page's read restriction and its space's view permission.

Why read at every sync: changing a restriction bumps no page version, so a sync that compared
versions only would keep serving a page after its restriction was added. The listing asks for
each page's read restriction (``READ_EXPAND``); restrictions of ancestors outside the listing are
read one request each; a space's viewers come from ``space/{key}?expand=permissions``, which
Confluence answers only to space administrators (``None`` otherwise: the caller decides, never
"everyone"). Users are named by every id Confluence gives them (Cloud ``accountId``, Data
Center ``username`` and ``userKey``), so a principal matches by any of them.

Fail closed: a restriction or permission is read only when the answer holds all of it. A part
not expanded (a proxy that trims ``expand``), missing, cut short (``_links.next``, ``size`` or
``totalSize`` above what is listed, a full ``limit``) or of an unknown shape is a ``ConfluenceError``
naming it and the fix; the sync then makes the page readable by nobody (``index/confluence_access.py``).
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
    "check_placement",
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


EXPANSION_FIX = (
    "Confluence, or a proxy in front of it, did not expand it: let the sync's `expand` through; "
    "readable by nobody until a sync reads it whole"
)
CUT_FIX = (
    "the answer holds only part of it, and the sync does not page through a restriction's members: restrict "
    "the page to a group instead; readable by nobody until a sync reads it whole"
)


def _members(holder: Dict[str, Any], part: str, what: str, at: str, required: bool) -> List[Any]:
    """Every entry of ``holder[part]`` (``user`` or ``group``: ``{"results": […], "start", "limit", "size"}``),
    only when the answer holds all of them: a part not expanded, without ``results``, or cut (a
    ``_links.next``, ``start`` past 0, ``size``/``totalSize`` other than what is listed, or as many as
    ``limit``, which may hide more) is a ``ConfluenceError`` naming it, never "no one".
    ``required``: absent is an error too (a page restriction has both parts; a space permission one)."""
    where = f"{at}.{part}"
    value = get_field(holder, part, dict, what, at=at)
    if value is None:
        if required or part in get_field(holder, "_expandable", dict, what, {}, at=at):
            raise ConfluenceError(f"{what}: {where} is missing ({EXPANSION_FIX})")
        return []
    results = get_field(value, "results", list, what, at=where)
    if results is None:
        raise ConfluenceError(f"{what}: {where} lists no results ({EXPANSION_FIX})")
    listed = len(results)
    limit = get_field(value, "limit", int, what, at=where)
    counts = {key: get_field(value, key, int, what, listed, at=where) for key in ("size", "totalSize")}
    cut = (
        get_field(value, "_links.next", str, what, at=where) is not None
        or get_field(value, "start", int, what, 0, at=where) != 0
        or any(count != listed for count in counts.values())
        or (limit is not None and listed >= limit)
    )
    if cut:
        said = ", ".join(f"{k} {v}" for k, v in counts.items() if v != listed)
        raise ConfluenceError(
            f"{what}: {where} lists {listed} entries{f' ({said})' * bool(said)}, maybe not all ({CUT_FIX})"
        )
    return results


def _subjects(
    holder: Dict[str, Any], what: str, at: str, required: bool = True
) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """The user ids and group names of ``holder`` (``{"user": {"results": …}, "group": …}``, found at ``at``).

    An entry that names no one we can match (a user without an id, a group without a name) is an
    error: dropping it could turn a restriction into none."""
    users: List[str] = []
    for i, user in enumerate(_members(holder, "user", what, at, required)):
        ids = [get_field(user, key, str, what, "", at=f"{at}.user.results[{i}]") for key in _USER_IDS]
        if not any(ids):
            raise ConfluenceError(f"{what}: {at}.user.results[{i}] names no user ({', '.join(_USER_IDS)})")
        users += ids
    groups: List[str] = []
    for i, group in enumerate(_members(holder, "group", what, at, required)):
        name = get_field(group, "name", str, what, "", at=f"{at}.group.results[{i}]")
        if not name:
            raise ConfluenceError(f"{what}: {at}.group.results[{i}] has no name")
        groups.append(name)
    return tuple(dict.fromkeys(u for u in users if u)), tuple(dict.fromkeys(groups))


def read_restriction(page: Dict[str, Any], what: str) -> Optional[Readers]:
    """The page's own read restriction (``None``: unrestricted); a ``ConfluenceError`` when the answer
    does not say all of it (a server or proxy that dropped or cut the expansion: unknown is not unrestricted)."""
    restrictions = get_field(page, "restrictions.read.restrictions", dict, what)
    if restrictions is None:
        raise ConfluenceError(f"{what}: the answer holds no read restrictions (expand={READ_EXPAND}; {EXPANSION_FIX})")
    users, groups = _subjects(restrictions, what, "restrictions.read.restrictions")
    return Readers(users, groups) if users or groups else None


def check_placement(page: Dict[str, Any], what: str) -> None:
    """A ``ConfluenceError`` when a listed page's answer does not say where it sits (``ancestors`` or
    ``space.key`` not expanded): the restrictions it inherits and its space's viewers would be unknown,
    and no ancestors reads as "inherits nothing"."""
    if get_field(page, "ancestors", list, what) is None:
        raise ConfluenceError(f"{what}: the answer holds no ancestors, so no inherited restriction ({EXPANSION_FIX})")
    if not get_field(page, "space.key", str, what, ""):
        raise ConfluenceError(f"{what}: the answer does not name the page's space ({EXPANSION_FIX})")


def space_readers(space: Dict[str, Any], what: str) -> Optional[Readers]:
    """Who may view the space; ``None`` when the answer lists no permissions (not a space admin); a
    ``ConfluenceError`` when a permission is not whole (its subjects not expanded or cut, an unknown shape)."""
    permissions = get_field(space, "permissions", list, what)
    if not permissions:
        return None
    users: Tuple[str, ...] = ()
    groups: Tuple[str, ...] = ()
    anyone = False
    for i, permission in enumerate(permissions):
        at = f"permissions[{i}]"
        operation = get_field(permission, "operation", dict, what, at=at)
        if operation is None:
            raise ConfluenceError(f"{what}: {at} names no operation ({EXPANSION_FIX})")
        if get_field(operation, "operation", str, what, "", at=f"{at}.operation") != "read" or (
            get_field(operation, "targetType", str, what, "", at=f"{at}.operation") != "space"
        ):
            continue
        anonymous = bool(get_field(permission, "anonymousAccess", bool, what, False, at=at))
        unlicensed = bool(get_field(permission, "unlicensedAccess", bool, what, False, at=at))
        subjects = get_field(permission, "subjects", dict, what, at=at)
        if subjects is None:
            if not (anonymous or unlicensed):  # a grant to no one we know of: a trimmed answer
                raise ConfluenceError(f"{what}: {at} grants viewing to no subject ({EXPANSION_FIX})")
            subjects = {}
        anyone = anyone or anonymous
        more_users, more_groups = _subjects(subjects, what, f"{at}.subjects", required=False)
        if subjects and not (more_users or more_groups) and not (anonymous or unlicensed):
            raise ConfluenceError(f"{what}: {at}.subjects names no user or group ({EXPANSION_FIX})")
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
