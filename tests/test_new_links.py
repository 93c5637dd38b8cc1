"""Failing only on what is new: a link the report names that the last complete pass of the
same start URLs (or a baseline, an earlier run's JSON report) did not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from jsonschema import Draft202012Validator

from linkpatrol.model import State
from linkpatrol.report import is_new, named_as
from tests.conftest import Runner, Serve, memory_write
from tests.sitesrv import Page
from tests.test_report_json import SCHEMA_PATH, assert_valid
from tests.test_schema import back_to_schema_8

if TYPE_CHECKING:
    from tests.sitesrv import TestSite

GOOD = Page("<p>here</p>")
GONE = Page("<h1>gone</h1>", status=404)
REFUSED = Page("no robots", status=403)

B, W = State.BROKEN, State.WARNING


@pytest.mark.parametrize(
    ("url", "named", "earlier", "new"),
    [
        ("/b", B, None, True),  # nothing to compare with: all it names is new
        ("/w", W, None, True),
        ("/ok", None, None, False),  # not named: never new
        ("/ok", None, {"/ok": B}, False),  # mended
        ("/b", B, {}, True),  # broke since
        ("/b", B, {"/b": B}, False),  # broken both times
        ("/b", B, {"/other": B}, True),  # added broken
        ("/b", B, {"/b": W}, True),  # was a warning, now broken
        ("/w", W, {"/w": B}, True),  # was broken, now a warning
        ("/w", W, {"/w": W}, False),
    ],
)
def test_what_is_new(
    url: str, named: State | None, earlier: dict[str, State] | None, new: bool
) -> None:
    assert is_new(url, named, earlier) is new


@pytest.mark.parametrize(
    ("state", "reportable", "redirects_as_warnings", "named"),
    [
        (State.BROKEN, True, False, B),
        (State.BROKEN, False, False, None),  # held back by --report-after
        (State.WARNING, False, False, W),
        (State.REDIRECT, False, False, None),
        (State.REDIRECT, False, True, W),  # --redirects report
        (State.OK, False, True, None),
    ],
)
def test_how_a_report_names_a_url(
    state: State, reportable: bool, redirects_as_warnings: bool, named: State | None
) -> None:
    assert named_as(state, reportable, redirects_as_warnings) is named


def _home(*paths: str) -> Page:
    return Page("".join(f'<a href="{path}">{path}</a>\n' for path in paths))


def _reported(report: dict[str, Any], site: TestSite) -> dict[str, bool]:
    """path -> new, for the URLs the report names."""
    start = site.url("/")[:-1]
    return {
        e["url"].removeprefix(start): e["new"]
        for e in report["urls"]
        if e["reportable"] or e["state"] == "warning"
    }


@pytest.mark.backends
def test_three_passes_fail_on_what_broke_or_was_added_broken_not_on_what_stays(
    run: Runner, serve: Serve
) -> None:
    site = serve({"/": _home("/a", "/b", "/w"), "/a": GOOD, "/b": GONE, "/w": REFUSED})
    home = site.url("/")

    # the first pass: nothing earlier, so everything it reports is new
    code, first = run.check_json(home, "--fail-on", "new")
    assert code == 1
    assert _reported(first, site) == {"/b": True, "/w": True}
    assert first["compared_with"] is None and first["summary"]["new"] == 2

    # /a breaks; /b stays broken
    site.pages["/a"] = GONE
    code, second = run.check_json(home, "--fail-on", "new")
    assert code == 1
    assert _reported(second, site) == {"/a": True, "/b": False, "/w": False}
    assert second["compared_with"] == {"pass": 1, "baseline": None}
    text = run("report", "--db", run.db).stdout
    assert "New: 1 new since pass 1" in text
    block = text[text.index(site.url("/a")) :].split("\n\n")[0]
    assert " · new" in block
    assert " · new" not in text[text.index(site.url("/b")) :].split("\n\n")[0]

    # /a mends, and a link added to the page is broken from the start
    site.pages["/a"] = GOOD
    site.pages["/"] = _home("/a", "/b", "/w", "/d")
    code, third = run.check_json(home, "--fail-on", "new")
    assert code == 1
    assert _reported(third, site) == {"/b": False, "/w": False, "/d": True}
    assert third["options"]["fail_on"] == "new"

    # nothing changes: what is broken stays reported, and fails nothing
    code, fourth = run.check_json(home, "--fail-on", "new")
    assert code == 0
    assert _reported(fourth, site) == {"/b": False, "/w": False, "/d": False}
    assert fourth["summary"]["reportable"] == 2 and fourth["summary"]["new"] == 0
    # 'linkpatrol report' says the same, as the pass keeps --fail-on; without it, 1
    assert run("report", "--db", run.db, "--format", "json").returncode == 0
    assert run("report", "--db", run.db, "--fail-on", "broken").returncode == 1

    # a pass of other start URLs in between is no earlier pass of these
    assert run.check(site.url("/a"), "--fail-on", "new").returncode == 0
    site.pages["/a"] = GONE
    code, fifth = run.check_json(home, "--fail-on", "new")
    assert code == 1
    assert _reported(fifth, site) == {"/a": True, "/b": False, "/w": False, "/d": False}
    assert fifth["compared_with"] == {"pass": 4, "baseline": None}
    validator = Draft202012Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    for report in (first, second, third, fourth, fifth):
        assert_valid(validator, report)
    graph = run("report", "--db", run.db, "--format", "dot").stdout
    doubled = [line for line in graph.splitlines() if "peripheries=2" in line]
    assert len(doubled) == 1 and 'tooltip="' + site.url("/a") + '"' in doubled[0]


def test_a_baseline_from_another_memory_is_the_earlier_pass(
    run: Runner, serve: Serve, tmp_path: Path
) -> None:
    site = serve({"/": _home("/a", "/b"), "/a": GOOD, "/b": GONE})
    home = site.url("/")
    elsewhere = Runner(tmp_path, str(tmp_path / "elsewhere.db"))
    assert elsewhere.check(home, "-o", "baseline.json").returncode == 1

    # a memory that has never seen the site: the baseline says /b was reported
    code, report = run.check_json(home, "--fail-on", "new", "--baseline", "baseline.json")
    assert code == 0
    assert _reported(report, site) == {"/b": False}
    assert report["compared_with"] == {"pass": 1, "baseline": "baseline.json"}
    validator = Draft202012Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    assert_valid(validator, report)

    site.pages["/"] = _home("/a", "/b", "/c")
    code, report = run.check_json(home, "--fail-on", "new", "--baseline", "baseline.json")
    assert code == 1
    assert _reported(report, site) == {"/b": False, "/c": True}
    # the baseline is kept with the pass: 'linkpatrol report' compares with it too
    again = json.loads(run("report", "--db", run.db, "--format", "json").stdout)
    assert _reported(again, site) == {"/b": False, "/c": True}
    assert run("report", "--db", run.db).returncode == 1
    # a baseline given to 'report' replaces it
    assert elsewhere.check(home, "-o", "now.json").returncode == 1
    proc = run("report", "--db", run.db, "--baseline", "now.json", "--format", "json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["summary"]["new"] == 0


def test_only_new_lists_the_new_links_in_markdown_and_sarif(run: Runner, serve: Serve) -> None:
    site = serve({"/": _home("/a", "/b", "/w"), "/a": GOOD, "/b": GONE, "/w": REFUSED})
    home = site.url("/")
    assert run.check(home).returncode == 1
    site.pages["/a"] = GONE
    assert run.check(home, "--only-new", "--fail-on", "new").returncode == 1

    markdown = run("report", "--db", run.db, "--format", "markdown").stdout
    assert "1 new since pass 1 (only these are listed: --only-new)." in markdown
    rows = [line for line in markdown.splitlines() if line.startswith("| `")]
    assert len(rows) == 1 and site.url("/a") in rows[0] and "🆕" in rows[0]
    sarif = json.loads(run("report", "--db", run.db, "--format", "sarif").stdout)
    (results,) = [r["results"] for r in sarif["runs"]]
    assert {r["message"]["text"].split()[2].rstrip(":") for r in results} == {site.url("/a")}
    assert all(r["properties"]["new"] is True for r in results)
    assert sarif["runs"][0]["properties"]["newSince"] == "pass 1"

    # without it (a configuration named to 'report' replaces the pass's options) every
    # reported link, the new ones marked
    (run.cwd / "all.toml").write_text("only_new = false\n", encoding="utf-8")
    whole = run("report", "--db", run.db, "--format", "markdown", "--config", "all.toml").stdout
    rows = [line for line in whole.splitlines() if line.startswith("| `")]
    assert len(rows) == 3 and sum("🆕" in row for row in rows) == 1
    sarif = json.loads(
        run("report", "--db", run.db, "--format", "sarif", "--config", "all.toml").stdout
    )
    new = {r["properties"]["new"] for r in sarif["runs"][0]["results"]}
    assert len(sarif["runs"][0]["results"]) == 3 and new == {True, False}


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "cannot read the baseline: No such file or directory"),
        ("{not json", "the baseline is not JSON: Expecting property name enclosed in double"),
        (
            '{"version": "2.1.0", "runs": []}',  # a SARIF report
            'the baseline is not a linkpatrol JSON report (--format json): no "tool": "linkpatrol"',
        ),
        (
            '{"tool": "linkpatrol", "schema": 1, "urls": [{"url": "x"}]}',
            'urls[0] lacks a "url", "state" or "reportable"',
        ),
    ],
    ids=["missing", "not JSON", "another format", "wrong schema"],
)
def test_a_bad_baseline_is_one_line_and_exit_2_before_anything_is_written(
    run: Runner, serve: Serve, tmp_path: Path, content: str | None, said: str
) -> None:
    site = serve({"/": _home("/b"), "/b": GONE})
    baseline = tmp_path / "old.json"
    if content is not None:
        baseline.write_text(content, encoding="utf-8")
    db = tmp_path / "fresh.db"

    proc = run.check(site.url("/"), "--db", str(db), "--baseline", "old.json", "-o", "r.json")

    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("linkpatrol: old.json: ") and said in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    assert not db.exists() and not (tmp_path / "r.json").exists()
    assert site.requests() == []
    # the same for a report
    assert run.check(site.url("/")).returncode == 1
    proc = run("report", "--db", run.db, "--baseline", "old.json")
    assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1


def test_a_memory_from_before_takes_its_last_pass_broken_links_as_reported(
    run: Runner, serve: Serve
) -> None:
    site = serve({"/": _home("/b"), "/b": GONE})
    assert run.check(site.url("/")).returncode == 1
    back_to_schema_8(run.db)
    memory_write(run.db, "UPDATE meta SET value = '8' WHERE key = 'schema_version'")

    code, report = run.check_json(site.url("/"), "--fail-on", "new")

    assert code == 0 and _reported(report, site) == {"/b": False}
