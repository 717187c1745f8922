"""Who is asking, and the limits every request passes: one ASGI middleware.

* With access tokens configured, every ``/api`` call needs one (``Authorization: Bearer``) or a sign-in
  session's cookie (``signin.py``: the page trades the token for it at ``/api/session``): 401 otherwise.
  A token of the users file (``identities.UsersFile``) is that user, with their groups
  (``scope["state"]["principal"]``); a bare ``--token`` is an owner of its own conversations, without a principal.
* With a trusted proxy (``identities.ProxyTrust``), its user and groups headers name the user, from
  its addresses only: the same headers from another address get 403 kind ``auth``. The address is the
  TCP peer, never one the ASGI server took from a forwarding header (``peers.peer_address``).
* Without tokens (loopback only), the user is a random id in the ``ragonite_user`` cookie
  (HttpOnly, SameSite=Strict), set on the first response that lacks it.
* The Host header must name this server (``ServeConfig.host_names``: the loopback names, the
  bound address, ``--allowed-host``): 400 kind ``host`` otherwise, before anything else. Why:
  a page on another site can rebind its own name to 127.0.0.1 (DNS rebinding) and would then be
  same-origin with a server that has no tokens; its requests still say its own name.
* A request that carries an ``Origin`` header (browsers add it to cross-site requests and to
  every POST) must come from a page of one of those names too: 403 kind ``host`` otherwise, so
  another site's page cannot act for a user whose browser holds the cookie.
* Request bodies over ``MAX_BODY_BYTES`` are refused with 413 before any route reads them.
* Every response, errors included, gets a Content-Security-Policy without inline scripts
  (``/docs`` gets its own, allowing Swagger UI's CDN and the hash of its one inline script),
  ``nosniff``, no framing and no referrer.
"""

from __future__ import annotations

import json
import re
import secrets
from http.cookies import CookieError, SimpleCookie
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple
from urllib.parse import urlsplit

from llama_index_ragonite.serve.config import LOOPBACK_NAMES, MAX_BODY_BYTES, is_loopback
from llama_index_ragonite.serve.identities import ProxyTrust, UsersFile, owner_of, token_owner, token_sha256
from llama_index_ragonite.serve.peers import peer_address
from llama_index_ragonite.serve.signin import SESSION_COOKIE, SignIn

__all__ = ["CSP", "SecurityMiddleware", "USER_COOKIE", "security_headers", "token_user"]

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
USER_COOKIE = "ragonite_user"
SESSION_PATH = "/api/session"  # signing in needs no identity yet
_USER_ID = re.compile(r"^[0-9a-f]{32}$")


def token_user(token: str) -> str:
    """The owner id of a token (its hash: the token itself is never stored)."""
    return token_owner(token_sha256(token))


def cookie_header(name: str, value: str) -> bytes:
    return f"{name}={value}; Path=/; HttpOnly; SameSite=Strict".encode()


