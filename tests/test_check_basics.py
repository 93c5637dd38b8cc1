"""A small site crawled end to end: actions, verdicts, line numbers, reports, exit codes."""

from __future__ import annotations

import pytest

from tests.conftest import Runner, Serve, by_url
from tests.sitesrv import Page, free_port, html

pytestmark = pytest.mark.backends


def small_site(outside: str, dead: str) -> dict[str, Page]:
    return {
        "/": Page(
            html(
                "<!doctype html>",
                "<html><head><title>Home</title>",
                '<link rel="stylesheet" href="/style.css">',
                "</head><body>",
                '<a href="/docs/">Docs</a>',
                '<a href="/missing.html">gone</a>',
                f'<a href="{outside}/ok">outside ok</a>',
                f'<a href="{outside}/nope">outside 404</a>',
                f'<a href="{dead}/x">dead host</a>',
                '<a href="mailto:webmaster@example.com">mail</a>',
                '<a href="tel:+123">call</a>',
                '<img src="/logo.png" alt="">',
                "</body></html>",
            )
        ),
        "/style.css": Page("body{}", content_type="text/css"),
        "/logo.png": Page(b"\x89PNG\r\n", content_type="image/png"),
        "/docs/": Page(
            html(
                "<html><body>",
                '<a href="../">home</a>',
                '<a href="page.html">page</a>',
                "</body></html>",
            )
        ),
        "/docs/page.html": Page(html("<p>", "text", '<a href="/missing.html">again</a>', "</p>")),
    }


def test_crawl_reports_broken_links_with_pages_and_lines(run: Runner, serve: Serve) -> None:
    far = serve({"/ok": Page("fine"), "/robots.txt": Page("", status=404)})
    dead = f"http://127.0.0.1:{free_port()}"
    site = serve(small_site(far.base, dead))

    code, report = run.check_json(site.url("/"))

    assert code == 1
    urls = by_url(report)
    missing = urls[site.url("/missing.html")]
    assert missing["state"] == "broken"
    assert missing["http_status"] == 404
    assert missing["reportable"] is True
    assert sorted((r["url"], r["line"]) for r in missing["referrers"]) == [
        (site.url("/"), 6),
        (site.url("/docs/page.html"), 3),
    ]
    assert urls[far.url("/nope")]["state"] == "broken"
    assert urls[far.url("/ok")]["state"] == "ok"
    assert urls[dead + "/x"]["state"] == "broken"
    assert "refused" in urls[dead + "/x"]["error"]
    assert urls[site.url("/logo.png")]["state"] == "ok"
    assert urls[site.url("/logo.png")]["referrers"] == [{"url": site.url("/"), "line": 12}]
    mail = urls["mailto:webmaster@example.com"]
    assert (mail["action"], mail["state"], mail["reportable"]) == ("record", "unchecked", False)
    assert urls["tel:+123"]["action"] == "record"
    # inside the site: parsed; outside: only checked, never parsed
    assert urls[site.url("/docs/page.html")]["action"] == "parse"
    assert urls[far.url("/ok")]["action"] == "check"
    assert far.counts("GET")["/ok"] == 0 and far.counts("HEAD")["/ok"] == 1
    # the start URL is linked back from /docs/ only; the summary adds up
    assert urls[site.url("/")]["referrers"] == [{"url": site.url("/docs/"), "line": 2}]
    summary = report["summary"]
    assert summary["broken"] == 3
    assert summary["urls"] == len(report["urls"])
    assert summary["parsed"] == 4  # the pages and the site's stylesheet
    assert report["complete"] is True
    # every URL requested once at most (robots.txt aside)
    counts = site.counts()
    assert all(n == 1 for n in counts.values()), counts


def test_text_report_lists_broken_worst_first_with_relative_pages(
    run: Runner, serve: Serve
) -> None:
    far = serve({"/ok": Page("fine")})
    dead = f"http://127.0.0.1:{free_port()}"
    site = serve(small_site(far.base, dead))

    proc = run.check(site.url("/"))

    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert "Broken links (3):" in out
    block = out.split(site.url("/missing.html"), 1)[1].split("\n\n", 1)[0]
    assert "/:6" in block
    assert "/docs/page.html:3" in block
    assert "Summary:" in out and "3 broken" in out


def test_clean_site_exits_zero_and_quiet_prints_nothing(run: Runner, serve: Serve) -> None:
    site = serve({"/": Page(html("<a href='/a'>a</a>")), "/a": Page("ok")})

    proc = run.check(site.url("/"), "-q")

    assert proc.returncode == 0
    assert proc.stdout == ""
    assert proc.stderr == ""


def test_report_command_reads_memory_without_network(run: Runner, serve: Serve) -> None:
    site = serve({"/": Page(html("<a href='/gone'>x</a>"))})
    first = run.check(site.url("/"), "--format", "json")
    site.stop()

    again = run("report", "--db", run.db, "--format", "json")

    assert again.returncode == 1
    assert again.stdout == first.stdout
