"""The memory: a narrow interface in two halves, implemented over SQLite and PostgreSQL.

The crawl engine talks to the store only through :class:`CrawlMemory`, what a crawl
writes; the reports, the status and the dashboard through :class:`ReadMemory`, what a
reader reads; a :class:`Store` is both. Everything remembered across runs (URLs,
verdicts, links with lines, passes, robots.txt, folders' probes) lives behind them, and
every call that changes something is one transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, TypeVar

from linkpatrol.model import (
    Action,
    Discovered,
    Outcome,
    Probe,
    Reason,
    Referrer,
    ReportOptions,
    RobotsState,
    State,
    StoreError,
    Task,
)

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class SlotUsage:
    """How a crawl's fetch slots (--concurrency) were used, summed over time.

    Each ``*_seconds`` is a time integral: ``busy_seconds`` is the sum over the run of
    the requests in flight times how long they were, so ``busy_seconds / slot_seconds``
    is the share of slots busy. Runs (and workers) of one pass add up.
    """

    seconds: float = 0.0  # time measured
    slot_seconds: float = 0.0  # slots available
    busy_seconds: float = 0.0  # slots with a request in flight
    waiting_seconds: float = 0.0  # free slots with a URL that waits for its host's turn
    queue_seconds: float = 0.0  # URLs due and not started yet
    # free slots with a URL that waits because its host has all of its --per-host in flight
    # (not for robots.txt, its first connections or --delay): the waiting more of it can end
    held_seconds: float = 0.0
    # requests started with their host at its --per-host, and the sum of each one's time
    # over the time its host took below that: about 1 each where the host kept up
    full_requests: float = 0.0
    full_slowdown: float = 0.0

    def __add__(self, other: SlotUsage) -> SlotUsage:
        return SlotUsage(
            self.seconds + other.seconds,
            self.slot_seconds + other.slot_seconds,
            self.busy_seconds + other.busy_seconds,
            self.waiting_seconds + other.waiting_seconds,
            self.queue_seconds + other.queue_seconds,
            self.held_seconds + other.held_seconds,
            self.full_requests + other.full_requests,
            self.full_slowdown + other.full_slowdown,
        )


SHOWN_STARTS = 5  # start values a header names; beyond them, how many more


def starts_named(inputs: Sequence[str], start_urls: Sequence[str]) -> list[str]:
    """What a header names as checked: the start values as the user gave them (a folder,
    a URL, "1,234 URLs from stdin"), else the start URLs; past a few, how many more."""
    values = list(inputs or start_urls)
    if len(values) <= SHOWN_STARTS:
        return values
    return [*values[: SHOWN_STARTS - 1], f"{len(values) - SHOWN_STARTS + 1:,} more"]


@dataclass(frozen=True, slots=True)
class PassInfo:
    """One pass: a crawl from the start URLs until every reachable URL has a verdict."""

    id: int
    start_urls: tuple[str, ...]
    started_at: float
    finished_at: float | None
    stopped_at: float | None
    complete: bool
    elapsed: float
    requests: int
    requested: int
    parsed: int
    seen: int
    resumed: bool = False
    stop_reason: str | None = None
    # the broken links and warnings its report named (counted by state when a run ends,
    # until a report is made; None: not counted)
    broken: int | None = None
    warnings: int | None = None
    usage: SlotUsage | None = None  # how the fetch slots were used (None: not measured)
    options: ReportOptions | None = None  # what shapes its report (None: not kept)
    sites: tuple[str, ...] = ()  # prefixes the site grew by (a start URL redirected)
    inputs: tuple[str, ...] = ()  # the start values as given, for reports (): not kept)


class CrewPlace(NamedTuple):
    """A worker's place in the crew of its pass, as its heartbeat tells it."""

    share: int  # requests it may have in flight to one host (of --per-host)
    workers: int  # workers at work, itself included
    rank: int = 0  # its rank among them, the oldest 0


