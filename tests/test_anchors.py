"""--check-anchors: a link to page#name is broken when the page has no such id or name."""

from __future__ import annotations

import json

import pytest

from linkpatrol.report import anchor_found
from linkpatrol.store import Anchors
from tests.conftest import Runner, Serve, by_url, memory_rows
from tests.sitesrv import Page

pytestmark = pytest.mark.backends

HOME = "\n".join(
    [
        '<html><body id="local">',
        '<a href="/a.html#present">an id</a>',
        '<a href="/a.html#missing">no such anchor</a>',
        '<a href="/a.html#caf%C3%A9">a percent-encoded id</a>',
        '<a href="#local">this page</a>',
        '<a href="#nolocal">not on this page</a>',
        '<a href="/a.html#top">the top</a>',
        '<a href="/a.html#named">an a name</a>',
        '<a href="/b.pdf#page=2">not a page</a>',
        '<a href="/a.html#">empty</a>',
        '<a href="/a.html#missing">twice</a>',
        "</body></html>",
    ]
)
PAGES = {
    "/": Page(HOME),
    "/a.html": Page(
        '<html><body><h1 id="present">x</h1><p id="café">c</p><a name="named">n</a></body></html>'
    ),
    "/b.pdf": Page(b"%PDF-1.4", content_type="application/pdf"),
}


def test_missing_anchors_are_broken_with_every_line_that_links_to_them(
    run: Runner, serve: Serve, db: str
) -> None:
    site = serve(PAGES)

    code, report = run.check_json(site.url("/"), "--check-anchors")

    assert code == 1
    broken = {u["url"]: u for u in report["urls"] if u["reportable"]}
    assert set(broken) == {site.url("/a.html#missing"), site.url("/#nolocal")}
    missing = broken[site.url("/a.html#missing")]
    assert missing["state"] == "broken" and missing["error"] == "missing anchor"
    assert [(r["url"], r["line"]) for r in missing["referrers"]] == [
        (site.url("/"), 3),
        (site.url("/"), 11),
    ]
    assert [(r["url"], r["line"]) for r in broken[site.url("/#nolocal")]["referrers"]] == [
        (site.url("/"), 6)
    ]
    # the page itself is fine, and its own '#' links do not make it its own referrer
    urls = by_url(report)
    assert urls[site.url("/a.html")]["state"] == "ok"
    assert site.url("/") not in [r["url"] for r in urls[site.url("/")]["referrers"]]
    assert report["summary"]["urls"] == 3 and report["summary"]["broken"] == 2

    text = run("report", "--db", run.db, "--check-anchors").stdout
    # (new: the memory's first pass has nothing earlier to compare with)
    assert "  http://" in text and "broken: missing anchor · new\n" in text


def test_without_the_option_fragments_are_remembered_but_not_judged(
    run: Runner, serve: Serve, db: str
) -> None:
    site = serve(PAGES)

    code, report = run.check_json(site.url("/"))

    assert code == 0 and not any("#" in u["url"] for u in report["urls"])
    kept = memory_rows(run.db, "SELECT count(*) FROM links WHERE fragment IS NOT NULL")
    assert kept == [(10,)]
    # the report can judge them later from the memory alone
    later = run("report", "--db", run.db, "--check-anchors", "--format", "json")
    assert later.returncode == 1
    errors = [u["error"] for u in json.loads(later.stdout)["urls"] if u["reportable"]]
    assert errors == ["missing anchor", "missing anchor"]


def test_anchors_answer_from_the_memory_when_pages_are_unchanged(
    run: Runner, serve: Serve, db: str
) -> None:
    site = serve(PAGES)
    first_code, first = run.check_json(site.url("/"), "--check-anchors")

    code, again = run.check_json(site.url("/"), "--check-anchors")

    assert {h.status for h in site.requests()[-3:]} <= {304}  # nothing was parsed again
    assert again["summary"]["parsed"] == 0
    assert (code, sorted(u["url"] for u in again["urls"] if u["reportable"])) == (
        first_code,
        sorted(u["url"] for u in first["urls"] if u["reportable"]),
    )

    # the anchor appears: the page changes, is parsed again, and the link is good
    site.pages["/a.html"] = Page(
        '<p id="present">x</p><p id="café">c</p><a name="named">n</a><p id="missing">here</p>'
    )
    code, fixed = run.check_json(site.url("/"), "--check-anchors")
    assert [u["url"] for u in fixed["urls"] if u["reportable"]] == [site.url("/#nolocal")]


