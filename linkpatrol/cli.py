"""The ``linkpatrol`` command: parses options and calls the library, nothing more."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import os
import select
import signal
import stat
import sys
import threading
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from linkpatrol import __version__, _uncollected, build
from linkpatrol.config import (
    DEFAULT_CONFIG,
    SiteSettings,
    as_checked,
    build_settings,
    load_file,
)
from linkpatrol.model import ConfigError, ExitCode, LinkpatrolError, ReportFormat, StoreError
from linkpatrol.options import COMMANDS, OPTIONS, Kind, Option, did_you_mean, options_of
from linkpatrol.report import Report, build_report, render_pieces
from linkpatrol.store import PassInfo, ReadMemory, Store, read_memory, starts_named

if TYPE_CHECKING:
    from linkpatrol.checker import Check
    from linkpatrol.crawl import CrawlResult
    from linkpatrol.observer import Observer
    from linkpatrol.report.json import Sharing


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, exit 2, like every other usage error
        self.exit(ExitCode.USAGE, f"linkpatrol: {_as_typed(message)} (see linkpatrol --help)\n")


_ACTIONS = {
    Kind.FLAG: "store_true",
    Kind.NEGATED: "store_false",
    Kind.REPEATABLE: "append",
    Kind.COUNT: "count",
}


def _add(parser: argparse.ArgumentParser, option: Option, command: str) -> None:
    """``option`` as ``command``'s parser takes it: a setting's is None when not given."""
    help_ = option.help_for(command) or None
    choices = option.choices or None
    if option.kind is Kind.ARGUMENT:
        parser.add_argument(
            option.dest, nargs=option.nargs, metavar=option.metavar, choices=choices, help=help_
        )
        return
    spelled: dict[str, Any] = {"dest": option.dest, "default": option.default, "help": help_}
    if option.kind in _ACTIONS:
        spelled["action"] = _ACTIONS[option.kind]
    if option.kind in (Kind.VALUE, Kind.REPEATABLE):
        spelled["metavar"] = option.metavar
    if option.kind in (Kind.VALUE, Kind.CHOICE) and not option.field:
        spelled["type"] = option.convert  # a command's own: converted as it is parsed
    if option.bare is not None:  # given alone, or as --name=VALUE (see _spelled_out)
        spelled.update(action="store_const", const=option.bare)
    elif choices:
        spelled["choices"] = choices
    parser.add_argument(*option.flags, **spelled)
    if option.bare is not None:
        parser.add_argument(
            option.valued, dest=option.dest, choices=choices, help=argparse.SUPPRESS
        )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="linkpatrol",
        description="A website link checker with a memory.",
    )
    parser.add_argument(
        "--version", action="version", version=f"linkpatrol {__version__} ({build()})"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for command, help_ in COMMANDS:
        sub = commands.add_parser(command, help=help_)
        for option in options_of(command):
            _add(sub, option, command)
    return parser


def _completion(parser: argparse.ArgumentParser, shell: str) -> str:
    """The shell's completion script, which completes a path with the names of files (or
    folders) where an option takes one."""
    import shtab

    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command, command_parser in sub.choices.items():
        paths = {option.dest: option.path for option in options_of(command) if option.path}
        for action in command_parser._actions:
            if action.dest in paths and action.help != argparse.SUPPRESS:
                action.complete = getattr(shtab, paths[action.dest].value)
    return shtab.complete(parser, shell)


def _settings(args: argparse.Namespace) -> SiteSettings:
    return _settings_given(args)[0]


def _settings_given(args: argparse.Namespace) -> tuple[SiteSettings, set[str]]:
    """The settings, and those the user gives this command: on its command line, or in a
    configuration file named there (not the one found in the folder, which the check read
    too)."""
    file_values: dict[str, Any] = {}
    if args.config:
        file_values = load_file(Path(args.config))
    elif Path(DEFAULT_CONFIG).is_file():
        file_values = load_file(Path(DEFAULT_CONFIG))
    cli = _command_line(args)
    given = set(cli) | (set(file_values) if args.config else set())
    return build_settings(file_values, cli), given


def _command_line(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given on the command line, by field."""
    cli: dict[str, Any] = {}
    for option in OPTIONS:
        if not option.field or args.command not in option.commands:
            continue
        value = getattr(args, option.dest)
        if value is not None and value != []:
            cli[option.field] = option.given(value)
    return cli


