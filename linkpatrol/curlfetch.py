"""HTTP through libcurl: one CurlMulti driven by the event loop, behind a transport.

:class:`CurlTransport` sends each :class:`~linkpatrol.transport.Request` as it is;
:class:`CurlFetcher` is the fetcher a crawl uses, with it for the web and the local
folder for ``file:`` URLs.

libcurl makes the requests (connections, keep-alive, TLS, decoding); the event loop
watches its sockets and its timer (``M_SOCKETFUNCTION``, ``M_TIMERFUNCTION``) and hands
them back with ``socket_action``, and ``info_read`` completes each request's future.
The header and body callbacks apply the request's limits as the bytes arrive: a
response that breaks one is stopped right there. libcurl's failures are put in the
words of :class:`~linkpatrol.transport.Response` errors (``connection refused``,
``TLS error: certificate verify failed: ...``) by :mod:`linkpatrol.httpparts`.

Cookies the servers set are kept by libcurl's cookie engine, in memory only, one jar
shared by every handle of the transport (``CURLSH``): sent back as curl sends them (by
domain, path, ``Secure``, expiry), never read from or written to a file, gone with the
transport. A ``[[site]]`` table's ``Cookie`` header goes as ``CURLOPT_COOKIE``, so libcurl
puts it in one line with the jar's.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import os
import selectors
import socket
import ssl
import tempfile
import time
from collections.abc import Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

import pycurl

from linkpatrol.addresses import AddressGuard, AddressRefused, is_public, never_resolves
from linkpatrol.config import SiteSettings
from linkpatrol.fetch import Fetcher
from linkpatrol.httpparts import (
    CLOSED,
    E_BAD_CONTENT_ENCODING,
    E_COULDNT_CONNECT,
    E_PARTIAL_FILE,
    E_WRITE_ERROR,
    LINE_TOO_LONG,
    MAX_HEADER_LINE,
    MAX_HEADERS,
    NOT_HTTP,
    PROXY_AUTHENTICATION_REQUIRED,
    TOO_MANY_HEADERS,
    CurlError,
    Failure,
    certificate_expires,
    describe_curl_error,
    is_ip,
    last_head,
    parse_content_type,
    parse_head,
    parse_rate_remaining,
    parse_rate_reset,
    parse_retry_after,
    proxy_refused,
    sniff_html,
)
from linkpatrol.local import FileTransport
from linkpatrol.loops import unwatch, watch
from linkpatrol.model import Reason
from linkpatrol.proxies import Proxy
from linkpatrol.sites import SiteMatcher
from linkpatrol.tls import TlsPolicy
from linkpatrol.transport import Request, Response
from linkpatrol.urls import origin

ACCEPT_ENCODING = ""  # every encoding this libcurl decodes (gzip, deflate, brotli, ...)
# of a body not kept, at most this much is read (so the connection is kept), else it is
# cut off (and the connection dropped)
PEEK_BYTES = 64 * 1024
DNS_CACHE_SECONDS = 300

# Linux's switch for acknowledging what arrives at once. A request sent soon after an
# answer came in has the system delay its acknowledgements (by 40 ms); a server that writes
# an answer's head and body apart, with Nagle's algorithm on (Python's http.server speaking
# HTTP/1.1, for one), holds the body back until the head is acknowledged. Each
# acknowledgement sent at once costs about 13 us on a loopback crawl, so the switch is used
# only once a body came this long after its head: then it is set whenever libcurl starts
# waiting to read from a socket, once a request is sent (a head already read is
# acknowledged then; one still to come, as soon as it is read).
LATE_BODY = 0.03
QUICK_ACK: int | None = getattr(socket, "TCP_QUICKACK", None)


def _ack_at_once(fd: int) -> None:
    """Have what came on the socket of ``fd`` acknowledged as soon as it is read, and what
    comes next as it arrives (till the next request is sent). Linux's only."""
    option = QUICK_ACK
    if option is None:
        return
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 0, fd)
    except OSError:
        return  # no socket: libcurl's own wake-up
    try:
        sock.setsockopt(socket.IPPROTO_TCP, option, 1)
    except OSError:
        pass  # not TCP (a proxy's Unix socket)
    finally:
        sock.detach()


