"""Every view of a pass says what its check saw: ``report`` and the dashboard render the
pass with the options it was checked with, and every chart agrees with its headline."""

from __future__ import annotations

import json
import re
import signal
from typing import Any

import pytest

from linkpatrol.config import FORMATS
from tests.conftest import Runner
from tests.sitesrv import Page
from tests.test_dashboard import start_dashboard

pytestmark = pytest.mark.backends

# the options that shape a report, all away from their defaults
SHAPING = (
    "--check-anchors",
    "--report-after",
    "3d",
    "--damp-new",
    "--fail-on",
    "warning",
    "--redirects",
    "report",
)
_CHART = re.compile(r"pass (\d+): (\d+) broken, (\d+) warnings")
_PILL = re.compile(r'class="pill pill-(broken|warning)">(\d+) ')


def html(*links: str) -> str:
    body = "".join(f'<p><a href="{href}">{href}</a></p>\n' for href in links)
    return f"<!doctype html><html><head><title>t</title></head><body>\n{body}</body></html>"


def site_pages() -> dict[str, Page]:
    return {
        "/": Page(html("/a.html#here", "/a.html#nowhere", "/gone", "/forbidden", "/old", "/flaky")),
        "/a.html": Page(html("/") + '<h2 id="here">here</h2>'),
        "/gone": Page("gone", status=404, content_type="text/plain"),
        "/forbidden": Page("no", status=403, content_type="text/plain"),
        "/old": Page("", status=301, headers={"Location": "/a.html"}),
        "/flaky": Page("fine", content_type="text/plain"),
    }


def chart(document: str) -> dict[int, tuple[int, int]]:
    """The trend chart's figures: (broken, warnings) by pass."""
    return {int(p): (int(b), int(w)) for p, b, w in _CHART.findall(document)}


def headline(document: str) -> tuple[int, int]:
    """The headline's pills: (broken, warnings)."""
    pills = dict(_PILL.findall(document))
    return int(pills.get("broken", 0)), int(pills.get("warning", 0))


def test_report_renders_each_format_as_the_check_did(run: Runner, serve: Any) -> None:
    site = serve(site_pages())
    first = run.check(site.url("/"), *SHAPING)  # every link good once, but /gone
    assert first.returncode == 1, first.stderr
    site.pages["/flaky"] = Page("gone", status=404, content_type="text/plain")

    checked: dict[str, tuple[int, str]] = {}
    for fmt in FORMATS:
        proc = run.check(site.url("/"), *SHAPING, "--format", fmt)
        again = run("report", "--db", run.db, "--format", fmt)
        assert proc.stderr == "" and again.stderr == "", (fmt, proc.stderr, again.stderr)
        assert (again.returncode, again.stdout) == (proc.returncode, proc.stdout), fmt
        checked[fmt] = (proc.returncode, proc.stdout)

    code, text = checked["json"]
    report = json.loads(text)
    broken = {e["url"] for e in report["urls"] if e["state"] == "broken" and e["reportable"]}
    held = {e["url"] for e in report["urls"] if e["state"] == "broken" and not e["reportable"]}
    assert code == 1  # a warning fails it (--fail-on warning)
    assert broken == {site.url("/a.html#nowhere")}  # the missing anchor, which report dropped
    assert held == {site.url("/gone"), site.url("/flaky")}  # failing for less than 3 days
    assert report["summary"]["warnings"] == 2  # 403, and the redirect (--redirects report)
    assert report["options"]["check_anchors"] == "site"
    assert report["options"]["report_after"] == 3 * 86400
    assert report["options"]["damp_new"] is True
    assert "Checked with --check-anchors=site --report-after 3d --damp-new" in checked["text"][1]

    # an option given to 'report' wins over the pass's, the others stay as checked
    plain = run("report", "--db", run.db, "--format", "json", "--check-anchors=off")
    dropped = json.loads(plain.stdout)
    assert plain.returncode == 1  # the warnings still fail it
    assert dropped["summary"]["reportable"] == 0
    assert dropped["options"]["fail_on"] == "warning"
    lenient = run("report", "--db", run.db, "--check-anchors=off", "--fail-on", "broken", "-q")
    assert (lenient.returncode, lenient.stdout) == (0, "")
    at_once = run("report", "--db", run.db, "--format", "json", "--report-after", "0")
    now = {e["url"] for e in json.loads(at_once.stdout)["urls"] if e["reportable"]}
    assert now == broken | held


def test_charts_and_the_dashboard_agree_with_each_pass_s_headline(
    run: Runner, serve: Any, tmp_path: Any
) -> None:
    site = serve(site_pages())
    headlines: dict[int, tuple[int, int]] = {}
    for options in ((), SHAPING, ("--check-anchors",), SHAPING):
        code, report = run.check_json(site.url("/"), *options)
        assert code == 1
        s = report["summary"]
        headlines[report["pass"]] = (s["reportable"], s["warnings"])
        if options == ("--check-anchors",):
            site.pages["/flaky"] = Page("gone", status=404, content_type="text/plain")
    # counted as each pass's own report counted them: missing anchors, warnings, threshold
    assert list(headlines.values()) == [(1, 1), (1, 2), (2, 1), (1, 2)]

    again = run("report", "--db", run.db, "--format", "json")
    assert {
        p["pass"]: (p["broken"], p["warnings"]) for p in json.loads(again.stdout)["passes"]
    } == (headlines)
    document = run("report", "--db", run.db, "--format", "html").stdout
    assert chart(document) == headlines
    assert headline(document) == headlines[max(headlines)]

    board = start_dashboard(run.db, tmp_path)
    try:
        page = board.get("/")
        assert page.status == 200
        assert chart(page.body) == headlines
        assert headline(page.body) == headlines[max(headlines)]
    finally:
        board.proc.send_signal(signal.SIGTERM)
        board.proc.communicate(timeout=30)
