"""Copies of dead links in a web archive (``--archived``).

After a crawl, each reportable broken URL that was once good is looked up in the Internet
Archive's availability API, asked for the copy nearest its last-good moment: only the
memory knows that moment, and a copy from after the URL broke would show its error page.
The memory keeps the answer, and every report shows the copy.

The asking is polite and bounded: ARCHIVE_REQUESTS in flight at once, the crawl's
User-Agent, timeout and proxy, at most ARCHIVE_MOST URLs a run (the others wait for the
next). A URL is asked about once per last-good moment; "no copy" is asked again after
ARCHIVE_REASK, as the archive may have found an older copy since. The archive failing is
one note, never a failed check.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlencode

from linkpatrol.config import SiteSettings
from linkpatrol.fetch import Fetcher
from linkpatrol.observer import Observer
from linkpatrol.options import ARCHIVE_ENDPOINT
from linkpatrol.rules import is_reportable
from linkpatrol.store import ArchiveAnswer, Archived, CrawlMemory, UrlRecord
from linkpatrol.urls import is_http

ARCHIVE_REQUESTS = 4  # asked at once
ARCHIVE_MOST = 500  # URLs asked about in one run
ARCHIVE_REASK = 30 * 86400.0  # "no copy" is asked again after this long
ANSWER_BYTES = 64 * 1024  # an availability answer is a few hundred bytes
_STAMP = "%Y%m%d%H%M%S"  # the archive's timestamps, in UTC


def availability_url(endpoint: str, url: str, last_good: float) -> str:
    """The question for the copy of ``url`` nearest ``last_good``."""
    stamp = datetime.fromtimestamp(last_good, UTC).strftime(_STAMP)
    query = urlencode({"url": url, "timestamp": stamp})
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"


def read_answer(body: bytes, broke: float | None) -> Archived | None:
    """The copy an availability answer names, if the archive took it while the page was
    good (its status 2xx) and before the URL was seen broken (``broke``); None for no such
    copy. ValueError for what is no availability answer."""
    try:
        data = json.loads(body)
    except ValueError:
        raise ValueError("not JSON") from None
    snapshots = data.get("archived_snapshots") if isinstance(data, dict) else None
    if not isinstance(snapshots, dict):
        raise ValueError("no archived_snapshots in the answer")
    closest = snapshots.get("closest")
    if closest is None:
        return None
    if not isinstance(closest, dict):
        raise ValueError("archived_snapshots.closest is not an object")
    if closest.get("available") is not True:
        return None
    copy, stamp, status = closest.get("url"), closest.get("timestamp"), closest.get("status")
    if not isinstance(copy, str) or not is_http(copy):
        raise ValueError(f"not a copy's URL: {copy!r}")
    try:
        at = datetime.strptime(str(stamp), _STAMP).replace(tzinfo=UTC).timestamp()
    except ValueError:
        raise ValueError(f"not a timestamp: {stamp!r}") from None
    if status is not None and not str(status).startswith("2"):
        return None
    if broke is not None and at > broke:
        return None
    return Archived(copy, at)


def due(records: list[UrlRecord], settings: SiteSettings) -> list[UrlRecord]:
    """The URLs among ``records`` a report names as broken: those worth a copy."""
    return [
        r
        for r in records
        if r.last_good is not None
        and is_reportable(
            r.state,
            r.last_checked,
            r.last_good,
            r.failing_since,
            settings.report_after,
            settings.damp_new,
        )
    ]


@dataclass(slots=True)
class Asking:
    """One run's questions to the archive, and what came of them."""

    answers: list[ArchiveAnswer]
    failure: str | None = None  # the first failure (the archive is asked no more after it)
    unasked: int = 0  # URLs left for the next run after a failure or a stop


async def ask_archive(
    records: list[UrlRecord],
    endpoint: str,
    fetcher: Fetcher,
    observer: Observer,
    stopped: Callable[[], bool],
) -> Asking:
    """Ask the archive about each of ``records``, ARCHIVE_REQUESTS at a time; after a
    failure, or once ``stopped``, nothing more is asked."""
    asking = Asking([])
    pending: Iterator[UrlRecord] = iter(records)

    async def worker() -> None:
        for record in pending:
            if asking.failure is not None or stopped():
                asking.unasked += 1
                continue
            assert record.last_good is not None
            question = availability_url(endpoint, record.url, record.last_good)
            observer.requesting("GET", question, "archived copy")
            response = await fetcher.fetch(
                "GET", question, want_body=True, any_type=True, limit=ANSWER_BYTES
            )
            try:
                if response.status != 200 or response.body is None:
                    raise ValueError(response.error or f"HTTP {response.status}")
                copy = read_answer(response.body, record.failing_since)
            except ValueError as exc:
                if asking.failure is None:
                    asking.failure = str(exc)
                asking.unasked += 1
                continue
            asking.answers.append(ArchiveAnswer(record.id, record.last_good, copy))

    await asyncio.gather(*(worker() for _ in range(ARCHIVE_REQUESTS)))
    return asking


async def find_archived(
    store: CrawlMemory,
    pass_id: int,
    settings: SiteSettings,
    connect: Callable[[], Fetcher],
    observer: Observer,
    stopped: Callable[[], bool],
) -> Asking:
    """Ask the archive (through the fetcher ``connect`` makes, when there is something
    to ask) about the pass's broken URLs that need it, and keep the answers."""
    now = time.time()
    records = due(store.archive_due(pass_id, now - ARCHIVE_REASK), settings)[:ARCHIVE_MOST]
    if not records:
        return Asking([])
    fetcher = connect()
    try:
        asking = await ask_archive(records, settings.archive_endpoint, fetcher, observer, stopped)
    finally:
        await fetcher.close()
    if asking.answers:
        store.save_archived(asking.answers, now)
    if asking.failure is not None:
        observer.note(
            f"archived copies: {settings.archive_endpoint} failed: {asking.failure} "
            f"({asking.unasked} of {len(records)} URLs left to ask next run)"
        )
    return asking


__all__ = [
    "ARCHIVE_ENDPOINT",
    "ARCHIVE_REASK",
    "Asking",
    "ask_archive",
    "availability_url",
    "due",
    "find_archived",
    "read_answer",
]
