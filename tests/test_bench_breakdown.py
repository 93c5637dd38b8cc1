"""``bench/breakdown.py`` on a small site: its phases, threads and stages are all read.

The breakdown reaches into the command (it wraps private parts of ``linkpatrol.cli`` to
time the phases and name the threads): this keeps it from quietly measuring nothing.
"""

from __future__ import annotations

import sys

from bench import breakdown
from tests import sitesrv
from tests.test_stop_resume import generated_site

LINKS_A_CONTENT_PAGE = 2  # 'up' and 'next' (and, now and then, a broken one)


def test_breakdown_times_each_phase_thread_and_stage() -> None:
    pages = generated_site(indexes=3, per_index=10)
    with sitesrv.TestSite(pages) as site:
        result = breakdown.measure(site.url("/"), reps=1, python=sys.executable)

    assert list(result["phases"]) == ["first run", "--recheck-good 1d", "plain second run"]
    for phases in result["phases"].values():
        assert all(phases[name] > 0 for name in ("start", "crawl", "report", "CPU"))
        parts = phases["start"] + phases["crawl"] + phases["report"]
        assert abs(parts - phases["whole run"]) < 1e-6
    # the second runs go over the first run's memory: the good URLs are not asked again
    # with --recheck-good, only the broken one; a plain second run asks for every URL
    made = result["requests"]
    assert made["--recheck-good 1d"] < 5 < made["plain second run"] <= made["first run"]

    roles = result["roles"]
    assert roles["crawler: main thread"][0] > 0
    assert roles["crawler: thread linkpatrol-store_0"][0] > 0  # the memory's writer
    # a report this small is written by the command alone: no helper is started for it
    assert "report's helper" not in roles
    workers = [name for name in roles if name.startswith("parse worker")]
    assert workers and all(roles[name][0] > 0 for name in workers)
    assert (
        sum(on_cpu for on_cpu, _ in roles.values()) <= result["phases"]["first run"]["CPU"] * 1.05
    )

    # every page parsed with a 200: the home page, the indexes and the content pages
    assert result["pages"] == 1 + 3 + 3 * 10
    stages = result["stages"]
    assert stages["extraction (the parse included)"] > stages["libxml2's parse"] > 0
    assert stages["links decided"] > 0
    assert LINKS_A_CONTENT_PAGE <= stages["links a page"] < 12

    table = breakdown.markdown(result)
    assert "| --recheck-good 1d |" in table and "| crawler: main thread |" in table
    assert "| libxml2's parse |" in table
