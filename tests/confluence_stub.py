"""A Confluence REST API v1 stub on 127.0.0.1, for tests and the ``confluence_sync`` experiment
(``python benchmarks/run.py confluence_sync``).

It serves ``/wiki/rest/api/content`` (a space's pages), ``/content/search?cql=`` (a small CQL:
``space``, ``type``, ``id in (…)``, ``ancestor``, ``parent``, ``label`` joined by ``and``),
``/content/{id}`` and ``/content/{id}/child/page`` in the real response shapes: ``results``,
``start``, ``limit``, ``size``, ``_links`` (``base``, ``context``, ``next`` while more results
follow), and per page ``body.storage.value``, ``version.number``, ``ancestors``, ``space``,
``metadata.labels``, ``history.lastUpdated`` — each only when ``expand`` asks for it. Pages are
built from ConfQuestions pages (read by path, never copied) and the sample wiki.

It checks credentials (basic auth or a bearer token), denies spaces or pages (403), answers 404
for unknown ones, plays scripted failures (429 with ``Retry-After``, 500, 503) and can break body
requests from some point on; pages change, move or disappear between syncs (``edit``, ``move``,
``delete``). ``requests`` counts requests by kind: ``list`` (no bodies asked), ``body`` or ``download``.

Attachments (``attach``, ``change_attachment``, ``delete_attachment``): ``/content/{id}/child/attachment``
lists a page's (``results[]`` with ``id`` ``att…``, ``title``, ``version.number``, ``extensions.mediaType``
and ``fileSize``, ``_links.download`` relative to the base URL) and ``/download/attachments/{page}/{name}``
serves the bytes (a page denied: 403; ``failing_downloads``: attachment ids answered 500). ``routes``
counts requests by route (``attachments``, ``download``).

Comments (``comment``, ``edit_comment``, ``delete_comment``): ``/content/{id}/child/comment`` lists a page's
(``depth=all``: replies too, else top-level ones only) with ``body.storage``, ``version``, ``history.createdBy``,
``extensions.location`` and, when expanded, ``extensions.inlineProperties`` and ``extensions.resolution``;
``routes["comments"]`` counts these listings.

A hostile server: ``hostile(handler, status, payload)`` sees every answer before it is sent and
returns the payload to send instead (any JSON value: a wrong shape, a ``next`` elsewhere), or
``SENT`` when it answered itself through ``handler.send_raw`` (a redirect, a drip, a truncated
or oversized body, non-JSON) or not at all (a hang). Handlers that wait or drip end when the
stub stops (``stopping``), so no test waits on them.

    with ConfluenceStub(user="me@example.com", token="t0k3n") as stub:
        stub.add_pages(confquestions_pages(folder, 10, "OXT"))
        ConfluenceClient(stub.url, user="me@example.com", api_token="t0k3n")
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from harness.llm_server import LoopbackServer

__all__ = [
    "SENT",
    "ConfluenceStub",
    "StubAttachment",
    "StubComment",
    "StubPage",
    "confquestions_pages",
    "sample_wiki_pages",
]

CONTEXT = "/wiki"
API = CONTEXT + "/rest/api"
SENT = object()  # returned by a ``hostile`` hook that wrote the answer itself (or none)


@dataclass
class StubPage:
    id: str
    title: str
    body: str
    space: str
    parent: Optional[str] = None
    version: int = 1
    labels: Tuple[str, ...] = ()
    when: str = "2024-11-15T10:00:00.000Z"
    readers: Optional[Tuple[Tuple[str, ...], Tuple[str, ...]]] = None  # its read restriction: (user ids, groups)


@dataclass
class StubAttachment:
    id: str
    page: str
    title: str
    data: bytes
    media_type: str
    version: int = 1


@dataclass
class StubComment:
    id: str
    page: str
    body: str
    author: str
    location: str = "footer"  # or "inline"
    resolution: str = ""  # an inline comment's: "open", "resolved", "reopened"
    selection: str = ""  # an inline comment's highlighted page text
    parent: Optional[str] = None  # a reply's comment
    version: int = 1
    when: str = "2025-02-01T09:30:00.000Z"


@dataclass
class _Failure:
    status: int
    retry_after: Optional[str] = None
    kind: Optional[str] = None  # only requests of this kind ("list", "body"), or any


@dataclass
class ConfluenceStub(LoopbackServer):
    """The server; ``url`` is the site's base URL (Cloud style, ending in ``/wiki``)."""

    user: Optional[str] = None
    token: Optional[str] = None  # with user: basic auth; alone: a bearer personal access token
    max_limit: int = 50  # the server caps ``limit`` like Confluence does
    pages: Dict[str, StubPage] = field(default_factory=dict)
    denied: set = field(default_factory=set)  # space keys and page ids answered with 403
    requests: Counter = field(default_factory=Counter)
    log: List[Tuple[str, str, Dict[str, str]]] = field(default_factory=list)  # (kind, path, headers)
    failing_bodies_after: Optional[int] = None  # body requests after this many answer 500
    hostile: Optional[Callable[["_Handler", int, Any], Any]] = None  # see the module docstring
    # who may view each space: (user ids, groups); a space not named here: the group "confluence-users"
    space_readers: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...]]] = field(default_factory=dict)
    space_admin: bool = True  # False: spaces are answered without their permissions, as to a non-admin
    memberships: Dict[str, Tuple[str, ...]] = field(default_factory=dict)  # user id -> groups (user/memberof)
    # a proxy that trims expansions: "user" or "group" (that part of a page's read restriction answered as
    # ``{"_expandable": …}``), "parts" (both parts absent, named in ``restrictions._expandable``, Confluence's own
    # form), "ancestors" (a page's ancestors left out), "space" (each space permission's subjects unexpanded);
    # page trims apply to ``trimmed_pages`` (page ids; None: every page)
    trimmed: set = field(default_factory=set)
    trimmed_pages: Optional[set] = None
    restriction_limit: int = 100  # users (and groups) of a read restriction per answer; more: ``_links.next``
    attachments: Dict[str, StubAttachment] = field(default_factory=dict)  # attachment id -> attachment
    failing_downloads: set = field(default_factory=set)  # attachment ids whose download answers 500
    routes: Counter = field(default_factory=Counter)  # requests by route: "attachments", "download", "comments"
    comments: Dict[str, StubComment] = field(default_factory=dict)  # comment id -> comment
    next_attachment: int = 9001
    next_comment: int = 50001
    thread_name = "confluence-stub"
    poll_interval = 0.05
    block_on_close = False

    def __post_init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._failures: deque = deque()
        self.stopping = threading.Event()

    def stop(self) -> None:
        self.stopping.set()  # ends handlers that drip or hang
        super().stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{CONTEXT}"

    # -- content ---------------------------------------------------------------------------
    def add_pages(self, pages: Iterable[StubPage]) -> "ConfluenceStub":
        for page in pages:
            self.pages[page.id] = page
        return self

    def edit(self, page_id: str, body: Optional[str] = None, title: Optional[str] = None) -> None:
        page = self.pages[page_id]
        page.body, page.title = body if body is not None else page.body, title or page.title
        page.version += 1
        page.when = f"2025-01-{page.version:02d}T10:00:00.000Z"

    def move(self, page_id: str, parent: Optional[str] = None, space: Optional[str] = None) -> None:
        """Moving keeps the version (as in Confluence); the ancestors (and maybe the space) change."""
        page = self.pages[page_id]
        page.parent, page.space = parent, space or page.space

    def delete(self, page_id: str) -> None:
        del self.pages[page_id]

    def attach(self, page_id: str, title: str, data: bytes, media_type: str) -> str:
        """A new attachment on ``page_id``; its id (``att…``)."""
        att_id, self.next_attachment = f"att{self.next_attachment}", self.next_attachment + 1  # never reused
        self.attachments[att_id] = StubAttachment(att_id, page_id, title, data, media_type)
        return att_id

    def change_attachment(self, att_id: str, data: bytes) -> None:
        self.attachments[att_id].data = data
        self.attachments[att_id].version += 1

    def delete_attachment(self, att_id: str) -> None:
        del self.attachments[att_id]

    def comment(self, page_id: str, body: str, author: str, **fields: Any) -> str:
        """A new comment on ``page_id`` (``location``, ``resolution``, ``selection``, ``parent``); its id."""
        comment_id, self.next_comment = str(self.next_comment), self.next_comment + 1  # never reused
        self.comments[comment_id] = StubComment(comment_id, page_id, body, author, **fields)
        return comment_id

    def edit_comment(self, comment_id: str, body: Optional[str] = None, resolution: Optional[str] = None) -> None:
        comment = self.comments[comment_id]
        comment.body, comment.resolution = body or comment.body, resolution or comment.resolution
        comment.version += 1
        comment.when = f"2025-03-{comment.version:02d}T09:30:00.000Z"

    def delete_comment(self, comment_id: str) -> None:
        del self.comments[comment_id]

    def comment_json(self, comment: StubComment, expand: Sequence[str]) -> Dict[str, Any]:
        user = {"type": "known", "accountId": f"acc-{comment.author.lower()}", "displayName": comment.author}
        data: Dict[str, Any] = {
            "id": comment.id,
            "type": "comment",
            "status": "current",
            "title": f"Re: {self.pages[comment.page].title}",
            "extensions": {"location": comment.location},
            "_links": {"webui": f"/pages/viewpage.action?pageId={comment.page}&focusedCommentId={comment.id}"},
        }
        if "body.storage" in expand:
            data["body"] = {"storage": {"value": comment.body, "representation": "storage"}}
        if "version" in expand:
            data["version"] = {"number": comment.version, "when": comment.when, "by": user}
        if "history" in expand:
            data["history"] = {"latest": True, "createdBy": user, "createdDate": "2025-02-01T09:30:00.000Z"}
        if "extensions.inlineProperties" in expand and comment.location == "inline":
            data["extensions"]["inlineProperties"] = {"originalSelection": comment.selection, "markerRef": "m1"}
        if "extensions.resolution" in expand and comment.location == "inline":
            data["extensions"]["resolution"] = {"status": comment.resolution or "open"}
        return data

    def attachment_json(self, att: StubAttachment) -> Dict[str, Any]:
        download = f"/download/attachments/{att.page}/{quote(att.title)}?version={att.version}&api=v2"
        return {
            "id": att.id,
            "type": "attachment",
            "status": "current",
            "title": att.title,
            "version": {"number": att.version, "when": "2025-01-01T10:00:00.000Z"},
            "extensions": {"mediaType": att.media_type, "fileSize": len(att.data), "comment": ""},
            "_links": {"download": download, "webui": f"/pages/viewpageattachments.action?pageId={att.page}"},
        }

    def ancestors(self, page: StubPage) -> List[StubPage]:
        chain, parent = [], page.parent
        while parent and parent in self.pages:
            chain.insert(0, self.pages[parent])
            parent = self.pages[parent].parent
        return chain

    # -- faults ----------------------------------------------------------------------------------
    def fail(self, *statuses: int, retry_after: Optional[str] = None, kind: Optional[str] = None) -> None:
        """The next requests (of ``kind``, or any) answer these statuses, one each."""
        with self._lock:
            self._failures.extend(_Failure(s, retry_after, kind) for s in statuses)

    def _next_failure(self, kind: str) -> Optional[_Failure]:
        with self._lock:
            self.requests[kind] += 1
            if kind == "body" and self.failing_bodies_after is not None:
                if self.requests["body"] > self.failing_bodies_after:
                    return _Failure(500)
            for failure in self._failures:
                if failure.kind in (None, kind):
                    self._failures.remove(failure)
                    return failure
        return None

    def _handler(self) -> type:
        return type("Handler", (_Handler,), {"stub": self})

    # -- responses ------------------------------------------------------------------------------
    def content(self, page: StubPage, expand: Sequence[str]) -> Dict[str, Any]:
        data: Dict[str, Any] = {
            "id": page.id,
            "type": "page",
            "status": "current",
            "title": page.title,
            "_links": {
                "webui": f"/spaces/{page.space}/pages/{page.id}/{quote(page.title.replace(' ', '+'), safe='+')}",
                "self": f"{self.url}/rest/api/content/{page.id}",
                "tinyui": f"/x/{page.id}",
            },
            "_expandable": {"body": "", "version": "", "ancestors": "", "space": ""},
        }
        if "body.storage" in expand or "body" in expand:
            data["body"] = {"storage": {"value": page.body, "representation": "storage"}}
        if "version" in expand:
            data["version"] = {"number": page.version, "when": page.when, "minorEdit": False}
        trimmed = self.trimmed if self.trimmed_pages is None or page.id in self.trimmed_pages else set()
        if "ancestors" in expand and "ancestors" not in trimmed:
            data["ancestors"] = [{"id": a.id, "type": "page", "title": a.title} for a in self.ancestors(page)]
        if "space" in expand:
            data["space"] = {"key": page.space, "name": f"Space {page.space}", "type": "global"}
        if "metadata.labels" in expand:
            labels = [{"prefix": "global", "name": name, "id": str(i)} for i, name in enumerate(page.labels)]
            data["metadata"] = {"labels": {"results": labels, "start": 0, "limit": 200, "size": len(labels)}}
        if "restrictions.read.restrictions.user" in expand:
            users, groups = page.readers or ((), ())
            link = f"/rest/api/content/{page.id}/restriction/byOperation/read"
            restrictions = _subjects(users, groups, self.restriction_limit, link)
            restrictions = _trim(restrictions, trimmed, link)
            data["restrictions"] = {"read": {"operation": "read", "restrictions": restrictions}}
        if "history.lastUpdated" in expand:
            data["history"] = {"latest": True, "lastUpdated": {"when": page.when, "number": page.version}}
        return data

    def search(self, cql: str) -> List[StubPage]:
        found = sorted(self.pages.values(), key=lambda p: int(p.id))
        for clause in re.split(r"\s+and\s+", cql.strip(), flags=re.I):
            listed = re.fullmatch(r"id\s+in\s*\(([^)]*)\)", clause.strip(), re.I)
            if listed:
                ids = {i.strip().strip('"') for i in listed.group(1).split(",")}
                found = [p for p in found if p.id in ids]
                continue
            match = re.fullmatch(r'(\w+)\s*=\s*"?([^"]*)"?', clause.strip())
            if not match:
                raise ValueError(f"CQL not understood by the stub: {clause!r}")
            key, value = match.group(1).lower(), match.group(2)
            if key == "type":
                found = [p for p in found if value == "page"]
            elif key == "space":
                found = [p for p in found if p.space == value]
            elif key == "id":
                found = [p for p in found if p.id == value]
            elif key == "parent":
                found = [p for p in found if p.parent == value]
            elif key == "ancestor":
                found = [p for p in found if value in {a.id for a in self.ancestors(p)}]
            elif key == "label":
                found = [p for p in found if value in p.labels]
            else:
                raise ValueError(f"CQL field not known to the stub: {key!r}")
        return found


