#!/usr/bin/env python3
"""A crawl of a million URLs to the end: the whole process tree's memory, and the rate
from the first URL to the last.

    python bench/scale.py [--urls 1000000] [--step 100000] [--timeout 3600]

``bench/gen_site.py`` writes a site whose crawl sees about ``--urls`` URLs (once, kept in
/tmp/bench-site or ``--site DIR``), ``bench/serve.py`` serves it with nginx on 127.0.0.1, and
``linkpatrol check`` crawls it into a fresh SQLite memory, as ``bench/memory.py`` does,
with ``--max-urls`` above the site's URLs so that the crawl goes to the end. Meanwhile
the tree of the crawler and every process below it (its parse workers, the report's
helper) is sampled: the sum of their RSS, every ``--sample`` seconds; and the memory's
pass row is read, read-only, every ``--every`` seconds, for the URLs requested so far.

Prints, for each ``--step`` URLs requested, the time the crawl reached it, the rate
(URLs a second) within the step and the tree's peak within it; then the wall time, the
tree's peak (sum of RSS: pages shared by a parent and its forked children count once in
each), the crawler's own peak (``VmHWM``), and the planted broken links found in the
CSV report. A crawl still running at ``--timeout`` is stopped (exit 2). Needs psutil.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import itertools
import math
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.kit import served_site  # noqa: E402
from bench.memory import crawl_command, high_water_mb  # noqa: E402

# distinct URLs a crawl of the generated site sees per page: 131,434 at 100,000 pages,
# 26,347 at 20,000 (the far site's pages, images, assets and planted links besides)
URLS_PER_PAGE = 1.314
STOP_GRACE = 30.0  # seconds a crawl stopped at --timeout has to end before it is killed


def pages_for(urls: int) -> int:
    """The generated site's pages for a crawl of about ``urls`` URLs."""
    return max(20, round(urls / URLS_PER_PAGE))


@dataclass
class Sampled:
    """What the sampling saw: (seconds, URLs requested) and (seconds, tree MB) pairs."""

    progress: list[tuple[float, int]] = field(default_factory=lambda: [(0.0, 0)])
    memory: list[tuple[float, float]] = field(default_factory=list)
    crawler_peak: float = 0.0
    processes: set[int] = field(default_factory=set)


def tree_rss_mb(root: psutil.Process, sampled: Sampled) -> float | None:
    """The sum of RSS of ``root`` and every process below it, now; MB. None when the
    crawl is ending and nothing could be read (a zombie reads as 0): a sample of nothing."""
    try:
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:
        return None
    total = 0.0
    for process in tree:
        try:
            total += process.memory_info().rss / 2**20
        except psutil.Error:
            continue
        sampled.processes.add(process.pid)
    if not total:
        return None
    with contextlib.suppress(psutil.Error):
        sampled.crawler_peak = max(sampled.crawler_peak, high_water_mb(root))
    return total


def requested_so_far(db: Path) -> int | None:
    """The URLs the latest pass of the memory ``db`` requested, read without writing."""
    if not db.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            row = conn.execute("SELECT requested FROM passes ORDER BY id DESC LIMIT 1").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return int(row[0]) if row else None


def stop_tree(proc: subprocess.Popen[str]) -> None:
    """End the crawl's process group (it was started in a group of its own)."""
    for sig, wait in ((signal.SIGTERM, STOP_GRACE), (signal.SIGKILL, STOP_GRACE)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_sampled(
    command: list[str], db: Path, args: argparse.Namespace
) -> tuple[int | None, float, Sampled]:
    """Run the crawl, sampling it; its exit code (None if stopped at the timeout), its
    wall time and the samples."""
    sampled = Sampled()
    started = time.monotonic()
    next_read = started
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=err, text=True, start_new_session=True
        )
        root = psutil.Process(proc.pid)
        while proc.poll() is None:
            now = time.monotonic()
            if now - started > args.timeout:
                stop_tree(proc)
                return None, now - started, sampled
            mb = tree_rss_mb(root, sampled)
            if mb is not None:
                sampled.memory.append((now - started, mb))
            if now >= next_read:
                requested = requested_so_far(db)
                if requested is not None and requested > sampled.progress[-1][1]:
                    sampled.progress.append((time.monotonic() - started, requested))
                next_read = now + args.every
            time.sleep(args.sample)
        wall = time.monotonic() - started
        if proc.returncode not in (0, 1):
            err.seek(0)
            raise SystemExit(f"scale: linkpatrol failed ({proc.returncode}): {err.read()[-2000:]}")
    final = requested_so_far(db)
    if final is not None and final > sampled.progress[-1][1]:
        sampled.progress.append((wall, final))
    return proc.returncode, wall, sampled


