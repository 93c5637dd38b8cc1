"""The ``linkpatrol`` command: parses options and calls the library, nothing more."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import gc
import os
import select
import signal
import stat
import sys
import threading
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeVar

from linkpatrol import __version__, build
from linkpatrol.config import (
    ANCHOR_MODES,
    DEFAULT_CONFIG,
    FAIL_ON,
    FORMATS,
    REDIRECT_MODES,
    SiteSettings,
    as_checked,
    build_settings,
    convert_option,
    field_for,
    load_file,
    report_options,
)
from linkpatrol.model import ConfigError, ExitCode, LinkpatrolError
from linkpatrol.report import Report, build_report, render_pieces
from linkpatrol.store import Store, open_store

if TYPE_CHECKING:
    from linkpatrol.report.json import Sharing

T = TypeVar("T")

# option dest -> config key, for the options that take a value
_VALUE_OPTIONS = (
    "db",
    "db_wait",
    "concurrency",
    "per_host",
    "delay",
    "timeout",
    "retries",
    "max_size",
    "max_depth",
    "max_urls",
    "max_similar",
    "max_requests",
    "max_time",
    "redirects",
    "user_agent",
    "from",
    "recheck_good",
    "follow_ghost",
    "report_after",
    "accept",
    "warn",
    "broken",
    "hooks",
    "plugins",
    "format",
    "output",
    "fail_on",
    "log",
    "parse_workers",
    "ca_bundle",
    "base_url",
    "root_dir",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, exit 2, like every other usage error
        self.exit(ExitCode.USAGE, f"linkpatrol: {message} (see linkpatrol --help)\n")


def _add_report_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=FORMATS, help="report format (default: text)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE")
    p.add_argument(
        "--check-anchors",
        action="store_true",
        default=None,
        help="a link to page#name is broken when the page has no element with that id or name "
        "(the site's pages; --check-anchors=all: outside pages too)",
    )
    p.add_argument("--check-anchors-mode", choices=ANCHOR_MODES, help=argparse.SUPPRESS)
    p.add_argument(
        "--xref",
        action="store_true",
        default=None,
        help="add the full cross-reference: for every URL, what links to it and what it links to",
    )
    p.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        help="verdicts that make the exit code 1: broken (default), or warning (broken or warning)",
    )
    p.add_argument(
        "--graph-hosts",
        action="store_true",
        default=None,
        help="--format dot: one node per outside host instead of one per outside URL",
    )
    p.add_argument(
        "--report-after",
        metavar="DURATION",
        help="report a broken URL only once it has failed for longer than this (default 0)",
    )
    p.add_argument(
        "--redirects",
        choices=REDIRECT_MODES,
        help="follow: a redirect is a page with one link (default); report: also list as warnings",
    )
    p.add_argument(
        "--config", metavar="FILE", help=f"configuration file (default: ./{DEFAULT_CONFIG})"
    )
    p.add_argument(
        "--db",
        metavar="PATH|URL",
        help="the memory: a SQLite file or a postgresql:// URL (default: linkpatrol.db)",
    )
    p.add_argument("-q", "--quiet", action="store_true", default=None, help="only the report")


def _add_memory_options(p: argparse.ArgumentParser) -> None:
    """The options of the commands that only read the memory and print."""
    p.add_argument(
        "--format",
        dest="print_format",  # not the report format, which the configuration may set
        choices=("text", "json"),
        default="text",
        help="output format (default: text)",
    )
    p.add_argument("--config", metavar="FILE", help="configuration file")
    p.add_argument("--db", metavar="PATH|URL", help="the memory (default: linkpatrol.db)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="linkpatrol",
        description="A website link checker with a memory.",
    )
    parser.add_argument(
        "--version", action="version", version=f"linkpatrol {__version__} ({build()})"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    check = commands.add_parser(
        "check", help="crawl from the start URLs, check every link, report the broken ones"
    )
    check.add_argument(
        "urls",
        nargs="*",
        metavar="URL|PATH",
        help="start URLs, local folders or files, or '-' for URLs on stdin (or 'start' in config)",
    )
    _add_report_options(check)
    check.add_argument(
        "--site",
        action="append",
        metavar="PREFIX",
        help="URLs under PREFIX are part of the site and parsed (repeatable)",
    )
    add = check.add_argument
    add(
        "--base-url",
        metavar="URL",
        help="where the local folder is served: root-relative links and links to this URL "
        "are checked against the files",
    )
    add(
        "--root-dir",
        metavar="DIR",
        help="the folder root-relative links (/x) of local files resolve from "
        "(default: a site folder given alone, else the current folder)",
    )
    add(
        "--offline",
        action="store_true",
        default=None,
        help="request nothing over the network: outside links are recorded, not checked",
    )
    add(
        "--sitemap",
        action="append",
        metavar="URL|FILE",
        help="check every URL listed in this sitemap (repeatable)",
    )
    add("--concurrency", metavar="N", help="requests in flight at once (default 64)")
    add("--per-host", metavar="N", help="requests in flight to one host (default 8)")
    add("--delay", metavar="DURATION", help="pause between requests to one host (default 0)")
    add("--timeout", metavar="DURATION", help="per-request timeout (default 15s)")
    add("--retries", metavar="N", help="retries of transient failures (default 2)")
    add("--max-size", metavar="SIZE", help="largest HTML page read (default 10MB)")
    add("--max-depth", metavar="N", help="most path segments in a URL requested (default 20)")
    add("--max-urls", metavar="N", help="most URLs in one pass (default 100000)")
    add(
        "--max-similar",
        metavar="N",
        help="most URLs differing only in number-only segments, e.g. calendar pages (default 3000)",
    )
    add("--max-requests", metavar="N", help="stop after N requests (exit 3; resumable)")
    add("--max-time", metavar="DURATION", help="stop after this long, e.g. 90m (exit 3)")
    add(
        "--db-wait",
        metavar="DURATION",
        help="how long a crawl waits for a lost PostgreSQL connection (default 60s)",
    )
    add("--no-robots", action="store_true", default=None, help="ignore robots.txt (impolite)")
    add("--user-agent", metavar="UA", help=f"User-Agent (default linkpatrol/{__version__})")
    add("--from", metavar="EMAIL", help="operator's e-mail address, sent as the From header")
    add(
        "--recheck-good",
        metavar="DURATION",
        help="trust a URL found good more recently than this (default 0)",
    )
    add(
        "--follow-ghost",
        metavar="DURATION",
        help="follow a failing page's remembered links this long after it was good (default 7d)",
    )
    add("--accept", metavar="STATUSES", help="statuses that are also ok, e.g. 999,403")
    add("--warn", metavar="STATUSES", help="statuses that are warnings (besides 401,403,429,999)")
    add("--broken", metavar="STATUSES", help="statuses that are broken, e.g. 403,999")
    add("--hooks", metavar="FILE", help="Python file defining action(url) and/or rewrite(url)")
    add(
        "--plugins",
        metavar="NAMES",
        help="plugins to run, by name or package.module:Class, separated by commas ('' for none)",
    )
    add("-v", "--verbose", action="count", default=None, help="-v: a line per URL; -vv: debug")
    add("--log", metavar="FILE", help="append timestamped lines of what was requested and why")
    add(
        "--no-progress",
        action="store_true",
        default=None,
        help="no live progress display even on a terminal",
    )
    add("--parse-workers", metavar="N", help="parser processes (default: one per core)")
    add(
        "--ca-bundle",
        metavar="FILE",
        help="PEM file of extra CA certificates to trust, for every host",
    )
    add(
        "--insecure",
        action="append",
        metavar="HOST",
        help="do not verify HOST's TLS certificate (HOST or HOST:PORT; '*': all; repeatable)",
    )
    add(
        "--no-private",
        action="store_true",
        default=None,
        help="refuse private, loopback and link-local addresses (the site's own hosts excepted)",
    )

    report = commands.add_parser("report", help="print the last pass's report from the memory")
    _add_report_options(report)

    history = commands.add_parser(
        "history", help="one URL's verdicts over time, and the pages that link to it"
    )
    history.add_argument("url", metavar="URL", help="the URL, spelled any equivalent way")
    _add_memory_options(history)

    status = commands.add_parser("status", help="where the latest pass stands, while it runs")
    _add_memory_options(status)

    init = commands.add_parser(
        "init", help="write a commented linkpatrol.toml with every key and its default"
    )
    init.add_argument("urls", nargs="+", metavar="URL", help="the start URLs")
    init.add_argument(
        "--config", metavar="FILE", default=DEFAULT_CONFIG, help=f"file to write ({DEFAULT_CONFIG})"
    )
    init.add_argument("--force", action="store_true", help="replace the file if it exists")

    completion = commands.add_parser("completion", help="print a shell completion script")
    completion.add_argument("shell", choices=("bash", "zsh", "tcsh"))

    serve = commands.add_parser(
        "serve", help="a read-only web dashboard over the memory, live while a crawl runs"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="port to listen on (8080)")
    serve.add_argument("--config", metavar="FILE", help="configuration file")
    serve.add_argument("--db", metavar="PATH|URL", help="the memory (default: linkpatrol.db)")
    return parser


def _settings(args: argparse.Namespace) -> SiteSettings:
    config_path = args.config
    file_values: dict[str, Any] = {}
    if config_path:
        file_values = load_file(Path(config_path))
    elif Path(DEFAULT_CONFIG).is_file():
        file_values = load_file(Path(DEFAULT_CONFIG))
    return build_settings(file_values, _command_line(args))


def _given(args: argparse.Namespace) -> set[str]:
    """The settings the user gives this command: on its command line, or in a configuration
    file named there (not the one it finds in the folder, which the check read too)."""
    given = set(_command_line(args))
    if args.config:
        given.update(load_file(Path(args.config)))
    return given


def _command_line(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given on the command line, by field."""
    cli: dict[str, Any] = {}
    for key in _VALUE_OPTIONS:
        value = getattr(args, key, None)
        if value is not None:
            cli[field_for(key)] = convert_option(key, value)
    if getattr(args, "urls", None):
        cli["start_urls"] = tuple(args.urls)
    if getattr(args, "site", None):
        cli["sites"] = tuple(args.site)
    if getattr(args, "no_robots", None):
        cli["robots"] = False
    if getattr(args, "xref", None):
        cli["xref"] = True
    if getattr(args, "check_anchors", None):
        cli["check_anchors"] = "site"
    if getattr(args, "check_anchors_mode", None):
        cli["check_anchors"] = args.check_anchors_mode
    if getattr(args, "offline", None):
        cli["offline"] = True
    if getattr(args, "sitemap", None):
        cli["sitemap"] = tuple(args.sitemap)
    if getattr(args, "graph_hosts", None):
        cli["graph_hosts"] = True
    if getattr(args, "quiet", None):
        cli["quiet"] = True
    if getattr(args, "verbose", None):
        cli["verbose"] = min(2, args.verbose)
    if getattr(args, "no_progress", None):
        cli["progress"] = False
    if getattr(args, "insecure", None):
        cli["insecure"] = convert_option("insecure", args.insecure)
    if getattr(args, "no_private", None):
        cli["no_private"] = True
    return cli


