from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from linkpatrol import extract
from linkpatrol.extract import (
    _NEWLINE_IN_TAG_RE,
    _QUOTED_GT_RE,
    Link,
    Page,
    _Edges,
    _one_line_tags_before,
    _spanning_lines,
    css_urls,
    extract_html,
    sniff_encoding,
)

FAST = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def triples(page: Page) -> list[tuple[str, int, str, str]]:
    return [(link.url, link.line, link.tag, link.attr) for link in page.links]


ALL_TAGS = b"""<!DOCTYPE html>
<html>
<head>
<link rel="stylesheet" href="/css/site.css">
<script src="/js/app.js"></script>
</head>
<body background="bg.png">
<a href="/a.html">a</a>
<map><area href="/area.html"></map>
<img src="/img.png" alt="">
<iframe src="/frame.html"></iframe>
<frameset><frame src="/frame2.html"></frameset>
<embed src="/movie.swf">
<video src="/v.mp4" poster="/poster.jpg"><source src="/v.webm"><track src="/subs.vtt"></video>
<audio src="/a.ogg"></audio>
<input type="image" src="/button.png"><input type="text" src="/not-a-link.png">
<object data="/obj.svg"></object>
<blockquote cite="/bq">b</blockquote><q cite="/q">q</q>
<del cite="/del">d</del><ins cite="/ins">i</ins>
</body>
</html>
"""


def test_every_tag_and_attribute_with_its_line() -> None:
    page = extract_html(ALL_TAGS)
    assert triples(page) == [
        ("/css/site.css", 4, "link", "href"),
        ("/js/app.js", 5, "script", "src"),
        ("bg.png", 7, "body", "background"),
        ("/a.html", 8, "a", "href"),
        ("/area.html", 9, "area", "href"),
        ("/img.png", 10, "img", "src"),
        ("/frame.html", 11, "iframe", "src"),
        ("/frame2.html", 12, "frame", "src"),
        ("/movie.swf", 13, "embed", "src"),
        ("/v.mp4", 14, "video", "src"),
        ("/poster.jpg", 14, "video", "poster"),
        ("/v.webm", 14, "source", "src"),
        ("/subs.vtt", 14, "track", "src"),
        ("/a.ogg", 15, "audio", "src"),
        ("/button.png", 16, "input", "src"),
        ("/obj.svg", 17, "object", "data"),
        ("/bq", 18, "blockquote", "cite"),
        ("/q", 18, "q", "cite"),
        ("/del", 19, "del", "cite"),
        ("/ins", 19, "ins", "cite"),
    ]
    assert all(isinstance(link, Link) for link in page.links)


ANCHORS_AND_LINKS = b"""<html><head><title>T</title><base href="/docs/">
<meta http-equiv="refresh" content="5; url=/next"></head>
<body id="top"><h1 id="intro">x</h1><p id="">empty id</p>
<a name="old" href="a.html">a</a><div id="d"><span id="s">s</span></div>
<template id="tpl"><a href="/inert" id="inert">i</a></template>
<svg><use href="#shape" id="u"/></svg><img src="i.png" id="pic">
</body></html>
"""


@pytest.mark.parametrize("text", [b"", b"<p>a style= in the text</p>", b"<p style='x'>s</p>"])
def test_pages_with_and_without_style_attributes_read_alike(text: bytes) -> None:
    """With no style attribute, only the elements that may hold links are gone through,
    and libxml2 gathers the ids: what is found is the same."""
    page = extract_html(ANCHORS_AND_LINKS.replace(b"</body>", text + b"</body>"))
    assert triples(page) == [
        ("/next", 2, "meta", "content"),
        ("a.html", 4, "a", "href"),
        ("#shape", 6, "use", "href"),
        ("i.png", 6, "img", "src"),
    ]
    assert page.anchors == {"top", "intro", "old", "d", "s", "tpl", "u", "pic"}
    assert (page.title, page.base_href) == ("T", "/docs/")


