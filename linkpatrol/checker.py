"""One check, from the settings to the report: the library's entry point.

The command, the tests and a program of one's own run a check the same way::

    from linkpatrol import check
    result = check(SiteSettings(start_urls=("https://example.org/",), db="memory.db"))
    result.exit_code, result.broken

:class:`Check` is the same in steps, for a caller that needs a hand between them (the
command: its terminal and its signals). Each step refuses bad input before anything is
written: the start values, the secrets of the ``[[site]]`` tables, the log file, the
plugins, then the memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

from linkpatrol.config import SiteSettings, report_options, wants_rendering
from linkpatrol.crawl import Crawl, CrawlResult
from linkpatrol.fetch import Fetcher
from linkpatrol.model import ExitCode, LinkpatrolError
from linkpatrol.observer import Observer
from linkpatrol.proxies import Proxies
from linkpatrol.report import Entry, Report, Summary, build_report
from linkpatrol.store import PassInfo, Store, open_store
from linkpatrol.transport import Transport

if TYPE_CHECKING:
    from linkpatrol.plugins import Plugin
    from linkpatrol.plugins.host import PluginObserver


@dataclass
class CheckResult:
    """What a check found: its pass, why it stopped early if it did, and the URLs its
    report names (read whole from the memory, so they outlive it)."""

    pass_info: PassInfo
    stop_reason: str | None
    summary: Summary
    broken: list[Entry]  # reportable broken URLs, worst first
    warnings: list[Entry]
    exit_code: ExitCode

    @property
    def complete(self) -> bool:
        return self.pass_info.complete


Render = Callable[[Report], None]  # shown the report while the memory is still open


class Check:
    """A check, run step by step: made (inputs refused here), opened (the memory),
    crawled, finished (the report), closed.

    ``stop`` may be called at any time before the crawl ends; a check stopped before its
    crawl starts makes no request.
    """

    def __init__(
        self,
        settings: SiteSettings,
        *,
        stdin: TextIO | None = None,
        transport: Transport | None = None,
    ) -> None:
        from linkpatrol.inputs import prepare
        from linkpatrol.sites import check_environment

        if not settings.start_urls and not settings.sitemap:
            raise LinkpatrolError(
                "no start URL: give URLs, folders or files, --sitemap, or 'start' in the config"
            )
        settings = prepare(settings, stdin if stdin is not None else sys.stdin)
        if not settings.start_urls:
            raise LinkpatrolError("no start URL: the inputs listed none")
        check_environment(settings.site_tables)  # a secret not set
        Proxies(settings.proxy, os.environ)  # a proxy's login without its password
        check_log(settings)
        if wants_rendering(settings):  # without a browser, refused before anything is written
            from linkpatrol.render import find_browser

            find_browser(settings)
        self.baseline = None
        if settings.baseline:  # a bad baseline is refused before anything is written
            from linkpatrol.report.baseline import read_baseline

            self.baseline = read_baseline(settings.baseline)
        self.settings = settings
        self.plugins: list[Plugin] = []
        if settings.plugins:
            from linkpatrol.plugins.host import load_plugins

            self.plugins = load_plugins(settings.plugins, settings.plugin_options)
        self.transport = transport
        self.store: Store | None = None
        self._crawl: Crawl | None = None
        self._watcher: PluginObserver | None = None
        self._stop_reason: str | None = None
        self._result: CrawlResult | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the crawl's, once it runs

    def open(self) -> Check:
        """Open the memory for the crawl (a bad one is refused here)."""
        if self.store is None:
            settings = self.settings
            self.store = open_store(settings.db, crawl=True, outage_wait=settings.db_wait)
        return self

    def __enter__(self) -> Check:
        return self.open()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        store, self.store = self.store, None
        if store is not None:
            store.close()

    def stop(self, reason: str) -> None:
        """Stop taking new work; what is under way ends, the memory keeps it all. From any
        thread: another's stop is handed to the crawl's event loop."""
        loop = self._loop
        if loop is not None and not _running_on(loop):
            with contextlib.suppress(RuntimeError):  # closed: the crawl is over
                loop.call_soon_threadsafe(self._stopped, reason)
            return
        self._stopped(reason)

    def _stopped(self, reason: str) -> None:
        if self._stop_reason is None:
            self._stop_reason = reason
        if self._crawl is not None:
            self._crawl.stop(reason)

    async def crawl(self, observer: Observer | None = None) -> CrawlResult:
        """Crawl on the running event loop, telling ``observer`` as it goes."""
        store = self.open().store
        assert store is not None
        self._loop = asyncio.get_running_loop()
        observer = observer or Observer()
        if not self.settings.robots:
            observer.note("robots.txt is ignored (--no-robots): be sure the sites allow this")
        if self.plugins:
            from linkpatrol.plugins.host import PluginObserver

            self._watcher = PluginObserver(observer, self.plugins)
            observer = self._watcher
        fetcher = None if self.transport is None else Fetcher(self.settings, self.transport)
        self._crawl = Crawl(self.settings, store, observer, fetcher)
        if self._stop_reason is not None:
            self._crawl.stop(self._stop_reason)
        self._result = await self._crawl.run()
        if self.settings.archived and not self.settings.offline and self._stop_reason is None:
            await self._find_archived(store, self._result.pass_info.id, observer)
        return self._result

    async def _find_archived(self, store: Store, pass_id: int, observer: Observer) -> None:
        """Copies in the web archive of the pass's broken links once good, before the
        report shows them (--archived); a stop leaves the rest for the next run."""
        from linkpatrol.archive import find_archived
        from linkpatrol.curlfetch import make_fetcher

        settings, transport = self.settings, self.transport

        def connect() -> Fetcher:
            return make_fetcher(settings) if transport is None else Fetcher(settings, transport)

        await find_archived(
            store, pass_id, settings, connect, observer, lambda: self._stop_reason is not None
        )

    def finish(self, render: Render | None = None) -> CheckResult:
        """The crawl's report, as the settings ask for it: shown to ``render`` and to the
        plugins, its figures kept with the pass for the charts of later reports."""
        store, result = self.store, self._result
        if store is None or result is None:
            raise RuntimeError("finish() comes after crawl()")
        options = report_options(self.settings)
        info, baseline = result.pass_info, self.baseline
        report = store.steady(lambda: build_report(store, info, options, baseline))
        if self._watcher is not None:
            self._watcher.finish(store, result.pass_info, report)
        if render is not None:
            render(report)  # read URL by URL from the memory: before it is closed
        broken, warnings = report.broken, report.warnings
        store.save_counts(report.pass_id, len(broken), len(warnings))
        if baseline is not None:  # kept: 'linkpatrol report' compares the pass with it too
            store.save_baseline(report.pass_id, baseline)
        store.save_named(report.pass_id, report.named_kinds)
        return CheckResult(
            pass_info=result.pass_info,
            stop_reason=result.stop_reason,
            summary=report.summary,
            broken=broken,
            warnings=warnings,
            exit_code=report.exit_code,
        )

    def run(self, observer: Observer | None = None, render: Render | None = None) -> CheckResult:
        """The whole check on an event loop of its own; the memory is closed after."""
        from linkpatrol.loops import event_loop_factory

        try:
            with collecting_less(), asyncio.Runner(loop_factory=event_loop_factory()) as runner:
                runner.run(self.crawl(observer))
            return self.finish(render)
        finally:
            self.close()


def check(
    settings: SiteSettings,
    observer: Observer | None = None,
    *,
    render: Render | None = None,
    stdin: TextIO | None = None,
    transport: Transport | None = None,
) -> CheckResult:
    """Check the links of ``settings``' start values, remember them, and say what was found.

    ``observer`` is told what the crawl does as it goes; ``render`` is shown the whole
    report while the memory is open (to write it in any format); ``stdin`` is read where a
    start value is ``-``; ``transport``, if given, makes the requests (canned answers, for
    tests without a server) instead of libcurl. Bad input raises a ``LinkpatrolError``
    (its ``exit_code`` says which kind) before anything is written.
    """
    return Check(settings, stdin=stdin, transport=transport).run(observer, render)


def _running_on(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether this thread is running ``loop``."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def check_log(settings: SiteSettings) -> None:
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
def collecting_less() -> Iterator[None]:
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


__all__ = ["Check", "CheckResult", "Render", "check", "check_log", "collecting_less"]
