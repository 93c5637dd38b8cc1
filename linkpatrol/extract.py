"""Links with their source line numbers from HTML pages and CSS text.

Parsing uses lxml's forgiving HTML parser, fed UTF-8 re-encoded from the
decoded text so that the charset decision is ours and line numbers count
the same newlines the caller sees.
"""

from __future__ import annotations

import bisect
import codecs
import enum
import functools
import html
import io
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

from lxml import etree

from linkpatrol.css import STYLESHEET_TAG, css_links, css_urls, decode_stylesheet
from linkpatrol.model import LinkKind

__all__ = [
    "Link",
    "Marker",
    "Page",
    "Switch",
    "css_urls",
    "extract_html",
    "extract_stylesheet",
    "find_markers",
    "sniff_encoding",
    "without_marked",
]


_NAVIGATION = LinkKind.NAVIGATION.value
_SUBRESOURCE = LinkKind.SUBRESOURCE.value


class Link(NamedTuple):
    """One link as written in the page, with where it was written."""

    url: str
    line: int
    tag: str
    attr: str
    kind: int = _NAVIGATION  # a LinkKind's value: followed, or loaded into the page


# a Link made from its fields' tuple as tuples are made, in C: a page makes one per link
# (the named tuple's own constructor, like a dataclass's, is Python code: 0.3 us a link)
_link: Callable[[tuple[str, int, str, str, int]], Link] = functools.partial(tuple.__new__, Link)


@dataclass(frozen=True, slots=True)
class Page:
    """What the checker needs from one HTML document."""

    links: list[Link]
    base_href: str | None
    encoding: str
    anchors: frozenset[str]  # ids and <a name>s: a fragment finds them as written
    title: str | None
    # the ids a Markdown renderer gives headings, lower case: GitHub finds them whatever
    # the case of the fragment
    heading_ids: frozenset[str] = frozenset()


_LINE_CAP = 65535
HTML_SPACE = " \t\n\r\f"
# The rest of a tag after its name, read as the HTML tokenizer reads it: a quoted
# attribute value may hold '>' and newlines. Possessive, so no input makes it backtrack.
_TAG_REST = (
    rb"""(?:[ \t\n\r\f/]++|[^ \t\n\r\f/>][^ \t\n\r\f/>=]*+"""
    rb"""(?:[ \t\n\r\f]*+=[ \t\n\r\f]*+(?>"[^"]*+"|'[^']*+'|[^ \t\n\r\f>]*+))?)*+"""
)
_TAG_REST_RE = re.compile(_TAG_REST)
# Elements whose content is text to the HTML tokenizer (and to libxml2): no tags inside.
_RAW_TEXT = ("script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes")
_RAW_TEXT_END_RE = {
    name: re.compile(b"</" + name.encode() + rb"(?=[ \t\n\r\f/>])") for name in _RAW_TEXT
}

_LINK_ATTRS: dict[str, tuple[str, ...]] = {
    "a": ("href",),
    "area": ("href",),
    "link": ("href", "imagesrcset"),  # a preloaded image's candidates, as srcset
    "img": ("src", "srcset"),
    "script": ("src",),
    "iframe": ("src",),
    "frame": ("src",),
    "embed": ("src",),
    "source": ("src", "srcset"),
    "track": ("src",),
    "audio": ("src",),
    "video": ("src", "poster"),
    "object": ("data",),
    "body": ("background",),
    "blockquote": ("cite",),
    "q": ("cite",),
    "del": ("cite",),
    "ins": ("cite",),
    "image": ("href",),  # SVG's
    "use": ("href",),
}
_SERVER_HINTS = frozenset({"preconnect", "dns-prefetch"})
# what a browser loads into the page, rather than goes to: images, scripts, frames, media
# (the elements with a link attribute not listed here are followed, as <a>; a <link> is
# either, by its rel)
_LOADED_TAGS = frozenset(
    {"img", "script", "iframe", "frame", "embed", "source", "track", "audio", "video"}
    | {"object", "body", "image", "use", "input"}
)
_LOADING_RELS = frozenset(
    {"stylesheet", "icon", "apple-touch-icon", "apple-touch-icon-precomposed", "mask-icon"}
    | {"preload", "modulepreload", "prefetch", "manifest"}
)
# SVG elements that still take the XLink spelling of href when it is absent.
_XLINK_TAGS = frozenset({"a", "image", "use"})
_OTHER_TAGS = frozenset({"input", "meta", "style", "base", "title"})
_LINK_ELEMENTS = (*_LINK_ATTRS, *_OTHER_TAGS)  # all that may hold a link but a style attribute
_LINK_TAGS = frozenset(_LINK_ELEMENTS)
# The attributes read of those elements, and the elements read further (title's text,
# style's CSS)
_READ = (
    *dict.fromkeys(name for names in _LINK_ATTRS.values() for name in names),
    *("xlink:href", "name", "rel", "type", "http-equiv", "content", "style"),
)
_KEPT = frozenset({"title", "style"})
# Each style attribute's value as the tokenizer reads it, and more ("style=" in text): one
# that may hold a link (see css.py), written out or with character references, makes every
# element be gone through.
_STYLE_VALUE_RE = re.compile(
    rb"""style[ \t\n\r\f]*+=[ \t\n\r\f]*+("[^"]*+"|'[^']*+'|[^ \t\n\r\f>]*+)"""
)
_CSS_LINK_HINTS = (b"url(", b"@import", b"image-set(", b"&#", b"&lpar", b"&commat")


def _style_may_link(low: bytes) -> bool:
    """Whether a style attribute in the (lower-cased) source may hold a link."""
    if b"style" not in low:
        return False
    return any(hint in value for value in _STYLE_VALUE_RE.findall(low) for hint in _CSS_LINK_HINTS)


