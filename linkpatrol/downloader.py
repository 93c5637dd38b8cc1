"""The downloader's slots: one per host, holding its URLs due until the host's turn.

A host's slot keeps this worker within its share of ``--per-host`` (and of a
``[[site]]``'s ``per_host``), spaces requests by ``--delay`` or Crawl-delay, opens
connections a few at a time, and holds every URL back until the host's robots.txt is
known. The downloader makes a URL's requests as the rule book plans them, and measures
how the fetch slots (``--concurrency``) are used. It decides nothing about a URL itself.

A host that says it is limited (a 429, a 503 with Retry-After, an X-RateLimit-Remaining
of 0) pauses as the rule book reads its answer (:func:`~linkpatrol.rules.host_pace`),
alone: its URLs wait in its slot until the pause ends, a refused one first, and it then
has one request in flight, one more for each answer, up to its share. The other hosts
go on as they were.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sized
from dataclasses import dataclass, field
from typing import NamedTuple

from linkpatrol.fetch import Fetcher
from linkpatrol.model import Outcome, Reason, Task
from linkpatrol.observer import Observer
from linkpatrol.robots import Robots, fetch_robots, is_fresh, robots_from_record, skipped
from linkpatrol.rules import (
    MAX_REFUSALS,
    NO_PACE,
    HostPace,
    RuleOptions,
    answers_over_https,
    get_after_head,
    host_pace,
    plan,
    request_headers,
    robots_verdict,
    share_of,
)
from linkpatrol.store import SiteRecord, SlotUsage
from linkpatrol.transport import Response
from linkpatrol.urls import is_http

SAMPLE_INTERVAL = 0.05  # seconds between samples of how the fetch slots are used
HOST_WINDOW = 64  # URLs of one host held before a claim leaves the host out
# requests in flight to a host at first, as browsers open at most six connections to a
# host: a server with a short queue of connections not yet accepted (Python's http.server
# listens with a backlog of 5: six wait at most) drops the rest, which the system tries
# again only a second later. Each answer over a connection kept open allows one more (one
# new connection at a time), up to --per-host; a server that closes every connection
# (HTTP/1.0, as http.server) takes a new one for every request and stays at six.
FIRST_CONNECTIONS = 6
OPENED = 1 << 30  # a host's connections all opened (or none needed: file: URLs)
# requests started with at most half of a host's share in flight needed for their mean time
# to stand for how fast it answers unhurried (with fewer, nothing is known of how it keeps
# up with its whole share)
LIGHT_SAMPLES = 3
# how loaded a host was as a request to it started: all of its share in flight (this one
# among them), at most half of it, or in between
FULL, LIGHT, BETWEEN = 1, -1, 0


def load_of(active: int, share: int) -> int:
    """FULL, LIGHT or BETWEEN, for ``active`` requests in flight of a ``share``."""
    if active >= share:
        return FULL
    return LIGHT if active <= max(1, share // 2) else BETWEEN


@dataclass(slots=True)
class Slot:
    """One host: its URLs due, its robots.txt, its requests in flight and its pace."""

    origin: str
    robots: Robots | None = None
    robots_pending: bool = False
    active: int = 0
    next_at: float = 0.0  # when the next request may start (its turn, or a pause asked for)
    sent_at: float = float("-inf")  # when the last request left for it
    waiting: deque[Task] = field(default_factory=deque)
    # requests in flight to it at most while its connections are being opened (this
    # worker's share bounds them too), OPENED once they reached the share: see
    # FIRST_CONNECTIONS
    opening: int = FIRST_CONNECTIONS
    # requests in flight to it at most since it said it was limited, one more for each
    # answer after, until it reaches the share (0: no such bound)
    throttle: int = 0
    # how long its requests took: those started with all of its share in flight (full),
    # and those started with at most half of it (light)
    full_requests: int = 0
    full_time: float = 0.0
    light_requests: int = 0
    light_time: float = 0.0

    def timed(self, load: int, took: float) -> None:
        if load == FULL:
            self.full_requests += 1
            self.full_time += took
        elif load == LIGHT:
            self.light_requests += 1
            self.light_time += took

    def slowdown(self) -> float:
        """Its full requests' times over its unhurried time (its light requests' mean),
        summed; 0 where there is not enough to compare."""
        if not self.full_requests or self.light_requests < LIGHT_SAMPLES:
            return 0.0
        unhurried = self.light_time / self.light_requests
        return self.full_time / unhurried if unhurried > 0 else 0.0


class Fetched(NamedTuple):
    """A URL's requests, as the downloader made them."""

    response: Response  # the last answer
    requests: int
    again: bool = False  # refused for the host's limit: queued again, for after its pause
    limited: str | None = None  # why a refusal for the limit is its answer: not waited for


