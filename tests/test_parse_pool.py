"""The parse pool's worker processes, driven by a real event loop."""

from __future__ import annotations

import asyncio
import os

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