def test_a_bare_fragment_points_into_the_page_a_base_href_names(run: Runner, serve: Serve) -> None:
    """'#x' resolves against <base href> as browsers resolve it: with a base elsewhere it
    leads to that page, whose anchors are the ones that count."""
    site = serve(
        {
            "/": Page('<html><body><a href="/docs/page.html">docs</a></body></html>'),
            "/docs/page.html": Page(
                "\n".join(
                    [
                        '<html><head><base href="/other/"></head><body id="own">',
                        '<a href="#intro">the base page has it</a>',
                        '<a href="#own">only this page has it</a>',
                        "</body></html>",
                    ]
                )
            ),
            "/other/": Page('<html><body><h1 id="intro">x</h1></body></html>'),
        }
    )

    code, report = run.check_json(site.url("/"), "--check-anchors")

    assert code == 1
    urls = by_url(report)
    broken = {u["url"] for u in report["urls"] if u["reportable"]}
    assert broken == {site.url("/other/#own")}
    missing = urls[site.url("/other/#own")]
    assert missing["error"] == "missing anchor"
    assert [(r["url"], r["line"]) for r in missing["referrers"]] == [
        (site.url("/docs/page.html"), 3)
    ]
    assert [(r["url"], r["line"]) for r in urls[site.url("/other/")]["referrers"]] == [
        (site.url("/docs/page.html"), 2),
        (site.url("/docs/page.html"), 3),
    ]


FOLDER_LINKS = (
    "<!doctype html><html><body>\n"
    '<p><a href="sub#here">there</a></p>\n'
    '<p><a href="sub#nope">nowhere</a></p>\n'
    "</body></html>\n"
)
FOLDER_INDEX = '<!doctype html><html><body><h2 id="here">here</h2></body></html>\n'


def test_a_fragment_survives_a_folder_redirect(run: Runner, serve: Serve) -> None:
    """``sub#nope``, where ``sub`` redirects to ``sub/``, is ``sub/#nope``, as in browsers."""
    site = serve(
        {
            "/": Page(FOLDER_LINKS),
            "/sub": Page("", status=301, headers={"Location": "/sub/"}),
            "/sub/": Page(FOLDER_INDEX),
        }
    )

    code, report = run.check_json(site.url("/"), "--check-anchors")

    assert code == 1
    broken = {u["url"]: u for u in report["urls"] if u["reportable"]}
    assert list(broken) == [site.url("/sub/#nope")]
    assert [(r["url"], r["line"]) for r in broken[site.url("/sub/#nope")]["referrers"]] == [
        (site.url("/"), 3)
    ]


def test_a_fragment_survives_a_folder_redirect_in_a_local_folder(run: Runner) -> None:
    (run.cwd / "site" / "sub").mkdir(parents=True)
    (run.cwd / "site" / "index.html").write_text(FOLDER_LINKS)
    (run.cwd / "site" / "sub" / "index.html").write_text(FOLDER_INDEX)

    code, report = run.check_json("site", "--check-anchors")

    broken = [u for u in report["urls"] if u["reportable"]]
    assert code == 1 and len(broken) == 1, broken
    assert broken[0]["url"].endswith("/sub/#nope") and broken[0]["reason"] == "missing-anchor"
    assert [r["line"] for r in broken[0]["referrers"]] == [3]


# -- Markdown headings: GitHub finds them whatever the case of the fragment

FOUND = Anchors(
    ids=frozenset({"Para", "café"}), heading_ids=frozenset({"ignore-casing", "fünf-süße-äpfel"})
)


