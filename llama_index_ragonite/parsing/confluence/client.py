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

Why limits here: the server's answers steer the client, so a hostile server or proxy could send
the credentials elsewhere, page forever, drip a body or answer any shape. So requests stay on the
configured origin (redirects followed by hand, there only), listings and runs are capped and
loop-checked, requests and runs have deadlines, bodies a size cap, and every field read is checked
(``shapes.py``): each ends in a ``ConfluenceError`` naming what went wrong, never a traceback.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import time
from collections import Counter
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import httpx
import tenacity

from llama_index_ragonite.errors import ConfluenceAuthError, ConfluenceError, ConfluenceNotFoundError
from llama_index_ragonite.parsing.confluence.origin import SiteOrigin, url_origin
from llama_index_ragonite.parsing.confluence.shapes import (
    checked_page_id,
    content_id,
    expect,
    get_field,
    retry_after_seconds,
    server_message,
)
from llama_index_ragonite.parsing.confluence.watchdog import Watchdog, traced

logger = logging.getLogger(__name__)

__all__ = ["ENV_VARS", "ConfluenceClient", "url_origin"]

ENV_VARS = {
    "url": "CONFLUENCE_URL",
    "user": "CONFLUENCE_USER",
    "api_token": "CONFLUENCE_API_TOKEN",
    "personal_access_token": "CONFLUENCE_PAT",
}
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_ID_BATCH = 25  # page ids per `id in (...)` search: keeps URLs short and matches Cloud's body-expansion cap
_MiB = 1 << 20


