#!/usr/bin/env python3
"""The benchmark's site served by Python's own http.server, as a site is previewed.

    python bench/devserver.py [--site /tmp/bench-site/2000] [--reps 3]
                              [--protocols HTTP/1.0,HTTP/1.1] [--no-linklint]

A site previewed before it is published is often served by ``python -m http.server``:
one thread per connection, a queue of six connections waiting to be accepted, and, with
``--protocol HTTP/1.1``, keep-alive with the head and body of each answer written apart,
Nagle's algorithm on. This serves the site made by ``bench/gen_site.py`` (and its "far" site)
so, on the ports the nginx benchmark uses (``python bench/serve.py stop`` first), and runs
linkpatrol (``linkpatrol`` on PATH) and linklint against it, in turn, ``--reps`` times
per protocol. Prints, per protocol and tool, the median wall and CPU seconds, and for
linkpatrol the URLs, the planted broken links found and the false reports.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import linkpatrol_command, timed  # the nginx benchmark's

SITE_PORT, FAR_PORT = 18081, 18082
START = f"http://127.0.0.1:{SITE_PORT}/"
# as the nginx benchmark runs them
LINKPATROL_OPTIONS = [
    *("--format", "json", "--output", "report.json"),
    *("-q", "--db", "bench.db", "--concurrency", "16"),
]
LINKLINT_OPTIONS = f"-http -host 127.0.0.1:{SITE_PORT} -limit 1000000 -net -doc doc /@".split()


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def serve(folder: Path, port: int, protocol: str) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "http.server", "--bind", "127.0.0.1"),
            *("--protocol", protocol, "--directory", str(folder), str(port)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while not listening(port):
        if time.monotonic() > deadline or server.poll() is not None:
            server.kill()
            sys.exit(f"devserver: http.server did not start on port {port}")
        time.sleep(0.05)
    return server


def scored(report: Path, truth: dict) -> tuple[int, int, int]:
    """(URLs, planted broken links reported, reports of links not planted broken)."""
    data = json.loads(report.read_text())
    reported = {u["url"] for u in data["urls"] if u["state"] == "broken" and u["reportable"]}
    planted = {b["url"] for b in truth["broken"]}
    return data["summary"]["urls"], len(reported & planted), len(reported - planted)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=Path("/tmp/bench-site/2000"))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--protocols", default="HTTP/1.0,HTTP/1.1")
    parser.add_argument("--no-linklint", action="store_true")
    args = parser.parse_args()
    if not (args.site / "site").is_dir() or not (args.site / "truth.json").is_file():
        sys.exit(f"devserver: {args.site} is no site made by bench/gen_site.py")
    if listening(SITE_PORT) or listening(FAR_PORT):
        sys.exit(f"devserver: ports {SITE_PORT}/{FAR_PORT} are taken (python bench/serve.py stop)")
    linkpatrol = linkpatrol_command()
    linklint = None if args.no_linklint else shutil.which("linklint")
    truth = json.loads((args.site / "truth.json").read_text())
    work = Path(tempfile.mkdtemp(prefix="lp-devserver-"))
    print(f"{linkpatrol}; linklint: {linklint or 'not run'}; {args.reps} rounds per protocol")
    rows = []
    for protocol in args.protocols.split(","):
        servers = [
            serve(args.site / "site", SITE_PORT, protocol),
            serve(args.site / "ext", FAR_PORT, protocol),
        ]
        runs: dict[str, list[dict]] = {"linkpatrol": [], "linklint": []}
        found = (0, 0, 0)
        try:
            for _ in range(args.reps):
                for name in ("report.json", "bench.db", "bench.db-wal", "bench.db-shm"):
                    (work / name).unlink(missing_ok=True)
                runs["linkpatrol"].append(
                    timed([linkpatrol, "check", START, *LINKPATROL_OPTIONS], work)
                )
                found = scored(work / "report.json", truth)
                if linklint is not None:
                    shutil.rmtree(work / "linklint", ignore_errors=True)
                    (work / "linklint").mkdir()
                    runs["linklint"].append(timed([linklint, *LINKLINT_OPTIONS], work / "linklint"))
        finally:
            for server in servers:
                server.terminate()
                server.wait(timeout=10)
        for tool, times in runs.items():
            if times:
                failed = [run for run in times if run["exit"] not in (0, 1)]
                if failed:
                    sys.exit(f"devserver: {tool} failed (exit code {failed[0]['exit']})")
                wall = statistics.median(run["wall_s"] for run in times)
                cpu = statistics.median(run["cpu_s"] for run in times)
                rows.append((protocol, tool, wall, cpu, found if tool == "linkpatrol" else None))
    print()
    print("| server | tool | wall s | CPU s | URLs | planted found | false reports |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for protocol, tool, wall, cpu, score in rows:
        urls, hits, false = score or ("", "", "")
        planted = f"{hits}/{len(truth['broken'])}" if score else ""
        print(
            f"| http.server {protocol} | {tool} | {wall:.2f} | {cpu:.2f} | {urls} | {planted} "
            f"| {false} |"
        )
    for protocol in args.protocols.split(","):
        walls = {tool: wall for p, tool, wall, _, _ in rows if p == protocol}
        if len(walls) == 2:
            print(
                f"\n{protocol}: linkpatrol {walls['linklint'] / walls['linkpatrol']:.2f}x "
                "linklint's speed (wall time)"
            )
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
