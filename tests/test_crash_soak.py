"""Crash safety by repetition: kill -9 and SIGTERM at random moments, resume, compare.

One pass over a few hundred pages is cut many times, at moments drawn from a seeded
random generator (``LINKPATROL_SOAK_SEED`` replays a soak; the seed is printed, so a
failure shows it). After every cut the memory must be sound, and over the whole pass the
server's log must prove that nothing the memory had was asked for again: each URL is
requested once, plus once for every cut at which the memory did not have its outcome
(its request in flight, or answered but not yet written). The resumed pass must end with
the report of an uninterrupted one.

``bench/soak.py`` runs the same machinery with a hundred cuts on a bigger site.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

from linkpatrol.store import open_store
from tests.conftest import (
    Runner,
    Serve,
    assert_memory_intact,
    comparable,
    is_postgres,
    memory_done,
    memory_rows,
    running,
    wait_until,
)
from tests.sitesrv import Page
from tests.sitesrv import TestSite as LoopbackSite
from tests.test_stop_resume import generated_site

pytestmark = pytest.mark.backends

SEED_ENV = "LINKPATROL_SOAK_SEED"
AGENT = "linkpatrol-soak"
REFERENCE = "fresh"  # the run whose report and requests the others are held to
CONCURRENCY = 16
ARGS = ("--format", "json", "--concurrency", str(CONCURRENCY))
QUIET = 0.2  # seconds without a request: the server has served all it will
# each answer takes this long, as from a real server: a pass then lasts some rounds of it
# however fast the machine, and a cut in a run's first 0.3 s cannot end most of the pass
LATENCY = 0.02
SETTLE_LIMIT = 15.0
# CPU seconds a parse worker has spent once it is at work on a big page: far more than it
# takes to start and wait, far less than the page takes
PARSING_CPU = 0.1
RUN_LIMIT = 120.0


def soak_seed() -> int:
    """The seed of this soak's random cuts: ``LINKPATROL_SOAK_SEED``, else a fresh one."""
    seed = int(os.environ.get(SEED_ENV) or random.randrange(2**32))
    print(f"soak seed {seed} (replay with {SEED_ENV}={seed})")
    return seed


@dataclass
class Arrival:
    """One request as the server saw it."""

    path: str
    run: str
    answered_at: float | None = None  # when its whole answer was sent; None: never


@dataclass(frozen=True)
class Cut:
    """A signal for one run: ``delay`` seconds after the pass's ``progress``-th new URL
    is asked for (at once: before that request is answered), or, when ``progress`` is 0,
    ``delay`` seconds after the run starts."""

    signum: signal.Signals
    progress: int = 0
    delay: float = 0.0


@dataclass
class Stop:
    """One run of the pass and what it left in the memory."""

    run: str
    cut: Cut | None
    returncode: int
    stdout: str
    stderr: str
    signalled_at: float | None  # None: it ended before the signal
    tables: bool  # the memory has its tables
    pass_ids: list[int]
    complete: bool  # the memory has the pass complete
    done: set[str] = field(default_factory=set)  # paths whose outcome the memory has


