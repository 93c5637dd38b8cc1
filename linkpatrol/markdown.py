"""Links with their source line numbers from Markdown documents.

The Markdown is CommonMark with the extensions GitHub renders: tables, strikethrough,
autolink literals (``www.``, ``http(s)://``, ``mailto:``, ``xmpp:`` and bare e-mail
addresses), footnotes, raw HTML and math (``$…$``, ``$$…$$``, whose TeX holds no
links); a YAML front matter block is skipped. markdown-it-py
parses it, with each inline rule that makes links wrapped so that the tokens it makes
remember where in their block's text they start: that gives each link the line it is
really on, however the paragraph around it is wrapped and whatever spans several lines
before it (a code span, a tag, a link's text).
"""

from __future__ import annotations

import bisect
import functools
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import normalizeReference, replaceEntityPattern
from markdown_it.helpers import parseLinkLabel
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.dollarmath.index import math_inline_dollar
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.front_matter import front_matter_plugin
from mdit_py_plugins.gfm_autolink import gfm_autolink_plugin

from linkpatrol.extract import (
    HTML_SPACE,
    Link,
    Marker,
    Page,
    _decode,
    extract_html,
    find_markers,
    sniff_encoding,
    without_marked,
)
from linkpatrol.model import LinkKind

__all__ = ["extract_markdown", "heading_slug"]

_LINK = LinkKind.NAVIGATION.value
_IMAGE = LinkKind.SUBRESOURCE.value

# Containers (blockquotes, list items) nested deeper than this are not parsed: their
# lines are skipped, so 100,000 '>' cost no more than 20. (markdown-it's own limit
# would skip everything after a too-deep list, to the end of the document.) Within a
# paragraph, the limit on brackets inside brackets sets what each '[' costs; link text
# holds an image or a bracket pair, seldom more.
_BLOCK_NESTING = 20
_INLINE_NESTING = 8
_NOT_LIMITED = 1 << 30
# The GFM autolink rules copy the rest of the paragraph at each ':', '@' or 'www.', and
# markdown-it's own time grows faster than a paragraph's length on some input, so a
# longer paragraph is parsed in pieces of at most this many characters, cut at line
# ends where it can be, else at white space.
_PIECE = 20_000
# What the GFM autolink rules look back for in the pending text, and how much of it.
_SCHEMES = ("http", "https", "mailto", "xmpp")
_SCHEME_ROOM = 16

_InlineRule = Callable[[StateInline, bool], bool]
_BlockRule = Callable[[StateBlock, int, int, bool], bool]


class _Markdown(MarkdownIt):
    """Destinations kept as written: not percent-encoded, and no scheme refused."""

    def normalizeLink(self, url: str) -> str:
        return url

    def normalizeLinkText(self, link: str) -> str:
        return link

    def validateLink(self, url: str) -> bool:
        return True


