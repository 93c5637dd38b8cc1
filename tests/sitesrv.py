"""A real HTTP server on 127.0.0.1 serving a little site, logging every request it gets.

Each path maps to a :class:`Page` (fixed content, status and headers) or to a handler
function that writes the response itself (slow servers, endless bodies, gates).
Conditional requests are answered with 304 when the ETag or Last-Modified matches.
"""

from __future__ import annotations

import hashlib
import socket
import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Page:
    body: bytes | str = b""
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    etag: bool = True
    last_modified: float | None = 1_700_000_000.0

    def data(self) -> bytes:
        return self.body.encode("utf-8") if isinstance(self.body, str) else self.body


@dataclass(frozen=True)
class Hit:
    method: str
    path: str
    headers: dict[str, str]
    at: float
    status: int
    client: str = "127.0.0.1"


Handler = Callable[[BaseHTTPRequestHandler], int]

PROBE_PREFIX = "lp-"  # the start of the made-up name linkpatrol probes a folder with


def is_probe(path: str) -> bool:
    """A request for a made-up name, a folder's probe for soft 404s."""
    return path.partition("?")[0].rsplit("/", 1)[-1].startswith(PROBE_PREFIX)


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in separate sends
    server: _Server
    _left = False  # its answer has started: it no longer counts as active

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def send_response(self, code: int, message: str | None = None) -> None:
        self._answered()
        super().send_response(code, message)

    def _answered(self) -> None:
        """A request is active until its answer starts: the client may send its next one
        as soon as it has read this answer, before this thread gets to run again."""
        if not self._left:
            self._left = True
            self.server.site.leave()

    def _serve(self) -> None:
        site = self.server.site
        path = self.path
        self._left = False
        site.enter()
        try:
            entry = site.lookup(path)
            if entry is None:
                status = self._send_page(Page("<h1>not found</h1>", status=404), path)
            elif callable(entry):
                status = entry(self)
            else:
                status = self._send_page(entry, path)
        except (BrokenPipeError, ConnectionResetError):
            status = -1
        finally:
            self._answered()
        site.record(
            Hit(
                self.command,
                path,
                dict(self.headers.items()),
                time.time(),
                status,
                self.client_address[0],
            )
        )

    def _send_page(self, page: Page, path: str) -> int:
        data = page.data()
        headers = dict(page.headers)
        if page.etag and page.status == 200:
            headers.setdefault("ETag", '"' + hashlib.sha1(data).hexdigest()[:16] + '"')
        if page.last_modified is not None and page.status == 200:
            headers.setdefault("Last-Modified", formatdate(page.last_modified, usegmt=True))
        etag = headers.get("ETag")
        if page.status == 200 and (
            (etag and self.headers.get("If-None-Match") == etag)
            or (
                not self.headers.get("If-None-Match")
                and headers.get("Last-Modified")
                and self.headers.get("If-Modified-Since") == headers.get("Last-Modified")
            )
        ):
            self.send_response(304)
            for key in ("ETag", "Last-Modified"):
                if key in headers:
                    self.send_header(key, headers[key])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return 304
        self.send_response(page.status)
        if page.content_type:
            self.send_header("Content-Type", page.content_type)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        return page.status


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    site: TestSite
    tls_too: ssl.SSLContext | None = None  # TLS on the same port, for clients that start it
    tls_connections = 0

    def get_request(self) -> tuple[Any, Any]:
        """A connection that starts with a TLS handshake is served over TLS (when
        ``tls_too``), any other as plain HTTP: one port, both schemes."""
        conn, address = super().get_request()
        if self.tls_too is not None:
            conn.settimeout(5)
            try:
                first = conn.recv(1, socket.MSG_PEEK)
            except OSError:
                first = b""
            conn.settimeout(None)
            if first == b"\x16":  # a TLS record of the handshake
                self.tls_connections += 1
                conn = self.tls_too.wrap_socket(
                    conn, server_side=True, do_handshake_on_connect=False
                )
        return conn, address


class TestSite:
    """A site served on 127.0.0.1 (or ``host``) from a dict of paths; ``base`` is its root."""

    def __init__(
        self, pages: Mapping[str, Page | Handler] | None = None, host: str = "127.0.0.1"
    ) -> None:
        self.pages: dict[str, Page | Handler] = dict(pages or {})
        self.hits: list[Hit] = []
        self._lock = threading.Lock()
        self.active = 0
        self.max_active = 0
        self._server = _Server((host, 0), _RequestHandler)
        self._server.site = self
        self.port = self._server.server_address[1]
        self.base = f"http://{host}:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> TestSite:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def url(self, path: str) -> str:
        return self.base + path

    def serve_tls_too(self, context: ssl.SSLContext) -> None:
        """Answer https: on this port too, with this context (start it after)."""
        self._server.tls_too = context

    @property
    def tls_connections(self) -> int:
        return self._server.tls_connections

    def lookup(self, path: str) -> Page | Handler | None:
        return self.pages.get(path)

    def enter(self) -> None:
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)

    def leave(self) -> None:
        with self._lock:
            self.active -= 1

    def record(self, hit: Hit) -> None:
        with self._lock:
            self.hits.append(hit)

    def requests(self, method: str | None = None, probes: bool = True) -> list[Hit]:
        """The requests it got (with that method; without folders' probes, if not
        ``probes``)."""
        with self._lock:
            return [
                h
                for h in self.hits
                if (method is None or h.method == method) and (probes or not is_probe(h.path))
            ]

    def counts(self, method: str | None = None, probes: bool = True) -> Counter[str]:
        return Counter(h.path for h in self.requests(method, probes))

    def probes(self) -> Counter[str]:
        """The folders' probes it got, by folder."""
        return Counter(h.path.rsplit("/", 1)[0] + "/" for h in self.hits if is_probe(h.path))

    def clear(self) -> None:
        with self._lock:
            self.hits.clear()


class Held:
    """A page whose answer waits until the test lets it go (``release``), saying when it
    is asked (``started``); it answers on its own after ``most`` seconds."""

    def __init__(self, body: str, most: float = 60.0) -> None:
        self.body = body
        self.most = most
        self.started = threading.Event()
        self.release = threading.Event()

    def __call__(self, request: Any) -> int:
        self.started.set()
        self.release.wait(self.most)
        return int(request._send_page(Page(self.body), request.path))


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def html(*lines: str) -> str:
    """A page whose lines are exactly these (line 1 is the first argument)."""
    return "\n".join(lines) + "\n"