# futures' results for transfers ended from outside libcurl
CLOSED_CODE, GIVEN_UP_CODE = -1, -2
SWEEP_SECONDS = 1.0

# libcurl's words for a Content-Encoding it has no decoder for (not for a corrupt body)
UNKNOWN_ENCODING = "Unrecognized content encoding"

# how far into a body the callbacks are
FIRST, KEEP, DISCARD = 0, 1, 2


@functools.lru_cache(maxsize=1024)
def _endpoint(authority: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an origin (``scheme://host[:port]``); ValueError for a bad one."""
    parts = urlsplit(authority)
    default = 443 if parts.scheme == "https" else 80
    return parts.scheme, parts.hostname or "", parts.port or default


class _Owner(Protocol):
    """What a transfer tells the transport it belongs to."""

    acks_at_once: bool


class _Transfer:
    """One request as libcurl's callbacks see it: the head, then the body, chunk by chunk."""

    __slots__ = (
        "any_type",
        "chunks",
        "deadline",
        "failure",
        "future",
        "head_at",
        "headers",
        "limit",
        "lines",
        "mode",
        "owner",
        "parsed",
        "read",
        "refused",
        "result",
        "size",
        "status",
        "stopped",
        "want_body",
    )

    def __init__(
        self,
        owner: _Owner,
        result: Response,
        want_body: bool,
        any_type: bool,
        limit: int,
        future: asyncio.Future[tuple[int, str]],
    ) -> None:
        self.owner = owner
        self.result = result
        self.want_body = want_body
        self.any_type = any_type
        self.limit = limit
        self.future = future
        self.deadline = 0.0  # loop time past which the transfer is given up (hard limit)
        self.head_at = 0.0  # when the head's first line came
        self.lines: list[bytes] = []  # the head as received
        self.parsed = False
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.failure: Failure | None = None
        self.stopped = False  # the body was cut off on purpose
        self.mode = FIRST
        self.chunks: list[bytes] = []
        self.size = 0
        self.read = 0
        self.refused: list[str] = []  # addresses --no-private kept us from

    def _fail(self, failure: Failure) -> int:
        self.failure = failure
        return 0  # fewer bytes taken than given: libcurl aborts the transfer

    def _stop(self) -> int:
        self.stopped = True
        return 0

    def on_header(self, line: bytes) -> int | None:
        """Each line of the head, kept as it comes (read once the head is whole); only a
        line or a head past the limits is looked at here."""
        lines = self.lines
        if not lines:
            self.head_at = time.monotonic()
        lines.append(line)
        if len(line) > MAX_HEADER_LINE or len(lines) > MAX_HEADERS + 1:
            return self._check_head()
        return None

    def _check_head(self) -> int | None:
        if len(self.lines[-1].rstrip(b"\r\n")) > MAX_HEADER_LINE:
            return self._fail(LINE_TOO_LONG)
        # only the last response's head counts (after a 1xx, or a proxy's answer to CONNECT)
        del self.lines[: last_head(self.lines)]
        if sum(1 for line in self.lines[1:] if line.strip()) > MAX_HEADERS:
            return self._fail(TOO_MANY_HEADERS)
        return None

    def parse_head(self) -> None:
        """``status`` and ``headers`` (the first of each name read) from the head's lines."""
        if self.parsed:
            return
        self.parsed = True
        self.status, self.headers = parse_head(self.lines)

    def content_length(self) -> int | None:
        value = self.headers.get("content-length")
        return int(value) if value is not None and value.isdigit() else None

    def read_head(self) -> None:
        self.parse_head()
        result, headers = self.result, self.headers
        result.status = self.status
        content_type = headers.get("content-type")
        if content_type:
            result.content_type, result.charset = parse_content_type(content_type)
        result.location = headers.get("location")
        result.etag = headers.get("etag")
        result.last_modified = headers.get("last-modified")
        result.retry_after = parse_retry_after(headers.get("retry-after"))
        result.rate_remaining = parse_rate_remaining(headers.get("x-ratelimit-remaining"))
        result.rate_reset = parse_rate_reset(headers.get("x-ratelimit-reset"))
        result.sets_cookie = "set-cookie" in headers

    def on_body(self, data: bytes) -> int | None:
        """Of 2xx bodies the first chunk (HTML sniffed), and the rest up to the limit when
        the body is wanted; of others a small rest (so the connection is reused), else
        the transfer is stopped (and the connection dropped)."""
        size = len(data)
        if self.mode == KEEP:
            self.chunks.append(data)
            self.size += size
            if self.size > self.limit:
                self.result.truncated = True
                return self._stop()
            return None
        if self.mode == DISCARD:
            self.read += size
            return None if size and self.read <= PEEK_BYTES else self._stop()
        self.read_head()
        if self.status is None:
            return self._fail(NOT_HTTP)
        owner = self.owner
        if not owner.acks_at_once and time.monotonic() - self.head_at >= LATE_BODY:
            owner.acks_at_once = True  # see LATE_BODY
        length = self.content_length()
        small = length is not None and length <= PEEK_BYTES
        if not 200 <= self.status < 300:
            if not small:
                return self._stop()
            self.mode = DISCARD
            return self.on_body(data)
        result = self.result
        if result.content_type is None and sniff_html(data):
            result.content_type = "text/html"
        if not (self.want_body and (result.has_links or self.any_type)):
            if not small:
                return self._stop()
            self.mode = DISCARD
            self.read = size
            return None
        self.mode = KEEP
        self.chunks.append(data)
        self.size = size
        if size > self.limit:
            result.truncated = True
            return self._stop()
        return None

    def on_open_socket(self, purpose: int, address: Any) -> Any:
        """``--no-private``: a socket only to a public address of a name."""
        family, socktype, protocol, where = address
        if not is_public(ipaddress.ip_address(where[0])):
            self.refused.append(where[0])
            return pycurl.SOCKET_BAD
        return socket.socket(family, socktype, protocol)

    def finish(self) -> None:
        """The body as read, once libcurl is done."""
        result = self.result
        if self.mode == FIRST:
            self.read_head()
            if result.method != "HEAD" and self.status is not None and 200 <= self.status < 300:
                # no body came at all: an empty one
                wanted = self.want_body and (result.has_links or self.any_type)
                result.body = b"" if wanted else None
        elif self.mode == KEEP:
            body = b"".join(self.chunks)
            result.body = body[: self.limit] if result.truncated else body
        self.chunks = []


class CurlTransport:
    """libcurl's multi interface, driven by the running event loop, opened at the first
    request. ``per_host``: connections to one host at most."""

    def __init__(self, settings: SiteSettings, per_host: int | None = None) -> None:
        self.settings = settings
        self.per_host = settings.per_host if per_host is None else per_host
        self.tls = TlsPolicy(settings)
        self.guard = AddressGuard(settings)
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._multi: Any = None
        # libcurl's sockets wait in a selector of their own, which the loop watches as one:
        # a socket's turn from writing to reading costs an epoll_ctl, not an asyncio handle
        self._selector: selectors.BaseSelector | None = None
        self._watching: dict[int, int] = {}  # the selector's sockets, with their events
        self._timer: asyncio.Handle | None = None
        self._timer_due = 0.0  # when that timer is due (a loop's handle may not say)
        self._sweeper: asyncio.Handle | None = None
        self._transfers: dict[Any, _Transfer] = {}
        self._idle: list[Any] = []  # easy handles ready for another request
        # the run's cookie jar: libcurl's cookie engine, in memory only, shared by the handles
        self._cookies: Any = None
        # answers acknowledged as they arrive, since a body came late (see LATE_BODY)
        self.acks_at_once = False
        self._guarded: set[Any] = set()  # easy handles with the --no-private callback
        self._ca_files: dict[tuple[str, ...], str] = {}
        self._resolved: dict[str, tuple[float, list[str]]] = {}  # --no-private's DNS cache
        self._system_ca = ssl.get_default_verify_paths()
        # the header lines of the last headers sent, kept while the same ones come again
        self._lines_of: Mapping[str, str] | None = None
        self._lines: list[str] = []
        self._cookie: str | None = None
        # each verified host's certificate end, as its latest new connection showed it: a
        # connection kept open shows none, and its answers carry the host's
        self._reads_certificates = settings.cert_expiry > 0
        self._cert_expires: dict[tuple[str, int], float | None] = {}

    def _open(self) -> Any:
        """The multi, made at the first request (None once closed)."""
        if self._multi is None and not self._closed:
            self._loop = asyncio.get_running_loop()
            self._selector = selectors.DefaultSelector()
            self._watching.clear()
            watch(self._loop, self._selector.fileno(), self._on_sockets)
            multi = pycurl.CurlMulti()
            multi.setopt(pycurl.M_SOCKETFUNCTION, self._on_socket)
            multi.setopt(pycurl.M_TIMERFUNCTION, self._on_timer)
            multi.setopt(pycurl.M_MAX_TOTAL_CONNECTIONS, self.settings.concurrency)
            multi.setopt(pycurl.M_MAX_HOST_CONNECTIONS, self.per_host)
            multi.setopt(pycurl.M_MAXCONNECTS, self.settings.concurrency)
            self._multi = multi
        return self._multi

    async def close(self) -> None:
        self._closed = True
        multi, self._multi = self._multi, None
        if multi is not None:
            for handle in list(self._transfers):
                self._give_up(handle, multi, CLOSED_CODE)
            multi.close()
        for timer in (self._timer, self._sweeper):
            if timer is not None:
                timer.cancel()
        self._timer = self._sweeper = None
        selector, self._selector = self._selector, None
        if selector is not None:
            if self._loop is not None and not self._loop.is_closed():
                unwatch(self._loop, selector.fileno())  # type: ignore[attr-defined]
            selector.close()
        for handle in self._idle:
            handle.close()
        self._idle.clear()
        self._guarded.clear()
        cookies, self._cookies = self._cookies, None
        if cookies is not None:
            cookies.close()
        for path in self._ca_files.values():
            with contextlib.suppress(OSError):
                os.unlink(path)
        self._ca_files.clear()

    # ---- the event loop's side of libcurl ---------------------------------------------------

    def _on_socket(self, event: int, fd: int, multi: Any, data: Any) -> None:
        """libcurl says which of its sockets to watch, for what."""
        selector = self._selector
        if selector is None:
            return
        events = (selectors.EVENT_READ if event & pycurl.POLL_IN else 0) | (
            selectors.EVENT_WRITE if event & pycurl.POLL_OUT else 0
        )
        watching = self._watching
        if event == pycurl.POLL_REMOVE or not events:
            if watching.pop(fd, 0):
                with contextlib.suppress(KeyError, ValueError, OSError):
                    selector.unregister(fd)
            return
        was = watching.get(fd, 0)
        if self.acks_at_once and events == selectors.EVENT_READ and was != events:
            _ack_at_once(fd)  # a request sent, its answer awaited (or the rest of it)
        # a kept connection's socket is given up after each transfer and taken again for
        # the next: what is watched is known here, not learned from the selector's errors
        try:
            if was:
                selector.modify(fd, events)
            else:
                selector.register(fd, events)
        except (KeyError, ValueError, OSError):
            # closed, and its number given to a new socket
            with contextlib.suppress(KeyError, ValueError, OSError):
                selector.unregister(fd)
            selector.register(fd, events)
        watching[fd] = events

    def _on_sockets(self) -> None:
        """Some of libcurl's sockets are ready: it acts on each."""
        selector, multi = self._selector, self._multi
        if selector is None or multi is None:
            return
        for key, events in selector.select(0):
            action = (pycurl.CSELECT_IN if events & selectors.EVENT_READ else 0) | (
                pycurl.CSELECT_OUT if events & selectors.EVENT_WRITE else 0
            )
            with contextlib.suppress(pycurl.error):
                multi.socket_action(key.fd, action)
        self._collect()

    def _on_timer(self, milliseconds: int) -> None:
        """libcurl wants to be woken up in ``milliseconds`` (-1: no need). A timer already
        due sooner is kept: waking early costs less than a new timer each time."""
        loop = self._loop
        if milliseconds < 0 or loop is None or self._multi is None:
            return
        when = loop.time() + milliseconds / 1000
        timer = self._timer
        if timer is not None:
            if self._timer_due <= when:
                return
            timer.cancel()
        self._timer_due = when
        self._timer = loop.call_at(when, self._on_timeout)

    def _on_timeout(self) -> None:
        self._timer = None
        multi = self._multi
        if multi is None:
            return
        with contextlib.suppress(pycurl.error):
            multi.socket_action(pycurl.SOCKET_TIMEOUT, 0)
        self._collect()
        if not self._timer_set() and self._transfers:
            # woken early, libcurl keeps its own time and does not say it again
            self._on_timer(multi.timeout())

    def _timer_set(self) -> bool:
        """Whether a timer is set: asked of a method, as libcurl's callbacks may have set
        one since this caller cleared it (read directly, the type checker, and the
        compiled code after it, would take it to be still clear)."""
        return self._timer is not None

    def _collect(self) -> None:
        """Finished transfers out of the multi, their futures done."""
        multi = self._multi
        while multi is not None:
            queued, done, failed = multi.info_read()
            for handle in done:
                self._complete(handle, 0, "")
            for handle, code, message in failed:
                self._complete(handle, code, message)
            if not queued:
                break

    def _complete(self, handle: Any, code: int, message: str) -> None:
        transfer = self._transfers.pop(handle, None)
        self._multi.remove_handle(handle)
        if transfer is not None and not transfer.future.done():
            transfer.future.set_result((code, message))

    def _add(self, handle: Any, transfer: _Transfer) -> None:
        assert self._loop is not None and self._multi is not None
        self._transfers[handle] = transfer
        self._multi.add_handle(handle)
        if self._sweeper is None:
            self._sweeper = self._loop.call_later(SWEEP_SECONDS, self._sweep)

    def _sweep(self) -> None:
        """The hard limit, should libcurl's own timeout ever not end a transfer."""
        self._sweeper = None
        multi = self._multi
        if multi is None or self._loop is None:
            return
        now = self._loop.time()
        for handle, transfer in list(self._transfers.items()):
            if transfer.deadline < now:
                self._give_up(handle, multi, GIVEN_UP_CODE)
        if self._transfers:
            self._sweeper = self._loop.call_later(SWEEP_SECONDS, self._sweep)

    def _give_up(self, handle: Any, multi: Any, code: int) -> None:
        """A transfer ended from outside (closed, past the hard limit, cancelled): out of
        the multi, its connection closed, its handle not used again."""
        transfer = self._transfers.pop(handle, None)
        if transfer is not None:
            multi.remove_handle(handle)
            if not transfer.future.done():
                transfer.future.set_result((code, ""))
        self._guarded.discard(handle)
        handle.close()

    # ---- one request --------------------------------------------------------------------------

    async def _public_addresses(self, host: str, port: int) -> str | Failure:
        """``--no-private`` for a name: resolved here, as the system resolves it (and cached
        for DNS_CACHE_SECONDS), its public addresses pinned for libcurl as a RESOLVE entry, so
        what is checked is what is connected to (and the socket callback checks again)."""
        now = time.monotonic()
        cached = self._resolved.get(host)
        if cached is None or cached[0] < now:
            assert self._loop is not None
            try:
                infos = await self._loop.getaddrinfo(
                    host, port, type=socket.SOCK_STREAM, flags=socket.AI_ADDRCONFIG
                )
            except (OSError, UnicodeError):
                return Failure(f"DNS failure: cannot resolve {host}", False, False, Reason.DNS)
            cached = now + DNS_CACHE_SECONDS, [str(info[4][0]) for info in infos]
            self._resolved[host] = cached
        found = cached[1]
        public = [a for a in dict.fromkeys(found) if is_public(ipaddress.ip_address(a))]
        if not public:
            refused = self.guard.none_public(host, found)
            words = f"private address refused (--no-private): {refused}"
            return Failure(words, False, False, Reason.REFUSED)
        listed = ",".join(f"[{a}]" if ":" in a else a for a in public)
        return f"{host}:{port}:{listed}"

    def _header_lines(self, headers: Mapping[str, str]) -> tuple[list[str], str | None]:
        """libcurl's lines for the headers (``Name;``: sent empty, not left out), and the
        ``Cookie`` header's value apart: libcurl puts it in one line with the jar's."""
        if headers is not self._lines_of:
            self._lines = []
            self._cookie = None
            for name, value in headers.items():
                if name.lower() == "cookie":
                    self._cookie = value
                else:
                    self._lines.append(f"{name}: {value}" if value else f"{name};")
            self._lines_of = headers
        return self._lines, self._cookie

    def _ca_file(self, bundles: tuple[str, ...]) -> str:
        """One PEM file with the system's CAs and the bundles (libcurl reads files)."""
        path = self._ca_files.get(bundles)
        if path is None:
            sources = [self._system_ca.cafile, *bundles] if self._system_ca.cafile else bundles
            pem = b"\n".join(open(source, "rb").read() for source in sources)  # noqa: SIM115
            fd, path = tempfile.mkstemp(prefix="linkpatrol-ca-", suffix=".pem")
            with os.fdopen(fd, "wb") as file:
                file.write(pem)
            self._ca_files[bundles] = path
        return path

    def _verify(self, handle: Any, bundles: tuple[str, ...] | None) -> None:
        if bundles is None:
            handle.setopt(pycurl.SSL_VERIFYPEER, 0)
            handle.setopt(pycurl.SSL_VERIFYHOST, 0)
            return
        handle.setopt(pycurl.SSL_VERIFYPEER, 1)
        handle.setopt(pycurl.SSL_VERIFYHOST, 2)
        cafile = self._ca_file(bundles) if bundles else self._system_ca.cafile
        if cafile:
            handle.setopt(pycurl.CAINFO, cafile)
        if self._system_ca.capath:
            handle.setopt(pycurl.CAPATH, self._system_ca.capath)

    def _new_handle(self) -> Any:
        if self._cookies is None:
            self._cookies = pycurl.CurlShare()
            self._cookies.setopt(pycurl.SH_SHARE, pycurl.LOCK_DATA_COOKIE)
        handle = pycurl.Curl()
        handle.setopt(pycurl.COOKIEFILE, "")  # the cookie engine on, reading no file
        handle.setopt(pycurl.SHARE, self._cookies)
        handle.setopt(pycurl.NOSIGNAL, 1)
        handle.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
        handle.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1)
        handle.setopt(pycurl.ACCEPT_ENCODING, ACCEPT_ENCODING)
        handle.setopt(pycurl.PATH_AS_IS, 1)
        handle.setopt(pycurl.DNS_CACHE_TIMEOUT, DNS_CACHE_SECONDS)
        handle.setopt(pycurl.NOPROXY, "")  # the fetcher applied no_proxy already
        if self._reads_certificates:
            handle.setopt(pycurl.OPT_CERTINFO, 1)
        return handle

    async def send(self, request: Request) -> Response:
        """One request, no retry."""
        started = time.monotonic()
        url = request.url
        result = Response(method=request.method)
        failure: Failure | str | None = None
        if self._open() is None:
            failure = CLOSED
        else:
            try:
                scheme, host, port = _endpoint(origin(url) or url)
                self.guard.check_literal(host)
            except AddressRefused as exc:
                words = f"private address refused (--no-private): {exc}"
                failure = Failure(words, False, False, Reason.REFUSED)
            except ValueError as exc:
                failure = Failure(f"invalid URL: {exc}", False, False, Reason.INVALID_URL)
            else:
                if not url.isascii():
                    failure = Failure("invalid URL: not ASCII", False, False, Reason.INVALID_URL)
                elif request.proxy:
                    pass  # the proxy resolves the name
                elif never_resolves(host):
                    words = f"DNS failure: cannot resolve {host}"
                    failure = Failure(words, False, False, Reason.DNS)
                elif self.guard.refuses(host) and not is_ip(host):
                    failure = await self._public_addresses(host, port)
        if not isinstance(failure, Failure):
            assert self._loop is not None
            future = self._loop.create_future()
            transfer = _Transfer(
                self, result, request.want_body, request.any_type, request.limit, future
            )
            handle = self._prepare(transfer, request, failure)
            verified: tuple[str, int] | None = None
            if scheme == "https":
                bundles = self.tls.for_host(host, port, request.ca_bundle, not request.insecure)
                self._verify(handle, bundles)
                if bundles is not None and self._reads_certificates:
                    verified = host, port
            failure = await self._perform(
                handle, transfer, host, request.proxy, request.timeout, verified
            )
        if failure is not None:
            result.error, result.transient, result.reachable, result.reason = failure
            result.status = None
            result.body = None
        result.elapsed = time.monotonic() - started
        return result

    def _prepare(self, transfer: _Transfer, request: Request, pinned: str | None) -> Any:
        """An easy handle set up for one request (``pinned``: a RESOLVE entry)."""
        handle = self._idle.pop() if self._idle else self._new_handle()
        handle.setopt(pycurl.URL, request.url)
        method = request.method
        if method == "HEAD":
            handle.setopt(pycurl.NOBODY, 1)
        else:
            handle.setopt(pycurl.HTTPGET, 1)
            if method != "GET":
                handle.setopt(pycurl.CUSTOMREQUEST, method)
        lines, cookie = self._header_lines(request.headers)
        handle.setopt(pycurl.HTTPHEADER, lines)
        if cookie is not None:
            handle.setopt(pycurl.COOKIE, cookie)
        else:
            handle.unsetopt(pycurl.COOKIE)
        milliseconds = max(1, round(request.timeout * 1000))
        handle.setopt(pycurl.TIMEOUT_MS, milliseconds)
        handle.setopt(pycurl.CONNECTTIMEOUT_MS, milliseconds)
        proxy = request.proxy
        # the proxy the fetcher chose; "": none, not the environment's either
        handle.setopt(pycurl.PROXY, proxy.url if proxy is not None else "")
        if proxy is not None and proxy.username is not None:
            handle.setopt(pycurl.PROXYUSERNAME, proxy.username)
            handle.setopt(pycurl.PROXYPASSWORD, proxy.password or "")
        else:
            handle.unsetopt(pycurl.PROXYUSERNAME)
            handle.unsetopt(pycurl.PROXYPASSWORD)
        handle.setopt(pycurl.HEADERFUNCTION, transfer.on_header)
        handle.setopt(pycurl.WRITEFUNCTION, transfer.on_body)
        if pinned is not None:
            handle.setopt(pycurl.RESOLVE, [pinned])
            handle.setopt(pycurl.OPENSOCKETFUNCTION, transfer.on_open_socket)
            self._guarded.add(handle)
        elif handle in self._guarded:
            handle.setopt(pycurl.RESOLVE, [])
            handle.unsetopt(pycurl.OPENSOCKETFUNCTION)
            self._guarded.discard(handle)
        return handle

    async def _perform(
        self,
        handle: Any,
        transfer: _Transfer,
        host: str,
        proxy: Proxy | None,
        timeout: float,
        verified: tuple[str, int] | None = None,
    ) -> Failure | None:
        """Run the transfer to its end; why it failed, if it did. ``verified``: the host
        and port whose certificate was verified, whose end the answer carries."""
        assert self._loop is not None
        transfer.deadline = self._loop.time() + timeout * 2
        self._add(handle, transfer)
        try:
            code, message = await transfer.future
        except BaseException:  # cancelled: the transfer must not outlive its request
            if self._multi is not None:
                self._give_up(handle, self._multi, CLOSED_CODE)
            raise
        if code in (CLOSED_CODE, GIVEN_UP_CODE):
            if code == GIVEN_UP_CODE:
                return Failure(f"timeout after {timeout:g}s", True, True, Reason.TIMEOUT)
            return CLOSED
        # no new connection made: the host keeps them open between requests
        transfer.result.reused = code == 0 and handle.getinfo(pycurl.NUM_CONNECTS) == 0
        if verified is not None:
            transfer.result.cert_expires = self._certificate_end(handle, verified)
        if transfer.result.method in ("GET", "HEAD") and self._multi is not None:
            self._idle.append(handle)
        else:
            handle.close()
        if transfer.failure is not None:
            return transfer.failure
        transfer.parse_head()
        if code == 0 or (transfer.stopped and code == E_WRITE_ERROR):
            if transfer.status is None:
                return NOT_HTTP
            if (
                proxy is not None
                and transfer.status == PROXY_AUTHENTICATION_REQUIRED
                and not handle.getinfo(pycurl.HTTP_CONNECTCODE)
            ):  # not tunnelled: the proxy's own answer
                return proxy_refused(transfer.status, proxy.username is not None)
            transfer.finish()
            return None
        if transfer.status is not None:
            transfer.read_head()
            if code == E_BAD_CONTENT_ENCODING and UNKNOWN_ENCODING in message:
                # an encoding no decoder knows: browsers pass such a body through, so the
                # answer stands; what the body holds cannot be read
                return None
        return self._describe(code, message, handle, transfer, host, proxy, timeout)

    def _certificate_end(self, handle: Any, endpoint: tuple[str, int]) -> float | None:
        """When the host's certificate ends: as the handshake of a new connection showed
        it, else (a connection kept open) as the last one did."""
        chain = handle.getinfo(pycurl.INFO_CERTINFO)
        if chain:
            self._cert_expires[endpoint] = certificate_expires(chain)
        return self._cert_expires.get(endpoint)

    def _describe(
        self,
        code: int,
        message: str,
        handle: Any,
        transfer: _Transfer,
        host: str,
        proxy: Proxy | None,
        timeout: float,
    ) -> Failure:
        """Why a transfer failed, in words and as what may be made of it."""
        refused = None
        if code == E_COULDNT_CONNECT and transfer.refused:
            refused = str(self.guard.none_public(host, transfer.refused))
        error = CurlError(
            code,
            message,
            host,
            timeout,
            os_errno=handle.getinfo(pycurl.OS_ERRNO),
            proxy=proxy.url if proxy is not None else None,
            proxy_status=handle.getinfo(pycurl.HTTP_CONNECTCODE) if proxy else 0,
            proxy_login=proxy is not None and proxy.username is not None,
            refused=refused,
            status=transfer.status,
            content_length=transfer.content_length(),
            received=int(handle.getinfo(pycurl.SIZE_DOWNLOAD_T)) if code == E_PARTIAL_FILE else 0,
            encoding=transfer.headers.get("content-encoding", ""),
        )
        return describe_curl_error(error)


class CurlFetcher(Fetcher):
    """The fetcher a crawl uses: libcurl for the web, the local folder for ``file:`` URLs."""

    def __init__(self, settings: SiteSettings) -> None:
        sites = SiteMatcher(settings.site_tables)
        self.curl = CurlTransport(settings, max(settings.per_host, sites.max_per_host))
        super().__init__(settings, self.curl, FileTransport(settings.mount), sites)

    @property
    def acks_at_once(self) -> bool:
        """Answers are acknowledged as they arrive, since a body came late (see LATE_BODY)."""
        return self.curl.acks_at_once


def make_fetcher(settings: SiteSettings) -> Fetcher:
    """A fetcher for these settings."""
    return CurlFetcher(settings)


__all__ = ["CurlFetcher", "CurlTransport", "make_fetcher"]
