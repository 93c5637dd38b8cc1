"""A second look before the alarm: a URL that failed as a busy server fails is asked once
more at the end of the pass, after a pause, and only then judged.

A real server on 127.0.0.1 whose flaky URLs answer 503 the first few times and then 200;
the real command, alone, stopped and resumed, and as a crew of workers; what is checked
is what a user sees: the report, the URL's history, the requests the server got.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

from tests.conftest import Runner, Serve, by_url, memory_rows
from tests.sitesrv import Page, html
from tests.test_fetching import no_robots
from tests.test_stop_resume import generated_site
from tests.test_workers import assemble, finish, gated, start_workers


def failing_first(times: int, status: int = 503) -> Callable[[BaseHTTPRequestHandler], int]:
    """A handler answering ``status`` the first ``times`` requests, then 200."""
    calls = [0]
    lock = threading.Lock()

    def handle(h: BaseHTTPRequestHandler) -> int:
        with lock:
            calls[0] += 1
            answer = status if calls[0] <= times else 200
        body = b"fine" if answer == 200 else b"busy"
        h.send_response(answer)
        h.send_header("Content-Type", "text/plain")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)
        return answer

    return handle


def test_a_url_failing_for_a_moment_is_ok_after_its_second_look(run: Runner, serve: Serve) -> None:
    site = serve(
        {
            "/robots.txt": no_robots(),
            "/": Page(
                html('<a href="/flaky">f</a>', '<a href="/down">d</a>', '<a href="/ok">o</a>')
            ),
            "/flaky": failing_first(3),  # all of the first look's requests (--retries 2)
            "/down": failing_first(1000),
            "/ok": Page("<p>fine</p>"),
        }
    )

    code, report = run.check_json(site.url("/"), "--second-look", "0.5s")

    urls = by_url(report)
    flaky, down = urls[site.url("/flaky")], urls[site.url("/down")]
    assert (flaky["state"], flaky["http_status"], flaky["second_look"]) == ("ok", 200, True)
    assert (down["state"], down["http_status"], down["second_look"]) == ("broken", 503, True)
    assert urls[site.url("/ok")]["second_look"] is False
    assert code == 1  # /down, after its second look too
    looks = [h for h in site.requests() if h.path == "/flaky"]
    assert [h.status for h in looks] == [503, 503, 503, 200]
    assert looks[3].at - looks[2].at >= 0.5  # the pause, at the end of the pass
    assert site.counts()["/down"] == 6
    # its history never shows the failure the second look set right
    assert memory_rows(
        run.db,
        "SELECT h.state FROM history h JOIN urls u ON u.id = h.url_id WHERE u.url = ?",
        (site.url("/flaky"),),
    ) == [("ok",)]
    # the text report names both
    text = run("report", "--db", run.db).stdout
    assert "Failed at first, asked again at the end of the pass (2):" in text
    note = text.split("Failed at first")[1].split("\n\n")[0]
    assert site.url("/flaky") in note and site.url("/down") in note
    assert site.url("/ok") not in note
    # and the HTML report says how many
    page = run("report", "--db", run.db, "--format", "html").stdout
    assert 'data-second-looks="2">2 URLs failed at first and were asked again' in page


def test_no_second_look_with_zero_and_none_for_a_host_asking_for_hours(
    run: Runner, serve: Serve
) -> None:
    def closed_for_hours(h: BaseHTTPRequestHandler) -> int:
        h.send_response(503)
        h.send_header("Retry-After", "7200")
        h.send_header("Content-Length", "0")
        h.end_headers()
        return 503

    site = serve(
        {
            "/robots.txt": no_robots(),
            "/": Page(html('<a href="/flaky">f</a>', '<a href="/later">l</a>')),
            "/flaky": failing_first(3),
            "/later": closed_for_hours,
        }
    )

    code, report = run.check_json(site.url("/"), "--second-look", "0")

    flaky = by_url(report)[site.url("/flaky")]
    assert (flaky["state"], flaky["second_look"]) == ("broken", False)
    assert site.counts()["/flaky"] == 3
    assert code == 1

    code, report = run.check_json(site.url("/"), "--second-look", "0.2s")
    assert by_url(report)[site.url("/flaky")]["state"] == "ok"
    later = by_url(report)[site.url("/later")]
    assert (later["state"], later["second_look"]) == ("broken", False)
    assert site.counts()["/later"] == 2  # once a pass


def test_a_second_look_due_when_the_pass_stopped_is_taken_on_resume(
    run: Runner, serve: Serve
) -> None:
    site = serve(
        {
            "/robots.txt": no_robots(),
            "/": Page(html('<a href="/flaky">f</a>')),
            "/flaky": failing_first(3),
        }
    )
    start = site.url("/")

    # robots.txt, the page, and the first look's three requests
    code, stopped = run.check_json(start, "--max-requests", "5", "--second-look", "0.3s")

    assert (code, stopped["complete"], stopped["stop_reason"]) == (3, False, "max-requests")
    assert site.counts()["/flaky"] == 3
    assert memory_rows(run.db, "SELECT looks FROM frontier") == [(1,)]

    code, resumed = run.check_json(start, "--second-look", "0.3s")

    assert code == 0 and resumed["complete"] and resumed["pass"] == stopped["pass"]
    flaky = by_url(resumed)[site.url("/flaky")]
    assert (flaky["state"], flaky["second_look"]) == ("ok", True)
    assert site.counts()["/flaky"] == 4


def test_workers_give_each_url_one_second_look(
    run: Runner, serve: Serve, postgres_url: str
) -> None:
    pages = generated_site(indexes=6, per_index=20)
    flaky = [f"/flaky/{i}" for i in range(6)]
    home = pages["/"].data().decode()
    links = "".join(f'<a href="{path}">f</a>' for path in flaky)
    pages["/"] = Page(home.replace("</body>", links + "</body>"))
    gate, handlers = gated(pages, 0.02)
    for path in flaky:
        handlers[path] = failing_first(3)
    site = serve(handlers)
    start = site.url("/")

    procs = start_workers(run, postgres_url, start, "--second-look", "0.5s", count=2)
    try:
        assemble(gate, postgres_url, procs)
    finally:
        results = finish(procs)

    reports = [json.loads(out) for _, out, _ in results]
    assert all(r["complete"] for r in reports), [e for _, _, e in results]
    for report in reports:
        urls = by_url(report)
        for path in flaky:
            assert (urls[site.url(path)]["state"], urls[site.url(path)]["second_look"]) == (
                "ok",
                True,
            )
    counts = site.counts()
    assert {path: counts[path] for path in flaky} == {path: 4 for path in flaky}
