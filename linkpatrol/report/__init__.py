"""One report model built from the memory; every output format renders this and nothing else."""

from __future__ import annotations

import dataclasses
from array import array
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import unquote

from linkpatrol import __version__
from linkpatrol.model import (
    Action,
    ExitCode,
    FailOn,
    Reason,
    Referrer,
    ReportOptions,
    State,
    StoreError,
)
from linkpatrol.rules import is_reportable, loaded_insecurely, mixed_content
from linkpatrol.store import (
    Anchors,
    Archived,
    Change,
    Earlier,
    Part,
    PassInfo,
    ReadMemory,
    SlotUsage,
    UrlRecord,
    starts_named,
)
from linkpatrol.urls import site_prefix

if TYPE_CHECKING:
    from linkpatrol.report.json import Sharing

JSON_SCHEMA_VERSION = 1
MISSING_ANCHOR = "missing anchor"
TREND_PASSES = 20  # passes shown in the broken-links-over-time pictures
FLAP_PASSES = 7  # the last passes in which a URL's changes of verdict are counted
FLAPPING = 3  # changes of verdict in the last FLAP_PASSES that make a URL "flapping"
LIMITED_KEPT = 100  # URLs left unchecked by a limit that a report keeps by name


@dataclass(slots=True)
class Entry:
    """One URL of the pass with its verdict and the pages that link to it."""

    url: str
    action: Action
    state: State
    http_status: int | None
    error: str | None
    content_type: str | None
    redirect_to: str | None
    reportable: bool
    last_checked: float | None
    last_good: float | None
    failing_since: float | None
    referrers: list[Referrer]
    links: list[Referrer] | None = None
    last_modified: str | None = None  # the server's Last-Modified header, as sent
    response_ms: float | None = None  # how long its last request took
    changes: list[Change] | None = None  # its changes of verdict (reported URLs only)
    new: bool = False  # named by the report, and not so by the one it is compared with
    reason: Reason | None = None  # why it has its verdict (None when good)
    second_look: bool = False  # it failed transiently, and was asked again at the pass's end
    flips: int = 0  # its changes of verdict in the last FLAP_PASSES passes
    archived: Archived | None = None  # broken: its copy in the web archive from before

    @property
    def flapping(self) -> bool:
        """Its verdict changed FLAPPING times or more in the last FLAP_PASSES passes."""
        return self.flips >= FLAPPING

    @property
    def is_html(self) -> bool:
        kind = (self.content_type or "").partition(";")[0].strip().lower()
        return kind in ("text/html", "application/xhtml+xml")


@dataclass(frozen=True, slots=True)
class Summary:
    urls: int
    requested: int
    parsed: int
    broken: int
    reportable: int
    warnings: int
    redirects: int
    requests: int
    elapsed: float
    fetch: FetchUse | None = None


ADVICE_SECONDS = 2.0  # a run shorter than this gains too little from any advice
ADVICE_REQUESTS = 20  # requests at a host's --per-host needed to judge how it kept up
KEPT_UP = 1.5  # a host that took longer than this many times its unhurried time did not


