"""The library as the README shows it: a crawl driven from Python, on libuv's event loop."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from linkpatrol.config import SiteSettings
from linkpatrol.crawl import Crawl
from linkpatrol.loops import event_loop_factory
from linkpatrol.observer import Observer
from linkpatrol.report import build_report, render
from linkpatrol.store import Outcome, open_store
from tests.sitesrv import Page, html


class LoopWatcher(Observer):
    """Notes the kind of loop each URL's verdict comes in on."""

    def __init__(self) -> None:
        self.loops: set[str] = set()

    def url_checked(self, url: str, outcome: Outcome) -> None:
        self.loops.add(type(asyncio.get_running_loop()).__module__)


def test_a_crawl_driven_from_python_runs_on_libuvs_loop(serve: Any, tmp_path: Path) -> None:
    big = "x" * 300_000  # a page bigger than the pipe to a parse worker
    site = serve(
        {
            "/robots.txt": Page("", status=404),
            "/": Page(html("<a href='/gone'>x</a>", "<a href='/big'>big</a>")),
            "/big": Page(html(f"<p>{big}</p>", "<a href='/'>home</a>")),
        }
    )
    settings = SiteSettings(start_urls=(site.url("/"),), db=str(tmp_path / "memory.db"))
    store = open_store(settings.db, crawl=True)
    watcher = LoopWatcher()
    try:
        with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
            result = runner.run(Crawl(settings, store, watcher).run())
        text = render(build_report(store, result.pass_info), "text")
    finally:
        store.close()

    assert watcher.loops == {"uvloop"}
    assert result.pass_info.complete
    assert "Broken links (1)" in text and site.url("/gone") in text
    assert "3 URLs seen, 3 requested, 2 parsed, 1 broken" in text, text