@pytest.mark.parametrize(
    ("fragment", "found"),
    [
        ("ignore-casing", True),
        ("IGNORE-CASING", True),
        ("Ignore-Casing", True),
        ("ignore casing", False),
        ("fünf-süße-äpfel", True),
        ("Fünf-Süße-Äpfel", True),
        ("F%C3%9CNF-S%C3%9C%C3%9FE-%C3%84PFEL", True),  # decoded, then lowered
        ("FÜNF-SÜSSE-ÄPFEL", False),  # 'SS' lowers to 'ss', not 'ß'
        ("Para", True),  # ids and names only as written
        ("para", False),
        ("caf%C3%A9", True),
        ("CAF%C3%89", False),
        ("", True),
        ("Top", True),
    ],
)
def test_a_fragment_finds_ids_as_written_and_markdown_headings_in_any_case(
    fragment: str, found: bool
) -> None:
    assert anchor_found(fragment, FOUND) is found


GUIDE = "\n".join(
    [
        "# Ignore casing",
        "## Fünf süße Äpfel",
        "## Usage",
        "## Usage",
        "## Explicit {#Custom}",
        '<a name="Raw"></a><p id="Para">raw HTML</p>',
    ]
)
GUIDE_LINKS = [
    "/guide.md#IGNORE-CASING",  # 2: a heading: any case
    "/guide.md#fünf-süße-äpfel",  # 3
    "/guide.md#F%C3%9CNF-s%C3%BC%C3%9Fe-%C3%84pfel",  # 4: percent-encoded, upper case
    "/guide.md#USAGE-1",  # 5: the second 'Usage'
    "/guide.md#usage-2",  # 6: no third one
    "/guide.md#Custom",  # 7: an explicit id, as written
    "/guide.md#custom",  # 8: ... not in another case
    "/guide.md#Raw",  # 9: raw HTML's names and ids, as written
    "/guide.md#RAW",  # 10
    "/guide.md#para",  # 11
    "/a.html#PRESENT",  # 12: an HTML page's ids, as written
]


def test_markdown_headings_are_found_whatever_the_case_and_html_ids_only_as_written(
    run: Runner, serve: Serve
) -> None:
    body = "\n".join(f'<a href="{href}">x</a>' for href in GUIDE_LINKS)
    site = serve(
        {
            "/": Page(f"<html><body>\n{body}\n</body></html>"),
            "/guide.md": Page(GUIDE, content_type="text/markdown; charset=utf-8"),
            "/a.html": Page('<html><body><h1 id="present">x</h1></body></html>'),
        }
    )
    missing = {
        site.url(href): [(site.url("/"), GUIDE_LINKS.index(href) + 2)]
        for href in (
            "/guide.md#usage-2",
            "/guide.md#custom",
            "/guide.md#RAW",
            "/guide.md#para",
            "/a.html#PRESENT",
        )
    }

    for _ in range(2):  # then with the pages unchanged (304), from the memory
        code, report = run.check_json(site.url("/"), "--check-anchors")

        assert code == 1
        broken = {
            u["url"]: [(r["url"], r["line"]) for r in u["referrers"]]
            for u in report["urls"]
            if u["reportable"]
        }
        assert broken == missing
        assert {u["error"] for u in report["urls"] if u["reportable"]} == {"missing anchor"}
    assert report["summary"]["parsed"] == 0


def test_a_markdown_folder_finds_its_headings_whatever_the_case(run: Runner) -> None:
    docs = run.cwd / "docs"
    docs.mkdir()
    (docs / "README.md").write_text(
        "\n".join(
            [
                "# Read me",  # 1
                "See [casing](guide.md#IGNORE-CASING) and [apples](guide.md#Fünf-Süße-Äpfel).",
                "Back [up](#READ-ME), [nowhere](#read-me-1), [attribute](guide.md#CUSTOM).",
            ]
        ),
        encoding="utf-8",
    )
    (docs / "guide.md").write_text(GUIDE, encoding="utf-8")

    code, report = run.check_json("docs", "--offline", "--check-anchors")

    root = docs.as_uri() + "/"
    broken = {u["url"]: u["referrers"] for u in report["urls"] if u["reportable"]}
    assert sorted(broken) == [root + "README.md#read-me-1", root + "guide.md#CUSTOM"]
    assert [(r["url"], r["line"]) for r in broken[root + "guide.md#CUSTOM"]] == [
        (root + "README.md", 3)
    ]
    assert code == 1
