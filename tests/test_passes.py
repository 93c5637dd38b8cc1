"""Passes and what the memory buys: recheck-good, 304 reuse, ghost links, report-after."""

from __future__ import annotations

import pytest

from tests.conftest import Runner, Serve, by_url, comparable, memory_write
from tests.sitesrv import Page, html

pytestmark = pytest.mark.backends

DAY = 86400.0


def site_pages(outside: str) -> dict[str, Page]:
    return {
        "/": Page(
            html(
                "<html><body>",
                '<a href="/a.html">a</a>',
                '<a href="/b.html">b</a>',
                '<a href="/gone.html">gone</a>',
                f'<a href="{outside}/fine">outside</a>',
                '<a href="mailto:web@example.com">mail</a>',
                '<a href="http://[::1">not a URL</a>',
                "</body></html>",
            )
        ),
        "/a.html": Page(html("<p>", '<a href="/b.html">b</a>', '<img src="/img.png">', "</p>")),
        "/b.html": Page(html("<p>", '<a href="/">home</a>', "</p>")),
        "/img.png": Page(b"\x89PNG\r\n\x1a\n" + bytes(2000), content_type="image/png"),
        "/gone.html": Page("<h1>gone</h1>", status=404),
        "/robots.txt": Page("User-agent: *\nDisallow: /private/\n", content_type="text/plain"),
    }


def shift_times(db: str, url: str, days: float, *columns: str) -> None:
    """Make the memory believe these moments of one URL were ``days`` earlier."""
    sets = ", ".join(f"{c} = {c} - ?" for c in columns)
    changed = memory_write(
        db, f"UPDATE urls SET {sets} WHERE url = ?", (*[days * DAY] * len(columns), url)
    )
    assert changed == 1


def test_recheck_good_requests_nothing_found_good_recently(run: Runner, serve: Serve) -> None:
    far = serve({"/fine": Page("fine"), "/robots.txt": Page("", status=404)})
    site = serve(site_pages(far.base))
    code, first = run.check_json(site.url("/"))
    assert code == 1 and first["complete"]
    site.clear()
    far.clear()

    code, second = run.check_json(site.url("/"), "--recheck-good", "1d")

    assert code == 1
    assert second["complete"] is True and second["pass"] == first["pass"] + 1
    # robots.txt is remembered for a day; only what was broken is asked again
    assert [(h.method, h.path) for h in site.requests()] == [("GET", "/gone.html")]
    assert far.requests() == []
    assert second["summary"]["requests"] == 1
    assert comparable(second) == comparable(first)


def test_second_run_asks_conditionally_and_reuses_links_on_304(run: Runner, serve: Serve) -> None:
    far = serve({"/fine": Page("fine"), "/robots.txt": Page("", status=404)})
    site = serve(site_pages(far.base))
    code, first = run.check_json(site.url("/"))
    assert code == 1
    etags = {h.path: h for h in site.requests()}
    site.clear()
    far.clear()

    code, second = run.check_json(site.url("/"))

    assert code == 1 and second["complete"] is True
    assert comparable(second) == comparable(first)
    gets = {h.path: h for h in site.requests("GET")}
    assert set(gets) == {"/", "/a.html", "/b.html", "/img.png", "/gone.html"}
    for path, hit in gets.items():
        if path == "/gone.html":
            assert hit.status == 404 and "If-None-Match" not in hit.headers
        else:  # no page body downloaded again, none parsed again
            assert hit.status == 304, path
            assert hit.headers["If-None-Match"].startswith('"')
            assert hit.headers["If-Modified-Since"].endswith("GMT")
    assert etags.keys() >= gets.keys()
    assert second["summary"]["parsed"] == 0
    assert [(h.method, h.status) for h in far.requests()] == [("HEAD", 304)]
    assert by_url(second)[site.url("/b.html")]["http_status"] == 200

    # a page that changed is downloaded and parsed again, and its new links followed
    site.pages["/b.html"] = Page(html("<p>", '<a href="/">home</a>', '<a href="/new.html">n</a>'))
    site.pages["/new.html"] = Page("<p>new</p>")
    site.clear()

    code, third = run.check_json(site.url("/"))

    assert code == 1
    fetched = {h.path for h in site.requests("GET") if h.status == 200}
    assert fetched == {"/b.html", "/new.html"}
    assert third["summary"]["parsed"] == 2
    new = by_url(third)[site.url("/new.html")]
    assert new["state"] == "ok" and new["referrers"] == [{"url": site.url("/b.html"), "line": 3}]


def ghost_site() -> dict[str, Page]:
    return {
        "/": Page(html("<html><body>", '<a href="/a">a</a>', "</body></html>")),
        "/a": Page(html("<p>", '<a href="/b">b</a>', "</p>")),
        "/b": Page(html("<p>", '<a href="/c">c</a>', "</p>")),
        "/c": Page("<p>the end</p>"),
        "/robots.txt": Page("", status=404),
    }


