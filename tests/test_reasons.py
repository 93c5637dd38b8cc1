"""Every verdict carries its reason, kept in the memory and shown by the reports: a site
whose links fail in every way a crawl can tell apart."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tests.conftest import Runner, Serve, by_url, memory_rows
from tests.sitesrv import Page, free_port, html
from tests.test_fetching import sleeper

pytestmark = pytest.mark.backends


def test_each_failure_has_its_reason_in_the_memory_and_every_report(
    run: Runner, serve: Serve
) -> None:
    closed = f"http://127.0.0.1:{free_port()}/"
    site = serve(
        {
            "/robots.txt": Page("User-agent: *\nDisallow: /private/\n", content_type="text/plain"),
            "/": Page(
                html(
                    '<a href="/gone">gone</a>',
                    '<a href="/forbidden">forbidden</a>',
                    f'<a href="{closed}">closed</a>',
                    '<a href="http://nowhere.invalid/">nowhere</a>',
                    '<a href="http://[::1/">bad</a>',
                    '<a href="/a.html#nope">anchor</a>',
                    '<a href="/private/x.html">private</a>',
                    '<a href="/loop">loop</a>',
                    '<a href="/slow">slow</a>',
                    '<a href="/d/e/f/g.html">deep</a>',
                )
            ),
            "/a.html": Page(html('<p id="here">here</p>')),
            "/gone": Page("gone", status=404, content_type="text/plain"),
            "/forbidden": Page("no", status=403, content_type="text/plain"),
            "/loop": Page("", status=301, headers={"Location": "/loop"}, etag=False),
            "/slow": sleeper(3.0),
        }
    )
    options = ("--check-anchors", "--timeout", "1s", "--retries", "0", "--max-depth", "2")

    code, report = run.check_json(site.url("/"), *options)

    assert code == 1
    reasons = {url: entry["reason"] for url, entry in by_url(report).items()}
    expected = {
        site.url("/"): None,
        site.url("/a.html"): None,
        site.url("/gone"): "http-status",
        site.url("/forbidden"): "http-status",
        closed: "connection",
        "http://nowhere.invalid/": "dns",
        "http://[::1/": "invalid-url",
        site.url("/a.html#nope"): "missing-anchor",
        site.url("/private/x.html"): "robots",
        site.url("/loop"): "redirect-loop",
        site.url("/slow"): "timeout",
        site.url("/d/e/f/g.html"): "limit",
    }
    assert reasons == expected
    # kept in the memory, with the change of verdict each made
    kept = dict(memory_rows(run.db, "SELECT url, reason FROM urls"))
    anchor = site.url("/a.html#nope")
    assert {url: kept[url] for url in expected if url != anchor} == {
        url: reason for url, reason in expected.items() if url != anchor
    }
    changes = by_url(report)[site.url("/slow")]["changes"]
    assert [c["reason"] for c in changes] == ["timeout"]

    # the people's formats name the kinds their words do not say
    text = run("report", "--db", run.db).stdout
    assert "broken: DNS failure: cannot resolve nowhere.invalid · kind: dns" in text
    assert "broken: HTTP 404 · never good" in text  # the status says it
    rows = list(
        csv.DictReader(io.StringIO(run("report", "--db", run.db, "--format", "csv").stdout))
    )
    assert {row["url"]: row["reason"] for row in rows}[site.url("/slow")] == "timeout"
    sarif = json.loads(run("report", "--db", run.db, "--format", "sarif").stdout)
    shown = {r["properties"]["reason"] for r in sarif["runs"][0]["results"]}
    assert {"dns", "timeout", "missing-anchor", "http-status"} <= shown
    page = run("report", "--db", run.db, "--format", "html").stdout
    assert '<span class="reason">dns</span>' in page
