"""Soft 404s: a server that answers pages that do not exist with 200 (or a redirect home).

A real server on 127.0.0.1 answers every unknown path of its folders as such servers do:
/a/ with one "Page not found" page, /b/ with the path echoed into it, /c/ with a redirect
to the home page; /blog/ is honest (404) and holds real articles of one template, which
must stay good.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterator, Mapping

import pytest

from linkpatrol.fingerprint import look_of
from linkpatrol.model import Look
from linkpatrol.rules import MAX_PROBES, same_look
from linkpatrol.store import open_store
from tests.conftest import Runner, by_url
from tests.sitesrv import Handler, Page
from tests.sitesrv import TestSite as Site

pytestmark = pytest.mark.backends

NAV = (
    '<nav><a href="/">Home</a> <a href="/blog/first.html">Blog</a> <a href="/about">About</a></nav>'
)
FOOTER = "<footer>Copyright the Example Company. All rights reserved. Contact us.</footer>"


def layout(title: str, main: str) -> str:
    """A page of the site's one template: its chrome around ``main``."""
    return (
        f"<!doctype html><html><head><title>{title}</title><style>p {{color: red}}</style>"
        f"</head><body>{NAV}<main>{main}</main>{FOOTER}</body></html>"
    )


def not_found(path: str = "") -> str:
    """The site's not-found page; with ``path``, the path echoed into it."""
    said = f"The page {path} could not be found." if path else "The page could not be found."
    return layout(
        "Page not found" + (f": {path}" if path else ""),
        f"<h1>Page not found</h1><p>{said} It may have moved, or never existed. "
        "Try the search box, or start again from the home page.</p>",
    )


ARTICLES = {
    "first": (
        "Growing tomatoes on a balcony",
        "Tomatoes want six hours of sun, a deep pot and water every morning in summer. "
        "Pinch out the side shoots and tie the stem to a cane as it grows.",
    ),
    "second": (
        "Repairing a bicycle puncture",
        "Take the wheel off, lever the tyre from the rim and find the hole by pumping the "
        "tube and listening. Roughen the rubber, glue a patch and wait until it sets.",
    ),
    "third": (
        "Baking bread without a mixer",
        "Flour, water, salt and a little yeast, mixed by hand and left overnight in a "
        "cool kitchen, make a loaf with an open crumb and a crisp crust.",
    ),
}

HOME = layout(
    "Home",
    " ".join(
        f'<a href="{href}">{href}</a>'
        for href in (
            "/a/real.html",
            "/a/dead.html",
            "/b/dead.html",
            "/b/also-missing",
            "/c/dead.html",
            "/blog/first.html",
            "/blog/second.html",
            "/blog/third.html",
            "/blog/dead.html",
        )
    ),
)


class SoftSite(Site):
    """Answers unknown paths of its folders as servers that hide their 404s do."""

    def lookup(self, path: str) -> Page | Handler | None:
        known = super().lookup(path)
        if known is not None:
            return known
        if path.startswith("/a/"):
            return Page(not_found())
        if path.startswith("/b/"):
            return Page(not_found(path))
        if path.startswith("/c/"):
            return Page("", status=302, headers={"Location": "/"}, etag=False)
        return None


def pages() -> Mapping[str, Page]:
    found = {
        "/robots.txt": Page("", status=404),
        "/": Page(HOME),
        "/about": Page(layout("About", "<p>A small company.</p>")),
        "/a/real.html": Page(layout("Our shop", "<p>Opening hours: nine to five.</p>")),
    }
    for name, (title, text) in ARTICLES.items():
        found[f"/blog/{name}.html"] = Page(layout(title, f"<h1>{title}</h1><p>{text}</p>"))
    return found


@pytest.fixture
def site() -> Iterator[SoftSite]:
    served = SoftSite(pages())
    served.start()
    try:
        yield served
    finally:
        served.stop()