def _sharing(settings: SiteSettings) -> Sharing | None:
    """Where a big JSON report can be shared with a helper process (started once the
    report's size is known); none where it could not open the memory."""
    from linkpatrol.store.sqlite import MEMORY_ONLY

    if settings.format is not ReportFormat.JSON or settings.db == MEMORY_ONLY:
        return None
    from linkpatrol.report.json import Sharing

    return Sharing(settings.db)


def _stop_sharing(sharing: Sharing | None) -> None:
    if sharing is None:
        return
    sharing.close()
    for failure in sharing.failures:  # the report is whole all the same
        sys.stderr.write(f"linkpatrol: the report's helper process failed ({failure})\n")


def _emit(report: Report, settings: SiteSettings, sharing: Sharing | None = None) -> None:
    if (
        settings.quiet
        and (not report.complete or not report.failing)
        and settings.format is ReportFormat.TEXT
    ):
        return  # -q: said once a pass completes with something to say
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
        if not settings.quiet:
            sys.stderr.write(f"linkpatrol: {_found(report)}; the report is in {settings.output}\n")
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


def _check_output(settings: SiteSettings) -> None:
    """Refuse an --output that cannot be written before the crawl, not after it."""
    if not settings.output:
        return
    folder = Path(settings.output).parent
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise LinkpatrolError(f"{settings.output}: cannot write report: no writable folder")
    if Path(settings.output).is_dir():
        raise LinkpatrolError(f"{settings.output}: cannot write report: is a folder")


def _run_check(settings: SiteSettings) -> ExitCode:
    with _uncollected():  # the crawl's modules
        import asyncio

        from linkpatrol.checker import Check, collecting_less
        from linkpatrol.loops import event_loop_factory
        from linkpatrol.progress import ConsoleObserver

    _note_early_signals()
    check = Check(settings, stdin=sys.stdin)  # bad input refused before any write
    settings = check.settings
    _check_output(settings)
    sharing = _sharing(settings)
    try:
        check.open()  # a bad memory is refused before the log
        observer = ConsoleObserver(settings, sys.stderr, show_progress=_wants_progress(settings))
    except BaseException:
        check.close()
        _stop_sharing(sharing)
        raise

    def render(report: Report) -> None:
        observer.close()
        if not report.complete and settings.format is ReportFormat.TEXT:
            report.extra["resume"] = _resume_command()
        _emit(report, settings, sharing)
        if (nothing := report.nothing_requested) is not None:  # even with -q
            sys.stderr.write(f"linkpatrol: {nothing[0].lower()}{nothing[1:]}\n")

    try:
        with collecting_less(), asyncio.Runner(loop_factory=event_loop_factory()) as runner:
            crawled = runner.run(_with_signals(check, observer))
        if crawled.stop_reason in ("SIGINT", "SIGTERM", "SIGHUP"):
            # the runner restores the default handler on its way out
            signal.signal(signal.SIGINT, lambda *_: _exit_at_once())
        if sharing is not None:  # it starts up while the report is read
            sharing.start(crawled.pass_info.seen)
        result = check.finish(render)
    finally:
        observer.close()
        check.close()
        _stop_sharing(sharing)
    if result.stop_reason in ("SIGINT", "SIGTERM", "SIGHUP"):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # all is said: a late Ctrl-C changes nothing
    # nor a SIGTERM or SIGHUP, even once Python, shutting down, has dropped its handlers
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGHUP})
    return result.exit_code


async def _with_signals(check: Check, observer: Observer) -> CrawlResult:
    import asyncio

    loop = asyncio.get_running_loop()
    received: list[int] = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        if len(received) > 1 and signum == signal.SIGINT:
            _exit_at_once()
        observer.note(f"{signal.Signals(signum).name}: stopping, saving, writing the report")
        check.stop(signal.Signals(signum).name)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, on_signal, signum)
    while _early:  # came while the run was being prepared: it stops before any request
        on_signal(_early.pop(0))
    try:
        return await check.crawl(observer)
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


def _resume_command() -> str:
    """The command as it was typed, to be typed again to resume the pass."""
    import shlex

    return shlex.join(["linkpatrol", *sys.argv[1:]])


def _found(report: Report) -> str:
    """What a pass found, in words: for a line on stderr when the report went to a file."""
    said = report.counted
    if not report.complete:
        said += f" so far (stopped by {report.stop_reason or 'an interruption'})"
    return said