class Ledger:
    """Serves pages and logs every request under the run that made it.

    Each run names itself in its User-Agent (``linkpatrol-soak/<run>``), so a request
    that reaches the server after its crawler died still counts for the right run. A
    :class:`Cut` armed for a run fires once: from the server thread itself, before the
    chosen request is answered, or from a timer that can signal only that run.
    """

    def __init__(self, pages: dict[str, Page]) -> None:
        self.pages = pages
        self.arrivals: list[Arrival] = []
        self.active = 0
        self._lock = threading.Lock()
        self._asked: set[str] = set()  # paths the soak's runs have asked for in this pass
        self._armed: tuple[str, Cut] | None = None
        self._running: subprocess.Popen[str] | None = None
        self._timer: threading.Timer | None = None
        self._signalled_at: float | None = None

    def site(self) -> dict[str, Any]:
        return {path: self._handler(page) for path, page in self.pages.items()}

    def new_pass(self) -> None:
        with self._lock:
            self._asked.clear()

    def _handler(self, page: Page) -> Callable[[Any], int]:
        def serve(request: Any) -> int:
            agent = request.headers.get("User-Agent", "")
            arrival = Arrival(request.path, agent.partition("/")[2])
            with self._lock:
                self.arrivals.append(arrival)
                self.active += 1
                if arrival.run != REFERENCE:
                    self._asked.add(arrival.path)
                armed = self._armed
                if (
                    armed is not None
                    and armed[0] == arrival.run
                    and 0 < armed[1].progress <= len(self._asked)
                ):
                    self._trigger(armed[1])
            try:
                time.sleep(LATENCY)
                status = int(request._send_page(page, request.path))
                arrival.answered_at = time.time()
                return status
            finally:
                with self._lock:
                    self.active -= 1

        return serve

    def _trigger(self, cut: Cut) -> None:
        """Fire the armed cut now or after its delay (the lock is held)."""
        self._armed = None
        proc = self._running
        if cut.delay <= 0:
            self._signal(proc, cut.signum)
        else:
            self._timer = threading.Timer(cut.delay, self._signal_later, (proc, cut.signum))
            self._timer.start()

    def _signal_later(self, proc: subprocess.Popen[str], signum: signal.Signals) -> None:
        with self._lock:
            self._signal(proc, signum)

    def _signal(self, proc: subprocess.Popen[str] | None, signum: signal.Signals) -> None:
        # only the run the cut was armed for, and never a pid it no longer has
        if proc is not None and proc is self._running and proc.poll() is None:
            self._signalled_at = time.time()
            proc.send_signal(signum)

    def crawl(self, runner: Runner, run: str, start: str, cut: Cut | None) -> Stop:
        """One ``linkpatrol check`` of ``start``, signalled as ``cut`` says."""
        self._signalled_at = None
        proc = runner.popen(
            "check", "--db", runner.db, *ARGS, "--user-agent", f"{AGENT}/{run}", start
        )
        with self._lock:
            self._running = proc
            if cut is not None:
                self._armed = (run, cut)
                if not cut.progress:
                    self._trigger(cut)
        try:
            out, err = proc.communicate(timeout=RUN_LIMIT)
        finally:
            with self._lock:
                self._armed = self._running = None
                timer, self._timer = self._timer, None
            if timer is not None:
                timer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=30)
        if is_postgres(runner.db):
            sessions_ended(runner.db)
        memory = memory_done(runner.db, start)
        return Stop(run, cut, proc.returncode, out, err, self._signalled_at, *memory)

    def wait_quiet(self) -> None:
        """Until the requests dead crawlers left in their sockets have all been served:
        none is being answered, and none came in the last ``QUIET`` seconds."""
        seen = [-1]

        def quiet() -> bool:
            with self._lock:
                count, active = len(self.arrivals), self.active
            last, seen[0] = seen[0], count
            return count == last and active == 0

        wait_until(quiet, SETTLE_LIMIT, "the server to go quiet", every=QUIET)

    def paths(self, run: str) -> Counter[str]:
        with self._lock:
            return Counter(a.path for a in self.arrivals if a.run == run)

    def of_run(self, run: str) -> list[Arrival]:
        with self._lock:
            return [a for a in self.arrivals if a.run == run]


def sessions_ended(db: str) -> None:
    """On PostgreSQL, wait until the stopped run's sessions are gone (its processes are,
    but the server notices a dead client's connection a moment later): a COMMIT the run
    sent just before its end is finished by then, and the memory is what it will stay."""
    sessions = (
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE application_name = current_setting('application_name') "
        "AND pid <> pg_backend_pid()"
    )
    wait_until(
        lambda: memory_rows(db, sessions)[0][0] == 0,
        SETTLE_LIMIT,
        "the sessions of a stopped run to end",
    )


def assert_sound(db: str, stop: Stop) -> None:
    """The memory a cut left is sound: the database, and what its rows point at."""
    if stop.tables:
        assert_memory_intact(db)
    elif not is_postgres(db) and Path(db).exists():
        assert memory_rows(db, "PRAGMA integrity_check") == [("ok",)]


def lost(ledger: Ledger, stop: Stop) -> set[str]:
    """What the run asked for whose outcome the memory did not have once it stopped."""
    return set(ledger.paths(stop.run)) - stop.done


