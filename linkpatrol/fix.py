"""Fixing local files: links to URLs that moved for good rewritten to where they went.

The memory of the last pass says which links of the checked files answered a permanent
redirect (301, 308), on what line, and where each lands. Each file is parsed again as the
check parsed it, and on each such line the link's text as written is replaced by its new
target, spelled as the old one was: a relative link stays relative where the target is a
file under the local root, the ``#fragment`` it had stays, ``&amp;`` stays an entity.
Nothing else of the file changes: an occurrence of the URL is rewritten only where the
parser reads it as that link (each one is swapped for a stand-in URL and the file parsed
again), so code blocks, code spans and text that merely mention the URL stay as they are.
A file that changed since the pass is left alone, as its lines may no longer be the
memory's.

What to rewrite comes as :class:`Rewrite` values, each of a :class:`RewriteKind`: another
kind (a broken link that was once good to its archived copy) is one more source of
``(kind, link)`` pairs for :func:`plan_fixes`, a query of the memory that gives each link
with the URL it is to lead to; the rewriting itself does not depend on why.
"""

from __future__ import annotations

import difflib
import enum
import os
import posixpath
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from linkpatrol.config import SiteSettings
from linkpatrol.extract import Page, extract_html
from linkpatrol.local import (
    INDEX,
    MARKDOWN_TYPE,
    Mount,
    content_type_of,
    file_etag,
    is_local_input,
    path_of_file_url,
    resolve_inputs,
)
from linkpatrol.markdown import extract_markdown
from linkpatrol.model import ConfigError
from linkpatrol.store import MovedLink, ReadMemory, read_memory
from linkpatrol.urls import BadURL

__all__ = [
    "FileFix",
    "PageFixes",
    "Rewrite",
    "RewriteKind",
    "Rewritten",
    "UnsafeRewrite",
    "file_fixes",
    "fix_file",
    "plan_fixes",
    "rewrite_links",
    "spelled_like",
    "unified_diff",
]


class RewriteKind(enum.StrEnum):
    """Why a link is rewritten."""

    MOVED = "moved"  # its URL answered 301 or 308: to where the permanent redirects land
    ARCHIVED = "archived"  # its URL is dead, and was good: to its copy in the web archive


@dataclass(frozen=True, slots=True)
class Rewrite:
    """The links on ``line`` that lead to ``old`` are to lead to ``new`` (canonical URLs,
    ``old`` without a fragment)."""

    line: int
    old: str
    new: str
    kind: RewriteKind = RewriteKind.MOVED


@dataclass(frozen=True, slots=True)
class Rewritten:
    """A text with its links rewritten: how many were, and how many links of the text
    given led to an ``old`` URL (anywhere: a file that changed may have moved them)."""

    text: str
    rewritten: int
    leading: int


class UnsafeRewrite(ValueError):
    """The new URLs would change how the file's other links are read."""


@dataclass(frozen=True, slots=True)
class PageFixes:
    """One local file and the rewrites the memory asks of it."""

    path: Path
    url: str  # the file as the memory names it: its relative links resolve against it
    etag: str | None  # its validator when the pass read it
    rewrites: tuple[Rewrite, ...]


@dataclass(frozen=True, slots=True)
class FileFix:
    """What became of one file: its text before and after, or why it was left alone."""

    path: Path
    before: str = ""
    after: str = ""
    rewritten: int = 0
    refused: str | None = None


Resolve = Callable[[str], "str | None"]
Spell = Callable[[str, str], str]

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
# an ampersand as HTML (and CommonMark) may write it; the longer spellings first
_AMPERSAND = r"(?:&amp;|&#0*38;|&#[xX]0*26;|&)"
_ENTITY = re.compile(r"&(?:amp|#0*38|#[xX]0*26);")
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_STAND_IN = "https://fix{}.linkpatrol.invalid/"
_RELATIVE_STAND_IN = "fix{}.linkpatrol.invalid"


def _links(text: str, markdown: bool) -> Page:
    body = text.encode("utf-8")
    return extract_markdown(body, "utf-8") if markdown else extract_html(body, "utf-8")


def _as_written(url: str, markdown: bool) -> re.Pattern[str]:
    """The ways a link's URL may be spelled in the source: ``&`` as an entity, and in
    Markdown a punctuation character escaped with a backslash."""
    parts = []
    for char in url:
        if char == "&":
            parts.append(_AMPERSAND)
        elif markdown and char in _PUNCTUATION:
            parts.append(r"\\?" + re.escape(char))
        else:
            parts.append(re.escape(char))
    return re.compile("".join(parts))


