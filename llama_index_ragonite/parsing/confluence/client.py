"""``ConfluenceClient``: the few REST API v1 calls the reader needs, with retries and clear errors.

Cloud and Data Center speak the same v1 content API; they differ in the base URL (Cloud ends
in ``/wiki``) and in the credentials: Cloud takes an account e-mail and an API token (basic
auth), Data Center a personal access token (``Authorization: Bearer``). Credentials come from
the arguments or the environment (``CONFLUENCE_URL``, ``CONFLUENCE_USER``,
``CONFLUENCE_API_TOKEN``, ``CONFLUENCE_PAT``) and live only in the request headers: never in a
log line, an exception message or the repr.

Why retries here: a sync of a large space is hundreds of requests, and Confluence Cloud
rate-limits (429 with ``Retry-After``); a transient 5xx must not fail an hourly sync. Retries
are bounded, waits grow exponentially (capped) unless the server names one, and ``sleep`` is
injectable so tests need not wait.
"""

from __future__ import annotations

import email.utils
import logging
import os
import time
from collections import Counter
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence
from urllib.parse import urljoin

import httpx

from llama_index_ragonite.errors import ConfluenceAuthError, ConfluenceError, ConfluenceNotFoundError

logger = logging.getLogger(__name__)

__all__ = ["ENV_VARS", "ConfluenceClient"]

ENV_VARS = {
    "url": "CONFLUENCE_URL",
    "user": "CONFLUENCE_USER",
    "api_token": "CONFLUENCE_API_TOKEN",
    "personal_access_token": "CONFLUENCE_PAT",
}
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_ID_BATCH = 25  # page ids per `id in (...)` search: keeps URLs short and matches Cloud's body-expansion cap