def plan_cuts(
    rng: random.Random, signum: signal.Signals, total: int, count: int, early: int = 0
) -> list[Cut]:
    """``count`` random moments spread over a pass of ``total`` URLs, in order.

    ``early`` of them, in the first half, fall at random in the first 0.3 s of a run:
    opening the memory, resuming the pass, robots.txt. The others as the pass reaches a
    random number of URLs asked for (up to 3/4 of them), at once or up to a flush
    interval or so later; the last one after its final URL, as it writes its last
    outcomes and its report. A cut that comes too late for its run (the pass ended)
    ends the soak early.
    """
    spread = count - early
    points = sorted(rng.sample(range(1, max(total * 3 // 4, spread)), spread - 1))
    cuts = [Cut(signum, p, 0.0 if rng.random() < 0.3 else rng.uniform(0.0, 0.06)) for p in points]
    cuts.append(Cut(signum, total, rng.uniform(0.0, 0.1)))
    for _ in range(early):
        cuts.insert(rng.randrange(len(cuts) // 2 + 1), Cut(signum, 0, rng.uniform(0.0, 0.3)))
    return cuts


def soak(
    runner: Runner,
    ledger: Ledger,
    start: str,
    cuts: list[Cut],
    after_each: Callable[[Stop], None] = lambda stop: None,
    name: str = "",
) -> tuple[list[Stop], Stop]:
    """Cut one pass at each of ``cuts`` (as long as it lasts), then let it finish.

    Each stop is handed to ``after_each`` before the next run starts; runs are named
    ``name`` and their number. Returns the stops and the run (or report) that finished.
    """
    ledger.new_pass()
    stops: list[Stop] = []
    for k, cut in enumerate(cuts):
        stop = ledger.crawl(runner, f"{name}{k}", start, cut)
        after_each(stop)
        begun = [s.pass_ids[-1] for s in [*stops, stop] if s.pass_ids]
        assert len(set(begun)) <= 1, f"run {stop.run} began a new pass: {begun}"
        if stop.signalled_at is None or stop.returncode in (0, 1):  # the pass ended first
            return stops, stop
        stops.append(stop)
        if stop.complete:  # cut after the pass was complete: only its report was lost
            proc = runner("report", "--db", runner.db, "--format", "json")
            finished = dataclasses.replace(stop, run=f"{name}report", cut=None, signalled_at=None)
            return stops, dataclasses.replace(
                finished, returncode=proc.returncode, stdout=proc.stdout, stderr=proc.stderr
            )
    return stops, ledger.crawl(runner, f"{name}final", start, None)


def expected_requests(ledger: Ledger, stops: list[Stop], reference: str) -> Counter[str]:
    """Every path the uninterrupted run asked for once, plus once per cut that lost it."""
    ledger.wait_quiet()
    expected = Counter(set(ledger.paths(reference)))
    for stop in stops:
        expected.update(lost(ledger, stop))
    return expected


def requested(ledger: Ledger, stops: list[Stop], final: Stop) -> Counter[str]:
    """How often the pass's runs asked for each path; none twice in one run."""
    ledger.wait_quiet()
    counts: Counter[str] = Counter()
    for run in [*(s.run for s in stops), final.run]:
        per_run = ledger.paths(run)
        assert not per_run or max(per_run.values()) == 1, f"run {run} repeated {per_run}"
        counts.update(per_run)
    return counts


def reference(runner: Runner, ledger: Ledger, start: str, db: Path) -> dict[str, Any]:
    """The report of an uninterrupted pass on a memory of its own."""
    proc = runner("check", "--db", str(db), *ARGS, "--user-agent", f"{AGENT}/{REFERENCE}", start)
    assert proc.returncode == 1, proc.stderr
    ledger.wait_quiet()
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


# cuts planned in one pass, two of them timed from a run's start, and how many must land
KILLS = {"sqlite": (14, 10), "postgres": (7, 4)}


@pytest.fixture
def soak_site(serve: Serve) -> tuple[Ledger, str]:
    ledger = Ledger(generated_site(indexes=10, per_index=30))
    site = serve(ledger.site())
    return ledger, site.url("/")


def test_kill_9_at_random_moments_never_repeats_what_the_memory_had(
    run: Runner, soak_site: tuple[Ledger, str], tmp_path: Path, db: str
) -> None:
    seed = soak_seed()
    rng = random.Random(seed)
    ledger, start = soak_site
    fresh = reference(run, ledger, start, tmp_path / "fresh.db")
    total = sum(ledger.paths(REFERENCE).values())
    count, landed = KILLS["postgres" if is_postgres(db) else "sqlite"]
    cuts = plan_cuts(rng, signal.SIGKILL, total, count, early=2)

    def sound(stop: Stop) -> None:
        where = f"seed {seed}, run {stop.run}, {stop.cut}"
        assert stop.returncode in (-signal.SIGKILL, 1), (where, stop.stderr)  # 1: it finished
        assert_sound(run.db, stop)

    stops, final = soak(run, ledger, start, cuts, after_each=sound)

    kills = len(stops)
    assert kills >= landed, f"seed {seed}: only {kills} of {len(cuts)} kills landed"
    assert final.returncode == 1, (seed, final.stderr)
    report = json.loads(final.stdout)
    assert report["complete"] is True and len(final.pass_ids) == 1
    assert_memory_intact(run.db)
    # each URL asked for once, and again only after a cut the memory had not its outcome
    assert requested(ledger, stops, final) == expected_requests(ledger, stops, REFERENCE), seed
    assert comparable(report) == comparable(fresh), seed


STOPS = 4  # SIGTERMs in one pass


def test_sigterm_at_random_moments_stops_cleanly_and_resumes_the_same_pass(
    run: Runner, soak_site: tuple[Ledger, str], tmp_path: Path
) -> None:
    seed = soak_seed()
    rng = random.Random(seed)
    ledger, start = soak_site
    fresh = reference(run, ledger, start, tmp_path / "fresh.db")
    total = sum(ledger.paths(REFERENCE).values())
    # within the first 2/3, sent while that request is still unanswered: however fast the
    # crawl runs (a burst of quick answers can finish a third of the site in 40 ms), it is
    # still going when the signal comes
    points = sorted(rng.sample(range(1, total * 2 // 3), STOPS))
    cuts = [Cut(signal.SIGTERM, p, 0.0) for p in points]

    def clean(stop: Stop) -> None:
        where = f"seed {seed}, run {stop.run}, {stop.cut}"
        assert stop.signalled_at is not None, f"{where}: finished before the signal"
        assert stop.returncode == 3, (where, stop.stderr)
        report = json.loads(stop.stdout)
        assert report["complete"] is False and report["stop_reason"] == "SIGTERM", where
        assert stop.pass_ids == [report["pass"]] and not stop.complete, where
        assert_sound(run.db, stop)
        # a clean stop writes every outcome it has: only the requests in flight are lost
        assert len(lost(ledger, stop)) <= CONCURRENCY + 1, (where, lost(ledger, stop))

    stops, final = soak(run, ledger, start, cuts, after_each=clean)

    assert len(stops) == STOPS
    assert final.returncode == 1, (seed, final.stderr)
    report = json.loads(final.stdout)
    assert report["complete"] is True and final.pass_ids == stops[0].pass_ids
    assert_memory_intact(run.db)
    assert requested(ledger, stops, final) == expected_requests(ledger, stops, REFERENCE), seed
    assert comparable(report) == comparable(fresh), seed


@pytest.mark.backends("sqlite")  # the signal handling is the command's, whatever the memory
def test_sigterm_while_the_report_is_written_lets_it_finish_whole(
    run: Runner, soak_site: tuple[Ledger, str]
) -> None:
    _, start = soak_site
    proc = run.popen("check", "--db", run.db, *ARGS, start)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        # its first byte: the crawl is over; the rest waits in a pipe nobody reads yet
        head = proc.stdout.read(1)
        proc.send_signal(signal.SIGTERM)
        rest = proc.stdout.read()
        err = proc.stderr.read()
        proc.wait(timeout=RUN_LIMIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)

    assert proc.returncode == 1, err
    assert len(head + rest) > 2 * 65536, "the report should not fit in the pipe"
    report = json.loads(head + rest)
    assert report["complete"] is True
    assert "Traceback" not in err
    assert_memory_intact(run.db)


def wait_parsing(proc: subprocess.Popen[str], site: LoopbackSite) -> None:
    """Until the site's home page (seconds of work to parse) was answered, and a parse
    worker of the crawl is at work on it: one of its processes has been busy a while."""

    def home_answered() -> bool:
        running(proc)
        return any(h.path == "/" for h in site.requests())

    def parsing() -> bool:
        running(proc)
        with contextlib.suppress(psutil.Error):
            for worker in psutil.Process(proc.pid).children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    if sum(worker.cpu_times()[:2]) >= PARSING_CPU:
                        return True
        return False

    wait_until(home_answered, RUN_LIMIT, "the home page to be answered")
    wait_until(parsing, RUN_LIMIT, "a parse worker to be at work on the home page")


@pytest.mark.backends("sqlite")  # PostgreSQL's lock is a connection's, let go the same way
def test_a_crawler_killed_while_a_worker_parses_leaves_the_memory_free_at_once(
    run: Runner, serve: Serve
) -> None:
    """The parse workers are forked from the crawler: they must not hold its lock too."""
    links = "".join(f'<a href="/x/{k}.html">x</a>\n' for k in range(100_000))
    site = serve({"/": Page(f"<html><body>\n{links}</body></html>"), "/robots.txt": Page("")})
    proc = run.popen("check", "--db", run.db, site.url("/"))
    try:
        wait_parsing(proc, site)
    finally:
        proc.kill()
        proc.wait(timeout=30)  # the crawler only: the worker still holds its stdout
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()

    store = open_store(run.db, crawl=True)  # refused if anything still held the lock
    store.close()


@pytest.mark.backends("sqlite")
def test_a_stop_while_a_worker_parses_says_one_line_and_no_traceback(
    run: Runner, serve: Serve
) -> None:
    links = "".join(f'<a href="/x/{k}.html">x</a>\n' for k in range(40_000))
    site = serve({"/": Page(f"<html><body>\n{links}</body></html>"), "/robots.txt": Page("")})
    proc = run.popen("check", "--db", run.db, site.url("/"))
    try:
        wait_parsing(proc, site)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=RUN_LIMIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)

    assert proc.returncode == 3
    assert err.splitlines() == ["linkpatrol: SIGTERM: stopping, saving, writing the report"]