def _spelled_in(new: str, source: str) -> str:
    """``new`` as the source spelled the URL it replaces: with ``&amp;`` if it had one."""
    return new.replace("&", "&amp;") if _ENTITY.search(source) else new


def _stand_in(number: int, written: str) -> str:
    """A URL read as a link wherever ``written`` would be, and found nowhere else."""
    return (_STAND_IN if _SCHEME.match(written) else _RELATIVE_STAND_IN).format(number)


@dataclass(frozen=True, slots=True)
class _Occurrence:
    line: int
    start: int
    end: int
    new: str  # what it becomes, as the parser will read it
    text: str  # what it becomes, as the source spells it


def _replaced(lines: list[str], edits: Iterable[tuple[_Occurrence, str]]) -> str:
    out = list(lines)
    for occurrence, text in sorted(edits, key=lambda e: (e[0].line, -e[0].start)):
        row = out[occurrence.line - 1]
        out[occurrence.line - 1] = row[: occurrence.start] + text + row[occurrence.end :]
    return "\n".join(out)


def rewrite_links(
    text: str, markdown: bool, rewrites: Sequence[Rewrite], resolve: Resolve, spell: Spell
) -> Rewritten:
    """``text`` (HTML, or Markdown) with the links the rewrites name rewritten, each where
    it is written on its line, and only where the parser reads a link.

    ``resolve`` gives the canonical URL (without fragment) a link as written leads to, or
    None; ``spell`` the new URL written as the old one was (relative, with its fragment).
    """
    wanted: dict[int, dict[str, str]] = {}
    for rewrite in rewrites:
        wanted.setdefault(rewrite.line, {})[rewrite.old] = rewrite.new
    olds = {rewrite.old for rewrite in rewrites}
    lines = text.split("\n")
    before = _links(text, markdown).links
    found: dict[tuple[int, int], _Occurrence] = {}
    leading = 0
    for link in before:
        target = resolve(link.url)
        if target is None or target not in olds:
            continue
        leading += 1
        news = wanted.get(link.line, {})
        if target not in news or not 0 < link.line <= len(lines):
            continue
        new = spell(link.url, news[target])
        for match in _as_written(link.url, markdown).finditer(lines[link.line - 1]):
            source = match.group()
            here = _Occurrence(link.line, match.start(), match.end(), new, _spelled_in(new, source))
            if source == here.text:
                continue
            longest = found.get((link.line, match.start()))
            if longest is None or longest.end < here.end:
                found[(link.line, match.start())] = here
    chosen: list[_Occurrence] = []
    for occurrence in sorted(found.values(), key=lambda o: (o.line, o.start)):
        last = chosen[-1] if chosen else None
        if last is None or last.line != occurrence.line or last.end <= occurrence.start:
            chosen.append(occurrence)
    # each occurrence swapped for a stand-in: those the parser reads as links are links
    stand_ins = [_stand_in(number, o.new) for number, o in enumerate(chosen)]
    trial = _replaced(lines, zip(chosen, stand_ins, strict=True))
    read = {(link.url, link.line) for link in _links(trial, markdown).links}
    edits = [
        (o, o.text)
        for o, stand_in in zip(chosen, stand_ins, strict=True)
        if (stand_in, o.line) in read
    ]
    if not edits:
        return Rewritten(text, 0, leading)
    after = _replaced(lines, edits)
    links_after = _links(after, markdown).links
    made = {(link.url, link.line) for link in links_after}
    if len(links_after) != len(before) or any((o.new, o.line) not in made for o, _ in edits):
        raise UnsafeRewrite("its links cannot be rewritten without changing others")
    return Rewritten(after, len(edits), leading)


def spelled_like(written: str, new: str, page: str, mount: Mount | None) -> str:
    """``new`` (canonical) written as ``written`` was, on the local page ``page``.

    The fragment ``written`` had is kept, unless ``new`` has its own (as browsers take a
    redirect). A file under the local root is named as ``written`` named its old one:
    relative to the page, from the site's root (``/x``), or by its web address; any other
    URL is written whole.
    """
    url, hashed, fragment = new.partition("#")
    tail = "#" + fragment if hashed else written[written.find("#") :] if "#" in written else ""
    web = mount.to_web(url) if mount is not None else None
    if mount is None or web is None or written.startswith("file:"):
        return url + tail
    if _SCHEME.match(written):
        return web + tail
    origin_end = web.find("/", web.find("//") + 2)
    path = web[origin_end:]
    if written.startswith("//"):
        return web[web.find("//") :] + tail
    if written.startswith("/"):
        return path + tail
    here = mount.to_web(page) or ""
    folder = here[origin_end:].rpartition("/")[0] or "/"
    target, query, rest = path.partition("?")
    relative = posixpath.relpath(target, folder)
    if target.endswith("/"):
        relative = "./" if relative == "." else relative + "/"
    return relative + query + rest + tail


