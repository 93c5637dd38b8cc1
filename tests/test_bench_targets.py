"""``bench/targets.py`` judges the speed and memory targets from a benchmark's figures:
each met or not, and whether the floor itself is within it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import docsites
from bench import targets as goals
from bench.targets import Run, Target


def judged(
    runs: dict[str, dict[str, list[Run]]], floors: dict[str, list[float]]
) -> dict[tuple[str, int, str], tuple[float, float, bool, bool | None]]:
    return {
        (t.site, t.point, t.what): (round(t.value, 3), round(t.limit, 3), t.met, t.reachable)
        for t in goals.targets(runs, floors)
    }


def test_every_target_of_a_big_site_from_medians() -> None:
    runs = {
        "libstdc++": {
            "linkpatrol": [Run(5.2, 119.0), Run(5.6, 126.0), Run(5.4, 121.0)],
            goals.WITHOUT_ANCHORS: [Run(5.0), Run(5.1), Run(4.9)],
            "linklint": [Run(13.6), Run(13.0), Run(14.0)],
            "linkinator": [Run(10.9), Run(11.2), Run(10.6)],
            "wget2": [Run(0.47), Run(0.5), Run(0.45)],
        }
    }
    assert judged(runs, {"libstdc++": [3.7, 3.6, 3.9]}) == {
        ("libstdc++", 2, "--check-anchors over without"): (1.08, 1.2, True, None),
        ("libstdc++", 5, "half the faster peer"): (5.4, 5.45, True, True),
        ("libstdc++", 5, "4 times wget2 --spider"): (5.4, 1.88, False, False),
        ("libstdc++", 5, "tree peak, PSS"): (121.0, 120.0, False, None),
    }


def test_a_small_site_is_held_to_linklint_and_the_floor_can_rule_a_target_out() -> None:
    runs = {
        "git": {
            "linkpatrol": [Run(0.43, 62.0)],
            "linklint": [Run(0.24)],
            "linkinator": [Run(0.73)],
        }
    }
    assert judged(runs, {"git": [0.18]}) == {
        ("git", 3, "no slower than linklint"): (0.43, 0.24, False, True),
        ("git", 5, "half the faster peer"): (0.43, 0.12, False, False),
        ("git", 5, "tree peak, PSS"): (62.0, 120.0, True, None),
    }


def test_only_what_was_measured_is_judged() -> None:
    runs = {
        "python": {"linkpatrol": [Run(2.4)], "wget2": [Run(0.27)]},  # no memory, no peer
        "postgresql": {"linklint": [Run(1.2)]},  # no linkpatrol run: nothing to judge
    }
    assert judged(runs, {}) == {
        ("python", 5, "4 times wget2 --spider"): (2.4, 1.08, False, None),
    }


@pytest.mark.parametrize(
    ("value", "limit", "floor", "met", "reach"),
    [
        (1.0, 1.0, None, True, "—"),  # on the limit is within it; no floor to hold it to
        (1.01, 1.0, 0.5, False, "yes"),
        (0.9, 1.0, 1.2, True, "no: the limit is below the floor"),
    ],
)
def test_the_table_says_met_and_within_reach(
    value: float, limit: float, floor: float | None, met: bool, reach: str
) -> None:
    target = Target("git", 5, "half the faster peer", value, limit, "s", floor)
    assert target.met is met
    row = goals.table([target]).splitlines()[2]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[5] == ("yes" if met else "no")
    assert cells[7] == reach
    assert cells[3] == f"{value:.2f} s"


def test_the_benchmark_runs_linkpatrol_without_anchors_kept_to_the_site() -> None:
    start = "http://127.0.0.1:18091/"
    plain = docsites.tool_spec(goals.WITHOUT_ANCHORS, start)
    checked = docsites.tool_spec("linkpatrol", start)
    assert "--check-anchors" not in plain["cmd"]
    assert "--check-anchors" in checked["cmd"]
    for spec in (plain, checked):
        assert spec["parse"] == "linkpatrol"
        at = spec["cmd"].index("--include")
        assert spec["cmd"][at + 1] == r"^http://127\.0\.0\.1:18091/"
    assert plain["cmd"] == [part for part in checked["cmd"] if part != "--check-anchors"]


def test_memory_is_shown_in_megabytes_to_a_tenth() -> None:
    row = goals.table([Target("git", 5, "tree peak, PSS", 62.46, 120.0, "MB")]).splitlines()[2]
    assert "| 62.5 MB | 120.0 MB | yes | — | — | — |" in row


def test_the_generated_site_is_judged_from_every_round_of_every_tool() -> None:
    from bench import run

    records = [
        {
            "tool": "linkpatrol",
            "wall_s": w,
            "tree_pss_mb": m,
            "to_first_answer_s": first,
            "after_last_answer_s": 0.06,
        }
        for w, m, first in ((1.63, 60.1, 0.16), (1.66, 60.5, 0.17), (1.70, 59.9, 0.19))
    ]
    records += [{"tool": "linklint", "wall_s": w} for w in (1.81, 1.79, 1.85)]
    records += [{"tool": "wget2", "wall_s": w, "tree_pss_mb": 9.0} for w in (0.19, 0.2, 0.18)]

    lines = run.target_lines(records, [0.56, 0.55, 0.6])

    rows = [line for line in "\n".join(lines).splitlines() if line.startswith("| generated |")]
    assert rows == [
        "| generated | 5 | half the faster peer | 1.66 s | 0.91 s | no | 0.56 s | yes | 0.23 s |",
        "| generated | 5 | 4 times wget2 --spider | 1.66 s | 0.76 s | no | 0.56 s | yes | 0.23 s |",
        "| generated | 5 | tree peak, PSS | 60.1 MB | 120.0 MB | yes | — | — | — |",
    ]
    assert "3 rounds, each after the tools' round" in lines[1]


def test_the_time_targets_show_linkpatrols_start_and_end_where_measured() -> None:
    runs = {
        "libstdc++": {
            "linkpatrol": [Run(6.2, 110.0, 1.05), Run(5.9, 112.0, 0.95), Run(6.4, 127.0, None)],
            "linkinator": [Run(11.3), Run(11.4)],
        },
        "git": {"linkpatrol": [Run(0.41)], "linklint": [Run(0.24)]},  # ends not measured
    }
    found = {(t.site, t.what): t.ends for t in goals.targets(runs, {})}
    assert found == {
        ("libstdc++", "half the faster peer"): 1.0,  # the median of the two measured
        ("libstdc++", "tree peak, PSS"): None,  # not a time
        ("git", "no slower than linklint"): None,
        ("git", "half the faster peer"): None,
    }
    rows = goals.table(goals.targets(runs, {})).splitlines()
    assert rows[0].endswith("| of linkpatrol's time, its start and end |")
    assert rows[2].endswith("| 1.00 s |")
    assert rows[3].endswith("| — |")


@pytest.mark.parametrize(
    ("times", "ends"),
    [
        ({"to_first_answer_s": 0.172, "after_last_answer_s": 0.801}, 0.973),
        ({"to_first_answer_s": None, "after_last_answer_s": None}, None),  # the log had none
        ({"to_first_answer_s": 0.2}, None),
        ({}, None),  # an older record
    ],
)
def test_a_runs_fixed_costs_are_its_two_ends(
    times: dict[str, float | None], ends: float | None
) -> None:
    from bench import run_peers

    assert run_peers.ends_of(times) == ends


def test_the_floor_runs_in_each_round_and_its_walls_are_read_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench import floor, run_peers

    asked: list[tuple[str, int, str]] = []

    def one_round(start: str, workers: int, kind: str) -> tuple[float, float, int, int]:
        asked.append((start, workers, kind))
        return 0.5 + len(asked) / 100, 0.8, 2675, 31

    monkeypatch.setattr(floor, "one_round", one_round)
    for rep in (3, 1, 2):  # recorded in any order
        run_peers.run_floor("http://127.0.0.1:18081/", rep, tmp_path)
    (tmp_path / "linkpatrol-1.json").write_text('{"tool": "linkpatrol", "wall_s": 1.6}')

    assert asked == [("http://127.0.0.1:18081/", 2, "libxml2")] * 3
    assert run_peers.floor_walls(tmp_path) == [0.52, 0.53, 0.51]  # rounds 1, 2, 3
    # kept apart from the tools' records, which report() and run.py read
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["linkpatrol-1.json"]
    record = json.loads((tmp_path / "floor" / "floor-1.json").read_text())
    assert record == {
        "tool": "floor",
        "rep": 1,
        "wall_s": 0.52,
        "cpu_s": 0.8,
        "urls_checked": 2675,
        "broken": 31,
    }