_IDS = etree.XPath("//@id", smart_strings=False)

_BOMS = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xfe\xff", "utf-16-be"),
    (b"\xff\xfe", "utf-16-le"),
)
# WHATWG Encoding: on the web these labels mean the supersets browsers decode them as.
_WHATWG_RENAMES = {
    "iso8859-1": "cp1252",
    "ascii": "cp1252",
    "utf-8-sig": "utf-8",
    "iso8859-9": "cp1254",
    "iso8859-11": "cp874",
    "tis-620": "cp874",
    "gb2312": "gbk",
    "euc_kr": "cp949",
    "shift_jis": "cp932",
    "big5": "big5hkscs",
}
_UNUSABLE_CODECS = frozenset(
    {"idna", "punycode", "unicode-escape", "raw-unicode-escape", "undefined", "utf-7"}
)
_META_RE = re.compile(rb"<meta(?=[ \t\n\r\f/])(" + _TAG_REST + rb")", re.IGNORECASE)
_ATTRIBUTE_RE = re.compile(
    rb"""([^ \t\n\r\f/>][^ \t\n\r\f/>=]*+)"""
    rb"""(?:[ \t\n\r\f]*+=[ \t\n\r\f]*+(?:"([^"]*+)"|'([^']*+)'|([^ \t\n\r\f>]*+)))?"""
)
# Possessive quantifiers where white space meets white space: no input makes these backtrack.
_CONTENT_CHARSET_RE = re.compile(
    rb"""charset[ \t\n\r\f]*+=[ \t\n\r\f]*+(?:"([^"]*+)"|'([^']*+)'|(?!["'])([^ \t\n\r\f;]*+))""",
    re.IGNORECASE,
)
_HTML_COMMENT_RE = re.compile(rb"<!--.*?(?:-->|\Z)", re.DOTALL)

_SRCSET_URL_RE = re.compile(r"[ \t\n\r\f,]*([^ \t\n\r\f]*)")
_SRCSET_DESCRIPTORS_RE = re.compile(r"(?:[^,(]+|\([^)]*\)?)*,?")
_REFRESH_RE = re.compile(
    r"[ \t\n\r\f]*[0-9.]+(?:(?:[ \t\n\r\f]*[;,]|[ \t\n\r\f])[ \t\n\r\f]*"
    r"(?:url[ \t\n\r\f]*=[ \t\n\r\f]*)?(.*))?",
    re.IGNORECASE | re.DOTALL,
)


@functools.lru_cache(maxsize=256)
def _codec_name(label: str, in_document: bool) -> str | None:
    """Python codec for a charset label, or None when Python cannot decode pages with it."""
    label = label.strip(HTML_SPACE + "\"'")
    if not label or len(label) > 64:
        return None
    try:
        name = codecs.lookup(label).name
    except (LookupError, ValueError, TypeError):
        return None
    name = _WHATWG_RENAMES.get(name, name)
    if name in _UNUSABLE_CODECS:
        return None
    if name.startswith(("utf-16", "utf-32")):
        # A document that could be read far enough to find its own label is ASCII-compatible.
        return "utf-8" if in_document else name
    try:
        if b"<a href=x>".decode(name, "replace") != "<a href=x>":
            return None
    except (LookupError, UnicodeError, ValueError, TypeError):
        return None
    return name


def _bom(body: bytes) -> tuple[str, int] | None:
    for mark, name in _BOMS:
        if body.startswith(mark):
            return name, len(mark)
    return None


def _meta_charset(head: bytes) -> str | None:
    """The charset of the first <meta> that declares one Python can use, as browsers read it:
    its charset attribute, else the charset in its content if its http-equiv is Content-Type.
    """
    if b"<!--" in head:
        head = _HTML_COMMENT_RE.sub(b"", head)
    for meta in _META_RE.finditer(head):
        attributes: dict[bytes, bytes] = {}
        for match in _ATTRIBUTE_RE.finditer(meta.group(1)):
            value = next((group for group in match.groups()[1:] if group is not None), b"")
            attributes.setdefault(match.group(1).lower(), value)
        label = attributes.get(b"charset")
        if label is None and attributes.get(b"http-equiv", b"").lower() == b"content-type":
            declared = _CONTENT_CHARSET_RE.search(attributes.get(b"content", b""))
            if declared is not None:
                label = next(group for group in declared.groups() if group is not None)
        name = _codec_name(label.decode("ascii", "replace"), True) if label else None
        if name is not None:
            return name
    return None


def sniff_encoding(body: bytes, header_charset: str | None) -> str:
    """Python codec for body: BOM, then HTTP charset, then <meta> in the first 4 KB, else UTF-8."""
    bom = _bom(body)
    if bom is not None:
        return bom[0]
    if header_charset:
        name = _codec_name(header_charset, False)
        if name is not None:
            return name
    return _meta_charset(body[:4096]) or "utf-8"


def _srcset_urls(value: str) -> list[str]:
    """Candidate URLs per the HTML srcset rules: a URL ends at whitespace or a trailing comma."""
    urls: list[str] = []
    end = len(value)
    pos = 0
    while pos < end:
        match = _SRCSET_URL_RE.match(value, pos)
        if match is None:
            break
        url = match.group(1)
        pos = match.end()
        if not url:
            break
        if url.endswith(","):
            url = url.rstrip(",")
            if url:
                urls.append(url)
            continue
        urls.append(url)
        descriptors = _SRCSET_DESCRIPTORS_RE.match(value, pos)
        if descriptors is not None:
            pos = descriptors.end()
    return urls


