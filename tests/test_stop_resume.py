"""Stopping anywhere and resuming: kill -9, signals, a second crawler, the request limits."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import sitesrv
from tests.conftest import (
    Runner,
    Serve,
    assert_memory_intact,
    comparable,
    memory_done,
    memory_rows,
    running,
    wait_until,
)
from tests.sitesrv import Page, html

pytestmark = pytest.mark.backends

HOLD_LIMIT = 60.0  # a held request is always answered after this, so nothing hangs forever
SETTLE_LIMIT = 15.0  # seconds a held run may take to write what it was answered


class Gate:
    """Serves a dict of pages, answering the first ``after`` requests and holding the rest.

    Held requests wait until :meth:`release` (or ``HOLD_LIMIT``); ``held`` lists their paths.
    """

    def __init__(self, pages: dict[str, Page], after: int) -> None:
        self.pages = pages
        self.after = after
        self.opened = threading.Event()
        self.seen = 0
        self.held: list[str] = []
        self.holding = 0
        self._lock = threading.Lock()

    def site(self) -> dict[str, Any]:
        return {path: self._handler(page) for path, page in self.pages.items()}

    def _handler(self, page: Page) -> Callable[[Any], int]:
        def serve(request: Any) -> int:
            with self._lock:
                self.seen += 1
                hold = self.seen > self.after and not self.opened.is_set()
                if hold:
                    self.held.append(request.path)
                    self.holding += 1
            if hold:
                try:
                    self.opened.wait(HOLD_LIMIT)
                finally:
                    with self._lock:
                        self.holding -= 1
            return int(request._send_page(page, request.path))

        return serve

    def release(self) -> None:
        self.opened.set()

    def wait_holding(self, proc: subprocess.Popen[str], limit: float = 60.0) -> None:
        """Until the server has answered ``after`` requests and holds at least one more."""

        def holding() -> bool:
            running(proc)
            with self._lock:
                return self.seen > self.after and self.holding > 0

        wait_until(holding, limit, f"{self.after} requests answered and one more held")

    def wait_idle(self, limit: float = 30.0) -> None:
        """Until no request is held."""
        wait_until(lambda: self.holding == 0, limit, "the held requests to be answered")

    def interrupt(
        self,
        proc: subprocess.Popen[str],
        act: Callable[[subprocess.Popen[str]], None],
        ready: Callable[[], bool],
    ) -> tuple[str, str, set[str]]:
        """Once the run is held and ``ready`` says so, ``act`` on it, collect it, let go.

        Returns its stdout, stderr and the paths it was held on (its requests in flight
        as it stopped: those it sent between ``ready`` and ``act`` among them).
        """
        try:
            try:
                self.wait_holding(proc)
                wait_until(ready, SETTLE_LIMIT, "the run to be ready to be interrupted")
                act(proc)
                out, err = proc.communicate(timeout=30)
                with self._lock:  # none had its answer: they are answered once it is gone
                    held = set(self.held)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate(timeout=30)
        finally:
            self.release()
        self.wait_idle()
        return out, err, held


def generated_site(indexes: int, per_index: int) -> dict[str, Page]:
    """A home page, index pages, content pages linking around, and a few broken links."""
    pages: dict[str, Page] = {
        "/robots.txt": Page("User-agent: *\nDisallow: /private/\n", content_type="text/plain"),
    }
    home = ["<html><body>"] + [f'<a href="/idx/{i}.html">index {i}</a>' for i in range(indexes)]
    pages["/"] = Page(html(*home, '<a href="/private/x">private</a>', "</body></html>"))
    for i in range(indexes):
        lines = ["<html><body>", '<a href="/">home</a>']
        lines += [f'<a href="/p/{i}/{j}.html">page {j}</a>' for j in range(per_index)]
        pages[f"/idx/{i}.html"] = Page(html(*lines, "</body></html>"))
        for j in range(per_index):
            body = ["<html><body>", f'<a href="/idx/{i}.html">up</a>']
            body.append(f'<a href="/p/{(i + 1) % indexes}/{j}.html">next</a>')
            if (i * per_index + j) % 37 == 5:
                body.append(f'<a href="/missing/{i}-{j}.html">gone</a>')
                pages[f"/missing/{i}-{j}.html"] = Page("<h1>not here</h1>", status=404)
            pages[f"/p/{i}/{j}.html"] = Page(html(*body, "</body></html>"))
    return pages


def repeated(site: sitesrv.TestSite) -> dict[str, int]:
    return {path: n for path, n in site.counts().items() if n > 1}


def remembered(site: sitesrv.TestSite, db: str) -> Callable[[], bool]:
    """Whether the memory has the outcome of every request the site has answered."""
    start = site.url("/")
    return lambda: {h.path for h in site.requests(probes=False)} <= memory_done(db, start)[3]


def test_kill_9_mid_crawl_then_resume_finishes_the_same_pass(
    run: Runner, serve: Serve, tmp_path: Path
) -> None:
    pages = generated_site(indexes=10, per_index=30)
    gate = Gate(pages, after=120)
    site = serve(gate.site())
    start = site.url("/")
    proc = run.popen("check", "--db", run.db, "--format", "json", start)
    # once the outcomes of the answered requests have reached the memory
    _, _, held = gate.interrupt(proc, lambda p: p.kill(), remembered(site, run.db))
    assert held
    assert proc.returncode == -signal.SIGKILL

    assert_memory_intact(run.db)
    passes = memory_rows(run.db, "SELECT id, complete FROM passes")
    assert len(passes) == 1 and passes[0][1] == 0
    killed = run("report", "--db", run.db, "--format", "json")
    assert killed.returncode == 3
    assert json.loads(killed.stdout)["complete"] is False

    code, resumed = run.check_json(start)
    gate.wait_idle()

    assert code == 1
    assert resumed["complete"] is True
    assert resumed["pass"] == passes[0][0]
    assert_memory_intact(run.db)
    # nothing this pass had an answer for was asked again; what was held was asked twice
    assert held and len(held) <= 8
    assert repeated(site) == {path: 2 for path in held}
    assert set(site.counts(probes=False)) == set(pages) - {"/private/x"}

    fresh_code, fresh = run.check_json(start, "--db", str(tmp_path / "fresh.db"))
    assert fresh_code == 1
    assert comparable(resumed) == comparable(fresh)
    assert resumed["summary"]["urls"] == fresh["summary"]["urls"] == len(pages)


def small_site(count: int) -> dict[str, Page]:
    links = [f'<a href="/p/{k}.html">page {k}</a>' for k in range(count)]
    pages = {"/": Page(html("<html><body>", *links, "</body></html>"))}
    for k in range(count):
        if k % 10 == 3:
            pages[f"/p/{k}.html"] = Page("gone", status=404)
        else:
            pages[f"/p/{k}.html"] = Page(html("<p>", '<a href="/">home</a>', "</p>"))
    pages["/robots.txt"] = Page("", status=404)
    return pages


@pytest.mark.parametrize(
    ("signum", "fmt"),
    [(signal.SIGTERM, "json"), (signal.SIGINT, "text"), (signal.SIGHUP, "json")],
)
def test_signal_stops_saves_reports_incomplete_and_resumes(
    run: Runner, serve: Serve, signum: signal.Signals, fmt: str
) -> None:
    pages = small_site(40)
    gate = Gate(pages, after=12)
    site = serve(gate.site())
    start = site.url("/")
    proc = run.popen("check", "--db", run.db, "--format", fmt, start)
    out, err, held = gate.interrupt(proc, lambda p: p.send_signal(signum), remembered(site, run.db))

    assert proc.returncode == 3, (out, err)
    if fmt == "json":
        first = json.loads(out)
        assert first["complete"] is False
        assert first["stop_reason"] == signum.name
        pass_id = first["pass"]
    else:
        assert "INCOMPLETE" in out.splitlines()[0] and signum.name in out.splitlines()[0]
        assert "Summary:" in out
        pass_id = memory_rows(run.db, "SELECT max(id) FROM passes")[0][0]
    assert_memory_intact(run.db)

    code, second = run.check_json(start)
    gate.wait_idle()

    assert code == 1
    assert second["complete"] is True and second["pass"] == pass_id
    assert set(repeated(site)) <= held
    assert set(site.counts(probes=False)) == set(pages)
    assert second["summary"]["broken"] == 4


def test_second_ctrl_c_exits_at_once_and_the_memory_stays_usable(run: Runner, serve: Serve) -> None:
    pages = small_site(40)
    gate = Gate(pages, after=12)
    site = serve(gate.site())
    start = site.url("/")
    proc = run.popen("check", "--db", run.db, start, new_session=True)

    def ctrl_c_twice(p: subprocess.Popen[str]) -> None:
        # Ctrl-C on a terminal reaches the whole process group, parser processes too
        os.killpg(p.pid, signal.SIGINT)
        time.sleep(0.01)
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGINT)

    out, err, _ = gate.interrupt(proc, ctrl_c_twice, remembered(site, run.db))

    assert proc.returncode == 3, (out, err)
    assert "Traceback" not in err
    # either the second Ctrl-C cut the run short, or the report was already out
    assert "stopped at once" in err or out.startswith("linkpatrol"), (out, err)
    assert_memory_intact(run.db)

    code, second = run.check_json(start)

    assert code == 1, second
    assert second["complete"] is True
    assert set(site.counts(probes=False)) == set(pages)
    assert all(n <= 2 for n in site.counts().values())


@pytest.mark.backends("sqlite")  # PostgreSQL crawlers share a pass: tests/test_workers.py
def test_a_second_crawler_on_the_same_memory_is_refused(run: Runner, serve: Serve) -> None:
    pages = small_site(30)
    gate = Gate(pages, after=8)
    site = serve(gate.site())
    start = site.url("/")
    try:
        first = run.popen("check", "--db", run.db, "--format", "json", start)
        try:
            gate.wait_holding(first)
            # the answered requests are logged as their answers end: wait for all of them
            wait_until(
                lambda: len(site.requests(probes=False)) >= gate.after,
                10,
                "the answered requests logged",
            )
            before = len(site.requests(probes=False))  # a folder's probe may come later

            second = run.check(start)

            assert second.returncode == 2
            assert second.stdout == ""
            lines = second.stderr.splitlines()
            assert len(lines) == 1, second.stderr
            assert run.db in lines[0] and "another" in lines[0]
            assert len(site.requests(probes=False)) == before
            # reading the memory is fine meanwhile: the pass so far, marked incomplete
            reading = run("report", "--db", run.db)
            assert reading.returncode == 3, reading.stderr
            assert "INCOMPLETE, still running" in reading.stdout.splitlines()[0]
            assert first.poll() is None
            gate.release()
            out, err = first.communicate(timeout=60)
        finally:
            if first.poll() is None:
                first.kill()
                first.communicate(timeout=30)
    finally:
        gate.release()

    assert first.returncode == 1, err
    report = json.loads(out)
    assert report["complete"] is True
    assert report["summary"]["urls"] == len(pages) - 1
    assert max(Counter(h.path for h in site.requests()).values()) == 1


def test_max_requests_stops_with_exit_3_and_the_next_run_resumes(run: Runner, serve: Serve) -> None:
    pages = small_site(12)
    site = serve(pages)
    start = site.url("/")

    code, first = run.check_json(start, "--max-requests", "5", "--per-host", "2")

    assert code == 3
    assert first["complete"] is False and first["stop_reason"] == "max-requests"
    assert len(site.requests()) <= 5
    assert first["summary"]["requests"] <= 5

    runs = 1
    report = first
    while not report["complete"] and runs < 10:
        code, report = run.check_json(start, "--max-requests", "5", "--per-host", "2")
        runs += 1
        assert report["pass"] == first["pass"]
        assert code in (1, 3)

    assert report["complete"] is True and code == 1
    assert runs >= 3
    assert max(site.counts().values()) == 1
    assert set(site.counts(probes=False)) == set(pages)


def slow_page(body: str, pause: float) -> Callable[[Any], int]:
    def serve(request: Any) -> int:
        time.sleep(pause)
        return int(request._send_page(Page(body), request.path))

    return serve


@pytest.mark.backends("sqlite")  # the timer is the engine's; resuming is tested on both
def test_max_time_stops_a_slow_crawl_with_exit_3(run: Runner, serve: Serve) -> None:
    links = [f'<a href="/s/{k}">s</a>' for k in range(30)]
    pages: dict[str, Any] = {"/": Page(html("<body>", *links, "</body>"))}
    pages.update({f"/s/{k}": slow_page("<p>slow</p>", 0.5) for k in range(30)})
    site = serve(pages)

    proc = run.check(site.url("/"), "--max-time", "1", "--per-host", "4")

    assert proc.returncode == 3, proc.stderr
    assert "INCOMPLETE, stopped by max-time" in proc.stdout
    code, again = run.check_json(site.url("/"), "--per-host", "16")
    assert code == 0 and again["complete"] is True


def test_other_start_urls_start_a_pass_of_their_own_and_leave_the_first_to_resume(
    run: Runner, serve: Serve
) -> None:
    pages = small_site(6)
    site = serve(pages)

    code, stopped = run.check_json(site.url("/"), "--max-requests", "2")
    assert code == 3

    code, other = run.check_json(site.url("/p/0.html"))

    assert code == 0 and other["complete"] is True
    assert other["pass"] == stopped["pass"] + 1
    assert other["start_urls"] == [site.url("/p/0.html")]
    code, whole = run.check_json(site.url("/"))
    assert code == 1 and whole["complete"] is True and whole["pass"] == stopped["pass"]
    code, next_pass = run.check_json(site.url("/"))
    assert code == 1 and next_pass["pass"] == other["pass"] + 1


@pytest.mark.backends("sqlite")  # the signal handling is the command's, whatever the memory
def test_sigterm_while_the_run_is_prepared_stops_it_cleanly_before_any_request(
    run: Runner, serve: Serve
) -> None:
    """A signal that comes before the crawl's own handlers are in place (here while the
    sitemap is read) still stops the run the clean way: exit 3, an incomplete report."""
    asked = threading.Event()

    def slow_sitemap(request: Any) -> int:
        asked.set()
        time.sleep(1.5)
        sitemap = Page(
            '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<url><loc>{site.url('/')}</loc></url></urlset>",
            content_type="application/xml",
        )
        return int(request._send_page(sitemap, request.path))

    site = serve({"/": Page(html('<a href="/a.html">a</a>')), "/sitemap.xml": slow_sitemap})
    proc = run.popen(
        "check", "--db", run.db, "--format", "json", "--sitemap", site.url("/sitemap.xml")
    )
    try:
        assert asked.wait(30), "the sitemap was never asked for"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 3, err
    report = json.loads(out)
    assert report["complete"] is False and report["stop_reason"] == "SIGTERM"
    assert "SIGTERM: stopping" in err
    assert site.counts().get("/", 0) == 0
    assert_memory_intact(run.db)