def _sharing(settings: SiteSettings) -> Sharing | None:
    """A helper process for half of a big JSON report, forked now, while the command has
    one thread; none where it could not open the memory."""
    from linkpatrol.store.sqlite import MEMORY_ONLY

    if settings.format != "json" or settings.db == MEMORY_ONLY:
        return None
    from linkpatrol.helper import Helper
    from linkpatrol.report.json import Sharing

    helper = Helper.start()
    return None if helper is None else Sharing(helper, settings.db)


def _stop_sharing(sharing: Sharing | None) -> None:
    if sharing is None:
        return
    sharing.helper.close()
    for failure in sharing.failures:  # the report is whole all the same
        sys.stderr.write(f"linkpatrol: the report's helper process failed ({failure})\n")


def _emit(report: Report, settings: SiteSettings, sharing: Sharing | None = None) -> None:
    if settings.quiet and report.complete and not report.failing and settings.format == "text":
        return
    pieces = render_pieces(report, settings.format, sharing=sharing)
    if settings.output:
        try:
            out = open(settings.output, "w", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise LinkpatrolError(f"{settings.output}: cannot write report: {_why(exc)}") from None
        try:
            with out:
                out.writelines(pieces)
        except BaseException as exc:
            _discard(settings.output)
            if isinstance(exc, OSError):
                raise LinkpatrolError(
                    f"{settings.output}: cannot write report: {_why(exc)}"
                ) from None
            raise
    else:
        try:
            _to_stdout(pieces)
        except BrokenPipeError:
            raise
        except OSError as exc:
            _stdout_to_nowhere()
            raise LinkpatrolError(f"standard output: cannot write report: {_why(exc)}") from None


STDOUT_CHUNK = 1 << 16  # characters of the report encoded and written at once


def _to_stdout(pieces: Iterable[str]) -> None:
    """Write the pieces to standard output whole, in big chunks.

    Python's own text layer drops what a write leaves unwritten when standard output is
    unbuffered (``python -u``, ``PYTHONUNBUFFERED``): the rest of a chunk that a pipe took
    in part, or all of one that a pipe made non-blocking (by a process that shares it)
    refused while full. Here what is left is written again, once the pipe has room.
    """
    out = sys.stdout
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):
        fd = -1
    if fd < 0:  # standard output replaced by an object of the caller's
        out.writelines(pieces)
        out.flush()
        return
    out.flush()
    encoding, errors = out.encoding or "utf-8", out.errors or "strict"
    chunk: list[str] = []
    size = 0
    for piece in pieces:
        chunk.append(piece)
        size += len(piece)
        if size >= STDOUT_CHUNK:
            _write_all(fd, "".join(chunk).encode(encoding, errors))
            chunk, size = [], 0
    if chunk:
        _write_all(fd, "".join(chunk).encode(encoding, errors))