@dataclass(frozen=True, slots=True)
class FetchUse:
    """How the fetch slots (--concurrency) were used over the pass, on average."""

    slots: float  # slots available
    busy: float  # share of slots with a request in flight
    waiting: float  # share of slots free while a URL waited for its host's turn
    idle: float  # share of slots with nothing to do
    queue: float  # URLs waiting for a verdict
    seconds: float = 0.0  # time measured
    held: float = 0.0  # share of slots free while a URL waited for its host's --per-host
    # how much longer a host took with all of its --per-host in flight than below it, on
    # average (None: not measured)
    slowdown: float | None = None

    @staticmethod
    def of(usage: SlotUsage | None) -> FetchUse | None:
        if usage is None or usage.seconds <= 0 or usage.slot_seconds <= 0:
            return None
        busy = usage.busy_seconds / usage.slot_seconds
        waiting = usage.waiting_seconds / usage.slot_seconds
        full = usage.full_requests
        return FetchUse(
            slots=usage.slot_seconds / usage.seconds,
            busy=busy,
            waiting=waiting,
            idle=max(0.0, 1.0 - busy - waiting),
            queue=usage.queue_seconds / usage.seconds,
            seconds=usage.seconds,
            held=usage.held_seconds / usage.slot_seconds,
            slowdown=usage.full_slowdown / full if full >= ADVICE_REQUESTS else None,
        )

    def advice(self) -> str | None:
        """What the figures show would help, if anything: nothing for a run too short to
        gain from it; a higher --per-host only where URLs waited for it and the hosts
        answered as fast with all of it in flight as below it (a server that answers a few
        requests at a time takes longer per request instead, and gains nothing)."""
        if self.seconds < ADVICE_SECONDS:
            return None
        if self.held >= 0.25 and self.slowdown is not None and self.slowdown <= KEPT_UP:
            return (
                "slots often waited for a host's turn, and the hosts kept up with every "
                "request allowed: a higher --per-host helps"
            )
        if self.busy >= 0.9 and self.queue > self.slots:
            return "every slot was busy with URLs queued: a higher --concurrency helps"
        return None


@dataclass(slots=True)
class Tally:
    """Figures over every URL of a pass, gathered in one reading of the memory."""

    states: Counter[State] = field(default_factory=Counter)
    limited: int = 0  # URLs left unchecked by a limit
    limited_first: list[Entry] = field(default_factory=list)  # the first LIMITED_KEPT of them
    response_ms: array[float] = field(default_factory=lambda: array("d"))
    second_looks: list[Entry] = field(default_factory=list)  # those that needed one

    def add(self, entry: Entry) -> None:
        self.states[entry.state] += 1
        if entry.second_look:
            self.second_looks.append(entry)
        if entry.reason is Reason.LIMIT:
            self.limited += 1
            if len(self.limited_first) < LIMITED_KEPT:
                self.limited_first.append(entry)
        if entry.response_ms is not None:
            self.response_ms.append(entry.response_ms)

    @classmethod
    def of(cls, entries: Iterable[Entry]) -> Tally:
        tally = cls()
        for entry in entries:
            tally.add(entry)
        return tally


class StoredEntries:
    """Every URL of a pass as report entries, read again from the memory at each iteration,
    so that a report of any size is never whole in memory. Good while the store is open.

    One part of them (see :class:`~linkpatrol.store.Part`) can be read apart, by another
    process on a store of its own: :meth:`part_job` says all it needs."""

    def __init__(
        self,
        store: ReadMemory,
        pass_id: int,
        *,
        report_after: float,
        damp_new: bool,
        xref: bool,
        history: dict[int, tuple[list[Change] | None, bool, int]],
        tail: list[Entry],
        part: Part | None = None,
        loaded: dict[int, list[Referrer]] | None = None,
    ) -> None:
        self._store = store
        self._pass_id = pass_id
        self._report_after = report_after
        self._damp_new = damp_new
        self._xref = xref
        self._history = history  # url id: (changes of verdict, new, flips)
        self._tail = tail  # entries the memory holds no row for (missing anchors)
        self._part = part
        self._loaded = loaded or {}  # url id: the pages that load it as mixed content

    @property
    def whole(self) -> bool:
        """All of the pass's entries, not one part."""
        return self._part is None

    @property
    def tail(self) -> list[Entry]:
        return self._tail

    def part(self, part: Part) -> StoredEntries:
        """The entries of one part, without the tail."""
        return self.part_job(part).entries(self._store)

    def part_job(self, part: Part) -> PartJob:
        """What reading one part takes, for a process with its own store."""
        history = {i: h for i, h in self._history.items() if i % part.parts == part.remainder}
        loaded = {i: p for i, p in self._loaded.items() if i % part.parts == part.remainder}
        return PartJob(
            self._pass_id, self._report_after, self._damp_new, self._xref, history, part, loaded
        )

    def numbered(self) -> Iterator[tuple[int, Entry]]:
        """The stored entries (not the tail) with their URLs' ids, in the ids' order."""
        xref, part = self._xref, self._part
        outlinks = self._store.outlinks(self._pass_id, part) if xref else iter(())
        pending = next(outlinks, None)
        for record in self._store.pass_urls(self._pass_id, part=part):
            links: list[Referrer] | None = None
            if xref:
                links = []
                # both in the order of the URLs' ids: a merge, not a lookup
                if pending is not None and pending[0] == record.url:
                    links = pending[1]
                    pending = next(outlinks, None)
            reportable = _reportable(record, self._report_after, self._damp_new)
            entry = entry_of(record, reportable, links)
            if (pages := self._loaded.get(record.id)) is not None:
                as_loaded_insecurely(entry, pages)
            if (known := self._history.get(record.id)) is not None:
                entry.changes, entry.new, entry.flips = known
            yield record.id, entry

    def __iter__(self) -> Iterator[Entry]:
        for _, entry in self.numbered():
            yield entry
        yield from self._tail


