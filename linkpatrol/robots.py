"""robots.txt per host, as RFC 9309 asks: fetched before anything else, cached for a day.

A host's robots.txt is *handled* (rules parsed), *missing* (4xx: all allowed),
*error* (5xx, and 429 after its retries: nothing allowed), *unreachable* (no answer at
all: nothing is requested and its URLs share the connection error), or *skipped*
(``--no-robots``).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from http import HTTPStatus

from protego import Protego

from linkpatrol.fetch import Fetcher
from linkpatrol.model import RobotsState
from linkpatrol.store import SiteRecord
from linkpatrol.urls import BadURL, canonical, is_http, scheme

ROBOTS_MAX_AGE = 86400.0
ROBOTS_MAX_BYTES = 500 * 1024
ROBOTS_MAX_REDIRECTS = 5
MAX_CRAWL_DELAY = 60.0
AGENT = "linkpatrol"

# the field, then the product token (RFC 9309: letters, '_' and '-'), then the rest
_USER_AGENT_LINE = re.compile(
    r"^([ \t]*user[- ]?agent(?:[ \t]*:[ \t]*|[ \t]+))([A-Za-z_-]*)[^#\r\n]*",
    re.IGNORECASE | re.MULTILINE,
)


@dataclass(frozen=True, slots=True)
class Robots:
    """The rules for one host, ready to answer "may I fetch this URL?"."""

    record: SiteRecord
    parser: Protego | None

    @property
    def unreachable(self) -> bool:
        return self.record.state is RobotsState.UNREACHABLE

    def allows(self, url: str) -> bool:
        if self.record.state in (RobotsState.MISSING, RobotsState.SKIPPED):
            return True
        if self.record.state in (RobotsState.ERROR, RobotsState.UNREACHABLE) or self.parser is None:
            return False
        return bool(self.parser.can_fetch(url, AGENT))

    def crawl_delay(self) -> float:
        if self.parser is None:
            return 0.0
        delay = self.parser.crawl_delay(AGENT)
        return min(float(delay), MAX_CRAWL_DELAY) if delay else 0.0

    def denial(self) -> str:
        if self.record.state is RobotsState.ERROR:
            return f"robots.txt answered {self.record.status}: nothing on this host is requested"
        return "disallowed by robots.txt"


def _product_token(line: re.Match[str]) -> str:
    token = line[2]
    if not token:
        return line[0]
    if token.lower() != AGENT and AGENT.startswith(token.lower()):
        token += "/"  # matches no agent whose name it merely begins
    return line[1] + token


def _by_product_token(body: str) -> str:
    """User-agent lines as RFC 9309 matches them: by the product token alone, whole.

    'User-agent: linkpatrol/1.0' names this robot; 'User-agent: link' does not, though
    Protego would take either the other way.
    """
    return _USER_AGENT_LINE.sub(_product_token, body)


def robots_from_record(record: SiteRecord) -> Robots:
    parser = None
    if record.state is RobotsState.HANDLED and record.body is not None:
        try:
            parser = Protego.parse(_by_product_token(record.body))
        except Exception:
            parser = Protego.parse("")
    return Robots(record, parser)


def skipped(site_origin: str) -> Robots:
    return Robots(SiteRecord(site_origin, RobotsState.SKIPPED, None, None, time.time()), None)


def is_fresh(record: SiteRecord, now: float) -> bool:
    """An answer is reused for a day; a failure is asked again next run (the host may be back)."""
    if record.state in (RobotsState.ERROR, RobotsState.UNREACHABLE):
        return False
    return now - record.fetched_at < ROBOTS_MAX_AGE


def _robots_text(body: bytes, truncated: bool) -> str:
    """The text of a robots.txt body: without a byte order mark, and when the size limit
    cut it, without its last line, which would be another rule than the one written."""
    body = body[:ROBOTS_MAX_BYTES]
    if truncated:
        body = body[: max(body.rfind(b"\n"), body.rfind(b"\r")) + 1]
    return body.decode("utf-8-sig", "replace")


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
            unreachable = SiteRecord(
                site_origin,
                RobotsState.UNREACHABLE,
                None,
                None,
                now,
                response.error,
                response.reason,
            )
            return unreachable, requests
        if 300 <= status < 400 and response.location:
            try:
                url = canonical(response.location, url)
            except BadURL:
                url = ""
            if not is_http(url):  # cannot be followed: as if there were none (RFC 9309)
                target = f"a {scheme(url)}: URL" if url else "an invalid URL"
                error = f"robots.txt redirected to {target}"
                return SiteRecord(
                    site_origin, RobotsState.MISSING, status, None, now, error
                ), requests
            continue
        if 200 <= status < 300:
            body = _robots_text(response.body or b"", response.truncated)
            return SiteRecord(site_origin, RobotsState.HANDLED, status, body, now), requests
        # a 429 asks to be left alone, not that there are no rules: a server error, as
        # the big crawlers read it, rather than the 4xx that allows everything
        if 400 <= status < 500 and status != HTTPStatus.TOO_MANY_REQUESTS:
            return SiteRecord(site_origin, RobotsState.MISSING, status, None, now), requests
        return SiteRecord(site_origin, RobotsState.ERROR, status, None, now), requests
    record = SiteRecord(
        site_origin, RobotsState.MISSING, None, None, time.time(), "too many redirects"
    )
    return record, requests


__all__ = ["Robots", "fetch_robots", "is_fresh", "robots_from_record", "skipped"]
