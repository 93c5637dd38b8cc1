#!/usr/bin/env python3
"""The least a link checker in Python can do on the benchmark's site, with linkpatrol's
own libraries: a floor for any design built on them.

    python bench/floor.py [--site http://127.0.0.1:18081/] [--reps 5] [--workers 0,1,2]
                          [--site-only] [--linklint]

It fetches every URL of the site once (GET within the site, HEAD outside it; libcurl's
multi interface, 16 at a time, as linkpatrol's fetcher), parses each HTML page with
libxml2 (lxml, as linkpatrol's parse workers), takes every ``href`` and ``src`` by one
XPath, resolves them with ``urllib.parse.urljoin`` and keeps the new ones. Nothing else:
no robots.txt, no memory, no lines, no decisions, no report, no progress, no limits. With
``--workers N`` the pages are parsed in N processes while the first fetches, as
linkpatrol's crawl does; 0 parses where the pages arrive. With ``--site-only`` the URLs
of other sites are not requested (as ``docsites.py`` keeps every tool to the manual it
checks: nothing leaves the machine).

Serve the site first (``python bench/serve.py start /tmp/bench-site/2000``).
Prints, per variant, the median wall time, CPU time (the process and its children),
URLs, broken URLs, and with ``--linklint`` linklint's time on the same site and the ratio
of URLs/s. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from multiprocessing.connection import Connection
from typing import Any
from urllib.parse import urljoin, urlsplit

CONCURRENCY = 16
ROUND_LIMIT = 120.0  # seconds: a variant that takes longer has met something wrong


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def values_of(body: bytes, parser: object) -> list[str]:
    """The page's ``href`` and ``src`` values, by libxml2 (through lxml) or by lexbor
    (through selectolax, which says nowhere on what line a tag is)."""
    if parser == "lexbor":
        from selectolax.lexbor import LexborHTMLParser

        values = []
        for node in LexborHTMLParser(body).css("[href],[src]"):
            attributes = node.attributes
            for name in ("href", "src"):
                value = attributes.get(name)
                if value is not None:
                    values.append(value)
        return values
    from lxml import etree

    try:
        root = etree.fromstring(body, parser)
    except (etree.XMLSyntaxError, ValueError):
        return []
    return [] if root is None else [str(value) for value in root.xpath("//@href|//@src")]


def links_of(body: bytes, url: str, parser: object) -> list[str]:
    """The page's links made absolute, fragments dropped.

    ``urljoin`` takes about 7 us a link; a link already absolute, or absolute from the
    site's root, is taken as it is, which about halves the cost of a page.
    """
    origin = url[: url.index("/", url.index("//") + 2)]
    found = []
    for value in values_of(body, parser):
        value = value.strip()
        if value.startswith(("http://", "https://")):
            absolute = value
        elif value.startswith("/") and not value.startswith("//"):
            absolute = origin + value
        else:
            absolute = urljoin(url, value)
        hash_at = absolute.find("#")
        if hash_at >= 0:
            absolute = absolute[:hash_at]
        if absolute.startswith(("http://", "https://")):
            found.append(absolute)
    return found


def make_parser(kind: str) -> object:
    if kind == "lexbor":
        return kind
    from lxml import etree

    return etree.HTMLParser(encoding="utf-8", remove_blank_text=True, no_network=True)


def parse_worker(conn: Connection, inherited: list[Connection], kind: str) -> None:
    """Parses what the fetcher sends; answers with the links not sent back before."""
    for pipe in inherited:  # the fetcher's ends, which a forked child holds too
        pipe.close()
    parser = make_parser(kind)
    seen: set[str] = set()
    while True:
        try:
            message = conn.recv_bytes()
        except EOFError:
            return
        url, _, body = message.partition(b"\0")
        fresh = []
        for link in links_of(body, url.decode(), parser):
            if link not in seen:
                seen.add(link)
                fresh.append(link)
        conn.send(fresh)


class Floor:
    """One crawl of the site: fetch, parse (here or in worker processes), queue."""

    def __init__(
        self, start: str, workers: int, kind: str = "libxml2", site_only: bool = False
    ) -> None:
        import pycurl

        self.pycurl = pycurl
        self.site = urlsplit(start).netloc
        self.site_only = site_only
        self.queue: deque[str] = deque([start])
        self.seen = {start}
        self.broken: list[str] = []
        self.checked = 0
        self.multi = pycurl.CurlMulti()
        self.free = [self._handle() for _ in range(CONCURRENCY)]
        self.parser = make_parser(kind)
        self.pipes: list[Connection] = []
        self.kids = []
        self.pending = 0
        context = multiprocessing.get_context("fork")
        for _ in range(workers):
            ours, theirs = context.Pipe()
            inherited = [*self.pipes, ours]
            kid = context.Process(target=parse_worker, args=(theirs, inherited, kind), daemon=True)
            kid.start()
            theirs.close()
            self.pipes.append(ours)
            self.kids.append(kid)
        self.turn = 0

    def _handle(self) -> Any:
        pycurl = self.pycurl
        handle = pycurl.Curl()
        handle.setopt(pycurl.CONNECTTIMEOUT, 10)
        handle.setopt(pycurl.TIMEOUT, 30)
        handle.setopt(pycurl.NOSIGNAL, 1)
        return handle

    def _start(self, url: str) -> None:
        pycurl = self.pycurl
        handle = self.free.pop()
        chunks: list[bytes] = []
        handle.chunks = chunks
        handle.url = url
        handle.setopt(pycurl.URL, url)
        inside = urlsplit(url).netloc == self.site
        handle.setopt(pycurl.NOBODY, 0 if inside else 1)
        if inside:
            handle.setopt(pycurl.HTTPGET, 1)
        handle.setopt(pycurl.WRITEFUNCTION, chunks.append)
        self.multi.add_handle(handle)

    def _done(self, handle: Any, error: bool) -> None:
        pycurl = self.pycurl
        self.multi.remove_handle(handle)
        self.free.append(handle)
        self.checked += 1
        url: str = handle.url
        status = 0 if error else handle.getinfo(pycurl.RESPONSE_CODE)
        if error or status >= 400:
            self.broken.append(url)
            return
        media = handle.getinfo(pycurl.CONTENT_TYPE) or ""
        if urlsplit(url).netloc != self.site or not media.startswith("text/html"):
            return
        body = b"".join(handle.chunks)
        if not self.pipes:
            self._found(links_of(body, url, self.parser))
            return
        pipe = self.pipes[self.turn % len(self.pipes)]
        self.turn += 1
        pipe.send_bytes(url.encode() + b"\0" + body)
        self.pending += 1

    def _found(self, links: list[str]) -> None:
        for link in links:
            if self.site_only and urlsplit(link).netloc != self.site:
                continue
            if link not in self.seen:
                self.seen.add(link)
                self.queue.append(link)

    def run(self) -> None:
        multi = self.multi
        deadline = time.monotonic() + ROUND_LIMIT
        while self.queue or len(self.free) < CONCURRENCY or self.pending:
            if time.monotonic() > deadline:
                raise SystemExit("floor: the crawl took longer than its limit")
            while self.queue and self.free:
                self._start(self.queue.popleft())
            while True:
                code, _ = multi.perform()
                if code != self.pycurl.E_CALL_MULTI_PERFORM:
                    break
            while True:
                _, ok, failed = multi.info_read()
                for handle in ok:
                    self._done(handle, False)
                for handle, _, _ in failed:
                    self._done(handle, True)
                if not ok and not failed:
                    break
            for pipe in self.pipes:
                while pipe.poll(0):
                    self._found(pipe.recv())
                    self.pending -= 1
            if self.queue and self.free:
                continue
            readable, writable, errors = multi.fdset()
            wait = multi.timeout()
            timeout = 0.01 if wait < 0 else min(wait / 1000, 0.01)
            select.select(readable + self.pipes, writable, errors, timeout)
        for pipe in self.pipes:
            pipe.close()
        for kid in self.kids:
            kid.join(5)


def one_round(
    start: str, workers: int, kind: str, site_only: bool = False
) -> tuple[float, float, int, int]:
    """(wall s, CPU s, URLs checked, broken URLs) of one crawl in a fresh process."""
    script = (
        "import sys, time, resource\n"
        "began = time.monotonic()\n"
        f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
        "import floor\n"
        f"crawl = floor.Floor({start!r}, {workers}, {kind!r}, {site_only!r})\n"
        "crawl.run()\n"
        "print(time.monotonic() - began, floor.cpu_seconds(), crawl.checked,"
        " len(crawl.broken))\n"
    )
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=180
    )
    wall = time.monotonic() - began  # the interpreter's start and imports included
    _, cpu, checked, broken = done.stdout.split()
    return wall, float(cpu), int(checked), int(broken)


def linklint_round(start: str) -> float:
    linklint = shutil.which("linklint")
    if linklint is None:
        raise SystemExit("floor: linklint is not installed (python bench/install_peers.py)")
    host = urlsplit(start).netloc
    with tempfile.TemporaryDirectory() as out:
        began = time.monotonic()
        subprocess.run(
            [linklint, "-http", "-host", host, "-limit", "1000000", "-net", "-doc", out, "/@"],
            capture_output=True,
            check=False,
            timeout=180,
        )
        return time.monotonic() - began


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--site", default="http://127.0.0.1:18081/")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--workers", default="0,1,2", help="parse processes, per variant")
    ap.add_argument(
        "--parser",
        choices=["libxml2", "lexbor"],
        default="libxml2",
        help="lexbor needs selectolax (not one of linkpatrol's dependencies)",
    )
    ap.add_argument("--site-only", action="store_true", help="request no other site's URL")
    ap.add_argument("--linklint", action="store_true", help="time linklint too, in turn")
    args = ap.parse_args()
    variants = [int(n) for n in args.workers.split(",")]
    rows: dict[int, list[tuple[float, float, int, int]]] = {n: [] for n in variants}
    peer: list[float] = []
    for _ in range(args.reps):
        for workers in variants:
            rows[workers].append(one_round(args.site, workers, args.parser, args.site_only))
        if args.linklint:
            peer.append(linklint_round(args.site))
    print(f"median of {args.reps}, {os.cpu_count()} cores, {args.parser}")
    print("| parse processes | wall s | CPU s | URLs | broken | URLs/s |")
    print("|---:|---:|---:|---:|---:|---:|")
    for workers, runs in rows.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        urls, broken = runs[0][2], runs[0][3]
        print(f"| {workers} | {wall:.3f} | {cpu:.2f} | {urls} | {broken} | {urls / wall:.0f} |")
    if peer:
        wall = statistics.median(peer)
        print(f"linklint: {wall:.3f} s, median of {len(peer)}, in turn with the rounds above")
        for workers, runs in rows.items():
            ratio = wall / statistics.median(r[0] for r in runs)
            print(f"  {workers} parse processes: {ratio:.2f}x linklint's speed (time over time)")


if __name__ == "__main__":
    main()