def _wants_progress(settings: SiteSettings) -> bool:
    """The live line, on stderr, when a person watches it: also while the report goes to a
    file or a pipe."""
    if settings.quiet or settings.verbose or settings.progress is False:
        return False
    return sys.stderr.isatty()


def _asked_pass(store: ReadMemory, settings: SiteSettings, given: Collection[str]) -> PassInfo:
    """The pass a reading command shows: the latest pass, or the latest of the start
    values it names (on its command line, or in a configuration file named there): a
    memory keeps the passes of each set of start values."""
    from linkpatrol.local import resolve_inputs
    from linkpatrol.urls import BadURL, canonical, is_http

    values: tuple[str, ...] = settings.start_urls if "start_urls" in given else ()
    starts: tuple[str, ...] = ()
    if values:
        with contextlib.suppress(LinkpatrolError, BadURL):
            resolved = resolve_inputs(
                values, settings.base_url, Path.cwd(), settings.max_urls, settings.root_dir
            )
            starts = tuple(canonical(u) if is_http(u) else u for u in resolved.start_urls)
    info = store.latest_pass(values, starts)
    if info is None and values:
        raise StoreError(
            f"{store.location}: no pass of {', '.join(starts_named(values, starts))} "
            "recorded (run 'linkpatrol check' with them first)"
        )
    if info is None:
        raise StoreError(f"{store.location}: no pass recorded yet (run 'linkpatrol check' first)")
    return info


def _run_report(settings: SiteSettings, given: Collection[str]) -> ExitCode:
    """The last pass's report as it was checked, but for the report options ``given`` on
    the command line."""

    def written(store: Store) -> Report:
        info = _asked_pass(store, settings, given)
        if sharing is not None:  # it starts up while the report is read
            sharing.start(info.seen)
        options = as_checked(info.options if info else None, settings, given)
        report = build_report(store, info, options, baseline)
        _emit(report, settings, sharing)  # read URL by URL from the memory: before it is closed
        return report

    # a baseline given to this command, not the pass's own (kept with it), is read first
    given_baseline = settings.baseline if "baseline" in given else None
    baseline = None
    if given_baseline:
        from linkpatrol.report.baseline import read_baseline

        baseline = read_baseline(given_baseline)
    sharing = _sharing(settings)
    try:
        return read_memory(settings.db, written).exit_code
    finally:
        _stop_sharing(sharing)


def _run_history(settings: SiteSettings, url: str, format_: str) -> ExitCode:
    from linkpatrol.report.history import load_history, render_history_json, render_history_text

    history = read_memory(settings.db, lambda store: load_history(store, url))
    text = render_history_json(history) if format_ == "json" else render_history_text(history)
    sys.stdout.write(text)
    return ExitCode.CLEAN


def _start_value(value: str, cwd: Path) -> str:
    """A start value for the file ``init`` writes: a URL in its canonical form, a path as
    given (read, as ``check`` reads it, from the folder ``check`` runs in)."""
    from linkpatrol.inputs import check_start_value
    from linkpatrol.local import is_local_input
    from linkpatrol.urls import canonical

    check_start_value(value, cwd)
    if not is_local_input(value):
        return canonical(value)
    if not value.startswith("file:") and not (cwd / value).exists():
        raise ConfigError(f"{value}: neither a URL nor an existing file or folder")
    return value


def _run_init(values: list[str], path: Path, force: bool, err: TextIO) -> ExitCode:
    from linkpatrol.template import config_template

    text = config_template([_start_value(value, Path.cwd()) for value in values])
    try:
        with open(path, "w" if force else "x", encoding="utf-8") as out:
            out.write(text)
    except FileExistsError:
        raise ConfigError(f"{path}: already exists (--force replaces it)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc.strerror}") from None
    err.write(f"linkpatrol: wrote {path}; run 'linkpatrol check' to crawl with it\n")
    return ExitCode.CLEAN


def _run_status(settings: SiteSettings, given: Collection[str], format_: str) -> ExitCode:
    from linkpatrol.report.status import pass_status, render_status_json, render_status_text

    status = read_memory(
        settings.db, lambda store: pass_status(store, _asked_pass(store, settings, given))
    )
    sys.stdout.write(
        render_status_json(status) if format_ == "json" else render_status_text(status)
    )
    return ExitCode.CLEAN


