"""How the fetch slots were used: in the summary, in the memory, with what to change."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import pytest

from linkpatrol.report import FetchUse
from tests.conftest import Runner, Serve
from tests.sitesrv import Handler, Page

PAGES = 30
ANSWER_DELAY = 0.02  # seconds each answer takes, so URLs pile up behind --per-host


def slow_site(
    pages: int = PAGES, delay: float = ANSWER_DELAY, one_at_a_time: bool = False
) -> dict[str, Any]:
    """Pages that each take ``delay`` to answer, at once or, ``one_at_a_time``, in turn
    (a server that answers one request at a time: the others wait in its queue)."""
    turn = threading.Lock() if one_at_a_time else contextlib.nullcontext()

    def slow(page: Page) -> Handler:
        def handler(request: Any) -> int:
            with turn:
                time.sleep(delay)
            return int(request._send_page(page, request.path))

        return handler

    home = slow(Page("".join(f'<a href="/p/{i}.html">{i}</a>\n' for i in range(pages))))
    site: dict[str, Any] = {"/": home, "/robots.txt": Page("", content_type="text/plain")}
    for i in range(pages):
        site[f"/p/{i}.html"] = slow(Page(f"<p>{i}</p>"))
    return site


def test_one_host_behind_per_host_shows_slots_waiting_and_says_what_helps(
    run: Runner, serve: Serve
) -> None:
    """The host answers as fast with 4 requests in flight as with fewer: more helps."""
    site = serve(slow_site(pages=200, delay=0.04))

    code, report = run.check_json(site.url("/"), "--per-host", "4", "--concurrency", "16")

    assert code == 0
    fetch = report["summary"]["fetch"]
    assert fetch["slots"] == 16.0
    assert abs(fetch["busy"] + fetch["waiting"] + fetch["idle"] - 1) < 0.01
    assert 0 < fetch["busy"] < 0.5
    assert fetch["waiting"] > 0.25 and fetch["waiting"] > fetch["busy"]  # the rest waited
    text = run("report", "--db", run.db).stdout
    assert "Fetch slots (16): " in text
    assert "a higher --per-host helps" in text, text
    # the memory keeps it: the report tells the same from the memory alone
    again = run("report", "--db", run.db, "--format", "json")
    assert '"fetch":{"slots":16.0' in again.stdout.replace(" ", "")


def test_no_per_host_advice_for_a_server_that_answers_one_request_at_a_time(
    run: Runner, serve: Serve
) -> None:
    """URLs wait for --per-host all the same, but each request in flight only waits
    longer in the server's queue: a higher --per-host would gain nothing. Each answer
    takes long enough that a loaded machine's delays, added to every request alike,
    cannot bring the full requests' times near the others' (at 0.1 s a whole suite's run,
    on a loaded machine, once saw them within 1.5x and gave the advice)."""
    site = serve(slow_site(pages=30, delay=0.2, one_at_a_time=True))

    code, report = run.check_json(site.url("/"), "--per-host", "4", "--concurrency", "16")

    assert code == 0 and report["summary"]["fetch"]["waiting"] > 0.25
    text = run("report", "--db", run.db).stdout
    assert "Fetch slots (16): " in text and "--per-host" not in text, text


def test_a_tiny_run_gives_no_advice(run: Runner, serve: Serve) -> None:
    site = serve(slow_site())

    assert run.check(site.url("/"), "--per-host", "1", "--concurrency", "8").returncode == 0

    text = run("report", "--db", run.db).stdout
    assert "Fetch slots (8): " in text and "helps" not in text, text


@pytest.mark.parametrize(
    ("figures", "advice"),
    [
        ({}, None),
        ({"held": 0.6, "slowdown": 1.1}, "a higher --per-host helps"),
        ({"held": 0.6, "slowdown": 1.1, "seconds": 1.5}, None),  # too short to matter
        ({"held": 0.6, "slowdown": 3.8}, None),  # the host took longer, not more at once
        ({"held": 0.6, "slowdown": None}, None),  # nothing to compare with
        ({"held": 0.1, "waiting": 0.6, "slowdown": 1.0}, None),  # robots.txt, --delay
        ({"busy": 0.95, "queue": 40.0}, "a higher --concurrency helps"),
        ({"busy": 0.95, "queue": 4.0}, None),
    ],
)
def test_advice_only_where_the_figures_support_it(
    figures: dict[str, Any], advice: str | None
) -> None:
    use = FetchUse(
        **{
            "slots": 8.0,
            "busy": 0.3,
            "waiting": 0.6,
            "idle": 0.1,
            "queue": 2.0,
            "seconds": 10.0,
            **figures,
        }
    )
    said = use.advice()
    assert (said is None) if advice is None else (said is not None and advice in said)


def test_a_resumed_pass_adds_the_runs_up(run: Runner, serve: Serve) -> None:
    site = serve(slow_site())
    first = run.check("--max-requests", "10", "--concurrency", "4", site.url("/"))
    assert first.returncode == 3

    code, report = run.check_json(site.url("/"), "--concurrency", "4")

    assert code == 0 and report["complete"]
    fetch = report["summary"]["fetch"]
    assert fetch["slots"] == 4.0 and 0 < fetch["busy"] <= 1