class ConfluenceClient:
    """Authenticated GETs against ``{url}/rest/api`` with pagination, retries and request counts.

    ``requests`` counts the HTTP requests by kind (``list``: listings without bodies, ``body``:
    requests that carry page bodies, ``page``: single-page lookups; retries and redirects count
    too); retries count in ``retries``.

    Limits (each breach is a ``ConfluenceError``): ``max_listing_pages`` pages per listing,
    ``max_requests`` requests per run, ``request_deadline`` seconds per request (redirects and
    the body included), ``run_deadline`` seconds per run (None: no limit), ``max_response_bytes``
    per body, ``max_redirects`` same-origin redirects per request. A run starts with the client
    and again at each ``start_run()`` (``ConfluenceSync.run`` calls it).
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
        max_listing_pages: int = 10_000,
        max_requests: int = 100_000,
        request_deadline: float = 120.0,
        run_deadline: Optional[float] = None,
        max_response_bytes: int = 64 * _MiB,
        max_redirects: int = 5,
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
        self.site = SiteOrigin(self.url)
        self.origin = self.site.text
        self.max_retries, self.backoff, self.max_wait, self.page_limit = max_retries, backoff, max_wait, page_limit
        self.timeout, self.max_redirects, self.max_response_bytes = timeout, max_redirects, max_response_bytes
        self.max_listing_pages, self.max_requests = max_listing_pages, max_requests
        self.request_deadline, self.run_deadline = request_deadline, run_deadline
        self._sleep = sleep
        self.requests: Counter = Counter()
        self.retries = 0
        self.start_run()
        headers = {"Accept": "application/json", "User-Agent": "llama-index-ragonite"}
        pat = personal_access_token or os.environ.get(ENV_VARS["personal_access_token"])
        user = user or os.environ.get(ENV_VARS["user"])
        token = api_token or os.environ.get(ENV_VARS["api_token"])
        basic = base64.b64encode(f"{user}:{token}".encode()).decode() if user and token else ""
        self._secrets = tuple(s for s in (pat, token, basic) if s)  # never shown, even when a server echoes them
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
        # Redirects are followed by hand (``_send``): only on the configured origin, where the credentials belong.
        self._http = httpx.Client(
            headers=headers, auth=auth, timeout=timeout, transport=transport, follow_redirects=False
        )

    def __repr__(self) -> str:  # never the credentials
        return f"ConfluenceClient(url={self.url!r}, auth={self.auth_kind!r})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "ConfluenceClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start_run(self) -> None:
        """Start a new run: ``max_requests`` and ``run_deadline`` count from here."""
        self._run_started = time.monotonic()
        self._run_requests = 0

    # -- requests -----------------------------------------------------------------------
    def get(self, path: str, params: Optional[Dict[str, Any]] = None, what: str = "", kind: str = "page") -> Any:
        """GET ``path`` (relative to the API, or an absolute URL on the configured origin); ``what``
        names the space or page. The answer must be a JSON object (``kind="download"``: its bytes, any type)."""
        url = path if path.startswith(("http://", "https://")) else self._absolute(path)
        what = what or "Confluence"
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.max_retries + 1),
            retry=tenacity.retry_if_exception_type(httpx.TransportError)
            | tenacity.retry_if_result(lambda answer: answer[0].status_code in RETRY_STATUSES),
            wait=lambda state: self._wait(state, what),
            sleep=self._sleep,
            retry_error_callback=lambda state: self._last_answer(state, what),
        )
        response, body = retrying(self._send, url, params, what, kind)
        answer = self._result(response, body, what, raw=kind == "download")
        return answer if kind == "download" else expect(answer, dict, "the answer", what)

    def _last_answer(self, state: tenacity.RetryCallState, what: str) -> Tuple[httpx.Response, bytes]:
        """After the last attempt: its answer (a retryable status, read as such), or the error that ends the run."""
        outcome = _outcome(state)
        err = outcome.exception()
        if err is None:
            return outcome.result()
        raise ConfluenceError(
            f"{what}: {self.url} could not be reached or broke off its answer ({type(err).__name__}) "
            f"after {state.attempt_number} attempts"
        ) from None

    def _absolute(self, path: str) -> str:
        if path.startswith("/rest/"):
            return self.url + path
        return f"{self.url}/rest/api/{path.lstrip('/')}"

    def _send(self, url: str, params: Optional[Dict[str, Any]], what: str, kind: str) -> Tuple[httpx.Response, bytes]:
        """One GET and the same-origin redirects it leads to (at most ``max_redirects``).

        Why by hand: httpx would follow a redirect anywhere; here a redirect to another origin
        is an error that names it, and neither the request nor the credentials go there."""
        for _ in range(self.max_redirects + 1):
            self.site.check(url, what, "a request would go to")
            self._before_request(what)
            self.requests[kind] += 1
            self._run_requests += 1
            response, body = self._exchange(url, params, what)
            if not response.is_redirect:
                return response, body
            try:
                url, params = str(response.url.join(response.headers["Location"])), None
            except httpx.InvalidURL:
                raise ConfluenceError(f"{what}: {self.url} redirected to an invalid URL") from None
            self.site.check(url, what, f"{self.url} redirected (HTTP {response.status_code}) to")
        raise ConfluenceError(
            f"{what}: {self.url} redirected more than {self.max_redirects} times (a redirect loop?); not followed further"
        )

    def _exchange(self, url: str, params: Optional[Dict[str, Any]], what: str) -> Tuple[httpx.Response, bytes]:
        """Send one request and read its body as a stream, within the deadline and the size cap.

        Why streaming: the read timeout restarts with every byte, so a server that drips one
        byte every few seconds never times out; the deadline is checked between chunks, and no
        single read may wait longer than the time left when the request starts."""
        deadline, which = time.monotonic() + self.request_deadline, f"request deadline ({self.request_deadline:g} s)"
        run_end = self._run_end()
        if run_end is not None and run_end < deadline:
            deadline, which = run_end, f"run deadline ({self.run_deadline:g} s)"
        timeout = min(self.timeout, max(deadline - time.monotonic(), 0.001))
        request = self._http.build_request("GET", url, params=params, timeout=timeout, extensions=traced(self._http))
        late = ConfluenceError(f"{what}: {self.url} did not finish its answer within the {which}; given up")
        with Watchdog(self._http, deadline - time.monotonic()) as watchdog:  # the headers, however slow
            try:
                response = self._http.send(request, stream=True)
            except (httpx.TransportError, RuntimeError):
                if watchdog.fired:
                    raise late from None
                raise
            try:
                declared = response.headers.get("Content-Length", "")
                if declared.isdigit() and int(declared) > self.max_response_bytes:
                    raise self._too_big(what, f"announced {int(declared):,} bytes")
                chunks: List[bytes] = []
                size = 0
                for chunk in _decoded(response, what, self.url):
                    if time.monotonic() > deadline:
                        raise late
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > self.max_response_bytes:
                        raise self._too_big(what, "sent more")
            except (httpx.TransportError, ConfluenceError):
                if watchdog.fired:
                    raise late from None
                raise
            finally:
                response.close()
        return response, b"".join(chunks)

    def _too_big(self, what: str, how: str) -> ConfluenceError:
        return ConfluenceError(
            f"{what}: {self.url} {how}: the answer exceeds max_response_bytes ({self.max_response_bytes:,} bytes)"
        )

    def _run_end(self) -> Optional[float]:
        return None if self.run_deadline is None else self._run_started + self.run_deadline

    def _before_request(self, what: str) -> None:
        """The run's limits, checked before every request."""
        run_end = self._run_end()
        if run_end is not None and time.monotonic() >= run_end:
            raise ConfluenceError(
                f"{what}: the run deadline ({self.run_deadline:g} s) passed; no more requests to {self.url}"
            )
        if self._run_requests >= self.max_requests:
            raise ConfluenceError(
                f"{what}: {self._run_requests:,} requests to {self.url} in this run, the most max_requests allows; stopped"
            )

    def _wait(self, state: tenacity.RetryCallState, what: str) -> float:
        """Seconds before the next attempt: the server's ``Retry-After``, else exponential backoff, capped;
        a ``ConfluenceError`` when waiting would pass the run deadline."""
        attempt, outcome = state.attempt_number - 1, _outcome(state)
        err = outcome.exception()
        response = None if err is not None else outcome.result()[0]
        why = f"HTTP {response.status_code}" if response is not None else type(err).__name__
        seconds = retry_after_seconds(None if response is None else response.headers.get("Retry-After"))
        if seconds is None or seconds != seconds:  # absent, unreadable or NaN
            seconds = self.backoff * 2**attempt
        seconds = min(max(seconds, 0.0), self.max_wait)
        run_end = self._run_end()
        if run_end is not None and time.monotonic() + seconds >= run_end:
            raise ConfluenceError(
                f"{what}: {self.url}: {why}; retrying in {seconds:.1f} s would pass the run deadline "
                f"({self.run_deadline:g} s)"
            )
        self.retries += 1
        logger.info("Confluence at %s: %s, retrying in %.1f s (retry %d)", self.url, why, seconds, attempt + 1)
        return seconds

    def _result(self, response: httpx.Response, body: bytes, what: str, raw: bool = False) -> Any:
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
        if status >= 300:
            raise ConfluenceError(f"{what}: {self.url} answered HTTP {status}{server_message(body, self._secrets)}")
        try:
            return body if raw else json.loads(body)
        except UnicodeDecodeError:
            problem = "JSON that is not valid UTF-8"
        except ValueError:
            kind = response.headers.get("Content-Type", "no content type").split(";")[0]
            problem = f"a body that is not JSON ({kind}{': a login page?' if 'html' in kind else ''})"
        except RecursionError:
            problem = "JSON nested too deeply to read"
        raise ConfluenceError(f"{what}: {self.url} answered HTTP {status} with {problem}")

    def paginate(
        self, path: str, params: Dict[str, Any], what: str = "", kind: str = "list", id_of: Callable = content_id
    ) -> Iterator[Dict[str, Any]]:
        """Every result of a listing, page by page: ``_links.next`` when the server gives one, else
        ``start``/``limit`` until a short page.

        Each result must be an object with an ``id`` ``id_of`` accepts (digits: ``content_id``). A listing ends with a
        ``ConfluenceError`` when it loops (a ``next`` that leads to a page already read, or two pages
        in a row whose results were all listed before: a server that ignores ``start``) or runs past
        ``max_listing_pages`` pages. A result listed before is not yielded again."""
        what = what or "Confluence"
        query: Optional[Dict[str, Any]] = {"limit": self.page_limit, "start": 0, **params}
        url: Optional[str] = self._absolute(path)
        read, listed, repeats = set[str](), set[str](), 0
        while url:
            key = str(httpx.URL(url, params=query)) if query else url
            if key in read:
                raise ConfluenceError(f"{what}: pagination loop: {self.url} leads back to a listing page already read")
            if len(read) >= self.max_listing_pages:
                raise ConfluenceError(
                    f"{what}: the listing goes on past max_listing_pages ({self.max_listing_pages:,} pages); stopped"
                )
            read.add(key)
            data = self.get(url, query, what, kind)
            self.site.note_base(data, what)
            results = get_field(data, "results", list, what, [])
            ids = [id_of(result, what, f"results[{i}]") for i, result in enumerate(results)]
            repeats = repeats + 1 if ids and listed.issuperset(ids) else 0  # once: an edit shifted the listing
            if repeats >= 2:
                raise ConfluenceError(f"{what}: pagination loop: {self.url} answered the same results again")
            yield from (result for result, i in zip(results, ids) if i not in listed)
            listed.update(ids)
            next_link = get_field(data, "_links.next", str, what)
            full = bool(results) and len(results) >= get_field(data, "limit", int, what, 0)
            if next_link:
                url, query = self.site.resolve_next(next_link, what), None
            elif full and not get_field(data, "_links", dict, what):  # no links at all: page by start/limit
                start = get_field(data, "start", int, what, 0)
                query = {**(query or {}), "start": start + len(results)}
            else:
                url = None

    # -- the calls the reader makes ----------------------------------------------------------
    def space_pages(self, space_key: str, expand: str, kind: str = "list") -> Iterator[Dict[str, Any]]:
        params = {"spaceKey": space_key, "type": "page", "status": "current", "expand": expand}
        return self.paginate("content", params, f"space {space_key}", kind)

    def search(self, cql: str, expand: str, kind: str = "list") -> Iterator[Dict[str, Any]]:
        return self.paginate("content/search", {"cql": cql, "expand": expand}, f"CQL query {cql!r}", kind)

    def child_pages(self, page_id: str, expand: str, kind: str = "list") -> Iterator[Dict[str, Any]]:
        page_id = checked_page_id(page_id)  # it goes into the path
        return self.paginate(f"content/{page_id}/child/page", {"expand": expand}, f"children of page {page_id}", kind)

    def page(self, page_id: str, expand: str, kind: str = "page") -> Dict[str, Any]:
        page_id = checked_page_id(page_id)  # it goes into the path
        what = f"page {page_id}"
        page = self.get(f"content/{page_id}", {"expand": expand}, what, kind)
        self.site.note_base(page, what)
        content_id(page, what)
        return page

    def pages_by_id(self, page_ids: Sequence[str], expand: str) -> List[Dict[str, Any]]:
        """The current pages among ``page_ids``, bodies included, ``_ID_BATCH`` per request (a
        deleted page is simply absent)."""
        found: List[Dict[str, Any]] = []
        for start in range(0, len(page_ids), _ID_BATCH):
            batch = [str(int(i)) for i in page_ids[start : start + _ID_BATCH]]  # ids are numbers: nothing to inject
            found.extend(self.search(f"id in ({','.join(batch)})", expand, kind="body"))
        return found


def _decoded(response: httpx.Response, what: str, site: str) -> Iterator[bytes]:
    try:
        yield from response.iter_bytes()
    except httpx.DecodingError:
        encoding = response.headers.get("Content-Encoding", "")
        raise ConfluenceError(f"{what}: {site} sent a body that cannot be decoded as {encoding!r}") from None


def _outcome(state: tenacity.RetryCallState) -> Any:
    """The attempt's outcome (tenacity sets it before it asks for a wait or gives up)."""
    assert state.outcome is not None
    return state.outcome