def test_link_line_is_where_the_start_tag_begins() -> None:
    body = b'<p>\n<a\n  class="x"\n  href="/multi"\n>t</a>\n<img src="/after.png"\n>'
    assert triples(extract_html(body)) == [
        ("/multi", 2, "a", "href"),
        ("/after.png", 6, "img", "src"),
    ]


def test_two_tags_on_one_line_and_uppercase_markup() -> None:
    body = b'<P>\n<A HREF="/one">1</A><a href="/two">2</a>\n<IMG SRC="/three.png">'
    assert triples(extract_html(body)) == [
        ("/one", 2, "a", "href"),
        ("/two", 2, "a", "href"),
        ("/three.png", 3, "img", "src"),
    ]


def test_values_are_stripped_entities_decoded_and_empty_ones_skipped() -> None:
    body = (
        b'<a href="  /x?a=1&amp;b=2 \n">x</a><a href="">e</a><a href="   ">w</a>'
        b'<a>n</a><a href="#top">t</a>'
    )
    assert [link.url for link in extract_html(body).links] == ["/x?a=1&b=2", "#top"]


def test_data_urls_are_kept_verbatim() -> None:
    body = b'<img src="data:image/png;base64,iVBORw0KGgo=">'
    assert [link.url for link in extract_html(body).links] == ["data:image/png;base64,iVBORw0KGgo="]


def test_srcset_candidates() -> None:
    body = (
        b'<img src="/s.png"\n'
        b' srcset="/a.png 1x, /b,c.png 2x,/d.png,  /e.png (x, y) 480w ,, /f.png">\n'
        b'<picture><source srcset="/w1.webp 1x,/w2.webp 2x"></picture>\n'
        b'<link rel="preload" as="image" href="/h.png" imagesrcset="/i1.png 1x, /i2.png 2x">'
    )
    assert triples(extract_html(body)) == [
        ("/s.png", 1, "img", "src"),
        ("/a.png", 1, "img", "srcset"),
        ("/b,c.png", 1, "img", "srcset"),
        ("/d.png", 1, "img", "srcset"),
        ("/e.png", 1, "img", "srcset"),
        ("/f.png", 1, "img", "srcset"),
        ("/w1.webp", 3, "source", "srcset"),
        ("/w2.webp", 3, "source", "srcset"),
        # a preloaded image's candidates too
        ("/h.png", 4, "link", "href"),
        ("/i1.png", 4, "link", "imagesrcset"),
        ("/i2.png", 4, "link", "imagesrcset"),
    ]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("5; url=/next", "/next"),
        ("0;URL='/quoted'", "/quoted"),
        ('0; url="/double" ignored', "/double"),
        ("3,url=/comma", "/comma"),
        ("  10 ;  URL =  /spaces  ", "/spaces"),
        ("1; /no-url-prefix", "/no-url-prefix"),
        ("0.5;url=/fraction", "/fraction"),
        ("0;url='/unterminated", "/unterminated"),
    ],
)
def test_meta_refresh_variants(content: str, expected: str) -> None:
    quote = "'" if '"' in content else '"'
    body = f'<head>\n<meta http-equiv="Refresh" content={quote}{content}{quote}>'.encode()
    assert triples(extract_html(body)) == [(expected, 2, "meta", "content")]


@pytest.mark.parametrize("content", ["5", "0;", "url=/no-delay", "5x; url=/bad", "0; url="])
def test_meta_refresh_without_target(content: str) -> None:
    body = f'<meta http-equiv="refresh" content="{content}">'.encode()
    assert extract_html(body).links == []


def test_other_meta_content_is_not_a_link() -> None:
    assert extract_html(b'<meta name="description" content="0; url=/x">').links == []