def _run_fix(settings: SiteSettings, write: bool, err: TextIO) -> ExitCode:
    """The local files' links that moved for good, rewritten: printed as a diff (exit 1
    when there is one), or written; files that changed since the pass are left alone,
    each named on stderr (exit 4)."""
    from linkpatrol.fix import file_fixes, unified_diff

    cwd = Path.cwd()
    code = ExitCode.CLEAN
    fixed = links = 0
    for fix in file_fixes(settings, cwd):
        shown = os.path.relpath(fix.path, cwd)
        if fix.refused is not None:
            err.write(f"linkpatrol: {shown}: {fix.refused}\n")
            code = ExitCode.CHANGED
            continue
        fixed += 1
        links += fix.rewritten
        if write:
            try:
                fix.path.write_text(fix.after, encoding="utf-8", newline="")
            except OSError as exc:
                raise ConfigError(f"{shown}: cannot write: {exc.strerror}") from None
        else:
            sys.stdout.write(unified_diff(fix, cwd))
            code = max(code, ExitCode.BROKEN)
    if write and fixed:
        err.write(f"linkpatrol: rewrote {links} link(s) in {fixed} file(s)\n")
    return code


# the options that may stand alone or take a value, by the name the user types
_BARE = {option.flags[-1]: option for option in OPTIONS if option.bare is not None}


def _spelled_out(argv: list[str]) -> list[str]:
    """``--check-anchors=all`` or ``--check-anchors all``: an option that may stand alone,
    with a value, spelled for the parser. Only one of its values right after it is taken
    as its value: ``--check-anchors https://x/`` is the option alone and a start URL."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return out + argv[i:]
        name, equals, value = arg.partition("=")
        option = _BARE.get(name)
        if option is not None and equals:
            out += [option.valued, value]
        elif option is not None and i + 1 < len(argv) and argv[i + 1] in option.choices:
            out += [option.valued, argv[i + 1]]
            i += 1
        else:
            out.append(arg)
        i += 1
    return out


def _as_typed(message: str) -> str:
    """A parser's message with the options the parser alone knows named as the user types
    them."""
    for name, option in _BARE.items():
        message = message.replace(option.valued, name)
    return message


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """The arguments, or a usage error that names the command or option meant, if one is
    close to what was typed."""
    typed = _spelled_out(argv)
    word = next((arg for arg in typed if not arg.startswith("-")), None)
    commands = [command for command, _ in COMMANDS]
    if word is not None and word not in commands:
        hint = did_you_mean(word, commands) or f" (choose from {', '.join(commands)})"
        parser.error(f"unknown command '{word}'{hint}")
    args, unknown = parser.parse_known_args(typed)
    if unknown:
        known = ["-h", "--help"] if args.command else ["-h", "--help", "--version"]
        for option in options_of(args.command) if args.command else ():
            known += [flag for flag in option.flags if flag.startswith("-")]
        hints = (did_you_mean(arg.partition("=")[0], known) for arg in unknown if arg[:1] == "-")
        parser.error(f"unrecognized arguments: {' '.join(unknown)}{next(filter(None, hints), '')}")
    return args


def main(argv: list[str] | None = None, stderr: TextIO | None = None) -> int:
    err = stderr or sys.stderr
    parser = build_parser()
    args = _parse(parser, sys.argv[1:] if argv is None else argv)
    if args.command is None:
        parser.print_help(err)
        return ExitCode.USAGE
    try:
        if args.command in ("history", "status"):
            if args.command == "status":
                return _run_status(*_settings_given(args), args.print_format)
            return _run_history(_settings(args), args.url, args.print_format)
        if args.command == "init":
            return _run_init(args.urls, Path(args.config), args.force, err)
        if args.command == "completion":
            sys.stdout.write(_completion(parser, args.shell))
            return ExitCode.CLEAN
        if args.command == "serve":
            from linkpatrol.dashboard import run_dashboard

            return run_dashboard(_settings(args).db, args.host, args.port, err)
        if args.command == "mcp":
            from linkpatrol.mcp import run_mcp

            return run_mcp(_settings(args))
        settings, given = _settings_given(args)
        if args.command == "fix":
            return _run_fix(settings, args.write, err)
        if args.command == "check":
            return _run_check(settings)
        return _run_report(settings, given)
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