def _refresh_url(content: str) -> str | None:
    """Target of a <meta http-equiv=refresh> content value such as '5; url=/next'."""
    match = _REFRESH_RE.match(content)
    if match is None or not match.group(1):
        return None
    url = match.group(1)
    if url[0] in "\"'":
        close = url.find(url[0], 1)
        url = url[1:close] if close >= 0 else url[1:]
    return url.strip(HTML_SPACE) or None


@functools.lru_cache(maxsize=256)
def _scanner(
    tag: str,
) -> tuple[re.Pattern[bytes], int, re.Pattern[bytes] | None, re.Pattern[bytes]]:
    """(skipper, length of '<tag', end of its raw text, the next '<tag' however placed)
    for finding start tags ``<tag``.

    The skipper matches all the lower-cased source up to the next such start tag, or to
    its end, passing over what only looks like one as the HTML tokenizer passes over it:
    comments, other tags (a quoted attribute value may hold '<tag'), the text of script,
    style and the like, and bogus comments (``<!x>``, ``<?x>``, ``</ x>``).
    """
    name = tag.lower().encode("utf-8", "replace")
    after_lt = [
        rb"!--(?:-?>|.*?(?:--!?>|\Z))",
        *(
            raw
            + rb"(?=[ \t\n\r\f/>])"
            + _TAG_REST
            + rb"(?:>(?:.*?(?=</"
            + raw
            + rb"[ \t\n\r\f/>])|.*+))?"
            for raw in (n.encode() for n in _RAW_TEXT if n != tag)
        ),
        rb"plaintext(?=[ \t\n\r\f/>]).*+" if tag != "plaintext" else rb"(?!)",
        rb"(?!"
        + re.escape(name)
        + rb"(?:[ \t\n\r\f/>]|\Z))[a-z][^ \t\n\r\f/>]*+"
        + _TAG_REST
        + rb">?",
        rb"/[a-z][^ \t\n\r\f/>]*+" + _TAG_REST + rb">?",
        rb"[!?/][^>]*+>?",
        rb"(?![a-z!?/])",
    ]
    skipper = re.compile(rb"(?>[^<]++|<(?:" + b"|".join(after_lt) + rb"))*+", re.DOTALL)
    first = re.compile(b"<" + re.escape(name) + rb"(?=[ \t\n\r\f/>]|\Z)")
    return skipper, 1 + len(name), _RAW_TEXT_END_RE.get(tag), first


# Where a start tag may span lines, one of these matches within it: a newline before its
# first '>' (the name starts as libxml2's HTML names do), or a '>' in a quoted value, which
# the tag goes on past. Each matches much else too (a '<' in a script's code, say).
_NEWLINE_IN_TAG_RE = re.compile(rb"<[a-z_:.][^>\n]*+\n")
_QUOTED_GT_RE = re.compile(rb"""=[ \t\n\r\f]*+(?:"[^">]*+>|'[^'>]*+>)""")


# All bytes but '<', '>' and newlines: what is left of a page is a twentieth of it
_NOT_TAG_EDGE = bytes(sorted(set(range(256)) - set(b"<>\n")))


class _Edges(NamedTuple):
    """What both searches for places where a tag may span lines start from, found once."""

    tags: bytes  # what is left of the page of '<', '>' and newlines
    quoted: int  # where the first quoted value with a '>' is, or -1

    @classmethod
    def of(cls, low: bytes) -> _Edges:
        quoted = _QUOTED_GT_RE.search(low)
        return cls(low.translate(None, _NOT_TAG_EDGE), quoted.start() if quoted else -1)


def _one_line_tags_before(low: bytes, edges: _Edges | None = None) -> int:
    """A line before which every start tag in the source starts and ends on one line."""
    if edges is None:
        edges = _Edges.of(low)
    # of a tag with a newline before its '>', what is left once only '<', '>' and
    # newlines are: its '<' (and any other '<' before the newline), then the newline.
    # Most pages have none, and the search for it by pattern is then not made.
    newline = _NEWLINE_IN_TAG_RE.search(low) if b"<\n" in edges.tags else None
    if newline is None and edges.quoted < 0:
        return min(edges.tags.count(b"\n") + 1, _LINE_CAP)  # every newline is left
    first = min(at for at in (newline.start() if newline else -1, edges.quoted) if at >= 0)
    return min(low.count(b"\n", 0, first) + 1, _LINE_CAP)


# Every place where a start tag may span lines, as the two searches above find them, but
# overlapping too: each '<' of a match of the first (a newline before the next '>'); the
# '=' of a quoted value holding a '>' (group 1 or 2: the value up to it, by its quote).
_TAG_START_RE = re.compile(rb"<[a-z_:.]")
_SPANNING_VALUE_RE = re.compile(rb"""=(?=[ \t\n\r\f]*+(?:"([^">]*+)>|'([^'>]*+)>))""")
_NAME_RE = re.compile(rb"[^ \t\n\r\f/>]*+")
# bytes read past the places found, as a multiple of the page's: more gives up the rest
_SPANNING_WORK = 4