def test_style_attribute_and_style_block() -> None:
    body = b"""<html><head>
<style type="text/css">
body { background: url(/bg.png); }
/* url(/commented.png) */
@import "/imported.css";
@import url('/imported2.css');
.x { background-image: URL( "/quoted.png" ) }
</style>
<style
  media="print"
>.p { list-style: url(/print.png) }</style>
</head><body>
<div style="background: url('/div.png'); mask: url(/mask.svg)">x</div>
<p style="color: red">no url</p>
</body></html>"""
    assert triples(extract_html(body)) == [
        ("/bg.png", 3, "style", "css"),
        ("/imported.css", 5, "style", "css"),
        ("/imported2.css", 6, "style", "css"),
        ("/quoted.png", 7, "style", "css"),
        ("/print.png", 11, "style", "css"),
        ("/div.png", 13, "div", "style"),
        ("/mask.svg", 13, "div", "style"),
    ]


def test_connection_hints_are_not_links() -> None:
    body = b"""<head>
<link href="https://fonts.gstatic.com" rel="preconnect" crossorigin>
<link rel="DNS-Prefetch preconnect" href="//cdn.example.org">
<link rel="preload" href="/font.woff2" as="font">
<link rel="preconnect stylesheet" href="/odd.css">
</head>"""
    assert triples(extract_html(body)) == [
        ("/font.woff2", 4, "link", "href"),
        ("/odd.css", 5, "link", "href"),
    ]


def test_svg_links_in_either_spelling() -> None:
    body = b"""<svg xmlns:xlink="http://www.w3.org/1999/xlink">
<a xlink:href="/old-style?a=1&amp;b=2"><text>x</text></a>
<a href="/new-style" xlink:href="/ignored"><text>y</text></a>
<image
  xlink:href="/diagram.png"/><image href="/photo.jpg"/>
<use href="#icon"/><use xlink:href="/sprite.svg#search"/>
</svg>"""
    assert triples(extract_html(body)) == [
        ("/old-style?a=1&b=2", 2, "a", "xlink:href"),
        ("/new-style", 3, "a", "href"),
        ("/diagram.png", 4, "image", "xlink:href"),
        ("/photo.jpg", 5, "image", "href"),
        ("#icon", 6, "use", "href"),
        ("/sprite.svg#search", 6, "use", "xlink:href"),
    ]


def test_css_urls() -> None:
    css = (
        'a { b: url(x.png) }\n\n@import "y.css";\n'
        '/* url(no)\n */ c { d: url( "z w.png" ) url() myurl(no) }'
    )
    assert css_urls(css) == [("x.png", 1), ("y.css", 3), ("z w.png", 5)]
    assert css_urls(css, first_line=10) == [("x.png", 10), ("y.css", 12), ("z w.png", 14)]
    assert css_urls("/* unterminated url(a)") == []


def test_css_image_set_strings_are_urls_but_not_their_types() -> None:
    css = (
        'a { background: image-set("a.avif" type("image/avif") 1x,\n'
        "  'b.png' 2x, url(c.png) 3x); }\n"
        'b { x: -webkit-IMAGE-SET("d.png" 1x) } c { y: myimage-set("no.png") }\n'
        'd { z: image-set( "" 1x, "e (1).png" 2x) } /* image-set("no2.png") */'
    )
    assert css_urls(css) == [
        ("a.avif", 1),
        ("b.png", 2),
        ("c.png", 2),
        ("d.png", 3),
        ("e (1).png", 4),
    ]
    # one left open reads to the end, once: thousands more openings cost no more
    assert css_urls('x { a: image-set("a.png"' + " image-set(" * 20_000) == [("a.png", 1)]


def test_nothing_from_comments_scripts_or_templates() -> None:
    body = b"""<html><body>
<!-- <a href="/comment"> -->
<script>document.write('<a href="/script">'); var s = "url(/x.png)";</script>
<template id="tpl"><a href="/template">t</a><img src="/template.png"><p id="inside">x</p></template>
<noscript><img src="/noscript.png"></noscript>
<textarea><a href="/textarea"></textarea>
<a href="/real">r</a>
</body></html>"""
    page = extract_html(body)
    assert triples(page) == [
        ("/noscript.png", 5, "img", "src"),
        ("/real", 7, "a", "href"),
    ]
    assert page.anchors == frozenset({"tpl"})