def test_soft_404s_are_broken_and_real_pages_of_one_template_stay_ok(
    run: Runner, site: SoftSite
) -> None:
    code, report = run.check_json(site.url("/"))

    assert code == 1
    urls = by_url(report)
    verdicts = {path: (urls[site.url(path)]["state"], urls[site.url(path)]["reason"]) for path in (
        "/a/dead.html", "/b/dead.html", "/b/also-missing", "/c/dead.html", "/blog/dead.html",
        "/a/real.html", "/blog/first.html", "/blog/second.html", "/blog/third.html", "/about",
    )}  # fmt: skip
    assert verdicts == {
        "/a/dead.html": ("broken", "soft-404"),
        "/b/dead.html": ("broken", "soft-404"),
        "/b/also-missing": ("broken", "soft-404"),
        "/c/dead.html": ("broken", "soft-404"),
        "/blog/dead.html": ("broken", "http-status"),
        "/a/real.html": ("ok", None),
        "/blog/first.html": ("ok", None),
        "/blog/second.html": ("ok", None),
        "/blog/third.html": ("ok", None),
        "/about": ("ok", None),
    }
    assert urls[site.url("/c/dead.html")]["error"].startswith("soft 404: redirects to")
    # one probe per folder of a page: / (for /about), /a/, /b/, /c/ and /blog/
    assert site.probes() == Counter({"/": 1, "/a/": 1, "/b/": 1, "/c/": 1, "/blog/": 1})

    # the reports say why
    text = run("report", "--db", run.db).stdout
    assert "broken: soft 404: HTTP 200 with the page a made-up name in its folder gets" in text
    assert "kind: soft-404" in text
    rows = csv.DictReader(io.StringIO(run("report", "--db", run.db, "--format", "csv").stdout))
    assert {row["url"]: row["reason"] for row in rows}[site.url("/b/dead.html")] == "soft-404"
    page = run("report", "--db", run.db, "--format", "html").stdout
    assert '<span class="reason">soft-404</span>' in page

    # the memory keeps the probes: the next run makes none, and judges alike
    code, again = run.check_json(site.url("/"))
    assert code == 1
    assert site.probes() == Counter({"/": 1, "/a/": 1, "/b/": 1, "/c/": 1, "/blog/": 1})
    assert {u: e["state"] for u, e in by_url(again).items()} == {
        u: e["state"] for u, e in urls.items()
    }
    memory = open_store(run.db, crawl=False)
    try:
        kept = {p.folder: p for p in memory.probes(site.base)}
    finally:
        memory.close()
    assert {folder: p.status for folder, p in kept.items()} == {
        "/": 404,
        "/a/": 200,
        "/b/": 200,
        "/c/": 302,
        "/blog/": 404,
    }
    assert kept["/c/"].redirect_to == site.url("/")
    assert kept["/a/"].look is not None and kept["/a/"].look.title == "Page not found"


def test_off_makes_no_probe_and_keeps_them_ok(run: Runner, site: SoftSite) -> None:
    code, report = run.check_json(site.url("/"), "--soft-404", "off")

    urls = by_url(report)
    assert code == 1  # the honest 404 of /blog/
    assert urls[site.url("/a/dead.html")]["state"] == "ok"
    assert urls[site.url("/b/dead.html")]["state"] == "ok"
    assert urls[site.url("/c/dead.html")]["state"] == "redirect"
    assert site.probes() == Counter()


def test_the_configuration_key_turns_it_off(run: Runner, site: SoftSite) -> None:
    (run.cwd / "linkpatrol.toml").write_text('soft_404 = "off"\n')

    code, report = run.check_json(site.url("/"))

    assert code == 1  # the honest 404 of /blog/
    assert by_url(report)[site.url("/a/dead.html")]["state"] == "ok"
    assert site.probes() == Counter()
    bad = run.check(site.url("/"), "--soft-404", "maybe")
    assert bad.returncode == 2 and "--soft-404" in bad.stderr and "'site'" in bad.stderr


