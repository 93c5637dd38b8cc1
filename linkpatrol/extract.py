"""Links with their source line numbers from HTML pages and CSS text.

Parsing uses lxml's forgiving HTML parser, fed UTF-8 re-encoded from the
decoded text so that the charset decision is ours and line numbers count
the same newlines the caller sees.
"""

from __future__ import annotations

import codecs
import functools
import html
import re
import threading
from dataclasses import dataclass

from lxml import etree

__all__ = ["Link", "Page", "css_urls", "extract_html", "sniff_encoding"]


@dataclass(frozen=True, slots=True)
class Link:
    """One link as written in the page, with where it was written."""

    url: str
    line: int
    tag: str
    attr: str


@dataclass(frozen=True, slots=True)
class Page:
    """What the checker needs from one HTML document."""

    links: list[Link]
    base_href: str | None
    encoding: str
    anchors: frozenset[str]
    title: str | None


_LINE_CAP = 65535
_HTML_SPACE = " \t\n\r\f"
_TAG_NAME_END = frozenset(b" \t\n\r\f/>")

_LINK_ATTRS: dict[str, tuple[str, ...]] = {
    "a": ("href",),
    "area": ("href",),
    "link": ("href",),
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
}
_OTHER_TAGS = frozenset({"input", "meta", "style", "base", "title"})

_BOMS = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xfe\xff", "utf-16-be"),
    (b"\xff\xfe", "utf-16-le"),
)
# WHATWG Encoding: these labels all mean windows-1252 on the web.
_WHATWG_RENAMES = {"iso8859-1": "cp1252", "ascii": "cp1252", "utf-8-sig": "utf-8"}
_UNUSABLE_CODECS = frozenset(
    {"idna", "punycode", "unicode-escape", "raw-unicode-escape", "undefined", "utf-7"}
)
_META_CHARSET_RE = re.compile(
    rb"""<meta\b[^>]*?charset[ \t\n\r\f]*=[ \t\n\r\f]*["']?[ \t\n\r\f]*([A-Za-z0-9_.:\-]+)""",
    re.IGNORECASE,
)
_HTML_COMMENT_RE = re.compile(rb"<!--.*?(?:-->|\Z)", re.DOTALL)

_CSS_COMMENT_RE = re.compile(r"/\*.*?(?:\*/|\Z)", re.DOTALL)
_CSS_URL_RE = re.compile(
    r"""(?<![\w-])url\([ \t\n\r\f]*(?:"([^"\n]*)"|'([^'\n]*)'|([^ \t\n\r\f"'()]*))[ \t\n\r\f]*\)"""
    r"""|@import[ \t\n\r\f]*(?:"([^"\n]*)"|'([^'\n]*)')""",
    re.IGNORECASE,
)
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
    label = label.strip(_HTML_SPACE + "\"'")
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
    if b"<!--" in head:
        head = _HTML_COMMENT_RE.sub(b"", head)
    for match in _META_CHARSET_RE.finditer(head):
        name = _codec_name(match.group(1).decode("ascii"), True)
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


def css_urls(text: str, first_line: int = 1) -> list[tuple[str, int]]:
    """URLs of url(...) and @import "..." in CSS, each with its line; text starts on first_line."""
    if "/*" in text:
        text = _CSS_COMMENT_RE.sub(lambda m: " " + "\n" * m.group().count("\n"), text)
    found: list[tuple[str, int]] = []
    line = first_line
    counted = 0
    for match in _CSS_URL_RE.finditer(text):
        url = next((group for group in match.groups() if group is not None), "").strip(_HTML_SPACE)
        if not url:
            continue
        line += text.count("\n", counted, match.start())
        counted = match.start()
        found.append((url, line))
    return found


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
    return url.strip(_HTML_SPACE) or None


class _Locator:
    """Finds the true start line of a tag in the source.

    libxml2 reports the line where a start tag ends and caps it at 65535, so
    the source is scanned forward, in document order, for the tag itself.
    """

    __slots__ = ("_data", "_line", "_low", "_pos")

    def __init__(self, data: bytes, low: bytes) -> None:
        self._data = data
        self._low = low
        self._pos = 0
        self._line = 1

    def locate(self, tag: str, reported: int | None, value: str | None) -> tuple[int, int]:
        """(line of '<tag', line of the '>' that ends the start tag)."""
        capped = reported is None or reported >= _LINE_CAP
        low = self._low
        size = len(low)
        needle = b"<" + tag.encode("ascii", "replace")
        pos, line = self._pos, self._line
        tries = 0
        found = low.find(needle, pos)
        while found >= 0 and tries < 64:
            after = found + len(needle)
            if after < size and low[after] not in _TAG_NAME_END:
                found = low.find(needle, after)
                continue
            tries += 1
            line += low.count(b"\n", pos, found)
            pos = found
            if not capped and reported is not None and line > reported:
                break
            close = low.find(b">", after)
            end_line = line + low.count(b"\n", found, close if close >= 0 else size)
            if capped:
                hit = end_line >= (reported or 1) and self._has_value(found, value)
            else:
                hit = end_line == reported
            if hit:
                self._pos, self._line = after, line
                return line, end_line
            found = low.find(needle, after)
        if reported is None or capped:
            fallback = max(self._line, reported or 1)
            return fallback, fallback
        return reported, reported

    def _has_value(self, start: int, value: str | None) -> bool:
        if not value:
            return True
        stop = self._data.find(b"<", start + 1)
        window = self._data[start : stop if stop >= 0 else len(self._data)]
        if value.encode("utf-8", "replace") in window:
            return True
        return b"&" in window and value in html.unescape(window.decode("utf-8", "replace"))


