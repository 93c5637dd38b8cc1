"""Cookies within a run: what a server sets is sent back to it, as a browser sends it.

A site that sets a cookie and redirects to itself until the cookie comes back is fine
in a browser; so it is here. The jar lives for the run only, in memory: a cookie goes
back to the host that set it (``localhost`` and ``127.0.0.1`` are two hosts, even on one
server), a ``Secure`` one never over ``http://``, and no cookie value reaches the memory,
the report or the log. ``[[site]]`` cookies are sent alongside, in the same header.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import trustme

from linkpatrol.config import SiteSettings
from linkpatrol.fetch import COOKIE_ROUNDS, Fetcher
from linkpatrol.proxies import NO_PROXIES
from linkpatrol.transport import MemoryTransport, Response
from tests import sitesrv
from tests.conftest import Runner, Serve, by_url
from tests.sitesrv import Handler, Page, html
from tests.test_config import write
from tests.test_sites import assert_nowhere, written_by
from tests.test_tls import https_site

ROBOTS_OK = Page("User-agent: *\nAllow: /\n", content_type="text/plain")


class Gate:
    """A page that sets ``name=value`` and redirects to itself until the cookie comes
    back; the ``Cookie`` lines of each request it gets, as sent."""

    def __init__(self, body: str, name: str = "gate", attributes: str = "Path=/; HttpOnly"):
        self.value = f"v{uuid.uuid4().hex}"
        self.name = name
        self.body = body.encode()
        self.attributes = attributes
        self.cookies: list[list[str]] = []
        self._lock = threading.Lock()

    def __call__(self, h: BaseHTTPRequestHandler) -> int:
        lines = h.headers.get_all("Cookie") or []
        with self._lock:
            self.cookies.append(lines)
        if any(f"{self.name}={self.value}" in line for line in lines):
            h.send_response(200)
            h.send_header("Content-Type", "text/html")
            h.send_header("Content-Length", str(len(self.body)))
            h.end_headers()
            if h.command != "HEAD":
                h.wfile.write(self.body)
            return 200
        h.send_response(302)
        h.send_header("Location", h.path)
        h.send_header("Set-Cookie", f"{self.name}={self.value}; {self.attributes}")
        h.send_header("Content-Length", "0")
        h.end_headers()
        return 302


def cookie_lines(site: sitesrv.TestSite, host: str) -> list[str]:
    """Every ``Cookie`` header a request to ``host`` (as its Host header names it) carried."""
    return [
        h.headers["Cookie"]
        for h in site.requests()
        if h.headers.get("Host", "").startswith(host) and "Cookie" in h.headers
    ]


def test_a_site_that_wants_its_cookie_back_is_ok(run: Runner, serve: Serve) -> None:
    gate = Gate("<p>welcome</p>")
    site = serve({"/robots.txt": ROBOTS_OK, "/gate": gate})
    port = site.port
    site.pages["/"] = Page(html(f'<a href="http://localhost:{port}/gate">in</a>'))

    code, report = run.check_json(f"http://localhost:{port}/")

    entry = by_url(report)[f"http://localhost:{port}/gate"]
    assert entry["state"] == "ok", entry
    assert code == 0
    # asked without the cookie once, then with it
    assert [bool(lines) for lines in gate.cookies] == [False, True]


def test_a_cookie_goes_back_to_its_own_host_only(run: Runner, serve: Serve, tmp_path: Path) -> None:
    site = serve({"/robots.txt": ROBOTS_OK, "/elsewhere": Page("<p>x</p>")})
    port = site.port
    gate = Gate(
        html(
            f'<a href="http://localhost:{port}/after">same host</a>',
            f'<a href="http://127.0.0.1:{port}/elsewhere">another host, same server</a>',
        )
    )
    site.pages.update(
        {
            "/": Page(html(f'<a href="http://localhost:{port}/gate">in</a>')),
            "/gate": gate,
            "/after": Page("<p>after</p>"),
        }
    )
    log = tmp_path / "run.log"

    proc = run.check(f"http://localhost:{port}/", "--format", "json", "--log", str(log), "-vv")

    assert proc.returncode == 0, proc.stdout + proc.stderr
    secret = gate.value
    # the host that set it gets it back, on every later request ...
    assert f"gate={secret}" in "".join(cookie_lines(site, f"localhost:{port}"))
    assert [h.path for h in site.requests() if "Cookie" in h.headers and "/after" in h.path]
    # ... another host never, though the same server answers it
    assert [h.path for h in site.requests() if h.headers.get("Host", "").startswith("127.")]
    assert cookie_lines(site, "127.0.0.1") == []
    # kept for the run only: nowhere in the memory, the report, the log or the output
    assert log.exists()
    assert_nowhere([secret], proc.stdout, proc.stderr, files=written_by(run))


def test_a_sites_cookies_go_alongside_in_one_header(run: Runner, serve: Serve) -> None:
    gate = Gate("<p>welcome</p>")
    site = serve({"/robots.txt": ROBOTS_OK, "/gate": gate})
    port = site.port
    site.pages["/"] = Page(html(f'<a href="http://localhost:{port}/gate">in</a>'))
    write(
        run.cwd,
        "linkpatrol.toml",
        f'[[site]]\nprefix = "http://localhost:{port}/"\ncookies = {{ team = "blue" }}\n',
    )

    code, report = run.check_json(f"http://localhost:{port}/")

    assert by_url(report)[f"http://localhost:{port}/gate"]["state"] == "ok", report
    assert code == 0
    assert gate.cookies[0] == ["team=blue"]
    # one Cookie header with both (RFC 6265: never more than one)
    assert len(gate.cookies[-1]) == 1
    sent = sorted(part.strip() for part in gate.cookies[-1][0].split(";"))
    assert sent == sorted([f"gate={gate.value}", "team=blue"])


# ---- Secure: never over http:// -------------------------------------------------------------
# curl, as browsers, takes http://localhost and http://127.0.0.1 for secure: another
# loopback address is not


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def plain() -> Iterator[sitesrv.TestSite]:
    site = sitesrv.TestSite({"/robots.txt": ROBOTS_OK, "/page": Page("<p>x</p>")}, "127.0.0.2")
    site.start()
    yield site
    site.stop()


def test_a_secure_cookie_never_goes_over_http(
    run: Runner, ca: trustme.CA, plain: sitesrv.TestSite, tmp_path: Path
) -> None:
    gate = Gate(
        html(f'<a href="{plain.url("/page")}">the same host, over http</a>'),
        name="secure",
        attributes="Path=/; Secure",
    )
    pages: dict[str, Page | Handler] = {
        "/robots.txt": ROBOTS_OK,
        "/": Page(html('<a href="/gate">in</a>')),
        "/gate": gate,
    }
    site = https_site(ca, pages, "127.0.0.2")
    site.start()
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    try:
        code, report = run.check_json(site.url("/"), "--ca-bundle", str(bundle))
    finally:
        site.stop()

    assert by_url(report)[site.url("/gate")]["state"] == "ok", report
    assert by_url(report)[plain.url("/page")]["state"] == "ok", report
    assert code == 0
    assert [h.path for h in plain.requests()] == ["/robots.txt", "/page"]
    assert cookie_lines(plain, "127.0.0.2") == []


# ---- the fetcher's part, without a network ---------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "asked"),
    [
        (Response("GET", 302, location="/gate", sets_cookie=True), 1 + COOKIE_ROUNDS),
        (Response("GET", 302, location="/gate"), 1),  # no cookie: a loop, asked once
        (Response("GET", 302, location="/other", sets_cookie=True), 1),  # followed as a link
        (Response("GET", 200, sets_cookie=True), 1),
    ],
)
def test_only_a_redirect_to_itself_that_sets_a_cookie_is_asked_again(
    answer: Response, asked: int
) -> None:
    transport = MemoryTransport({"http://site.test/gate": answer})
    fetcher = Fetcher(SiteSettings(), transport, proxies=NO_PROXIES)

    response = asyncio.run(fetcher.fetch("GET", "http://site.test/gate"))

    assert response.status == answer.status
    assert transport.requested() == ["http://site.test/gate"] * asked
    assert fetcher.requests == asked