def crossing(progress: list[tuple[float, int]], urls: int) -> float:
    """When the crawl reached ``urls`` requested, between the two samples around it."""
    for (t0, n0), (t1, n1) in itertools.pairwise(progress):
        if n0 <= urls <= n1:
            return t0 + (t1 - t0) * (urls - n0) / (n1 - n0) if n1 > n0 else t1
    return progress[-1][0]


@dataclass
class Step:
    urls: int  # requested at the step's end
    at: float  # seconds from the start
    rate: float  # URLs a second within the step
    tree_mb: float  # the tree's peak within the step


def steps(sampled: Sampled, step: int) -> list[Step]:
    """Each ``step`` URLs requested, and the last, partial step if any."""
    total = sampled.progress[-1][1]
    marks = [step * k for k in range(1, total // step + 1)]
    if not marks or marks[-1] < total:
        marks.append(total)
    out: list[Step] = []
    before_urls, before_at = 0, 0.0
    for urls in marks:
        at = crossing(sampled.progress, urls)
        # a step shorter than the sampling holds none: the last sample before it stands
        within = [mb for t, mb in sampled.memory if before_at <= t <= at] or [
            mb for t, mb in sampled.memory if t <= before_at
        ][-1:]
        rate = (urls - before_urls) / (at - before_at) if at > before_at else math.inf
        out.append(Step(urls, at, rate, max(within, default=0.0)))
        before_urls, before_at = urls, at
    return out


def reported_broken(report: Path) -> set[str]:
    with report.open(newline="", encoding="utf-8") as rows:
        return {row["url"] for row in csv.DictReader(rows) if row["state"] == "broken"}


def run(args: argparse.Namespace) -> int:
    pages = pages_for(args.urls)
    with served_site(pages, args.site) as truth, tempfile.TemporaryDirectory() as scratch:
        counts: dict[str, Any] = truth["counts"]
        planted = {entry["url"] for entry in truth["broken"]}
        print(
            f"site: {pages} pages, {counts['distinct_urls']} URLs, {len(planted)} planted "
            f"broken links; {os.cpu_count()} cores, load average "
            f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} before the crawl",
            flush=True,
        )
        db = Path(scratch) / "scale.db"
        report = Path(scratch) / "report.csv"
        command = crawl_command(truth["start_url"], db, report, "csv")
        command += ["--max-urls", str(counts["distinct_urls"] + 1000)]
        code, wall, sampled = run_sampled(command, db, args)
        found = planted & reported_broken(report) if report.exists() else set()
    done = steps(sampled, args.step)
    print(f"{'URLs':>9} {'at s':>9} {'URLs/s':>8} {'tree MB':>8}")
    for s in done:
        print(f"{s.urls:>9} {s.at:>9.1f} {s.rate:>8.0f} {s.tree_mb:>8.1f}")
    whole = [s.rate for s in done if s.urls % args.step == 0]
    if whole:
        print(
            f"rate per {args.step} URLs: slowest {min(whole):.0f}, fastest {max(whole):.0f} "
            f"URLs/s ({min(whole) / max(whole):.2f} of the fastest); last full step "
            f"{whole[-1] / whole[0]:.2f}x the first"
        )
    peak = max((mb for _, mb in sampled.memory), default=0.0)
    last = done[-1]
    ending = "" if code is None else f"; the report and exit took {wall - last.at:.1f} s"
    print(
        f"wall: {wall:.1f} s ({last.urls} URLs requested by {last.at:.1f} s, "
        f"{last.urls / max(last.at, 1e-9):.0f} URLs/s{ending})"
    )
    print(
        f"peak tree memory: {peak:.1f} MB (sum of RSS of {len(sampled.processes)} processes "
        f"seen, sampled every {args.sample:g} s); the crawler's own peak "
        f"{sampled.crawler_peak:.1f} MB"
    )
    if code is None:
        print(f"timed out: stopped after {args.timeout:g} s")
        return 2
    print(f"planted broken links found: {len(found)}/{len(planted)}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--urls", type=int, default=1_000_000, help="about how many URLs")
    parser.add_argument("--step", type=int, default=100_000, help="URLs per rate printed")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds")
    parser.add_argument("--sample", type=float, default=0.25, help="seconds between memory samples")
    parser.add_argument(
        "--site", type=Path, help="where the site is kept (default /tmp/bench-site/PAGES)"
    )
    parser.add_argument("--every", type=float, default=2.0, help="seconds between progress reads")
    return run(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