_local = threading.local()


def _parser() -> etree.HTMLParser:
    """One parser per thread: lxml parsers must not be shared between threads."""
    parser: etree.HTMLParser | None = getattr(_local, "parser", None)
    if parser is None:
        parser = etree.HTMLParser(
            encoding="utf-8",
            recover=True,
            huge_tree=True,
            remove_comments=True,
            remove_pis=True,
            no_network=True,
        )
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


def _drop_templates(root: etree._Element, anchors: set[str]) -> None:
    """Template contents are inert, so neither their links nor their ids exist for a browser."""
    for template in list(root.iter("template")):
        ident = template.get("id")
        if ident:
            anchors.add(ident)
        parent = template.getparent()
        if parent is not None:
            parent.remove(template)


def _attribute_links(element: etree._Element, names: tuple[str, ...]) -> list[tuple[str, str]]:
    """(attribute, url) pairs in a fixed attribute order, srcset split into candidates."""
    found: list[tuple[str, str]] = []
    for name in names:
        value = element.get(name)
        if value is None:
            continue
        if name == "srcset":
            for url in _srcset_urls(value):
                found.append((name, url))
            continue
        value = value.strip(_HTML_SPACE)
        if value:
            found.append((name, value))
    return found


def _special_links(element: etree._Element, tag: str) -> list[tuple[str, str]]:
    """Links of elements whose attributes count only in some cases."""
    if tag == "input":
        kind = (element.get("type") or "").strip(_HTML_SPACE).lower()
        return _attribute_links(element, ("src",)) if kind == "image" else []
    if tag == "meta":
        equiv = (element.get("http-equiv") or "").strip(_HTML_SPACE).lower()
        content = element.get("content")
        if equiv == "refresh" and content is not None:
            target = _refresh_url(content)
            if target is not None:
                return [("content", target)]
    return []


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

    def head_element(self, element: etree._Element, tag: str) -> None:
        if tag == "title":
            if self.title is None:
                self.title = "".join(element.itertext()).strip()
        elif tag == "base" and not self.seen_base:
            href = element.get("href")
            if href is not None:
                self.seen_base = True
                self.base_href = href.strip(_HTML_SPACE) or None

    def add(
        self,
        element: etree._Element,
        tag: str,
        found: list[tuple[str, str]],
        style: str | None,
    ) -> None:
        style_urls = css_urls(style) if style else []
        css = element.text if tag == "style" else None
        block_urls = css_urls(css) if css else []
        if not found and not style_urls and not block_urls:
            return
        first_value = found[0][1] if found else style
        start, end = self.locator.locate(tag, element.sourceline, first_value)
        links = self.links
        for attr, url in found:
            links.append(Link(url, start, tag, attr))
        for url, _ in style_urls:
            links.append(Link(url, start, tag, "style"))
        for url, offset in block_urls:
            links.append(Link(url, end + offset - 1, "style", "css"))

    def page(self, encoding: str) -> Page:
        return Page(
            links=self.links,
            base_href=self.base_href,
            encoding=encoding,
            anchors=frozenset(self.anchors),
            title=self.title,
        )


def _extract(body: bytes, encoding: str) -> Page:
    text = _decode(body, encoding)
    data = text.encode("utf-8", "replace")
    if not data.strip():
        return _empty(encoding)
    root = etree.fromstring(data, _parser())
    if root is None:
        return _empty(encoding)
    low = data.lower()
    collector = _Collector(_Locator(data, low))
    anchors = collector.anchors
    if b"<template" in low:
        _drop_templates(root, anchors)

    for element in root.iter():
        tag = element.tag
        if not isinstance(tag, str):
            continue
        ident = element.get("id")
        if ident:
            anchors.add(ident)
        style = element.get("style")
        names = _LINK_ATTRS.get(tag)
        if names is not None:
            if tag == "a":
                name = element.get("name")
                if name:
                    anchors.add(name)
            collector.add(element, tag, _attribute_links(element, names), style)
        elif tag in _OTHER_TAGS:
            if tag == "title" or tag == "base":
                collector.head_element(element, tag)
            else:
                collector.add(element, tag, _special_links(element, tag), style)
        elif style is not None:
            collector.add(element, tag, [], style)
    return collector.page(encoding)


def extract_html(body: bytes, header_charset: str | None = None) -> Page:
    """Links, anchors, base and title of an HTML document; never raises, whatever the bytes."""
    try:
        encoding = sniff_encoding(body, header_charset)
    except Exception:
        encoding = "utf-8"
    try:
        return _extract(body, encoding)
    except Exception:
        return _empty(encoding)