def _write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd``, however little each write takes."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [], 1.0)
            continue
        view = view[written:]


def _why(exc: OSError) -> str:
    """Why a report could not be written; on a full disk, that the memory still has it."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return (
            f"disk full ({exc.strerror}); the memory keeps the pass, "
            "'linkpatrol report' writes it again"
        )
    return exc.strerror or str(exc)


def _discard(path: str) -> None:
    """Remove a report file cut short: no half report for a reader to trust."""
    with contextlib.suppress(OSError):
        if stat.S_ISREG(os.stat(path).st_mode):  # never a device or a pipe named as output
            os.unlink(path)


def _exit_code(report: Report) -> ExitCode:
    if not report.complete:
        return ExitCode.STOPPED
    return ExitCode.BROKEN if report.failing else ExitCode.CLEAN


def _check_output(settings: SiteSettings) -> None:
    """Refuse an --output that cannot be written before the crawl, not after it."""
    if not settings.output:
        return
    folder = Path(settings.output).parent
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise LinkpatrolError(f"{settings.output}: cannot write report: no writable folder")
    if Path(settings.output).is_dir():
        raise LinkpatrolError(f"{settings.output}: cannot write report: is a folder")


def _check_log(settings: SiteSettings) -> None:
    """Refuse a --log that cannot be appended to before anything is written."""
    if not settings.log:
        return
    log = Path(settings.log)
    if log.is_dir():
        raise LinkpatrolError(f"{settings.log}: cannot open log file: is a folder")
    target = log if log.exists() else log.parent
    if not target.exists() or not os.access(target, os.W_OK):
        raise LinkpatrolError(f"{settings.log}: cannot open log file: not writable")


YOUNG_OBJECTS = 20_000  # the garbage collector's first threshold in a crawl (Python's: 700)


@contextlib.contextmanager
def _collecting_less() -> Iterator[None]:
    """A crawl makes objects by the million that die young, and few cycles: while it runs,
    what exists when it starts (modules, settings) is left out of collections, and the
    young generation is collected less often."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(YOUNG_OBJECTS, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def _run_check(settings: SiteSettings) -> ExitCode:
    import asyncio

    from linkpatrol.crawl import Crawl
    from linkpatrol.inputs import prepare
    from linkpatrol.loops import event_loop_factory
    from linkpatrol.plugins.host import PluginObserver, load_plugins
    from linkpatrol.progress import ConsoleObserver
    from linkpatrol.sites import check_environment

    if not settings.start_urls and not settings.sitemap:
        raise LinkpatrolError(
            "no start URL: give URLs, folders or files, --sitemap, or 'start' in the config"
        )
    _note_early_signals()
    settings = prepare(settings, sys.stdin)
    if not settings.start_urls:
        raise LinkpatrolError("no start URL: the inputs listed none")
    check_environment(settings.site_tables)  # a secret not set: refused before any write
    _check_output(settings)
    _check_log(settings)
    plugins = load_plugins(settings.plugins, settings.plugin_options)  # refused before any write
    sharing = _sharing(settings)  # before the memory's connection pool starts its threads
    try:
        # a bad memory is refused before the log
        store = open_store(settings.db, crawl=True, outage_wait=settings.db_wait)
    except BaseException:
        _stop_sharing(sharing)
        raise
    try:
        observer = ConsoleObserver(settings, sys.stderr, show_progress=_wants_progress(settings))
    except BaseException:
        store.close()
        _stop_sharing(sharing)
        raise
    if not settings.robots:
        observer.note("robots.txt is ignored (--no-robots): be sure the sites allow this")
    try:
        watcher = PluginObserver(observer, plugins) if plugins else None
        crawl = Crawl(settings, store, watcher or observer)
        with _collecting_less(), asyncio.Runner(loop_factory=event_loop_factory()) as runner:
            result = runner.run(_with_signals(crawl, observer))
        if result.stop_reason in ("SIGINT", "SIGTERM", "SIGHUP"):
            # the runner restores the default handler on its way out
            signal.signal(signal.SIGINT, lambda *_: _exit_at_once())
        report = build_report(store, result.pass_info, report_options(settings))
        if watcher is not None:
            watcher.finish(store, result.pass_info, report)
        observer.close()
        _emit(report, settings, sharing)  # read URL by URL from the memory: before it is closed
        # the pass's figures as its report gave them, for the charts of later reports
        store.save_counts(report.pass_id, len(report.broken), len(report.warnings))
    finally:
        observer.close()
        store.close()
        _stop_sharing(sharing)
    if result.stop_reason in ("SIGINT", "SIGTERM", "SIGHUP"):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # all is said: a late Ctrl-C changes nothing
    # nor a SIGTERM or SIGHUP, even once Python, shutting down, has dropped its handlers
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGHUP})
    return _exit_code(report)


