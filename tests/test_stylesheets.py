"""Stylesheets of the site: their fonts, images and imports checked, each at its line."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linkpatrol.css import css_links
from linkpatrol.extract import extract_html, extract_stylesheet
from tests.conftest import Runner, Serve
from tests.sitesrv import Page, html

# (CSS, its links as (url, line, how written))
CASES: list[tuple[str, str, list[tuple[str, int, str]]]] = [
    ("unquoted url()", "a { b: url(x.png) }", [("x.png", 1, "url")]),
    (
        "quoted either way, spaces inside, any case",
        "a { b: url( 'x y.png' ) }\nc { d: URL(\"z.png\") }",
        [("x y.png", 1, "url"), ("z.png", 2, "url")],
    ),
    (
        "@import as a string and as url()",
        "@import \"a.css\";\n@import url(b.css) screen;\n@IMPORT 'c.css' layer(x);",
        [("a.css", 1, "import"), ("b.css", 2, "url"), ("c.css", 3, "import")],
    ),
    (
        "fonts: every source of @font-face, format() no URL",
        "@font-face {\n  font-family: X;\n"
        '  src: url(/f.woff2) format("woff2"),\n       url("/f.woff") format("woff");\n}',
        [("/f.woff2", 3, "url"), ("/f.woff", 4, "url")],
    ),
    (
        "comments, other strings and other functions are no links",
        '/* url(a.png)\n@import "b.css"; */\na { content: "url(c.png)"; b: myurl(d.png) }',
        [],
    ),
    (
        "data: URLs and empty ones are left out",
        "a { b: url(data:image/png;base64,AAAA); c: url(''); d: url(DATA:x) }",
        [],
    ),
    (
        "within blocks, functions and nested rules",
        "@media (min-width: 1px) {\n  .a { .b { c: var(--x, url(n.png)) } }\n}",
        [("n.png", 2, "url")],
    ),
    (
        "image-set strings but not type() strings",
        'a { b: image-set("a.avif" type("image/avif") 1x,\n  url(b.png) 2x) }',
        [("a.avif", 1, "url"), ("b.png", 2, "url")],
    ),
    (
        "a broken url( runs to its ')' as in a browser",
        "a { b: url(x y.png) } c { d: url(z.png) }",
        [("z.png", 1, "url")],
    ),
    ("an unterminated comment hides the rest", "a {} /* url(x.png)", []),
]


@pytest.mark.parametrize(
    ("css", "expected"),
    [(css, expected) for _, css, expected in CASES],
    ids=[name for name, _, _ in CASES],
)
def test_css_links(css: str, expected: list[tuple[str, int, str]]) -> None:
    assert [(url, line, kind) for line, _, url, kind in css_links(css)] == expected


def test_a_stylesheet_in_its_encoding() -> None:
    latin = '@charset "iso-8859-1";\n\na { b: url(caf\xe9.png) }'.encode("latin-1")
    page = extract_stylesheet(latin)
    assert [(link.url, link.line) for link in page.links] == [("café.png", 3)]
    assert page.encoding == "cp1252"
    assert page.anchors == frozenset()
    bom = b"\xef\xbb\xbfa { b: url(x.png) }"
    assert [link.url for link in extract_stylesheet(bom, "latin-1").links] == ["x.png"]


def test_style_blocks_and_attributes_of_a_page_at_the_page_lines() -> None:
    body = html(
        "<style>",  # 1
        "@import url(/print.css) print;",  # 2
        "/* url(/commented.png) */",  # 3
        '.hero { background: url("/hero.jpg") }',  # 4
        "</style>",  # 5
        "<div style=\"background: url('/div.png'), url(data:,x)\">",  # 6
    ).encode()
    links = [(link.url, link.line) for link in extract_html(body).links]
    assert links == [("/print.css", 2), ("/hero.jpg", 4), ("/div.png", 6)]


@pytest.mark.parametrize(
    "css",
    [
        "a{" * 200_000,
        "(" * 200_000 + "url(x.png)",
        "[" * 100_000 + "url(" * 100_000,
        "a { b: url(x.png) }\n" * 20_000,
        '@import "' + "x" * 1_000_000,
    ],
    ids=["braces", "parentheses", "brackets and url(", "a big stylesheet", "a long string"],
)
def test_hostile_stylesheets_are_read_quickly(css: str) -> None:
    started = time.monotonic()
    page = extract_stylesheet(css.encode())
    assert time.monotonic() - started < 10
    assert len(page.links) <= 20_000


css_pieces = st.sampled_from(
    [
        *("url(", ")", "@import ", "image-set(", '@charset "', "utf-16", 'latin1";', "'", '"'),
        *("\\", "\n", "\r", "{", "}", "(", "[", "]", "/*", "*/", ";", "a.png", "#x"),
        *("\x00", "\ufeff"),
    ]
)
stylesheets = st.one_of(
    st.binary(max_size=2000),
    st.lists(st.one_of(css_pieces, st.text(max_size=4)), max_size=50).map(
        lambda parts: "".join(parts).encode("utf-8", "surrogatepass")
    ),
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stylesheets, st.sampled_from([None, "utf-8", "latin-1", "utf-16", "bogus", ""]))
def test_no_bytes_make_reading_a_stylesheet_raise(body: bytes, header: str | None) -> None:
    """What a fault in reading a stylesheet raises (the page's parse error) is never set
    off by its bytes."""
    page = extract_stylesheet(body, header)
    lines = body.count(b"\n") + body.count(b"\r") + 1
    for link in page.links:
        assert link.url and 1 <= link.line <= lines


def test_text_without_an_opening_is_not_tokenized() -> None:
    started = time.monotonic()
    assert css_links("{[(" * 2_000_000) == []
    assert time.monotonic() - started < 1


STYLESHEET = [
    '@import url("parts/print.css") print;',  # 1
    "@font-face {",  # 2
    "  font-family: Body;",  # 3
    '  src: url("../fonts/missing.woff2") format("woff2");',  # 4
    "}",  # 5
    "/* .old { background: url(../img/gone.png) } */",  # 6
    "body {",  # 7
    "  background: url(../img/present.png) no-repeat;",  # 8
    "}",  # 9
]


def _broken(report: dict[str, Any], base: str) -> dict[str, list[tuple[str, int]]]:
    return {
        e["url"][len(base) :]: [(r["url"][len(base) :], r["line"]) for r in e["referrers"]]
        for e in report["urls"]
        if e["reportable"]
    }


def test_a_sites_stylesheet_is_checked_at_its_lines(run: Runner, serve: Serve) -> None:
    site = serve(
        {
            "/": Page(html('<link rel="stylesheet" href="/css/site.css">', "<p>hello</p>")),
            "/css/site.css": Page(html(*STYLESHEET), content_type="text/css"),
            "/css/parts/print.css": Page("p { color: black }", content_type="text/css"),
            "/img/present.png": Page(b"\x89PNG\r\n\x1a\n", content_type="image/png"),
        }
    )

    code, report = run.check_json(site.url("/"))

    assert code == 1
    assert _broken(report, site.base) == {"/fonts/missing.woff2": [("/css/site.css", 4)]}
    assert site.counts()["/img/present.png"] >= 1
    assert site.counts()["/css/parts/print.css"] == 1
    assert site.counts()["/img/gone.png"] == 0


def test_a_stylesheet_in_a_local_folder(tmp_path: Path) -> None:
    public = tmp_path / "public"
    (public / "css").mkdir(parents=True)
    (public / "img").mkdir()
    (public / "index.html").write_text(html('<link rel="stylesheet" href="css/site.css">'))
    (public / "css" / "site.css").write_text(html(*STYLESHEET))
    (public / "css" / "parts").mkdir()
    (public / "css" / "parts" / "print.css").write_text("p { color: black }")
    (public / "img" / "present.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    root = public.as_uri() + "/"

    code, report = Runner(tmp_path).check_json("public", "--offline")

    assert code == 1
    assert _broken(report, root) == {"fonts/missing.woff2": [("css/site.css", 4)]}


def test_a_huge_stylesheet_is_read_only_up_to_the_size_limit(run: Runner, serve: Serve) -> None:
    nested = "a { b: url(/deep.png) " + "{" * 3_000_000
    site = serve(
        {
            "/": Page(html('<link rel="stylesheet" href="/huge.css">')),
            "/huge.css": Page(nested, content_type="text/css"),
            "/deep.png": Page(b"\x89PNG\r\n\x1a\n", content_type="image/png"),
        }
    )

    started = time.monotonic()
    code, report = run.check_json(site.url("/"), "--max-size", "100000")

    assert time.monotonic() - started < 60
    huge = {e["url"]: e for e in report["urls"]}[site.url("/huge.css")]
    assert (huge["state"], huge["reason"]) == ("warning", "too-large")
    assert site.counts()["/deep.png"] >= 1  # what was read of it is checked
    assert code == 0
