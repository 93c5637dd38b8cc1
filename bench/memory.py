#!/usr/bin/env python3
"""Peak memory of one crawl at growing site sizes: does memory grow with the site?

    python bench/memory.py [--pages 2000,10000,100000]

For each size: ``bench/gen_site.py`` writes the site (once, kept in /tmp/bench-site),
``bench/serve.py`` serves it with nginx on 127.0.0.1, and ``linkpatrol check`` crawls it into a
fresh SQLite memory under ``/usr/bin/time -v``. Prints wall time, URLs, URLs/s, the
crawl's peak RSS (its largest single process, as ``time`` reports it), the peak RSS of
the crawler process and of the largest parse worker apart, the memory file's size, and
the planted broken links found. Needs psutil. Not part of the test suite.

The peaks per process come from sampling every ``SAMPLE_INTERVAL`` seconds the process
tree under ``time``: each process's high-water mark (``VmHWM`` in ``/proc/PID/status``,
so a peak between two samples still counts), or its RSS where that file is unreadable.
The crawler is the process ``time`` started; every process below it counts as a worker.
A peak reached too close to a process's exit to be sampled is missed; if ``time``'s
figure exceeds every sampled one, it can only be the crawler's (workers end first,
and the crawler writes its report after them), so the crawler gets it.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

try:
    import psutil
except ImportError:  # pragma: no cover - a benchmark, not the suite
    raise SystemExit("bench/memory.py needs psutil: pip install psutil") from None

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.kit import served_site  # noqa: E402

SAMPLE_INTERVAL = 0.05


def high_water_mb(process: psutil.Process) -> float:
    """The process's peak RSS so far (VmHWM), else its RSS now; MB."""
    try:
        with open(f"/proc/{process.pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float(process.memory_info().rss) / 2**20


@dataclass
class TreePeaks:
    """Peak RSS per process of a running command's tree, sampled."""

    crawler: float = 0.0
    workers: dict[int, float] = field(default_factory=dict)

    def sample(self, timer: psutil.Process) -> None:
        try:
            children = timer.children()
        except psutil.Error:
            return
        for crawler in children:  # the one process /usr/bin/time started
            try:
                self.crawler = max(self.crawler, high_water_mb(crawler))
                below = crawler.children(recursive=True)
            except psutil.Error:
                continue
            for worker in below:
                try:
                    peak = high_water_mb(worker)
                except psutil.Error:
                    continue
                self.workers[worker.pid] = max(self.workers.get(worker.pid, 0.0), peak)

    @property
    def largest_worker(self) -> float:
        return max(self.workers.values(), default=0.0)


def run_sampled(command: list[str]) -> tuple[subprocess.CompletedProcess[str], TreePeaks]:
    """Run ``command`` under ``/usr/bin/time -v``, sampling its tree's peaks meanwhile."""
    peaks = TreePeaks()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            ["/usr/bin/time", "-v", *command], stdout=out, stderr=err, text=True
        )
        timer = psutil.Process(proc.pid)
        while proc.poll() is None:
            peaks.sample(timer)
            time.sleep(SAMPLE_INTERVAL)
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, out.read(), err.read())
    return done, peaks


def linkpatrol() -> list[str]:
    found = Path(sys.executable).with_name("linkpatrol")
    return [str(found)] if found.exists() else [sys.executable, "-m", "linkpatrol"]


def crawl_command(start: str, db: Path, report: Path, report_format: str = "json") -> list[str]:
    """The crawl the memory and scale benchmarks measure: ``start``'s site into the SQLite
    memory ``db``, its report to ``report``."""
    return [
        *linkpatrol(),
        "check",
        start,
        "--db",
        str(db),
        "--format",
        report_format,
        "--output",
        str(report),
        "-q",
        "--concurrency",
        "16",
    ]


def measure(pages: int) -> dict[str, float]:
    with served_site(pages) as truth, tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "bench.db"
        report = Path(scratch) / "report.json"
        command = crawl_command(truth["start_url"], db, report)
        started = time.monotonic()
        proc, peaks = run_sampled(command)
        wall = time.monotonic() - started
        if proc.returncode not in (0, 1):
            raise SystemExit(f"linkpatrol failed ({proc.returncode}): {proc.stderr[-2000:]}")
        rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
        tree_peak = int(rss.group(1)) / 1024 if rss else -1.0
        crawler = peaks.crawler
        if tree_peak > max(crawler, peaks.largest_worker):
            crawler = tree_peak  # reached too close to its exit to be sampled
        data = json.loads(report.read_text(encoding="utf-8"))
        planted = {entry["url"] for entry in truth["broken"]}
        reported = {u["url"] for u in data["urls"] if u["reportable"]}
        return {
            "pages": pages,
            "wall_s": round(wall, 2),
            "urls": data["summary"]["urls"],
            "urls_per_s": round(data["summary"]["urls"] / wall, 1),
            "peak_rss_mb": round(tree_peak, 1),
            "crawler_mb": round(crawler, 1),
            "worker_mb": round(peaks.largest_worker, 1),
            "workers": len(peaks.workers),
            "db_mb": round(db.stat().st_size / 2**20, 1),
            "planted": len(planted),
            "found": len(planted & reported),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", default="2000,10000,100000")
    args = parser.parse_args()
    rows = [measure(int(n)) for n in args.pages.split(",")]
    print(
        "| pages | URLs | wall s | URLs/s | peak RSS MB | crawler MB | largest worker MB "
        "| memory file MB | planted found |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['pages']} | {r['urls']} | {r['wall_s']} | {r['urls_per_s']} | "
            f"{r['peak_rss_mb']} | {r['crawler_mb']} | {r['worker_mb']} | "
            f"{r['db_mb']} | {r['found']}/{r['planted']} |"
        )
    print(
        "peak RSS: the largest single process (/usr/bin/time); crawler and largest worker: "
        f"each one's own peak, sampled every {SAMPLE_INTERVAL:g} s "
        f"({', '.join(str(r['workers']) for r in rows)} worker processes seen)"
    )
    first = rows[0]
    for r in rows[1:]:
        print(
            f"peak RSS at {r['pages']} pages: {r['peak_rss_mb'] / first['peak_rss_mb']:.2f}x "
            f"that at {first['pages']} (crawler {r['crawler_mb'] / first['crawler_mb']:.2f}x, "
            f"largest worker {ratio(r['worker_mb'], first['worker_mb'])})"
        )
    return 0


def ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base > 0 else "n/a"


if __name__ == "__main__":
    sys.exit(main())