@dataclass(frozen=True, slots=True)
class PassLimits:
    """Bounds on one pass that the memory enforces as URLs are discovered."""

    max_urls: int = 0
    max_similar: int = 0
    # this worker's own budget (0: none), kept with it for 'status' to show
    max_requests: int = 0
    max_time: float = 0.0


@dataclass(frozen=True, slots=True)
class SiteRecord:
    """A host's robots.txt as last fetched."""

    origin: str
    state: RobotsState
    status: int | None
    body: str | None
    fetched_at: float
    error: str | None = None
    reason: Reason | None = None  # why it could not be fetched, when it could not


class Archived(NamedTuple):
    """A copy of a broken URL in a web archive, taken while it was still good."""

    url: str  # the copy's own address
    at: float  # when it was taken


class ArchiveAnswer(NamedTuple):
    """What the web archive answered for one broken URL, asked about its last-good moment."""

    url_id: int
    last_good: float  # the moment asked about
    copy: Archived | None  # None: no copy from before the URL broke


@dataclass(slots=True)
class UrlRecord:
    """One URL of a pass as the report sees it (not frozen, for the same reason as Task:
    a report reads one per URL, twice)."""

    id: int
    url: str
    action: Action
    state: State
    http_status: int | None
    error: str | None
    content_type: str | None
    base_url: str | None
    redirect_to: str | None
    last_checked: float | None
    last_good: float | None
    failing_since: float | None
    referrers: list[Referrer] = field(default_factory=list)
    last_modified: str | None = None
    response_ms: float | None = None
    first_seen: float | None = None
    reason: Reason | None = None
    second_look: bool = False  # it failed transiently, and was asked again at the pass's end
    pass_id: int | None = None  # the latest pass it was seen in (read for one URL alone)
    # broken: its copy in the web archive from before it broke, kept for its last-good moment
    archived: Archived | None = None


@dataclass(frozen=True, slots=True)
class Change:
    """A change of one URL's verdict: the memory keeps these, not one row per check."""

    at: float
    pass_id: int | None
    state: State
    http_status: int | None
    error: str | None
    reason: Reason | None = None


@dataclass(frozen=True, slots=True)
class Earlier:
    """What the report a pass's report is compared with named, to say what is new in it:
    the last complete pass of the same start URLs, or a baseline (an earlier run's JSON
    report, for a memory that does not outlive one run)."""

    named: dict[str, State]  # its reported URLs: BROKEN (reportable) or WARNING
    pass_id: int | None = None  # the pass (the baseline's own, when it says)
    baseline: str | None = None  # the baseline file, as given

    @property
    def source(self) -> str:
        """What it is, in words: "pass 4", "the baseline links.json"."""
        if self.baseline is not None:
            return f"the baseline {self.baseline}"
        return f"pass {self.pass_id}"

    def as_dict(self) -> dict[str, Any]:
        """JSON-able: as the memory keeps a baseline with the pass compared with it."""
        return {
            "pass": self.pass_id,
            "baseline": self.baseline,
            "named": {url: state.value for url, state in self.named.items()},
        }

    @classmethod
    def of_dict(cls, data: Mapping[str, Any]) -> Earlier:
        named = data.get("named")
        given = data.get("pass")
        baseline = data.get("baseline")
        return cls(
            named={
                str(url): State(state)
                for url, state in (named.items() if isinstance(named, dict) else ())
                if state in (State.BROKEN.value, State.WARNING.value)
            },
            pass_id=given if isinstance(given, int) else None,
            baseline=baseline if isinstance(baseline, str) else None,
        )


class Anchors(NamedTuple):
    """Where a ``#fragment`` can land in a page."""

    ids: frozenset[str]  # ids and <a name>s: found as written
    heading_ids: frozenset[str]  # a Markdown page's headings, lower case: found in any case