def test_base_anchors_and_title() -> None:
    body = b"""<html><head><title>  The  Title \n</title>
<base href="  /docs/ "><base href="/ignored/">
</head><body>
<h1 id="intro">x</h1><a name="old-style">y</a><div name="not-anchor"></div>
<p id="">empty</p><title>second</title>
</body></html>"""
    page = extract_html(body)
    assert page.base_href == "/docs/"
    assert page.title == "The  Title"
    assert page.anchors == frozenset({"intro", "old-style"})
    assert page.links == []


def test_missing_title_and_base() -> None:
    page = extract_html(b"<p>plain</p>")
    assert page.title is None
    assert page.base_href is None
    assert page.anchors == frozenset()


@pytest.mark.parametrize(
    ("body", "header", "expected"),
    [
        (b"\xef\xbb\xbf<p>", "iso-8859-2", "utf-8"),
        (b"\xff\xfe<\x00p\x00>\x00", None, "utf-16-le"),
        (b"\xfe\xff\x00<\x00p\x00>", "utf-8", "utf-16-be"),
        (b"<p>", "ISO-8859-2", "iso8859-2"),
        (b"<p>", "iso-8859-1", "cp1252"),
        (b"<p>", "US-ASCII", "cp1252"),
        (b"<p>", "latin1", "cp1252"),
        (b"<p>", "Shift_JIS", "cp932"),
        (b'<meta charset="koi8-r"><p>', "no-such-charset", "koi8-r"),
        (b"<meta charset=windows-1251>", None, "cp1251"),
        (b'<meta http-equiv="Content-Type" content="text/html; charset=EUC-JP">', None, "euc_jp"),
        (b'<!-- <meta charset="koi8-r"> --><meta charset="iso-8859-7">', None, "iso8859-7"),
        (b'<meta name="description" content="Set charset=koi8-r in Apache">', None, "utf-8"),
        (b'<meta content="text/html; charset=koi8-r">', None, "utf-8"),
        (b'<meta charset="bogus"><meta charset="koi8-r">', None, "koi8-r"),
        (b"<META CONTENT=\"text/html;charset='koi8-r'\" HTTP-EQUIV=content-type>", None, "koi8-r"),
        (b'<meta http-equiv=content-type content="charset=euc-jp" charset=koi8-r>', None, "koi8-r"),
        (b'<meta charset="utf-16">', None, "utf-8"),
        (b'<meta charset="base64">', None, "utf-8"),
        (b" " * 5000 + b'<meta charset="koi8-r">', None, "utf-8"),
        (b"<p>", "rot13", "utf-8"),
        (b"<p>", None, "utf-8"),
    ],
)
def test_sniff_encoding(body: bytes, header: str | None, expected: str) -> None:
    assert sniff_encoding(body, header) == expected


def test_utf8_bom_document() -> None:
    page = extract_html('\ufeff<a href="/caf\u00e9">x</a>'.encode())
    assert page.encoding == "utf-8"
    assert triples(page) == [("/caf\u00e9", 1, "a", "href")]


def test_utf16_document() -> None:
    page = extract_html('\ufeff<p>\n<a href="/\u00fcber">x</a>'.encode("utf-16-le"))
    assert page.encoding == "utf-16-le"
    assert triples(page) == [("/\u00fcber", 2, "a", "href")]


def test_latin1_page_with_accented_url() -> None:
    text = '<html><head><meta charset="iso-8859-1"></head>\n<a href="/caf\u00e9.html">x</a>'
    body = text.encode("latin-1")
    page = extract_html(body)
    assert page.encoding == "cp1252"
    assert triples(page) == [("/caf\u00e9.html", 2, "a", "href")]


@pytest.mark.parametrize(
    ("charset", "written", "url"),
    [
        ("Shift_JIS", b"/\x87\x40\x81\x60", "/\u2460\uff5e"),
        ("gb2312", b"/\x81\x40", "/\u4e02"),
        ("EUC-KR", b"/\x81\x41", "/\uac02"),
        ("ISO-8859-9", b"/\x80", "/\u20ac"),
        ("TIS-620", b"/\x80", "/\u20ac"),
    ],
)
def test_legacy_charsets_decoded_as_browsers_do(charset: str, written: bytes, url: str) -> None:
    body = b'<a href="' + written + b'">x</a>'
    assert extract_html(body, charset).links[0].url == url
    declared = b'<meta charset="' + charset.encode() + b'">\n' + body
    assert triples(extract_html(declared)) == [(url, 2, "a", "href")]


