"""Rate-limited hosts: a host that says it is limited slows down alone, and GitHub's token
goes to GitHub only.

A real server on 127.0.0.1 stands in for a rate-limited API (GitHub's kind): it lets
through at most so many requests each second, answers the rest 429 with Retry-After and
X-RateLimit-* headers, and announces what is left of its window on every answer. Another
server, the site itself, answers at once. The real command checks both in one run.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

from tests.conftest import Runner, Serve, by_url
from tests.sitesrv import Page, html
from tests.test_fetching import no_robots
from tests.test_sites import assert_nowhere, lower, written_by

PER_SECOND = 40  # requests the limited host lets through in each second's window
LIMITED_LINKS = 200
OTHER_LINKS = 60


class Window:
    """A fixed window of one second, as GitHub's (an hour long) and many others' are."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.lock = threading.Lock()
        self.second = 0
        self.used = 0
        self.let_through: list[int] = []  # the second of each request let through

    def take(self) -> tuple[bool, int, float]:
        """Whether a request is let through now, what is left, and when the window resets."""
        now = time.time()
        with self.lock:
            second = math.floor(now)
            if second != self.second:
                self.second, self.used = second, 0
            allowed = self.used < self.limit
            if allowed:
                self.used += 1
                self.let_through.append(second)
            return allowed, self.limit - self.used, second + 1.0


def limited(window: Window) -> Callable[[BaseHTTPRequestHandler], int]:
    def handle(h: BaseHTTPRequestHandler) -> int:
        allowed, left, reset = window.take()
        status = 200 if allowed else 429
        h.send_response(status)
        h.send_header("Content-Type", "text/plain")
        h.send_header("X-RateLimit-Limit", str(window.limit))
        h.send_header("X-RateLimit-Remaining", str(left))
        h.send_header("X-RateLimit-Reset", str(int(reset)))
        if not allowed:
            h.send_header("Retry-After", str(max(1, math.ceil(reset - time.time()))))
        body = b"fine" if allowed else b"slow down"
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)
        return status

    return handle


def test_a_limited_host_slows_alone_and_every_link_is_ok(run: Runner, serve: Serve) -> None:
    window = Window(PER_SECOND)
    api = serve(
        {
            "/robots.txt": no_robots(),
            **{f"/repos/r{i}": limited(window) for i in range(LIMITED_LINKS)},
        }
    )
    links = [f'<a href="{api.url(f"/repos/r{i}")}">r{i}</a>' for i in range(LIMITED_LINKS)]
    links += [f'<a href="/p{i}">p{i}</a>' for i in range(OTHER_LINKS)]
    site = serve(
        {
            "/robots.txt": no_robots(),
            "/": Page(html(*links)),
            **{f"/p{i}": Page("<p>fine</p>") for i in range(OTHER_LINKS)},
        }
    )
    token = f"ghp_{uuid.uuid4().hex}"
    env = {"GITHUB_TOKEN": token, "LINKPATROL_TOKEN_ORIGINS": api.base}

    started = time.monotonic()
    code, report = run.check_json(
        site.url("/"), "--retries", "0", "--per-host", "16", "--log", "check.log", "-vv", env=env
    )
    took = time.monotonic() - started

    # no false alarm: every link of the limited host is ok, none judged on a 429, though
    # none is retried: a refusal for the host's limit waits for the host, it is no failure
    urls = by_url(report)
    api_urls = [u for u in urls if u.startswith(api.base)]
    assert len(api_urls) == LIMITED_LINKS
    assert {urls[u]["state"] for u in api_urls} == {"ok"}, report
    assert code == 0
    # the host was never asked more than it allows, and refused little
    assert max(window.let_through.count(s) for s in set(window.let_through)) <= PER_SECOND
    hits = [h for h in api.requests() if h.path.startswith("/repos/")]
    refused = [h for h in hits if h.status == 429]
    assert len(refused) <= LIMITED_LINKS // 5, len(refused)
    # the other host was not slowed: its links were asked within a moment of the page,
    # while the limited host took several windows (a loaded machine may delay a straggler,
    # never all of them by the limited host's pace)
    page_at = min(h.at for h in site.requests() if h.path == "/")
    others = sorted(h.at - page_at for h in site.requests() if h.path.startswith("/p"))
    assert len(others) == OTHER_LINKS
    spread = max(h.at for h in hits) - min(h.at for h in hits)
    assert spread >= 1.0, spread
    assert others[len(others) // 2] < 0.5, others
    assert others[-1] < spread / 2, (others, spread)
    assert took < 15, took
    # the token went to the token host, every request, and nowhere else
    assert {lower(h).get("authorization") for h in hits} == {f"Bearer {token}"}
    assert all("authorization" not in lower(h) for h in site.requests())
    proc = run.check("--format", "json", site.url("/"), "--retries", "0", env=env)
    assert_nowhere([token], proc.stdout, proc.stderr, files=written_by(run))


def test_a_host_asking_for_too_long_a_pause_gets_a_clear_verdict(run: Runner, serve: Serve) -> None:
    def closed_for_an_hour(h: BaseHTTPRequestHandler) -> int:
        h.send_response(429)
        h.send_header("Retry-After", "3600")
        h.send_header("Content-Length", "0")
        h.end_headers()
        return 429

    api = serve({"/robots.txt": no_robots(), "/a": closed_for_an_hour, "/b": closed_for_an_hour})
    site = serve(
        {
            "/robots.txt": no_robots(),
            "/": Page(html(f'<a href="{api.url("/a")}">a</a>', f'<a href="{api.url("/b")}">b</a>')),
        }
    )

    started = time.monotonic()
    code, report = run.check_json(site.url("/"))

    assert code == 0  # warnings
    assert time.monotonic() - started < 10
    for path in ("/a", "/b"):
        entry = by_url(report)[api.url(path)]
        assert entry["state"] == "warning"
        assert entry["error"] == (
            "HTTP 429: the host asks for a pause of 3600 s, longer than 300 s"
        )
    assert api.counts()["/a"] == 1