def _spanning_lines(low: bytes, edges: _Edges | None = None) -> tuple[list[int], list[int]]:
    """The line ranges (first lines, last lines; merged, in order) outside which every
    start tag starts and ends on one line.

    Each place where a tag may span lines is read on as the tokenizer reads a tag, to the
    '>' that would end it: from the name after a '<', from the closing quote of a value
    with a '>'. A multi-line start tag is one of those places, or holds one before its
    first newline, so its lines are within a range. The work is bounded: once the tags
    read add up to a multiple of the page, all from there on is taken for one range.
    """
    if edges is None:
        edges = _Edges.of(low)
    size = len(low)
    budget = _SPANNING_WORK * size + 1024
    cut = size  # where the bound was reached: all from there on spans
    spans: list[tuple[int, int]] = []

    def read_on(at: int, rest: re.Match[bytes] | None) -> bool:
        nonlocal budget, cut
        close = rest.end() if rest is not None else size
        budget -= close - at
        if budget < 0:
            cut = min(cut, at)
            return False
        spans.append((at, close))
        return True

    # Each match ends a line, whose '<' and '>' end in '<' (see _one_line_tags_before): no
    # more are looked for once there have been as many as such lines.
    lines_left = edges.tags.count(b"<\n")
    for match in _NEWLINE_IN_TAG_RE.finditer(low) if lines_left else ():
        lines_left -= 1
        for start in _TAG_START_RE.finditer(low, match.start(), match.end()):
            at = start.start()
            name = _NAME_RE.match(low, at + 1)
            end = name.end() if name is not None else at + 1
            if not read_on(at, _TAG_REST_RE.match(low, end)):
                break
        if cut < size or not lines_left:
            break
    # the searches match at the same '=': none before the first
    values = _SPANNING_VALUE_RE.finditer(low, edges.quoted, cut) if edges.quoted >= 0 else ()
    for match in values:
        double = match.start(1) >= 0
        quote = low.find(b'"' if double else b"'", match.end(1 if double else 2))
        if not read_on(match.start(), _TAG_REST_RE.match(low, quote + 1) if quote >= 0 else None):
            break
    if cut < size:
        spans.append((cut, size))
    spans.sort()
    firsts: list[int] = []
    lasts: list[int] = []
    pos, line = 0, 1
    for at, close in spans:
        line += low.count(b"\n", pos, at)
        pos = at
        last = line + low.count(b"\n", at, close)
        if firsts and line <= lasts[-1]:
            lasts[-1] = max(lasts[-1], last)
        else:
            firsts.append(line)
            lasts.append(last)
    return firsts, lasts


class _Locator:
    """Finds the true start line of a tag in the source.

    libxml2 reports the line where a start tag ends and caps it at 65535, so
    the source is read forward, in document order and as the HTML tokenizer reads it,
    for the tag itself. Up to the first place where a tag may span lines (in most pages,
    the whole page), and outside the lines of those places, a tag ends on the line it
    starts on, and the reported line is taken.
    """

    __slots__ = (
        "_behind",
        "_data",
        "_edges",
        "_line",
        "_low",
        "_one_line_below",
        "_pos",
        "_spanning",
        "_to_the_end",
    )

    def __init__(self, data: bytes, low: bytes) -> None:
        self._data = data
        self._low = low
        self._pos = 0
        self._line = 1
        self._edges = _Edges.of(low)
        self._one_line_below = _one_line_tags_before(low, self._edges)
        self._spanning: tuple[list[int], list[int]] | None = None  # found when first needed
        # the last tag taken at its reported line, which the reading has not passed yet
        self._behind: tuple[str, int] | None = None
        # Past libxml2's cap a tag is told by its value, searched for up to the end of the
        # document until one search fails; from then on, among the next 64 tags of its name.
        self._to_the_end = True

    def locate(self, tag: str, reported: int | None, value: str | None) -> tuple[int, int]:
        """(line of '<tag', line of the '>' that ends the start tag)."""
        if reported is not None and reported < self._one_line_below:
            return reported, reported
        capped = reported is None or reported >= _LINE_CAP
        if reported is not None and not capped:
            spanning = self._spanning
            if spanning is None:
                spanning = self._spanning = _spanning_lines(self._low, self._edges)
            firsts, lasts = spanning
            at = bisect.bisect_right(firsts, reported) - 1
            if at < 0 or lasts[at] < reported:
                self._behind = (tag, reported)
                return reported, reported  # no tag that may span lines is on this line
            if self._behind is not None:
                self._catch_up(*self._behind)
                self._behind = None
        low = self._low
        size = len(low)
        skipper, name_length, raw_end, first = _scanner(tag)
        pos, line = self._pos, self._line
        if not capped:
            # Most start tags sit on one line. The first '<tag' from here that starts and
            # ends on the reported line gives that line, whatever it is (a comment's, a
            # script's): the true tag cannot start earlier, or it would be found first.
            # Else the tokenizer's way, below.
            match = first.search(low, pos)
            if match is not None:
                found = match.start()
                start_line = line + low.count(b"\n", pos, found)
                if start_line == reported and self._passed(found, start_line, tag):
                    return start_line, start_line
        tries = 0
        match = skipper.match(low, pos)
        found = match.end() if match is not None else size
        unbounded = not capped or self._to_the_end
        while found < size and (unbounded or tries < 64):
            tries += 1
            line += low.count(b"\n", pos, found)
            pos = found
            if not capped and reported is not None and line > reported:
                break
            match = _TAG_REST_RE.match(low, found + name_length)
            close = match.end() if match is not None else size
            end_line = line + low.count(b"\n", found, close)
            if capped:
                hit = end_line >= (reported or 1) and self._has_value(found, close, value)
            else:
                hit = end_line == reported
            after, after_line = close + 1, end_line
            if raw_end is not None:  # what follows is text up to the end tag
                match = raw_end.search(low, after)
                after = match.start() if match is not None else size
                after_line += low.count(b"\n", close, after)
            if hit:
                self._pos, self._line = after, after_line
                return line, end_line
            if not capped and end_line < (reported or 0):
                # It ends before the tag sought: so does all up to it.
                self._pos, self._line = after, after_line
            match = skipper.match(low, after)
            found = match.end() if match is not None else size
        if reported is None or capped:
            self._to_the_end = False
            fallback = max(self._line, reported or 1)
            return fallback, fallback
        return reported, reported

    def _catch_up(self, tag: str, reported: int) -> None:
        """Read on past the first '<tag' that starts and ends on the reported line, as a
        call for it would have: the tags taken at their lines were not read."""
        low = self._low
        pos, line = self._pos, self._line
        for match in _scanner(tag)[3].finditer(low, pos):
            found = match.start()
            line += low.count(b"\n", pos, found)
            pos = found
            if line < reported:
                continue
            if line == reported:
                self._passed(found, line, tag)
            return

    def _passed(self, found: int, line: int, tag: str) -> bool:
        """Whether the start tag at ``found`` (on ``line``) ends on its line: then the
        reading goes on past it, and past the text of a raw text element."""
        low = self._low
        _, name_length, raw_end, _ = _scanner(tag)
        rest = _TAG_REST_RE.match(low, found + name_length)
        close = rest.end() if rest is not None else len(low)
        if low.count(b"\n", found, close):
            return False
        after, after_line = close + 1, line
        if raw_end is not None:
            end = raw_end.search(low, after)
            after = end.start() if end is not None else len(low)
            after_line += low.count(b"\n", close, after)
        self._pos, self._line = after, after_line
        return True

    def _has_value(self, start: int, close: int, value: str | None) -> bool:
        """Whether the start tag from start to its closing '>' holds the value."""
        if not value:
            return True
        window = self._data[start : close + 1]
        if value.encode("utf-8", "replace") in window:
            return True
        return b"&" in window and value in html.unescape(window.decode("utf-8", "replace"))


