"""``linkpatrol mcp``: the memory's answers as the tools of a Model Context Protocol server
on standard input and output, for the MCP clients that ask a program questions.

The server is bound to one memory, the ``--db`` it was started with: the tools name no
other, and refuse one a client names. Only the ``check`` tool writes to it, and only
within time and request limits, so that no call can hold the server for ever; the others
open it for reading only, and a missing memory is an error, never a new empty file.

Each tool is a method of :class:`Tools` that takes typed arguments and returns plain data,
listed once in :data:`TOOLS`: a new tool is a method and a line there.
"""

from __future__ import annotations

import dataclasses
import io
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from linkpatrol.checker import Check
from linkpatrol.config import SiteSettings
from linkpatrol.model import ExitCode, LinkpatrolError
from linkpatrol.report import Entry, Report, build_report
from linkpatrol.store import Store, read_memory

try:
    import anyio
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations
    from pydantic import Field
except ImportError:  # the optional extra is not installed: the command says how to
    MCPServer = None  # type: ignore[assignment,misc]

INSTALL_HINT = "the mcp command needs the MCP SDK: pip install 'linkpatrol[mcp]'"

CHECK_SECONDS = 60.0  # a check's time when the client names none
MOST_CHECK_SECONDS = 600.0  # and the most a client may ask for
CHECK_REQUESTS = 2_000  # a check's requests when the client names none
MOST_CHECK_REQUESTS = 100_000
LISTED = 50  # links a report lists when the client names no limit
MOST_LISTED = 1_000
PAGES_LISTED = 100  # pages named for one link; the rest are counted
CANCELLED = "client cancel"  # a check's stop reason when the client cancels it


def same_memory(given: str, bound: str) -> bool:
    """Whether ``given`` names the memory at ``bound``: the same file however spelled, or
    the same database URL."""
    if given == bound:
        return True
    if bound.startswith(("postgresql://", "postgres://")) or given.startswith(
        ("postgresql://", "postgres://")
    ):
        return False
    return os.path.realpath(given) == os.path.realpath(bound)


def _listed(entries: list[Entry], limit: int) -> list[dict[str, Any]]:
    """Each URL as the JSON report has it, but for its history (the history tool's), and
    with at most PAGES_LISTED of the pages that link to it."""
    from linkpatrol.report.json import entry_dict

    listed = []
    for entry in entries[:limit]:
        data = entry_dict(dataclasses.replace(entry, referrers=entry.referrers[:PAGES_LISTED]))
        data.pop("changes", None)
        data["referrers_not_listed"] = max(0, len(entry.referrers) - PAGES_LISTED)
        listed.append(data)
    return listed


def report_answer(
    report: Report,
    show: Literal["all", "broken", "warnings"] = "all",
    contains: str = "",
    limit: int = LISTED,
) -> dict[str, Any]:
    """What a report says, as the report and check tools answer: the pass, its figures,
    and its broken links and warnings with the pages and lines that hold them."""
    from linkpatrol.report.json import report_dict

    def wanted(entry: Entry) -> bool:
        return (
            not contains or contains in entry.url or any(contains in p for p, _ in entry.referrers)
        )

    head = report_dict(report)
    broken = [e for e in report.broken if wanted(e)] if show != "warnings" else []
    warnings = [e for e in report.warnings if wanted(e)] if show != "broken" else []
    answer = {key: head[key] for key in ("pass", "complete", "stop_reason", "started_at")}
    answer.update(
        finished_at=head["finished_at"],
        start_urls=head["start_urls"],
        summary=head["summary"],
        found=report.counted,
        new=report.new_said,
        exit_code=int(report.exit_code),
        broken=_listed(broken, limit),
        warnings=_listed(warnings, max(0, limit - len(broken))),
    )
    answer["not_listed"] = (
        len(broken) + len(warnings) - len(answer["broken"]) - len(answer["warnings"])
    )
    if nothing := report.nothing_requested:
        answer["nothing_requested"] = nothing
    if not report.complete:
        answer["resume"] = "the pass was cut short: call check again to go on with it"
    return answer


