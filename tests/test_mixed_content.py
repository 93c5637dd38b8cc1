"""Mixed content: an https: page that loads an http: image, script, stylesheet, frame or
media is warned of, naming the page and line; a plain link to http: is not. And with
--require-https, a good http: URL whose host serves https: too.

An HTTPS site on loopback (its certificate signed by a throw-away CA the check trusts
through SSL_CERT_FILE) embeds resources of a plain HTTP site, which also has a page of
its own embedding the same image. For --require-https, a site answers both schemes on
one port, as browsers upgrade a URL with a port of its own (the port stays).
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from typing import Any

import pytest
import trustme

from linkpatrol.extract import extract_html
from linkpatrol.markdown import extract_markdown
from linkpatrol.model import Action, LinkKind, Outcome, Reason, State
from linkpatrol.report import build_report
from linkpatrol.rules import (
    answers_over_https,
    https_available,
    https_counterpart,
    loaded_insecurely,
    mixed_content,
)
from linkpatrol.store import Discovered, open_store
from tests import sitesrv
from tests.conftest import Runner, memory_rows
from tests.hostile import https_site
from tests.sitesrv import Page, html

NAV = LinkKind.NAVIGATION.value
LOAD = LinkKind.SUBRESOURCE.value


# ---- the rules, as a table -------------------------------------------------------------


@pytest.mark.parametrize(
    ("page", "target", "kind", "mixed"),
    [
        ("https://a.test/", "http://b.test/i.png", LOAD, True),
        ("HTTPS://a.test/", "HTTP://b.test/i.png", LOAD, True),
        ("https://a.test/", "http://b.test/i.png", NAV, False),  # a link is followed
        ("http://a.test/", "http://b.test/i.png", LOAD, False),  # no security to lose
        ("https://a.test/", "https://b.test/i.png", LOAD, False),
        ("https://a.test/", "data:image/png;base64,AA", LOAD, False),
        ("file:///site/index.html", "http://b.test/i.png", LOAD, False),
    ],
)
def test_mixed_content_is_an_https_page_loading_an_http_url(
    page: str, target: str, kind: int, mixed: bool
) -> None:
    assert mixed_content(page, target, kind) is mixed


@pytest.mark.parametrize(
    ("state", "warned"),
    [
        (State.OK, True),  # a good answer does not make it safe to load
        (State.UNCHECKED, True),
        (State.BROKEN, False),  # its own verdict says more
        (State.WARNING, False),
        (State.REDIRECT, False),
        (State.DISALLOWED, False),
    ],
)
def test_a_url_loaded_insecurely_is_a_warning_unless_its_verdict_says_more(
    state: State, warned: bool
) -> None:
    verdict = loaded_insecurely(state)
    if warned:
        assert verdict == (State.WARNING, Reason.MIXED_CONTENT, "mixed content")
    else:
        assert verdict is None


# ---- which links are loaded into their page --------------------------------------------

ELEMENTS = html(
    '<link rel="stylesheet" href="s.css"><link rel="canonical" href="c.html">',
    '<link rel="shortcut icon" href="f.ico"><link rel="preconnect" href="https://cdn.test">',
    '<script src="a.js"></script><img src="i.png" srcset="i2.png 2x">',
    '<iframe src="f.html"></iframe><video poster="p.jpg"><source src="v.mp4"></video>',
    '<audio src="s.ogg"></audio><object data="o.svg"></object><embed src="e.swf">',
    '<input type="image" src="b.png"><a href="l.html" style="background: url(bg.png)">l</a>',
    '<area href="m.html"><blockquote cite="q.html"></blockquote>',
    '<meta http-equiv="refresh" content="5; url=r.html"><style>p { background: url(st.png) }',
    "</style>",
)


def test_the_extractor_tells_loaded_links_from_followed_ones() -> None:
    kinds = {link.url: link.kind for link in extract_html(ELEMENTS.encode()).links}

    loaded = {"s.css", "f.ico", "a.js", "i.png", "i2.png", "f.html", "p.jpg", "v.mp4"}
    loaded |= {"s.ogg", "o.svg", "e.swf", "b.png", "bg.png", "st.png"}
    followed = {"c.html", "l.html", "m.html", "q.html", "r.html"}
    assert {url for url, kind in kinds.items() if kind == LOAD} == loaded
    assert {url for url, kind in kinds.items() if kind == NAV} == followed


def test_a_markdown_image_is_loaded_and_a_markdown_link_followed() -> None:
    page = extract_markdown(b"![logo](http://b.test/i.png) and [a page](http://b.test/)\n")

    assert [(link.url, link.kind) for link in page.links] == [
        ("http://b.test/i.png", LOAD),
        ("http://b.test/", NAV),
    ]


# ---- the report of a real check --------------------------------------------------------


@pytest.fixture
def plain() -> Iterator[sitesrv.TestSite]:
    """The plain HTTP site: resources, and a page of its own that shows the same image."""
    site = sitesrv.TestSite(
        {
            "/robots.txt": Page("", status=404),
            "/logo.png": Page(b"png", content_type="image/png"),
            "/app.js": Page("1", content_type="text/javascript"),
            "/style.css": Page("p {}", content_type="text/css"),
            "/frame.html": Page(html("<p>frame</p>")),
            "/clip.mp4": Page(b"mp4", content_type="video/mp4"),
            "/sound.ogg": Page(b"ogg", content_type="audio/ogg"),
            "/about.html": Page(html("<p>about</p>")),
        }
    )
    site.pages["/page.html"] = Page(html("<p>plain</p>", f'<img src="{site.url("/logo.png")}">'))
    site.start()
    yield site
    site.stop()


@pytest.fixture
def secure(ca: trustme.CA, plain: sitesrv.TestSite) -> Iterator[sitesrv.TestSite]:
    """The HTTPS site whose home page loads the plain site's resources."""
    p = plain.url
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    site = https_site(
        {
            "/robots.txt": Page("", status=404),
            "/": Page(
                html(
                    "<!doctype html><html><head>",
                    f'<link rel="stylesheet" href="{p("/style.css")}">',
                    f'<script src="{p("/app.js")}"></script>',
                    "</head><body>",
                    f'<img src="{p("/logo.png")}" alt="logo">',
                    f'<iframe src="{p("/frame.html")}"></iframe>',
                    f'<video controls><source src="{p("/clip.mp4")}"></video>',
                    f'<audio src="{p("/sound.ogg")}"></audio>',
                    f'<a href="{p("/about.html")}">about us</a>',
                    '<img src="/own.png">',
                    f'<img src="{p("/logo.png")}" alt="again">',
                    "</body></html>",
                )
            ),
            "/own.png": Page(b"png", content_type="image/png"),
        },
        context,
    )
    site.start()
    yield site
    site.stop()


