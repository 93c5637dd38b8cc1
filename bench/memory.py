#!/usr/bin/env python3
"""Peak memory of one crawl at growing site sizes: does memory grow with the site?

    python bench/memory.py [--pages 2000,10000,100000] [--kit ../shared/bench]

For each size: the kit's ``gen_site.py`` writes the site (once, kept in /tmp/bench-site),
``serve.sh`` serves it with nginx on 127.0.0.1, and ``linkpatrol check`` crawls it into a
fresh SQLite memory under ``/usr/bin/time -v``. Prints wall time, URLs, URLs/s, the
crawl's peak RSS (its largest process: the crawler; parse workers are smaller), the
memory file's size, and the planted broken links found. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_KIT = HERE.parent.parent / "shared" / "bench"


def linkpatrol() -> list[str]:
    found = Path(sys.executable).with_name("linkpatrol")
    return [str(found)] if found.exists() else [sys.executable, "-m", "linkpatrol"]


def measure(pages: int, kit: Path) -> dict[str, float]:
    out = Path(f"/tmp/bench-site/{pages}")
    if not (out / "truth.json").exists():
        subprocess.run([sys.executable, kit / "gen_site.py", "--pages", str(pages)], check=True)
    subprocess.run(["bash", kit / "serve.sh", "stop"], capture_output=True, check=False)
    subprocess.run(["bash", kit / "serve.sh", "start", out], check=True, capture_output=True)
    truth = json.loads((out / "truth.json").read_text(encoding="utf-8"))
    try:
        with tempfile.TemporaryDirectory() as scratch:
            db = Path(scratch) / "bench.db"
            report = Path(scratch) / "report.json"
            command = [
                *linkpatrol(),
                "check",
                truth["start_url"],
                "--db",
                str(db),
                "--format",
                "json",
                "--output",
                str(report),
                "-q",
                "--concurrency",
                "16",
            ]
            started = time.monotonic()
            proc = subprocess.run(
                ["/usr/bin/time", "-v", *command], capture_output=True, text=True, check=False
            )
            wall = time.monotonic() - started
            if proc.returncode not in (0, 1):
                raise SystemExit(f"linkpatrol failed ({proc.returncode}): {proc.stderr[-2000:]}")
            rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
            data = json.loads(report.read_text(encoding="utf-8"))
            planted = {entry["url"] for entry in truth["broken"]}
            reported = {u["url"] for u in data["urls"] if u["reportable"]}
            return {
                "pages": pages,
                "wall_s": round(wall, 2),
                "urls": data["summary"]["urls"],
                "urls_per_s": round(data["summary"]["urls"] / wall, 1),
                "peak_rss_mb": round(int(rss.group(1)) / 1024, 1) if rss else -1.0,
                "db_mb": round(db.stat().st_size / 2**20, 1),
                "planted": len(planted),
                "found": len(planted & reported),
            }
    finally:
        subprocess.run(["bash", kit / "serve.sh", "stop"], capture_output=True, check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", default="2000,10000,100000")
    parser.add_argument("--kit", type=Path, default=DEFAULT_KIT)
    args = parser.parse_args()
    os.environ.setdefault("NGINX_RUN", "/tmp/bench-nginx")
    rows = [measure(int(n), args.kit) for n in args.pages.split(",")]
    print("| pages | URLs | wall s | URLs/s | peak RSS MB | memory file MB | planted found |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['pages']} | {r['urls']} | {r['wall_s']} | {r['urls_per_s']} | "
            f"{r['peak_rss_mb']} | {r['db_mb']} | {r['found']}/{r['planted']} |"
        )
    base = rows[0]["peak_rss_mb"]
    for r in rows[1:]:
        print(
            f"peak RSS at {r['pages']} pages: {r['peak_rss_mb'] / base:.2f}x that at "
            f"{rows[0]['pages']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
