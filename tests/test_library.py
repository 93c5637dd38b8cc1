"""The library as the README shows it: ``check`` runs a whole check from Python, the way the
command runs it, on libuv's event loop."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from linkpatrol import Check, check
from linkpatrol.checker import CheckResult
from linkpatrol.config import SiteSettings
from linkpatrol.model import Action, ExitCode, LinkpatrolError, Reason
from linkpatrol.observer import Observer
from linkpatrol.report import Report, render
from linkpatrol.store import Outcome, open_store
from tests.sitesrv import Held, Page, html


class LoopWatcher(Observer):
    """Notes the kind of loop each URL's verdict comes in on, and the notes it is given."""

    def __init__(self) -> None:
        self.loops: set[str] = set()
        self.checked: list[str] = []
        self.notes: list[str] = []

    def url_checked(self, url: str, outcome: Outcome) -> None:
        self.loops.add(type(asyncio.get_running_loop()).__module__)
        self.checked.append(url)

    def note(self, message: str) -> None:
        self.notes.append(message)


def small_site(serve: Any) -> Any:
    big = "x" * 300_000  # a page bigger than the pipe to a parse worker
    return serve(
        {
            "/robots.txt": Page("", status=404),
            "/": Page(html("<a href='/gone'>x</a>", "<a href='/big'>big</a>")),
            "/big": Page(html(f"<p>{big}</p>", "<a href='/'>home</a>")),
        }
    )


def test_a_check_driven_from_python_runs_on_libuvs_loop(serve: Any, tmp_path: Path) -> None:
    site = small_site(serve)
    settings = SiteSettings(start_urls=(site.url("/"),), db=str(tmp_path / "memory.db"))
    watcher = LoopWatcher()
    texts: list[str] = []

    result = check(settings, watcher, render=lambda report: texts.append(render(report, "text")))

    assert watcher.loops == {"uvloop"}
    assert result.complete and result.stop_reason is None
    assert result.exit_code is ExitCode.BROKEN
    assert [entry.url for entry in result.broken] == [site.url("/gone")]
    assert result.broken[0].reason is Reason.HTTP_STATUS and result.warnings == []
    assert "3 URLs seen, 3 requested, 2 parsed, 1 broken" in texts[0], texts[0]


def test_the_result_and_the_report_command_agree(serve: Any, tmp_path: Path) -> None:
    """The result's figures are those the memory keeps with the pass for later reports."""
    from linkpatrol.cli import main

    site = small_site(serve)
    db = str(tmp_path / "memory.db")
    result = check(SiteSettings(start_urls=(site.url("/"),), db=db))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["report", "--db", db, "--format", "json"])

    report = json.loads(out.getvalue())
    assert code == result.exit_code == ExitCode.BROKEN
    broken = [url["url"] for url in report["urls"] if url["state"] == "broken"]
    assert broken == [e.url for e in result.broken]
    store = open_store(db, crawl=False)
    try:
        info = store.latest_pass()
    finally:
        store.close()
    assert info is not None and info.id == result.pass_info.id


def test_a_check_stopped_before_its_crawl_makes_no_request(serve: Any, tmp_path: Path) -> None:
    site = small_site(serve)
    run = Check(SiteSettings(start_urls=(site.url("/"),), db=str(tmp_path / "memory.db")))
    run.stop("by the caller")
    reports: list[Report] = []

    result = run.run(render=reports.append)

    assert site.hits == []
    assert result.stop_reason == "by the caller" and not result.complete
    assert result.exit_code is ExitCode.STOPPED and not reports[0].complete
    assert run.store is None  # closed after the run


def test_a_check_running_in_a_thread_is_stopped_from_another(serve: Any, tmp_path: Path) -> None:
    held = Held('<a href="/next">next</a>', 30)
    site = serve({"/": held, "/next": Page("<p>next</p>")})
    run = Check(SiteSettings(start_urls=(site.url("/"),), db=str(tmp_path / "memory.db")))
    results: list[CheckResult] = []
    thread = threading.Thread(target=lambda: results.append(run.run()))
    thread.start()
    try:
        assert held.started.wait(30)
        run.stop("from another thread")
    finally:
        held.release.set()
        thread.join(30)

    (result,) = results
    assert result.stop_reason == "from another thread" and not result.complete
    assert "/next" not in [hit.path for hit in site.requests()]


def test_check_run_in_steps_on_the_callers_loop(serve: Any, tmp_path: Path) -> None:
    site = small_site(serve)
    watcher = LoopWatcher()
    settings = SiteSettings(start_urls=(site.url("/"),), db=str(tmp_path / "memory.db"))

    with Check(settings) as run:
        crawled = asyncio.run(run.crawl(watcher))
        result = run.finish()

    assert crawled.pass_info.complete and crawled.pass_info == result.pass_info
    assert sorted(watcher.checked) == sorted(site.url(p) for p in ("/", "/gone", "/big"))
    assert result.summary.broken == 1


def test_no_robots_is_said_to_the_observer(serve: Any, tmp_path: Path) -> None:
    site = small_site(serve)
    watcher = LoopWatcher()
    settings = SiteSettings(
        start_urls=(site.url("/"),), db=str(tmp_path / "memory.db"), robots=False
    )

    check(settings, watcher)

    assert any("robots.txt is ignored" in note for note in watcher.notes)
    assert all(hit.path != "/robots.txt" for hit in site.hits)


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        (SiteSettings(), "no start URL"),
        (SiteSettings(start_urls=("-",)), "no start URL: the inputs listed none"),
        (SiteSettings(start_urls=("https://a.test/",), log="/nowhere/at/all.log"), "log file"),
        (SiteSettings(start_urls=("https://a.test/",), plugins=("no-such-plugin",)), "plugin"),
    ],
)
def test_bad_input_is_refused_before_anything_is_written(
    settings: SiteSettings, said: str, tmp_path: Path
) -> None:
    db = tmp_path / "memory.db"
    with pytest.raises(LinkpatrolError, match=said) as refused:
        check(dataclasses.replace(settings, db=str(db)), stdin=io.StringIO(""))

    assert refused.value.exit_code is not ExitCode.CLEAN
    assert not db.exists()


def test_a_start_list_is_read_from_the_stdin_given(serve: Any, tmp_path: Path) -> None:
    site = small_site(serve)
    settings = SiteSettings(start_urls=("-",), db=str(tmp_path / "memory.db"))

    result = check(settings, stdin=io.StringIO(site.url("/gone") + "\n"))

    assert [entry.url for entry in result.broken] == [site.url("/gone")]
    assert result.broken[0].action is Action.PARSE  # a start URL of the site
