"""History: each change of verdict is kept, and reports say what is new and what flaps."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from jsonschema import Draft202012Validator

from linkpatrol.model import State
from linkpatrol.report import flips, named_as, recent_verdicts
from linkpatrol.store import Change
from tests.conftest import Runner, Serve, memory_rows
from tests.sitesrv import Page
from tests.test_report_json import SCHEMA_PATH, assert_valid

if TYPE_CHECKING:
    from tests.sitesrv import TestSite

GOOD = Page("<p>here</p>")
GONE = Page("<h1>gone</h1>", status=404)


def _site(serve: Serve) -> TestSite:
    return serve(
        {
            "/": Page('<h1>home</h1>\n<a href="/flaky">flaky</a>\n<a href="/steady">steady</a>'),
            "/flaky": GOOD,
            "/steady": GONE,
        }
    )


def _entry(report: dict, url: str) -> dict:
    return next(u for u in report["urls"] if u["url"] == url)


def test_each_change_of_verdict_is_kept_with_its_pass_and_reports_mark_new_and_flapping(
    run: Runner, serve: Serve
) -> None:
    validator = Draft202012Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    site = _site(serve)
    flaky, steady = site.url("/flaky"), site.url("/steady")
    reports = []
    for flaky_page in (GOOD, GONE, GOOD, GONE):
        site.pages["/flaky"] = flaky_page
        code, report = run.check_json(site.url("/"))
        assert code == 1
        assert_valid(validator, report)
        reports.append(report)

    # one row per change, not per check: /steady failed once and stayed so
    rows = memory_rows(
        run.db,
        "SELECT u.url, h.pass_id, h.state, h.http_status FROM history h "
        "JOIN urls u ON u.id = h.url_id WHERE u.url IN (?, ?) ORDER BY h.at",
        (flaky, steady),
    )
    assert [r for r in rows if r[0] == steady] == [(steady, 1, "broken", 404)]
    assert [r[1:] for r in rows if r[0] == flaky] == [
        (1, "ok", 200),
        (2, "broken", 404),
        (3, "ok", 200),
        (4, "broken", 404),
    ]
    # new: in the first pass all it reports (nothing earlier to compare with), then only
    # what the last pass did not report
    assert _entry(reports[0], steady)["new"]
    assert _entry(reports[1], flaky)["new"] and not _entry(reports[1], steady)["new"]
    assert _entry(reports[3], flaky)["new"]
    assert [c["state"] for c in _entry(reports[3], flaky)["changes"]] == [
        "ok",
        "broken",
        "ok",
        "broken",
    ]
    assert [(p["pass"], p["broken"]) for p in reports[3]["passes"]] == [
        (1, 1),
        (2, 2),
        (3, 1),
        (4, 2),
    ]

    text = run("report", "--db", run.db).stdout
    flaky_block = text[text.index(flaky) :].split("\n\n")[0]
    assert " · new · " in flaky_block and "New: 1 new since pass 3" in text
    assert "flapping: 4 changes in the last 7 passes" in flaky_block
    steady_block = text[text.index(steady) :].split("\n\n")[0]
    assert " · new" not in steady_block and "flapping" not in steady_block


def test_history_command_prints_one_urls_story(run: Runner, serve: Serve) -> None:
    site = _site(serve)
    for flaky_page in (GOOD, GONE, GOOD):
        site.pages["/flaky"] = flaky_page
        run.check_json(site.url("/"))

    # any equivalent spelling finds it
    spelled = site.url("/flaky").replace("http://", "HTTP://")
    proc = run("history", spelled, "--db", run.db)

    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == site.url("/flaky")
    assert lines[1] == "  now: ok: HTTP 200"
    changes = [line.split()[2:5] for line in lines if line.startswith("    20")]
    assert changes == [["pass", "1", "ok"], ["pass", "2", "broken"], ["pass", "3", "ok"]]
    assert "flapping: 3 in the last 7 passes" in proc.stdout
    assert f"    {site.url('/')}:2" in lines

    data = json.loads(run("history", site.url("/"), "--db", run.db, "--format", "json").stdout)
    assert data["state"] == "ok" and data["response_ms"] > 0
    assert [(link["url"], link["line"]) for link in data["links"]] == [
        (site.url("/flaky"), 2),
        (site.url("/steady"), 3),
    ]


def test_history_of_an_unknown_or_bad_url_is_one_line_and_exit_2(run: Runner, serve: Serve) -> None:
    site = _site(serve)
    run.check_json(site.url("/"))

    unknown = run("history", site.url("/never"), "--db", run.db)
    bad = run("history", "http://[::1", "--db", run.db)

    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr == f"linkpatrol: {run.db}: {site.url('/never')} is not in the memory\n"
    assert bad.returncode == 2 and bad.stderr.startswith("linkpatrol: http://[::1: not a URL (")


def test_a_flapping_link_broken_for_less_than_the_threshold_is_a_warning(
    run: Runner, serve: Serve
) -> None:
    """Three changes of verdict or more in the last seven passes: a link broken for less
    than --report-after is a warning, "flapping", instead of being held back silently;
    broken for longer (here: no threshold), it is broken as ever."""
    site = _site(serve)
    flaky = site.url("/flaky")
    for flaky_page in (GOOD, GONE, GOOD, GONE):
        site.pages["/flaky"] = flaky_page
        code, report = run.check_json(site.url("/"), "--report-after", "3d")

    assert _entry(report, flaky)["state"] == "broken" and not _entry(report, flaky)["reportable"]
    text = run("report", "--db", run.db).stdout
    warnings = text[text.index("Warnings (") :]
    assert flaky in warnings and "flapping: 4 changes in the last 7 passes" in warnings
    assert "Failing, not reported yet" not in text or flaky not in text.split("Warnings (")[0]
    assert run("report", "--db", run.db, "--fail-on", "warning").returncode == 1
    # the summary's line, wherever the lines after it (what is new, the fetch slots) end
    summary = next(line for line in text.splitlines() if line.startswith("Summary: "))
    assert report["summary"]["warnings"] == 1 and ", 1 warning," in summary

    code, report = run.check_json(site.url("/"))  # the fifth pass, no threshold: an alarm
    assert code == 1 and _entry(report, flaky)["reportable"]


@pytest.mark.parametrize(
    ("passes", "changes", "verdicts", "count"),
    [
        ([1, 2, 3], [], [None, None, None], 0),
        ([1, 2, 3, 4], [(1, "ok"), (2, "broken"), (4, "ok")], ["ok", "broken", "broken", "ok"], 3),
        ([5, 6, 7], [(1, "ok"), (6, "broken")], ["ok", "broken", "broken"], 1),  # one in range
        ([8, 9], [(3, "ok"), (4, "broken"), (5, "ok")], ["ok", "ok"], 0),  # all before them
    ],
)
def test_recent_verdicts_and_flips_of_a_url(
    passes: list[int], changes: list[tuple[int, str]], verdicts: list[str | None], count: int
) -> None:
    made = [Change(float(p), p, State(s), None, None) for p, s in changes]
    assert [v.value if v else None for v in recent_verdicts(made, passes)] == verdicts
    assert flips(made, set(passes)) == count


@pytest.mark.parametrize(
    ("state", "reportable", "flapping", "named"),
    [
        (State.BROKEN, True, True, State.BROKEN),  # broken longer than the threshold
        (State.BROKEN, False, True, State.WARNING),  # held back, but flapping
        (State.BROKEN, False, False, None),  # held back
        (State.OK, False, True, None),  # flapping, good now
        (State.WARNING, False, False, State.WARNING),
    ],
)
def test_how_a_report_names_a_flapping_link(
    state: State, reportable: bool, flapping: bool, named: State | None
) -> None:
    assert named_as(state, reportable, False, flapping) is named