class PartJob(NamedTuple):
    """One part of a pass's entries, as another process reads it from its own store (a
    named tuple: it crosses to that process pickled, which compiled dataclasses refuse)."""

    pass_id: int
    report_after: float
    damp_new: bool
    xref: bool
    history: dict[int, tuple[list[Change] | None, bool, int]]
    part: Part
    loaded: dict[int, list[Referrer]]

    def entries(self, store: ReadMemory) -> StoredEntries:
        return StoredEntries(
            store,
            self.pass_id,
            report_after=self.report_after,
            damp_new=self.damp_new,
            xref=self.xref,
            history=self.history,
            tail=[],
            part=self.part,
            loaded=self.loaded,
        )


def _reportable(record: UrlRecord, report_after: float, damp_new: bool) -> bool:
    return is_reportable(
        record.state,
        record.last_checked,
        record.last_good,
        record.failing_since,
        report_after,
        damp_new,
    )


@dataclass(slots=True)
class Report:
    version: str
    complete: bool
    pass_id: int
    started_at: float
    finished_at: float | None
    start_urls: list[str]
    summary: Summary
    entries: Iterable[Entry]  # every URL of the pass; may be read from the memory each time
    stop_reason: str | None = None
    options: ReportOptions = field(default_factory=ReportOptions)  # as it was checked
    extra: dict[str, object] = field(default_factory=dict)
    passes: list[PassInfo] = field(default_factory=list)  # the last passes, this one last
    plugins: dict[str, Any] = field(default_factory=dict)  # report fields by plugin name
    # the URLs a report names (broken, warning, redirect), kept whole; found in entries if None
    noted: list[Entry] | None = None
    tally: Tally | None = None  # figures over all entries; counted from entries if None
    inputs: list[str] = field(default_factory=list)  # the start values as given ([]: unknown)
    earlier: Earlier | None = None  # what "new" is measured against; None: nothing earlier

    @property
    def starts(self) -> list[str]:
        """What the report says was checked: see :func:`starts_named`."""
        return starts_named(self.inputs, self.start_urls)

    @property
    def redirects_as_warnings(self) -> bool:
        return self.options.redirects_as_warnings

    @property
    def xref(self) -> bool:
        return self.options.xref

    @property
    def warnings_fail(self) -> bool:
        return self.options.fail_on is FailOn.WARNING

    @property
    def until(self) -> float:
        """The moment the report speaks of: when its pass finished or stopped."""
        return self.finished_at or self.started_at

    @property
    def named(self) -> list[Entry]:
        """The URLs a report may name: broken, warnings and redirects, in discovery order."""
        if self.noted is None:
            self.noted = [e for e in self.entries if e.state in _WITH_HISTORY]
        return self.noted

    @property
    def figures(self) -> Tally:
        if self.tally is None:
            self.tally = Tally.of(self.entries)
        return self.tally

    @property
    def redirects(self) -> dict[str, Entry]:
        return {e.url: e for e in self.named if e.state is State.REDIRECT}

    @property
    def broken(self) -> list[Entry]:
        """Reportable broken URLs, worst first: never good, then longest since last good
        (each by the day, then by URL)."""
        broken = [e for e in self.named if e.reportable]
        return sorted(broken, key=_worst_first)

    @property
    def not_yet_reported(self) -> list[Entry]:
        return sorted(
            (
                e
                for e in self.named
                if e.state is State.BROKEN and not e.reportable and not e.flapping
            ),
            key=_worst_first,
        )

    @property
    def warnings(self) -> list[Entry]:
        as_warnings = self.redirects_as_warnings
        return [
            e
            for e in self.named
            if named_as(e.state, e.reportable, as_warnings, e.flapping) is State.WARNING
        ]

    @property
    def reported(self) -> list[Entry]:
        """The URLs a report names: reportable broken ones worst first, then the warnings."""
        return self.broken + self.warnings

    @property
    def named_kinds(self) -> dict[str, State]:
        """What the report names, each URL as BROKEN or WARNING: what the report of the
        next pass is compared with."""
        kinds = dict.fromkeys((e.url for e in self.broken), State.BROKEN)
        kinds.update(dict.fromkeys((e.url for e in self.warnings), State.WARNING))
        return kinds

    @property
    def new(self) -> list[Entry]:
        """The URLs the report names that the report it is compared with did not."""
        return [e for e in self.reported if e.new]

    @property
    def listed(self) -> list[Entry]:
        """The URLs the Markdown and SARIF reports list: all reported, or with --only-new
        the new ones."""
        return self.new if self.options.only_new else self.reported

    @property
    def new_said(self) -> str:
        """How many of the links it names are new, and since what: "2 new since pass 4"."""
        new = len(self.new)
        if self.earlier is None:
            return f"{new} new (no earlier complete pass of these start URLs to compare with)"
        return f"{new} new since {self.earlier.source}"

    @property
    def failing(self) -> list[Entry]:
        """The URLs that make the exit code 1: reportable broken ones, warnings with
        --fail-on warning, the new broken ones only with --fail-on new."""
        if self.options.fail_on is FailOn.NEW:
            return [e for e in self.broken if e.new]
        return self.reported if self.warnings_fail else self.broken

    @property
    def counted(self) -> str:
        """What the report names, in words: "2 broken links, 1 warning"."""
        broken, warnings = len(self.broken), len(self.warnings)
        return (
            f"{broken} broken link{'' if broken == 1 else 's'}, "
            f"{warnings} warning{'' if warnings == 1 else 's'}"
        )

    @property
    def nothing_requested(self) -> str | None:
        """What a complete pass that made no request at all says of itself: a green run
        that checked nothing proves nothing, so the reports meant for a reader say so."""
        if not self.complete or self.summary.requested:
            return None
        states = self.figures.states
        why = [
            f"{count} {what}"
            for count, what in (
                (states[State.UNCHECKED], "left unchecked by a rule, the hooks or a limit"),
                (states[State.DISALLOWED], "disallowed by robots.txt"),
                (states[State.OK], "known good from the memory (--recheck-good)"),
            )
            if count
        ]
        if not self.summary.urls:
            why = ["every start URL was ignored by a rule or the hooks"]
        return "Nothing was requested in this pass" + (f": {'; '.join(why)}" if why else "")

    @property
    def exit_code(self) -> ExitCode:
        """3 for a pass cut short, 1 for one that found what fails it, else 0."""
        if not self.complete:
            return ExitCode.STOPPED
        return ExitCode.BROKEN if self.failing else ExitCode.CLEAN