class MovedLink(NamedTuple):
    """A link of a pass's page to a URL that moved for good (answered 301 or 308), and
    the URL its chain of such redirects lands on; or to a dead URL, and its copy in the
    web archive."""

    page: str
    page_etag: str | None  # the page's validator when it was read
    line: int
    target: str
    landing: str


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """One crawler at work on a pass (several may share one, on PostgreSQL)."""

    id: str
    pass_id: int
    host: str  # the machine's name
    pid: int
    started_at: float
    heartbeat: float  # when it last claimed work or wrote its outcomes
    done: int  # URLs it settled so far
    slots: int  # its share of the per-host limit
    max_requests: int = 0  # its own --max-requests (0: none)
    max_time: float = 0.0  # its own --max-time, seconds (0: none)


class Part(NamedTuple):
    """One of ``parts`` parts of a pass's URLs: those whose id leaves ``remainder`` divided
    by ``parts``. Discovery order mixes a site's most linked URLs (its navigation, found
    first) among the parts, so that each part is as much work to report."""

    remainder: int
    parts: int


class Frontier(Protocol):
    """The URLs due in a pass, as the memory holds them for every worker: seeded with the
    start URLs, claimed under a lease, released, counted; a worker's heartbeat keeps its
    leases and gives it its share of each host."""

    def seed(self, pass_id: int, urls: Sequence[tuple[str, Action]], now: float) -> None: ...

    def claim(
        self,
        pass_id: int,
        limit: int,
        now: float,
        exclude_origins: Collection[str],
        lease_seconds: float,
    ) -> list[Task]: ...

    def release(self, pass_id: int, url_ids: Sequence[int]) -> None: ...

    def pending(self, pass_id: int) -> int: ...

    def heartbeat(self, now: float, done: int, busy: int, per_host: int) -> CrewPlace:
        """Say this crawler lives; how many requests it may have in flight to one host,
        how many crawlers are at work (itself included), and its rank among them."""
        ...


class CrawlMemory(Frontier, Protocol):
    """What a crawl writes to the memory, and the little it reads back to go on: its pass,
    the frontier and its leases, outcomes, robots.txt, its crew."""

    def begin_pass(
        self,
        start_urls: Sequence[str],
        now: float,
        limits: PassLimits | None = None,
        options: ReportOptions | None = None,
        inputs: Sequence[str] = (),
    ) -> PassInfo: ...

    def links_of(
        self, url_ids: Sequence[int], unseen_in: int | None = None
    ) -> dict[int, list[tuple[str, int | None]]]:
        """The remembered links of these pages, in page order, as (target URL, line); with
        ``unseen_in``, only those to URLs not yet seen in that pass."""
        ...

    def complete(
        self,
        pass_id: int,
        outcomes: Sequence[Outcome],
        now: float,
        extra_requests: int = 0,
        batch: int = 0,
    ) -> set[str]:
        """Write a batch of outcomes; the origins of the URLs it queued. ``batch`` numbers
        the worker's batches: one written already (its commit's answer lost) is not
        written again."""
        ...

    def redirects(self, pass_id: int) -> dict[str, tuple[int, str]]: ...

    def certificates_warned(self, pass_id: int) -> set[str]:
        """The origins whose certificate's end a URL of the pass warns of."""
        ...

    def end_run(
        self,
        pass_id: int,
        elapsed: float,
        now: float,
        complete: bool,
        stop_reason: str | None,
        usage: SlotUsage | None = None,
    ) -> PassInfo: ...

    def save_counts(self, pass_id: int, broken: int, warnings: int) -> None:
        """Keep the broken links and warnings the pass's report named."""
        ...

    def save_named(self, pass_id: int, named: Mapping[str, State]) -> None:
        """Keep the URLs the pass's report named (each BROKEN or WARNING), which the
        report of the next pass of its start URLs is compared with."""
        ...

    def save_baseline(self, pass_id: int, earlier: Earlier) -> None:
        """Keep a baseline as what the pass's report is compared with, instead of the
        memory's earlier passes."""
        ...

    def extend_site(self, pass_id: int, prefixes: Sequence[str]) -> tuple[str, ...]:
        """Keep the prefixes the pass's site grew by; all it has grown by."""
        ...

    def sites(self, pass_id: int) -> tuple[str, ...]:
        """The prefixes the pass's site has grown by so far."""
        ...

    def stop_waiting(self) -> None:
        """The crawl is stopping: wait no longer for a database that went away (from any
        thread)."""
        ...

    def steady(self, read: Callable[[], R]) -> R:
        """What ``read`` (reads of the memory, such as a report's) returns, made again
        while the connection to the database is lost, as the crawl's own calls are: the
        report of a crawl that ended in an outage waits for the database as its crawl did."""
        ...

    def on_outage(self, tell: Callable[[str], None]) -> None:
        """Have ``tell`` say (from the memory's own thread) when the connection to the
        database is lost and the crawl waits for it to come back."""
        ...

    def site(self, origin: str) -> SiteRecord | None: ...

    def save_site(self, record: SiteRecord) -> None: ...

    def probes(self, origin: str) -> list[Probe]:
        """How the host's folders answered a name that cannot exist, as last probed."""
        ...

    def save_probe(self, probe: Probe) -> None:
        """Keep how a folder answered a name that cannot exist, replacing what was kept."""
        ...

    def https_served(self, origin: str, since: float) -> bool | None:
        """Whether the http: ``origin`` served its https: counterpart when last asked, if
        that was after ``since`` (None: not asked since)."""
        ...

    def save_https_served(self, origin: str, served: bool, at: float) -> None: ...

    def save_plugin_fields(self, pass_id: int, fields: Mapping[str, Mapping[str, Any]]) -> None:
        """Keep what plugins add to a pass's report (JSON-able), replacing what each
        of them added before."""
        ...

    def archive_due(self, pass_id: int, none_before: float) -> list[UrlRecord]:
        """The pass's broken URLs, once good, that the web archive was not asked about for
        their last-good moment, or that it had no copy of when asked before
        ``none_before``: in discovery order, without referrers."""
        ...

    def save_archived(self, answers: Sequence[ArchiveAnswer], now: float) -> None:
        """Keep the web archive's answers, asked ``now``."""
        ...