_local = threading.local()

# libxml2's HTML parser as extraction uses it. Whitespace-only text between tags is left
# out of the tree: nothing is read from it, and a page parses about a quarter faster. Nor
# are ids kept in libxml2's table of them, which nothing here looks up: the parse of a
# manual takes a sixth to a quarter less time.
PARSER_OPTIONS: Mapping[str, bool | str] = MappingProxyType(
    {
        "encoding": "utf-8",
        "collect_ids": False,
        "recover": True,
        "huge_tree": True,
        "remove_comments": True,
        "remove_pis": True,
        "remove_blank_text": True,
        "no_network": True,
    }
)


def _parser() -> etree.HTMLParser:
    """One parser per thread: lxml parsers must not be shared between threads."""
    parser: etree.HTMLParser | None = getattr(_local, "parser", None)
    if parser is None:
        parser = etree.HTMLParser(**PARSER_OPTIONS)
        _local.parser = parser
    return parser


def _empty(encoding: str) -> Page:
    return Page(links=[], base_href=None, encoding=encoding, anchors=frozenset(), title=None)


def _decode(body: bytes, encoding: str) -> str:
    """Decoded text with NULs replaced and newlines normalized, as the HTML tokenizer does."""
    bom = _bom(body)
    skip = bom[1] if bom is not None and bom[0] == encoding else 0
    text = body[skip:].decode(encoding, "replace")
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _too_deep(parser: etree.HTMLParser | etree.iterparse) -> bool:
    """libxml2 stops reading, even with huge_tree, at elements nested 2048 deep (said by
    a parser, or by an iterparse, once read)."""
    error = parser.error_log.last_error
    return error is not None and error.type == etree.ErrorTypes.ERR_RESOURCE_LIMIT


_VOID = frozenset(
    b"area base basefont bgsound br col embed frame hr img input keygen link meta param "
    b"source track wbr".split()
)
_TOKEN_RE = re.compile(
    rb"<!--(?:-?>|.*?(?:--!?>|\Z))|<[a-z][^ \t\n\r\f/>]*+" + _TAG_REST + rb">?"
    rb"|</[a-z][^ \t\n\r\f/>]*+" + _TAG_REST + rb">?|<[!?/][^>]*+>?",
    re.DOTALL,
)
_TAG_NAME_RE = re.compile(rb"[^ \t\n\r\f/>]*+")
# elements that end by themselves, hold the document, or must keep their contents inert
_NOT_ENDED = _VOID | {b"html", b"head", b"body", b"template"}


def _tags(low: bytes) -> Iterator[tuple[int, int, bytes]]:
    """(start, end, name) of each comment (named ``!--``) and each start tag closed by its
    '>' in the lower-cased source, as the HTML tokenizer finds them: the text of scripts,
    styles and the like is passed over, and nothing after ``<plaintext>`` is read."""
    size = len(low)
    pos = 0
    while (match := _TOKEN_RE.search(low, pos)) is not None:
        start, pos = match.span()
        if low.startswith(b"<!--", start):
            yield start, pos, b"!--"
            continue
        if low[start + 1 : start + 2] in b"/!?" or low[pos - 1 : pos] != b">":
            continue
        name_match = _TAG_NAME_RE.match(low, start + 1)
        name = name_match.group() if name_match is not None else b""
        yield start, pos, name
        raw_end = _RAW_TEXT_END_RE.get(name.decode("utf-8", "replace"))
        if raw_end is not None:
            end_match = raw_end.search(low, pos)
            pos = end_match.start() if end_match is not None else size
        elif name == b"plaintext":
            return


def _flattened(data: bytes) -> bytes:
    """The document with each element ended where it starts, so that nothing nests.

    For a page nested deeper than the parser goes: its links, anchors and lines are all
    still there (only end tags are added, no newlines); the tree is not. Template
    contents stay inside their template, and raw text (scripts, styles) stays text.
    """
    pieces: list[bytes] = []
    copied = 0
    for _, end, name in _tags(data.lower()):
        if name in _NOT_ENDED or name == b"!--" or name == b"plaintext":
            continue
        if name.decode("utf-8", "replace") in _RAW_TEXT_END_RE:
            continue
        pieces += (data[copied:end], b"</", name, b">")
        copied = end
    pieces.append(data[copied:])
    return b"".join(pieces)