def _escaped(src: str, pos: int) -> bool:
    backslashes = 0
    while pos - backslashes > 0 and src[pos - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _reference_label(src: str, bracket: int, end: int) -> str:
    """The label of ``[text][label]``, ``[label][]`` or ``[label]`` from bracket to end.

    A label holds no unescaped bracket, so the last unescaped ``[`` opens it.
    """
    if end - 2 > bracket and src.startswith("[]", end - 2):
        return src[bracket + 1 : end - 3]
    opening = src.rfind("[", bracket, end - 1)
    while opening > bracket and _escaped(src, opening):
        opening = src.rfind("[", bracket, opening)
    return src[max(opening, bracket) + 1 : end - 1]


def _mark_link(state: StateInline, start: int, bracket: int, made: list[Token]) -> None:
    """Point a link's position at its destination, or record the reference it uses."""
    token = next((t for t in made if t.type in ("link_open", "image")), None)
    if token is None:
        return
    src, end = state.src, state.pos
    if src[end - 1] == ")":  # [text](destination "title")
        label_end = parseLinkLabel(state, bracket, bracket == start)
        if label_end >= 0:
            destination = label_end + 2
            while destination < end and src[destination] in " \t\n":
                destination += 1
            token.meta["pos"] = destination
    else:
        token.meta["label"] = normalizeReference(_reference_label(src, bracket, end))


_ENTITY_RE = re.compile(r"&([a-z#][a-z0-9]{1,31});", re.IGNORECASE)


def _decode_entities(made: list[Token]) -> None:
    """Entities in an autolink ``<https://x?a=1&amp;b=2>`` decoded, as GitHub does
    (backslash escapes are not: there they are part of the URL)."""
    for token in made:
        href = token.attrs.get("href") if token.type == "link_open" else None
        if isinstance(href, str) and "&" in href:
            token.attrs["href"] = _ENTITY_RE.sub(
                lambda match: replaceEntityPattern(match.group(), match.group(1)), href
            )


def _placed(rule: _InlineRule, name: str) -> _InlineRule:
    """The rule, with each token it makes remembering the position the rule started at.

    Text that was pending when the rule pushed its first token ends there, so it is on
    that line too; tokens of nested content (a link's text) got their own positions first.
    """
    bracket_offset = {"link": 0, "image": 1}.get(name)

    def placed(state: StateInline, silent: bool) -> bool:
        start = state.pos
        count = len(state.tokens)
        if not rule(state, silent):
            return False
        if not silent:
            made = state.tokens[count:]
            for token in made:
                token.meta.setdefault("pos", start)
            if bracket_offset is not None:
                _mark_link(state, start, start + bracket_offset, made)
            elif name == "autolink":
                _decode_entities(made)
        return True

    return placed


def _scheme_before(rule: _InlineRule) -> _InlineRule:
    """The GFM rule for ``scheme:`` links, tried only where a scheme ends the pending text.

    It searches all the pending text with a regular expression at every ':'; it is given
    only the end of it, the rest being pushed as text first (text tokens are joined later).
    """

    def guarded(state: StateInline, silent: bool) -> bool:
        pending = state.pending
        if silent or not pending.endswith(_SCHEMES):  # it makes no link when silent
            return False
        if len(pending) > _SCHEME_ROOM:
            state.pending = pending[:-_SCHEME_ROOM]
            state.pushPending()
            state.pending = pending[-_SCHEME_ROOM:]
        return rule(state, silent)

    return guarded


def _local_part_before(rule: _InlineRule) -> _InlineRule:
    """The GFM rule for bare e-mail addresses, tried only after a character of a local part.

    It copies the rest of the paragraph at every '@'.
    """

    def guarded(state: StateInline, silent: bool) -> bool:
        last = state.pending[-1:]
        if not last or not (last.isascii() and (last.isalnum() or last in ".+-_")):
            return False
        return rule(state, silent)

    return guarded


# The inline rules that make the tokens links are read from.
_LINK_RULES = frozenset(
    {
        "link",
        "image",
        "autolink",
        "html_inline",
        "gfm_autolink_www",
        "gfm_autolink_protocol",
        "gfm_autolink_email",
    }
)
_GUARDS: dict[str, Callable[[_InlineRule], _InlineRule]] = {
    "gfm_autolink_protocol": _scheme_before,
    "gfm_autolink_email": _local_part_before,
}


def _pieces(content: str) -> Iterator[tuple[int, str]]:
    """(offset, piece) of content cut as ``_PIECE`` says; the cut character is left out."""
    start, size = 0, len(content)
    while size - start > _PIECE:
        limit = start + _PIECE
        cut = content.rfind("\n", start, limit)
        if cut <= start:
            cut = max(content.rfind(" ", start, limit), content.rfind("\t", start, limit))
        if cut <= start:
            yield start, content[start:limit]
            start = limit
        else:
            yield start, content[start:cut]
            start = cut + 1
    yield start, content[start:]


def _inline_in_pieces(state: StateCore) -> None:
    """markdown-it's core 'inline' rule, with the limits above."""
    md = state.md
    md.options.maxNesting = _INLINE_NESTING
    try:
        _parse_inline(md, state.tokens, state.env)
    finally:
        md.options.maxNesting = _NOT_LIMITED


def _parse_inline(md: MarkdownIt, tokens: list[Token], env: Any) -> None:
    for token in tokens:
        if token.type != "inline":
            continue
        if token.children is None:
            token.children = []
        content = token.content
        if len(content) <= _PIECE:
            md.inline.parse(content, md, env, token.children)
            continue
        for offset, piece in _pieces(content):
            made = md.inline.parse(piece, md, env, [])
            for child in made:
                pos = child.meta.get("pos")
                if isinstance(pos, int):
                    child.meta["pos"] = pos + offset
            token.children.extend(made)


def _too_deep(state: StateBlock, line: int, end_line: int, silent: bool) -> bool:
    """Skips a line nested deeper than ``_BLOCK_NESTING``; its container ends as usual."""
    if state.level < _BLOCK_NESTING:
        return False
    state.line = line + 1
    return True


def _closes_math(state: StateBlock, line: int) -> bool:
    """The line ends a ``$$`` block (what its container puts before it does not matter)."""
    return state.src[state.bMarks[line] : state.eMarks[line]].rstrip().endswith("$$")


def _contained_math(rule: _BlockRule) -> _BlockRule:
    """The rule for ``$$`` display math blocks, within their container, in linear time.

    The rule looks for the closing ``$$`` line as far as the next blank line, past the
    end of a list item too; it is given the lines only as far as the item goes (to a
    line less indented than the item). A ``$$`` that never closes is tried again at each
    block after it (a heading, say) up to that blank line: lines a failed try went
    through are not gone through again. What was tried is kept in the document's env.
    """

    def contained(state: StateBlock, start: int, end: int, silent: bool) -> bool:
        first = state.bMarks[start] + state.tShift[start]
        if not state.src.startswith("$$", first):
            return False
        context = (state.blkIndent, end, state.parentType)
        unclosed = state.env.setdefault("unclosed math", {})
        tried, reached = unclosed.get(context, (0, 0))
        if tried < start < reached:  # within lines that hold no closing '$$'
            return False
        line = start + 1
        while line < end and not _closes_math(state, line):
            if state.isEmpty(line) or state.sCount[line] < state.blkIndent:
                break
            line += 1
        closed = line < end and _closes_math(state, line)
        if rule(state, start, line + 1 if closed else line, silent):
            return True
        if not closed:
            unclosed[context] = (start, line)
        return False

    return contained


def _outside_code(rule: _InlineRule) -> _InlineRule:
    """An inline math rule whose closing ``$`` is not in a code span: math with a
    backtick in it is none, so ``$10 and `$HOME``` is text and code."""

    def outside(state: StateInline, silent: bool) -> bool:
        start = state.pos
        if not rule(state, True):
            return False
        if "`" in state.src[start : state.pos]:
            state.pos = start
            return False
        if not silent:
            state.pos = start
            rule(state, False)
        return True

    return outside


_display_math = math_inline_dollar(allow_space=True, allow_digits=True, allow_double=True)


def _display_math_inline(state: StateInline, silent: bool) -> bool:
    """``$$…$$`` within a paragraph, as GitHub reads it: display math, spaces and line
    breaks inside it included (``$…$`` may not start or end with a space)."""
    return state.src.startswith("$$", state.pos) and _display_math(state, silent)


def _new_parser() -> MarkdownIt:
    md = _Markdown("commonmark", {"maxNesting": _NOT_LIMITED})
    md.enable(["table", "strikethrough"])
    md.use(front_matter_plugin)
    md.use(footnote_plugin, inline=False, move_to_end=False)
    md.use(gfm_autolink_plugin)
    md.use(
        dollarmath_plugin,
        allow_labels=False,
        allow_space=False,
        allow_digits=False,
        allow_blank_lines=False,
    )
    blocks = md.block.ruler
    for block, block_rule in zip(blocks.get_active_rules(), blocks.getRules(""), strict=True):
        if block == "math_block":
            blocks.at(block, _contained_math(block_rule))
    blocks.before(blocks.get_all_rules()[0], "too_deep", _too_deep)
    md.core.ruler.at("inline", _inline_in_pieces)
    ruler = md.inline.ruler
    for name, rule in zip(ruler.get_active_rules(), ruler.getRules(""), strict=True):
        if name in _LINK_RULES:
            guard = _GUARDS.get(name)
            ruler.at(name, _placed(guard(rule) if guard else rule, name))
        elif name == "math_inline":
            ruler.at(name, _outside_code(rule))
    ruler.before("math_inline", "math_inline_double", _outside_code(_display_math_inline))
    return md


_local = threading.local()


def _parser() -> MarkdownIt:
    parser: MarkdownIt | None = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = _new_parser()
    return parser


# Symbols that Unicode counts as letters all the same (Other_Alphabetic): circled,
# squared and negative circled or squared Latin letters.
_ALPHABETIC_SYMBOLS = ((0x24B6, 0x24E9), (0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189))


@functools.lru_cache(maxsize=4096)
def _kept(char: str) -> bool:
    if char == " " or char == "-":
        return True
    category = unicodedata.category(char)
    if category[0] in "LM" or category in ("Nd", "Nl", "Pc"):
        return True
    code = ord(char)
    return any(low <= code <= high for low, high in _ALPHABETIC_SYMBOLS)


def heading_slug(text: str) -> str:
    """The id GitHub gives a heading with this rendered text, before duplicates are numbered.

    As github-slugger: lower case; only letters, marks, decimal and letter numbers,
    connector punctuation (``_``), hyphens and spaces are kept; each space becomes ``-``.
    """
    return "".join(char for char in text.lower() if _kept(char)).replace(" ", "-")


class _Slugger:
    """Numbers repeated slugs in document order: ``a``, ``a-1``, ``a-2``."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def unique(self, slug: str) -> str:
        seen = self._seen
        result = slug
        while result in seen:
            seen[slug] += 1
            result = f"{slug}-{seen[slug]}"
        seen[result] = 0
        return result


# Pandoc-style heading attributes: "## Intro {#start .lead}"
_ATTRIBUTES_RE = re.compile(r"\{([^{}]*)\}[ \t]*$")


def _rendered_text(children: Iterable[Token]) -> str:
    """The text a browser shows for inline content: markup gone, code and link text kept."""
    parts: list[str] = []
    for child in children:
        if child.type in ("text", "code_inline", "text_special"):
            parts.append(child.content)
        elif child.type in ("math_inline", "math_inline_double"):
            parts.append(f"{child.markup}{child.content}{child.markup}")
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
    return "".join(parts)


class _BlockLines:
    """Source lines of an inline block: a position in its text to a 1-based line."""

    __slots__ = ("_breaks", "_content", "first", "last")

    def __init__(self, content: str, line_map: list[int] | None, fallback: int) -> None:
        self._content = content
        self._breaks: list[int] | None = None
        if line_map:
            self.first, self.last = line_map[0] + 1, max(line_map[1], line_map[0] + 1)
        else:
            self.first = self.last = fallback

    def at(self, pos: Any) -> int:
        if not isinstance(pos, int) or pos <= 0:
            return self.first
        if self._breaks is None:
            self._breaks = [m.start() for m in re.finditer("\n", self._content)]
        return min(self.first + bisect.bisect_left(self._breaks, pos), self.last)


class _Collector:
    """Accumulates one document's links, anchors, title and marker comments."""

    __slots__ = (
        "anchors",
        "heading_ids",
        "line",
        "links",
        "markers",
        "slugger",
        "title",
        "used",
        "used_on",
    )

    def __init__(self) -> None:
        self.links: list[Link] = []
        self.anchors: set[str] = set()
        self.heading_ids: set[str] = set()
        self.title: str | None = None
        self.slugger = _Slugger()
        self.used: dict[str, tuple[str, str, str]] = {}
        self.used_on: dict[str, list[int]] = {}  # the lines each reference is used on
        self.markers: list[Marker] = []
        self.line = 1

    def add(self, url: Any, line: int, tag: str, attr: str) -> None:
        if isinstance(url, str):
            url = url.strip(HTML_SPACE)
            if url:
                # an image is loaded into the rendered page, as <img> is
                self.links.append(Link(url, line, tag, attr, _IMAGE if tag == "img" else _LINK))

    def html(self, content: str, first_line: int) -> None:
        """Links and anchors of raw HTML whose first line is first_line."""
        source = content.encode("utf-8", "replace")
        page = extract_html(source, "utf-8")
        self.markers += find_markers(source, first_line)
        for link in page.links:
            self.links.append(link._replace(line=first_line + link.line - 1))
        self.anchors |= page.anchors

    def inline(self, token: Token) -> None:
        lines = _BlockLines(token.content, token.map, self.line)
        self.line = lines.first
        for child in token.children or ():
            kind = child.type
            if kind == "link_open" or kind == "image":
                tag, attr = ("a", "href") if kind == "link_open" else ("img", "src")
                url = child.attrs.get(attr)
                line = lines.at(child.meta.get("pos"))
                self.add(url, line, tag, attr)
                label = child.meta.get("label")
                if isinstance(url, str) and label is not None:
                    self.used.setdefault(label, (url, tag, attr))
                    self.used_on.setdefault(label, []).append(line)
            elif kind == "html_inline" and "=" in child.content:  # else no attribute
                self.html(child.content, lines.at(child.meta.get("pos")))
            elif kind == "html_inline" and child.content.startswith("<!--"):
                source = child.content.encode("utf-8", "replace")
                self.markers += find_markers(source, lines.at(child.meta.get("pos")))

    def heading(self, level: str, token: Token) -> None:
        text = _rendered_text(token.children or ())
        slug = self.slugger.unique(heading_slug(text))
        if slug:
            self.heading_ids.add(slug)
        attributes = _ATTRIBUTES_RE.search(text)
        if attributes is not None:
            for part in attributes.group(1).split():
                if part.startswith("#") and len(part) > 1:
                    self.anchors.add(part[1:])
        if level == "h1" and self.title is None:
            self.title = " ".join(text.split()) or None

    def definitions(self, references: Any) -> None:
        """Each used reference definition once more, on the line that defines it, unless
        marker comments leave out every use of it."""
        if not isinstance(references, dict):
            return
        for label, (url, tag, attr) in self.used.items():
            line_map = (references.get(label) or {}).get("map")
            if not line_map:
                continue
            uses = [Link(url, line, tag, attr) for line in self.used_on[label]]
            if without_marked(uses, self.markers):
                self.add(url, line_map[0] + 1, tag, attr)

    def page(self, encoding: str) -> Page:
        self.links.sort(key=lambda link: link.line)
        return Page(
            links=without_marked(self.links, self.markers),
            base_href=None,
            encoding=encoding,
            anchors=frozenset(self.anchors),
            title=self.title,
            heading_ids=frozenset(self.heading_ids),
        )


def _extract(body: bytes, encoding: str) -> Page:
    text = _decode(body, encoding)
    env: dict[str, Any] = {}
    tokens = _parser().parse(text, env)
    collector = _Collector()
    for index, token in enumerate(tokens):
        kind = token.type
        if kind == "inline":
            collector.inline(token)
        elif kind == "html_block":
            first = token.map[0] + 1 if token.map else collector.line
            collector.html(token.content, first)
        elif kind == "heading_open" and index + 1 < len(tokens):
            collector.heading(token.tag, tokens[index + 1])
    collector.definitions(env.get("references"))
    return collector.page(encoding)


def extract_markdown(body: bytes, header_charset: str | None = None) -> Page:
    """Links, anchors and title of a Markdown document. No bytes make it raise; a fault in
    the reading itself does, rather than give a page that seems to hold no link.

    Each link has the line its destination is written on: for ``[text](url)`` wrapped
    over several lines, the line of ``url``. A reference-style link or image is reported
    where it is used, and its definition (``[label]: url``) once more on its own line,
    since that one line is where a broken URL is fixed for every use; definitions that
    no link uses render nothing and are not reported. Bare URLs count as GitHub links
    them (``http://`` is added to ``www.`` ones, ``mailto:`` to e-mail addresses).
    Raw HTML contributes what :func:`~linkpatrol.extract.extract_html` finds in it.
    Nothing in code blocks, code spans, math or the front matter is a link, nor is
    anything on the lines that marker comments (``<!-- linkpatrol-disable -->`` and the
    like, see :func:`~linkpatrol.extract.find_markers`) leave out.

    The heading ids are those GitHub gives headings (see :func:`heading_slug`; a
    repeated slug gets ``-1``, ``-2``, ... in document order), which it finds whatever
    the case of a fragment. The anchors, found as written, are the ids and ``<a name>``
    of raw HTML and the ``#id`` of a Pandoc-style attribute block ending a heading
    (``## Intro {#start}``), which sites built with such renderers use. The title is
    the text of the first level-1 heading. The encoding is the BOM's, else the HTTP
    charset's, else UTF-8.
    """
    try:
        # Markdown has no <meta charset>: only a BOM (in the first bytes) or HTTP says
        encoding = sniff_encoding(body[:3], header_charset)
    except Exception:
        encoding = "utf-8"
    return _extract(body, encoding)
