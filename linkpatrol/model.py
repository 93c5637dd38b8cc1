"""The small vocabulary every part shares: actions, states, exit codes, errors."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

HTTP_TOKEN_RE = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # a header or cookie name, a MIME type
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
MARKDOWN_TYPES = frozenset({"text/markdown", "text/x-markdown"})
PAGE_TYPES = HTML_TYPES | MARKDOWN_TYPES  # documents whose links and anchors are read
STYLESHEET_TYPES = frozenset({"text/css"})
PDF_TYPES = frozenset({"application/pdf"})
LINKING_TYPES = PAGE_TYPES | STYLESHEET_TYPES | PDF_TYPES  # documents whose links are read


E = TypeVar("E", bound=enum.StrEnum)


class Action(enum.StrEnum):
    """What to do with a URL, decided before it is ever requested."""

    PARSE = "parse"
    CHECK = "check"
    RECORD = "record"
    IGNORE = "ignore"


class State(enum.StrEnum):
    """A URL's verdict in one pass."""

    OK = "ok"
    BROKEN = "broken"
    WARNING = "warning"
    REDIRECT = "redirect"
    DISALLOWED = "disallowed"
    UNCHECKED = "unchecked"


class Reason(enum.StrEnum):
    """Why a URL has its verdict, when it is not plainly good: carried with the verdict to
    the memory and every report, so that no decision reads an error's text."""

    HTTP_STATUS = "http-status"  # the server answered with a status judged broken or a warning
    DNS = "dns"  # its host name does not resolve
    CONNECTION = "connection"  # refused, reset, unreachable, closed without an answer
    PROTOCOL = "protocol"  # an answer that is no valid HTTP
    TLS = "tls"  # the certificate or the TLS handshake failed
    TIMEOUT = "timeout"
    REFUSED = "refused"  # not requested: a private address with --no-private, say
    FILE = "file"  # a local file is missing or cannot be read
    INVALID_URL = "invalid-url"
    INVALID_HOST = "invalid-host"  # a host name no DNS server answers for, not looked up
    LIMIT = "limit"  # a limit (--max-urls, --max-depth, ...) left it unchecked
    ROBOTS = "robots"  # robots.txt forbids it, or could not be read
    MISSING_ANCHOR = "missing-anchor"
    REDIRECT = "redirect"  # a redirect that leads nowhere a browser goes
    REDIRECT_LOOP = "redirect-loop"  # a loop, or a chain of too many hops
    PARSE_ERROR = "parse-error"  # the page could not be parsed within the limits
    TOO_LARGE = "too-large"  # a page larger than --max-size, read in part
    CERT_EXPIRY = "cert-expiry"  # a good answer, from a host whose certificate ends soon
    RENDER = "render"  # the page could not be rendered in the browser within the limits
    SOFT_404 = "soft-404"  # a good answer that looks like its folder's answer to a made-up name
    MIXED_CONTENT = "mixed-content"  # loaded over http: by an https: page
    HTTPS_AVAILABLE = "https-available"  # a good http: URL whose host serves it over https:


# members by value, for reading the memory's rows: a dictionary look-up, where calling the
# enum (Action("check")) runs Python code for each of a big report's rows
ACTIONS: dict[str, Action] = {a.value: a for a in Action}
STATES: dict[str, State] = {s.value: s for s in State}
REASONS: dict[str, Reason] = {r.value: r for r in Reason}


# ---- what flows through a crawl ------------------------------------------------------


# the line of a link found only in a page's rendered DOM (--render): the served HTML has
# none for it, and lines count from 1
RENDERED = 0


def line_label(line: int) -> str:
    """A link's line as a report shows it: its number, or "rendered"."""
    return "rendered" if line == RENDERED else str(line)


def line_field(line: int | None) -> dict[str, Any]:
    """A link's line for JSON: a number, null (through a redirect), or null with
    ``"rendered": true`` (found in the rendered DOM)."""
    return {"line": None, "rendered": True} if line == RENDERED else {"line": line}


def line_labels(lines: Iterable[int]) -> str:
    """A page's lines linking to one URL as a report lists them: in order, "rendered" last."""
    return ", ".join(line_label(n) for n in sorted(lines, key=lambda n: (n == RENDERED, n)))


class Referrer(NamedTuple):
    """A page that links, and the line the link is on: a tuple, as a big site has millions."""

    url: str
    line: int | None


class LinkKind(enum.IntEnum):
    """What a link asks of a browser: to go there, or to load it into the page (an image,
    a script, a stylesheet, a frame, media). Kept with the link, as a plain int."""

    NAVIGATION = 0
    SUBRESOURCE = 1