def test_ghost_links_of_a_failing_page_are_still_followed(run: Runner, serve: Serve) -> None:
    site = serve(ghost_site())
    code, _ = run.check_json(site.url("/"))
    assert code == 0
    site.pages["/a"] = Page("<h1>oops</h1>", status=500)
    site.clear()

    code, report = run.check_json(site.url("/"))

    assert code == 1
    urls = by_url(report)
    assert urls[site.url("/a")]["state"] == "broken"
    assert urls[site.url("/a")]["http_status"] == 500
    assert urls[site.url("/a")]["last_good"] is not None
    ghost = urls[site.url("/b")]
    assert ghost["state"] == "ok"
    assert ghost["referrers"] == [{"url": site.url("/a"), "line": 2}]
    assert urls[site.url("/c")]["state"] == "ok"
    assert site.counts("GET")["/b"] == 1 and site.counts("GET")["/c"] == 1

    site.clear()
    code, without = run.check_json(site.url("/"), "--follow-ghost", "0")

    assert code == 1
    assert set(by_url(without)) == {site.url("/"), site.url("/a")}
    assert site.counts()["/b"] == 0 and site.counts()["/c"] == 0


def test_ghost_links_expire_after_follow_ghost(run: Runner, serve: Serve) -> None:
    site = serve(ghost_site())
    assert run.check_json(site.url("/"))[0] == 0
    site.pages["/a"] = Page("<h1>oops</h1>", status=500)
    shift_times(run.db, site.url("/a"), 3, "last_good", "last_checked")

    code, within = run.check_json(site.url("/"), "--follow-ghost", "7d")
    assert code == 1 and site.url("/b") in by_url(within)

    shift_times(run.db, site.url("/a"), 5, "last_good")  # now good 8 days ago
    site.clear()
    code, expired = run.check_json(site.url("/"))

    assert code == 1
    assert site.url("/b") not in by_url(expired)
    assert site.counts()["/b"] == 0


def flaky_site() -> dict[str, Page]:
    return {
        "/": Page(
            html(
                "<html><body>",
                '<a href="/flaky">flaky</a>',
                '<a href="/never">never</a>',
                "</body></html>",
            )
        ),
        "/flaky": Page("<p>up for now</p>"),
        "/never": Page("<h1>no</h1>", status=404),
        "/robots.txt": Page("", status=404),
    }


def test_report_after_reports_a_link_that_never_worked_at_once(run: Runner, serve: Serve) -> None:
    """The threshold damps outages of links that worked, not a typo added today."""
    site = serve(flaky_site())
    flaky, never = site.url("/flaky"), site.url("/never")

    code, first = run.check_json(site.url("/"), "--report-after", "3d")
    site.pages["/flaky"] = Page("<h1>down</h1>", status=503)
    proc = run.check(site.url("/"), "--report-after", "3d", "--retries", "0", "-q")

    assert code == 1 and [e["url"] for e in first["urls"] if e["reportable"]] == [never]
    assert proc.returncode == 1
    broken, waiting = proc.stdout.split("Broken links (1):", 1)[1].split("not reported yet (1)")
    assert never in broken and "never good" in broken and flaky not in broken
    assert flaky in waiting.split("Summary:")[0] and never not in waiting


def test_report_after_holds_back_new_failures_until_they_last(run: Runner, serve: Serve) -> None:
    """--damp-new: the threshold holds back links that never worked too."""
    site = serve(flaky_site())
    flaky, never = site.url("/flaky"), site.url("/never")

    code, first = run.check_json(site.url("/"), "--report-after", "2d", "--damp-new")

    assert code == 0
    entry = by_url(first)[never]
    assert (entry["state"], entry["reportable"]) == ("broken", False)
    assert first["summary"]["broken"] == 1 and first["summary"]["reportable"] == 0

    site.pages["/flaky"] = Page("<h1>down</h1>", status=503)
    proc = run.check(site.url("/"), "--report-after", "2d", "--retries", "0", "--damp-new")

    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "Broken links" not in text
    waiting = text.split("not reported yet (2)", 1)[1].split("\n\n", 1)[0]
    assert flaky in waiting and never in waiting
    assert "2 broken (0 reported)" in text

    # two days and more pass: what was good 3 days ago, and what never was, now count
    shift_times(run.db, flaky, 3, "last_good")
    shift_times(run.db, never, 3, "failing_since")
    code, later = run.check_json(
        site.url("/"), "--report-after", "2d", "--retries", "0", "--damp-new"
    )

    assert code == 1
    urls = by_url(later)
    assert urls[flaky]["reportable"] is True and urls[never]["reportable"] is True
    proc = run("report", "--db", run.db)
    assert proc.returncode == 1
    broken = proc.stdout.split("Broken links (2):", 1)[1]
    assert broken.index(never) < broken.index(flaky)  # never good comes first
    assert "never good" in broken and "last good" in broken
    assert run("report", "--db", run.db, "--report-after", "4d").returncode == 0  # as checked
