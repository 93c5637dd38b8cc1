"""Half of a big JSON report written by a helper process: the same text as one process
writes, whatever happens to the helper."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from linkpatrol.helper import Helper, HelperFailed
from linkpatrol.model import AnchorMode, ReportOptions
from linkpatrol.report import Report, build_report
from linkpatrol.report.json import SHARED_FROM, Sharing, iter_json, part_json
from linkpatrol.store import Store, open_store
from tests.conftest import Runner
from tests.sitesrv import Page, html
from tests.sitesrv import TestSite as LoopbackSite

pytestmark = pytest.mark.backends

PAGES = 40
IMAGES = SHARED_FROM + 60  # enough URLs for the command to share the report


def big_site(serve: Any, *, gone: int = -1) -> LoopbackSite:
    """Pages that all link to the navigation and to images (some missing), a redirect,
    and a missing anchor; page ``gone`` answers 404."""
    pages: dict[str, Page] = {}
    for n in range(PAGES):
        images = [f'<img src="/img/{i}.png">' for i in range(n, IMAGES, PAGES)]
        pages[f"/p/{n}.html"] = Page(
            html(
                '<a href="/">home</a> <a href="/p/0.html">first</a>',
                f'<a href="/p/{(n + 1) % PAGES}.html">next</a>',
                f'<a href="/p/{(n + 7) % PAGES}.html#top">later</a>',
                *images,
                '<a href="/missing.png">missing</a>',
                '<a href="/p/1.html#nowhere">no such anchor</a>',
            ),
            status=404 if n == gone else 200,
        )
    for i in range(IMAGES):
        if i % 97 != 5:
            pages[f"/img/{i}.png"] = Page(b"\x89PNG", content_type="image/png")
    pages["/"] = Page(
        html(
            '<h1 id="top">home</h1>',
            *(f'<a href="/p/{n}.html">{n}</a>' for n in range(PAGES)),
            '<a href="/old">moved</a>',
        )
    )
    pages["/old"] = Page("", status=301, headers={"Location": "/p/3.html"})
    for n in range(PAGES):  # every page has the anchor linked to
        body = pages[f"/p/{n}.html"].body
        assert isinstance(body, str)
        pages[f"/p/{n}.html"].body = body.replace("<body>", '<body><p id="top">', 1)
    return serve(pages)


@pytest.fixture
def crawled(run: Runner, serve: Any) -> str:
    """A memory of two passes over the big site: a page broke in between."""
    site = big_site(serve)
    assert run.check(site.url("/"), "--check-anchors").returncode == 1
    site.pages.update(big_site(serve, gone=5).pages)
    proc = run.check(site.url("/"), "--check-anchors")
    assert proc.returncode == 1, proc.stderr
    return run.db


def report_of(store: Store, *, xref: bool) -> Report:
    return build_report(store, options=ReportOptions(check_anchors=AnchorMode.SITE, xref=xref))


def written(report: Report, sharing: Sharing | None = None) -> str:
    return "".join(iter_json(report, sharing))


@pytest.fixture
def store(crawled: str) -> Iterator[Store]:
    opened = open_store(crawled, crawl=False)
    yield opened
    opened.close()


def helper() -> Helper:
    started = Helper.start()
    assert started is not None
    return started


@pytest.mark.parametrize("xref", [False, True])
def test_the_helper_s_half_makes_the_same_report(store: Store, crawled: str, xref: bool) -> None:
    alone = written(report_of(store, xref=xref))
    sharing = Sharing(crawled, least=0, helper=helper())
    try:
        shared = written(report_of(store, xref=xref), sharing)
    finally:
        sharing.close()

    assert sharing.failures == []
    assert shared == alone
    report = json.loads(shared)
    urls = [u["url"] for u in report["urls"]]
    # every URL once, and the missing anchor (an entry of its own, no URL of the memory)
    assert len(urls) == len(set(urls)) == report["summary"]["urls"] + 1 > SHARED_FROM
    gone = next(u for u in report["urls"] if u["url"].endswith("/p/5.html"))
    assert gone["new"] is True and len(gone["changes"]) == 2
    assert any(u["url"].endswith("#nowhere") for u in report["urls"])  # the missing anchor


class _Dying(Helper):
    """A helper killed (SIGKILL) once its first batch has come."""

    def _results(self) -> Iterator[Any]:
        for count, item in enumerate(super()._results()):
            yield item
            if count == 0 and self.pid is not None:
                os.kill(self.pid, signal.SIGKILL)


def test_a_helper_killed_midway_leaves_the_rest_to_the_command(
    store: Store, crawled: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("linkpatrol.report.json.SHARED_BATCH", 2000)  # many batches
    alone = written(report_of(store, xref=False))
    started = helper()
    dying = _Dying(started._process, started._conn)
    sharing = Sharing(crawled, least=0, helper=dying)
    try:
        shared = written(report_of(store, xref=False), sharing)
    finally:
        dying.close()

    assert shared == alone
    assert len(sharing.failures) == 1
    assert sharing.failures[0].startswith("the helper ended (exit code -9)")


def test_a_helper_that_cannot_open_the_memory_leaves_it_all_to_the_command(
    store: Store, tmp_path: Path
) -> None:
    alone = written(report_of(store, xref=False))
    sharing = Sharing(str(tmp_path / "no-such.db"), least=0, helper=helper())
    try:
        shared = written(report_of(store, xref=False), sharing)
    finally:
        sharing.close()

    assert shared == alone
    assert len(sharing.failures) == 1
    assert "no such database" in sharing.failures[0]


def test_a_helper_runs_one_job_and_says_why_it_failed(crawled: str) -> None:
    started = helper()
    try:
        with pytest.raises(HelperFailed, match="no such database"):
            list(started.run(part_json, None, "/nowhere/at/all.db"))
        with pytest.raises(HelperFailed, match="has had its job"):
            started.run(part_json, None, crawled)
    finally:
        started.close()
    assert started.pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(started.pid, 0)


def test_the_command_s_report_is_the_one_process_s(run: Runner, crawled: str, store: Store) -> None:
    """The command starts its helper itself and writes the same JSON."""
    alone = written(report_of(store, xref=False))

    proc = run("report", "--db", crawled, "--format", "json", "--check-anchors")

    assert proc.returncode == 1
    assert proc.stderr == ""
    assert proc.stdout == alone


@pytest.mark.parametrize("urls, started", [(99, False), (100, True), (5000, True)])
def test_a_helper_is_started_only_for_a_report_big_enough(
    crawled: str, urls: int, started: bool
) -> None:
    sharing = Sharing(crawled, least=100)
    sharing.start(urls)
    try:
        assert (sharing.helper is not None) is started
        if sharing.helper is not None:
            first = sharing.helper
            sharing.start(urls)  # one helper a report
            assert sharing.helper is first
            pid = first.pid
            assert pid is not None
            os.kill(pid, 0)  # alive, waiting for its job
    finally:
        sharing.close()
    if started:
        assert sharing.helper is not None and sharing.helper.pid is not None
        with pytest.raises(ProcessLookupError):  # ended and reaped
            os.kill(sharing.helper.pid, 0)


# The command, run by the same Python, with each helper it starts noted in a file (argv[1]).
# In a process of its own: the command sets the handlers and the mask of its signals for
# good, which a test's own process must not keep.
_COUNTING = """
import sys
import linkpatrol.report.json as report_json
from linkpatrol import cli
start = report_json.Helper.start
def counted(*args, **kwargs):
    helper = start(*args, **kwargs)
    with open(sys.argv[1], "a") as notes:
        notes.write("none\\n" if helper is None else "started\\n")
    return helper