class _Handler(BaseHTTPRequestHandler):
    stub: ConfluenceStub
    server_version = "confluence-stub/1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        stub = self.stub
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        expand = [e.strip() for e in query.get("expand", "").split(",") if e.strip()]
        kind = "body" if any(e.startswith("body") for e in expand) else "list"
        if parts.path.startswith(CONTEXT + "/download/"):
            kind = "download"
        stub.log.append((kind, self.path, {k.lower(): v for k, v in self.headers.items()}))
        failure = stub._next_failure(kind)
        if failure is not None:
            headers = {"Retry-After": failure.retry_after} if failure.retry_after is not None else {}
            return self._json(failure.status, {"statusCode": failure.status, "message": "scripted"}, headers)
        if not self._authorized():
            return self._json(401, {"statusCode": 401, "message": "Unauthorized; scope does not match"})
        path = parts.path
        if kind == "download":
            return self._download(path[len(CONTEXT + "/download/attachments/") :].split("/"))
        if path.startswith(API + "/space/"):
            return self._space(path[len(API + "/space/") :].strip("/"), expand)
        if path == API + "/user/memberof":
            return self._member_of(query)
        if not path.startswith(API + "/content"):
            return self._json(404, {"statusCode": 404, "message": f"No route {path}"})
        rest = path[len(API + "/content") :].strip("/").split("/")
        try:
            if rest == [""]:
                space = query.get("spaceKey", "")
                if space in stub.denied:
                    return self._json(403, {"statusCode": 403, "message": "Not permitted"})
                if space and not any(p.space == space for p in stub.pages.values()):
                    return self._json(404, {"statusCode": 404, "message": f"No space with key : {space}"})
                pages = [p for p in sorted(stub.pages.values(), key=lambda p: int(p.id)) if p.space == space]
                return self._listing(pages, query, expand, "/rest/api/content")
            if rest == ["search"]:
                pages = [p for p in stub.search(query.get("cql", "")) if p.id not in stub.denied]
                return self._listing(pages, query, expand, "/rest/api/content/search")
            page = stub.pages.get(rest[0])
            if rest[0] in stub.denied or (page and page.space in stub.denied):
                return self._json(403, {"statusCode": 403, "message": "Not permitted"})
            if page is None:
                return self._json(404, {"statusCode": 404, "message": f"No content found with id : {rest[0]}"})
            if rest[1:] == ["child", "page"]:
                children = [p for p in sorted(stub.pages.values(), key=lambda p: int(p.id)) if p.parent == page.id]
                return self._listing(children, query, expand, f"/rest/api/content/{page.id}/child/page")
            if rest[1:] == ["child", "attachment"]:
                stub.routes["attachments"] += 1
                atts = [a for a in stub.attachments.values() if a.page == page.id]
                return self._listing(atts, query, expand, f"/rest/api/content/{page.id}/child/attachment")
            if rest[1:] == ["child", "comment"]:
                stub.routes["comments"] += 1
                replies = query.get("depth") == "all"
                talk = [c for c in stub.comments.values() if c.page == page.id and (replies or c.parent is None)]
                return self._listing(talk, query, expand, f"/rest/api/content/{page.id}/child/comment")
            if rest[1:]:
                return self._json(404, {"statusCode": 404, "message": f"No route {path}"})
            return self._json(200, stub.content(page, expand))
        except ValueError as err:
            return self._json(400, {"statusCode": 400, "message": str(err)})

    def _download(self, where: List[str]) -> None:
        stub = self.stub
        stub.routes["download"] += 1
        page = stub.pages.get(where[0])
        if page is None or where[0] in stub.denied or page.space in stub.denied:
            return self._json(404 if page is None else 403, {"statusCode": 403, "message": "Not permitted"})
        found = [a for a in stub.attachments.values() if a.page == page.id and quote(a.title) == "/".join(where[1:])]
        if not found:
            return self._json(404, {"statusCode": 404, "message": "No attachment"})
        if found[0].id in stub.failing_downloads:
            return self._json(500, {"statusCode": 500, "message": "broken"})
        self.send_raw(
            200, [found[0].data], {"Content-Type": found[0].media_type, "Content-Length": str(len(found[0].data))}
        )

    def _space(self, key: str, expand: List[str]) -> None:
        stub = self.stub
        if key in stub.denied:
            return self._json(403, {"statusCode": 403, "message": "Not permitted"})
        if not any(p.space == key for p in stub.pages.values()):
            return self._json(404, {"statusCode": 404, "message": f"No space with key : {key}"})
        data: Dict[str, Any] = {"id": 1, "key": key, "name": f"Space {key}", "type": "global"}
        if "permissions" in expand and stub.space_admin:
            users, groups = stub.space_readers.get(key, ((), ("confluence-users",)))
            read = {"operation": "read", "targetType": "space"}
            subjects = _subjects(users, groups)
            if "space" in stub.trimmed:
                subjects = {
                    "_expandable": {"user": f"/rest/api/space/{key}/user", "group": f"/rest/api/space/{key}/group"}
                }
            data["permissions"] = [
                {"operation": read, "anonymousAccess": False, "subjects": subjects},
                {
                    "operation": {"operation": "administer", "targetType": "space"},
                    "subjects": _subjects((), ("admins",)),
                },
            ]
        return self._json(200, data)

    def _member_of(self, query: Dict[str, str]) -> None:
        user = query.get("accountId") or query.get("username") or query.get("key") or ""
        if user not in self.stub.memberships:
            return self._json(404, {"statusCode": 404, "message": f"No user found with id : {user}"})
        start, limit = int(query.get("start", 0)), min(int(query.get("limit", 200)), self.stub.max_limit)
        names = self.stub.memberships[user][start : start + limit]
        results = [{"type": "group", "name": n, "id": f"g-{n}"} for n in names]
        return self._json(200, {"results": results, "start": start, "limit": limit, "size": len(results)})

    def _authorized(self) -> bool:
        stub, header = self.stub, self.headers.get("Authorization", "")
        if stub.token is None:
            return True
        if stub.user is None:
            return header == f"Bearer {stub.token}"
        expected = base64.b64encode(f"{stub.user}:{stub.token}".encode()).decode()
        return header == f"Basic {expected}"

    def _listing(self, pages: List[Any], query: Dict[str, str], expand: List[str], route: str) -> None:
        stub = self.stub
        start = int(query.get("start", 0))
        limit = min(int(query.get("limit", 25)), stub.max_limit)
        chunk = pages[start : start + limit]
        links = {"base": stub.url, "context": CONTEXT, "self": f"{stub.url}{route}?{urlencode(query)}"}
        if start + limit < len(pages):
            links["next"] = f"{route}?{urlencode({**query, 'start': start + limit, 'limit': limit})}"
        body = {
            "results": [_result_json(stub, p, expand) for p in chunk],
            "start": start,
            "limit": limit,
            "size": len(chunk),
            "_links": links,
        }
        if route.endswith("search"):
            body["totalSize"] = len(pages)
        self._json(200, body)

    def _json(self, status: int, payload: Any, headers: Optional[Dict[str, str]] = None) -> None:
        if self.stub.hostile is not None:
            payload = self.stub.hostile(self, status, payload)
            if payload is SENT:
                return
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def send_raw(
        self,
        status: int,
        chunks: Iterable[bytes] = (),
        headers: Optional[Dict[str, str]] = None,
        delay: float = 0.0,
        chunked: bool = False,
    ) -> None:
        """Answer ``status`` with ``headers`` and the body ``chunks`` as given (no Content-Length unless
        in ``headers``; ``chunked``: chunked transfer encoding), waiting ``delay`` seconds before each
        chunk; stops quietly when the client hangs up or the stub stops. The connection closes after."""
        self.close_connection = True
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            self.wfile.flush()
            for chunk in chunks:
                if delay and self.stub.stopping.wait(delay):
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                self.wfile.flush()
        except OSError:
            pass  # the client gave up