def test_outside_urls_are_probed_only_with_all(run: Runner, site: SoftSite) -> None:
    with Site({"/robots.txt": Page("", status=404)}) as home:
        dead = site.url("/a/dead.html")
        home.pages["/"] = Page(f'<html><title>Links</title><a href="{dead}">x</a></html>')

        code, report = run.check_json(home.url("/"))
        assert (code, by_url(report)[dead]["state"]) == (0, "ok")
        assert site.probes() == Counter()
        assert [h.method for h in site.requests() if h.path == "/a/dead.html"] == ["HEAD"]

        code, report = run.check_json(home.url("/"), "--soft-404", "all")
        assert (code, by_url(report)[dead]["reason"]) == (1, "soft-404")
        assert site.probes() == Counter({"/a/": 1})


def test_a_forbidden_folder_is_not_probed(run: Runner, site: SoftSite) -> None:
    site.pages["/robots.txt"] = Page("User-agent: *\nDisallow: /a/lp-\n", content_type="text/plain")

    code, report = run.check_json(site.url("/"))

    assert code == 1  # the soft 404s of /b/ and /c/, the honest 404 of /blog/
    assert by_url(report)[site.url("/a/dead.html")]["state"] == "ok"
    assert site.probes()["/a/"] == 0
    assert by_url(report)[site.url("/b/dead.html")]["reason"] == "soft-404"


# ---- the looks, and the rule, without a server ------------------------------------------


def look(html: str, path: str) -> Look:
    return look_of(html.encode(), "utf-8", "http://h" + path)


def test_an_echoed_path_is_the_same_look_and_an_article_of_the_template_is_not() -> None:
    probe = look(not_found("/b/lp-0123456789abcdef"), "/b/lp-0123456789abcdef")
    assert same_look(probe, look(not_found("/b/dead.html"), "/b/dead.html"))
    assert same_look(probe, look(not_found("/b/gone"), "/b/gone"))
    for name, (title, text) in ARTICLES.items():
        article = look(layout(title, f"<h1>{title}</h1><p>{text}</p>"), f"/b/{name}.html")
        assert not same_look(probe, article)
        # even under the not-found page's title, the text tells them apart
        assert not same_look(probe, article._replace(title=probe.title))
    # scripts and styles are not text; the title is not the text
    assert look(layout("T", "<script>var x = 1;</script><p>hi</p>"), "/x").title == "T"
    assert "var" not in str(look(layout("T", "<p>hi</p>"), "/x"))
    # text after </html> is the page's, as a browser shows it
    assert look("<p>hi</p></html><p>more words</p>", "/x") == look(
        "<p>hi</p><p>more words</p>", "/x"
    )


class TrapSite(Site):
    """A calendar whose every day is a page in a folder of its own, each linking to the
    next, and whose every unknown path answers 200 with the same page: a crawler trap that
    hides its 404s."""

    def lookup(self, path: str) -> Page | Handler | None:
        known = super().lookup(path)
        if known is not None:
            return known
        if path.startswith("/cal/") and path.endswith("/day.html"):
            day = int(path.split("/")[2])
            page = f'<p>Day {day}.</p><a href="/cal/{day + 1}/day.html">next</a>'
            return Page(f"<title>Day {day}</title>{page}")
        return Page(not_found())


def test_a_crawler_trap_of_endless_folders_costs_a_bounded_number_of_probes(
    run: Runner,
) -> None:
    """Each folder is probed once at most, and a host at most MAX_PROBES times in a run:
    a trap of 150 folders costs 100 probes, not 150, and the crawl ends."""
    home = Page('<title>Home</title><a href="/cal/1/day.html">calendar</a>')
    trap = TrapSite({"/robots.txt": Page("", status=404), "/": home})
    trap.start()
    try:
        code, report = run.check_json(trap.url("/"), "--max-urls", "152", "--max-similar", "0")
        probes = trap.probes()
    finally:
        trap.stop()

    assert code in (0, 1) and report["complete"]
    assert max(probes.values()) == 1
    assert len(probes) == MAX_PROBES and "/cal/1/" in probes
