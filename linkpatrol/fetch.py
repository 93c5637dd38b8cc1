"""Fetching: retries with back-off and Retry-After, bounded bodies, each site's settings.

The fetcher answers one question per URL, "what does the server say?", as a
:class:`~linkpatrol.transport.Response`; what that means for the link (its verdict) is
decided elsewhere. It decides everything about a request but the network: the headers
it carries (the user agent, ``From``, its ``[[site]]`` table's), its size limit and
timeout, and whether to try again. The requests themselves go to a
:class:`~linkpatrol.transport.Transport`: libcurl's for the web and the local folder's
for ``file:`` URLs in a crawl (:func:`linkpatrol.curlfetch.make_fetcher`), canned
answers in memory in tests.

A redirect to the very URL asked for that sets a cookie is asked again at once, as a
browser follows it: the transport keeps the run's cookies and sends them back (a site
that lets nobody in without its cookie answers this way).
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Awaitable, Callable

from linkpatrol import __version__
from linkpatrol.config import SiteSettings
from linkpatrol.httpparts import TRANSIENT_STATUSES, merge_headers
from linkpatrol.proxies import Proxies, Proxy
from linkpatrol.sites import SiteMatcher
from linkpatrol.transport import Request, Response, Transport
from linkpatrol.urls import BadURL, canonical

MAX_RETRY_AFTER = 60.0
FIRST_BACKOFF = 0.25
MAX_BACKOFF = 8.0
COOKIE_ROUNDS = 3  # a redirect to itself that sets a cookie is asked again this often at most


def retry_wait(attempts: int, retry_after: float | None, jitter: float) -> float | None:
    """Seconds to wait before another try, after ``attempts`` tries: what the server asked
    for, else a back-off doubling from FIRST_BACKOFF up to MAX_BACKOFF, times ``jitter``
    (0.5 to 1.5, so that many waiting URLs do not come back at once). None when the server
    asks for longer than MAX_RETRY_AFTER: not worth waiting for."""
    if retry_after is None:
        return min(MAX_BACKOFF, FIRST_BACKOFF * 2 ** (attempts - 1)) * jitter
    if retry_after > MAX_RETRY_AFTER:
        return None
    return retry_after


def wants_cookie_back(url: str, response: Response) -> bool:
    """Whether ``response`` redirects to ``url`` itself and sets a cookie on the way."""
    status, location = response.status, response.location
    if not (response.sets_cookie and location and status and 300 <= status < 400):
        return False
    try:
        return canonical(location.strip(), url) == canonical(url)
    except BadURL:
        return False


class Fetcher:
    """Everything about a request but the network, which is ``transport``'s (``files``'
    for ``file:`` URLs, if given). ``requests`` counts every request sent, retries
    included, each before the fetch first waits. ``proxies``: --proxy and the
    environment's, read from it here unless given (ConfigError for a bad one)."""

    def __init__(
        self,
        settings: SiteSettings,
        transport: Transport,
        files: Transport | None = None,
        sites: SiteMatcher | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        proxies: Proxies | None = None,
    ) -> None:
        self.settings = settings
        self.proxies = Proxies(settings.proxy, os.environ) if proxies is None else proxies
        self.transport = transport
        self.files = transport if files is None else files
        self.sites = SiteMatcher(settings.site_tables) if sites is None else sites
        self.sleep = sleep
        self.requests = 0
        user_agent = settings.user_agent or f"linkpatrol/{__version__}"
        self.base_headers = {"User-Agent": user_agent}
        if settings.from_email:
            self.base_headers["From"] = settings.from_email

    async def close(self) -> None:
        await self.transport.close()
        if self.files is not self.transport:
            await self.files.close()

    async def fetch(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        want_body: bool = False,
        any_type: bool = False,
        pace: Callable[[], Awaitable[None]] | None = None,
        turn: Callable[[], Awaitable[None]] | None = None,
        robots: bool = False,
        limit: int | None = None,
        answered: Callable[[Response], bool] | None = None,
    ) -> Response:
        """One request, retried on transient failures with back-off and Retry-After.

        With ``want_body`` an HTML body is read (``any_type``: any body), up to --max-size
        (or ``limit``, if smaller).
        ``pace`` is awaited before each retry, so retries keep the host's --delay too;
        ``turn`` just before each request leaves, the first one included.
        ``robots``: the URL is (a redirect of) a robots.txt, asked for its host's URLs.
        ``answered`` hears every answer, and takes over one it returns True for (a
        refusal for the host's limit, which the host's pace answers): it is not retried.
        """
        request = self.request(method, url, headers, want_body, any_type, robots, limit)
        transport = self.files if url.startswith("file:") else self.transport
        attempts = 0
        while True:
            attempts += 1
            self.requests += 1
            response = await self._send(transport, request, pace, turn)
            response.attempts = attempts
            if answered is not None and answered(response):
                return response
            retryable = response.transient or response.status in TRANSIENT_STATUSES
            if not retryable or attempts > self.settings.retries:
                return response
            wait = retry_wait(attempts, response.retry_after, 0.5 + random.random())
            if wait is None:
                return response
            await self.sleep(wait)
            if pace is not None:
                await pace()

    async def _send(
        self,
        transport: Transport,
        request: Request,
        pace: Callable[[], Awaitable[None]] | None,
        turn: Callable[[], Awaitable[None]] | None,
    ) -> Response:
        """One answer; a redirect to itself that sets a cookie is asked again, with it."""
        if turn is not None:
            await turn()
        response = await transport.send(request)
        rounds = 0
        while rounds < COOKIE_ROUNDS and wants_cookie_back(request.url, response):
            rounds += 1
            if pace is not None:
                await pace()
            if turn is not None:
                await turn()
            self.requests += 1
            response = await transport.send(request)
        return response

    def request(
        self,
        method: str,
        url: str,
        headers: dict[str, str] | None = None,
        want_body: bool = False,
        any_type: bool = False,
        robots: bool = False,
        limit: int | None = None,
    ) -> Request:
        """The request as sent: matched to its ``[[site]]`` table on this very URL, so
        credentials stay where their prefix is; through its table's proxy, else the
        crawl's."""
        site = self.sites.for_url(url, robots)
        proxy = Proxy(site.proxy) if site.proxy else self.proxies.for_url(url)
        sent = self.base_headers
        if headers or site.headers:
            sent = merge_headers(sent, headers or {}, site.headers)
        max_size = self.settings.max_size
        return Request(
            method,
            url,
            sent,
            max_size if limit is None else min(limit, max_size),
            site.timeout or self.settings.timeout,
            want_body,
            any_type,
            proxy,
            site.ca_bundle,
            site.insecure,
        )


__all__ = ["Fetcher", "Response", "retry_wait", "wants_cookie_back"]
