"""`linkpatrol serve` and `linkpatrol status`: the memory read live, over HTTP and in a terminal."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import pytest
from lxml import html as lxml_html

from tests.conftest import Runner, Serve, wait_until
from tests.sitesrv import Page
from tests.test_stop_resume import Gate, generated_site

START_LIMIT = 30.0  # seconds the dashboard may take to listen


@dataclass
class Answer:
    status: int
    headers: Message
    body: str

    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class Dashboard:
    base: str
    proc: subprocess.Popen[str]

    def get(self, path: str, method: str = "GET") -> Answer:
        request = urllib.request.Request(self.base.rstrip("/") + path, method=method)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return Answer(answer.status, answer.headers, answer.read().decode())
        except urllib.error.HTTPError as error:
            return Answer(error.code, error.headers, error.read().decode())


class StartDashboard(Protocol):
    """The ``dashboard_of`` fixture: serves a memory, stopped when the test ends."""

    def __call__(self, db: str, *extra: str) -> Dashboard: ...


def start_dashboard(db: str, cwd: Path, *extra: str) -> Dashboard:
    proc = subprocess.Popen(
        [sys.executable, "-m", "linkpatrol", "serve", "--db", db, "--port", "0", *extra],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()  # the one line saying where it listens
    assert " at http://" in line, f"no address: {line!r}"
    base = line.split(" at ", 1)[1].split()[0]
    return Dashboard(base, proc)


@pytest.fixture
def dashboard_of(tmp_path: Path) -> Iterator[StartDashboard]:
    started: list[Dashboard] = []

    def start(db: str, *extra: str) -> Dashboard:
        board = start_dashboard(db, tmp_path, *extra)
        started.append(board)
        return board

    yield start
    for board in started:
        if board.proc.poll() is None:
            board.proc.send_signal(signal.SIGTERM)
        board.proc.communicate(timeout=30)
        assert board.proc.returncode == 0


PAYLOAD = '"><script>window.__pwned=1</script>'


def injection_site() -> dict[str, Page]:
    return {
        "/": Page(
            "<html><body>\n"
            f"<a href='/x{PAYLOAD}'>one</a>\n"
            f"<a href='javascript:{PAYLOAD}'>two</a>\n"
            "<a href=\"/q?a='onmouseover='alert(1)\">three</a>\n"
            '<a href="/fine">fine</a>\n'
            "</body></html>"
        ),
        "/fine": Page("<p>fine</p>"),
    }


def test_dashboard_listens_on_loopback_with_a_strict_policy_on_every_answer(
    run: Runner, serve: Serve, dashboard_of: StartDashboard
) -> None:
    site = serve(injection_site())
    run.check_json(site.url("/"))

    board = dashboard_of(run.db)

    assert board.base.startswith("http://127.0.0.1:")
    for path in ("/", "/search?q=fine", f"/url?u={quote(site.url('/fine'))}", "/api/status"):
        answer = board.get(path)
        assert answer.status == 200, path
        policy = answer.headers["Content-Security-Policy"]
        assert "default-src 'none'" in policy and "script-src 'self'" in policy
        assert "'unsafe-inline'" not in policy
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
    missing = board.get("/url?u=" + quote(site.url("/never")))
    assert missing.status == 404 and "Content-Security-Policy" in missing.headers
    assert board.get("/", method="POST").status == 405
    assert board.get("/static/dashboard.js").headers["Content-Type"].startswith("text/javascript")


def test_search_and_url_pages_escape_crawled_text_and_link_only_to_the_web(
    run: Runner, serve: Serve, dashboard_of: StartDashboard
) -> None:
    site = serve(injection_site())
    run.check_json(site.url("/"))
    board = dashboard_of(run.db)

    results = board.get("/search?q=javascript")
    page = lxml_html.fromstring(results.body)

    shown = [a.text_content() for a in page.xpath("//table[@class='urls']//td[@class='url']/a")]
    assert any("<script>" in text for text in shown)  # shown as text...
    assert [s.get("src") for s in page.iter("script")] == [  # ...never run
        "/static/report.js",
        "/static/dashboard.js",
    ]
    assert "<script>window" not in results.body

    home = board.get("/url?u=" + quote(site.url("/")))
    tree = lxml_html.fromstring(home.body)
    hrefs = [a.get("href") for a in tree.iter("a")]
    assert hrefs and all(h.startswith(("/", "http://")) for h in hrefs), hrefs
    holds = [li.text_content() for li in tree.xpath("//ul[@class='refs']")[1].iter("li")]
    assert f"javascript:{PAYLOAD} line 3" in holds
    assert not any(h.startswith("javascript:") for h in hrefs)
    for element in tree.iter():
        assert not any(name.startswith("on") for name in element.attrib), element.attrib


def test_url_page_shows_history_referrers_with_lines_and_links(
    run: Runner, serve: Serve, dashboard_of: StartDashboard
) -> None:
    site = serve({"/": Page('<h1>home</h1>\n\n<a href="/flaky">flaky</a>'), "/flaky": Page("ok")})
    run.check_json(site.url("/"))
    site.pages["/flaky"] = Page("gone", status=404)
    run.check_json(site.url("/"))
    board = dashboard_of(run.db)

    answer = board.get("/url?u=" + quote(site.url("/flaky")))

    tree = lxml_html.fromstring(answer.body)
    changes = [
        [td.text_content() for td in row.iter("td")][1:4]
        for row in tree.xpath("//table[@class='changes']/tbody/tr")
    ]
    assert changes == [["2", "broken", "404"], ["1", "ok", "200"]]
    referrers = [li.text_content() for li in tree.xpath("//ul[@class='refs']")[0].iter("li")]
    assert referrers == [f"{site.url('/')} line 3 · open"]
    # the search finds it in any case, and the page links back to its referrer's page
    found = board.get("/search?q=FLAKY")
    assert site.url("/flaky") in found.body


def test_progress_of_a_crawl_in_another_process_is_live(
    run: Runner, serve: Serve, dashboard_of: StartDashboard
) -> None:
    gate = Gate(generated_site(indexes=4, per_index=10), after=20)
    site = serve(gate.site())
    crawl = run.popen("check", "--db", run.db, "--format", "json", site.url("/"))
    try:
        gate.wait_holding(crawl)
        board = dashboard_of(run.db)
        running = board.get("/api/status").json()
        status = json.loads(run("status", "--db", run.db, "--format", "json").stdout)
        text = run("status", "--db", run.db).stdout
    finally:
        gate.release()
        crawl.communicate(timeout=60)

    assert running["phase"] == "running" and not running["complete"]
    assert running["pending"] > 0 and running["seen"] > running["done"] > 0
    assert status["phase"] == running["phase"] and status["pass"] == running["pass"]
    assert ": running\n" in text and "waiting" in text

    def finished_status() -> dict[str, Any] | None:
        status: dict[str, Any] = board.get("/api/status").json()
        return status if status["complete"] else None

    finished = wait_until(finished_status, 30, "the pass to be complete", every=0.1)
    assert finished["pending"] == 0
    assert finished["done"] == finished["seen"] and finished["done"] > running["done"]
    assert finished["verdicts"]["broken"] > 0


def test_serve_refuses_a_missing_memory_and_a_busy_port(
    run: Runner, serve: Serve, tmp_path: Path
) -> None:
    missing = run("serve", "--db", str(tmp_path / "none.db"), "--port", "0")
    assert missing.returncode == 2
    assert "no such database" in missing.stderr

    site = serve({"/": Page("<p>hi</p>")})
    run.check_json(site.url("/"))
    busy = run("serve", "--db", run.db, "--port", str(site.port))
    assert busy.returncode == 2
    assert busy.stderr.startswith(f"linkpatrol: cannot listen on 127.0.0.1:{site.port}")
