"""``ConfluenceStorageReader``: Confluence pages in storage format, for ``HTMLEvidenceParser``.

Why not LlamaIndex's ``ConfluenceReader``: it turns pages into plain text before any node
parser sees them, so tables, lists and headings — what evidence parsing, row verbalization
and contextualization need — are gone. This reader keeps each page's storage-format HTML
(``body.storage``; macros such as ``ac:structured-macro`` and ``ri:`` links included, which the
parser reads) and its place in the wiki (space, ancestors, labels, version) as metadata.

Pages are chosen by a space key, page ids and/or a CQL query (their union), optionally with
all their child pages. ``list_pages`` lists the scope without bodies (versions and ancestors
only) and ``fetch`` loads given pages: what an incremental sync needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.readers.base import BasePydanticReader
from llama_index.core.schema import Document

from llama_index_ragonite.errors import ConfluenceError
from llama_index_ragonite.parsing.confluence.client import ConfluenceClient
from llama_index_ragonite.parsing.confluence.pages import ID_PREFIX, document_id, page_ancestors, page_document
from llama_index_ragonite.parsing.confluence.permissions import (
    READ_EXPAND,
    Readers,
    check_placement,
    read_restriction,
)
from llama_index_ragonite.parsing.confluence.shapes import checked_page_id, content_id, get_field

__all__ = ["BODY_EXPAND", "LIST_EXPAND", "ConfluenceStorageReader", "PageVersion"]

BODY_EXPAND = "body.storage,version,ancestors,metadata.labels,space,history.lastUpdated"
LIST_EXPAND = "version,ancestors,space," + READ_EXPAND
_CREDENTIALS = ("user", "api_token", "personal_access_token")  # ConfluenceClient's; never fields


@dataclass(frozen=True)
class PageVersion:
    """What a listing without bodies says about a page: enough to tell whether it changed or moved."""

    page_id: str
    version: int
    space: str
    ancestor_ids: Tuple[str, ...]
    title: str = ""
    readers: Optional[Readers] = None  # its own read restriction (None: unrestricted); not part of ``state``
    restrictions_known: bool = True  # False: the listing did not say (the page is then readable by nobody)
    restrictions_problem: str = ""  # why not, with the fix

    def state(self) -> Dict[str, Any]:
        return {"version": self.version, "space": self.space, "ancestors": list(self.ancestor_ids)}


class ConfluenceStorageReader(BasePydanticReader):
    """Load Confluence pages (Cloud or Data Center, REST API v1) as storage-format ``Document``s.

    Credentials are not fields (fields are serialized): pass ``api_token=``/``user=`` (Cloud),
    ``personal_access_token=`` (Data Center) or a ready ``client=``, or set the environment
    variables ``ConfluenceClient`` reads.
    """

    url: str = Field(default="", description="Base URL: https://SITE.atlassian.net/wiki (Cloud) or the DC root.")
    space_key: Optional[str] = Field(default=None, description="Load every current page of this space.")
    page_ids: List[str] = Field(default_factory=list, description="Load these pages.")
    cql: Optional[str] = Field(default=None, description="Load the pages this CQL query finds.")
    include_children: bool = Field(default=False, description="Also load the child pages, recursively.")
    id_prefix: str = Field(default=ID_PREFIX, description="Document id = prefix + page id.")
    is_remote: bool = True

    _client: ConfluenceClient = PrivateAttr()

    def __init__(self, url: Optional[str] = None, client: Optional[ConfluenceClient] = None, **fields: Any) -> None:
        credentials = {key: fields.pop(key) for key in _CREDENTIALS if key in fields}
        if client is None:
            client = ConfluenceClient(url, **credentials)
        fields["page_ids"] = [checked_page_id(i) for i in fields.get("page_ids") or []]
        super().__init__(url=client.url, **fields)
        self._client = client

    @classmethod
    def class_name(cls) -> str:
        return "ConfluenceStorageReader"

    @property
    def client(self) -> ConfluenceClient:
        return self._client

    def scope(self) -> Dict[str, Any]:
        """What this reader loads (the key of a sync's state: one store may sync several scopes)."""
        return {
            "url": self.url,
            "space": self.space_key,
            "page_ids": sorted(self.page_ids),
            "cql": self.cql,
            "children": self.include_children,
        }

    # -- loading ---------------------------------------------------------------------------
    def lazy_load_data(
        self,
        space_key: Optional[str] = None,
        page_ids: Optional[Sequence[str]] = None,
        cql: Optional[str] = None,
        include_children: Optional[bool] = None,
    ) -> Iterable[Document]:
        """The pages of the scope (the reader's, or the one given here), bodies included, one at a time."""
        reader = self._with(space_key, page_ids, cql, include_children)
        for page in reader._walk(BODY_EXPAND, "body"):
            yield page_document(page, self.url, self.id_prefix)

    def load_data(self, *args: Any, **kwargs: Any) -> List[Document]:
        return list(self.lazy_load_data(*args, **kwargs))

    def list_pages(self) -> Dict[str, PageVersion]:
        """Document id -> version, space and ancestors of every page in scope; no bodies are fetched."""
        found: Dict[str, PageVersion] = {}
        for page in self._walk(LIST_EXPAND, "list"):
            page_id = content_id(page, "a page")
            what = f"page {page_id}"
            try:
                check_placement(page, what)
                readers, known, problem = read_restriction(page, what), True, ""
            except ConfluenceError as err:  # a server that dropped or cut the expansion: unknown, never "unrestricted"
                readers, known, problem = None, False, str(err)
            found[document_id(page_id, self.id_prefix)] = PageVersion(
                page_id=page_id,
                version=get_field(page, "version.number", int, what, 0),
                space=get_field(page, "space.key", str, what, ""),
                ancestor_ids=tuple(ancestor_id for ancestor_id, _ in page_ancestors(page, what)),
                title=get_field(page, "title", str, what, ""),
                readers=readers,
                restrictions_known=known,
                restrictions_problem=problem,
            )
        return found

    def fetch(self, page_ids: Sequence[str]) -> List[Document]:
        """These pages with their bodies (page ids, not document ids); pages deleted meanwhile are absent."""
        pages = self._client.pages_by_id(list(page_ids), BODY_EXPAND)
        return [page_document(page, self.url, self.id_prefix) for page in pages]

    # -- the scope -----------------------------------------------------------------------------
    def _with(self, space_key, page_ids, cql, include_children) -> "ConfluenceStorageReader":
        if space_key is None and page_ids is None and cql is None and include_children is None:
            return self
        page_ids = None if page_ids is None else [checked_page_id(i) for i in page_ids]
        changes = {"space_key": space_key, "page_ids": page_ids, "cql": cql, "include_children": include_children}
        updated = self.model_copy(update={k: v for k, v in changes.items() if v is not None})
        updated._client = self._client
        return updated

    def _walk(self, expand: str, kind: str) -> Iterator[Dict[str, Any]]:
        """Every page of the scope once: the space's, the ids', the query's, then their descendants."""
        if not (self.space_key or self.page_ids or self.cql):
            raise ValueError("Nothing to load: give a space key, page ids or a CQL query")
        seen: set = set()
        roots: List[str] = []

        def new(page: Dict[str, Any]) -> bool:
            if page.get("type", "page") != "page" or str(page["id"]) in seen:
                return False
            seen.add(str(page["id"]))
            return True

        if self.space_key:
            yield from filter(new, self._client.space_pages(self.space_key, expand, kind))
        for page_id in self.page_ids:
            page = self._client.page(page_id, expand, kind)
            roots.append(str(page["id"]))
            if new(page):
                yield page
        if self.cql:
            for page in self._client.search(self.cql, expand, kind):
                roots.append(str(page["id"]))
                if new(page):
                    yield page
        if self.include_children:  # the space's pages are all listed already: roots are the ids' and the query's
            queue, visited = list(roots), set()
            while queue:
                parent = queue.pop(0)
                if parent in visited:
                    continue
                visited.add(parent)
                for child in self._client.child_pages(parent, expand, kind):
                    queue.append(str(child["id"]))
                    if new(child):
                        yield child
