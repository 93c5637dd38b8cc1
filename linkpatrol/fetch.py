"""HTTP: pooled keep-alive connections, bounded bodies, retries with back-off, no blind redirects.

The fetcher answers one question per URL, "what does the server say?", as a
:class:`Response`; what that means for the link (its verdict) is decided elsewhere.
"""

from __future__ import annotations

import asyncio
import email.utils
import errno
import random
import re
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import aiohttp
from aiohttp import http_exceptions
from multidict import CIMultiDict
from yarl import URL

from linkpatrol import __version__
from linkpatrol.addresses import AddressGuard, AddressRefused, GuardedResolver
from linkpatrol.config import SiteSettings
from linkpatrol.local import serve_file
from linkpatrol.model import HTML_TYPES, PAGE_TYPES
from linkpatrol.sites import SiteMatcher
from linkpatrol.tls import TlsPolicy

PEEK_BYTES = 64 * 1024
TRANSIENT_STATUSES = frozenset({429, 502, 503, 504})
MAX_RETRY_AFTER = 60.0
ACCEPT_HTML = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"
# what a response's head may hold: bounded, so no server can fill memory with headers
MAX_HEADERS = 128
MAX_HEADER_LINE = 8190
# an error quoting what a server sent is cut to this many characters
MAX_ERROR_TEXT = 160


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
    headers_seen: dict[str, str] = field(default_factory=dict)

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


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _sniff_html(prefix: bytes) -> bool:
    head = prefix[:512].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html", b"<head", b"<body")) or b"<html" in head


def _one_line(text: str) -> str:
    """An error quoting a server's bytes, maybe over several lines (a parser points at the
    bad byte), as one short line: no pointer lines, at most MAX_ERROR_TEXT characters."""
    words = " ".join(
        line.strip() for line in text.splitlines() if line.strip() and set(line.strip()) != {"^"}
    )
    words = words.rstrip(".")
    if len(words) > MAX_ERROR_TEXT:
        words = words[: MAX_ERROR_TEXT - 1] + "…"
    return words


def _invalid_response(message: str) -> str:
    """The HTTP parser's complaint about a response, in words a user can act on."""
    too_long = re.match(r"Got more than (\d+) bytes", message)
    if too_long:
        return f"invalid HTTP response: a header line longer than {too_long.group(1)} bytes"
    if message.startswith("Too many headers"):
        return f"invalid HTTP response: more than {MAX_HEADERS} headers"
    return _one_line(f"invalid HTTP response: {message}")


def describe_error(exc: BaseException, timeout: float) -> tuple[str, bool, bool]:
    """(error text, transient?, did the host answer at all?) for a failed request."""
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return f"timeout after {timeout:g}s", True, True
    refused = exc.os_error if isinstance(exc, aiohttp.ClientConnectorError) else exc
    if isinstance(refused, AddressRefused):
        return f"private address refused (--no-private): {refused}", False, False
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return f"DNS failure: cannot resolve {exc.host}", False, False
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        reason = getattr(exc.certificate_error, "verify_message", None) or exc.certificate_error
        return _one_line(f"TLS error: certificate verify failed: {reason}"), False, False
    if isinstance(exc, aiohttp.ClientSSLError):
        return f"TLS error: {exc}", False, False
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        reason = exc.os_error.strerror if exc.os_error and exc.os_error.strerror else str(exc)
        return f"cannot connect to the proxy {exc.host}:{exc.port}: {reason}", False, False
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        return f"the proxy refused: HTTP {exc.status}", exc.status in TRANSIENT_STATUSES, False
    if isinstance(exc, aiohttp.ClientConnectorError):
        code = exc.os_error.errno if exc.os_error else None
        if code == errno.ECONNREFUSED:
            return "connection refused", False, False
        if code in (errno.ENETUNREACH, errno.EHOSTUNREACH):
            return "host unreachable", False, False
        reason = exc.os_error.strerror if exc.os_error and exc.os_error.strerror else str(exc)
        return f"cannot connect: {reason}", True, False
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "server closed the connection without answering", True, True
    if isinstance(exc, aiohttp.ClientPayloadError):
        cause = exc.__cause__
        if isinstance(cause, http_exceptions.ContentEncodingError):
            return _one_line(f"undecodable response body: {cause.message}"), False, True
        if isinstance(cause, http_exceptions.HttpProcessingError):
            return _one_line(f"incomplete response body: {cause.message}"), True, True
        return _one_line(f"incomplete response body: {exc}"), True, True
    if isinstance(exc, aiohttp.ClientOSError):
        if exc.errno == errno.ECONNRESET:
            return "connection reset by peer", True, True
        return f"network error: {exc.strerror or exc}", True, True
    if isinstance(exc, aiohttp.ClientResponseError):
        return _invalid_response(exc.message), False, True
    if isinstance(exc, aiohttp.InvalidURL | ValueError):
        return f"invalid URL: {exc}", False, False
    if isinstance(exc, aiohttp.ClientError):
        return f"HTTP error: {type(exc).__name__}: {exc}", False, True
    return f"{type(exc).__name__}: {exc}", False, True