def _result_json(stub: ConfluenceStub, item: Any, expand: List[str]) -> Dict[str, Any]:
    if isinstance(item, StubAttachment):
        return stub.attachment_json(item)
    if isinstance(item, StubComment):
        return stub.comment_json(item, expand)
    return stub.content(item, expand)


# -- page sets ------------------------------------------------------------------------------------
def _subjects(users: Sequence[str], groups: Sequence[str], limit: int = 100, link: str = "") -> Dict[str, Any]:
    """Users and groups in the API's shape (a Cloud user: ``accountId``; Data Center adds ``username``), at
    most ``limit`` of each, with ``_links.next`` (under ``link``) when more follow."""
    user_results = [{"type": "known", "accountId": u, "username": u, "displayName": u.title()} for u in users]
    group_results = [{"type": "group", "name": g, "id": f"g-{g}"} for g in groups]
    parts: Dict[str, Any] = {}
    for kind, results in (("user", user_results), ("group", group_results)):
        chunk = results[:limit]
        parts[kind] = {"results": chunk, "start": 0, "limit": limit, "size": len(chunk)}
        if len(results) > limit:
            parts[kind]["_links"] = {"next": f"{link}/{kind}?start={limit}&limit={limit}"}
    return parts


def _trim(restrictions: Dict[str, Any], trims: set, link: str) -> Dict[str, Any]:
    """A read restriction as a proxy that dropped some expansions answers it (``ConfluenceStub.trimmed``)."""
    if "parts" in trims:
        return {"_expandable": {kind: f"{link}/{kind}" for kind in ("user", "group")}}
    return {
        kind: {"_expandable": {"results": f"{link}/{kind}"}} if kind in trims else value
        for kind, value in restrictions.items()
    }


