"""What a person sees while a crawl runs: a live line on a terminal, -v lines, a --log file."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from typing import IO, TextIO

from linkpatrol.config import SiteSettings
from linkpatrol.model import Outcome
from linkpatrol.observer import CrawlStats, Observer
from linkpatrol.report.text import clean
from linkpatrol.store import PassInfo


def progress_line(stats: CrawlStats, width: int) -> str:
    """The live line, in one line of a terminal ``width`` columns wide: shorter words, then
    fewer figures (the least telling first), then cut."""
    figures = [
        f"{stats.done} done",
        f"{stats.queued} queued",
        f"{stats.in_flight} in flight",
        f"{stats.waiting} waiting for a host",
        f"{stats.broken} broken",
        f"{stats.rate:.0f} req/s",
    ]
    room = max(1, width - 1)  # the last column: a cursor there wraps on some terminals
    line = " · ".join(figures)
    if len(line) <= room:
        return line
    figures[3] = f"{stats.waiting} waiting"
    for drop in (3, 2, 1):  # waiting, in flight, queued
        line = " · ".join(figures)
        if len(line) <= room:
            return line
        del figures[drop]
    line = " · ".join(figures)
    return line if len(line) <= room else line[: room - 1] + "…"


def _stamp() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class ConsoleObserver(Observer):
    def __init__(self, settings: SiteSettings, err: TextIO, show_progress: bool) -> None:
        self.settings = settings
        self.err = err
        self.verbose = 0 if settings.quiet else settings.verbose
        self._log: IO[str] | None = None
        if settings.log:
            try:
                self._log = open(settings.log, "a", encoding="utf-8")  # noqa: SIM115
            except OSError as exc:
                from linkpatrol.model import ConfigError

                raise ConfigError(f"{settings.log}: cannot open log file: {exc.strerror}") from None
        self._live = None
        self._status = None
        if show_progress:
            from rich.console import Console
            from rich.live import Live
            from rich.text import Text

            self._status = Text("starting…", no_wrap=True, overflow="ellipsis")
            self._live = Live(
                self._status, console=Console(file=err), refresh_per_second=4, transient=True
            )
            self._live.start()

    def _write_log(self, line: str) -> None:
        if self._log is not None:
            try:
                self._log.write(f"{_stamp()} {clean(line)}\n")
            except OSError as exc:
                self._log_failed(exc)

    def _log_failed(self, exc: OSError) -> None:
        """A log that cannot be written (a full disk) is given up; the crawl goes on."""
        log, self._log = self._log, None
        with contextlib.suppress(OSError):
            if log is not None:
                log.close()
        self.err.write(
            f"linkpatrol: {self.settings.log}: cannot write the log ({exc.strerror}); "
            "logging stopped, the crawl goes on\n"
        )

    def pass_started(self, info: PassInfo) -> None:
        verb = "resuming" if info.resumed else "starting"
        message = f"{verb} pass {info.id} of {', '.join(info.start_urls) or '(none)'}"
        self._write_log(message)
        if self.verbose >= 2:
            self.err.write(message + "\n")

    def url_checked(self, url: str, outcome: Outcome) -> None:
        if self._log is None and self.verbose < 1:
            return
        status = outcome.http_status if outcome.http_status is not None else "-"
        detail = outcome.error or ""
        if outcome.redirect_to:
            detail = f"-> {outcome.redirect_to}"
        line = f"{outcome.state.value:<10} {status!s:>3} {url}" + (f"  {detail}" if detail else "")
        self._write_log(line)
        if self.verbose >= 1 and not outcome.dropped:
            self.err.write(clean(line) + "\n")

    def requesting(self, method: str, url: str, why: str) -> None:
        if self._log is None and self.verbose < 2:
            return
        line = f"{method} {url} ({why})"
        self._write_log(line)
        if self.verbose >= 2:
            self.err.write(clean(line) + "\n")

    def progress(self, stats: CrawlStats) -> None:
        if self._live is None or self._status is None:
            return
        self._status.plain = progress_line(stats, self._live.console.width)
        self._live.update(self._status)

    def note(self, message: str) -> None:
        self._write_log(message)
        if not self.settings.quiet:
            self.err.write(f"linkpatrol: {message}\n")

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        if self._log is not None:
            try:
                self._log.close()
            except OSError as exc:
                self._log_failed(exc)
            self._log = None


__all__ = ["ConsoleObserver"]