def test_header_charset_wins_over_meta() -> None:
    body = '<meta charset="utf-8"><a href="/\u00e9">x</a>'.encode("latin-1")
    assert extract_html(body, "iso-8859-1").links[0].url == "/\u00e9"
    assert extract_html(body).links[0].url == "/\ufffd"


def test_xml_declaration_and_crlf_newlines() -> None:
    body = (
        b'<?xml version="1.0" encoding="utf-8"?>\r\n'
        b'<html>\r\n<a href="/crlf">x</a>\r<a href="/cr">y</a>'
    )
    assert triples(extract_html(body)) == [("/crlf", 3, "a", "href"), ("/cr", 4, "a", "href")]


def test_broken_html_still_yields_links() -> None:
    body = b"""<html><body><div><p>unclosed
<a href="/one">one <b>bold <i>mixed</b></i>
< stray less-than <<>>
<table><tr><td><a href="/two">two</td></table></a>
<img src="/three.png\x00x"><a href=/four>
\x00\x01\xff\xfe garbage \x80\x81
<a href='/five'"""
    urls = [(link.url, link.line) for link in extract_html(body).links]
    assert urls[:4] == [("/one", 2), ("/two", 4), ("/three.png\ufffdx", 5), ("/four", 5)]


@pytest.mark.parametrize(
    "body", [b"", b"   \n\t", b"<!-- only a comment -->", b"\x00", b"\xff" * 10]
)
def test_empty_documents(body: bytes) -> None:
    page = extract_html(body)
    assert page.links == []
    assert page.base_href is None
    assert page.title is None


@pytest.mark.parametrize(
    ("source", "line"),
    [
        (b"<p>\n<a href=/x>\n<img src='/y'>\n", 4),  # no tag spans lines: all of them
        (b"<p>\n<a\nhref=/x>", 2),  # a newline before the tag's first '>'
        (b"<p>\n<img alt='two\nlines' src=/y>", 2),
        (b'<p>\n<a title="a > b"\nhref=/x>', 2),  # a quoted '>': the tag goes on past it
        (b"<p>\n<script>if (a<b\n) {}</script>", 2),  # what only may be a tag counts too
        (b"<!--\n-->\n<a href=/x>", 3),  # a comment is no tag
        (b"\n" * 70_000, 65_535),  # libxml2's lines stop there
    ],
)
def test_the_lines_where_every_tag_is_on_one_line(source: bytes, line: int) -> None:
    """Before this line libxml2's line (where a tag ends) is where the tag starts."""
    assert _one_line_tags_before(source) == line


def _by_both_searches(low: bytes) -> int:
    """The line as the two searches over the whole source find it, with no shortcut."""
    found = [m.start() for m in (_NEWLINE_IN_TAG_RE.search(low), _QUOTED_GT_RE.search(low)) if m]
    return min(low.count(b"\n", 0, min(found, default=len(low))) + 1, 65_535)


@pytest.mark.parametrize(
    "source",
    [
        b"<p>\n1 < 2\n<a href=/x>",  # a '<' that is no tag: the searches decide
        b"<p title='it''s'>\n<a x=y z='>'>",  # quotes and '=' that only look the part
        b'<p a=x"b>\n<a\n>',  # '=' not before its quote: the searches decide
        b"<a href=\"/a\">\n<b c=\n'd>e'>\n",  # the quote after a newline
    ],
)
def test_the_shortcut_leaves_the_line_as_the_searches_find_it(source: bytes) -> None:
    assert _one_line_tags_before(source) == _by_both_searches(source)


