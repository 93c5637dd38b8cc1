"""The downloader's slots without a network: shares, pace, ramp-up and what is due."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from linkpatrol.config import SiteSettings, SiteTable
from linkpatrol.downloader import FIRST_CONNECTIONS, OPENED, Downloader
from linkpatrol.fetch import Fetcher
from linkpatrol.model import Action, RobotsState
from linkpatrol.robots import robots_from_record, skipped
from linkpatrol.rules import RuleOptions
from linkpatrol.sites import SiteMatcher
from linkpatrol.store import SiteRecord, Task
from linkpatrol.transport import MemoryTransport, Request, Response

H = "http://h.test"


def paced_answers(times: list[float]) -> MemoryTransport:
    """A host that notes when each request reaches it."""

    def answer(request: Request) -> Response:
        times.append(time.monotonic())
        return Response(request.method, 200)

    return MemoryTransport({f"{H}/{n}": answer for n in range(4)})


def task(n: int, origin: str = H) -> Task:
    return Task(n, f"{origin}/{n}", origin, Action.CHECK, *(None,) * 6, None, None, None, None)


def downloader(
    concurrency: int = 8, per_host: int = 8, delay: float = 0.0, *tables: SiteTable
) -> Downloader:
    fetcher = Fetcher(SiteSettings(), MemoryTransport(), sites=SiteMatcher(tables, environ={}))
    made = Downloader(concurrency, per_host, delay, fetcher)
    made.share = per_host
    return made


@pytest.mark.parametrize(
    ("per_host", "share", "crew", "site_limit", "expected"),
    [
        (8, 8, (1, 0), None, 8),  # alone: all of --per-host
        (8, 4, (2, 1), None, 4),  # in a crew of two: half
        (8, 0, (9, 8), None, 0),  # no share: the others fetch
        (8, 8, (1, 0), 2, 2),  # alone: all of a [[site]] per_host
        (8, 4, (2, 0), 2, 1),  # a [[site]] per_host of 2, half of it
        (8, 2, (3, 0), 2, 1),  # the oldest two of three have one each
        (8, 2, (3, 2), 2, 0),  # and the youngest none: the others fetch
        (8, 0, (9, 0), 2, 0),  # no share of --per-host, none of the table's
    ],
)
def test_a_worker_s_share_of_a_host(
    per_host: int, share: int, crew: tuple[int, int], site_limit: int | None, expected: int
) -> None:
    tables = [SiteTable(prefix=f"{H}/", per_host=site_limit)] if site_limit else []
    made = downloader(8, per_host, 0.0, *tables)
    made.share, (made.workers, made.rank) = share, crew
    assert made.host_share(made.slot(H)) == expected
    assert (H in made.busy_origins()) == (site_limit is not None and expected == 0)


@pytest.mark.parametrize(
    ("delay", "crawl_delay", "share", "per_host", "spacing"),
    [
        (0.0, None, 8, 8, 0.0),
        (1.0, None, 8, 8, 1.0),
        (1.0, None, 4, 8, 2.0),  # two workers share the host: each waits twice as long
        (0.0, 3, 8, 8, 3.0),  # robots.txt's Crawl-delay
        (5.0, 3, 8, 8, 5.0),  # the longer of the two
    ],
)
def test_the_pause_between_requests_to_a_host(
    delay: float, crawl_delay: int | None, share: int, per_host: int, spacing: float
) -> None:
    made = downloader(8, per_host, delay)
    made.share = share
    slot = made.slot(H)
    if crawl_delay is not None:
        body = f"User-agent: *\nCrawl-delay: {crawl_delay}\n"
        slot.robots = robots_from_record(SiteRecord(H, RobotsState.HANDLED, 200, body, 0.0))
    assert made.spacing(slot) == pytest.approx(spacing)


def test_connections_open_a_few_at_a_time_and_local_files_need_none() -> None:
    made = downloader(64, 16)
    slot = made.slot(H)
    assert made.allowed(slot) == FIRST_CONNECTIONS
    for _ in range(16 - FIRST_CONNECTIONS):
        made.kept_open(slot)
    assert slot.opening == OPENED and made.allowed(slot) == 16
    assert made.allowed(made.slot("file://")) == 16


def test_due_slots_wait_for_robots_txt_their_share_and_a_free_fetch_slot() -> None:
    made = downloader(concurrency=3, per_host=2)
    slot = made.slot(H)
    slot.waiting.extend(task(n) for n in range(5))
    in_flight: set[int] = set()
    assert list(made.due(0.0, in_flight)) == []  # robots.txt not known yet
    slot.robots = skipped(H)
    started = []
    for due in made.due(0.0, in_flight):
        started.append(due.waiting.popleft().url_id)
        made.start(due, 0.0)
        in_flight.add(len(in_flight))
    assert started == [0, 1]  # two at a time to the host
    made.finished(slot)
    other = made.slot("http://o.test")
    other.robots = skipped("http://o.test")
    other.waiting.append(task(9, "http://o.test"))
    in_flight.discard(0)
    origins = []
    for due in made.due(0.0, in_flight):
        due.waiting.popleft()
        made.start(due, 0.0)
        in_flight.add(len(in_flight) + 10)
        origins.append(due.origin)
    assert origins == [H, "http://o.test"]  # one more each, then all three fetch slots busy


def test_handing_back_takes_the_last_due_first() -> None:
    made = downloader()
    made.slot(H).waiting.extend(task(n) for n in range(4))
    handed, hosts = made.hand_back(2)
    assert handed == [3, 2] and hosts == {H}
    assert [t.url_id for t in made.slot(H).waiting] == [0, 1]


def test_a_paced_host_sees_the_delay_between_requests_that_left_late() -> None:
    """The turn taken as a request starts is kept from the moment it really leaves: a
    request that left late (the loop busy) pushes the next one's turn back."""

    async def crawl() -> list[float]:
        times: list[float] = []
        made = Downloader(8, 8, 0.2, Fetcher(SiteSettings(), paced_answers(times)))
        made.share = 8
        slot = made.slot(H)
        slot.robots = skipped(H)
        slot.waiting.extend(task(n) for n in range(3))
        for n in range(3):
            while next(made.due(now := time.monotonic(), set()), None) is None:
                await asyncio.sleep(made.next_wait(1.0))
            made.start(slot, now)
            if n == 1:
                time.sleep(0.15)  # the loop is busy between the start and the send
            await made.fetch(slot.waiting.popleft(), slot, RuleOptions())
        return times

    times = asyncio.run(asyncio.wait_for(crawl(), 10))
    assert len(times) == 3
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert min(gaps) >= 0.2, gaps