class Downloader:
    """The hosts' slots of one worker, within its share of ``--per-host``."""

    def __init__(
        self,
        concurrency: int,
        per_host: int,
        delay: float,
        fetcher: Fetcher,
        observer: Observer | None = None,
    ) -> None:
        self.concurrency = concurrency
        self.per_host = per_host
        self.delay = delay
        self.fetcher = fetcher
        self.sites = fetcher.sites
        self.observer = observer or Observer()
        self.slots: dict[str, Slot] = {}
        # requests this worker may have in flight to one host: its share of --per-host,
        # which the crew's heartbeat sets (0: none; the others fetch), with the crew's size
        # and its rank in it (for its share of a [[site]] table's per_host)
        self.share = 0
        self.workers = 1
        self.rank = 0
        self._usage = SlotUsage()  # how the fetch slots were used in this run, sampled
        self.waiting = 0  # free fetch slots whose next URL waits for its host's turn
        self._sampled_at: float | None = None
        self.refusals: dict[int, int] = {}  # URLs refused for their host's limit: how often

    @property
    def usage(self) -> SlotUsage:
        """How the fetch slots were used in this run, and how fast the hosts answered with
        all of their share in flight."""
        full = slowdown = 0.0
        for slot in self.slots.values():
            if (ratio := slot.slowdown()) > 0:
                full += slot.full_requests
                slowdown += ratio
        return dataclasses.replace(self._usage, full_requests=full, full_slowdown=slowdown)

    def slot(self, origin: str) -> Slot:
        """The host's slot, made the first time a URL of it is due."""
        slot = self.slots.get(origin)
        if slot is None:
            slot = self.slots[origin] = Slot(origin)
            if not is_http(origin):
                slot.opening = OPENED  # a file: URL is no connection
        return slot

    def spacing(self, slot: Slot) -> float:
        """The pause between this worker's requests to the host: --delay (or its
        ``[[site]]`` delay) or Crawl-delay, stretched by --per-host over this worker's share
        of it, so that the workers sharing the host keep to it together."""
        delay = max(
            self.sites.delay(slot.origin, self.delay),
            slot.robots.crawl_delay() if slot.robots else 0.0,
        )
        if delay <= 0 or not self.share:
            return delay
        return delay * self.per_host / self.share

    def host_share(self, slot: Slot) -> int:
        """This worker's share of --per-host, or of the host's ``[[site]]`` per_host."""
        return self._share_of(self.sites.per_host(slot.origin, self.per_host))

    def _share_of(self, limit: int) -> int:
        if limit == self.per_host or not self.share:
            return self.share
        return share_of(limit, self.workers, self.rank)

    def left_out(self) -> list[str]:
        """The hosts whose ``[[site]]`` per_host leaves this worker no share: the others
        request their URLs."""
        return [o for o, n in self.sites.per_host_limits().items() if not self._share_of(n)]

    def stuck(self) -> tuple[list[int], set[str]]:
        """The URLs held for hosts this worker has no share of now (the crew grew), to
        give back to the frontier for the others (their ids), and their hosts."""
        handed: list[int] = []
        hosts: set[str] = set()
        for slot in self.slots.values():
            if slot.waiting and not self.host_share(slot):
                handed.extend(task.url_id for task in slot.waiting)
                slot.waiting.clear()
                hosts.add(slot.origin)
        return handed, hosts

    def allowed(self, slot: Slot) -> int:
        """Requests this worker may have in flight to the host now: its share, or fewer
        while the host's connections are still being opened (see FIRST_CONNECTIONS)."""
        return min(self.host_share(slot), slot.opening, slot.throttle or OPENED)

    def busy_origins(self) -> list[str]:
        """Hosts a claim should leave out: robots.txt not known yet, or enough held."""
        limit = max(self.per_host * 4, HOST_WINDOW)
        held = [
            s.origin for s in self.slots.values() if s.robots_pending or len(s.waiting) >= limit
        ]
        return [*held, *self.left_out()] if self.workers > 1 else held

    def busiest(self) -> int:
        """The most requests in flight to one host."""
        return max((slot.active for slot in self.slots.values()), default=0)

    def due(self, now: float, in_flight: Sized) -> Iterator[Slot]:
        """Each slot that may start one more request now, as often as it may: its robots.txt
        known, within its share, its turn come, and a fetch slot free. The caller takes a
        URL from the slot's ``waiting`` each time (and starts it, or settles it)."""
        for slot in self.slots.values():
            while (
                slot.waiting
                and slot.robots is not None
                and slot.active < self.allowed(slot)
                and len(in_flight) < self.concurrency
                and slot.next_at <= now
            ):
                yield slot

    def start(self, slot: Slot, now: float) -> int:
        """A request to the host starts: it holds one of the host's slots, and the next one
        waits its turn. How loaded the host was as it started (:func:`load_of`)."""
        slot.active += 1
        delay = self.spacing(slot)
        if delay > 0:
            slot.next_at = now + delay
        return load_of(slot.active, self.host_share(slot))

    def finished(self, slot: Slot) -> None:
        """A request to the host ended, whatever became of it."""
        slot.active -= 1

    def kept_open(self, slot: Slot) -> None:
        """An answer came over a connection kept open: one more may be opened, up to the
        share."""
        if slot.opening != OPENED:
            slot.opening += 1
            if slot.opening >= self.host_share(slot):
                slot.opening = OPENED

    async def turn(self, slot: Slot) -> None:
        """Wait, just before a request leaves, until the host's last request left a whole
        --delay (or Crawl-delay) ago. :meth:`start` takes the turn as a request starts, but
        a request may leave a little later than it started (a busy loop, a connection
        being opened), and the host is to see the spacing, not the crawler."""
        delay = self.spacing(slot)
        if delay <= 0:
            return
        while (wait := slot.sent_at + delay - time.monotonic()) > 0:
            await asyncio.sleep(wait)
        slot.sent_at = time.monotonic()
        slot.next_at = max(slot.next_at, slot.sent_at + delay)

    def _turn_of(self, slot: Slot) -> Callable[[], Awaitable[None]] | None:
        """What each request to the host awaits as it leaves: its turn on a paced host,
        nothing on the others."""
        if self.spacing(slot) <= 0:
            return None
        return lambda: self.turn(slot)

    async def pace(self, slot: Slot) -> None:
        """Wait for the host's turn (--delay, Crawl-delay, a pause it asked for) before a
        retry or a GET after HEAD."""
        while (wait := slot.next_at - time.monotonic()) > 0:
            await asyncio.sleep(wait)
        delay = self.spacing(slot)
        if delay > 0:
            slot.next_at = time.monotonic() + delay

    def answered(self, slot: Slot, response: Response) -> HostPace:
        """What an answer says of its host's pace, heeded: a pause asked for pauses the host
        and leaves it one request in flight; an answer saying how many requests the window
        has left allows as many in flight; any other answer allows one more."""
        pace = host_pace(
            response.status, response.retry_after, response.rate_remaining, response.rate_reset
        )
        if pace is NO_PACE and not slot.throttle:  # nearly every answer: nothing to heed
            return pace
        share = self.host_share(slot)
        if pace.refused or pace.pause > 0:
            slot.next_at = max(slot.next_at, time.monotonic() + pace.pause)
            slot.throttle = 1
        elif pace.room is not None and pace.room < share:
            slot.throttle = pace.room
        elif slot.throttle:
            slot.throttle += 1
            if slot.throttle >= share:
                slot.throttle = 0
        return pace

    def next_wait(self, longest: float) -> float:
        """How long until a host's turn comes, at most ``longest``."""
        wait = longest
        now = time.monotonic()
        for slot in self.slots.values():
            if slot.waiting and slot.next_at > now:
                wait = min(wait, slot.next_at - now)
        return max(wait, 0.001)

    def hand_back(self, count: int) -> tuple[list[int], set[str]]:
        """Up to ``count`` URLs held here, the last due first, to give back to the
        frontier (their ids), and their hosts."""
        handed: list[int] = []
        hosts: set[str] = set()
        for slot in self.slots.values():
            while slot.waiting and len(handed) < count:
                handed.append(slot.waiting.pop().url_id)
                hosts.add(slot.origin)
        return handed, hosts

    def sample(self, now: float, in_flight: int, queued: int) -> None:
        """Add how the fetch slots are used now to the run's usage (at most every 50 ms)."""
        if self._sampled_at is None:
            self._sampled_at = now
            return
        span = now - self._sampled_at
        if span < SAMPLE_INTERVAL:
            return
        self._sampled_at = now
        slots = self.concurrency
        busy = min(in_flight, slots)
        blocked = held = 0
        for s in self.slots.values():
            if not s.waiting:
                continue
            if s.robots is None or s.next_at > now:
                blocked += len(s.waiting)
            elif s.active >= self.allowed(s):
                blocked += len(s.waiting)
                if s.active >= self.host_share(s):  # not only its first connections
                    held += len(s.waiting)
        free = slots - busy
        self.waiting = min(blocked, free)
        self._usage = self._usage + SlotUsage(
            span,
            slots * span,
            busy * span,
            self.waiting * span,
            queued * span,
            min(held, free) * span,
        )

    # ---- robots.txt -------------------------------------------------------------------

    async def load_robots(
        self,
        slot: Slot,
        obey: bool,
        remembered: Callable[[str], Awaitable[SiteRecord | None]],
        keep: Callable[[SiteRecord], Awaitable[None]],
    ) -> int:
        """Learn the host's robots.txt: from the memory while it is fresh, else fetched (by
        a worker with a share of the host) and kept; the requests it took."""
        requests = 0
        try:
            if not obey or not is_http(slot.origin):
                slot.robots = skipped(slot.origin)
                return 0
            record = await remembered(slot.origin)
            if record is None or not is_fresh(record, time.time()):
                if not self.host_share(slot):  # the others ask (asked again later)
                    return 0
                self.observer.requesting("GET", slot.origin + "/robots.txt", "robots.txt")
                slot.active += 1  # robots.txt takes one of the host's slots too
                try:
                    record, requests = await fetch_robots(self.fetcher, slot.origin)
                finally:
                    slot.active -= 1
                await keep(record)
            slot.robots = robots_from_record(record)
            return requests
        finally:
            slot.robots_pending = False

    async def ask_https(self, slot: Slot, counterpart: str) -> tuple[bool, int]:
        """Whether the host serves ``counterpart``, the https: URL of one of its http:
        URLs (--require-https); the requests it took. It holds one of the host's slots,
        as robots.txt does: the same server answers it."""
        self.observer.requesting("GET", counterpart, "https: counterpart")
        slot.active += 1
        try:
            response = await self.fetcher.fetch("GET", counterpart)
        finally:
            slot.active -= 1
        return answers_over_https(response.status), response.attempts

    @staticmethod
    def robots_verdict(slot: Slot, task: Task) -> Outcome | None:
        """The outcome robots.txt gives a URL of the host (none: it may be requested)."""
        robots = slot.robots
        assert robots is not None
        unreachable = None
        if robots.unreachable:
            unreachable = robots.record.reason or Reason.CONNECTION
        denial = None if robots.unreachable or robots.allows(task.url) else robots.denial()
        verdict = robots_verdict(unreachable, robots.record.error, denial)
        if verdict is None:
            return None
        state, reason, error = verdict
        return Outcome(task.url_id, task.action, state, error=error, reason=reason)

    # ---- a folder's probe ------------------------------------------------------------

    async def probe(self, slot: Slot, url: str, obey: bool) -> Response | None:
        """A request for a name that cannot exist in a folder of the host (see
        :func:`~linkpatrol.rules.judge_soft_404`), in the host's turn, made for a URL whose
        request still holds one of the host's slots; None where robots.txt forbids it."""
        robots = slot.robots
        if obey and robots is not None and not robots.unreachable and not robots.allows(url):
            return None
        await self.pace(slot)
        self.observer.requesting("GET", url, "probe of its folder, for soft 404s")
        return await self.fetcher.fetch(
            "GET",
            url,
            want_body=True,
            pace=lambda: self.pace(slot),
            turn=self._turn_of(slot),
            answered=lambda response: self.answered(slot, response).refused,
        )

    # ---- one URL's requests --------------------------------------------------------

    async def fetch(
        self,
        task: Task,
        slot: Slot,
        rules: RuleOptions,
        load: int = BETWEEN,
        after: Callable[[Response], Awaitable[None]] | None = None,
    ) -> Fetched:
        """A URL's requests as the rule book plans them (a GET after a HEAD that failed),
        each in the host's turn. The request holds one of the host's slots until it ends
        (see :meth:`start`, which says how loaded the host was as it started), ``after``
        its answer too (what the answer asks for: a probe of its folder). A URL
        refused for its host's limit is to be queued ``again``, not retried here:
        MAX_REFUSALS times at most when the host said when to come back, else --retries
        times."""
        action = task.action
        why = f"{action.value}" + (f", linked from {task.referrer}" if task.referrer else "")
        first = plan(action, task.url, rules)
        began = time.monotonic()

        def pace() -> Awaitable[None]:
            return self.pace(slot)

        turn = self._turn_of(slot)

        paces: list[HostPace] = []

        def answered(response: Response) -> bool:
            heard = self.answered(slot, response)
            paces.append(heard)
            return heard.refused

        try:
            self.observer.requesting(first.method, task.url, why + first.purpose)
            response = await self.fetcher.fetch(
                first.method,
                task.url,
                headers=request_headers(task, first.conditional),
                want_body=first.want_body,
                pace=pace,
                turn=turn,
                answered=answered,
            )
            requests = response.attempts
            refused = bool(paces) and paces[-1].refused
            if first.method == "HEAD" and get_after_head(
                response.status, response.reachable, response.transient, refused
            ):
                await self.pace(slot)
                self.observer.requesting("GET", task.url, why + "; HEAD failed")
                response = await self.fetcher.fetch(
                    "GET",
                    task.url,
                    headers=request_headers(task, False),
                    pace=pace,
                    turn=turn,
                    answered=answered,
                )
                requests += response.attempts
            took = time.monotonic() - began  # the URL's own requests, not what follows
            if after is not None:
                await after(response)
        finally:
            self.finished(slot)
        slot.timed(load, took)
        if response.reused:
            self.kept_open(slot)
        last = paces[-1] if paces else NO_PACE
        if not last.refused:
            self.refusals.pop(task.url_id, None)
            return Fetched(response, requests, limited=last.too_long)
        most = MAX_REFUSALS if last.told else self.fetcher.settings.retries
        refusals = self.refusals.get(task.url_id, 0) + 1
        if refusals <= most:
            self.refusals[task.url_id] = refusals
            return Fetched(response, requests, again=True)
        self.refusals.pop(task.url_id, None)
        if not last.told:  # as any answer after --retries
            return Fetched(response, requests)
        why = f"refused for the host's limit after {most} pauses"
        return Fetched(response, requests, limited=why)
