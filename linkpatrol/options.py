"""Every option, declared once: the command line, the configuration file, ``linkpatrol init``
and the help text are all made from :data:`OPTIONS`.

An option that sets a setting names its :class:`~linkpatrol.config.SiteSettings` field,
whose default is the option's; its configuration key reads its value with the same
converter as the command line, so both accept and refuse the same values.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from linkpatrol import __version__
from linkpatrol.model import (
    AnchorMode,
    ConfigError,
    FailOn,
    RedirectMode,
    ReportFormat,
    Soft404Mode,
)
from linkpatrol.proxies import PASSWORD_VARIABLE, proxy_option
from linkpatrol.tls import format_host, parse_host

DEFAULT_CONFIG = "linkpatrol.toml"
ARCHIVE_ENDPOINT = "https://archive.org/wayback/available"  # the web archive's availability API

# ---- values, as the file or the command line gives them --------------------------------
# each converter raises ValueError with a readable reason

_DURATION_UNITS = {
    "ms": 0.001,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 604800.0,
}
_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|[smhdw]?)")


def parse_duration(text: str | float | int) -> float:
    """Seconds from '200ms', '90m', '1d', '2h30m', '45s', '1.5h' or a plain number of seconds."""
    if isinstance(text, bool):
        raise ValueError(f"not a duration: {text!r}")
    if isinstance(text, int | float):
        if text < 0:
            raise ValueError(f"negative duration: {text!r}")
        return float(text)
    spec = text.strip().lower()
    pos, total = 0, 0.0
    if not spec:
        raise ValueError("empty duration")
    while pos < len(spec):
        m = _DURATION_RE.match(spec, pos)
        if not m or m.end() == pos:
            raise ValueError(f"not a duration: {text!r} (use e.g. 200ms, 90s, 15m, 2h, 7d)")
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2) or "s"]
        pos = m.end()
        while pos < len(spec) and spec[pos] == " ":
            pos += 1
    return total


def parse_size(text: str | int) -> int:
    """Bytes from '10MB', '512k', '1G' or a plain number."""
    if isinstance(text, bool):
        raise ValueError(f"not a size: {text!r}")
    if isinstance(text, int):
        if text <= 0:
            raise ValueError(f"size must be positive: {text}")
        return text
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmg]?)i?b?\s*", text.lower())
    if not m:
        raise ValueError(f"not a size: {text!r} (use e.g. 10MB, 512KB)")
    factor = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[m.group(2)]
    value = int(float(m.group(1)) * factor)
    if value <= 0:
        raise ValueError(f"size must be positive: {text!r}")
    return value


def parse_status_list(items: list[Any] | str) -> frozenset[int]:
    """HTTP statuses from [200, "300-399", "999"] or "200,300-399"."""
    if isinstance(items, str):
        items = [part for part in items.split(",") if part.strip()]
    statuses: set[int] = set()
    for item in items:
        if isinstance(item, bool):
            raise ValueError(f"not an HTTP status: {item!r}")
        if isinstance(item, int):
            statuses.add(item)
            continue
        if not isinstance(item, str):
            raise ValueError(f"not an HTTP status: {item!r}")
        m = re.fullmatch(r"\s*(\d{3})\s*(?:-\s*(\d{3})\s*)?", item)
        if not m:
            raise ValueError(f"not an HTTP status or range: {item!r}")
        low = int(m.group(1))
        high = int(m.group(2) or low)
        if high < low:
            raise ValueError(f"empty status range: {item!r}")
        statuses.update(range(low, high + 1))
    for status in statuses:
        if not 100 <= status <= 999:
            raise ValueError(f"not an HTTP status: {status}")
    return frozenset(statuses)


Converter = Callable[[Any], Any]


def whole(lo: int, hi: int | None = None) -> Converter:
    """A whole number from ``lo`` to ``hi`` (no upper bound when None)."""

    def convert(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, str) and value.strip().isdigit():
                value = int(value)
            else:
                raise ValueError(f"expected a whole number, got {value!r}")
        if value < lo or (hi is not None and value > hi):
            bound = f"from {lo} to {hi}" if hi is not None else f"at least {lo}"
            raise ValueError(f"must be {bound}, got {value}")
        return int(value)

    return convert


def seconds(value: Any) -> float:
    return parse_duration(value)


def positive_seconds(value: Any) -> float:
    duration = parse_duration(value)
    if duration <= 0:
        raise ValueError(f"must be more than 0, got {value!r}")
    return duration


def true_or_false(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def string(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r}")
    return value


def strings(value: Any) -> tuple[str, ...]:
    """Strings from a list of them, or one string alone."""
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"expected a list of strings, got {value!r}")
    return tuple(value)


def regexes(value: Any) -> tuple[str, ...]:
    """Regular expressions, from a list or one alone, each compiled to refuse a wrong one."""
    found = strings(value)
    for pattern in found:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"invalid regex {pattern!r}: {exc}") from None
    return found


def web_address(value: Any) -> str:
    """An http:// or https:// URL with a host."""
    text = string(value).strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"expected an http:// or https:// URL, got {text!r}")
    return text