class Switch(enum.StrEnum):
    """What a marker comment does to the links after it."""

    DISABLE = "disable"
    ENABLE = "enable"
    DISABLE_NEXT_LINE = "disable-next-line"


class Marker(NamedTuple):
    """A marker comment, with the lines it starts and ends on."""

    switch: Switch
    line: int
    end_line: int


_MARKER_WORD = b"linkpatrol-"
_TO_THE_END = 1 << 40  # a line past the end of any document
_MARKER_RE = re.compile(
    rb"<!--[ \t\n\r\f]*+linkpatrol-(disable-next-line|disable|enable)(?![a-z0-9_-])"
)
_IGNORE_ATTR = "data-linkpatrol-ignore"
_IGNORED = etree.XPath("//*[@" + _IGNORE_ATTR + "]")
_ANCHORS_WITHIN = etree.XPath("descendant-or-self::*/@id | descendant-or-self::a/@name")


def find_markers(source: bytes, first_line: int = 1) -> list[Marker]:
    """The marker comments of an HTML document (or a piece of one starting on first_line),
    in order; one in a script, a style or other raw text is no comment, and none counts."""
    return _markers_in(source.lower(), first_line)


def _markers_in(low: bytes, first_line: int) -> list[Marker]:
    if _MARKER_WORD not in low:
        return []
    markers: list[Marker] = []
    line, counted = first_line, 0
    for start, end, name in _tags(low):
        if name != b"!--":
            continue
        match = _MARKER_RE.match(low, start)
        if match is None:
            continue
        line += low.count(b"\n", counted, start)
        counted = start
        end_line = line + low.count(b"\n", start, end)
        markers.append(Marker(Switch(match.group(1).decode("ascii")), line, end_line))
    return markers


def _quiet_lines(markers: list[Marker]) -> tuple[list[int], list[int]]:
    """(firsts, lasts) of the line ranges the markers turn checking off, in order and apart.

    A ``disable`` runs from its own line to the line of the next ``enable``, else to the
    end; a ``disable-next-line``, the line after it.
    """
    ranges: list[tuple[int, int]] = []
    disabled_at: int | None = None
    for marker in markers:
        if marker.switch is Switch.DISABLE:
            if disabled_at is None:
                disabled_at = marker.line
        elif marker.switch is Switch.ENABLE:
            if disabled_at is not None:
                ranges.append((disabled_at, marker.end_line))
                disabled_at = None
        else:
            ranges.append((marker.end_line + 1, marker.end_line + 1))
    if disabled_at is not None:
        ranges.append((disabled_at, _TO_THE_END))
    ranges.sort()
    firsts: list[int] = []
    lasts: list[int] = []
    for first, last in ranges:
        if lasts and first <= lasts[-1] + 1:
            lasts[-1] = max(lasts[-1], last)
        else:
            firsts.append(first)
            lasts.append(last)
    return firsts, lasts


def without_marked(links: list[Link], markers: list[Marker]) -> list[Link]:
    """The links on no line the markers turn checking off."""
    if not markers:
        return links
    firsts, lasts = _quiet_lines(markers)
    kept: list[Link] = []
    for link in links:
        at = bisect.bisect_right(firsts, link.line) - 1
        if at < 0 or link.line > lasts[at]:
            kept.append(link)
    return kept


def gather_trailing(root: etree._Element) -> None:
    """Put what follows ``</html>`` at the end of the root element, where a browser has it.

    libxml2 leaves such content beside the root, in an ``<html>`` element of its own, so a
    walk of the root's tree would miss its links, ids, base and title."""
    for element in [e for e in root.itersiblings() if isinstance(e.tag, str)]:
        root.append(element)


def _drop_ignored(root: etree._Element, anchors: set[str]) -> None:
    """Elements marked to be ignored go, with all within them: none of their links is
    checked, but their ids (and ``<a name>``) are still there for fragments to find."""
    for element in _IGNORED(root):
        anchors.update(str(value) for value in _ANCHORS_WITHIN(element) if value)
        parent = element.getparent()
        if parent is not None:
            parent.remove(element)


def _drop_templates(root: etree._Element, anchors: set[str]) -> None:
    """Template contents are inert, so neither their links nor their ids exist for a browser."""
    for template in list(root.iter("template")):
        ident = template.get("id")
        if ident:
            anchors.add(ident)
        parent = template.getparent()
        if parent is not None:
            parent.remove(template)


def _attribute_links(attrs: _Attributes, names: tuple[str, ...]) -> list[tuple[str, str]]:
    """(attribute, url) pairs in a fixed attribute order, srcset split into candidates."""
    found: list[tuple[str, str]] = []
    for name in names:
        value = attrs.get(name)
        if value is None:
            continue
        if name == "srcset" or name == "imagesrcset":
            for url in _srcset_urls(value):
                found.append((name, url))
            continue
        value = value.strip(HTML_SPACE)
        if value:
            found.append((name, value))
    return found


def _link_rels(attrs: _Attributes) -> tuple[bool, int]:
    """(whether a <link> only asks to get a connection ready, the kind of its links).

    One that gets a connection ready names a server, which need not answer anything at its
    root (https://fonts.gstatic.com answers 404); one of a stylesheet, an icon or a preload
    is loaded into the page."""
    rels = frozenset((attrs.get("rel") or "").lower().split())
    return bool(rels) and rels <= _SERVER_HINTS, (
        _SUBRESOURCE if rels & _LOADING_RELS else _NAVIGATION
    )


