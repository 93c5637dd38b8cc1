"""Parsing pages off the event loop: worker processes that turn HTML into decided links.

Each worker ("kid") holds its own :class:`~linkpatrol.policy.Policy` (hooks included), so
a page comes back as canonical URLs with their lines and actions, and the crawl process
only writes them down. The pool is driven by the event loop itself, with no helper
threads: a page goes to an idle kid over a pipe, the answer is read when the pipe is
readable, a kid that passes the hard limit is killed and replaced, and one that dies is
noticed and replaced. A page whose kid hung or died is tried once more, then judged.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import multiprocessing
import os
import pickle
import re
import signal
import socket
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from linkpatrol.config import SiteSettings
from linkpatrol.extract import HTML_SPACE, Page, extract_html, extract_stylesheet
from linkpatrol.loops import unwatch, watch
from linkpatrol.model import (
    MARKDOWN_TYPES,
    PDF_TYPES,
    STYLESHEET_TYPES,
    Action,
    Discovered,
    LinkpatrolError,
)
from linkpatrol.policy import Policy
from linkpatrol.urls import BadURL, remove_dot_segments

# decided links remembered per worker, about 240 bytes each: 40,000 keep the navigation
# and most other links of a big site, so each of its URLs is decided once per worker
_CACHE_LIMIT = 40_000
# pages sent to a worker at once: the next ones wait in the pipe while it parses, so it
# never idles while the crawl process is busy, which is also when the answers it sent are
# read late; only a page that fits a quarter of the pipe's buffer waits there (a bigger
# one would block the crawl until the worker reads it)
_DEPTH = 3
# a worker gives the system back what it freed after a page of this many bytes or more
GIVE_BACK_AFTER = 1 << 19
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")  # RFC 3986: before any '/', '?', '#'
_UNICODE = ("utf-8", "utf-16", "utf-32")  # Python's names of the encodings of all Unicode
_WEB = ("http://", "https://")  # links with these starts mean the same on every page
_UNDECIDED: Any = object()  # not in the decider's cache (None there is an ignored link)
# A path of segments of letters, digits and '-._~' (none of them '.' or '..'), that
# canonicalization leaves as written: joined to the base's folder (or origin) as text, it
# is what it resolves to.
_PLAIN_SEGMENT = r"(?!\.\.?(?:/|\Z))[A-Za-z0-9._~\-]+"
_PLAIN_PATH_RE = re.compile(rf"(?:{_PLAIN_SEGMENT}(?:/{_PLAIN_SEGMENT})*/?)?\Z")


@dataclass(frozen=True, slots=True)
class ParsedPage:
    links: list[Discovered]
    base_url: str | None
    title: str | None
    anchors: frozenset[str]
    heading_ids: frozenset[str]


class ParseFailure(Exception):
    """A page could not be parsed within the limits (its worker hung or died twice)."""


# (url, line, action, invalid reason, fragment, kind): a Discovered's fields in a plain
# tuple, which crosses the pipe cheaply (each action once per page) and becomes a
# Discovered in C
_WireLink = tuple[str, int | None, Action, str | None, str | None, int]
_Wire = tuple[list[_WireLink], str | None, str | None, frozenset[str], frozenset[str]]
# a page's base for the decider: origin, without query, folder, whole, whether plain
# relative links are joined to it as text
_Bases = tuple[str, str, str, str, bool]
# what a link is decided to be: (url, action, why it is invalid), or None (ignored)
_Answer = tuple[str, Action, str | None] | None


def _joined(raw: str, origin: str, folder: str) -> str | None:
    """The URL a plain relative link resolves to against the folder of a web page (whose
    origin is given), joined as text, its leading './' and '../' resolved as RFC 3986
    has them; None for any other link."""
    at = 0
    while raw.startswith(("./", "../"), at):
        at = raw.index("/", at) + 1
    if _PLAIN_PATH_RE.match(raw, at) is None:
        return None
    if not at:
        return folder + raw
    return origin + remove_dot_segments(folder[len(origin) :] + raw)


def _serves(answer: _Answer, key: tuple[str, str], raw: str) -> bool:
    """Whether the answer under ``key`` is the one for the link text ``raw``: an invalid
    link is reported as written, so its answer serves only its own text, not every text
    that names its URL."""
    return answer is None or answer[2] is None or key[0] == raw


class LinkDecider:
    """Resolve, canonicalize, rewrite and decide links, remembering answers across pages.

    Sites repeat their navigation on every page, so most links were decided before; the
    cache key is the link text plus only as much of the base as can change its meaning.
    A plain relative link (see ``_PLAIN_PATH_RE``) on a web page is known by the URL it
    resolves to: the same page linked from every folder of a site is decided once.
    """

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._cache: dict[tuple[str, str], _Answer] = {}
        self._grown: tuple[str, ...] = ()
        # under a local root, links resolve as on its web server: not by joining text
        self._joins = policy.mount is None

    def grow(self, prefixes: tuple[str, ...]) -> None:
        """The site grew by these prefixes: links are decided afresh from now on."""
        if prefixes != self._grown:
            self._grown = prefixes
            if self.policy.add_sites(prefixes):
                self._cache.clear()

    def _bases(self, base: str) -> _Bases:
        """What of the base can change the meaning of a link that starts with '/', with
        '?', with neither (relative to the base's folder), or with 'http:' alone; and
        whether plain links are joined to it as text (a web page's)."""
        cut = base.find("/", base.find("//") + 2)
        origin = base[:cut] if cut > 0 else base
        path = base.split("?", 1)[0]
        joins = self._joins and cut > 0 and base.startswith(_WEB)
        return origin, path, path[: path.rfind("/") + 1], base, joins

    @staticmethod
    def _key(raw: str, bases: _Bases) -> tuple[str, str]:
        first = raw[:1]
        if first == "/":  # '//host/...' takes the base's scheme: its origin says it too
            if bases[4] and raw[1:2] != "/" and _PLAIN_PATH_RE.match(raw, 1):
                return bases[0] + raw, ""
            return raw, bases[0]
        if first == "?":
            return raw, bases[1]
        if raw.startswith(_WEB):  # the commonest scheme of their own, told without a match
            return raw, ""
        scheme = _SCHEME_RE.match(raw) if ":" in raw else None
        if scheme is not None:  # a scheme of its own (http://, mailto:, ...)
            if scheme.group().lower() in ("http:", "https:") and raw[scheme.end() :][:2] != "//":
                return raw, bases[3]  # 'http:x' reads as relative, as browsers read it
            return raw, ""
        if bases[4] and raw:  # an empty link names no URL
            joined = _joined(raw, bases[0], bases[2])
            if joined is not None:
                return joined, ""
        return raw, bases[2]

    def decide(
        self,
        raw: str,
        base: str,
        bases: _Bases | None = None,
        query_encoding: str | None = None,
    ) -> _Answer:
        """(url, action, invalid reason), or None for an ignored URL."""
        key = self._key(raw, bases or self._bases(base))
        if query_encoding is not None and not raw.isascii():
            key = (raw, f"{key[1]}\x00{query_encoding}")
        answer = self._cache.get(key, _UNDECIDED)
        if answer is _UNDECIDED or not _serves(answer, key, raw):
            return self._decide(raw, base, key, query_encoding)
        return answer

    def _decide(
        self, raw: str, base: str, key: tuple[str, str], query_encoding: str | None
    ) -> _Answer:
        """A link not decided before, under its cache key."""
        try:
            target = self.policy.normalize(raw, base, query_encoding)
        except BadURL as exc:  # decided, and reported, as written
            written = raw[:2048]
            action = self.policy.action(written, invalid=True)
            answer: _Answer = None if action is Action.IGNORE else (written, action, str(exc))
        else:
            action = self.policy.action(target)
            if target == key[0]:
                target = key[0]  # one string for both, where most are the same: less memory
            answer = None if action is Action.IGNORE else (target, action, None)
        if not _serves(answer, key, raw):
            return answer
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = answer
        return answer

    def page(self, page: Page, url: str) -> _Wire:
        base = url
        base_url = None
        # a browser sends the query of a link on a page in a legacy encoding in that
        # encoding; UTF-16 pages' links in UTF-8 (WHATWG Encoding: the output encoding)
        encoding = None if page.encoding.startswith(_UNICODE) else page.encoding
        if page.base_href:
            try:
                base = self.policy.normalize(page.base_href, url, encoding)
                base_url = base if base != url else None
            except BadURL:
                base = url
        links: list[_WireLink] = []
        bases = self._bases(base)
        for link in page.links:
            raw, hashed, fragment = link.url.partition("#")
            if not raw.strip(HTML_SPACE):  # "#top": within the page the base names (this one)
                itself = self.decide(base, url) if fragment else None
                if itself is not None:
                    links.append((itself[0], link.line, itself[1], itself[2], fragment, link.kind))
                continue
            answer = self.decide(raw, base, bases, encoding)
            if answer is not None:
                links.append(
                    (
                        answer[0],
                        link.line,
                        answer[1],
                        answer[2],
                        fragment if hashed else None,
                        link.kind,
                    )
                )
        return links, base_url, page.title, page.anchors, page.heading_ids


# a Discovered made from its fields' tuple as tuples are made, in C: one per link of every
# page, in the crawl process (the named tuple's own constructor is Python code)
_discovered: Callable[[_WireLink], Discovered] = functools.partial(tuple.__new__, Discovered)


def _from_wire(wire: _Wire) -> ParsedPage:
    links, base_url, title, anchors, heading_ids = wire
    return ParsedPage(list(map(_discovered, links)), base_url, title, anchors, heading_ids)


def extract_page(body: bytes, charset: str | None, content_type: str | None) -> Page:
    """Links and anchors of a page (or the links of a stylesheet or a PDF), by the kind
    of document it is."""
    if content_type in MARKDOWN_TYPES:
        from linkpatrol.markdown import extract_markdown

        return extract_markdown(body, charset)
    if content_type in STYLESHEET_TYPES:
        return extract_stylesheet(body, charset)
    if content_type in PDF_TYPES:
        from linkpatrol.pdf import extract_pdf

        return extract_pdf(body)
    return extract_html(body, charset)


def give_back_memory() -> None:
    """Give the system back the memory this process freed (glibc's malloc_trim): what a
    big page took (its body, its tree, its answer) is megabytes that malloc would
    otherwise keep, in each worker that parsed one, for the rest of the crawl."""
    import ctypes  # here: only a worker that parsed a big page needs it

    with contextlib.suppress(AttributeError, OSError):
        ctypes.CDLL(None).malloc_trim(0)


def _pipe_room(conn: Connection) -> int:
    """Bytes the worker's pipe (a socket pair) takes before a send blocks, with margin."""
    try:
        sock = socket.socket(fileno=os.dup(conn.fileno()))
    except OSError:
        return 0
    with sock:
        return sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) // 4


def _throughput_only(pid: int) -> None:
    """Ask the system (Linux) to schedule a worker for throughput (SCHED_BATCH): its fair
    share of the CPU is the same, but a page sent to it no longer makes it preempt the
    crawl process, which had to wait for it to parse the page before going on with its
    requests (on two cores, a crawl 4% faster)."""
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setscheduler(pid, os.SCHED_BATCH, os.sched_param(0))


def _kid_main(conn: Connection, settings: SiteSettings, inherited: list[Connection]) -> None:
    """A worker: parse pages sent over the pipe until it closes.

    Terminal signals go to the whole process group; the crawl process decides what they
    mean, so a worker ignores them and simply ends when its pipe closes.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    for other in inherited:  # a forked worker must not hold the crawl's ends of the pipes
        other.close()
    decider = LinkDecider(Policy(settings))
    while True:
        try:
            message = conn.recv_bytes()
        except (EOFError, OSError):
            return
        answer = _answer(decider, message)
        try:
            conn.send_bytes(answer)
        except OSError:  # the crawl stopped and closed its end: nobody wants the answer
            return
        if len(message) >= GIVE_BACK_AFTER:  # a big page: all it took is freed by now
            del message, answer
            give_back_memory()


def _answer(decider: LinkDecider, message: bytes) -> bytes:
    """The worker's answer to one page sent to it: its links decided, or why it failed."""
    url, body, charset, content_type, grown = pickle.loads(message)
    if grown is not None:
        decider.grow(grown)
    try:
        answer: tuple[str, Any] = ("ok", read_page(decider, url, body, charset, content_type))
    except (LinkpatrolError, ParseFailure) as exc:
        answer = ("error", exc)
    return pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)


