"""``bench/scale.py``: the rate it prints for each step of URLs, and what it says of a
crawl of a small generated site from start to end."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from bench import scale
from tests.test_bench_site import free_port

ROOT = Path(__file__).resolve().parent.parent


def test_each_step_is_timed_between_the_samples_around_it() -> None:
    sampled = scale.Sampled(
        progress=[(0.0, 0), (2.0, 800), (4.0, 2000), (5.0, 2500), (5.1, 2600)],
        memory=[(1.0, 50.0), (3.0, 80.0), (3.5, 75.0), (4.5, 70.0)],
    )
    done = scale.steps(sampled, 1000)
    assert [s.urls for s in done] == [1000, 2000, 2600]
    assert [round(s.at, 3) for s in done] == [2.333, 4.0, 5.1]
    assert [round(s.rate) for s in done] == [429, 600, 545]
    assert [s.tree_mb for s in done] == [50.0, 80.0, 70.0]
    # a step no memory sample falls in has the last one before it
    assert scale.steps(sampled, 2500)[-1].tree_mb == 70.0
    assert scale.pages_for(1_000_000) == 761035


def test_a_crawl_that_has_ended_is_no_memory_sample() -> None:
    # the last sample may catch the crawl as it ends: gone, or a zombie reading 0 bytes
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    root = psutil.Process(proc.pid)
    sampled = scale.Sampled()
    assert (scale.tree_rss_mb(root, sampled) or 0) >= 0  # alive or not yet: no error
    deadline = time.monotonic() + 10
    while root.status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
        time.sleep(0.01)
    assert root.status() == psutil.STATUS_ZOMBIE
    assert scale.tree_rss_mb(root, sampled) is None
    proc.wait()
    assert scale.tree_rss_mb(root, sampled) is None
    alive = psutil.Process()
    assert (scale.tree_rss_mb(alive, sampled) or 0) > 1


@pytest.mark.skipif(shutil.which("nginx") is None and not Path("/usr/sbin/nginx").is_file(),
                    reason="nginx is not installed")  # fmt: skip
def test_a_small_crawl_is_measured_to_the_end_and_one_too_long_is_stopped(
    tmp_path: Path,
) -> None:
    # nginx's workers, started by root, read as nobody: not from pytest's private folders
    readable = Path(tempfile.mkdtemp(prefix="lp-bench-scale-"))
    readable.chmod(0o755)
    env = dict(
        os.environ,
        NGINX_RUN=str(tmp_path / "nginx"),
        SITE_PORT=str(free_port()),
        EXT_PORT=str(free_port()),
        DEAD_PORT=str(free_port()),
    )
    command = [sys.executable, str(ROOT / "bench" / "scale.py"), "--urls", "3000"]
    command += ["--step", "1000", "--every", "0.2", "--site", str(readable / "site")]
    try:
        done = subprocess.run(
            [*command, "--timeout", "120"], env=env, capture_output=True, text=True, timeout=180
        )
        assert done.returncode == 0, done.stderr
        out = done.stdout
        urls = int(re.search(r"^site: \d+ pages, (\d+) URLs", out, re.M).group(1))  # type: ignore[union-attr]
        rows = [line.split() for line in out.splitlines() if re.match(r"^ +\d+ +[\d.]+ ", line)]
        assert [int(r[0]) for r in rows[:3]] == [1000, 2000, 3000]
        assert urls - 50 <= int(rows[-1][0]) <= urls + 50  # every URL requested
        # the full steps have a rate; a last, partial one of a few URLs that waited on a
        # slow answer may print 0 URLs/s
        assert all(float(r[2]) > 0 for r in rows[:3]), rows
        assert all(float(r[3]) > 10 for r in rows), rows
        peak = re.search(r"^peak tree memory: ([\d.]+) MB \(sum of RSS of (\d+) ", out, re.M)
        assert peak and float(peak.group(1)) > 30 and int(peak.group(2)) >= 2
        found = re.search(r"^planted broken links found: (\d+)/(\d+)$", out, re.M)
        assert found and found.group(1) == found.group(2) and int(found.group(2)) >= 6

        cut = subprocess.run(
            [*command, "--timeout", "1"], env=env, capture_output=True, text=True, timeout=120
        )
        assert cut.returncode == 2, cut.stderr
        assert "timed out: stopped after 1 s" in cut.stdout
    finally:
        shutil.rmtree(readable, ignore_errors=True)