async def _with_signals(crawl: Any, observer: Any) -> Any:
    import asyncio

    loop = asyncio.get_running_loop()
    received: list[int] = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        if len(received) > 1 and signum == signal.SIGINT:
            _exit_at_once()
        observer.note(f"{signal.Signals(signum).name}: stopping, saving, writing the report")
        crawl.stop(signal.Signals(signum).name)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, on_signal, signum)
    while _early:  # came while the run was being prepared: it stops before any request
        on_signal(_early.pop(0))
    try:
        return await crawl.run()
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(signum)
        _report_first()
        if received:  # a second Ctrl-C while the report is written still exits at once
            signal.signal(signal.SIGINT, lambda *_: _exit_at_once())


_early: list[int] = []


def _note_early_signals() -> None:
    """Until the crawl's own handlers are in place, SIGTERM and SIGHUP are noted, not
    fatal: the crawl then stops at once and ends the way any stop does (exit 3)."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda received, frame: _early.append(received))


def _report_first() -> None:
    """Once the crawl is over, SIGTERM and SIGHUP let the report be written whole.

    The memory already has all of the pass; cut short, the report would be a torso a
    reader might trust. A second signal leaves at once.
    """
    late: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        if late:
            _exit_at_once()
        late.append(signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, on_signal)


STOPPED_AT_ONCE = "stopped at once; the memory is consistent, run again to resume"


def _exit_at_once() -> None:
    """The second Ctrl-C: leave now; every write so far was a whole transaction."""
    sys.stderr.write(f"linkpatrol: {STOPPED_AT_ONCE}\n")
    os._exit(ExitCode.STOPPED)


def _wants_progress(settings: SiteSettings) -> bool:
    if settings.quiet or settings.verbose or settings.progress is False:
        return False
    return sys.stdout.isatty() and sys.stderr.isatty()


def _read_memory(settings: SiteSettings, query: Callable[[Store], T]) -> T:
    """What ``query`` reads from the memory, opened for reading only."""
    store = open_store(settings.db, crawl=False)
    try:
        return query(store)
    finally:
        store.close()


def _run_report(settings: SiteSettings, given: Collection[str]) -> ExitCode:
    """The last pass's report as it was checked, but for the report options ``given`` on
    the command line."""

    def written(store: Store) -> Report:
        info = store.latest_pass()
        options = as_checked(info.options if info else None, settings, given)
        report = build_report(store, info, options)
        _emit(report, settings, sharing)  # read URL by URL from the memory: before it is closed
        return report

    sharing = _sharing(settings)
    try:
        return _exit_code(_read_memory(settings, written))
    finally:
        _stop_sharing(sharing)


def _run_history(settings: SiteSettings, url: str, format_: str) -> ExitCode:
    from linkpatrol.report.history import load_history, render_history_json, render_history_text

    history = _read_memory(settings, lambda store: load_history(store, url))
    text = render_history_json(history) if format_ == "json" else render_history_text(history)
    sys.stdout.write(text)
    return ExitCode.CLEAN


def _run_init(
    parser: argparse.ArgumentParser, urls: list[str], path: Path, force: bool, err: TextIO
) -> ExitCode:
    from linkpatrol.template import config_template
    from linkpatrol.urls import BadURL, canonical

    starts = []
    for url in urls:
        try:
            starts.append(canonical(url))
        except BadURL as exc:
            raise ConfigError(f"{url}: not a URL ({exc})") from None
    text = config_template(starts, parser)
    try:
        with open(path, "w" if force else "x", encoding="utf-8") as out:
            out.write(text)
    except FileExistsError:
        raise ConfigError(f"{path}: already exists (--force replaces it)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc.strerror}") from None
    err.write(f"linkpatrol: wrote {path}; run 'linkpatrol check' to crawl with it\n")
    return ExitCode.CLEAN


def _run_status(settings: SiteSettings, format_: str) -> ExitCode:
    from linkpatrol.report.status import pass_status, render_status_json, render_status_text

    status = _read_memory(settings, pass_status)
    sys.stdout.write(
        render_status_json(status) if format_ == "json" else render_status_text(status)
    )
    return ExitCode.CLEAN


def _spelled_out(argv: list[str]) -> list[str]:
    """``--check-anchors=all``: the flag with a value, spelled for the parser."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "--":
            return out + argv[i:]
        if arg.startswith("--check-anchors="):
            out += ["--check-anchors-mode", arg.partition("=")[2]]
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None, stderr: TextIO | None = None) -> int:
    err = stderr or sys.stderr
    parser = build_parser()
    args = parser.parse_args(_spelled_out(sys.argv[1:] if argv is None else argv))
    if args.command is None:
        parser.print_help(err)
        return ExitCode.USAGE
    try:
        if args.command in ("history", "status"):
            if args.command == "status":
                return _run_status(_settings(args), args.print_format)
            return _run_history(_settings(args), args.url, args.print_format)
        if args.command == "init":
            return _run_init(parser, args.urls, Path(args.config), args.force, err)
        if args.command == "completion":
            import shtab

            sys.stdout.write(shtab.complete(parser, args.shell))
            return ExitCode.CLEAN
        if args.command == "serve":
            from linkpatrol.dashboard import run_dashboard

            return run_dashboard(_settings(args).db, args.host, args.port, err)
        settings = _settings(args)
        if args.command == "check":
            return _run_check(settings)
        return _run_report(settings, _given(args))
    except LinkpatrolError as exc:
        err.write(f"linkpatrol: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        err.write(f"linkpatrol: {STOPPED_AT_ONCE}\n")
        return ExitCode.STOPPED


def run() -> NoReturn:
    """The ``linkpatrol`` command: :func:`main`, then a quick exit.

    Once all is written, Python's teardown of the run's objects (50 ms after a crawl of
    2,000 pages) is skipped; at-exit handlers still run, threads a plugin left running are
    waited for as Python waits for them, and under a profiler Python ends as usual. A
    reader that stops reading (``| head``) ends the command as it ends any filter: by
    SIGPIPE, with nothing more said.
    """
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        _end_of_pipe()
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)  # a profiler or a coverage tool says its piece once the command returns
    main_thread = threading.main_thread()
    if any(t.is_alive() and not t.daemon and t is not main_thread for t in threading.enumerate()):
        sys.exit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        _end_of_pipe()
    except OSError:
        sys.exit(code)  # Python says what could not be written, as it would have
    os._exit(code)


def _stdout_to_nowhere() -> None:
    """What could not be written goes nowhere, so that exiting does not try again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _end_of_pipe() -> NoReturn:
    """Standard output's reader has gone: end as a filter does, by SIGPIPE."""
    _stdout_to_nowhere()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGPIPE)
    sys.exit(128 + signal.SIGPIPE)  # the signal is blocked: the code a shell would show
