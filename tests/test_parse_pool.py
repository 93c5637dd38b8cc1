"""The parse pool's worker processes, driven by a real event loop."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from linkpatrol.config import SiteSettings
from linkpatrol.parsepool import ParsePool

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
