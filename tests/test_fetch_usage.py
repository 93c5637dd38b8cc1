"""How the fetch slots were used: in the summary, in the memory, with what to change."""

from __future__ import annotations

import time
from typing import Any

from tests.conftest import Runner, Serve
from tests.sitesrv import Handler, Page

PAGES = 30
ANSWER_DELAY = 0.02  # seconds each answer takes, so URLs pile up behind --per-host


def slow_site() -> dict[str, Any]:
    def slow(page: Page) -> Handler:
        def handler(request: Any) -> int:
            time.sleep(ANSWER_DELAY)
            return int(request._send_page(page, request.path))

        return handler

    home = Page("".join(f'<a href="/p/{i}.html">{i}</a>\n' for i in range(PAGES)))
    site: dict[str, Any] = {"/": home, "/robots.txt": Page("", content_type="text/plain")}
    for i in range(PAGES):
        site[f"/p/{i}.html"] = slow(Page(f"<p>{i}</p>"))
    return site


def test_one_host_behind_per_host_1_shows_slots_waiting_and_says_what_helps(
    run: Runner, serve: Serve
) -> None:
    site = serve(slow_site())

    code, report = run.check_json(site.url("/"), "--per-host", "1", "--concurrency", "8")

    assert code == 0
    fetch = report["summary"]["fetch"]
    assert fetch["slots"] == 8.0
    assert abs(fetch["busy"] + fetch["waiting"] + fetch["idle"] - 1) < 0.01
    # one request at a time to the only host (a slot is busy until its page is parsed too)
    assert 0 < fetch["busy"] < 0.5
    assert fetch["waiting"] > 0.25 and fetch["waiting"] > fetch["busy"]  # the rest waited
    text = run("report", "--db", run.db).stdout
    assert "Fetch slots (8): " in text
    assert "(slots often waited for a host's turn: a higher --per-host" in text
    # the memory keeps it: the report tells the same from the memory alone
    again = run("report", "--db", run.db, "--format", "json")
    assert '"fetch":{"slots":8.0' in again.stdout.replace(" ", "")


def test_a_resumed_pass_adds_the_runs_up(run: Runner, serve: Serve) -> None:
    site = serve(slow_site())
    first = run.check("--max-requests", "10", "--concurrency", "4", site.url("/"))
    assert first.returncode == 3

    code, report = run.check_json(site.url("/"), "--concurrency", "4")

    assert code == 0 and report["complete"]
    fetch = report["summary"]["fetch"]
    assert fetch["slots"] == 4.0 and 0 < fetch["busy"] <= 1