report_json.Helper.start = staticmethod(counted)
sys.exit(cli.main(sys.argv[2:]))
"""


@pytest.mark.parametrize("big", [False, True])
def test_a_check_starts_a_helper_for_a_big_json_report_alone(
    serve: Any, tmp_path: Path, big: bool
) -> None:
    """No process is started for a report one process writes; a big one's helper is
    started once, and the report is whole either way."""
    site = (
        big_site(serve)
        if big
        else serve({"/": Page(html('<a href="/a">a</a>')), "/a": Page(html("a"))})
    )
    notes, out = tmp_path / "helpers", tmp_path / "report.json"
    argv = ["check", site.url("/"), "--db", str(tmp_path / "m.db"), "--format", "json"]
    argv += ["--output", str(out), "-q", "--parse-workers", "0"]
    proc = subprocess.run(
        [sys.executable, "-c", _COUNTING, str(notes), *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == (1 if big else 0), proc.stderr
    started = notes.read_text().split() if notes.exists() else []
    assert started == (["started"] if big else [])
    urls = json.loads(out.read_text())["summary"]["urls"]
    assert urls > SHARED_FROM if big else urls == 2


@pytest.mark.parametrize(
    "executable, frozen",
    [("", False), (sys.executable, True)],
    ids=["no interpreter", "a frozen build"],
)
def test_no_helper_where_no_interpreter_can_run_it(
    monkeypatch: pytest.MonkeyPatch, executable: str, frozen: bool
) -> None:
    """A frozen build's executable is the command itself, not Python: the command writes
    the whole report, as where no helper could be started."""
    monkeypatch.setattr(sys, "executable", executable)
    monkeypatch.setattr(sys, "frozen", frozen, raising=False)
    assert Helper.start() is None


def loaded(names: list[str]) -> Iterator[list[bool]]:
    """A helper's job: which of the modules named it has imported."""
    yield [name in sys.modules for name in names]


def frozen() -> Iterator[int]:
    """A helper's job: how many objects its collections leave out."""
    yield gc.get_freeze_count()


@pytest.mark.parametrize(
    "preload, found",
    [((), [False]), (("colorsys",), [True]), (("colorsys", "no_such_module_at_all"), [True])],
)
def test_a_helper_imports_what_it_is_told_while_it_waits_for_its_job(
    preload: tuple[str, ...], found: list[bool]
) -> None:
    """Started with modules to preload, a helper has them by the time its job comes; a
    module it cannot import leaves it to the job."""
    started = Helper.start(preload=preload)
    assert started is not None
    try:
        assert list(started.run(loaded, ["colorsys"])) == [found]
    finally:
        started.close()


def test_a_helper_s_collections_leave_out_what_it_loaded_before_its_job() -> None:
    started = Helper.start(preload=("linkpatrol.report.json",))
    assert started is not None
    try:
        [count] = started.run(frozen)
        assert count > 10_000  # the modules' functions, classes, ...
    finally:
        started.close()
