"""The reports: the JSON shape against docs/report.schema.json, --xref, --output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from linkpatrol.model import Reason
from tests.conftest import Runner, Serve, by_url
from tests.sitesrv import Page, html
from tests.sitesrv import TestSite as LoopbackSite

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "docs" / "report.schema.json"


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def assert_valid(validator: Draft202012Validator, report: dict[str, Any]) -> None:
    errors = sorted(validator.iter_errors(report), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def varied_sites(serve: Serve) -> tuple[LoopbackSite, LoopbackSite]:
    """A site with every state: ok, broken, warning, redirect, disallowed, unchecked, record."""
    far = serve(
        {
            "/robots.txt": Page("User-agent: *\nDisallow: /private/\n", content_type="text/plain"),
            "/ok": Page("fine"),
            "/forbidden": Page("no", status=403),
            "/private/x": Page("never requested"),
        }
    )
    site = serve(
        {
            "/": Page(
                html(
                    "<!doctype html>",
                    "<html><body>",
                    '<a href="/a.html">a</a>',
                    '<a href="/missing.html">missing</a>',
                    '<a href="/old.html">moved</a>',
                    f'<a href="{far.url("/ok")}">outside</a>',
                    f'<a href="{far.url("/forbidden")}">forbidden</a>',
                    f'<a href="{far.url("/private/x")}">disallowed</a>',
                    '<a href="/a/b/c/d/e.html">too deep</a>',
                    '<a href="mailto:someone@example.com">mail</a>',
                    '<a href="/skip/me.html">ignored</a>',
                    "</body></html>",
                )
            ),
            "/a.html": Page(html('<a href="/">home</a>', '<img src="/img.png">')),
            "/img.png": Page(b"\x89PNG", content_type="image/png"),
            "/old.html": Page("", status=301, headers={"Location": "/new.html"}),
            "/new.html": Page(html("<p>new</p>")),
            "/a/b/c/d/e.html": Page("deep"),
            "/skip/me.html": Page("ignored"),
        }
    )
    return site, far


def ignore_rule(run: Runner, site: LoopbackSite) -> None:
    Path(run.cwd, "linkpatrol.toml").write_text(
        f'max-depth = 4\n[[rule]]\nprefix = "{site.url("/skip/")}"\naction = "ignore"\n',
        encoding="utf-8",
    )


def test_json_report_validates_and_holds_every_url_but_ignored(
    run: Runner, serve: Serve, validator: Draft202012Validator
) -> None:
    site, far = varied_sites(serve)
    ignore_rule(run, site)

    code, report = run.check_json(site.url("/"))

    assert code == 1
    assert_valid(validator, report)
    assert report["tool"] == "linkpatrol" and report["schema"] == 1
    assert report["complete"] is True and report["stop_reason"] is None
    assert report["start_urls"] == [site.url("/")]
    assert "links" not in report["urls"][0]
    urls = by_url(report)
    assert len(urls) == len(report["urls"]), "one entry per URL"
    expected = (
        {
            site.url(p)
            for p in (
                "/",
                "/a.html",
                "/missing.html",
                "/old.html",
                "/new.html",
                "/img.png",
                "/a/b/c/d/e.html",
            )
        }
        | {far.url(p) for p in ("/ok", "/forbidden", "/private/x")}
        | {"mailto:someone@example.com"}
    )
    assert set(urls) == expected
    states = {u: e["state"] for u, e in urls.items()}
    assert states[site.url("/a.html")] == "ok"
    assert states[site.url("/missing.html")] == "broken"
    assert states[site.url("/old.html")] == "redirect"
    assert states[far.url("/forbidden")] == "warning"
    assert states[far.url("/private/x")] == "disallowed"
    assert states[site.url("/a/b/c/d/e.html")] == "unchecked"
    assert states["mailto:someone@example.com"] == "unchecked"
    assert site.counts()["/skip/me.html"] == 0
    assert far.counts()["/private/x"] == 0

    summary = report["summary"]
    entries = report["urls"]
    assert summary["urls"] == len(entries)
    assert summary["broken"] == sum(e["state"] == "broken" for e in entries) == 1
    assert summary["reportable"] == sum(e["reportable"] for e in entries) == 1
    assert summary["warnings"] == sum(e["state"] == "warning" for e in entries) == 1
    assert summary["redirects"] == sum(e["state"] == "redirect" for e in entries) == 1
    assert summary["parsed"] == 3  # /, /a.html, /new.html
    assert summary["requests"] >= summary["requested"] >= 8


def test_redirect_referrer_has_null_line(run: Runner, serve: Serve) -> None:
    site, _ = varied_sites(serve)

    _, report = run.check_json(site.url("/"))

    urls = by_url(report)
    old = urls[site.url("/old.html")]
    assert (old["http_status"], old["redirect_to"]) == (301, site.url("/new.html"))
    assert old["referrers"] == [{"url": site.url("/"), "line": 5}]
    new = urls[site.url("/new.html")]
    assert new["referrers"] == [{"url": site.url("/old.html"), "line": None}]
    assert new["state"] == "ok"


def test_xref_json_validates_and_lists_links(
    run: Runner, serve: Serve, validator: Draft202012Validator
) -> None:
    site, far = varied_sites(serve)
    ignore_rule(run, site)

    _, report = run.check_json(site.url("/"), "--xref")
    again = run("report", "--db", run.db, "--format", "json", "--xref")

    assert_valid(validator, report)
    assert json.loads(again.stdout) == report
    urls = by_url(report)
    assert all("links" in e for e in report["urls"])
    home = urls[site.url("/")]["links"]
    assert [link["line"] for link in home] == [3, 4, 5, 6, 7, 8, 9, 10]
    assert {"url": far.url("/forbidden"), "line": 7} in home
    assert not [link for link in home if "/skip/" in link["url"]]
    assert urls[site.url("/a.html")]["links"] == [
        {"url": site.url("/"), "line": 1},
        {"url": site.url("/img.png"), "line": 2},
    ]
    assert urls[site.url("/old.html")]["links"] == [{"url": site.url("/new.html"), "line": None}]
    assert urls[site.url("/missing.html")]["links"] == []
    assert urls[far.url("/ok")]["links"] == []
    # every link is the other side of a referrer
    for entry in report["urls"]:
        for link in entry["links"]:
            assert {"url": entry["url"], "line": link["line"]} in urls[link["url"]]["referrers"]


def test_incomplete_pass_json_validates(
    run: Runner, serve: Serve, validator: Draft202012Validator
) -> None:
    site, _ = varied_sites(serve)

    proc = run.check(site.url("/"), "--format", "json", "--max-requests", "2")

    assert proc.returncode == 3, proc.stderr
    report = json.loads(proc.stdout)
    assert_valid(validator, report)
    assert report["complete"] is False
    assert report["stop_reason"] == "max-requests"


def test_text_report_xref_lists_links_both_ways(run: Runner, serve: Serve) -> None:
    site, far = varied_sites(serve)
    ignore_rule(run, site)

    proc = run.check(site.url("/"), "--xref")

    assert proc.returncode == 1, proc.stderr
    xref = proc.stdout.split("Cross-reference:", 1)[1].split("\nSummary:", 1)[0]
    blocks = {
        block.splitlines()[0].split()[0]: block
        for block in xref.strip("\n").split("\n\n")
        if block.strip()
    }
    as_json = run("report", "--db", run.db, "--format", "json").stdout
    assert set(blocks) == set(by_url(json.loads(as_json)))
    home = blocks[site.url("/")]
    assert "[parse, ok]" in home
    assert "linked from:\n      /a.html:1" in home
    links_to = home.split("links to:", 1)[1]
    for line, target in [
        (3, "/a.html"),
        (4, "/missing.html"),
        (6, far.url("/ok")),
        (10, "mailto:someone@example.com"),
    ]:
        assert f"      {target} (line {line})" in links_to
    a_page = blocks[site.url("/a.html")]
    assert "linked from:\n      /:3" in a_page
    assert "links to:\n      / (line 1)\n      /img.png (line 2)" in a_page
    assert "links to:\n      /new.html\n" in blocks[site.url("/old.html")] + "\n"
    assert "/old.html (redirect)" in blocks[site.url("/new.html")]
    assert "links to:" not in blocks[far.url("/ok")]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_output_file_gets_the_report_and_stdout_stays_empty(
    run: Runner, serve: Serve, fmt: str, validator: Draft202012Validator
) -> None:
    site = serve({"/": Page(html('<a href="/gone">gone</a>'))})

    (run.cwd / "out").mkdir()
    proc = run.check(site.url("/"), "--format", fmt, "--output", "out/report.txt")

    assert proc.returncode == 1
    assert proc.stdout == ""
    written = (run.cwd / "out" / "report.txt").read_text(encoding="utf-8")
    if fmt == "json":
        report = json.loads(written)
        assert_valid(validator, report)
        assert by_url(report)[site.url("/gone")]["state"] == "broken"
    else:
        assert "Broken links (1):" in written and site.url("/gone") in written


def test_output_to_an_unwritable_place_is_one_line(run: Runner, serve: Serve) -> None:
    site = serve({"/": Page("<p>hi</p>")})

    proc = run.check(site.url("/"), "--output", "no/such/dir/report.txt")

    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and "no/such/dir/report.txt" in proc.stderr
    assert site.counts() == {}, "refused before crawling"
    assert not Path(run.db).exists()


def test_report_times_are_written_as_datetime_writes_them_however_many_they_are() -> None:
    """Report times are remembered once written; more of them than are kept still come
    out right, and the same time twice comes out the same."""
    from datetime import UTC, datetime

    from linkpatrol.report import iso

    stamps = [1_700_000_000.0 + i * 0.37 for i in range(5_000)] + [-0.5, 0.0, 1e9 + 0.9999995]
    for _ in range(2):
        for stamp in stamps:
            assert iso(stamp) == datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds")
    assert iso(None) is None


def test_the_schema_names_every_reason_a_verdict_may_have() -> None:
    schema = json.loads((Path(__file__).parent.parent / "docs/report.schema.json").read_text())
    url = schema["$defs"]["url"]["properties"]
    change = url["changes"]["items"]["properties"]
    every = {r.value for r in Reason} | {None}
    assert set(url["reason"]["enum"]) == set(change["reason"]["enum"]) == every