@FAST
@given(st.lists(st.sampled_from([b"<", b">", b"\n", b"=", b'"', b"'", b" ", b"a", b"/", b"<a"])))
def test_the_shortcut_never_differs_from_the_searches(pieces: list[bytes]) -> None:
    source = b"".join(pieces)
    assert _one_line_tags_before(source) == _by_both_searches(source)


@pytest.mark.parametrize(
    ("source", "ranges"),
    [
        (b"<p>\n<a href=/x>\n<img src='/y'>\n", ([], [])),  # no tag spans lines
        (b"<p>\n<a\nhref=/x>\n<a href=/y>", ([2], [3])),  # the tag's own lines only
        (b'<p>\n<a title="a > b"\nhref=/x>\n<a href=/y>', ([2], [3])),  # a quoted '>'
        (b"<a\n\nb>\n<i\n>", ([1, 4], [3, 5])),  # two tags, two ranges
        (b"<a\nb><i\n>", ([1], [3])),  # ranges that share a line are one
        (b"<x y='<a\n'>\n<a href=/y>", ([1], [2])),  # a '<' in a value counts too
        (b"<p>\n<a title='x>y\n", ([2], [3])),  # a quote never closed: to the end
    ],
)
def test_the_lines_where_a_tag_may_span_lines(
    source: bytes, ranges: tuple[list[int], list[int]]
) -> None:
    assert _spanning_lines(source) == ranges


def test_the_lines_where_tags_span_lines_are_found_in_bounded_time() -> None:
    """A page of '<' with no '>' would have each place read to the end: past a bound, the
    rest is taken for one range."""
    source = b"<a " * 200_000 + b"\n" + b"<a href=/x>\n" * 10
    assert _spanning_lines(source) == ([1], [12])


@FAST
@given(st.lists(st.sampled_from([b"<", b">", b"\n", b"=", b'"', b"'", b" ", b"a", b"/", b"<a"])))
def test_the_spanning_lines_are_those_of_searches_with_no_shortcut(pieces: list[bytes]) -> None:
    """Stopping once every line that may end inside a tag was seen, and reading quoted
    '>' from the first the page has on, finds the same ranges."""
    source = b"".join(pieces)
    no_shortcut = _Edges(tags=b"<\n" * (source.count(b"\n") + 1), quoted=0)
    assert _spanning_lines(source) == _spanning_lines(source, no_shortcut)


_PIECES = [
    *(b"<", b">", b"\n", b"=", b'"', b"'", b" ", b"x", b"/", b"<a", b"<a href=/u", b"<img src=u"),
    *(b"<!--", b"-->", b"<script>", b"</script>", b"<a title='a>b' href=/v>"),
]


@settings(FAST, max_examples=1500)
@given(st.lists(st.sampled_from(_PIECES), max_size=60))
def test_the_lines_outside_spanning_tags_change_no_line(pieces: list[bytes]) -> None:
    """Reading every tag on from the first place where one may span lines, as before the
    ranges were known, finds each link on the same line."""
    source = b"<p>\n" + b"".join(pieces) + b"\n<a href=/end>"
    page = extract_html(source)
    everywhere = ([1], [1_000_000])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(extract, "_spanning_lines", lambda low, edges=None: everywhere)
        assert triples(extract_html(source)) == triples(page)


def test_lines_beyond_libxml2_limit() -> None:
    filler = ['<p>filler <a href="/same">same</a> &amp; more</p>'] * 69_998
    lines = [
        "<html><body>",
        *filler,
        '<a href="/far?a=1&amp;b=2">far</a><img',
        'src="/late.png">',
        "<style>",
        "x { background: url(/late-css.png) }</style>",
        '<div style="background:url(/late-style.png)">d</div></body></html>',
    ]
    assert len(lines) == 70_004
    page = extract_html("\n".join(lines).encode())
    same = [link.line for link in page.links if link.url == "/same"]
    assert same == list(range(2, 70_000))
    assert triples(page)[-4:] == [
        ("/far?a=1&b=2", 70_000, "a", "href"),
        ("/late.png", 70_000, "img", "src"),
        ("/late-css.png", 70_003, "style", "css"),
        ("/late-style.png", 70_004, "div", "style"),
    ]