def _special_links(attrs: _Attributes, tag: str) -> list[tuple[str, str]]:
    """Links of elements whose attributes count only in some cases."""
    if tag == "input":
        kind = (attrs.get("type") or "").strip(HTML_SPACE).lower()
        return _attribute_links(attrs, ("src",)) if kind == "image" else []
    if tag == "meta":
        equiv = (attrs.get("http-equiv") or "").strip(HTML_SPACE).lower()
        content = attrs.get("content")
        if equiv == "refresh" and content is not None:
            target = _refresh_url(content)
            if target is not None:
                return [("content", target)]
    return []


# What the walk gives of an element: tag, line as libxml2 reports it, attributes, and
# the element itself where more of it is read (see _KEPT)
_Attributes = Mapping[str, str]
_Item = tuple[str, "int | None", _Attributes, Any]


def _walk_lxml(root: etree._Element, every: bool) -> tuple[Iterable[_Item], list[str]]:
    """The elements that may hold links (or every element), and every element's id, read
    through lxml's elements."""
    elements = root.iter() if every else root.iter(*_LINK_ELEMENTS)
    items = (
        (tag, element.sourceline, element.attrib, element)
        for element in elements
        if isinstance(tag := element.tag, str)
    )
    return items, _IDS(root)


def _walk(root: etree._Element, every: bool) -> tuple[Iterable[_Item], list[str]]:
    """The walk over the tree: in C where the build has it, which reads the same without
    making an lxml element of each."""
    if _native_walk is None:
        return _walk_lxml(root, every)
    return _native_walk(root, None if every else _LINK_TAGS, _READ, _KEPT)


_NativeWalk = Callable[
    [etree._Element, "frozenset[str] | None", tuple[str, ...], frozenset[str]],
    tuple[Iterable[_Item], list[str]],
]


def _native() -> _NativeWalk | None:
    try:
        from linkpatrol._walk import walk
    except ImportError:  # a plain Python build
        return None
    return walk


_native_walk = _native()


class _Collector:
    """Accumulates one document's links, anchors, base and title in document order."""

    __slots__ = ("anchors", "base_href", "links", "locator", "seen_base", "title")

    def __init__(self, locator: _Locator) -> None:
        self.links: list[Link] = []
        self.anchors: set[str] = set()
        self.base_href: str | None = None
        self.seen_base = False
        self.title: str | None = None
        self.locator = locator

    def head_element(self, element: Any, attrs: _Attributes, tag: str) -> None:
        if tag == "title":
            if self.title is None:
                self.title = "".join(element.itertext()).strip()
        elif tag == "base" and not self.seen_base:
            href = attrs.get("href")
            if href is not None:
                self.seen_base = True
                self.base_href = href.strip(HTML_SPACE) or None

    def add(
        self,
        item: _Item,
        found: list[tuple[str, str]],
        style: str | None,
        kind: int = _NAVIGATION,
    ) -> None:
        links = self.links
        tag, line, _, element = item
        if style is None and tag != "style":  # most elements: attributes only
            if found:
                start = self.locator.locate(tag, line, found[0][1])[0]
                for attr, url in found:
                    links.append(_link((url, start, tag, attr, kind)))
            return
        style_urls = css_urls(style) if style else []
        css = element.text if tag == "style" else None
        block_urls = css_urls(css) if css else []
        if not found and not style_urls and not block_urls:
            return
        first_value = found[0][1] if found else style
        start, end = self.locator.locate(tag, line, first_value)
        for attr, url in found:
            links.append(_link((url, start, tag, attr, kind)))
        for url, _ in style_urls:
            links.append(_link((url, start, tag, "style", _SUBRESOURCE)))
        for url, offset in block_urls:
            links.append(_link((url, end + offset - 1, "style", "css", _SUBRESOURCE)))

    def page(self, encoding: str) -> Page:
        return Page(
            links=self.links,
            base_href=self.base_href,
            encoding=encoding,
            anchors=frozenset(self.anchors),
            title=self.title,
        )


def _extract(body: bytes, encoding: str) -> Page:
    if encoding == "utf-8" and body.isascii() and b"\x00" not in body and b"\r" not in body:
        data = body  # most pages: decoded and encoded again, they would come out the same
    else:
        data = _decode(body, encoding).encode("utf-8", "replace")
    if not data.strip():
        return _empty(encoding)
    low = data.lower()
    if len(data) >= STREAM_FROM:
        streamed = _extract_streamed(data, low, encoding)
        if streamed is not None:
            return streamed
    parser = _parser()
    root = etree.fromstring(data, parser)
    if _too_deep(parser):
        data = _flattened(data)
        low = data.lower()
        root = etree.fromstring(data, parser)
    if root is None:
        return _empty(encoding)
    gather_trailing(root)
    collector = _Collector(_Locator(data, low))
    anchors = collector.anchors
    if b"<template" in low:
        _drop_templates(root, anchors)
    if b"data-linkpatrol-ignore" in low:
        _drop_ignored(root, anchors)

    # Most pages have no style attribute that can hold a link: then only the elements that
    # may hold links are gone through.
    every = _style_may_link(low)
    items, ids = _walk(root, every)
    anchors.update(ident for ident in ids if ident)
    _collect(items, every, b"xlink:href" in low, collector)
    return _finished(collector, encoding, low)