class SecurityMiddleware:
    """The checks above around an ASGI app; ``scope["state"]["user"]`` is the caller's owner id."""

    def __init__(
        self,
        app: Any,
        tokens: List[str],
        docs_csp: Callable[[], str],
        host_names: Iterable[str] = LOOPBACK_NAMES,
        users: Optional[UsersFile] = None,
        proxy: Optional[ProxyTrust] = None,
    ) -> None:
        self.app, self.tokens, self.docs_csp = app, list(tokens), docs_csp
        self.host_names = frozenset(host_names)
        self.users, self.proxy = users, proxy
        self.signin = SignIn(self.tokens, users)  # tokens and sign-in sessions (signin.py)

    def known_origin(self, origin: str, host: str) -> bool:
        """Whether an ``Origin`` header is a page of this server: a known name and, on a loopback name,
        the very origin the request went to (its Host header: another program on the same machine is
        another site, while a tunnel or port mapping keeps Origin and Host alike)."""
        parts = urlsplit(origin) if "//" in origin else None
        if parts is None or not self.known_host(parts.netloc):
            return False
        return not is_loopback(parts.hostname or "") or parts.netloc.lower() == host.strip().lower()

    def known_host(self, header: str) -> bool:
        """Whether a Host header (``name[:port]``, ``[v6]:port``) names this server."""
        if "*" in self.host_names:
            return True
        name = header.strip().lower()
        if name.startswith("["):
            name = name[1 : name.find("]")] if "]" in name else ""
        elif name.count(":") == 1:
            name = name.split(":", 1)[0]
        return bool(name) and name in self.host_names

    def identify(
        self, headers: Dict[str, str], client: str, why_unknown: str = ""
    ) -> Tuple[Optional[str], Any, Optional[str]]:
        """(owner id, principal or None, a new cookie user id to set or None); ``_Refused`` says why not.
        ``client``: the TCP peer (``peers.peer_address``; "" with ``why_unknown`` when it cannot be believed)."""
        if self.proxy is not None and self.proxy.claimed(headers):
            refusal = self.proxy.refusal(client, why_unknown)
            if refusal:
                raise _Refused(403, refusal)
            named = self.proxy.user(headers)
            if named is not None:  # a groups header alone names nobody: the caller signs in as anyone else
                return owner_of(named.name), named.principal, None
        if self.signin.required():
            bearer = headers.get("authorization", "")
            given = bearer[7:].strip() if bearer.lower().startswith("bearer ") else None
            session = None if given else _cookies(headers.get("cookie", "")).get(SESSION_COOKIE)
            caller = self.signin.by_token(given) if given else self.signin.by_session(session) if session else None
            if caller is None:
                why = "Wrong access token" if given else "Missing access token: sign in, or send Authorization: Bearer"
                if session:
                    why = "Your session has ended (signed out, expired, or its token was revoked): sign in again"
                raise _Refused(401, why, [(b"www-authenticate", b"Bearer")])
            return caller.owner, caller.principal, None
        user = _cookies(headers.get("cookie", "")).get(USER_COOKIE)
        if user and _USER_ID.match(user):
            return user, None, None
        user = secrets.token_hex(16)
        return user, None, user

    async def __call__(self, scope: Dict[str, Any], receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if not self.known_host(headers.get("host", "")):
            await _error(send, 400, "Unknown Host header: this server answers only to its own names", "host")
            return
        origin = headers.get("origin")
        if origin is not None and not self.known_origin(origin, headers.get("host", "")):
            await _error(send, 403, "Requests from another site's pages are refused (Origin header)", "host")
            return
        path = scope["path"]
        try:
            user, principal, new_user = self.identify(headers, *peer_address(scope))
        except _Refused as refused:
            if refused.status == 403 or (path.startswith("/api") and path != SESSION_PATH):
                await _error(send, refused.status, str(refused), "auth", refused.headers)
                return
            user, principal, new_user = None, None, None  # the page itself needs no identity
        scope.setdefault("state", {}).update(user=user, principal=principal)

        declared = headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            await _error(send, 413, f"Request body over {MAX_BODY_BYTES // 1024} KiB", "input")
            return
        if scope["method"] in ("POST", "PUT", "PATCH"):
            body, more = b"", True
            while more:
                message = await receive()
                if message["type"] != "http.request":
                    break
                body += message.get("body", b"")
                more = message.get("more_body", False)
                if len(body) > MAX_BODY_BYTES:
                    await _error(send, 413, f"Request body over {MAX_BODY_BYTES // 1024} KiB", "input")
                    return
            receive = _replay(body, receive)

        csp = self.docs_csp() if path in ("/docs", "/docs/oauth2-redirect") else CSP

        async def secured(message: Dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                extra = security_headers(csp)
                sent = {name.lower() for name, _ in message.get("headers", [])}
                if path.startswith("/api") and b"cache-control" not in sent:  # answers are private to the user
                    extra.append((b"cache-control", b"no-store"))
                if new_user:
                    extra.append((b"set-cookie", cookie_header(USER_COOKIE, new_user)))
                message = {**message, "headers": list(message.get("headers", [])) + extra}
            await send(message)

        await self.app(scope, receive, secured)


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: Optional[list] = None) -> None:
        super().__init__(message)
        self.status, self.headers = status, headers


def _cookies(header: str) -> Dict[str, str]:
    try:
        return {k: m.value for k, m in SimpleCookie(header).items()}
    except CookieError:  # a malformed Cookie header: as if there were none
        return {}


def _replay(body: bytes, receive: Callable) -> Callable:
    sent = False

    async def replay() -> Dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # then wait for the disconnect, as the server's receive does

    return replay


def security_headers(csp: str = CSP) -> List[Tuple[bytes, bytes]]:
    """The headers every response carries, errors included."""
    return [
        (b"content-security-policy", csp.encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"x-frame-options", b"DENY"),
        (b"referrer-policy", b"no-referrer"),
    ]


async def _error(send: Callable, status: int, message: str, kind: str, headers: Optional[list] = None) -> None:
    body = json.dumps({"error": message, "kind": kind}).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send(
        {"type": "http.response.start", "status": status, "headers": head + security_headers() + (headers or [])}
    )
    await send({"type": "http.response.body", "body": body})
