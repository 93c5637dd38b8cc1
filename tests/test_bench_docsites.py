"""``bench/docsites.py`` takes its ground truth from a manual's files: a little manual
with one missing page, one missing anchor and one page no link reaches."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench import docsites, run_peers

BASE = "http://127.0.0.1:18091"


def test_the_truth_is_what_a_crawl_of_the_files_finds(tmp_path: Path) -> None:
    (tmp_path / "guide").mkdir()
    (tmp_path / "index.html").write_text(
        '<html><body><a href="guide/">guide</a> <a href="gone.html">gone</a>'
        ' <a href="https://example.org/">outside</a> <img src="logo%20big.png"></body></html>'
    )
    (tmp_path / "logo big.png").write_bytes(b"\x89PNG")
    (tmp_path / "guide" / "index.html").write_text(
        '<html><body><h2 id="start">x</h2><a name="old">y</a>'
        '<a href="#start">a</a> <a href="#old">b</a> <a href="#nowhere">c</a>'
        ' <a href="../index.html#top">d</a></body></html>'
    )
    (tmp_path / "orphan.html").write_text('<a href="also-gone.html">never crawled</a>')

    truth = docsites.truth_of(tmp_path, BASE)

    assert truth.pages == 3  # /, /guide/ and /index.html: two URLs of one file, as crawled
    assert truth.missing == {f"{BASE}/gone.html"}
    assert truth.links == {
        f"{BASE}/guide/",
        f"{BASE}/gone.html",
        f"{BASE}/logo big.png",
        f"{BASE}/index.html",
    }
    assert truth.missing_anchors == {f"{BASE}/guide/#nowhere", f"{BASE}/index.html#top"}
    assert len(truth.anchors) == 4


def test_a_tool_is_scored_on_its_own_site_whatever_its_escaping() -> None:
    truth = docsites.Truth(missing={f"{BASE}/a b.html"}, missing_anchors={f"{BASE}/x.html#y"})
    reported = {
        f"{BASE}/a%20b.html",  # found, escaped
        f"{BASE}/x.html#y",  # found
        f"{BASE}/ok.html",  # false
        f"{BASE}/x.html#",  # an empty fragment: a false anchor report
        "http://127.0.0.1:9/elsewhere",  # another site: not counted
    }
    assert docsites.scored(reported, truth, BASE) == {
        "found": 1,
        "false": 1,
        "anchors found": 1,
        "false anchors": 1,
    }


CHILD_HOLDS = """
import os, sys, time
held = bytearray(os.urandom(1 << 20)) * 60  # 60 MB of the child's own
if os.fork() == 0:
    mine = bytearray(os.urandom(1 << 20)) * 40  # 40 MB more, in the forked child alone
    time.sleep(1.2)
    os._exit(0)
os.wait()
"""


def test_the_memory_of_a_run_is_its_whole_process_tree() -> None:
    """A forked child's own memory counts in both sums; the pages it shares with its
    parent count twice in RSS and once in PSS."""
    run = subprocess.Popen([sys.executable, "-c", CHILD_HOLDS])
    tree = run_peers.TreeMemory(run.pid)
    run.wait(timeout=30)
    tree.stop()

    assert run.returncode == 0
    assert tree.pss_mb > 60 + 40  # the parent's 60 MB and the child's 40 MB, each once
    assert tree.rss_mb > tree.pss_mb + 40  # the 60 MB shared after the fork, twice


def test_the_fixed_costs_at_either_end_leave_out_answers_logged_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tool before (the floor's crawl) had its answers flushed to the log after the
    next run had read the log's size: they are not that run's first answers."""
    log = tmp_path / "access.log"
    log.write_text(
        "18091 GET 200 /earlier.html 1000.100\n"  # the run before's, flushed late
        "18091 GET 200 / 1000.520\n"
        "18091 GET 404 /gone.html 1002.250\n"
    )
    monkeypatch.setattr(run_peers.serve, "ACCESS_LOG", log)
    monkeypatch.setattr(run_peers, "LOG_FLUSH_S", 0)

    times = run_peers.quick_start({"began_at": 1000.5, "ended_at": 1002.75}, 0)

    assert times == {"to_first_answer_s": 0.02, "after_last_answer_s": 0.5}


def test_the_requests_counted_leave_out_answers_logged_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The floor's crawl, just before, had its answers flushed to the log after the next
    tool's run had read the log's size: they are not that tool's requests."""
    log = tmp_path / "access.log"
    log.write_text(
        "18081 GET 200 /earlier.html 1000.100\n"  # the run before's, flushed late
        "18081 HEAD 200 / 1000.520\n"
        "18081 GET 404 /gone.html 1002.250\n"
        "18082 GET 200 /far.html 1002.300\n"
    )
    monkeypatch.setattr(run_peers.serve, "ACCESS_LOG", log)
    monkeypatch.setattr(run_peers, "LOG_FLUSH_S", 0)

    assert run_peers.server_counts(0, since=1000.5) == {
        "18081 HEAD": 1,
        "18081 GET": 1,
        "18082 GET": 1,
    }
    assert run_peers.server_counts(0) == {"18081 HEAD": 1, "18081 GET": 2, "18082 GET": 1}


def test_a_run_is_recorded_as_a_section_with_its_command_and_targets() -> None:
    truth = docsites.Truth(missing={f"{BASE}/gone.html"}, missing_anchors=set())
    times = {
        "user_s": 0.4,
        "sys_s": 0.1,
        "to_first_answer_s": 0.17,
        "after_last_answer_s": 0.03,
        "tree_rss_mb": 116.0,
        "tree_pss_mb": 63.0,
    }
    score = {"found": 1, "false": 0, "anchors found": 0, "false anchors": 0}
    rows = [("git", "linkpatrol", 1, 0.42, times, truth, score)]
    rows.append(("git", "linklint", 1, 0.28, times, truth, score))

    text = docsites.section(
        rows, ["git: 218 pages"], "| site | point |", "python bench/docsites.py --sites git"
    )

    assert text.startswith("## Real documentation sites (`python bench/docsites.py --sites git`)")
    assert "- git: 218 pages" in text
    assert "| git | linkpatrol | 0.42 | 1.00 | 0.5 | 0.17 | 0.03 | 1/1 | 0 | 0/0 | 0 |" in text
    assert "| git | linklint | 0.28 | 0.67 |" in text
    assert text.rstrip().endswith(
        "The targets (medians of 1; the floor: `floor.py --site-only`):\n\n| site | point |"
    )


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        ([], "python bench/docsites.py"),
        (
            ["--targets", "--out", "/tmp/r.md", "--reps", "3"],
            "python bench/docsites.py --targets --reps 3",
        ),
        (["--out=-", "--sites", "git"], "python bench/docsites.py --sites git"),
    ],
)
def test_the_recorded_command_leaves_out_where_it_was_written(argv: list[str], shown: str) -> None:
    assert docsites.command_of(argv) == shown
