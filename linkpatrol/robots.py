"""robots.txt per host, as RFC 9309 asks: fetched before anything else, cached for a day.

A host's robots.txt is *handled* (rules parsed), *missing* (4xx: all allowed),
*error* (5xx: nothing allowed), *unreachable* (no answer at all: nothing is requested
and its URLs share the connection error), or *skipped* (``--no-robots``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from protego import Protego

from linkpatrol.fetch import Fetcher
from linkpatrol.store import SiteRecord
from linkpatrol.urls import BadURL, canonical

ROBOTS_MAX_AGE = 86400.0
ROBOTS_MAX_BYTES = 500 * 1024
ROBOTS_MAX_REDIRECTS = 5
MAX_CRAWL_DELAY = 60.0
AGENT = "linkpatrol"


@dataclass(frozen=True, slots=True)
class Robots:
    """The rules for one host, ready to answer "may I fetch this URL?"."""

    record: SiteRecord
    parser: Protego | None

    @property
    def unreachable(self) -> bool:
        return self.record.state == "unreachable"

    def allows(self, url: str) -> bool:
        if self.record.state in ("missing", "skipped"):
            return True
        if self.record.state in ("error", "unreachable") or self.parser is None:
            return False
        return bool(self.parser.can_fetch(url, AGENT))

    def crawl_delay(self) -> float:
        if self.parser is None:
            return 0.0
        delay = self.parser.crawl_delay(AGENT)
        return min(float(delay), MAX_CRAWL_DELAY) if delay else 0.0

    def denial(self) -> str:
        if self.record.state == "error":
            return f"robots.txt answered {self.record.status}: nothing on this host is requested"
        return "disallowed by robots.txt"


def robots_from_record(record: SiteRecord) -> Robots:
    parser = None
    if record.state == "handled" and record.body is not None:
        try:
            parser = Protego.parse(record.body)
        except Exception:
            parser = Protego.parse("")
    return Robots(record, parser)


def skipped(site_origin: str) -> Robots:
    return Robots(SiteRecord(site_origin, "skipped", None, None, time.time()), None)


def is_fresh(record: SiteRecord, now: float) -> bool:
    """An answer is reused for a day; a failure is asked again next run (the host may be back)."""
    if record.state in ("error", "unreachable"):
        return False
    return now - record.fetched_at < ROBOTS_MAX_AGE


async def fetch_robots(fetcher: Fetcher, site_origin: str) -> tuple[SiteRecord, int]:
    """Fetch ``/robots.txt``, following up to five redirects; also says how many requests.

    Each hop is requested as what it is, a robots.txt: it goes the way of its host's
    ``[[site]]`` tables, with credentials only where a prefix covers it.
    """
    url = site_origin + "/robots.txt"
    requests = 0
    for _ in range(ROBOTS_MAX_REDIRECTS + 1):
        response = await fetcher.fetch(
            "GET", url, want_body=True, any_type=True, robots=True, limit=ROBOTS_MAX_BYTES
        )
        requests += response.attempts
        status = response.status
        now = time.time()
        if status is None:
            return SiteRecord(site_origin, "unreachable", None, None, now, response.error), requests
        if 300 <= status < 400 and response.location:
            try:
                url = canonical(response.location, url)
            except BadURL:
                break
            continue
        if 200 <= status < 300:
            body = (response.body or b"")[:ROBOTS_MAX_BYTES].decode("utf-8", "replace")
            return SiteRecord(site_origin, "handled", status, body, now), requests
        if 400 <= status < 500:
            return SiteRecord(site_origin, "missing", status, None, now), requests
        return SiteRecord(site_origin, "error", status, None, now), requests
    record = SiteRecord(site_origin, "missing", None, None, time.time(), "too many redirects")
    return record, requests


__all__ = ["Robots", "fetch_robots", "is_fresh", "robots_from_record", "skipped"]