def any_of(patterns: tuple[str, ...]) -> str:
    """One regex that matches where any of ``patterns`` does."""
    return patterns[0] if len(patterns) == 1 else "|".join(f"(?:{p})" for p in patterns)


def alternatives(value: Any) -> tuple[str, ...]:
    """Regular expressions that are also searched as one (``--include``)."""
    found = regexes(value)
    if found:
        try:
            re.compile(any_of(found))
        except re.error as exc:
            raise ValueError(f"cannot search {' or '.join(found)} together: {exc}") from None
    return found


def remap_parts(remap: str) -> tuple[str, str]:
    """The regex and the replacement of a ``--remap 'REGEX REPLACEMENT'``."""
    parts = remap.split()
    if len(parts) != 2:
        raise ValueError(f"expected 'REGEX REPLACEMENT', separated by a space, got {remap!r}")
    return parts[0], parts[1]


def remaps(value: Any) -> tuple[str, ...]:
    """``'REGEX REPLACEMENT'`` pairs, from a list or one alone, each tried on a URL."""
    found = strings(value)
    for remap in found:
        regex, replacement = remap_parts(remap)
        try:
            re.compile(regex).sub(replacement, "")
        except (re.error, IndexError) as exc:
            raise ValueError(f"invalid remap {remap!r}: {exc}") from None
    return found


def names(value: Any) -> tuple[str, ...]:
    """Names from a list, or from one string of them separated by commas."""
    given = value.split(",") if isinstance(value, str) else strings(value)
    return tuple(name.strip() for name in given if name.strip())


def hosts(value: Any) -> tuple[str, ...]:
    return tuple(format_host(parse_host(host)) for host in strings(value))


def values(kind: type[enum.StrEnum]) -> tuple[str, ...]:
    return tuple(member.value for member in kind)


def one_of(kind: type[enum.StrEnum]) -> Converter:
    """A member of ``kind``, from its value."""
    choices = values(kind)

    def convert(value: Any) -> enum.StrEnum:
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {value!r}")
        return kind(value)

    return convert


