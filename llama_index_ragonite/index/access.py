"""Who may read which page of a store: Confluence's rule, kept beside the evidences and applied before ranking.

Why a file of its own (``access.json`` in the store folder): a page's readers change without its
version changing (a restriction added, a group emptied), so every sync rewrites this map for its
whole scope while no evidence is re-embedded. Confluence's rule is an intersection, built that way
here (a union leaks): a user may read a page only if they may view its space AND pass the page's own
view restriction (if any) AND that of every restricted ancestor. A page with no entry is readable by
everyone (pages from folders and exports, as before); a page whose permissions could not be read
gets ``NOBODY``, never "public".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import AbstractSet, Any, Dict, FrozenSet, Iterable, Mapping, Optional, Tuple

from llama_index_ragonite.errors import StoreCorruptError
from llama_index_ragonite.index.persist import read_json, write_json

__all__ = ["ACCESS_FILE", "NOBODY", "AccessMap", "Audience", "PageAccess", "Principal"]

ACCESS_FILE = "access.json"
ACCESS_FORMAT = 1


@dataclass(frozen=True)
class Principal:
    """Who asks: a user id (any of a Confluence user's ids: account id, user name or user key) and their groups."""

    user: str
    groups: FrozenSet[str] = frozenset()

    @classmethod
    def of(cls, user: str, groups: Iterable[str] = ()) -> "Principal":
        if not user or not user.strip():
            raise ValueError("A principal needs a user id")
        return cls(user.strip(), frozenset(g.strip() for g in groups if g and g.strip()))


@dataclass(frozen=True)
class Audience:
    """Who passes one permission or restriction: these users (by any of their ids) or members of these groups."""

    users: FrozenSet[str] = frozenset()
    groups: FrozenSet[str] = frozenset()
    anyone: bool = False  # a space anyone may view (anonymous access or all users)

    def admits(self, principal: Principal) -> bool:
        return self.anyone or principal.user in self.users or bool(principal.groups & self.groups)

    def to_dict(self) -> Dict[str, Any]:
        return {"users": sorted(self.users), "groups": sorted(self.groups), "anyone": self.anyone}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Audience":
        return cls(frozenset(data.get("users", ())), frozenset(data.get("groups", ())), bool(data.get("anyone")))


@dataclass(frozen=True)
class PageAccess:
    """A page's readers: the space's viewers AND each restriction on the page or a restricted ancestor."""

    space: Audience = field(default_factory=lambda: Audience(anyone=True))
    restrictions: Tuple[Audience, ...] = ()
    nobody: bool = False  # its permissions could not be read: no one may read it until a sync can

    def admits(self, principal: Principal) -> bool:
        return not self.nobody and self.space.admits(principal) and all(r.admits(principal) for r in self.restrictions)

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"space": self.space.to_dict(), "restrictions": [r.to_dict() for r in self.restrictions]}
        return {**out, "nobody": True} if self.nobody else out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PageAccess":
        return cls(
            Audience.from_dict(data.get("space", {"anyone": True})),
            tuple(Audience.from_dict(r) for r in data.get("restrictions", ())),
            bool(data.get("nobody")),
        )


NOBODY = PageAccess(Audience(), (), nobody=True)


@dataclass
class AccessMap:
    """Page id -> ``PageAccess``; pages without an entry are readable by everyone."""

    pages: Dict[str, PageAccess] = field(default_factory=dict)
    version: int = 0  # grows with every change (retrievers cache what a principal may read by it)

    def readable(self, page_id: Optional[str], principal: Principal) -> bool:
        access = self.pages.get(page_id) if page_id is not None else None
        return access is None or access.admits(principal)

    def restricted(self) -> bool:
        """Whether some page is not readable by everyone."""
        return any(a.nobody or a.restrictions or not a.space.anyone for a in self.pages.values())

    def keep_only(self, page_ids: AbstractSet[str]) -> None:
        """Forget pages the store no longer holds."""
        self.pages = {p: a for p, a in self.pages.items() if p in page_ids}
        self.version += 1

    # -- on disk -----------------------------------------------------------------------------------
    @classmethod
    def load(cls, folder: Path) -> "AccessMap":
        file = Path(folder) / ACCESS_FILE
        if not file.exists():
            return cls()
        data = read_json(file, "the access map")
        try:
            if data.get("format") != ACCESS_FORMAT:
                raise ValueError(f"format {data.get('format')!r}")
            return cls({page: PageAccess.from_dict(entry) for page, entry in data["pages"].items()})
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            raise StoreCorruptError(f"{file}: the access map is unreadable ({err}); sync the store again") from err

    def save(self, folder: Path) -> None:
        pages = {page: access.to_dict() for page, access in sorted(self.pages.items())}
        write_json(Path(folder) / ACCESS_FILE, {"format": ACCESS_FORMAT, "pages": pages}, indent=1, sort_keys=True)