class Discovered(NamedTuple):
    """A link found on a page (or a redirect target): where it points and on which line.

    A tuple: a crawl makes one for every link of every page."""

    url: str
    line: int | None
    action: Action
    invalid: str | None = None
    fragment: str | None = None  # the link's #fragment, as written (without the '#')
    kind: int = LinkKind.NAVIGATION.value  # a LinkKind's value


@dataclass(slots=True)
class Task:
    """A URL due in this pass, with what the memory knows of it from earlier passes.

    Not frozen, as no code changes one: a frozen class's constructor sets each field through
    ``object.__setattr__``, three times as slow, and a crawl makes one per URL."""

    url_id: int
    url: str
    origin: str
    action: Action
    state: State | None
    http_status: int | None
    error: str | None
    content_type: str | None
    last_checked: float | None
    last_good: float | None
    links_at: float | None
    etag: str | None
    last_modified: str | None
    referrer: str | None


@dataclass(slots=True)
class Outcome:
    """What became of one task; the store writes it, with the links it carries, atomically."""

    url_id: int
    action: Action
    state: State
    http_status: int | None = None
    error: str | None = None
    content_type: str | None = None
    base_url: str | None = None
    redirect_to: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    requests: int = 0
    fetched: bool = False
    parsed: bool = False
    checked: bool = True
    links: list[Discovered] | None = None
    links_unchanged: bool = False
    dropped: bool = False
    good_links: bool = False
    response_ms: float | None = None  # how long the last request took, body included
    anchors: frozenset[str] | None = None  # ids and <a name>s of a page just parsed
    heading_ids: frozenset[str] | None = None  # and the ids of its Markdown headings
    reason: Reason | None = None  # why it has its verdict (None when good)
    # a transient failure: the moment it is due for a second look, at the end of the pass
    # (the memory gives it one unless this was its second)
    look_again_at: float | None = None


class ExitCode(enum.IntEnum):
    CLEAN = 0
    BROKEN = 1
    USAGE = 2
    STOPPED = 3
    CHANGED = 4  # fix: files changed since the last check were left alone


class LinkpatrolError(Exception):
    """An error the user can act on: printed as one line, never as a traceback."""

    exit_code: ExitCode = ExitCode.USAGE


class ConfigError(LinkpatrolError):
    """Bad options or configuration file."""


class StoreError(LinkpatrolError):
    """The memory database cannot be used as asked."""


class AnchorMode(enum.StrEnum):
    """Which pages' anchors a ``page#name`` link is checked against."""

    OFF = "off"
    SITE = "site"  # the site's own pages
    ALL = "all"  # outside pages too


class Soft404Mode(enum.StrEnum):
    """Which good answers are compared with their folder's answer to a made-up name."""

    OFF = "off"
    SITE = "site"  # the site's own pages
    ALL = "all"  # outside pages too (read whole: GET instead of HEAD)


class Look(NamedTuple):
    """What a page looks like: its title, the length of its visible text and a simhash of
    that text (see :mod:`linkpatrol.fingerprint`)."""

    title: str
    size: int
    simhash: int


@dataclass(frozen=True, slots=True)
class Probe:
    """How a host's folder answered a name that cannot exist, as the memory keeps it.

    ``status`` None: no answer came (the folder is not judged). A folder answering 2xx
    keeps what its page looks like (``title``, ``size``, ``simhash`` of its text), one
    answering with a redirect where it leads (``redirect_to``); any other status means the
    folder says so of what is missing, and nothing more is kept."""

    origin: str
    folder: str  # the path of the folder, ending with '/'
    status: int | None
    probed_at: float
    redirect_to: str | None = None
    look: Look | None = None  # of an HTML page answered with 2xx


class RedirectMode(enum.StrEnum):
    """How a report treats a link that answered with a redirect."""

    FOLLOW = "follow"  # a page with one link to its target
    REPORT = "report"  # that, and a warning as well


class FailOn(enum.StrEnum):
    """The verdicts that make the exit code 1."""

    BROKEN = "broken"
    WARNING = "warning"  # broken or warning
    NEW = "new"  # broken, and not reported by the pass (or baseline) it is compared with


class ReportFormat(enum.StrEnum):
    """The formats a report is written in."""

    TEXT = "text"
    JSON = "json"
    CSV = "csv"
    MARKDOWN = "markdown"
    JUNIT = "junit"
    SARIF = "sarif"
    DOT = "dot"
    SITEMAP = "sitemap"
    HTML = "html"


