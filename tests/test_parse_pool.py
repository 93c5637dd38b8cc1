"""The parse pool's worker processes, driven by a real event loop."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
from lxml import etree

from linkpatrol.config import SiteSettings
from linkpatrol.extract import extract_html
from linkpatrol.parsepool import ParseFailure, ParsePool

PAGE = b'<!DOCTYPE html>\n<title>t</title>\n<a href="b.html">b</a>\n<a href="../c/">c</a>\n'


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="SCHED_BATCH is Linux's")
def test_workers_are_scheduled_for_throughput_and_the_crawl_process_is_not() -> None:
    """A page sent to a worker does not make it preempt the crawl process (SCHED_BATCH),
    and the crawl process keeps the normal policy."""

    async def run() -> tuple[list[int], list[tuple[str, int | None]]]:
        settings = SiteSettings(start_urls=("http://site.example/a/",), parse_workers=2)
        pool = ParsePool(settings, 30.0, asyncio.get_running_loop())
        pool.start()
        try:
            parsed = await pool.parse("http://site.example/a/x.html", PAGE, "utf-8")
            policies = [os.sched_getscheduler(kid.process.pid) for kid in pool._kids]
        finally:
            pool.close()
        return policies, [(link.url, link.line) for link in parsed.links]

    policies, links = asyncio.run(run())
    assert links == [("http://site.example/a/b.html", 3), ("http://site.example/c/", 4)]
    assert policies == [os.SCHED_BATCH, os.SCHED_BATCH]
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


GIVE_BACK = """
import ctypes
from linkpatrol.parsepool import give_back_memory

def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 >> 20

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
blocks = [libc.malloc(1000) for _ in range(60_000)]
for block in blocks:
    ctypes.memset(block, 1, 1000)
for block in blocks[:-1]:  # the last one, on top of the heap, keeps malloc from shrinking it
    libc.free(block)
held = rss()
give_back_memory()
print(held, rss())
"""


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's malloc_trim")
def test_a_worker_gives_back_the_memory_a_big_page_took() -> None:
    """What malloc keeps of a big page's tree, freed among blocks still in use, goes back
    to the system: a worker that parsed one does not hold it for the rest of the crawl."""
    done = subprocess.run(
        [sys.executable, "-c", GIVE_BACK], capture_output=True, text=True, timeout=60, check=True
    )
    held, after = map(int, done.stdout.split())
    assert held - after >= 40, (held, after)  # of the 60 MB freed


def test_a_fault_in_reading_a_page_is_its_parse_error_not_a_page_without_links(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fault in extraction (here libxml2's parse raising KeyError) is the page's
    ParseFailure, in a worker and in the crawl's own process alike, which the report
    shows: never a page read as if it held no link."""

    def broken(*_: object) -> None:
        raise KeyError("a fault")

    monkeypatch.setattr(etree, "fromstring", broken)  # the workers fork with it

    async def run() -> list[str]:
        settings = SiteSettings(start_urls=("http://site.example/a/",), parse_workers=1)
        pool = ParsePool(settings, 30.0, asyncio.get_running_loop())
        pool.start()
        failures = []
        try:
            with pytest.raises(ParseFailure) as in_worker:
                await pool.parse("http://site.example/a/x.html", PAGE, "utf-8")
            failures.append(str(in_worker.value))
        finally:
            pool.close()
        with pytest.raises(ParseFailure) as here:  # once closed, pages are read here
            await pool.parse("http://site.example/a/x.html", PAGE, "utf-8")
        failures.append(str(here.value))
        return failures

    assert asyncio.run(run()) == ["parser error: KeyError: 'a fault'"] * 2


def test_markup_libxml2_cannot_read_is_a_page_with_nothing_in_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unreadable(*_: object) -> None:
        raise etree.ParserError("Document is empty")

    monkeypatch.setattr(etree, "fromstring", unreadable)
    page = extract_html(PAGE)
    assert (page.links, page.anchors, page.title) == ([], frozenset(), None)
