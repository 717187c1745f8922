"""The one site a Confluence client talks to: its origin, and links checked against it.

Why apart from the client: requests and credentials must never leave the configured origin
(scheme, host, port), whatever a redirect, a ``_links.next`` or a ``_links.base`` says; this is
that rule in one place, and the client asks it before every request it sends.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Optional, Tuple

import httpx

from llama_index_ragonite.errors import ConfluenceError
from llama_index_ragonite.parsing.confluence.shapes import get_field

__all__ = ["SiteOrigin", "url_origin"]

logger = logging.getLogger("llama_index_ragonite.parsing.confluence.client")


def url_origin(url: Any) -> Optional[Tuple[str, str, Optional[int]]]:
    """(scheme, host, port) of ``url`` (port None for the scheme's default); None when unreadable."""
    try:
        parsed = httpx.URL(str(url))
    except (httpx.InvalidURL, TypeError, ValueError):
        return None
    return parsed.scheme, parsed.host, parsed.port


def origin_text(url: Any) -> str:
    origin = url_origin(url)
    if origin is None or not origin[1]:
        return repr(str(url)[:80])
    scheme, host, port = origin
    host = f"[{host}]" if ":" in host else host
    return (f"{scheme}:" if scheme else "") + f"//{host}" + (f":{port}" if port else "")


class SiteOrigin:
    """The configured URL's origin and context path (``/wiki`` on Cloud, ``/confluence`` or "" on Data Center)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.origin = url_origin(url)
        self.text = origin_text(url)
        self.path = httpx.URL(url).path.rstrip("/")
        self.warned_base = False

    def check(self, url: str, what: str, how: str) -> None:
        if url_origin(url) != self.origin:
            raise ConfluenceError(
                f"{what}: {how} {origin_text(url)}, another origin than {self.text}: not followed "
                "(requests and credentials go to the configured site only)"
            )

    def resolve_next(self, link: str, what: str) -> str:
        """``_links.next`` as a URL on the configured origin.

        Confluence gives ``next`` relative to its context path (``/rest/api/content?…``, base
        ``https://host/wiki``); ``_links.base`` is not used for requests (behind a proxy it often
        names an internal host). A relative link that starts with the configured URL's path is
        taken from the origin, any other one from the configured URL. An absolute link must name
        the configured origin."""
        try:
            target = httpx.URL(link)
        except httpx.InvalidURL:
            raise ConfluenceError(f"{what}: _links.next is not a URL") from None
        if target.scheme or target.host:
            self.check(link, what, "_links.next points to")
            return link
        if self.path and (link == self.path or link.startswith(self.path + "/")):
            return self.text + link
        return f"{self.url}/{link.lstrip('/')}"

    def note_base(self, data: Dict[str, Any], what: str) -> None:
        """Warn once when ``_links.base`` names another origin: it is ignored for requests and page links."""
        base = get_field(data, "_links.base", str, what)
        if base and not self.warned_base and url_origin(base) != self.origin:
            self.warned_base = True
            logger.warning(
                "Confluence at %s calls itself %s (another origin; an internal name behind a proxy?): "
                "requests and page links stay on %s",
                self.url,
                origin_text(base),
                self.text,
            )