def read_page(
    decider: LinkDecider, url: str, body: bytes, charset: str | None, content_type: str | None
) -> _Wire:
    """A page's links, decided. A fault in reading it is the page's ParseFailure, which
    the report shows: never a page read as if it held no link."""
    try:
        return decider.page(extract_page(body, charset, content_type), url)
    except LinkpatrolError:
        raise
    except Exception as exc:
        raise ParseFailure(f"parser error: {type(exc).__name__}: {exc}") from None


class _KidGone(Exception):
    def __init__(self, reason: str, queued: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.queued = queued  # the page only waited behind the one that failed


@dataclass(slots=True)
class _Kid:
    process: Any
    conn: Connection
    # the pages sent, in order: the first is being parsed, the rest wait in the pipe
    futures: deque[asyncio.Future[Any]] = field(default_factory=deque)
    timer: asyncio.TimerHandle | None = None
    room: int = 0  # bytes the pipe takes without blocking the sender
    grown: int = 0  # how many times the site had grown when it was last told


class ParsePool:
    """Worker processes driven by the event loop; ``workers == 0`` parses in a thread."""

    def __init__(
        self, settings: SiteSettings, hard_limit: float, loop: asyncio.AbstractEventLoop
    ) -> None:
        self.hard_limit = hard_limit
        self.settings = settings
        self.size = settings.parse_workers or (os.cpu_count() or 1)
        self._forkserver: Any = None
        self._kids: list[_Kid] = []
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._local: LinkDecider | None = None
        self._closed = False
        self._loop = loop  # the crawl's, kept: asking asyncio for it makes a system call
        self._grown: tuple[str, ...] = ()  # the prefixes the site grew by
        self._growths = 0

    def grow(self, prefixes: tuple[str, ...]) -> None:
        """The site grew by these prefixes (a start URL redirected): every worker decides
        links with them from its next page on."""
        if prefixes == self._grown:
            return
        self._grown = prefixes
        self._growths += 1
        if self._local is not None:
            self._local.grow(prefixes)

    def start(self) -> None:
        """Start every worker now, by fork while this process has one thread.

        Forked workers start at once with everything imported, and as direct children
        their CPU time counts where ``time`` and rusage look for it. A worker replaced
        later, when threads exist, comes from a fork server instead.
        """
        if self.size and threading.active_count() == 1:
            context = multiprocessing.get_context("fork")
            for _ in range(self.size):
                self._spawn(context)

    def _context(self) -> Any:
        if self._forkserver is None:
            self._forkserver = multiprocessing.get_context("forkserver")
            self._forkserver.set_forkserver_preload(["linkpatrol.parsepool"])
        return self._forkserver

    def _spawn(self, context: Any = None) -> _Kid:
        forked = context is not None
        context = context or self._context()
        parent, child = context.Pipe()
        inherited = [parent, *(k.conn for k in self._kids)] if forked else []
        process = context.Process(
            target=_kid_main,
            args=(child, self.settings, inherited),
            daemon=True,
            name="linkpatrol-parser",
        )
        process.start()
        _throughput_only(process.pid)  # before any page is sent to it
        child.close()
        kid = _Kid(process, parent, room=_pipe_room(parent))
        # blocking still: a page bigger than the pipe is written whole as the worker reads
        watch(self._loop, parent.fileno(), self._readable, kid)
        self._kids.append(kid)
        return kid

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                break

    async def _kid_for(self, size: int) -> _Kid:
        """An idle worker; else one busy with a single page when this one fits its pipe."""
        while True:
            kid = min(self._kids, key=lambda k: len(k.futures), default=None)
            if kid is not None and not kid.futures:
                return kid
            if len(self._kids) < self.size:
                return self._spawn()
            if kid is not None and len(kid.futures) < _DEPTH and size <= kid.room:
                return kid
            waiter = self._loop.create_future()
            self._waiters.append(waiter)
            await waiter

    def _readable(self, kid: _Kid) -> None:
        try:
            message = kid.conn.recv_bytes()
        except (EOFError, OSError):
            code = kid.process.exitcode
            self._bury(kid, _KidGone(f"parser crashed (exit code {code})"))
            return
        future = kid.futures.popleft() if kid.futures else None
        if kid.timer is not None:
            kid.timer.cancel()
            kid.timer = None
        if kid.futures:  # the next page's time starts now
            self._start_clock(kid)
        if future is not None and not future.done():
            future.set_result(pickle.loads(message))
        self._wake_one()

    def _start_clock(self, kid: _Kid) -> None:
        kid.timer = self._loop.call_later(self.hard_limit, self._timed_out, kid)

    def _timed_out(self, kid: _Kid) -> None:
        kid.process.kill()
        self._bury(kid, _KidGone(f"parse timeout after {self.hard_limit:g}s"))

    def _bury(self, kid: _Kid, reason: _KidGone) -> None:
        """Forget a dead or killed kid; its page fails, a new kid takes its place on demand."""
        unwatch(self._loop, kid.conn.fileno())
        if kid.timer is not None:
            kid.timer.cancel()
        kid.conn.close()
        if kid in self._kids:
            self._kids.remove(kid)
        for i, future in enumerate(kid.futures):
            if not future.done():
                future.set_exception(reason if i == 0 else _KidGone(reason.reason, queued=True))
        kid.futures.clear()
        kid.process.join(timeout=1)
        self._wake_one()

    async def _on_kid(
        self, url: str, body: bytes, charset: str | None, content_type: str | None
    ) -> _Wire:
        page = (url, body, charset, content_type)
        message = pickle.dumps((*page, None), protocol=pickle.HIGHEST_PROTOCOL)
        kid = await self._kid_for(len(message))
        if kid.grown != self._growths:  # the site grew since it was last told
            kid.grown = self._growths
            message = pickle.dumps((*page, self._grown), protocol=pickle.HIGHEST_PROTOCOL)
        future = self._loop.create_future()
        kid.futures.append(future)
        try:
            kid.conn.send_bytes(message)
        except OSError:
            self._bury(kid, _KidGone("parser crashed (pipe closed)"))
        else:
            if len(kid.futures) == 1:
                self._start_clock(kid)
        status, payload = await future
        if status == "error":
            raise payload
        return payload  # type: ignore[no-any-return,unused-ignore]

    async def parse(
        self, url: str, body: bytes, charset: str | None, content_type: str | None = None
    ) -> ParsedPage:
        if self.size == 0 or self._closed:
            if self._local is None:
                self._local = LinkDecider(Policy(self.settings))
                self._local.grow(self._grown)
            wire = await asyncio.to_thread(read_page, self._local, url, body, charset, content_type)
            return _from_wire(wire)
        attempt = 1
        while True:
            try:
                return _from_wire(await self._on_kid(url, body, charset, content_type))
            except _KidGone as gone:
                if gone.queued and not self._closed:
                    continue  # not its fault: it waited behind the page that failed
                if attempt == 2:
                    raise ParseFailure(gone.reason) from None
                attempt += 1

    def close(self) -> None:
        """Stop every kid; pages still waiting fail (the crawl is ending)."""
        self._closed = True
        for kid in list(self._kids):
            with contextlib.suppress(RuntimeError, ValueError, OSError):
                unwatch(asyncio.get_running_loop(), kid.conn.fileno())
            if kid.timer is not None:
                kid.timer.cancel()
            kid.conn.close()
            kid.process.join(timeout=2)
            if kid.process.is_alive():
                kid.process.kill()
                kid.process.join(timeout=2)
        self._kids.clear()