def named_as(
    state: State, reportable: bool, redirects_as_warnings: bool, flapping: bool = False
) -> State | None:
    """How a report names a URL of this verdict: BROKEN (a reportable broken link),
    WARNING, or not at all. A ``flapping`` link broken for less than --report-after is a
    warning, where it would be held back silently: it is no alarm yet, but no good link
    either."""
    if reportable:
        return State.BROKEN
    if state is State.WARNING or (redirects_as_warnings and state is State.REDIRECT):
        return State.WARNING
    if flapping and state is State.BROKEN:
        return State.WARNING
    return None


def recent_verdicts(changes: Iterable[Change] | None, passes: Iterable[int]) -> list[State | None]:
    """A URL's verdict at the end of each of these passes (ids, oldest first): that of its
    last change of verdict up to it; None before the first."""
    ordered = sorted(
        ((c.pass_id, c.state) for c in changes or () if c.pass_id is not None),
        key=lambda change: change[0],
    )
    verdicts: list[State | None] = []
    state: State | None = None
    i = 0
    for pass_id in passes:
        while i < len(ordered) and ordered[i][0] <= pass_id:
            state = ordered[i][1]
            i += 1
        verdicts.append(state)
    return verdicts


def recent_passes(ids: Iterable[int], upto: int) -> list[int]:
    """The last FLAP_PASSES of these passes (ids) up to ``upto``, oldest first: those a
    URL's changes of verdict are counted in."""
    return sorted(i for i in ids if i <= upto)[-FLAP_PASSES:]