AFTER_HTML = b"""<!DOCTYPE html>
<html><head></head><body><p id="top">top</p>
<a href="/in.html">in</a>
</body></html>
<a href="/after.html" id="late">after</a><img
src="/late.png"><title>Late title</title>
<!-- a comment -->
</body></html>
<div style="background:url(/late-style.png)"><a name="named" href="#late">x</a></div>
<base href="/base/"><template id="inert"><a href="/inert.html">no</a></template>
<p data-linkpatrol-ignore><a href="/ignored.html" id="kept">no</a></p>
"""


@pytest.mark.parametrize("big", [False, True], ids=["a page", "a page read as it is parsed"])
def test_what_follows_the_end_of_html_is_read_as_a_browser_reads_it(big: bool) -> None:
    """libxml2 leaves content after </html> beside the root element; a browser puts it at
    the end of the body, so its links, ids, base and title count as the rest do. A page
    past the size from which it is read as it is parsed (templates, ignored elements,
    style blocks and all) gives the same, read either way."""
    filler = b"<p class=filler>text</p>\n" * (extract.STREAM_FROM // 25) if big else b"\n"
    body = AFTER_HTML.replace(b'<a href="/in.html">in</a>\n', b'<a href="/in.html">in</a>' + filler)
    lines = filler.count(b"\n") - 1  # the lines the filler adds
    assert (len(body) >= extract.STREAM_FROM) == big

    page = extract_html(body)

    assert triples(page) == [
        ("/in.html", 3, "a", "href"),
        ("/after.html", 5 + lines, "a", "href"),
        ("/late.png", 5 + lines, "img", "src"),
        ("/late-style.png", 9 + lines, "div", "style"),
        ("#late", 9 + lines, "a", "href"),
    ]
    assert page.anchors == {"top", "late", "named", "inert", "kept"}
    assert (page.base_href, page.title) == ("/base/", "Late title")
    assert both_ways(body) == (page, page)


@pytest.mark.parametrize("filler", [0, 70_000])
def test_wrapped_tag_after_many_tags_of_its_name_without_links(filler: int) -> None:
    body = (
        "<p>x</p>\n" * filler
        + "<div>x</div>\n" * 100
        + '<div\nstyle="background:url(/x.png)">\n'
        + "<a name=n>x</a>\n" * 70
        + "<a\nhref=/y>y</a>"
    )
    assert triples(extract_html(body.encode())) == [
        ("/x.png", filler + 101, "div", "style"),
        ("/y", filler + 173, "a", "href"),
    ]


def decoded_line_count(body: bytes, encoding: str) -> int:
    text = body.decode(encoding, "replace")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.count("\n") + 1


html_fragments = st.sampled_from(
    [
        "<a href='/x'>",
        '<img src="/i.png" srcset="a 1x, b 2x">',
        "<a\nhref=/y\n>",
        "<style>a{b:url(/s.png)}\n</style>",
        '<div style="background:url(/d.png)">',
        '<meta http-equiv="refresh" content="0;url=/r">',
        "<!--",
        "-->",
        "<script>",
        "</script>",
        "<template>",
        "</template>",
        "<",
        ">",
        "\n",
        "\r",
        "\x00",
        '"',
        "'",
        "<a href=",
        "&amp;",
        "<base href=/b>",
        "<title>",
        "é",
        "\ufeff",
    ]
)
documents = st.one_of(
    st.binary(max_size=2000),
    st.lists(html_fragments, max_size=40).map(lambda parts: "".join(parts).encode()),
    st.lists(st.one_of(html_fragments, st.text(max_size=5)), max_size=30).map(
        lambda parts: "".join(parts).encode("utf-8", "surrogatepass")
    ),
)


@FAST
@given(documents, st.sampled_from([None, "utf-8", "latin-1", "utf-16", "bogus", ""]))
def test_extract_never_raises_and_lines_are_in_range(body: bytes, header: str | None) -> None:
    page = extract_html(body, header)
    assert isinstance(page, Page)
    bom_free = body[3:] if page.encoding == "utf-8" and body.startswith(b"\xef\xbb\xbf") else body
    if page.encoding.startswith("utf-16") and body[:2] in (b"\xff\xfe", b"\xfe\xff"):
        bom_free = body[2:]
    total = decoded_line_count(bom_free, page.encoding)
    for link in page.links:
        assert link.url == link.url.strip(" \t\n\r\f")
        assert link.url
        assert 1 <= link.line <= total


# ---- big pages, read as they are parsed ------------------------------------------------


@contextlib.contextmanager
def streamed_from(size: int) -> Iterator[None]:
    """Pages of ``size`` bytes or more read as they are parsed, for the block."""
    kept = extract.STREAM_FROM
    extract.STREAM_FROM = size
    try:
        yield
    finally:
        extract.STREAM_FROM = kept


def both_ways(body: bytes, header: str | None = None) -> tuple[Page, Page]:
    """The page read whole as a tree, and read as it is parsed."""
    with streamed_from(1 << 62):
        whole = extract_html(body, header)
    with streamed_from(0):
        streamed = extract_html(body, header)
    return whole, streamed


def test_a_big_page_nested_past_libxml2_limit_is_read_whole_flattened() -> None:
    deep = 3000
    body = (
        b'<a href="/before.html">b</a>\n'
        + b"<div>" * deep
        + b'\n<a href="/deep.html">d</a>\n'
        + b"</div>" * deep
        + b'\n<a href="/after.html">a</a>\n'
    )
    whole, streamed = both_ways(body)
    assert streamed == whole
    assert triples(streamed) == [
        ("/before.html", 1, "a", "href"),
        ("/deep.html", 3, "a", "href"),
        ("/after.html", 5, "a", "href"),
    ]


streaming_fragments = st.sampled_from(
    [
        "<p data-linkpatrol-ignore>",
        "</p>",
        "<div id=d>",
        "</div>",
        "<a name=n href=/n>",
        "</a>",
        "</html>",
        "</body>",
        "<title><a href=/t id=t>",
        "</title>",
        "<svg><style>b{c:url(/v.png)}</style><a xlink:href=/x>",
        "</svg>",
        "<template id=t><p id=inner>",
        "<span style='background:url(/s.png)'>",
        "<link rel=preconnect href=/p>",
        "<!-- linkpatrol-disable -->",
        "<!-- linkpatrol-enable -->",
    ]
)


@FAST
@given(st.lists(st.one_of(html_fragments, streaming_fragments, st.text(max_size=5)), max_size=40))
def test_a_page_read_as_it_is_parsed_is_read_as_the_tree_is(parts: list[str]) -> None:
    whole, streamed = both_ways("".join(parts).encode("utf-8", "surrogatepass"))
    assert streamed == whole


def alive(root: etree._Element) -> int:
    return sum(1 for _ in root.iter())


def test_a_title_with_elements_in_it_is_given_whole_before_them() -> None:
    """libxml2 before 2.14 may put elements in a title; read as elements end, the title is
    given with all of its text, then the elements within it, in the tree walk's order."""
    source = (
        b"<html><head><title>a <a href='/t' id='t'>b</a> c</title></head>"
        b"<body><p id='p'><style>x</style><a href='/z'>z</a></p></body></html>"
    )
    walked, ids = extract._walk_lxml(etree.fromstring(source), False)  # XML keeps them
    anchors: set[str] = set()
    root = etree.fromstring(source)
    given = [
        (tag, "".join(element.itertext()) if tag in ("title", "style") else None, alive(root))
        for tag, _, _, element in extract._streamed(
            etree.iterwalk(root, events=("start", "end")), False, anchors
        )
    ]
    # the title and what is in it are gone once the body starts, and all at the end
    assert given == [
        ("title", "a b c", 8),
        ("a", None, 8),
        ("body", None, 6),
        ("style", "x", 6),
        ("a", None, 6),
    ]
    assert alive(root) == 1
    assert [tag for tag, *_ in walked] == [tag for tag, *_ in given]
    assert anchors == set(ids) == {"t", "p"}