class Fetcher:
    """An aiohttp session set up the way a polite link checker needs it."""

    def __init__(self, settings: SiteSettings) -> None:
        self.settings = settings
        self.requests = 0
        self.bytes_received = 0
        self.tls = TlsPolicy(settings)
        self.sites = SiteMatcher(settings.site_tables)
        self.guard = AddressGuard(settings)
        self._session: aiohttp.ClientSession | None = None
        self._resolver: GuardedResolver | None = None
        user_agent = settings.user_agent or f"linkpatrol/{__version__}"
        self.base_headers = {"User-Agent": user_agent}
        if settings.from_email:
            self.base_headers["From"] = settings.from_email

    async def start(self) -> None:
        self._resolver = self.guard.resolver()
        connector = aiohttp.TCPConnector(
            limit=self.settings.concurrency,
            limit_per_host=max(self.settings.per_host, self.sites.max_per_host),
            ttl_dns_cache=300,
            ssl=self.tls.default,
            resolver=self._resolver,
        )
        timeout = aiohttp.ClientTimeout(
            total=self.settings.timeout,
            sock_connect=self.settings.timeout,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=timeout,
            headers=self.base_headers,
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=True,
            max_headers=MAX_HEADERS,
            max_line_size=MAX_HEADER_LINE,
            max_field_size=MAX_HEADER_LINE,
        )

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._resolver is not None:
            await self._resolver.close()
            self._resolver = None

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
        assert self._session is not None, "Fetcher.start() not called"
        self.requests += 1
        started = time.monotonic()
        result = Response(method=method)
        site = self.sites.for_url(url, robots)  # matched on this very URL: credentials stay put
        timeout = site.timeout or self.settings.timeout
        sent = CIMultiDict(headers)
        sent.update(site.headers)
        try:
            target = URL(url, encoded=True)
            host = (target.raw_host or "").lower()
            self.guard.check_literal(host)
            verify: ssl.SSLContext | bool = True
            if target.scheme == "https":
                verify = self.tls.for_host(host, target.port, site.ca_bundle, not site.insecure)
            async with asyncio.timeout(timeout * 2):
                async with self._session.request(
                    method,
                    target,
                    headers=sent,
                    allow_redirects=False,
                    ssl=verify,
                    proxy=site.proxy,
                    timeout=aiohttp.ClientTimeout(total=timeout, sock_connect=timeout),
                ) as resp:
                    self._read_head(resp, result)
                    if method != "HEAD":
                        await self._read_body(resp, result, want_body, any_type, limit)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            if not isinstance(exc, Exception):
                raise
            result.error, result.transient, result.reachable = describe_error(exc, timeout)
            if result.status is not None and result.error:
                result.status = None
        result.elapsed = time.monotonic() - started
        return result

    @staticmethod
    def _read_head(resp: aiohttp.ClientResponse, result: Response) -> None:
        result.status = resp.status
        content_type = resp.headers.get("Content-Type")
        if content_type:
            result.content_type = resp.content_type.lower()
            result.charset = resp.charset
        result.location = resp.headers.get("Location")
        result.etag = resp.headers.get("ETag")
        result.last_modified = resp.headers.get("Last-Modified")
        result.retry_after = parse_retry_after(resp.headers.get("Retry-After"))

    def _limit(self, limit: int | None) -> int:
        return self.settings.max_size if limit is None else min(limit, self.settings.max_size)

    async def _read_body(
        self,
        resp: aiohttp.ClientResponse,
        result: Response,
        want_body: bool,
        any_type: bool,
        limit: int | None = None,
    ) -> None:
        """Read HTML up to --max-size (decoded); of anything else only the first chunk."""
        if not 200 <= resp.status < 300:
            await self._discard(resp, 0)
            return
        first = await resp.content.readany()
        self.bytes_received += len(first)
        if result.content_type is None and _sniff_html(first):
            result.content_type = "text/html"
        if not (want_body and (result.is_page or any_type)):
            await self._discard(resp, len(first))
            return
        limit = self._limit(limit)
        chunks = [first]
        size = len(first)
        while size <= limit:
            chunk = await resp.content.readany()
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            self.bytes_received += len(chunk)
        body = b"".join(chunks)
        if size > limit:
            result.truncated = True
            body = body[:limit]
            resp.close()
        result.body = body

    async def _discard(self, resp: aiohttp.ClientResponse, read: int) -> None:
        """Finish with a body not wanted: a small rest is read, so the connection is reused;
        a large one (or one that decodes large: a compression bomb) is not, it is dropped."""
        small = resp.content_length is not None and resp.content_length <= PEEK_BYTES
        while small and not resp.content.at_eof():
            chunk = await resp.content.readany()
            read += len(chunk)
            self.bytes_received += len(chunk)
            small = bool(chunk) and read <= PEEK_BYTES
        if resp.content.at_eof():
            resp.release()
        else:
            resp.close()