def mixed(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["url"]: e for e in report["urls"] if e["reason"] == "mixed-content"}


def test_an_https_page_loading_http_resources_is_warned_of_with_pages_and_lines(
    run: Runner, secure: sitesrv.TestSite, plain: sitesrv.TestSite, trusting: dict[str, str]
) -> None:
    home = secure.url("/")
    code, report = run.check_json(home, plain.url("/page.html"), env=trusting)

    assert code == 0, report  # warnings, as warnings go
    lines = {
        "/style.css": [2],
        "/app.js": [3],
        "/logo.png": [5, 11],  # not the plain page that shows it too
        "/frame.html": [6],
        "/clip.mp4": [7],
        "/sound.ogg": [8],
    }
    warned = mixed(report)
    assert set(warned) == {plain.url(path) for path in lines}
    for path, numbers in lines.items():
        entry = warned[plain.url(path)]
        assert (entry["state"], entry["error"]) == ("warning", "mixed content")
        assert entry["http_status"] == 200 and entry["last_good"] is not None
        assert entry["referrers"] == [{"url": home, "line": n} for n in numbers]
    states = {e["url"]: e["state"] for e in report["urls"]}
    assert states[plain.url("/about.html")] == "ok"  # a link, not loaded
    assert states[secure.url("/own.png")] == "ok"
    assert states[plain.url("/page.html")] == "ok"
    assert report["summary"]["warnings"] == len(lines)

    text = run("report", "--db", run.db)
    assert text.returncode == 0, text.stderr
    said = text.stdout
    logo = said.index(plain.url("/logo.png"))
    block = said[logo : logo + 400]
    assert "warning: mixed content" in block
    assert "lines 5, 11" in block
    assert "6 warnings" in said
    assert "kind: mixed-content" not in said  # the words say what it is
    for fmt in ("markdown", "junit", "sarif", "csv", "html"):
        shown = run("report", "--db", run.db, "--format", fmt)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.count("mixed content") >= len(lines), fmt


