"""HTTP: pooled keep-alive connections, bounded bodies, retries with back-off, no blind redirects.

The fetcher answers one question per URL, "what does the server say?", as a
:class:`Response`; what that means for the link (its verdict) is decided elsewhere.

:class:`Fetcher` holds what does not depend on the HTTP client: the retries, ``file:``
URLs, the settings each request goes by. The requests themselves are libcurl's
(:mod:`linkpatrol.curlfetch`); :func:`make_fetcher` makes the fetcher.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from linkpatrol import __version__
from linkpatrol.addresses import AddressGuard
from linkpatrol.config import SiteSettings
from linkpatrol.httpparts import TRANSIENT_STATUSES
from linkpatrol.local import serve_file
from linkpatrol.model import HTML_TYPES, PAGE_TYPES
from linkpatrol.sites import SiteMatcher
from linkpatrol.tls import TlsPolicy

PEEK_BYTES = 64 * 1024
MAX_RETRY_AFTER = 60.0


@dataclass(slots=True)
class Response:
    """One HTTP exchange (the last attempt), or why there was none."""

    method: str
    status: int | None = None
    error: str | None = None
    transient: bool = False
    reachable: bool = True
    content_type: str | None = None
    charset: str | None = None
    location: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    retry_after: float | None = None
    body: bytes | None = None
    truncated: bool = False
    attempts: int = 1
    elapsed: float = 0.0
    reused: bool = False  # it went over a connection an earlier request left open

    @property
    def is_html(self) -> bool:
        return self.content_type in HTML_TYPES

    @property
    def is_page(self) -> bool:
        """A document whose links and anchors can be read: HTML or Markdown."""
        return self.content_type in PAGE_TYPES

    @property
    def answered(self) -> bool:
        return self.status is not None


class Fetcher:
    """Fetching but the requests themselves: the retries, ``file:`` URLs, the settings each
    request goes by. :class:`~linkpatrol.curlfetch.CurlFetcher` adds ``start``, ``close``
    and ``_once``, libcurl's requests."""

    def __init__(self, settings: SiteSettings) -> None:
        self.settings = settings
        self.requests = 0
        self.bytes_received = 0
        self.tls = TlsPolicy(settings)
        self.sites = SiteMatcher(settings.site_tables)
        self.guard = AddressGuard(settings)
        user_agent = settings.user_agent or f"linkpatrol/{__version__}"
        self.base_headers = {"User-Agent": user_agent}
        if settings.from_email:
            self.base_headers["From"] = settings.from_email

    async def start(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    async def fetch(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        want_body: bool = False,
        any_type: bool = False,
        pace: Callable[[], Awaitable[None]] | None = None,
        robots: bool = False,
        limit: int | None = None,
    ) -> Response:
        """One request, retried on transient failures with back-off and Retry-After.

        With ``want_body`` an HTML body is read (``any_type``: any body), up to --max-size
        (or ``limit``, if smaller).
        ``pace`` is awaited before each retry, so retries keep the host's --delay too.
        ``robots``: the URL is (a redirect of) a robots.txt, asked for its host's URLs.
        """
        if url.startswith("file:"):
            return await self._read_file(url, headers or {}, want_body, any_type, limit)
        attempts = 0
        while True:
            attempts += 1
            response = await self._once(
                method, url, headers or {}, want_body, any_type, robots, limit
            )
            response.attempts = attempts
            retryable = response.transient or response.status in TRANSIENT_STATUSES
            if not retryable or attempts > self.settings.retries:
                return response
            wait = response.retry_after
            if wait is None:
                wait = min(8.0, 0.25 * 2 ** (attempts - 1)) * (0.5 + random.random())
            elif wait > MAX_RETRY_AFTER:
                return response
            await asyncio.sleep(wait)
            if pace is not None:
                await pace()

    async def _read_file(
        self,
        url: str,
        headers: dict[str, str],
        want_body: bool,
        any_type: bool,
        limit: int | None = None,
    ) -> Response:
        """A ``file:`` URL under the local root, answered as a static web server would."""
        self.requests += 1
        started = time.monotonic()
        result = Response(method="GET" if want_body else "HEAD")
        mount = self.settings.mount
        if mount is None:
            result.error = "local files are read only when a local folder or file is checked"
            return result
        answer = await serve_file(
            mount,
            url,
            want_body,
            any_type,
            self._limit(limit),
            headers.get("If-None-Match"),
        )
        result.status = answer.status
        result.error = answer.error
        result.location = answer.location
        result.content_type = answer.content_type
        result.etag = answer.etag
        result.last_modified = answer.last_modified
        result.body = answer.body
        result.truncated = answer.truncated
        result.elapsed = time.monotonic() - started
        return result

    async def _once(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        want_body: bool,
        any_type: bool,
        robots: bool = False,
        limit: int | None = None,
    ) -> Response:
        """One request, no retry."""
        raise NotImplementedError

    def _limit(self, limit: int | None) -> int:
        return self.settings.max_size if limit is None else min(limit, self.settings.max_size)


def make_fetcher(settings: SiteSettings) -> Fetcher:
    """A fetcher for these settings (not started)."""
    from linkpatrol.curlfetch import CurlFetcher

    return CurlFetcher(settings)