class RobotsState(enum.StrEnum):
    """What a host's robots.txt said when it was last fetched (kept in the memory as is)."""

    HANDLED = "handled"  # rules parsed
    MISSING = "missing"  # 4xx: all allowed
    ERROR = "error"  # 5xx, and 429 after its retries: nothing allowed
    UNREACHABLE = "unreachable"  # no answer at all: nothing is requested
    SKIPPED = "skipped"  # --no-robots


@dataclass(frozen=True, slots=True)
class ReportOptions:
    """What shapes a pass's report, kept with the pass: every view of it (``check``,
    ``report``, ``serve``, ``status``) then says what the check saw.

    The status lists and rules were applied when the URLs were judged; they are kept so
    that a report can say what it was judged by.
    """

    check_anchors: AnchorMode = AnchorMode.OFF
    report_after: float = 0.0
    fail_on: FailOn = FailOn.BROKEN
    redirects: RedirectMode = RedirectMode.FOLLOW
    xref: bool = False
    graph_hosts: bool = False
    damp_new: bool = False
    only_new: bool = False  # the Markdown and SARIF reports name the new links only
    accept: tuple[int, ...] = ()
    warn: tuple[int, ...] = ()
    broken: tuple[int, ...] = ()
    rules: tuple[tuple[str, str, str], ...] = ()  # (kind, pattern, action), in order

    @property
    def anchors(self) -> bool:
        return self.check_anchors is not AnchorMode.OFF

    @property
    def redirects_as_warnings(self) -> bool:
        return self.redirects is RedirectMode.REPORT

    def flags(self) -> list[str]:
        """The options that differ from the defaults, spelled as on the command line."""
        out = []
        if self.check_anchors is not AnchorMode.OFF:
            out.append(f"--check-anchors={self.check_anchors.value}")
        if self.report_after:
            out.append(f"--report-after {duration_text(self.report_after)}")
        if self.damp_new:
            out.append("--damp-new")
        if self.fail_on is not FailOn.BROKEN:
            out.append(f"--fail-on {self.fail_on.value}")
        if self.redirects is not RedirectMode.FOLLOW:
            out.append(f"--redirects {self.redirects.value}")
        if self.xref:
            out.append("--xref")
        if self.only_new:
            out.append("--only-new")
        return out

    def as_dict(self) -> dict[str, Any]:
        """JSON-able: as the memory keeps it and the JSON report shows it."""
        return {
            "check_anchors": self.check_anchors.value,
            "report_after": self.report_after,
            "fail_on": self.fail_on.value,
            "redirects": self.redirects.value,
            "xref": self.xref,
            "graph_hosts": self.graph_hosts,
            "damp_new": self.damp_new,
            "only_new": self.only_new,
            "accept": list(self.accept),
            "warn": list(self.warn),
            "broken": list(self.broken),
            "rules": [list(rule) for rule in self.rules],
        }

    @classmethod
    def of_dict(cls, data: Mapping[str, Any]) -> ReportOptions:
        """Options kept by this or another version: unknown keys are left out, and what
        cannot be read takes its default (a view must never fail on them)."""
        default = cls()

        def member(kind: type[E], key: str, fallback: E) -> E:
            try:
                return kind(data.get(key, fallback.value))
            except ValueError:
                return fallback

        def statuses(key: str) -> tuple[int, ...]:
            value = data.get(key)
            if not isinstance(value, list):
                return ()
            return tuple(v for v in value if isinstance(v, int) and not isinstance(v, bool))

        after = data.get("report_after", 0.0)
        rules = data.get("rules")
        return cls(
            check_anchors=member(AnchorMode, "check_anchors", default.check_anchors),
            report_after=float(after) if isinstance(after, int | float) else 0.0,
            fail_on=member(FailOn, "fail_on", default.fail_on),
            redirects=member(RedirectMode, "redirects", default.redirects),
            xref=data.get("xref") is True,
            graph_hosts=data.get("graph_hosts") is True,
            damp_new=data.get("damp_new") is True,
            only_new=data.get("only_new") is True,
            accept=statuses("accept"),
            warn=statuses("warn"),
            broken=statuses("broken"),
            rules=tuple(
                (str(r[0]), str(r[1]), str(r[2]))
                for r in (rules if isinstance(rules, list) else ())
                if isinstance(r, list) and len(r) == 3
            ),
        )


def duration_text(seconds: float) -> str:
    """A duration as the options spell it: '3d', '90m', '45s'."""
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size:.0f}{unit}"
    return f"{seconds:g}s"