def _file_of(url: str) -> Path:
    """The file a ``file:`` URL of the memory names (a folder's: its index page)."""
    path = path_of_file_url(url)
    return path / INDEX if url.endswith("/") else path


def plan_fixes(
    found: Iterable[tuple[RewriteKind, MovedLink]], files: Collection[Path]
) -> list[PageFixes]:
    """The rewrites the memory asks of each of ``files`` (each link found to lead from
    its ``target`` to its ``landing`` for a reason), in the order of their paths."""
    pages: dict[Path, PageFixes] = {}
    for kind, link in found:
        path = _file_of(link.page)
        if path not in files:
            continue
        rewrite = Rewrite(link.line, link.target, link.landing, kind)
        known = pages.get(path)
        rewrites = (*known.rewrites, rewrite) if known else (rewrite,)
        pages[path] = PageFixes(path, link.page, link.page_etag, rewrites)
    return [pages[path] for path in sorted(pages)]


def fix_file(fixes: PageFixes, mount: Mount | None) -> FileFix:
    """The file with its links rewritten, or why it is left alone: it changed since the
    pass (and still has links to rewrite), is not UTF-8, or could not be rewritten
    safely."""
    path = fixes.path
    try:
        data = path.read_bytes()
        etag = file_etag(path.stat())
    except OSError as exc:
        return FileFix(path, refused=f"cannot read: {exc.strerror}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return FileFix(path, refused="not UTF-8; left alone")

    def resolve(written: str) -> str | None:
        try:
            return mount.resolve(written, fixes.url) if mount else None
        except BadURL:
            return None

    def spell(written: str, new: str) -> str:
        return spelled_like(written, new, fixes.url, mount)

    markdown = content_type_of(path) == MARKDOWN_TYPE
    try:
        done = rewrite_links(text, markdown, fixes.rewrites, resolve, spell)
    except UnsafeRewrite as exc:
        return FileFix(path, refused=str(exc))
    if etag != fixes.etag:
        if done.leading:
            return FileFix(path, refused="changed since the last check; check it again first")
        return FileFix(path, text, text)
    return FileFix(path, text, done.text, done.rewritten)


def file_fixes(settings: SiteSettings, cwd: Path) -> list[FileFix]:
    """Each local file among the start values of ``settings`` (folders and files, as
    ``check`` was given them) with its links rewritten, from the last pass of those start
    values in the memory (else the latest: of a folder holding them), or why it is left
    alone; the files with nothing to rewrite are not among them."""
    values = settings.start_urls
    if not values:
        raise ConfigError("fix: give the local folders or files that 'check' was given")
    for value in values:
        if not is_local_input(value):
            raise ConfigError(f"{value}: fix rewrites local files only")
    inputs = resolve_inputs(values, settings.base_url, cwd, settings.max_urls, settings.root_dir)
    files = {path_of_file_url(url) for url in inputs.start_urls}

    def planned(store: ReadMemory) -> list[PageFixes]:
        info = store.latest_pass(values, inputs.start_urls) or store.latest_pass()
        if info is None:
            raise ConfigError(f"{store.location}: no pass recorded yet; run 'linkpatrol check'")
        found = [(RewriteKind.MOVED, link) for link in store.moved_links(info.id)]
        if settings.archived:
            found += [(RewriteKind.ARCHIVED, link) for link in store.archived_links(info.id)]
        return plan_fixes(found, files)

    fixes = (fix_file(page, inputs.mount) for page in read_memory(settings.db, planned))
    return [fix for fix in fixes if fix.refused is not None or fix.after != fix.before]


def _diff_lines(text: str) -> list[str]:
    """A text's lines for a diff, the last one marked when it has no end of line."""
    pieces = text.split("\n")
    lines = [piece + "\n" for piece in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def unified_diff(fix: FileFix, cwd: Path) -> str:
    """The change to one file as ``git apply`` and ``patch -p1`` take it: ``a/`` and
    ``b/`` paths relative to ``cwd``."""
    name = os.path.relpath(fix.path, cwd).replace(os.sep, "/")
    return "".join(
        difflib.unified_diff(
            _diff_lines(fix.before), _diff_lines(fix.after), f"a/{name}", f"b/{name}"
        )
    )