def flips(changes: Iterable[Change] | None, recent: Collection[int]) -> int:
    """How many of a URL's changes of verdict came in the ``recent`` passes (their ids)."""
    return sum(1 for c in changes or () if c.pass_id in recent)


def is_new(url: str, named: State | None, earlier: Mapping[str, State] | None) -> bool:
    """Whether a URL a report names as ``named`` is new: the report it is compared with
    (``earlier``, what that one named) did not name it so; it broke, or was added broken,
    since. With nothing to compare with, all a report names is new.

    The one place that decides it, for every format, the exit code of --fail-on new and
    ``linkpatrol report``."""
    if named is None:
        return False
    return earlier is None or earlier.get(url) is not named


# the verdicts whose history a report shows (those it may name)
_WITH_HISTORY = frozenset((State.BROKEN, State.WARNING, State.REDIRECT))


def _worst_first(entry: Entry) -> tuple[int, float, str]:
    """Never good before last good long ago, by the day (UTC) a report shows, then by URL.

    By the day, not the moment: the links of one pass start failing a few milliseconds
    apart, as their batches were written, and two runs over the same site would list them
    in two orders.
    """
    if entry.last_good is None:
        return (0, (entry.failing_since or 0.0) // 86400, entry.url)
    return (1, entry.last_good // 86400, entry.url)


def start_url_of(report: Report, url: str) -> str | None:
    """The first start URL whose site (its prefix up to the last '/') holds ``url``."""
    for start in report.start_urls:
        if url.startswith(site_prefix(start)):
            return start
    return None


# timestamps already written as ISO 8601: a batch of outcomes is written with one time, so
# a report's URLs share a few hundred of them (2 us each to format)
_ISO: dict[float, str] = {}
_ISO_KEPT = 4096


def iso(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    text = _ISO.get(timestamp)
    if text is None:
        if len(_ISO) >= _ISO_KEPT:
            _ISO.clear()
        text = _ISO[timestamp] = datetime.fromtimestamp(timestamp, UTC).isoformat(
            timespec="seconds"
        )
    return text


def moment(timestamp: float | None) -> str:
    """A moment for people: '2026-11-22 02:00:09' (UTC), or 'never'."""
    stamp = iso(timestamp)
    return f"{stamp[:10]} {stamp[11:19]}" if stamp else "never"


def entry_of(
    record: UrlRecord, reportable: bool = False, links: list[Referrer] | None = None
) -> Entry:
    """A URL of the memory as a report entry."""
    return Entry(
        url=record.url,
        action=record.action,
        state=record.state,
        http_status=record.http_status,
        error=record.error,
        content_type=record.content_type,
        redirect_to=record.redirect_to,
        reportable=reportable,
        last_checked=record.last_checked,
        last_good=record.last_good,
        failing_since=record.failing_since,
        referrers=record.referrers,
        links=links,
        last_modified=record.last_modified,
        response_ms=record.response_ms,
        reason=record.reason,
        second_look=record.second_look,
        archived=record.archived,
    )


def archived_words(archived: Archived) -> str:
    """What every format says of a copy in the web archive, before its address."""
    return f"archived copy from {moment(archived.at)[:10]}"


def anchor_found(fragment: str, anchors: Anchors) -> bool:
    """Whether ``#fragment`` lands somewhere in a page with these anchors.

    As browsers do: an id or name as written, else percent-decoded; an empty fragment and
    ``top`` mean the top of the page. A Markdown heading as GitHub finds it: the decoded
    fragment in lower case.
    """
    ids = anchors.ids
    if not fragment or fragment in ids:
        return True
    decoded = unquote(fragment)
    lowered = decoded.lower()
    return decoded in ids or lowered == "top" or lowered in anchors.heading_ids


def missing_anchors(store: ReadMemory, pass_id: int) -> list[Entry]:
    """One broken entry per ``page#fragment`` linked in the pass that the page lacks; the
    page's own details (action, content type, when checked) are left for the caller.

    Each fragment is looked for once per target, however many pages link to it; only the
    links to the missing ones are read."""
    missing = [
        ((target, fragment), f"{page}#{fragment}")
        for target, page, fragment, anchors in store.fragments(pass_id)
        if not anchor_found(fragment, anchors)
    ]
    referrers = store.fragment_referrers(pass_id, [linked for linked, _ in missing])
    found: dict[str, Entry] = {}
    for linked, url in missing:
        entry = found.get(url)
        if entry is None:
            entry = found[url] = Entry(
                url=url,
                action=Action.PARSE,
                state=State.BROKEN,
                http_status=None,
                error=MISSING_ANCHOR,
                content_type=None,
                redirect_to=None,
                reportable=True,
                last_checked=None,
                last_good=None,
                failing_since=None,
                referrers=[],
                reason=Reason.MISSING_ANCHOR,
            )
        entry.referrers.extend(referrers[linked])
    return list(found.values())


def insecure_loads(store: ReadMemory, pass_id: int) -> dict[int, list[Referrer]]:
    """The pages (and lines) of the pass that load each URL as mixed content, by its id."""
    found: dict[int, list[Referrer]] = {}
    for url_id, page, target, line, kind in store.loaded_links(pass_id):
        if mixed_content(page, target, kind):
            found.setdefault(url_id, []).append(Referrer(page, line))
    return found


def as_loaded_insecurely(entry: Entry, pages: list[Referrer]) -> None:
    """A URL that https: pages load over http: as the report names it: a warning whose
    referrers are those pages, unless its own verdict says more."""
    verdict = loaded_insecurely(entry.state)
    if verdict is not None:
        entry.state, entry.reason, entry.error = verdict
        entry.referrers = pages


def build_report(
    store: ReadMemory,
    pass_info: PassInfo | None = None,
    options: ReportOptions | None = None,
    earlier: Earlier | None = None,
) -> Report:
    """The report of one pass (by default the latest) read from the memory alone, with
    ``options`` (by default those kept with the pass: the report as it was checked),
    compared with ``earlier`` to say what is new (by default the baseline kept with the
    pass, else the last complete pass before it of the same start URLs).

    The memory is read once for the figures and the URLs a report names; its ``entries``
    are read again, URL by URL, each time they are gone through, so the store must stay
    open while the report is rendered.
    """
    info = pass_info or store.latest_pass()
    if info is None:
        raise StoreError(f"{store.location}: no pass recorded yet (run 'linkpatrol check' first)")
    options = options or info.options or ReportOptions()
    report_after = options.report_after
    anchors = missing_anchors(store, info.id) if options.anchors else []
    anchor_pages: dict[str, list[Entry]] = {}
    for entry in anchors:
        anchor_pages.setdefault(entry.url.partition("#")[0], []).append(entry)
    tally = Tally()
    noted: dict[int, Entry] = {}
    reportable = 0
    loaded = insecure_loads(store, info.id)
    for record in store.pass_urls(info.id, with_referrers=False):
        counts = _reportable(record, report_after, options.damp_new)
        entry = entry_of(record, counts)
        if (pages := loaded.get(record.id)) is not None:
            as_loaded_insecurely(entry, pages)
        tally.add(entry)
        reportable += counts
        if entry.state in _WITH_HISTORY:
            noted[record.id] = entry
        for missing in anchor_pages.get(record.url, ()):
            missing.action = record.action
            missing.content_type = record.content_type
            missing.last_checked = record.last_checked
    urls = sum(tally.states.values())
    linked = [i for i, e in noted.items() if e.reason is not Reason.MIXED_CONTENT]
    for url_id, pages in store.referrers(info.id, linked).items():
        noted[url_id].referrers = pages
    passes = store.passes(TREND_PASSES, like=info.id)
    earlier = earlier or store.earlier(info)
    before = earlier.named if earlier is not None else None
    as_warnings = options.redirects_as_warnings
    found = store.changes(list(noted))
    recent = set(recent_passes((p.id for p in passes), info.id))
    history: dict[int, tuple[list[Change] | None, bool, int]] = {}
    for url_id, entry in noted.items():
        entry.changes = found.get(url_id)
        entry.flips = flips(entry.changes, recent)
        named = named_as(entry.state, entry.reportable, as_warnings, entry.flapping)
        entry.new = is_new(entry.url, named, before)
        history[url_id] = (entry.changes, entry.new, entry.flips)
    for entry in anchors:
        entry.new = is_new(entry.url, named_as(entry.state, entry.reportable, as_warnings), before)
        tally.add(entry)
    reportable += len(anchors)
    redirects = tally.states[State.REDIRECT]
    warnings = tally.states[State.WARNING]
    if options.redirects_as_warnings:
        warnings += redirects
    # flapping links held back by --report-after are named as warnings too
    warnings += sum(
        1 for e in noted.values() if e.state is State.BROKEN and not e.reportable and e.flapping
    )
    summary = Summary(
        urls=urls,
        requested=info.requested,
        parsed=info.parsed,
        broken=tally.states[State.BROKEN],
        reportable=reportable,
        warnings=warnings,
        redirects=redirects,
        requests=info.requests,
        elapsed=info.elapsed,
        fetch=FetchUse.of(info.usage),
    )
    entries = StoredEntries(
        store,
        info.id,
        report_after=report_after,
        damp_new=options.damp_new,
        xref=options.xref,
        history=history,
        tail=anchors,
        loaded=loaded,
    )
    report = Report(
        version=__version__,
        complete=info.complete,
        pass_id=info.id,
        started_at=info.started_at,
        finished_at=info.finished_at or info.stopped_at,
        start_urls=list(info.start_urls),
        summary=summary,
        entries=entries,
        stop_reason=info.stop_reason,
        options=options,
        passes=[p for p in passes if p.id <= info.id],
        plugins=store.plugin_fields(info.id),
        noted=[*noted.values(), *anchors],
        tally=tally,
        inputs=list(info.inputs),
        earlier=earlier,
    )
    # the pass itself as this report counts it, so that its charts agree with its headline
    report.passes = [
        dataclasses.replace(p, broken=len(report.broken), warnings=len(report.warnings))
        if p.id == info.id
        else p
        for p in report.passes
    ]
    return report


def render_pieces(report: Report, fmt: str, *, sharing: Sharing | None = None) -> Iterator[str]:
    """The report as pieces of text to write one after another (JSON streams URL by URL,
    half of a big report's URLs written by the helper process of ``sharing``)."""
    if fmt == "json":
        from linkpatrol.report.json import iter_json

        yield from iter_json(report, sharing)
    else:
        yield render(report, fmt)


def render(report: Report, fmt: str) -> str:
    """The report in one of ``linkpatrol.config.FORMATS``."""
    if fmt == "json":
        from linkpatrol.report.json import render_json

        return render_json(report)
    if fmt == "csv":
        from linkpatrol.report.csv import render_csv

        return render_csv(report)
    if fmt == "markdown":
        from linkpatrol.report.markdown import render_markdown

        return render_markdown(report)
    if fmt == "junit":
        from linkpatrol.report.junit import render_junit

        return render_junit(report)
    if fmt == "sarif":
        from linkpatrol.report.sarif import render_sarif

        return render_sarif(report)
    if fmt == "dot":
        from linkpatrol.report.dot import render_dot

        return render_dot(report, hosts=report.options.graph_hosts)
    if fmt == "sitemap":
        from linkpatrol.report.sitemap import render_sitemap

        return render_sitemap(report)
    if fmt == "html":
        from linkpatrol.report.html import render_html

        return render_html(report)
    from linkpatrol.report.text import render_text

    return render_text(report)