class ReadMemory(Protocol):
    """What a reader reads of the memory: the reports, the status, a URL's history, the
    dashboard."""

    location: str

    def latest_pass(
        self, inputs: Sequence[str] = (), start_urls: Sequence[str] = ()
    ) -> PassInfo | None:
        """The pass a run last began or ended (the latest, but for a pass of other start
        values resumed since); given start values (as given, or as start URLs), the
        latest pass of those."""
        ...

    def pass_urls(
        self, pass_id: int, with_referrers: bool = True, part: Part | None = None
    ) -> Iterator[UrlRecord]:
        """The pass's URLs (of one part of them, if given) in discovery order."""
        ...

    def referrers(self, pass_id: int, url_ids: Sequence[int]) -> dict[int, list[Referrer]]:
        """The pages of the pass (and lines) that link to each of these URLs."""
        ...

    def outlinks(
        self, pass_id: int, part: Part | None = None
    ) -> Iterator[tuple[str, list[Referrer]]]: ...

    def verdicts(self, pass_id: int) -> dict[State, int]:
        """How many URLs of the pass have each verdict so far (checked in this pass)."""
        ...

    def passes(self, limit: int, like: int | None = None) -> list[PassInfo]:
        """The last ``limit`` passes (of the same start URLs as pass ``like``, if given),
        oldest first."""
        ...

    def fragments(self, pass_id: int) -> Iterator[tuple[int, str, str, Anchors]]:
        """Each #fragment the pass links to, once per target, where the page it lands on
        has known anchors: (the target's id, that page, the fragment, its anchors)."""
        ...

    def fragment_referrers(
        self, pass_id: int, linked: Collection[tuple[int, str]]
    ) -> dict[tuple[int, str], list[Referrer]]:
        """The pages (and lines) of the pass that link to each (target id, fragment)."""
        ...

    def moved_links(self, pass_id: int) -> list[MovedLink]:
        """The links of the pass's local pages to URLs that moved for good, each with
        where it lands once every permanent redirect is followed, a URL that is not
        broken (one that then redirects for a while is a landing), in page and line order."""
        ...

    def archived_links(self, pass_id: int) -> list[MovedLink]:
        """The links of the pass's local pages to broken URLs that were once good, each
        with its copy in the web archive from before it broke (as ``landing``), in page
        and line order."""
        ...

    def loaded_links(self, pass_id: int) -> Iterator[tuple[int, str, str, int | None, int]]:
        """The links of the pass that https: pages load over http: (see
        :func:`~linkpatrol.rules.mixed_content`): (target id, page, target, line, kind), by
        target, page and line."""
        ...

    def changes(self, url_ids: Sequence[int]) -> dict[int, list[Change]]:
        """Each URL's changes of verdict, oldest first."""
        ...

    def find_urls(self, text: str, limit: int, offset: int = 0) -> list[UrlRecord]:
        """URLs that contain ``text`` (any case), in discovery order, without referrers."""
        ...

    def url_record(self, url: str) -> UrlRecord | None:
        """One URL as last checked, with the pages of its last pass that link to it."""
        ...

    def links_from(self, url: str) -> list[Referrer]:
        """The links the page at ``url`` held when last parsed, in page order."""
        ...

    def plugin_fields(self, pass_id: int) -> dict[str, dict[str, Any]]:
        """What plugins added to the pass's report, by plugin name, in name order."""
        ...

    def earlier(self, info: PassInfo) -> Earlier | None:
        """What the pass's report is compared with to say what is new: the baseline kept
        with it, else the last complete pass before it of the same start URLs (None: there
        is none, or it kept nothing)."""
        ...

    def workers(self) -> list[WorkerInfo]:
        """The crawlers at work now, the oldest first."""
        ...

    def archived_copies(self, pass_id: int) -> dict[str, Archived]:
        """The pass's broken URLs with a copy in the web archive from before they broke,
        each with that copy."""
        ...

    def pending(self, pass_id: int) -> int: ...

    def close(self) -> None: ...


