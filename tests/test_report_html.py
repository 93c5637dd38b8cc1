"""The HTML report: one self-contained file, its pictures, its table, and nothing it runs
but its own script.

A little site with hostile links is crawled three times (a link breaks, mends and breaks
again; another one appears in the last pass), so the report has a trend, "new" and
"flapping" markers, a redirect, a warning and URLs full of markup. The file is checked as
a document (lxml) and in a real headless Chromium (``tests.browser``): it renders, its table
sorts and filters, it works without JavaScript, and no payload from the crawled pages runs.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import struct
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from lxml import etree
from lxml import html as lxml_html

from linkpatrol.model import Action, State
from linkpatrol.report import Entry, Referrer, Report, Summary, build_report, render
from linkpatrol.report.html import MAX_REFERRERS, time_buckets
from linkpatrol.report.text import clean
from linkpatrol.store import Change, open_store
from tests.browser import Watch, new_page
from tests.browser import browser as browser_fixture
from tests.browser import chromium as chromium_fixture
from tests.conftest import Runner, Serve, by_url
from tests.sitesrv import Handler, Page
from tests.sitesrv import TestSite as LoopbackSite
from tests.sitesrv import html as page_lines

chromium, browser = chromium_fixture, browser_fixture  # pytest fixtures from tests.browser

if TYPE_CHECKING:
    from playwright.sync_api import Browser
    from playwright.sync_api import Page as BrowserPage

# links as a hostile page writes them (the page escapes them, its parser gives them back)
PAYLOADS = (
    '"><script>window.__pwned=1</script>',
    "<img src=x onerror=window.__pwned=1>",
    "</script><script>document.title='pwned'</script>",
    "</style><script>alert(1)</script>",
    "javascript:window.__pwned=1;document.title='pwned'",
    "data:text/html,<script>alert(1)</script>",
    'http://"><img src=x onerror=window.__pwned=1>/',  # invalid: kept as written, broken
    "http://</script><script>document.title='pwned'</script>/",
    "http://a\u2028b<svg onload=alert(1)>/",
    "/line\u2028sep\u2029.html",
)
BAD_LOCATION = 'http://"><script>window.__pwned=1</script>:0/'


def hostile_site(crawl: int) -> dict[str, Page | Handler]:
    """The site as it is on the ``crawl``-th crawl (1, 2, 3)."""
    links = [f'<a href="{html.escape(p, quote=True)}">x</a>' for p in PAYLOADS]
    a_links = ['<a href="/missing.html">again</a>']
    if crawl == 3:
        a_links.append('<a href="/new-missing.html">new</a>')
    return {
        "/": Page(
            page_lines(
                "<!doctype html><title>Home</title>",
                '<a href="/a.html">a</a>',
                '<a href="/missing.html">missing</a>',  # line 3
                '<a href="/old">moved</a>',
                '<a href="/flappy.html">sometimes</a>',
                '<a href="/private.html">private</a>',
                '<a href="/jump">jump</a>',
                '<a href="/error">error</a>',
                *links,
            )
        ),
        "/a.html": Page(page_lines("<p>", *a_links, "</p>")),
        "/old": Page("", status=301, headers={"Location": "/gone"}),
        "/flappy.html": Page("<p>up</p>") if crawl == 2 else Page("down", status=404),
        "/private.html": Page("no", status=403),
        "/jump": Page("", status=302, headers={"Location": BAD_LOCATION}),
        "/error": Page("oops", status=500),
    }


@dataclass
class Crawled:
    run: Runner
    site: LoopbackSite
    path: Path  # the HTML report the last check wrote
    json: dict[str, Any]
    report: Report
    doc: etree._Element

    def url(self, path: str) -> str:
        return self.site.url(path)

    @property
    def text(self) -> str:
        return self.path.read_text(encoding="utf-8")


def model(db: str) -> Report:
    store = open_store(db, crawl=False)
    try:
        return build_report(store)
    finally:
        store.close()


def parse(text: str) -> etree._Element:
    return lxml_html.document_fromstring(text)


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crawled]:
    run = Runner(tmp_path_factory.mktemp("html"))
    with LoopbackSite(hostile_site(1)) as site:
        for crawl in (1, 2, 3):
            site.pages = hostile_site(crawl)
            proc = run.check(
                site.url("/"), "--retries", "0", "--format", "html", "--output", "report.html"
            )
            assert proc.returncode == 1, proc.stderr
        data = json.loads(run("report", "--db", run.db, "--format", "json").stdout)
        path = run.cwd / "report.html"
        yield Crawled(run, site, path, data, model(run.db), parse(path.read_text("utf-8")))


def rows(doc: etree._Element) -> list[etree._Element]:
    return doc.findall('.//table[@id="problems"]/tbody/tr')


def row_url(row: etree._Element) -> str:
    return row.find("td").get("data-sort")


def chart_values(doc: etree._Element, chart: str) -> dict[str, int]:
    """label -> the number written on its bar, as the picture shows it."""
    svg = doc.find(f'.//figure[@data-chart="{chart}"]//svg')
    assert svg is not None, chart
    out = {}
    for bar in svg.iterfind('.//g[@class="bar"]'):
        written = bar.find('text[@class="value"]').text
        assert written.replace(",", "") == bar.get("data-value")
        out[bar.get("data-label")] = int(bar.get("data-value"))
    return out


def stat(doc: etree._Element, key: str) -> str:
    return doc.find(f'.//div[@data-stat="{key}"]/dd').text_content().strip()


# ---- the document ---------------------------------------------------------------------------


def sha256(source: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode()


def assert_self_contained_and_safe(doc: etree._Element) -> None:
    """One script and one style, both allowed by hash; nothing fetched; links only to the web."""
    scripts, styles = doc.findall(".//script"), doc.findall(".//style")
    assert len(scripts) == 1 and len(styles) == 1
    assert scripts[0].getparent().tag == "body" and scripts[0].get("src") is None
    head = doc.find("head")
    csp = head.find('meta[@http-equiv="Content-Security-Policy"]')
    assert csp is not None
    # the policy comes before the style and script it guards
    assert list(head).index(csp) < list(head).index(styles[0])
    policy = dict(
        (part.split()[0], part.split()[1:]) for part in csp.get("content").split(";") if part
    )
    assert policy["default-src"] == ["'none'"]
    assert policy["script-src"] == [f"'{sha256(scripts[0].text)}'"]
    assert policy["style-src"] == [f"'{sha256(styles[0].text)}'"]
    assert policy["img-src"] == ["data:"]
    for element in doc.iter():
        if not isinstance(element.tag, str):
            continue
        assert element.tag not in ("link", "img", "iframe", "object", "embed", "base", "form")
        for name, value in element.attrib.items():
            assert not name.lower().startswith("on"), (element.tag, name)
            assert name != "style" and name != "src" and not name.endswith("href:href")
            if name in ("href", "{http://www.w3.org/1999/xlink}href"):
                assert re.match(r"https?://", value) or value.startswith("#"), value
    for sheet in styles:
        assert "url(" not in sheet.text and "@import" not in sheet.text


def test_one_self_contained_file_with_a_policy_that_allows_only_its_own_code(
    crawled: Crawled,
) -> None:
    text = crawled.text

    assert text.startswith("<!DOCTYPE html>")
    assert_self_contained_and_safe(crawled.doc)
    assert text.count("<script") == 1 and text.count("</script>") == 1
    assert not re.search(r"\b(?:src|href)=\"(?!https?://127\.0\.0\.1|#)", text)
    title = crawled.doc.findtext(".//title")
    assert title.startswith("linkpatrol: ") and crawled.url("/") in title


def test_summary_and_pictures_show_the_reports_numbers(crawled: Crawled) -> None:
    doc, summary = crawled.doc, crawled.json["summary"]

    for key in ("urls", "requested", "parsed", "warnings", "requests"):
        assert stat(doc, key) == f"{summary[key]:,}", key
    assert stat(doc, "broken").split()[0] == str(summary["broken"])
    assert stat(doc, "elapsed").endswith(" s")
    meta = doc.find('.//section[@id="summary"]//p[@class="meta"]').text_content()
    assert f"Pass {crawled.json['pass']}" in meta and "complete" in meta and "UTC" in meta
    # the verdict picture: a bar per verdict, the same counts as the summary
    states = Counter(e["state"] for e in crawled.json["urls"])
    verdicts = chart_values(doc, "verdicts")
    assert verdicts == {state.value: states.get(state.value, 0) for state in State}
    assert verdicts["broken"] == summary["broken"] and verdicts["warning"] == summary["warnings"]
    # response times: every timed URL in one bucket
    timed = [e["response_ms"] for e in crawled.json["urls"] if e["response_ms"] is not None]
    assert chart_values(doc, "times") == dict(time_buckets(timed))
    assert sum(chart_values(doc, "times").values()) == len(timed) > 0
    # the pages holding the most broken links: "/" holds most; "/a.html" two, through no redirect
    pages = doc.find('.//figure[@data-chart="pages"]//svg')
    bars = pages.findall('.//g[@class="bar"]')
    holding = Counter(
        r["url"]
        for e in crawled.json["urls"]
        if e["reportable"]
        for r in {r["url"]: r for r in e["referrers"]}.values()
    )
    # the link through the redirect /old counts for the page linking to /old
    holding[crawled.url("/")] += 1
    del holding[crawled.url("/old")]
    shown = {bar.get("data-label"): int(bar.get("data-value")) for bar in bars}
    assert shown == dict(holding.most_common(10))
    assert bars[0].get("data-label") == crawled.url("/")
    assert bars[0].findtext("title").startswith(crawled.url("/"))  # the full URL as tooltip
    assert bars[0].find('text[@class="label"]').text == "/"
    # every picture has a text alternative
    for svg in doc.iterfind(".//svg"):
        assert svg.get("role") == "img" and svg.get("aria-label")
        assert svg.findtext("title") and svg.findtext("desc")


def test_trend_new_and_flapping_after_three_passes(crawled: Crawled) -> None:
    doc = crawled.doc

    points = doc.findall('.//figure[@data-chart="trend"]//g[@data-series="broken"]/g')
    passes = crawled.json["passes"]
    assert len(passes) == 3
    assert [(int(p.get("data-pass")), int(p.get("data-value"))) for p in points] == [
        (p["pass"], p["broken"]) for p in passes
    ]
    assert [p.findtext("text") for p in points] == [str(p["broken"]) for p in passes]
    marked = {
        kind: {row_url(r) for r in rows(doc) if r.find(f'.//*[@data-marker="{kind}"]') is not None}
        for kind in ("new", "flapping")
    }
    assert marked["new"] == {crawled.url("/new-missing.html"), crawled.url("/flappy.html")}
    assert marked["flapping"] == {crawled.url("/flappy.html")}
    assert {u for u, e in by_url(crawled.json).items() if e["new"]} == marked["new"]


def test_the_table_holds_every_problem_worst_first_in_plain_html(crawled: Crawled) -> None:
    report, table = crawled.report, rows(crawled.doc)

    assert [row_url(r) for r in table] == [clean(e.url) for e in report.reported]
    assert not report.not_yet_reported  # no --report-after here: see the made-up report below
    verdicts = Counter(r.get("data-verdict") for r in table)
    assert verdicts == {"broken": len(report.broken), "warning": len(report.warnings)}
    row = {row_url(r): r for r in table}
    missing = row[crawled.url("/missing.html")]
    cells = missing.findall("td")
    assert cells[0].find("a").get("href") == crawled.url("/missing.html")
    assert cells[1].text_content() == "broken"
    assert cells[2].get("data-sort") == "404" and cells[2].text_content() == "404"
    assert cells[3].find("time") is not None and cells[3].text_content().endswith("never good")
    linked = [
        (a.get("href"), li.text_content()) for li in cells[4].iter("li") for a in li.iter("a")
    ]
    assert linked == [(crawled.url("/"), "/:3"), (crawled.url("/a.html"), "/a.html:2")]
    gone = row[crawled.url("/gone")].findall("td")[4].text_content()
    assert gone == "/:4 (via /old)"
    assert row[crawled.url("/private.html")].get("data-verdict") == "warning"
    jump = row[crawled.url("/jump")].findall("td")[2]
    assert jump.get("data-sort") == "302"
    assert jump.findtext('span[@class="detail"]') == (
        "redirect to an invalid URL (invalid host): " + BAD_LOCATION
    )
    # no good URL is listed anywhere in the document
    assert crawled.url("/a.html") not in [row_url(r) for r in table]
    assert f'href="{crawled.url("/a.html")}"' in crawled.text  # ...only as a referring page


def test_crawled_markup_is_shown_as_text_and_never_linked_unless_http(crawled: Crawled) -> None:
    doc, urls = crawled.doc, by_url(crawled.json)

    hostile = [u for u, e in urls.items() if e["reportable"] and ("<" in u or "%3C" in u)]
    assert len(hostile) >= 7
    row = {row_url(r): r for r in rows(doc)}
    for url in hostile:
        cell = row[clean(url)].find("td")
        assert cell.text_content() == clean(url)
        anchor = cell.find("a")
        if anchor is not None:  # crawled URLs in canonical form: percent-encoded
            assert anchor.get("href") == url and re.match(r"https?://[^\"<> ]+$", url)
        else:  # kept as written because invalid: text only
            assert urls[url]["error"].startswith("invalid URL")
    for scheme in ("javascript:", "data:"):
        assert scheme not in " ".join(a.get("href", "") for a in doc.iter("a"))
    assert_self_contained_and_safe(doc)


# ---- reports made by hand: text no crawl can produce, sizes no test wants to crawl ---------

RAW = (
    '"><script>window.__pwned=1</script>',
    "</script><script>document.title='pwned'</script>",
    "</style><img src=x onerror=\"window.__pwned=1;alert('x')\">",
    "<svg onload=alert(1)>\u2028\u2029'\"`",
    "javascript:window.__pwned=1",
    "\x1b[31mred\x00",
)


def entry(url: str, state: State = State.BROKEN, **kw: Any) -> Entry:
    values: dict[str, Any] = dict(
        url=url,
        action=Action.CHECK,
        state=state,
        http_status=404,
        error="HTTP 404",
        content_type=None,
        redirect_to=None,
        reportable=state is State.BROKEN,
        last_checked=1_800_000_000.0,
        last_good=None,
        failing_since=1_799_000_000.0,
        referrers=[Referrer("http://h/", 3)],
        response_ms=42.0,
    )
    values.update(kw)
    return Entry(**values)


def made_report(entries: list[Entry], **kw: Any) -> Report:
    broken = sum(1 for e in entries if e.state is State.BROKEN)
    summary = Summary(len(entries), len(entries), 1, broken, broken, 0, 0, len(entries), 0.5)
    values: dict[str, Any] = dict(
        version="0",
        complete=True,
        pass_id=2,
        started_at=1_800_000_000.0,
        finished_at=1_800_000_001.0,
        start_urls=["http://h/"],
        summary=summary,
        entries=entries,
    )
    values.update(kw)
    return Report(**values)


def hostile_report() -> Report:
    """Every text field holding raw markup and script, as no canonical URL would."""
    entries = [
        entry(
            f"http://h/{n}{payload}",
            error=payload,
            content_type=payload,
            redirect_to=payload,
            referrers=[Referrer(payload, 1), Referrer(f"http://h/p{n}", 2)],
        )
        for n, payload in enumerate(RAW)
    ]
    entries += [entry(payload, error=payload) for payload in RAW]
    return made_report(entries, start_urls=[RAW[0]], stop_reason=RAW[1], complete=False)


def test_raw_markup_in_every_field_stays_text() -> None:
    text = render(hostile_report(), "html")

    doc = parse(text)
    assert_self_contained_and_safe(doc)
    assert "window.__pwned" not in doc.find(".//script").text
    shown = doc.find(".//tbody").text_content()
    for payload in RAW:
        assert clean(payload) in shown
    assert clean(RAW[1]) in doc.find('.//p[@class="incomplete"]').text_content()
    statuses = [r.findall("td")[2] for r in rows(doc)]
    assert {s.get("title") for s in statuses} - {None} == {f"Content-Type: {clean(p)}" for p in RAW}
    assert "\x1b" not in text and "\x00" not in text


def test_not_reported_yet_rows_are_marked_and_flapping_counts_changes() -> None:
    day = 86_400.0
    flapping = entry(
        "http://h/flaps",
        changes=[Change(1_800_000_000.0 - n * day, n, State.BROKEN, 404, None) for n in range(3)],
    )
    flapping.flips = 3
    waiting = entry("http://h/waiting", reportable=False, failing_since=1_800_000_000.0)
    report = made_report([entry("http://h/a"), flapping, waiting])

    doc = parse(render(report, "html"))

    table = {row_url(r): r for r in rows(doc)}
    assert table["http://h/waiting"].get("data-verdict") == "pending"
    assert table["http://h/waiting"].findtext('.//span[@class="badge badge-pending verdict"]') == (
        "not reported yet"
    )
    marker = table["http://h/flaps"].find('.//*[@data-marker="flapping"]')
    assert marker is not None
    assert marker.get("title") == "3 changes of verdict in the last 7 passes"
    assert table["http://h/flaps"].find('.//*[@data-marker="verdicts"]') is not None
    assert table["http://h/a"].find('.//*[@data-marker="flapping"]') is None
    assert [row_url(r) for r in rows(doc)][-1] == "http://h/waiting"


def test_a_big_site_keeps_every_problem_but_no_good_url_and_few_referrers_per_row() -> None:
    good = [entry(f"http://h/ok/{n}", State.OK, reportable=False) for n in range(20_000)]
    referrers = [Referrer(f"http://h/page/{n}", 7) for n in range(200)]
    bad = [entry(f"http://h/bad/{n}", referrers=referrers) for n in range(1_000)]

    text = render(made_report(good + bad), "html")

    doc = parse(text)
    assert len(rows(doc)) == 1_000
    assert "http://h/ok/" not in text
    first = rows(doc)[0].findall("td")[4]
    assert len(first.findall(".//li")) == MAX_REFERRERS + 1
    assert first.findtext('.//li[@class="more"]').startswith("and 180 more pages")
    assert first.get("data-sort") == "200"
    assert len(text) < 5_000_000
    assert chart_values(doc, "verdicts")["ok"] == 20_000


def test_one_pass_has_no_trend_and_a_clean_site_says_so(run: Runner, serve: Serve) -> None:
    site = serve({"/": Page(page_lines(*(f'<a href="/p{n}">p</a>' for n in range(4))))})
    for n in range(4):
        site.pages[f"/p{n}"] = Page("<p>fine</p>")

    stopped = run.check(site.url("/"), "--format", "html", "--max-requests", "2", "-o", "r.html")
    cut = parse((run.cwd / "r.html").read_text("utf-8"))
    finished = run.check(site.url("/"), "--format", "html", "-o", "r.html")
    clean_doc = parse((run.cwd / "r.html").read_text("utf-8"))

    assert (stopped.returncode, finished.returncode) == (3, 0)
    banner = cut.find('.//p[@class="incomplete"]')
    assert banner is not None and "max-requests" in banner.text_content()
    assert cut.find('.//*[@data-complete="false"]') is not None
    assert clean_doc.find('.//*[@data-complete="true"]') is not None
    assert clean_doc.find('.//p[@class="headline"]').text_content() == "No broken links"
    assert clean_doc.find('.//table[@id="problems"]') is None
    assert clean_doc.findtext('.//p[@class="empty"]').startswith("No broken links")
    assert clean_doc.find('.//figure[@data-chart="trend"]') is None  # one pass, resumed
    assert clean_doc.find('.//figure[@data-chart="pages"]//p[@class="none"]') is not None


# ---- in a real browser ------------------------------------------------------------------------


def open_report(browser: Browser, path: Path, **kw: Any) -> tuple[BrowserPage, Watch]:
    page = new_page(browser, **kw)
    watch = Watch(page)
    page.goto(path.as_uri())
    return page, watch


def visible_urls(page: BrowserPage) -> list[str]:
    return page.locator("#problems tbody tr:visible td.link").evaluate_all(
        "cells => cells.map(c => c.getAttribute('data-sort'))"
    )


def column(page: BrowserPage, index: int) -> list[str]:
    return page.locator(f"#problems tbody tr:visible td:nth-child({index})").evaluate_all(
        "cells => cells.map(c => c.getAttribute('data-sort'))"
    )


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_browser_shows_the_summary_pictures_and_table(
    browser: Browser, crawled: Crawled, tmp_path: Path
) -> None:
    page, watch = open_report(browser, crawled.path)

    assert page.locator('[data-stat="urls"] dd').inner_text() == str(
        crawled.json["summary"]["urls"]
    )
    assert page.locator('[data-stat="broken"] dd').is_visible()
    assert page.locator("svg.chart").count() == 4
    for chart in page.locator("svg.chart").all():
        box = chart.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 40
    assert page.locator("#problems tbody tr:visible").count() == len(rows(crawled.doc))
    # the style sheet applied and the script ran: both allowed by the policy, nothing blocked
    assert page.evaluate("getComputedStyle(document.body).fontSize") == "15px"
    assert page.locator("#problems thead th button").count() == 5
    assert (
        page.locator("#problems-shown").inner_text() == f"Showing all {len(rows(crawled.doc))} rows"
    )
    assert not watch.errors and not watch.dialogs
    assert watch.matching(lambda line: "Content Security Policy" in line) == []
    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    data = shot.read_bytes()
    width, height = png_size(data)
    assert width > 900 and height > 800 and len(data) > 20_000


def test_browser_sorts_by_clicking_a_column_header(browser: Browser, crawled: Crawled) -> None:
    page, watch = open_report(browser, crawled.path)
    link, _, status, since, _ = page.locator("#problems thead th").all()

    status.click()
    ascending = column(page, 3)
    status.click()
    descending = column(page, 3)
    since.click()
    by_since = column(page, 4)
    link.click()
    by_url_shown = visible_urls(page)

    numbers = sorted(int(s) for s in ascending if s)
    blanks = [s for s in ascending if not s]
    assert ascending == [str(n) for n in numbers] + blanks  # numeric; no status last
    assert descending == [str(n) for n in reversed(numbers)] + blanks
    assert numbers[0] < numbers[-1] and blanks  # there was something to sort
    assert status.get_attribute("aria-sort") is None and since.get_attribute("aria-sort") is None
    stamps = [float(s) for s in by_since if s]
    assert stamps == sorted(stamps) and len(set(stamps)) > 1  # pass 3's failures come last
    assert by_since[len(stamps) :] == [""] * (len(by_since) - len(stamps))
    assert by_url_shown == sorted(by_url_shown)
    assert link.get_attribute("aria-sort") == "ascending"
    assert not watch.errors


def test_browser_filters_by_text_and_verdict(browser: Browser, crawled: Crawled) -> None:
    page, watch = open_report(browser, crawled.path)
    everything = visible_urls(page)

    page.fill("#problems-filter", "missing")
    by_text = visible_urls(page)
    page.fill("#problems-filter", "")
    page.locator('#problems-tools input[value="broken"]').uncheck()
    warnings_only = visible_urls(page)
    shown = page.locator("#problems-shown").inner_text()
    page.locator('#problems-tools input[value="broken"]').check()
    page.locator('#problems-tools input[value="warning"]').uncheck()
    page.fill("#problems-filter", "a.html")  # the referring page /a.html
    broken_from_a = visible_urls(page)

    assert set(by_text) == {crawled.url("/missing.html"), crawled.url("/new-missing.html")}
    assert warnings_only == [crawled.url("/private.html")]
    assert shown == f"Showing 1 of {len(everything)} rows"
    assert set(broken_from_a) == {crawled.url("/missing.html"), crawled.url("/new-missing.html")}
    assert not watch.errors


def test_no_payload_runs_only_the_reports_own_script(
    browser: Browser, crawled: Crawled, tmp_path: Path
) -> None:
    made = tmp_path / "made.html"
    made.write_text(render(hostile_report(), "html"), encoding="utf-8")

    for path in (crawled.path, made):
        page, watch = open_report(browser, path)
        expected_title = parse(path.read_text("utf-8")).findtext(".//title")
        page.locator("#problems tbody tr").first.hover()
        page.locator("#problems thead th").nth(0).click()  # re-sorting moves every row

        assert watch.dialogs == []
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.title() == expected_title != "pwned"
        assert page.locator("#problems thead th button").count() == 5  # its own script ran
        assert page.locator("#problems-tools").count() == 1
        assert not watch.errors  # a violation of the policy is only a console message
        page.context.close()


def test_without_javascript_the_full_table_is_there_and_no_controls(
    browser: Browser, crawled: Crawled
) -> None:
    page, watch = open_report(browser, crawled.path, javascript=False)

    assert page.locator("#problems tbody tr:visible").count() == len(rows(crawled.doc))
    assert visible_urls(page) == [row_url(r) for r in rows(crawled.doc)]  # worst first
    assert page.locator("#problems-tools").count() == 0
    assert page.locator("#problems thead th button").count() == 0
    assert page.locator("svg.chart").first.is_visible()
    assert page.locator('[data-stat="urls"] dd').inner_text() == str(
        crawled.json["summary"]["urls"]
    )
    assert not watch.dialogs
