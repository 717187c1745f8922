"""``create_app(config)``: the FastAPI app of ``ragonite serve`` (API, page, OpenAPI docs).

The page is ``static/index.html`` at ``/`` (its ``<body>`` says how the caller signs in: ``sign_in_mode``)
with its modules under ``/static/``; the API is
``routes.py`` under ``/api``; ``auth.SecurityMiddleware`` wraps everything (tokens or cookie
users, body limit, CSP). ``/docs`` is FastAPI's Swagger UI, served with its own CSP that
allows its CDN and the SHA-256 of its one inline script, and nothing else inline.
"""

from __future__ import annotations

import base64
import hashlib
import re
import sqlite3
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Callable, Optional

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from llama_index_ragonite.errors import RagoniteError
from llama_index_ragonite.serve.auth import SecurityMiddleware
from llama_index_ragonite.serve.config import ServeConfig
from llama_index_ragonite.serve.errors import error_payload
from llama_index_ragonite.serve.limits import TooManyTurns, TurnSlots
from llama_index_ragonite.serve.reading import NotReadable
from llama_index_ragonite.serve.routes import router
from llama_index_ragonite.serve.sessions import NotFound, Sessions
from llama_index_ragonite.serve.workers import lifespan

__all__ = ["STATIC", "create_app", "serve"]

STATIC = Path(__file__).parent / "static"
SWAGGER_CDN = "https://cdn.jsdelivr.net"
HTTP_KINDS = {401: "auth", 404: "not_found", 405: "input", 413: "input"}
_MODE_SLOT = 'data-sign-in="open"'  # index.html's <body> attribute that sign_in_mode fills in
_NO_STORE = {"Cache-Control": "no-store"}


def _version() -> str:
    try:
        return version("llama-index-ragonite")
    except PackageNotFoundError:
        return "0+unknown"


@lru_cache(maxsize=1)
def _docs_page() -> tuple[str, str]:
    """Swagger UI's page and the CSP that lets exactly it run."""
    html = bytes(get_swagger_ui_html(openapi_url="/openapi.json", title="RAGonite API").body).decode()
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"
        for script in re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    )
    csp = (
        f"default-src 'self'; script-src 'self' {SWAGGER_CDN} {hashes}; style-src 'self' {SWAGGER_CDN}; "
        "img-src 'self' data: https://fastapi.tiangolo.com; object-src 'none'; frame-ancestors 'none'"
    )
    return html, csp


def create_app(config: ServeConfig, sessions: Optional[Sessions] = None) -> Any:
    """The ASGI app over ``config``'s domains and LLMs (loads them unless ``sessions`` is given)."""
    app = FastAPI(
        title="RAGonite",
        version=_version(),
        description="Conversational question answering over wiki pages, with cited sources and explanations.",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,  # retires idle worker threads after a burst (workers.py)
    )
    app.state.sessions = sessions or Sessions(config)
    app.state.config = config
    app.state.turn_slots = TurnSlots(config.max_turns_per_user, config.max_turns)
    app.include_router(router)

    async def failed(request: Request, err: Exception) -> JSONResponse:
        status, body = error_payload(err)
        headers = {"Retry-After": str(err.retry_after)} if isinstance(err, TooManyTurns) else None
        return JSONResponse(body, status_code=status, headers=headers)

    # sqlite3.OperationalError: a history locked by another process is a 503, not an unexpected error
    expected_errors = (
        NotFound,
        NotReadable,
        RagoniteError,
        ValueError,
        LookupError,
        TooManyTurns,
        sqlite3.OperationalError,
    )
    for expected in (*expected_errors, Exception):  # Exception: also logged
        app.add_exception_handler(expected, failed)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, err: RequestValidationError) -> JSONResponse:
        first = err.errors()[0] if err.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        message = f"{where}: {first.get('msg', 'invalid request')}" if where else first.get("msg", "invalid request")
        return JSONResponse({"error": message, "kind": "input"}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, err: StarletteHTTPException) -> JSONResponse:
        kind = HTTP_KINDS.get(err.status_code, "input" if err.status_code < 500 else "internal")
        return JSONResponse({"error": str(err.detail), "kind": kind}, status_code=err.status_code)

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        html, _ = _docs_page()
        return HTMLResponse(html)  # SecurityMiddleware gives /docs the CSP of _docs_page

    @app.get("/", include_in_schema=False)
    async def page(request: Request) -> HTMLResponse:
        mode = sign_in_mode(request)  # per caller: never cached
        return HTMLResponse(_index_html().replace(_MODE_SLOT, f'data-sign-in="{mode}"', 1), headers=_NO_STORE)

    if STATIC.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC), name="static")
    users, proxy = config.identities()
    secured = SecurityMiddleware(
        app, config.tokens, lambda: _docs_page()[1], config.host_names(), users=users, proxy=proxy
    )
    app.state.signin = secured.signin  # the session routes open and end its sessions
    return secured


def sign_in_mode(request: Request) -> str:
    """How the page's caller is signed in, rendered into the page so that it asks for a token before any
    API call: ``sign-in`` (a token is needed: the sign-in form), ``signed-in`` (a token's session),
    ``proxy`` (the trusted proxy named the user) or ``open`` (loopback without tokens: nothing needed)."""
    if request.state.user is None:  # SecurityMiddleware found no valid token or session
        return "sign-in"
    config = request.app.state.config
    if config.trusted_proxies and request.headers.get(config.proxy_user_header, "").strip():
        return "proxy"
    return "signed-in" if request.app.state.signin.required() else "open"


@lru_cache(maxsize=1)
def _index_html() -> str:
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    if _MODE_SLOT not in html:  # every caller would get the page of a server without tokens
        raise RuntimeError(f"static/index.html: its <body> lost {_MODE_SLOT}")
    return html


def serve(config: ServeConfig, log_level: str = "info", ready: Optional[Callable[[str], None]] = None) -> None:
    """Run the app with uvicorn on ``config.host:config.port`` until interrupted; ``ready`` gets its URL
    (the port it got: ``--port 0`` is any free one) once the app is built (its models loaded), before it
    listens. The socket is bound first, so an address that cannot be bound fails before anything loads.
    ``proxy_headers=False``: the client address is the TCP peer, which ``--trust-proxy`` compares; uvicorn's
    default would take it from ``X-Forwarded-For`` (``peers.py``)."""
    import uvicorn

    from llama_index_ragonite.serve.listening import bind, url

    sock = bind(config.host, config.port)
    try:
        app = create_app(config)
        if ready is not None:
            ready(url(sock, config.host))
        settings = uvicorn.Config(
            app,
            host=config.host,
            port=sock.getsockname()[1],
            log_level=log_level,
            timeout_graceful_shutdown=5,
            proxy_headers=False,
        )
        uvicorn.Server(settings).run(sockets=[sock])
    finally:
        sock.close()