def test_mixed_content_fails_the_check_with_fail_on_warning(
    run: Runner, secure: sitesrv.TestSite, trusting: dict[str, str]
) -> None:
    proc = run.check(secure.url("/"), "--fail-on", "warning", env=trusting)

    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.count("warning: mixed content") == 6


def test_a_second_pass_over_unchanged_pages_warns_of_the_same_mixed_content(
    run: Runner, secure: sitesrv.TestSite, trusting: dict[str, str]
) -> None:
    """The page answers 304 the second time: the kinds of its links are the memory's."""
    home = secure.url("/")
    code, first = run.check_json(home, env=trusting)
    secure.clear()

    code, second = run.check_json(home, env=trusting)

    assert code == 0, second
    assert [h.status for h in secure.requests() if h.path == "/"] == [304]
    assert set(mixed(second)) == set(mixed(first)) and len(mixed(second)) == 6
    assert {e["new"] for e in mixed(second).values()} == {False}


def test_a_page_loading_one_http_image_thousands_of_times_is_one_warning(
    run: Runner, secure: sitesrv.TestSite, plain: sitesrv.TestSite, trusting: dict[str, str]
) -> None:
    """A hostile page: 5,000 tags and a srcset of 5,000 candidates, all loading the same
    http: image. It is one warning naming its 5,001 lines, asked for once."""
    logo, script = plain.url("/logo.png"), plain.url("/app.js")
    candidates = ", ".join(f"{logo} {n}w" for n in range(1, 5001))
    secure.pages["/"] = Page(
        html(
            *(f'<img src="{logo}">' for _ in range(5000)),
            f'<img srcset="{candidates}" src="{script}">',
        )
    )
    code, report = run.check_json(secure.url("/"), env=trusting, timeout=120)

    assert code == 0, report
    warned = mixed(report)
    assert set(warned) == {logo, script}
    assert len({r["line"] for r in warned[logo]["referrers"]}) == 5001
    assert report["summary"]["warnings"] == 2
    assert [h.path for h in plain.requests()].count("/logo.png") == 1


def test_an_http_page_loading_http_resources_is_no_mixed_content(
    run: Runner, plain: sitesrv.TestSite
) -> None:
    code, report = run.check_json(plain.url("/page.html"))

    assert code == 0, report
    assert mixed(report) == {}
    assert {e["state"] for e in report["urls"]} == {"ok"}
    assert report["summary"]["warnings"] == 0


@pytest.mark.backends
def test_each_backend_keeps_the_kind_of_each_link(db: str) -> None:
    """Written with the page's links, read back for the report, on SQLite and PostgreSQL."""
    page, image, other = "https://a.test/", "http://b.test/i.png", "http://b.test/x"
    store = open_store(db, crawl=True)
    try:
        info = store.begin_pass([page], 1_700_000_000.0)
        store.seed(info.id, [(page, Action.PARSE)], 1_700_000_000.0)
        [task] = store.claim(info.id, 10, 1_700_000_000.0, (), 60.0)
        links = [
            Discovered(image, 4, Action.CHECK, kind=LOAD),
            Discovered(other, 5, Action.CHECK),
            Discovered(image, 9, Action.CHECK, kind=NAV),
        ]
        store.complete(
            info.id,
            [Outcome(task.url_id, Action.PARSE, State.OK, http_status=200, links=links)],
            1_700_000_001.0,
        )
        for target in store.claim(info.id, 10, 1_700_000_002.0, (), 60.0):
            done = Outcome(target.url_id, Action.CHECK, State.OK, http_status=200)
            store.complete(info.id, [done], 1_700_000_003.0)
        store.end_run(info.id, 3.0, 1_700_000_004.0, True, None)
        report = build_report(store)
        [warned] = report.warnings
        assert (warned.url, warned.reason, warned.referrers) == (
            image,
            Reason.MIXED_CONTENT,
            [(page, 4)],
        )
        assert [e.state for e in report.entries if e.url == other] == [State.OK]
        assert report.summary.warnings == 1
    finally:
        store.close()
    assert sorted(memory_rows(db, "SELECT line, kind FROM links")) == [
        (4, LOAD),
        (5, NAV),
        (9, NAV),
    ]


# ---- --require-https -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "counterpart"),
    [
        ("http://a.test/x?q=1", "https://a.test/x?q=1"),  # port 80 becomes 443: both default
        ("http://127.0.0.1:8080/x", "https://127.0.0.1:8080/x"),  # a port of its own stays
        ("https://a.test/x", None),
        ("ftp://a.test/x", None),
        ("mailto:m@a.test", None),
    ],
)
def test_the_https_counterpart_of_an_http_url_is_as_browsers_upgrade_it(
    url: str, counterpart: str | None
) -> None:
    assert https_counterpart(url) == counterpart