class _Running:
    """A check in a worker thread, with its own event loop; stopped from any thread."""

    def __init__(self, settings: SiteSettings, limit: int, done: Callable[[], None]) -> None:
        self.settings = settings
        self.limit = limit
        self.done = done  # called once the check is over, whatever its end
        self.check: Check | None = None
        self.stopped: str | None = None

    def run(self) -> dict[str, Any]:
        answers: list[dict[str, Any]] = []
        try:
            self.check = check = Check(self.settings, stdin=io.StringIO())
            if self.stopped is not None:  # before it began: it makes no request
                check.stop(self.stopped)
            check.run(render=lambda report: answers.append(report_answer(report, limit=self.limit)))
        except LinkpatrolError as exc:
            raise ToolError(str(exc)) from None
        finally:
            self.done()
        return answers[0]

    def stop(self, reason: str) -> None:
        self.stopped = reason
        if self.check is not None:
            self.check.stop(reason)


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool: the method of :class:`Tools` that answers it, and what a client is told."""

    name: str
    description: str
    writes: bool = False  # the only kind that changes the memory (and reaches the network)


TOOLS: tuple[Tool, ...] = (
    Tool(
        "check",
        "Check the links of a web site (a URL) or of local files (a folder or a file): crawl "
        "it, request every link, remember the verdicts in the server's memory, and answer "
        "with the report of the pass (broken links and warnings with the pages and lines "
        "that hold them). Bounded by max_seconds and max_requests; a pass cut short by them "
        "goes on where it stopped at the next check of the same target.",
        writes=True,
    ),
    Tool(
        "report",
        "The last pass's report from the memory, without checking anything: its figures, "
        "then its broken links and warnings, worst first, each with the pages (and for "
        "local files their paths) and line numbers that link to it.",
    ),
    Tool(
        "history",
        "One URL's story in the memory: its verdict now, each change of verdict with its "
        "pass and time, the pages (and lines) that link to it, and the links it holds.",
    ),
    Tool(
        "status",
        "Where the latest pass stands: complete, running or cut short, with its figures.",
    ),
    Tool(
        "fix_diff",
        "The fix of local files' links that moved for good (answered 301 or 308 in the last "
        "check of them), as a unified diff that 'git apply' takes: each link rewritten to "
        "where it lands, nothing else changed. Nothing is written; files changed since the "
        "check are named and left out.",
    ),
)


class Tools:
    """The tools' answers, over the memory of ``settings.db`` alone."""

    def __init__(self, settings: SiteSettings) -> None:
        self.settings = settings
        self._checking = threading.Lock()  # one check at a time: the memory's crawl lock

    def _read(self, memory: str | None, query: Callable[[Store], Any]) -> Any:
        self._bound(memory)
        try:
            return read_memory(self.settings.db, query)
        except LinkpatrolError as exc:
            raise ToolError(str(exc)) from None

    def _bound(self, memory: str | None) -> None:
        if memory and not same_memory(memory, self.settings.db):
            raise ToolError(
                f"{memory}: not this server's memory; it answers for {self.settings.db} only"
            )

    async def check(
        self,
        target: Annotated[
            str,
            Field(
                description="a URL (http or https), or a local folder or file (HTML, "
                "Markdown, PDF); empty: the start values of the configuration file"
            ),
        ] = "",
        max_seconds: Annotated[
            float,
            Field(gt=0, le=MOST_CHECK_SECONDS, description="stop the pass after this long"),
        ] = CHECK_SECONDS,
        max_requests: Annotated[
            int,
            Field(ge=1, le=MOST_CHECK_REQUESTS, description="stop after this many requests"),
        ] = CHECK_REQUESTS,
        limit: Annotated[
            int, Field(ge=0, le=MOST_LISTED, description="most links listed in the answer")
        ] = LISTED,
    ) -> dict[str, Any]:
        if target == "-":
            raise ToolError("-: a list on standard input cannot be checked here; name a target")
        given = self.settings
        settings = dataclasses.replace(
            given,
            start_urls=(target,) if target else given.start_urls,
            max_time=min(filter(None, (given.max_time, max_seconds))),
            max_requests=min(filter(None, (given.max_requests, max_requests))),
            output=None,
            quiet=True,
            verbose=0,
            progress=False,
        )
        if not self._checking.acquire(blocking=False):
            raise ToolError(f"{given.db}: a check is already running; wait for its answer")
        running = _Running(settings, limit, self._checking.release)
        try:
            # the worker thread is let go at a cancel, and its check stopped: it ends soon
            return await anyio.to_thread.run_sync(running.run, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            running.stop(CANCELLED)
            raise

    def report(
        self,
        show: Annotated[
            Literal["all", "broken", "warnings"],
            Field(description="the broken links, the warnings, or both"),
        ] = "all",
        contains: Annotated[
            str,
            Field(description="only links whose URL or one of whose pages contains this text"),
        ] = "",
        limit: Annotated[
            int, Field(ge=0, le=MOST_LISTED, description="most links listed")
        ] = LISTED,
        memory: Annotated[
            str, Field(description="the memory to read: only the server's own is answered")
        ] = "",
    ) -> dict[str, Any]:
        answer: dict[str, Any] = self._read(
            memory, lambda store: report_answer(build_report(store), show, contains, limit)
        )
        return answer

    def history(
        self,
        url: Annotated[str, Field(description="the URL, spelled any equivalent way")],
        memory: Annotated[
            str, Field(description="the memory to read: only the server's own is answered")
        ] = "",
    ) -> dict[str, Any]:
        from linkpatrol.report.history import history_dict, load_history

        answer: dict[str, Any] = self._read(
            memory, lambda store: history_dict(load_history(store, url))
        )
        return answer

    def status(
        self,
        memory: Annotated[
            str, Field(description="the memory to read: only the server's own is answered")
        ] = "",
    ) -> dict[str, Any]:
        from linkpatrol.report.status import pass_status, status_dict

        answer: dict[str, Any] = self._read(memory, lambda store: status_dict(pass_status(store)))
        return answer

    def fix_diff(
        self,
        target: Annotated[
            str,
            Field(
                description="a local folder or file checked before, as the check was given "
                "it; empty: the start values of the configuration file"
            ),
        ] = "",
        memory: Annotated[
            str, Field(description="the memory to read: only the server's own is answered")
        ] = "",
    ) -> dict[str, Any]:
        from linkpatrol.fix import file_fixes, unified_diff

        self._bound(memory)
        given = self.settings
        settings = dataclasses.replace(given, start_urls=(target,) if target else given.start_urls)
        cwd = Path.cwd()
        try:
            fixes = file_fixes(settings, cwd)
        except LinkpatrolError as exc:
            raise ToolError(str(exc)) from None
        done = [fix for fix in fixes if fix.refused is None]
        return {
            "diff": "".join(unified_diff(fix, cwd) for fix in done),
            "files": len(done),
            "links": sum(fix.rewritten for fix in done),
            "left_alone": [
                {"path": os.path.relpath(fix.path, cwd), "why": fix.refused}
                for fix in fixes
                if fix.refused is not None
            ],
        }


def build_server(settings: SiteSettings) -> MCPServer:
    """The server, its tools answered over the memory of ``settings``."""
    from linkpatrol import __version__

    tools = Tools(settings)
    server = MCPServer(
        "linkpatrol",
        version=__version__,
        log_level="WARNING",  # on stderr: a tool's refusals are the client's to show
        instructions=f"Link checks and their memory ({settings.db}): check a site or "
        "local files, then read the report, a URL's history or the status.",
    )
    for tool in TOOLS:
        server.add_tool(
            getattr(tools, tool.name),
            name=tool.name,
            description=tool.description,
            annotations=ToolAnnotations(
                read_only_hint=not tool.writes,
                destructive_hint=False,
                idempotent_hint=not tool.writes,
                open_world_hint=tool.writes,
            ),
            structured_output=True,
        )
    return server


def run_mcp(settings: SiteSettings) -> int:
    """The ``mcp`` command: serve until the client closes standard input."""
    if MCPServer is None:
        sys.stderr.write(f"linkpatrol: {INSTALL_HINT}\n")
        return ExitCode.USAGE
    build_server(settings).run("stdio")
    return ExitCode.CLEAN
