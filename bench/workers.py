#!/usr/bin/env python3
"""Many workers, one crawl: how much faster 2 and 4 workers finish a pass than one.

    python bench/workers.py [--pages 1000] [--latency 0.05] [--concurrency 8]
                            [--per-host 64] [--workers 1,2,4] [--reps 1]
                            [--db postgresql://postgres@127.0.0.1:5432/test | --netns]

Serves a generated site on 127.0.0.1 whose every response takes ``--latency`` seconds
(a distant server), and crawls it with N copies of the same ``linkpatrol check``
command sharing one PostgreSQL memory (a fresh schema per run, dropped after). Each
worker has ``--concurrency`` requests in flight; ``--per-host`` is shared by all, so it
is set high enough not to be what limits them. Prints wall time and speed-up per N, and
when the site sent its first and its last answer (the workers' start and their end
weigh on a small site).

With ``--netns`` (root; ``tests/netlab.py``) each worker runs on a host of its own: a
network namespace of its own, joined by a bridge to the site's namespace, which holds
the site and a PostgreSQL server of the benchmark's own (thrown away after) that the
workers reach over the bridge, as separate machines would; ``--db`` is then unused.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import netlab  # noqa: E402
from tests.sitesrv import Page, TestSite, html  # noqa: E402


def site_pages(count: int) -> dict[str, Page]:
    """A home page, index pages of 50, content pages linking to their neighbours."""
    per_index = 50
    indexes = max(1, count // per_index)
    pages = {"/robots.txt": Page("User-agent: *\nDisallow:\n", content_type="text/plain")}
    pages["/"] = Page(html(*(f'<a href="/i/{i}.html">index {i}</a>' for i in range(indexes))))
    for i in range(indexes):
        links = [f'<a href="/p/{i}/{j}.html">page {j}</a>' for j in range(per_index)]
        pages[f"/i/{i}.html"] = Page(html('<a href="/">home</a>', *links))
        for j in range(per_index):
            nxt = f'<a href="/p/{(i + 1) % indexes}/{j}.html">next</a>'
            pages[f"/p/{i}/{j}.html"] = Page(html(f'<a href="/i/{i}.html">up</a>', nxt))
    return pages


def slow(pages: dict[str, Page], latency: float) -> dict[str, Any]:
    def handler(page: Page) -> Any:
        def serve(request: Any) -> int:
            time.sleep(latency)
            return int(request._send_page(page, request.path))

        return serve

    return {path: handler(page) for path, page in pages.items()}


def in_schema(url: str, schema: str) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "options"]
    query.append(("options", f"-csearch_path={schema}"))
    return urlunsplit(parts._replace(query=urlencode(query)))


def admin(url: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(statement)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def own_cpu() -> float:
    """This process's CPU seconds: the test server's, above all."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Hosts:
    """Where the site and the workers run, and how each reaches the PostgreSQL server."""

    site: TestSite
    admin_db: str  # this process's way to the server
    worker_db: str  # the workers'
    on_worker: Callable[[int], list[str]]  # the prefix that runs a command on worker i's host


@contextlib.contextmanager
def loopback(pages: dict[str, Any], db: str) -> Iterator[Hosts]:
    """Everything on this machine's 127.0.0.1."""
    site = TestSite(pages)
    site.start()
    try:
        yield Hosts(site, db, db, lambda _: [])
    finally:
        site.stop()


@contextlib.contextmanager
def namespaces(pages: dict[str, Any], workers: int) -> Iterator[Hosts]:
    """A host of its own for each worker, the site and a PostgreSQL server on another."""
    reason = netlab.unavailable()
    if reason is not None:
        sys.exit(f"bench: --netns: {reason}")
    with netlab.Lab(workers) as lab, lab.postgres() as (shared, here):
        site = lab.serve(pages)
        try:
            yield Hosts(site, here, shared, lab.on_worker)
        finally:
            site.stop()


def crawl(hosts: Hosts, workers: int, args: argparse.Namespace) -> tuple[float, float]:
    """Seconds from starting ``workers`` identical commands to the last one's exit, and
    the CPU seconds they used (their parser processes included)."""
    schema = f"lp_bench_{uuid.uuid4().hex[:10]}"
    admin(hosts.admin_db, f'CREATE SCHEMA "{schema}"')
    memory = in_schema(hosts.worker_db, schema)
    command = [
        sys.executable,
        "-m",
        "linkpatrol",
        "check",
        hosts.site.url("/"),
        "--db",
        memory,
        "--concurrency",
        str(args.concurrency),
        "--per-host",
        str(args.per_host),
        "-q",
        "--format",
        "json",
    ]
    try:
        cpu = children_cpu()
        started = time.monotonic()
        procs = [
            subprocess.Popen(
                [*hosts.on_worker(i), *command],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(workers)
        ]
        for proc in procs:
            _, err = proc.communicate(timeout=600)
            if proc.returncode not in (0, 1):
                sys.exit(f"bench: a worker failed ({proc.returncode}): {err.strip()}")
        return time.monotonic() - started, children_cpu() - cpu
    finally:
        admin(hosts.admin_db, f'DROP SCHEMA "{schema}" CASCADE')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--per-host", type=int, default=64)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--db", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--netns", action="store_true", help="each worker on a host of its own")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    pages = site_pages(args.pages)
    served = slow(pages, args.latency)
    place = namespaces(served, max(counts)) if args.netns else loopback(served, args.db)
    with place as hosts:
        print(
            f"{len(pages)} URLs, {args.latency * 1000:.0f} ms per response, "
            f"--concurrency {args.concurrency} per worker, --per-host {args.per_host} in all"
        )
        if args.netns:
            print(
                "each worker in a network namespace of its own; the site and PostgreSQL in another"
            )
        print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} before the runs")
        print(
            f"{'workers':>7} {'wall s':>8} {'CPU s':>7} {'server CPU s':>12} {'URLs/s':>8} "
            f"{'speed-up':>8} {'1st answer s':>12} {'last answer s':>13}"
        )
        base = None
        for workers in counts:
            times, cpus, served_cpu, answers = [], [], [], []
            for _ in range(args.reps):
                hosts.site.clear()
                before, started = own_cpu(), time.time()
                wall, cpu = crawl(hosts, workers, args)
                at = [hit.at - started for hit in hosts.site.requests()]
                answers.append((min(at, default=0.0), max(at, default=0.0)))
                times.append(wall)
                cpus.append(cpu)
                served_cpu.append(own_cpu() - before)
                repeated = sum(1 for n in hosts.site.counts().values() if n > 1)
                if repeated:
                    print(f"  (warning: {repeated} URLs requested more than once)")
            wall, cpu = statistics.median(times), statistics.median(cpus)
            base = base or wall
            print(
                f"{workers:>7} {wall:>8.2f} {cpu:>7.2f} {statistics.median(served_cpu):>12.2f} "
                f"{len(pages) / wall:>8.0f} {base / wall:>7.2f}x "
                f"{statistics.median(a[0] for a in answers):>12.2f} "
                f"{statistics.median(a[1] for a in answers):>13.2f}"
            )
        print(f"load average {os.getloadavg()[0]:.1f} after the runs")


if __name__ == "__main__":
    main()