@pytest.mark.parametrize(
    ("status", "served"),
    [
        *((status, True) for status in (200, 204, 301, 304)),
        *((status, False) for status in (None, 199, 403, 404, 500)),
    ],
)
def test_a_host_serves_https_when_the_counterpart_answers_2xx_or_3xx(
    status: int | None, served: bool
) -> None:
    assert answers_over_https(status) is served


@pytest.mark.parametrize(
    ("state", "url", "served", "warned"),
    [
        (State.OK, "http://a.test/x", True, True),
        (State.OK, "http://a.test/x", False, False),
        (State.OK, "http://a.test/x", None, False),  # not known: nothing to say
        (State.OK, "https://a.test/x", True, False),
        (State.BROKEN, "http://a.test/x", True, False),  # its own verdict says more
        (State.REDIRECT, "http://a.test/x", True, False),
    ],
)
def test_a_good_http_url_of_a_host_serving_https_is_a_warning(
    state: State, url: str, served: bool | None, warned: bool
) -> None:
    verdict = https_available(state, url, served)
    if warned:
        assert verdict == (State.WARNING, Reason.HTTPS_AVAILABLE, "HTTPS available")
    else:
        assert verdict is None


@pytest.fixture
def both(ca: trustme.CA) -> Iterator[sitesrv.TestSite]:
    """A site that answers http: and https: on one port, and links to a plain one."""
    site = sitesrv.TestSite({"/robots.txt": Page("", status=404)})
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    site.serve_tls_too(context)
    site.start()
    yield site
    site.stop()


def test_require_https_warns_of_http_urls_whose_host_serves_https_asking_once_a_host(
    run: Runner, both: sitesrv.TestSite, plain: sitesrv.TestSite, trusting: dict[str, str]
) -> None:
    both.pages["/"] = Page(
        html(
            '<a href="/doc.html">doc</a>',
            '<img src="/logo.png">',
            f'<a href="{plain.url("/about.html")}">only http</a>',
        )
    )
    both.pages["/doc.html"] = Page(html("<p>doc</p>"))
    both.pages["/logo.png"] = Page(b"png", content_type="image/png")
    home = both.url("/")
    own = {home, both.url("/doc.html"), both.url("/logo.png")}

    code, unasked = run.check_json(home, env=trusting)
    assert code == 0, unasked
    assert {e["state"] for e in unasked["urls"]} == {"ok"}
    assert both.tls_connections == 0  # nothing asked without the option

    code, report = run.check_json(home, "--require-https", env=trusting)

    assert code == 0, report  # warnings, as warnings go
    warned = {e["url"]: e for e in report["urls"] if e["reason"] == "https-available"}
    assert set(warned) == own
    assert {(e["state"], e["error"]) for e in warned.values()} == {("warning", "HTTPS available")}
    assert all(e["last_good"] is not None for e in warned.values())  # good answers all the same
    states = {e["url"]: e["state"] for e in report["urls"]}
    assert states[plain.url("/about.html")] == "ok"  # its host has no https:
    assert report["summary"]["warnings"] == 3
    assert both.tls_connections == 1  # one request for the host's three URLs
    assert run.check(home, "--require-https", "--fail-on", "warning", env=trusting).returncode == 1

    code, again = run.check_json(home, "--require-https", env=trusting)

    assert code == 0, again
    assert {e["url"] for e in again["urls"] if e["reason"] == "https-available"} == own
    assert both.tls_connections == 1  # the memory's answer: not asked again


@pytest.mark.backends
def test_each_backend_remembers_which_hosts_serve_https(db: str) -> None:
    store = open_store(db, crawl=True)
    try:
        assert store.https_served("http://a.test", 0.0) is None
        store.save_https_served("http://a.test", True, 1_700_000_000.0)
        store.save_https_served("http://b.test", True, 1_700_000_000.0)
        store.save_https_served("http://b.test", False, 1_700_000_100.0)  # asked again

        assert store.https_served("http://a.test", 1_699_999_999.0) is True
        assert store.https_served("http://a.test", 1_700_000_001.0) is None  # too old
        assert store.https_served("http://b.test", 0.0) is False
    finally:
        store.close()
