"""How values and options may be spelled: durations in milliseconds, the report format
from the output file's name, ``--check-anchors all``, and what a misspelt name was meant
to be."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from linkpatrol.cli import _command_line, _spelled_out, build_parser, main
from linkpatrol.config import build_settings, format_for_output
from linkpatrol.model import AnchorMode, ReportFormat
from linkpatrol.options import did_you_mean, parse_duration
from tests.conftest import Runner, Serve
from tests.sitesrv import Page, html

# ---- durations ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("200ms", 0.2),
        ("1ms", 0.001),
        ("0.5ms", 0.0005),
        ("1s500ms", 1.5),
        ("1m30s", 90.0),
        ("2m", 120.0),
        ("1h 30m", 5400.0),
        ("1.5h", 5400.0),
        ("45", 45.0),
        ("250 MS", 0.25),
        (3, 3.0),
    ],
)
def test_a_duration_is_read_in_every_unit(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["forever", "200mss", "ms", "5 ms s", "1y", ""])
def test_a_wrong_duration_says_how_to_write_one(text: str) -> None:
    with pytest.raises(ValueError, match="duration") as caught:
        parse_duration(text)
    if text:
        assert "200ms, 90s, 15m, 2h, 7d" in str(caught.value)


def test_a_delay_in_milliseconds_spaces_the_requests(run: Runner, serve: Serve) -> None:
    pages = "".join(f'<a href="/{n}.html">{n}</a>' for n in range(4))
    site = serve(
        {
            "/": Page(html("<html><body>", pages, "</body></html>")),
            **{f"/{n}.html": Page(html("<p>page</p>")) for n in range(4)},
            "/robots.txt": Page("", status=404),
        }
    )

    proc = run.check(site.url("/"), "--delay", "200ms", "--per-host", "1", "-q")

    assert proc.returncode == 0, proc.stderr
    times = sorted(hit.at for hit in site.requests() if hit.path != "/robots.txt")
    assert len(times) == 6  # the folder's probe takes its turn too
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert min(gaps) >= 0.15, gaps
    assert max(gaps) < 2.0, gaps  # milliseconds, not minutes or seconds


# ---- the report format from the output file's extension ------------------------------------


@pytest.mark.parametrize(
    ("output", "format_"),
    [
        ("report.html", ReportFormat.HTML),
        ("out/REPORT.HTM", ReportFormat.HTML),
        ("report.json", ReportFormat.JSON),
        ("links.csv", ReportFormat.CSV),
        ("links.md", ReportFormat.MARKDOWN),
        ("junit.xml", ReportFormat.JUNIT),
        ("scan.sarif", ReportFormat.SARIF),
        ("graph.dot", ReportFormat.DOT),
        ("report.txt", ReportFormat.TEXT),
        ("report.pdf", ReportFormat.TEXT),
        ("report", ReportFormat.TEXT),
        ("report.html.bak", ReportFormat.TEXT),
    ],
)
def test_an_output_files_extension_names_its_format(output: str, format_: ReportFormat) -> None:
    assert format_for_output(output) is format_
    assert build_settings({}, {"output": output}).format is format_


@pytest.mark.parametrize(
    ("file_values", "cli_values", "format_"),
    [
        ({}, {}, ReportFormat.TEXT),
        ({"output": "r.json"}, {}, ReportFormat.JSON),
        ({}, {"output": "r.csv"}, ReportFormat.CSV),
        ({}, {"output": "r.json", "format": ReportFormat.TEXT}, ReportFormat.TEXT),
        ({"format": ReportFormat.SARIF}, {"output": "r.json"}, ReportFormat.SARIF),
        ({"format": ReportFormat.HTML, "output": "r.txt"}, {}, ReportFormat.HTML),
        ({"output": "r.html"}, {"output": "r.md"}, ReportFormat.MARKDOWN),
    ],
)
def test_a_format_given_wins_over_the_extension(
    file_values: dict[str, Any], cli_values: dict[str, Any], format_: ReportFormat
) -> None:
    assert build_settings(file_values, cli_values).format is format_


def test_check_and_report_write_the_format_the_file_name_asks_for(
    run: Runner, serve: Serve
) -> None:
    site = serve(
        {
            "/": Page(html("<html><body>", '<a href="/gone.html">gone</a>', "</body></html>")),
            "/robots.txt": Page("", status=404),
        }
    )

    checked = run.check(site.url("/"), "-o", "report.json")
    assert checked.returncode == 1, checked.stderr
    report = json.loads(Path(run.cwd, "report.json").read_text())
    assert [u["url"] for u in report["urls"] if u["state"] == "broken"] == [site.url("/gone.html")]

    reported = run("report", "--db", run.db, "-o", "report.html")
    assert reported.returncode == 1, reported.stderr
    assert Path(run.cwd, "report.html").read_text().lstrip().lower().startswith("<!doctype html")

    plain = run("report", "--db", run.db, "-o", "report.md", "--format", "text")
    assert plain.returncode == 1, plain.stderr
    text = Path(run.cwd, "report.md").read_text()
    assert site.url("/gone.html") in text
    assert not text.startswith("#") and "|" not in text.splitlines()[0]


# ---- --check-anchors with a value after a space ---------------------------------------------

START = "https://example.org/"


@pytest.mark.parametrize(
    ("argv", "mode", "starts"),
    [
        (["--check-anchors", START], AnchorMode.SITE, [START]),
        ([START, "--check-anchors"], AnchorMode.SITE, [START]),
        (["--check-anchors", "all", START], AnchorMode.ALL, [START]),
        ([START, "--check-anchors", "all"], AnchorMode.ALL, [START]),
        (["--check-anchors", "site", START], AnchorMode.SITE, [START]),
        (["--check-anchors", "off", START], AnchorMode.OFF, [START]),
        (["--check-anchors=all", START], AnchorMode.ALL, [START]),
        (["--check-anchors", "./all", START], AnchorMode.SITE, ["./all", START]),
        (["--check-anchors", "All", START], AnchorMode.SITE, ["All", START]),
        (["--check-anchors", "--", "all"], AnchorMode.SITE, ["all"]),
        ([START, "--", "--check-anchors", "all"], None, [START, "--check-anchors", "all"]),
    ],
)
def test_only_a_mode_right_after_check_anchors_is_its_value(
    argv: list[str], mode: AnchorMode | None, starts: list[str]
) -> None:
    args = build_parser().parse_args(_spelled_out(["check", *argv]))

    given = _command_line(args)
    assert given.get("check_anchors") is mode
    assert given["start_urls"] == tuple(starts)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--check-anchors=bogus"], "argument --check-anchors: invalid choice: 'bogus'"),
        (["--check-anchors="], "argument --check-anchors: invalid choice: ''"),
    ],
)
def test_a_wrong_anchor_mode_is_named_as_typed(run: Runner, argv: list[str], said: str) -> None:
    proc = run.check(*argv, START)

    assert proc.returncode == 2
    assert said in proc.stderr
    assert "-mode" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_check_anchors_all_with_a_space_judges_outside_pages(run: Runner, serve: Serve) -> None:
    outside = serve({"/doc.html": Page(html('<h1 id="install">Install</h1>'))})
    site = serve(
        {
            "/": Page(
                html(
                    "<html><body>",
                    f'<a href="{outside.url("/doc.html#install")}">ok</a>',
                    f'<a href="{outside.url("/doc.html#nowhere")}">gone</a>',
                    "</body></html>",
                )
            ),
            "/robots.txt": Page("", status=404),
        }
    )

    code, report = run.check_json("--check-anchors", "all", site.url("/"))

    assert code == 1
    broken = {u["url"]: u["error"] for u in report["urls"] if u["state"] == "broken"}
    assert broken == {outside.url("/doc.html#nowhere"): "missing anchor"}

    code, report = run.check_json("--db", ":memory:", "--check-anchors", site.url("/"))

    assert code == 0, report  # the site's own pages only: the URL is a start, not a mode
    assert site.url("/") in {u["url"] for u in report["urls"]}


# ---- did you mean ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["chekc"], "unknown command 'chekc'; did you mean 'check'?"),
        (["reprot"], "unknown command 'reprot'; did you mean 'report'?"),
        (["frobnicate"], "unknown command 'frobnicate' (choose from check, report, history,"),
        (["check", "--max-dpeth", "3", START], "--max-dpeth; did you mean '--max-depth'?"),
        (["check", "--max-dpeth=3", START], "--max-dpeth=3; did you mean '--max-depth'?"),
        (["check", "--timeuot", "2s", START], "did you mean '--timeout'?"),
        (["report", "--chekc-anchors"], "did you mean '--check-anchors'?"),
        (["status", "--formt", "json"], "did you mean '--format'?"),
        (["--versoin"], "did you mean '--version'?"),
        (["check", "--zzzzzzzz", START], "unrecognized arguments: --zzzzzzzz (see"),
        (["history", "--check-anchors-mod", "x"], "unrecognized arguments: --check-anchors-mod"),
    ],
)
def test_a_misspelt_command_or_option_is_answered_with_the_one_meant(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)

    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert said in err
    assert len(err.splitlines()) == 1
    assert "-mode" not in err  # the parser's own names stay its own


@pytest.mark.parametrize(
    ("word", "known", "hint"),
    [
        ("max-dpeth", ["max-depth", "max-size"], "; did you mean 'max-depth'?"),
        ("prefx", ["prefix", "glob", "regex"], "; did you mean 'prefix'?"),
        ("zzz", ["prefix", "glob", "regex"], ""),
        ("", ["prefix"], ""),
    ],
)
def test_did_you_mean_names_the_closest_known_word(word: str, known: list[str], hint: str) -> None:
    assert did_you_mean(word, known) == hint


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        ("max-dpeth = 3\n", "unknown key 'max-dpeth'; did you mean 'max-depth'?"),
        ("max_dpeth = 3\n", "unknown key 'max_dpeth'; did you mean 'max_depth'?"),
        ("chek_anchors = true\n", "did you mean 'check_anchors'?"),
        ("[[rule]]\nprefx = 'http://a/'\naction = 'ignore'\n", "did you mean 'prefix'?"),
        ("[[rewrite]]\nregex = 'a'\nreplac = 'b'\n", "did you mean 'replace'?"),
        ("[[site]]\nprefix = 'http://a/'\nuser-agnet = 'x'\n", "did you mean 'user-agent'?"),
        ("qqqqqq = 1\n", "unknown key 'qqqqqq'\n"),
    ],
)
def test_a_misspelt_key_is_answered_with_the_one_meant(run: Runner, toml: str, said: str) -> None:
    Path(run.cwd, "linkpatrol.toml").write_text(toml)

    proc = run.check(START)

    assert proc.returncode == 2
    assert said in proc.stderr
    assert proc.stderr.startswith("linkpatrol: linkpatrol.toml: ")
    assert len(proc.stderr.splitlines()) == 1


def test_a_misspelt_option_stops_the_check_before_any_request(run: Runner, serve: Serve) -> None:
    site = serve({"/": Page(html("<p>hi</p>"))})

    proc = run.check("--max-dpeth", "3", site.url("/"))

    assert proc.returncode == 2
    assert proc.stderr == (
        "linkpatrol: unrecognized arguments: --max-dpeth; did you mean '--max-depth'? "
        "(see linkpatrol --help)\n"
    )
    assert proc.stdout == ""
    assert site.requests() == []