class ConfluenceClient:
    """Authenticated GETs against ``{url}/rest/api`` with pagination, retries and request counts.

    ``requests`` counts the requests by kind (``list``: listings without bodies, ``body``: requests
    that carry page bodies, ``page``: single-page lookups); retries count in ``retries``.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        user: Optional[str] = None,
        api_token: Optional[str] = None,
        personal_access_token: Optional[str] = None,
        timeout: float = 30.0,
        max_retries: int = 5,
        backoff: float = 1.0,
        max_wait: float = 60.0,
        page_limit: int = 50,
        sleep: Callable[[float], None] = time.sleep,
        transport: Optional[httpx.BaseTransport] = None,
    ) -> None:
        url = url or os.environ.get(ENV_VARS["url"])
        if not url:
            raise ValueError(f"No Confluence URL: pass url= (--url) or set {ENV_VARS['url']}")
        parsed = httpx.URL(url)
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError("The Confluence URL must be http(s)://host[/path] (e.g. https://SITE.atlassian.net/wiki)")
        if parsed.userinfo:
            raise ValueError("Put Confluence credentials in the arguments or environment variables, not in the URL")
        self.url = url.rstrip("/")
        self.max_retries, self.backoff, self.max_wait, self.page_limit = max_retries, backoff, max_wait, page_limit
        self._sleep = sleep
        self.requests: Counter = Counter()
        self.retries = 0
        headers = {"Accept": "application/json", "User-Agent": "llama-index-ragonite"}
        pat = personal_access_token or os.environ.get(ENV_VARS["personal_access_token"])
        user = user or os.environ.get(ENV_VARS["user"])
        token = api_token or os.environ.get(ENV_VARS["api_token"])
        auth = None
        if pat:
            headers["Authorization"] = f"Bearer {pat}"
            self.auth_kind = "personal access token"
        elif user and token:
            auth = httpx.BasicAuth(user, token)
            self.auth_kind = "API token"
        elif token:
            raise ValueError(f"An API token needs the account e-mail too: pass user= or set {ENV_VARS['user']}")
        else:
            self.auth_kind = "anonymous"
        self._http = httpx.Client(
            headers=headers, auth=auth, timeout=timeout, transport=transport, follow_redirects=True
        )

    def __repr__(self) -> str:  # never the credentials
        return f"ConfluenceClient(url={self.url!r}, auth={self.auth_kind!r})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "ConfluenceClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- requests -----------------------------------------------------------------------
    def get(self, path: str, params: Optional[Dict[str, Any]] = None, what: str = "", kind: str = "page") -> Any:
        """GET ``path`` (relative to the API, or a ``_links.next`` link); ``what`` names the space or page."""
        url = path if path.startswith("http") else self._absolute(path)
        what = what or "Confluence"
        for attempt in range(self.max_retries + 1):
            self.requests[kind] += 1
            try:
                response = self._http.get(url, params=params)
            except httpx.TransportError as err:
                if attempt == self.max_retries:
                    raise ConfluenceError(
                        f"{what}: {self.url} could not be reached ({type(err).__name__}) after {attempt + 1} attempts"
                    ) from None
                self._wait(attempt, None, f"{type(err).__name__}")
                continue
            if response.status_code in RETRY_STATUSES and attempt < self.max_retries:
                self._wait(attempt, response.headers.get("Retry-After"), f"HTTP {response.status_code}")
                continue
            return self._result(response, what)
        raise AssertionError("unreachable")  # pragma: no cover

    def _absolute(self, path: str) -> str:
        if path.startswith("/rest/"):
            return self.url + path
        return f"{self.url}/rest/api/{path.lstrip('/')}"

    def _wait(self, attempt: int, retry_after: Optional[str], why: str) -> None:
        seconds = _retry_after_seconds(retry_after)
        if seconds is None:
            seconds = self.backoff * 2**attempt
        seconds = min(max(seconds, 0.0), self.max_wait)
        self.retries += 1
        logger.info("Confluence at %s: %s, retrying in %.1f s (retry %d)", self.url, why, seconds, attempt + 1)
        self._sleep(seconds)

    def _result(self, response: httpx.Response, what: str) -> Any:
        status = response.status_code
        if status == 401:
            raise ConfluenceAuthError(
                f"{what}: {self.url} refused the credentials ({self.auth_kind}, HTTP 401); check "
                f"{ENV_VARS['user']} and {ENV_VARS['api_token']} (Cloud) or {ENV_VARS['personal_access_token']} "
                "(Data Center)"
            )
        if status == 403:
            raise ConfluenceAuthError(f"{what}: no permission to read it at {self.url} (HTTP 403)")
        if status == 404:
            raise ConfluenceNotFoundError(f"{what}: not found at {self.url} (HTTP 404), or not visible to you")
        if status >= 400:
            raise ConfluenceError(f"{what}: {self.url} answered HTTP {status}{_server_message(response)}")
        try:
            return response.json()
        except ValueError:
            raise ConfluenceError(f"{what}: {self.url} answered HTTP {status} with a body that is not JSON") from None

    def paginate(
        self, path: str, params: Dict[str, Any], what: str = "", kind: str = "list"
    ) -> Iterator[Dict[str, Any]]:
        """Every result of a listing, page by page: ``_links.next`` when the server gives one, else
        ``start``/``limit`` until a short page."""
        params = {"limit": self.page_limit, "start": 0, **params}
        url: Optional[str] = path
        while url:
            data = self.get(url, params, what, kind)
            results = data.get("results") or []
            yield from results
            links = data.get("_links") or {}
            if links.get("next"):
                url, params = urljoin((links.get("base") or self.url) + "/", links["next"].lstrip("/")), None
            elif not links and results and len(results) >= int(data.get("limit") or self.page_limit):
                params = {**(params or {}), "start": int(data.get("start") or 0) + len(results)}
            else:
                url = None

    # -- the calls the reader makes ----------------------------------------------------------
    def space_pages(self, space_key: str, expand: str, kind: str = "list") -> Iterator[Dict[str, Any]]:
        params = {"spaceKey": space_key, "type": "page", "status": "current", "expand": expand}
        return self.paginate("content", params, f"space {space_key}", kind)

    def search(self, cql: str, expand: str, kind: str = "list") -> Iterator[Dict[str, Any]]:
        return self.paginate("content/search", {"cql": cql, "expand": expand}, f"CQL query {cql!r}", kind)

    def child_pages(self, page_id: str, expand: str, kind: str = "list") -> Iterator[Dict[str, Any]]:
        return self.paginate(f"content/{page_id}/child/page", {"expand": expand}, f"children of page {page_id}", kind)

    def page(self, page_id: str, expand: str, kind: str = "page") -> Dict[str, Any]:
        return self.get(f"content/{page_id}", {"expand": expand}, f"page {page_id}", kind)

    def pages_by_id(self, page_ids: Sequence[str], expand: str) -> List[Dict[str, Any]]:
        """The current pages among ``page_ids``, bodies included, ``_ID_BATCH`` per request (a
        deleted page is simply absent)."""
        found: List[Dict[str, Any]] = []
        for start in range(0, len(page_ids), _ID_BATCH):
            batch = [str(int(i)) for i in page_ids[start : start + _ID_BATCH]]  # ids are numbers: nothing to inject
            found.extend(self.search(f"id in ({','.join(batch)})", expand, kind="body"))
        return found


def _retry_after_seconds(value: Optional[str]) -> Optional[float]:
    """``Retry-After`` as seconds: a number, or an HTTP date (None when absent or unreadable)."""
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()


def _server_message(response: httpx.Response) -> str:
    try:
        message = response.json().get("message")
    except (ValueError, AttributeError):
        return ""
    return f": {str(message)[:200]}" if message else ""