def _collect(items: Iterable[_Item], every: bool, xlinks: bool, collector: _Collector) -> None:
    """The links, anchors, base and title of the elements walked, in document order."""
    anchors = collector.anchors
    for item in items:
        tag, _, attrs, element = item
        style = attrs.get("style") if every else None
        names = _LINK_ATTRS.get(tag)
        if names is not None:
            kind = _SUBRESOURCE if tag in _LOADED_TAGS else _NAVIGATION
            if tag == "a":
                name = attrs.get("name")
                if name:
                    anchors.add(name)
            elif tag == "link":
                server, kind = _link_rels(attrs)
                if server:
                    names = ()
            found = _attribute_links(attrs, names)
            if not found and xlinks and tag in _XLINK_TAGS and attrs.get("href") is None:
                found = _attribute_links(attrs, ("xlink:href",))
            collector.add(item, found, style, kind)
        elif tag in _OTHER_TAGS:
            if tag == "title" or tag == "base":
                collector.head_element(element, attrs, tag)
            else:
                kind = _SUBRESOURCE if tag in _LOADED_TAGS else _NAVIGATION
                collector.add(item, _special_links(attrs, tag), style, kind)
        elif style is not None:
            collector.add(item, [], style)


def _finished(collector: _Collector, encoding: str, low: bytes) -> Page:
    """The page collected, less the links on lines its markers turn checking off."""
    page = collector.page(encoding)
    markers = _markers_in(low, 1)
    if markers:
        page.links[:] = without_marked(page.links, markers)
    return page


# A page this big or bigger is read as it is parsed, each element freed once it ends,
# rather than whole as a tree: libxml2's tree of a page takes about twelve times its size
# (44 MB for the biggest page of libstdc++'s manual, 3.7 MB), more than all else a parse
# worker holds. The walk reads the same elements, in the same order, as of the tree. From
# 512 KiB rather than 1 MiB: libstdc++'s 13 pages between the two take 0.16 s more CPU
# read so (0.49 s against 0.33), and its crawl's process tree peaks about 8 MB lower.
STREAM_FROM = 1 << 19


def _extract_streamed(data: bytes, low: bytes, encoding: str) -> Page | None:
    """What :func:`_extract` finds in a big page, read as it is parsed; None where libxml2
    gave up on elements nested too deep (the whole tree, flattened, is read then)."""
    events = etree.iterparse(io.BytesIO(data), events=("start", "end"), html=True, **PARSER_OPTIONS)
    collector = _Collector(_Locator(data, low))
    every = _style_may_link(low)
    items = _streamed(events, every, collector.anchors)
    try:
        _collect(items, every, b"xlink:href" in low, collector)
    except etree.XMLSyntaxError:
        return None
    return None if _too_deep(events) else _finished(collector, encoding, low)


def _streamed(events: Iterable[tuple[str, Any]], every: bool, anchors: set[str]) -> Iterator[_Item]:
    """The items of :func:`_walk` as elements start, their ids into ``anchors``, each
    element freed once it ended and was read.

    As on the tree: template contents are not there (a template's own id is); an element
    marked to be ignored gives no item, nor does anything within it, but its ids (and
    ``<a name>``) are anchors still. A title or style element is given at its end, with
    its text, and what started within it after it."""
    inert = 0  # elements open within a template, itself included
    quiet = 0  # elements open within one marked to be ignored, itself included
    kept: list[tuple[Any, list[_Item]]] = []  # title and style elements open, and their items
    for event, element in events:
        tag = element.tag
        if not isinstance(tag, str):
            continue
        if event == "start":
            if tag == "template":
                ident = element.get("id")
                if ident:
                    anchors.add(ident)
                inert += 1
                continue
            if inert:
                inert += 1
                continue
            attrs = element.attrib
            ident = attrs.get("id")
            if quiet or _IGNORE_ATTR in attrs:
                quiet += 1
                if ident:
                    anchors.add(ident)
                if tag == "a" and (name := attrs.get("name")):
                    anchors.add(name)
                continue
            if ident:
                anchors.add(ident)
            if not every and tag not in _LINK_TAGS:
                continue
            item = (tag, element.sourceline, attrs, element)
            if tag in _KEPT:
                kept.append((element, [item]))
            elif kept:
                kept[-1][1].append(item)
            else:
                yield item
            continue
        if inert or quiet:
            if inert:
                inert -= 1
            else:
                quiet -= 1
            if kept:  # gone from the tree as from a title's text, but not what is before it
                element.clear()
                continue
        elif kept and kept[-1][0] is element:
            _, items = kept.pop()
            if kept:
                kept[-1][1].extend(items)
            else:
                yield from items
        if not kept:  # nothing open is still to be read
            _forget(element)


def _forget(element: Any) -> None:
    """Free an element that ended, and the elements before it."""
    element.clear()
    parent = element.getparent()
    if parent is not None:
        while element.getprevious() is not None:
            del parent[0]


def extract_stylesheet(body: bytes, header_charset: str | None = None) -> Page:
    """Links of a stylesheet, each on its line. No bytes make it raise; a fault in the
    reading itself does, rather than give a stylesheet that seems to hold no link.

    They resolve against the stylesheet's own URL; a stylesheet has no anchors.
    """
    text, label = decode_stylesheet(body, header_charset)
    links = [
        _link((url, line, STYLESHEET_TAG, kind, _SUBRESOURCE))
        for line, _, url, kind in css_links(text)
    ]
    encoding = _codec_name(label, False) or "utf-8"
    return Page(links=links, base_href=None, encoding=encoding, anchors=frozenset(), title=None)


def extract_html(body: bytes, header_charset: str | None = None) -> Page:
    """Links, anchors, base and title of an HTML document. No bytes make it raise: what
    libxml2 cannot read at all is a document with nothing in it. A fault in the reading
    itself raises, rather than give a page that seems to hold no link.

    Elements with ``data-linkpatrol-ignore`` and what is within them yield no links (their
    ids are still anchors), nor do the lines that marker comments leave out.
    """
    try:
        encoding = sniff_encoding(body, header_charset)
    except Exception:
        encoding = "utf-8"
    try:
        return _extract(body, encoding)
    except etree.LxmlError:
        return _empty(encoding)