def anchor_mode(value: Any) -> AnchorMode:
    """check_anchors: true means the site's pages, "all" outside pages too."""
    if isinstance(value, bool):
        return AnchorMode.SITE if value else AnchorMode.OFF
    choices = values(AnchorMode)
    if value not in choices:
        raise ValueError(f"expected true, false or one of {', '.join(choices)}, got {value!r}")
    return AnchorMode(value)


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``; did you mean 'x'?`` for the known name closest to a misspelt ``word``, or ''."""
    import difflib  # only a misspelt name needs it

    close = difflib.get_close_matches(word, list(known), n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


# ---- the table ----------------------------------------------------------------------------


class Kind(enum.Enum):
    """How an option is spelled on the command line."""

    VALUE = "value"  # --name VALUE
    CHOICE = "choice"  # --name VALUE, one of a few
    FLAG = "flag"  # --name: true
    NEGATED = "negated"  # --no-name: false
    REPEATABLE = "repeatable"  # --name VALUE, as often as needed: a list
    COUNT = "count"  # -v, -vv: how often it is given
    ARGUMENT = "argument"  # a positional argument


class PathKind(enum.Enum):
    """What kind of path an option's value is, for the shell to complete it with."""

    FILE = "FILE"  # a file (or a folder, or a URL)
    DIRECTORY = "DIRECTORY"  # a folder


CHECK = "check"
REPORT = "report"
HISTORY = "history"
STATUS = "status"
SERVE = "serve"
INIT = "init"
COMPLETION = "completion"
MCP = "mcp"
FIX = "fix"
REPORTING = (CHECK, REPORT)  # the commands that write a pass's report
READING = (HISTORY, STATUS, SERVE)  # the commands that only read the memory and print

# the commands, in the order the help lists them
COMMANDS: tuple[tuple[str, str], ...] = (
    (CHECK, "crawl from the start URLs, check every link, report the broken ones"),
    (REPORT, "print the last pass's report from the memory"),
    (HISTORY, "one URL's verdicts over time, and the pages that link to it"),
    (STATUS, "where the latest pass stands, while it runs"),
    (INIT, "write a commented linkpatrol.toml with every key and its default"),
    (COMPLETION, "print a shell completion script"),
    (SERVE, "a read-only web dashboard over the memory, live while a crawl runs"),
    (FIX, "rewrite the local files' links that moved for good (301, 308) to their targets"),
    (MCP, "a Model Context Protocol server on stdio: check, report and history as tools"),
)


@dataclass(frozen=True, slots=True)
class Option:
    """One option of one or more commands.

    With a ``field`` it sets that setting, and with a ``key`` the configuration file sets it
    too; without one it is the command's own, read from the parsed arguments by its name.
    """

    flags: tuple[str, ...]  # as typed ("-o", "--output"); a positional argument's name
    help: str
    field: str = ""  # the SiteSettings field it sets
    key: str = ""  # its configuration file key: the field's name unless given
    kind: Kind = Kind.VALUE
    commands: tuple[str, ...] = (CHECK,)
    # the value given, to the setting's (a flag's: true or false; a command's own: as typed)
    convert: Converter = string
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    bare: str | None = None  # CHOICE: the value when given alone; another follows '='
    nargs: str | None = None  # ARGUMENT: how many ('*', '+'; one when None)
    most: int = 0  # COUNT: given more often, it counts as this many
    default: Any = None  # a command's own option when not given (a setting's: SiteSettings's)
    example: Any = None  # a value for the configuration file, when the default is "not set"
    help_on: tuple[tuple[str, str], ...] = ()  # (command, help) where it reads differently
    key_help: str = ""  # the configuration key's help, where the option's reads wrong for it
    path: PathKind | None = None  # a path: the shell completes it with file or folder names
    name: str = ""  # a command's own option: its name in the parsed arguments

    def __post_init__(self) -> None:
        if self.field and not self.key:
            object.__setattr__(self, "key", self.field)
        if self.kind in (Kind.FLAG, Kind.NEGATED) and self.convert is string:
            object.__setattr__(self, "convert", true_or_false)

    @property
    def dest(self) -> str:
        """Its name in the parsed arguments."""
        if self.kind is Kind.ARGUMENT:
            return self.flags[0]
        return self.field or self.name or self.flags[-1].lstrip("-").replace("-", "_")

    @property
    def valued(self) -> str:
        """A ``bare`` option's hidden twin: ``--name=VALUE`` is spelled as it for the parser."""
        return f"{self.flags[-1]}-mode"

    def help_for(self, command: str) -> str:
        return dict(self.help_on).get(command, self.help)

    def given(self, value: Any) -> Any:
        """The setting's value from the command line's (raises ConfigError)."""
        if self.kind is Kind.COUNT:
            value = min(value, self.most)
        try:
            return self.convert(value)
        except ValueError as exc:
            raise ConfigError(f"option {self.flags[-1]}: {exc}") from None