def confquestions_pages(folder: Path, count: int, space: str = "OXT", fan_out: int = 8) -> List[StubPage]:
    """``count`` ConfQuestions pages (read from ``folder``, the dataset's ``documents``) as one space:
    the page ids of their URLs, the first page the root, each later page a child of an earlier one."""
    files = sorted(Path(folder).glob("confluence-*.json"))[:count]
    pages: List[StubPage] = []
    for i, file in enumerate(files):
        record = json.loads(file.read_text(encoding="utf-8"))
        found = re.search(r"/pages/(\d+)", record.get("url", ""))
        page_id = found.group(1) if found else str(900000 + i)
        parent = pages[(i - 1) // fan_out].id if i else None
        labels = ("confquestions", record.get("space", "").lstrip("~") or "wiki")
        pages.append(StubPage(page_id, record["title"], record["content"], space, parent, labels=labels))
    return pages


def sample_wiki_pages(folder: Path, space: str = "AUR", first_id: int = 1001) -> List[StubPage]:
    """The sample wiki's pages (``examples/sample_wiki``) under a home page of their own."""
    home = StubPage(str(first_id), "Aurora home", "<p>Welcome to the Aurora wiki.</p>", space)
    pages = [home]
    for i, file in enumerate(sorted(Path(folder).glob("*.html")), start=1):
        html = file.read_text(encoding="utf-8")
        title = re.search(r"<title>(.*?)</title>", html, re.S)
        body = re.search(r"<body>(.*)</body>", html, re.S)
        pages.append(
            StubPage(
                str(first_id + i),
                title.group(1).strip() if title else file.stem,
                body.group(1).strip() if body else html,
                space,
                parent=home.id,
                labels=(file.stem,),
            )
        )
    return pages