class Store(CrawlMemory, ReadMemory, Protocol):
    """The whole memory: what a crawl writes and what a reader reads."""


def open_store(location: str, *, crawl: bool, outage_wait: float = 60.0) -> Store:
    """Open the memory named by ``--db``; ``crawl`` takes the single-writer lock.

    A ``postgresql://`` (or ``postgres://``) URL names a PostgreSQL database, anything
    else a SQLite file. A crawl's calls to a PostgreSQL memory wait up to ``outage_wait``
    seconds for a lost connection to be made again.
    """
    if location.startswith(("postgresql://", "postgres://")):
        try:
            from linkpatrol.store.postgres import PostgresStore
        except ImportError as exc:
            raise StoreError(
                f"PostgreSQL memory needs psycopg 3 and psycopg_pool ({exc}): "
                "pip install 'psycopg[binary]' psycopg_pool"
            ) from None
        return PostgresStore(location, crawl=crawl, outage_wait=outage_wait)
    from linkpatrol.store.sqlite import SqliteStore

    return SqliteStore(location, crawl=crawl)


def read_memory(location: str, query: Callable[[Store], R]) -> R:
    """What ``query`` reads from the memory at ``location``, opened for reading only (a
    missing memory is refused, never made)."""
    store = open_store(location, crawl=False)
    try:
        return query(store)
    finally:
        store.close()


__all__ = [
    "Anchors",
    "ArchiveAnswer",
    "Archived",
    "Change",
    "CrawlMemory",
    "CrewPlace",
    "Discovered",
    "Earlier",
    "Frontier",
    "MovedLink",
    "Outcome",
    "PassInfo",
    "PassLimits",
    "Probe",
    "ReadMemory",
    "Referrer",
    "SiteRecord",
    "SlotUsage",
    "Store",
    "Task",
    "UrlRecord",
    "WorkerInfo",
    "open_store",
    "read_memory",
    "starts_named",
]