_MEMORY = "the memory (default: linkpatrol.db)"
_FILE = "configuration file"

OPTIONS: tuple[Option, ...] = (
    Option(
        ("urls",),
        "start URLs, local folders or files, or '-' for URLs on stdin (or 'start' in config)",
        field="start_urls",
        key="start",
        kind=Kind.ARGUMENT,
        commands=(CHECK, REPORT, STATUS, FIX),
        convert=strings,
        metavar="URL|PATH",
        nargs="*",
        path=PathKind.FILE,
        help_on=(
            *(
                (command, "the start values of the pass to show (default: the latest pass)")
                for command in (REPORT, STATUS)
            ),
            (FIX, "the local folders and files to fix, as 'check' was given them"),
        ),
    ),
    Option(
        ("url",),
        "the URL, spelled any equivalent way",
        kind=Kind.ARGUMENT,
        commands=(HISTORY,),
        metavar="URL",
    ),
    Option(
        ("urls",),
        "the start URLs, local folders or files",
        kind=Kind.ARGUMENT,
        commands=(INIT,),
        metavar="URL|PATH",
        nargs="+",
        path=PathKind.FILE,
    ),
    Option(
        ("shell",),
        "",
        kind=Kind.ARGUMENT,
        commands=(COMPLETION,),
        choices=("bash", "zsh", "fish", "tcsh"),
    ),
    Option(
        ("--format",),
        "report format; when not given, the one the -o FILE's extension names "
        "(.html, .json, .csv, .md, .xml: junit, .sarif, .dot), else text",
        field="format",
        kind=Kind.CHOICE,
        commands=REPORTING,
        convert=one_of(ReportFormat),
        choices=values(ReportFormat),
        key_help="report format; when not set, the one the output file's extension names "
        "(.html, .json, .csv, .md, .xml: junit, .sarif, .dot), else text",
    ),
    Option(
        ("--format",),
        "output format (default: text)",  # not the report format, which the file may set
        kind=Kind.CHOICE,
        commands=(HISTORY, STATUS),
        choices=("text", "json"),
        default="text",
        name="print_format",
    ),
    Option(("--host",), "address to listen on (127.0.0.1)", commands=(SERVE,), default="127.0.0.1"),
    Option(("--port",), "port to listen on (8080)", commands=(SERVE,), convert=int, default=8080),
    Option(
        ("-o", "--output"),
        "write the report to FILE",
        field="output",
        commands=REPORTING,
        metavar="FILE",
        example="report.html",
        path=PathKind.FILE,
    ),
    Option(
        ("--check-anchors",),
        "a link to page#name is broken when the page has no element with that id or name "
        "(the site's pages; --check-anchors all: outside pages too; off: not at all)",
        field="check_anchors",
        kind=Kind.CHOICE,
        commands=REPORTING,
        convert=anchor_mode,
        choices=values(AnchorMode),
        bare=AnchorMode.SITE.value,
        key_help="a link to page#name is broken when the page has no element with that id or "
        'name: "site" (or true) for the site\'s pages, "all" for outside pages too, "off"',
    ),
    Option(
        ("--soft-404",),
        "a good answer that is what its folder answers for a made-up name is broken "
        "(site: the site's pages, probing each folder once; all: outside URLs too, read "
        "with GET; off: not at all)",
        field="soft_404",
        kind=Kind.CHOICE,
        convert=one_of(Soft404Mode),
        choices=values(Soft404Mode),
    ),
    Option(
        ("--xref",),
        "add the full cross-reference: for every URL, what links to it and what it links to",
        field="xref",
        kind=Kind.FLAG,
        commands=REPORTING,
    ),
    Option(
        ("--fail-on",),
        "verdicts that make the exit code 1: broken (default), warning (broken or warning), "
        "or new (broken links the last complete pass, or --baseline, did not report)",
        field="fail_on",
        kind=Kind.CHOICE,
        commands=REPORTING,
        convert=one_of(FailOn),
        choices=values(FailOn),
    ),
    Option(
        ("--baseline",),
        "an earlier run's JSON report (--format json): what is new is measured against it, "
        "not against the memory's last complete pass",
        field="baseline",
        commands=REPORTING,
        metavar="FILE",
        example="links.json",
        path=PathKind.FILE,
    ),
    Option(
        ("--only-new",),
        "the Markdown and SARIF reports list only the links that are new",
        field="only_new",
        kind=Kind.FLAG,
        commands=REPORTING,
    ),
    Option(
        ("--graph-hosts",),
        "--format dot: one node per outside host instead of one per outside URL",
        field="graph_hosts",
        kind=Kind.FLAG,
        commands=REPORTING,
    ),
    Option(
        ("--report-after",),
        "report a broken URL only once it has failed for longer than this (default 0)",
        field="report_after",
        commands=REPORTING,
        convert=seconds,
        metavar="DURATION",
    ),
    Option(
        ("--damp-new",),
        "--report-after holds back links that never worked too (else reported at once)",
        field="damp_new",
        kind=Kind.FLAG,
        commands=REPORTING,
    ),
    Option(
        ("--redirects",),
        "follow: a redirect is a page with one link (default); report: also list as warnings",
        field="redirects",
        kind=Kind.CHOICE,
        commands=REPORTING,
        convert=one_of(RedirectMode),
        choices=values(RedirectMode),
    ),
    Option(
        ("--config",),
        f"{_FILE} (default: ./{DEFAULT_CONFIG})",
        commands=(*REPORTING, *READING, MCP, FIX),
        metavar="FILE",
        help_on=tuple((command, _FILE) for command in (*READING, MCP)),
        path=PathKind.FILE,
    ),
    Option(
        ("--config",),
        f"file to write ({DEFAULT_CONFIG})",
        commands=(INIT,),
        metavar="FILE",
        default=DEFAULT_CONFIG,
        path=PathKind.FILE,
    ),
    Option(
        ("--db",),
        "the memory: a SQLite file or a postgresql:// URL (default: linkpatrol.db)",
        field="db",
        commands=(*REPORTING, *READING, MCP, FIX),
        metavar="PATH|URL",
        help_on=(
            *((command, _MEMORY) for command in READING),
            (
                MCP,
                "the memory the tools read and check into, and no other (default: linkpatrol.db)",
            ),
        ),
        path=PathKind.FILE,
    ),
    Option(
        ("-q", "--quiet"),
        "only the report, and none of a pass cut short",
        field="quiet",
        kind=Kind.FLAG,
        commands=REPORTING,
    ),
    Option(
        ("--site",),
        "URLs under PREFIX are part of the site and parsed (repeatable)",
        field="sites",
        key="site",
        kind=Kind.REPEATABLE,
        convert=strings,
        metavar="PREFIX",
        key_help="URLs under these prefixes are part of the site and parsed",
    ),
    Option(
        ("--base-url",),
        "where the local folder is served: root-relative links and links to this URL "
        "are checked against the files",
        field="base_url",
        commands=(CHECK, FIX),
        metavar="URL",
        example="https://example.org/",
    ),
    Option(
        ("--root-dir",),
        "the folder root-relative links (/x) of local files resolve from "
        "(default: a site folder given alone, else the current folder)",
        field="root_dir",
        commands=(CHECK, FIX),
        metavar="DIR",
        example="public",
        path=PathKind.DIRECTORY,
    ),
    Option(
        ("--offline",),
        "request nothing over the network: outside links are recorded, not checked",
        field="offline",
        kind=Kind.FLAG,
    ),
    Option(
        ("--no-recurse",),
        "parse only the start values: check their links, follow none of them",
        field="recurse",
        kind=Kind.NEGATED,
        key_help="parse the site's pages beyond the start values (false: parse only those)",
    ),
    Option(
        ("--sitemap",),
        "check every URL listed in this sitemap (repeatable)",
        field="sitemap",
        kind=Kind.REPEATABLE,
        convert=strings,
        metavar="URL|FILE",
        path=PathKind.FILE,
        key_help="check every URL listed in these sitemaps (URLs or files)",
    ),
    Option(
        ("--concurrency",),
        "requests in flight at once (default 64)",
        field="concurrency",
        convert=whole(1, 10_000),
        metavar="N",
    ),
    Option(
        ("--per-host",),
        "requests in flight to one host (default 8)",
        field="per_host",
        convert=whole(1, 1_000),
        metavar="N",
    ),
    Option(
        ("--delay",),
        "pause between requests to one host (default 0)",
        field="delay",
        convert=seconds,
        metavar="DURATION",
    ),
    Option(
        ("--timeout",),
        "per-request timeout (default 15s)",
        field="timeout",
        convert=seconds,
        metavar="DURATION",
    ),
    Option(
        ("--retries",),
        "retries of transient failures (default 2)",
        field="retries",
        convert=whole(0, 20),
        metavar="N",
    ),
    Option(
        ("--second-look",),
        "pause before URLs that failed transiently are asked once more, at the end of the "
        "pass; 0: no second look (default 5s)",
        field="second_look",
        convert=seconds,
        metavar="DURATION",
    ),
    Option(
        ("--max-size",),
        "largest HTML page read (default 10MB)",
        field="max_size",
        convert=parse_size,
        metavar="SIZE",
    ),
    Option(
        ("--max-depth",),
        "most path segments in a URL requested (default 20)",
        field="max_depth",
        convert=whole(1, 10_000),
        metavar="N",
    ),
    Option(
        ("--max-urls",),
        "most URLs in one pass (default 100000)",
        field="max_urls",
        convert=whole(1),
        metavar="N",
    ),
    Option(
        ("--max-similar",),
        "most URLs differing only in number-only segments, e.g. calendar pages (default 3000)",
        field="max_similar",
        convert=whole(0),
        metavar="N",
    ),
    Option(
        ("--max-requests",),
        "stop after N requests (exit 3; resumable)",
        field="max_requests",
        convert=whole(0),
        metavar="N",
    ),
    Option(
        ("--max-time",),
        "stop after this long, e.g. 90m (exit 3)",
        field="max_time",
        convert=seconds,
        metavar="DURATION",
    ),
    Option(
        ("--db-wait",),
        "how long a crawl waits for a lost PostgreSQL connection (default 60s)",
        field="db_wait",
        convert=seconds,
        metavar="DURATION",
    ),
    Option(
        ("--no-robots",),
        "ignore robots.txt (impolite)",
        field="robots",
        kind=Kind.NEGATED,
        key_help="obey robots.txt (false: ignore it, which is impolite)",
    ),
    Option(
        ("--user-agent",),
        f"User-Agent (default linkpatrol/{__version__})",
        field="user_agent",
        metavar="UA",
        key_help="User-Agent (default: linkpatrol/ and the version running)",
    ),
    Option(
        ("--from",),
        "operator's e-mail address, sent as the From header",
        field="from_email",
        key="from",
        metavar="EMAIL",
        example="webmaster@example.org",
    ),
    Option(
        ("--recheck-good",),
        "trust a URL found good more recently than this (default 0)",
        field="recheck_good",
        convert=seconds,
        metavar="DURATION",
    ),
    Option(
        ("--follow-ghost",),
        "follow a failing page's remembered links this long after it was good (default 7d)",
        field="follow_ghost",
        convert=seconds,
        metavar="DURATION",
    ),
    Option(
        ("--accept",),
        "statuses that are also ok, e.g. 999,403",
        field="accept",
        convert=parse_status_list,
        metavar="STATUSES",
        key_help='statuses that are also ok, e.g. [999, 403] or "300-399"',
    ),
    Option(
        ("--warn",),
        "statuses that are warnings (besides 401,403,429,999)",
        field="warn",
        convert=parse_status_list,
        metavar="STATUSES",
    ),
    Option(
        ("--broken",),
        "statuses that are broken, e.g. 403,999",
        field="broken",
        convert=parse_status_list,
        metavar="STATUSES",
        key_help="statuses that are broken, e.g. [403, 999]",
    ),
    Option(
        ("--exclude",),
        "ignore the URLs REGEX matches, even those an --include matches (repeatable)",
        field="exclude",
        kind=Kind.REPEATABLE,
        convert=regexes,
        metavar="REGEX",
        key_help="ignore the URLs these regexes match, even those an include matches",
    ),
    Option(
        ("--include",),
        "ignore the URLs no --include REGEX matches, start URLs too (repeatable)",
        field="include",
        kind=Kind.REPEATABLE,
        convert=alternatives,
        metavar="REGEX",
        key_help="ignore the URLs none of these regexes matches, start URLs too",
    ),
    Option(
        ("--remap",),
        "'REGEX REPLACEMENT': rewrite the URLs REGEX matches (\\1 in REPLACEMENT: a group), "
        "ahead of the [[rewrite]]s (repeatable)",
        field="remap",
        kind=Kind.REPEATABLE,
        convert=remaps,
        metavar="REMAP",
        key_help="'REGEX REPLACEMENT' pairs: rewrite the URLs REGEX matches "
        "(\\1 in REPLACEMENT: a group), ahead of the [[rewrite]]s",
    ),
    Option(
        ("--hooks",),
        "Python file defining action(url) and/or rewrite(url)",
        field="hooks",
        metavar="FILE",
        example="linkpatrol_hooks.py",
        path=PathKind.FILE,
    ),
    Option(
        ("--plugins",),
        "plugins to run, by name or package.module:Class, separated by commas ('' for none)",
        field="plugins",
        convert=names,
        metavar="NAMES",
        key_help='plugins to run, by name or "package.module:Class"',
    ),
    Option(
        ("-v", "--verbose"),
        "-v: a line per URL; -vv: debug",
        field="verbose",
        kind=Kind.COUNT,
        convert=whole(0, 2),
        most=2,
        key_help="0: the usual output; 1: a line per URL; 2: debug",
    ),
    Option(
        ("--log",),
        "append timestamped lines of what was requested and why",
        field="log",
        metavar="FILE",
        example="linkpatrol.log",
        path=PathKind.FILE,
    ),
    Option(
        ("--no-progress",),
        "no live progress display even on a terminal",
        field="progress",
        kind=Kind.NEGATED,
        example=False,
        key_help="false: no live progress display (when not set: shown on a terminal)",
    ),
    Option(
        ("--parse-workers",),
        "parser processes (default: one per core)",
        field="parse_workers",
        convert=whole(0, 64),
        metavar="N",
        key_help="parser processes; 0 (the default): one per core, counted at run time",
    ),
    Option(
        ("--ca-bundle",),
        "PEM file of extra CA certificates to trust, for every host",
        field="ca_bundle",
        metavar="FILE",
        example="ca.pem",
        path=PathKind.FILE,
    ),
    Option(
        ("--insecure",),
        "do not verify HOST's TLS certificate (HOST or HOST:PORT; '*': all; repeatable)",
        field="insecure",
        kind=Kind.REPEATABLE,
        convert=hosts,
        metavar="HOST",
        key_help='hosts whose TLS certificate is not verified (HOST or HOST:PORT; "*": all)',
    ),
    Option(
        ("--cert-expiry",),
        "warn of a host's TLS certificate that expires within DAYS (0: never; default 14)",
        field="cert_expiry",
        convert=whole(0, 3650),
        metavar="DAYS",
    ),
    Option(
        ("--require-https",),
        "warn of each good http: URL whose host serves it over https: too (one request "
        "a host, remembered)",
        field="require_https",
        kind=Kind.FLAG,
    ),
    Option(
        ("--proxy",),
        "proxy for every request, instead of http_proxy, https_proxy, all_proxy: "
        f"scheme://[USER@]HOST:PORT, the password in {PASSWORD_VARIABLE} "
        "('': none, not the environment's either)",
        field="proxy",
        convert=proxy_option,
        metavar="URL",
        example="http://proxy.example.org:3128",
    ),
    Option(
        ("--no-private",),
        "refuse private, loopback and link-local addresses (the site's own hosts excepted)",
        field="no_private",
        kind=Kind.FLAG,
    ),
    Option(
        ("--write",),
        "write the changes to the files instead of printing them as a unified diff",
        kind=Kind.FLAG,
        commands=(FIX,),
        default=False,
    ),
    Option(
        ("--render",),
        "also load the site's pages in headless Chromium and check the links of their DOM "
        "once settled (pages built by JavaScript)",
        field="render",
        kind=Kind.FLAG,
    ),
    Option(
        ("--render-pages",),
        "pages rendered at once with --render (default 2)",
        field="render_pages",
        convert=whole(1, 16),
        metavar="N",
    ),
    Option(
        ("--render-timeout",),
        "time a page has to settle in the browser with --render (default 10s)",
        field="render_timeout",
        convert=positive_seconds,
        metavar="DURATION",
    ),
    Option(
        ("--browser",),
        "the Chromium --render drives (when not given: chromium, chromium-browser or "
        "google-chrome, the first on the PATH)",
        field="browser",
        metavar="PATH",
        example="/usr/bin/chromium",
        path=PathKind.FILE,
    ),
    Option(
        ("--archived",),
        "find a copy in the web archive of each broken link that was once good, from "
        "before it broke, and show it in the report",
        field="archived",
        kind=Kind.FLAG,
        commands=(CHECK, FIX),
        help_on=(
            (
                FIX,
                "also rewrite broken links that were once good to their copy in the web "
                "archive, as the last check found it",
            ),
        ),
    ),
    Option(
        ("--archive-endpoint",),
        f"the web archive's availability API asked by --archived (default {ARCHIVE_ENDPOINT})",
        field="archive_endpoint",
        convert=web_address,
        metavar="URL",
    ),
    Option(
        ("--force",),
        "replace the file if it exists",
        kind=Kind.FLAG,
        commands=(INIT,),
        default=False,
    ),
)

# configuration key -> its option
BY_KEY: dict[str, Option] = {option.key: option for option in OPTIONS if option.key}


def options_of(command: str) -> tuple[Option, ...]:
    """The options of ``command``, in the order its help lists them."""
    return tuple(option for option in OPTIONS if command in option.commands)


__all__ = [
    "ARCHIVE_ENDPOINT",
    "BY_KEY",
    "COMMANDS",
    "DEFAULT_CONFIG",
    "OPTIONS",
    "Kind",
    "Option",
    "PathKind",
    "alternatives",
    "anchor_mode",
    "any_of",
    "did_you_mean",
    "hosts",
    "names",
    "one_of",
    "options_of",
    "parse_duration",
    "parse_size",
    "parse_status_list",
    "positive_seconds",
    "regexes",
    "remap_parts",
    "remaps",
    "seconds",
    "string",
    "strings",
    "true_or_false",
    "values",
    "web_address",
    "whole",
]
