#!/usr/bin/env python3
"""What the HTTP client alone costs: the requests of a crawl of the generated site, and
nothing else (no parsing, no memory, no report), through each client linkpatrol can use.

    python bench/clients.py [--pages 2000] [--reps 5] [--concurrency 16]

Each run is a fresh process that imports its client and sends the requests a crawl of
the site sends (a GET for every file of the site, a HEAD for every file of the far
site), ``--concurrency`` at a time over kept-alive connections. Prints, per client,
the median import time, request time and CPU time. Needs the site served by
``python bench/serve.py start``; not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

SITE_PORT, FAR_PORT = 18081, 18082

# Each client's program: reads the (method, URL) list as JSON on stdin, prints
# {"import": s, "requests": s, "cpu": s, "done": n}.
_COMMON = """
import json, resource, sys, time
started = time.perf_counter()
{imports}
imported = time.perf_counter()
todo = json.load(sys.stdin)
limit = int(sys.argv[1])
done = 0
{body}
finished = time.perf_counter()
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({{"import": imported - started, "requests": finished - imported,
                  "cpu": usage.ru_utime + usage.ru_stime, "done": done}}))
"""

AIOHTTP = _COMMON.format(
    imports="import asyncio, aiohttp",
    body="""
async def main():
    global done
    queue = list(reversed(todo))
    connector = aiohttp.TCPConnector(limit=limit, limit_per_host=limit)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def worker():
            global done
            while queue:
                method, url = queue.pop()
                async with session.request(method, url, allow_redirects=False) as resp:
                    await resp.read()
                    done += 1
        await asyncio.gather(*(worker() for _ in range(limit)))
asyncio.run(main())
""",
)

PYCURL = _COMMON.format(
    imports="import pycurl",
    body="""
multi = pycurl.CurlMulti()
multi.setopt(pycurl.M_MAX_HOST_CONNECTIONS, limit)
queue = list(reversed(todo))
idle = [pycurl.Curl() for _ in range(limit)]
running = 0
def begin(handle):
    method, url = queue.pop()
    handle.setopt(pycurl.URL, url)
    handle.setopt(pycurl.NOBODY, method == "HEAD")
    if method == "GET":
        handle.setopt(pycurl.HTTPGET, 1)
    handle.setopt(pycurl.WRITEFUNCTION, len)
    multi.add_handle(handle)
while queue and idle:
    begin(idle.pop())
    running += 1
while running:
    status, _ = multi.perform()
    while status == pycurl.E_CALL_MULTI_PERFORM:
        status, _ = multi.perform()
    _, ok, bad = multi.info_read()
    for handle in ok + [entry[0] for entry in bad]:
        done += handle.getinfo(pycurl.RESPONSE_CODE) > 0
        multi.remove_handle(handle)
        running -= 1
        if queue:
            begin(handle)
            running += 1
    if not (ok or bad):
        multi.select(1.0)
""",
)

CLIENTS = {"aiohttp": AIOHTTP, "pycurl": PYCURL}


def requests_of(site: Path) -> list[tuple[str, str]]:
    """A GET for every file of the site, a HEAD for every file of the far site."""
    todo = []
    for folder, port, method in (("site", SITE_PORT, "GET"), ("ext", FAR_PORT, "HEAD")):
        root = site / folder
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            todo.append((method, f"http://127.0.0.1:{port}/{path.relative_to(root).as_posix()}"))
    return todo


def measure(program: str, todo: list[tuple[str, str]], concurrency: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", program, str(concurrency)],
        input=json.dumps(todo),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return dict(json.loads(done.stdout))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    site = Path(os.environ.get("BENCH_SITE", f"/tmp/bench-site/{args.pages}"))
    if not site.is_dir():
        sys.exit(f"clients: no site at {site}: run bench/run.py --pages {args.pages} first")
    todo = requests_of(site)
    print(f"{len(todo)} requests, {args.concurrency} at a time, median of {args.reps}")
    print("| client | import s | requests s | CPU s | requests/s |")
    print("|---|---:|---:|---:|---:|")
    for name, program in CLIENTS.items():
        runs = [measure(program, todo, args.concurrency) for _ in range(args.reps)]
        if any(run["done"] != len(todo) for run in runs):
            sys.exit(f"clients: {name} did not finish every request")
        med = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        rate = len(todo) / med["requests"]
        print(
            f"| {name} | {med['import']:.3f} | {med['requests']:.3f} | {med['cpu']:.2f} "
            f"| {rate:,.0f} |"
        )


if __name__ == "__main__":
    main()
