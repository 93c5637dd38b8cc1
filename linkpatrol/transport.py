"""The network behind one method: a :class:`Request` goes in, a :class:`Response` comes out.

The fetcher (:mod:`linkpatrol.fetch`: retries, limits, per-site settings) talks only to
a :class:`Transport`. Three answer it: libcurl's for the web
(:class:`~linkpatrol.curlfetch.CurlTransport`), the local folder's for ``file:`` URLs
(:class:`~linkpatrol.local.FileTransport`), and :class:`MemoryTransport`, canned answers
by URL, so that the engine and the rules are tested without a server.

What a transport promises, whichever it is: the body only of a 2xx answer to a request
that wants one, and only of a document with links (HTML, Markdown, CSS, PDF) unless
``any_type``; never more
than ``limit`` bytes of it (``truncated`` then); a failure as an ``error`` in the words
a user reads, never an exception.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from linkpatrol.model import LINKING_TYPES, PAGE_TYPES, Reason
from linkpatrol.proxies import Proxy


@dataclass(frozen=True, slots=True)
class Request:
    """One request as the fetcher settled it: every header to send, the body limit, the
    proxy it goes through, and what its ``[[site]]`` table says of the connection."""

    method: str
    url: str
    headers: Mapping[str, str]
    limit: int  # bytes of body kept at most
    timeout: float  # seconds for the whole exchange
    want_body: bool = False
    any_type: bool = False  # a body of any type, not only that of a document with links
    proxy: Proxy | None = None
    ca_bundle: str | None = None
    insecure: bool = False


@dataclass(slots=True)
class Response:
    """One HTTP exchange (the last attempt), or why there was none."""

    method: str
    status: int | None = None
    error: str | None = None
    reason: Reason | None = None  # what kind of failure left no status
    transient: bool = False
    reachable: bool = True
    content_type: str | None = None
    charset: str | None = None
    location: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    retry_after: float | None = None
    rate_remaining: int | None = None  # X-RateLimit-Remaining: requests left in the window
    rate_reset: float | None = None  # X-RateLimit-Reset: seconds until the window restarts
    body: bytes | None = None
    truncated: bool = False
    attempts: int = 1
    elapsed: float = 0.0
    reused: bool = False  # it went over a connection an earlier request left open
    sets_cookie: bool = False  # it carried a Set-Cookie header
    # when the host's certificate ends (POSIX time), as the handshake of the connection it
    # came over showed it; None for plain HTTP, an unverified host, or when not asked
    cert_expires: float | None = None

    @property
    def is_page(self) -> bool:
        """A document whose links and anchors can be read: HTML or Markdown."""
        return self.content_type in PAGE_TYPES

    @property
    def has_links(self) -> bool:
        """A document whose links can be read: a page, a stylesheet or a PDF."""
        return self.content_type in LINKING_TYPES


class Transport(Protocol):
    """Where requests go: one at a time each, many at once."""

    async def send(self, request: Request) -> Response:
        """The answer to one request (no retry), or why there was none."""
        ...

    async def close(self) -> None:
        """Let go of connections and files; requests still under way end as failures."""
        ...


Answer = Response | Callable[[Request], Response]
NOT_FOUND = Response("GET", 404)


class MemoryTransport:
    """Canned answers by URL, for tests without a server.

    An answer is a :class:`Response` or a function of the request that makes one; a URL
    not listed answers ``default`` (404). Each answer is given as a server's would be
    read: a copy, with the request's method, its body kept only where the request wants
    one and cut at its limit. Every request sent is kept in ``sent``, in order.
    """

    def __init__(
        self, answers: Mapping[str, Answer] | None = None, default: Answer = NOT_FOUND
    ) -> None:
        self.answers: dict[str, Answer] = dict(answers or {})
        self.default = default
        self.sent: list[Request] = []
        self.closed = False

    async def send(self, request: Request) -> Response:
        import asyncio  # here: the commands that only read the memory never load it

        self.sent.append(request)
        await asyncio.sleep(0)  # an answer comes on a later turn of the loop, as over a wire
        answer = self.answers.get(request.url, self.default)
        made = answer if isinstance(answer, Response) else answer(request)
        return as_read(made, request)

    async def close(self) -> None:
        self.closed = True

    def requested(self, method: str | None = None) -> list[str]:
        """The URLs requested (with that method), in order."""
        return [r.url for r in self.sent if method is None or r.method == method]


def as_read(response: Response, request: Request) -> Response:
    """A copy of ``response`` as a transport reads it for ``request`` (see the module)."""
    body = response.body
    truncated = response.truncated
    status = response.status
    wanted = (
        request.method != "HEAD"
        and request.want_body
        and status is not None
        and 200 <= status < 300
        and (response.has_links or request.any_type)
    )
    if not wanted:
        body, truncated = None, False
    elif body is not None and len(body) > request.limit:
        body, truncated = body[: request.limit], True
    return dataclasses.replace(response, method=request.method, body=body, truncated=truncated)


__all__ = ["MemoryTransport", "Request", "Response", "Transport", "as_read"]
