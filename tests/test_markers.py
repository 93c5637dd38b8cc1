"""Marker comments and the ignore attribute: what a page says is not to be checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from linkpatrol.extract import Marker, Switch, extract_html, find_markers
from linkpatrol.markdown import extract_markdown
from tests.conftest import Runner, Serve
from tests.sitesrv import Page, html

# (what the page holds, the links it yields as (url, line))
HTML_CASES: list[tuple[str, list[str], list[tuple[str, int]]]] = [
    (
        "an ignored element and all within it",
        [
            "<p><a href=/before>b</a></p>",
            '<nav data-linkpatrol-ignore><a href="/nav">n</a>',
            '<ul><li><img src="/logo.png"></li></ul></nav>',
            "<a href=/after>a</a>",
        ],
        [("/before", 1), ("/after", 4)],
    ),
    (
        "an ignored element's own attributes and style",
        [
            '<img data-linkpatrol-ignore src="/x.png" style="background: url(/y.png)">',
            '<img src="/z.png" style="background: url(/w.png)">',
        ],
        [("/z.png", 2), ("/w.png", 2)],
    ),
    (
        "disable to enable, the comment lines included",
        [
            "<a href=/one>1</a>",
            "<!-- linkpatrol-disable --><a href=/two>2</a>",
            "<a href=/three>3</a>",
            "<a href=/four>4</a><!-- linkpatrol-enable -->",
            "<a href=/five>5</a>",
        ],
        [("/one", 1), ("/five", 5)],
    ),
    (
        "disable without enable runs to the end",
        ["<a href=/one>1</a>", "<!-- linkpatrol-disable -->", "<a href=/two>2</a>", "<p>", "x"],
        [("/one", 1)],
    ),
    (
        "disable-next-line: the next line only",
        [
            "<!-- linkpatrol-disable-next-line -->",
            '<a href=/two>2</a> <img src="/two.png">',
            "<a href=/three>3</a>",
        ],
        [("/three", 3)],
    ),
    (
        "a marker with its reason after it, in any case",
        ["<!-- LinkPatrol-Disable-Next-Line: the vendor blocks robots -->", "<a href=/v>v</a>"],
        [],
    ),
    (
        "a comment spread over lines: the line after its end",
        ["<!--", "  linkpatrol-disable-next-line", "-->", "<a href=/x>x</a>", "<a href=/y>y</a>"],
        [("/y", 5)],
    ),
    (
        "markers in scripts, in other words or in attributes are none",
        [
            "<script>var s = '<!-- linkpatrol-disable -->';</script>",
            "<!-- linkpatrol-disabled -->",
            '<p title="<!-- linkpatrol-disable -->">',
            "<a href=/kept>k</a>",
        ],
        [("/kept", 4)],
    ),
    (
        "an enable with no disable before it changes nothing",
        ["<!-- linkpatrol-enable -->", "<a href=/a>a</a>"],
        [("/a", 2)],
    ),
    (
        "a marker within a style block is no comment",
        [
            "<style>",
            ".a { background: url(/a.png) }",
            "/* x */ <!-- linkpatrol-disable-next-line -->",
            ".b { background: url(/b.png) }",
            "</style>",
        ],
        [("/a.png", 2), ("/b.png", 4)],
    ),
]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [(lines, expected) for _, lines, expected in HTML_CASES],
    ids=[name for name, _, _ in HTML_CASES],
)
def test_html_markers(lines: list[str], expected: list[tuple[str, int]]) -> None:
    page = extract_html(html(*lines).encode())
    assert [(link.url, link.line) for link in page.links] == expected


MARKDOWN_CASES: list[tuple[str, list[str], list[tuple[str, int]]]] = [
    (
        "disable to enable around paragraphs",
        [
            "[one](/one)",
            "",
            "<!-- linkpatrol-disable -->",
            "[two](/two) and ![img](/two.png)",
            "<!-- linkpatrol-enable -->",
            "",
            "[three](/three)",
        ],
        [("/one", 1), ("/three", 7)],
    ),
    (
        "disable-next-line, inline in a paragraph",
        ["[a](/a) <!-- linkpatrol-disable-next-line -->", "[b](/b)", "[c](/c)"],
        [("/a", 1), ("/c", 3)],
    ),
    (
        "disable without enable, and an enable in a code block is none",
        [
            "<!-- linkpatrol-disable -->",
            "",
            "```",
            "<!-- linkpatrol-enable -->",
            "```",
            "[a](/a) https://example.com/x",
        ],
        [],
    ),
    (
        "a reference used only where disabled: its definition is left out too",
        [
            "<!-- linkpatrol-disable-next-line -->",
            "[a][r] and [b][s]",
            "",
            "[c][s]",
            "",
            "[r]: /r",
            "[s]: /s",
        ],
        [("/s", 4), ("/s", 7)],
    ),
    (
        "raw HTML with the ignore attribute",
        ['<div data-linkpatrol-ignore><a href="/in">in</a></div>', "", "[out](/out)"],
        [("/out", 3)],
    ),
]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [(lines, expected) for _, lines, expected in MARKDOWN_CASES],
    ids=[name for name, _, _ in MARKDOWN_CASES],
)
def test_markdown_markers(lines: list[str], expected: list[tuple[str, int]]) -> None:
    page = extract_markdown(html(*lines).encode())
    assert [(link.url, link.line) for link in page.links] == expected


def test_ignored_elements_still_hold_their_anchors() -> None:
    page = extract_html(
        html(
            '<div data-linkpatrol-ignore id="changelog">',
            '<h2 id="v1">1.0</h2><a name="old" href="/gone">x</a>',
            "</div>",
        ).encode()
    )
    assert page.links == []
    assert page.anchors == {"changelog", "v1", "old"}


def test_markers_are_found_with_their_lines() -> None:
    source = html("x", "<!-- linkpatrol-disable -->", "<!--", "linkpatrol-enable", "-->")
    assert find_markers(source.encode(), first_line=10) == [
        Marker(Switch.DISABLE, 11, 11),
        Marker(Switch.ENABLE, 12, 14),
    ]


SITE_PAGE = [
    "<!doctype html><html><body>",  # 1
    '<a href="/gone-outside">broken, reported</a>',  # 2
    "<!-- linkpatrol-disable -->",  # 3
    '<a href="/gone-between">broken, between the markers</a>',  # 4
    "<!-- linkpatrol-enable -->",  # 5
    "<!-- linkpatrol-disable-next-line -->",  # 6
    '<a href="/gone-next-line">broken, on the next line</a>',  # 7
    '<footer data-linkpatrol-ignore><a href="/gone-footer">x</a></footer>',  # 8
    '<a href="/gone-after">broken, reported</a>',  # 9
    "</body></html>",
]


def _broken(report: dict[str, Any], base: str) -> dict[str, list[tuple[str, int]]]:
    return {
        e["url"][len(base) :]: [(r["url"][len(base) :], r["line"]) for r in e["referrers"]]
        for e in report["urls"]
        if e["reportable"]
    }


def test_marked_links_are_neither_checked_nor_reported(run: Runner, serve: Serve) -> None:
    site = serve({"/": Page(html(*SITE_PAGE))})

    code, report = run.check_json(site.url("/"))

    assert code == 1
    assert _broken(report, site.base) == {
        "/gone-outside": [("/", 2)],
        "/gone-after": [("/", 9)],
    }
    for path in ("/gone-between", "/gone-next-line", "/gone-footer"):
        assert site.counts()[path] == 0


def test_markers_in_a_local_folder_of_html_and_markdown(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(html(*SITE_PAGE))
    (site / "notes.md").write_text(
        html(
            "# Notes",  # 1
            "<!-- linkpatrol-disable-next-line -->",  # 2
            "[skipped](/gone-in-markdown)",  # 3
            "[reported](/gone-too)",  # 4
        )
    )
    root = site.as_uri() + "/"

    code, report = Runner(tmp_path).check_json("site", "--offline")

    assert code == 1
    assert _broken(report, root) == {
        "gone-outside": [("", 2)],
        "gone-after": [("", 9)],
        "gone-too": [("notes.md", 4)],
    }
