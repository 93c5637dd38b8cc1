#!/usr/bin/env python3
"""Crash soak: kill linkpatrol at random moments, over and over, and prove nothing is lost.

    python bench/soak.py [--kills 100] [--signal KILL|TERM] [--db sqlite|postgresql://...]
                         [--indexes 40] [--per-index 50] [--seed N]

Serves a generated site (``--indexes`` index pages of ``--per-index`` pages each, with a
few broken links) on 127.0.0.1, runs an uninterrupted ``linkpatrol check`` for reference,
then crawls the site again and signals the crawler at random moments (seeded), resuming
after each, until it has been cut ``--kills`` times (at most ``--per-pass`` in one pass;
the next pass starts on a new memory). After every cut the memory is checked (``PRAGMA
integrity_check`` and dangling rows); at the end of each pass its report must equal the
reference and the server's log must show each URL asked for once, plus once for every
cut at which the memory did not have its outcome. Prints what the cuts cost.

With a PostgreSQL URL each pass's memory is a schema of its own (``lp_soak_…``), dropped
after it, so nothing else in that database is touched. Not part of the test suite: the
tests (``tests/test_crash_soak.py``) run the same machinery with a dozen cuts.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from linkpatrol.model import ExitCode  # noqa: E402
from tests.conftest import (  # noqa: E402
    Runner,
    assert_memory_intact,
    comparable,
    is_postgres,
    scratch_schema,
)
from tests.sitesrv import TestSite  # noqa: E402
from tests.test_crash_soak import (  # noqa: E402
    REFERENCE,
    Ledger,
    Stop,
    assert_sound,
    expected_requests,
    lost,
    plan_cuts,
    reference,
    requested,
    soak,
)
from tests.test_stop_resume import generated_site  # noqa: E402

SCHEMA_PREFIX = "lp_soak_"


class Figures:
    """What the cuts cost, cut by cut."""

    def __init__(self) -> None:
        self.cuts = 0
        self.checks = 0
        self.lost: list[int] = []
        self.in_flight: list[int] = []
        self.unwritten: list[int] = []
        self.ages_ms: list[float] = []  # how long before the cut a lost answer was sent
        self.requests = 0
        self.reference_requests = 0
        self.passes = 0
        self.runs = 0

    def add_cut(self, ledger: Ledger, stop: Stop) -> None:
        assert stop.signalled_at is not None
        gone = lost(ledger, stop)
        flying = unwritten = 0
        for arrival in ledger.of_run(stop.run):
            if arrival.path not in gone:
                continue
            if arrival.answered_at is None or arrival.answered_at > stop.signalled_at:
                flying += 1
            else:
                unwritten += 1
                self.ages_ms.append((stop.signalled_at - arrival.answered_at) * 1000)
        self.cuts += 1
        self.lost.append(len(gone))
        self.in_flight.append(flying)
        self.unwritten.append(unwritten)

    def print(self, elapsed: float, memory: str, signum: signal.Signals) -> None:
        def spread(values: list[int] | list[float]) -> str:
            if not values:
                return "-"
            ordered = sorted(values)
            p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
            return (
                f"mean {statistics.fmean(ordered):.1f}, median {statistics.median(ordered):.1f}, "
                f"p95 {p95:.1f}, max {ordered[-1]:.1f}"
            )

        extra = self.requests - self.reference_requests * self.passes
        share = 100 * extra / max(1, self.requests - extra)
        rows = [
            ("memory", memory),
            (f"cuts ({signum.name})", f"{self.cuts} over {self.passes} pass(es), {self.runs} runs"),
            ("memory checks passed", str(self.checks)),
            ("URLs asked again per cut", spread(self.lost)),
            ("  in flight at the cut", spread(self.in_flight)),
            ("  answered, not yet written", spread(self.unwritten)),
            ("  age of those answers, ms", spread(self.ages_ms)),
            (
                "requests",
                f"{self.requests} for {self.passes} x {self.reference_requests} "
                f"(+{extra}, {share:.1f}%)",
            ),
            ("time", f"{elapsed:.1f} s ({elapsed / max(1, self.runs):.2f} s per run)"),
        ]
        print()
        for label, value in rows:
            print(f"{label:<30}{value}")


@contextmanager
def new_memory(db: str, work: Path, number: int) -> Iterator[str]:
    """An empty memory for one pass: a new file, or a new schema dropped after it."""
    if not is_postgres(db):
        yield str(work / f"memory-{number}.db")
        return
    with scratch_schema(db, SCHEMA_PREFIX) as url:
        yield url


def soak_pass(
    runner: Runner,
    ledger: Ledger,
    start: str,
    fresh: dict[str, Any],
    figures: Figures,
    args: argparse.Namespace,
    rng: random.Random,
) -> None:
    """One pass on a new memory, cut up to ``--per-pass`` times; raises what it disproves."""
    signum = signal.Signals[f"SIG{args.signal}"]
    landed = -signal.SIGKILL if signum is signal.SIGKILL else ExitCode.STOPPED

    def after_each(stop: Stop) -> None:
        figures.runs += 1
        assert_sound(runner.db, stop)
        figures.checks += 1
        assert stop.returncode in (landed, 1), (stop.run, stop.returncode, stop.stderr)
        if stop.returncode == landed:
            figures.add_cut(ledger, stop)
            if figures.cuts % 10 == 0:
                print(f"  {figures.cuts} cuts", flush=True)

    count = min(args.per_pass, args.kills - figures.cuts)
    # a SIGTERM before the command has set its handlers is the default's, not ours
    early = max(1, count // 10) if signum is signal.SIGKILL else 0
    cuts = plan_cuts(rng, signum, figures.reference_requests, count, early=early)
    stops, final = soak(runner, ledger, start, cuts, after_each, name=f"{figures.passes}.")
    figures.passes += 1
    figures.runs += final.run.endswith("final")
    assert final.returncode == 1, (final.run, final.stderr)
    assert_memory_intact(runner.db)
    figures.checks += 1
    report = json.loads(final.stdout)
    assert report["complete"] is True and len(final.pass_ids) == 1
    assert comparable(report) == comparable(fresh), "the report differs"
    counts = requested(ledger, stops, final)
    assert counts == expected_requests(ledger, stops, REFERENCE), (
        "a URL was asked for again though the memory had its outcome"
    )
    figures.requests += sum(counts.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=100, help="cuts in all (default 100)")
    parser.add_argument("--signal", choices=("KILL", "TERM"), default="KILL")
    parser.add_argument("--db", default="sqlite", help="sqlite (default) or a postgresql:// URL")
    parser.add_argument("--indexes", type=int, default=40)
    parser.add_argument("--per-index", type=int, default=50)
    parser.add_argument("--per-pass", type=int, default=50, help="most cuts in one pass")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    rng = random.Random(seed)
    signum = signal.Signals[f"SIG{args.signal}"]
    print(f"seed {seed} (replay with --seed {seed})", flush=True)

    work = Path(tempfile.mkdtemp(prefix="linkpatrol-soak-"))
    ledger = Ledger(generated_site(args.indexes, args.per_index))
    figures = Figures()
    started = time.monotonic()
    try:
        with TestSite(ledger.site()) as site:
            start = site.url("/")
            fresh = reference(Runner(work), ledger, start, work / "fresh.db")
            figures.reference_requests = sum(ledger.paths(REFERENCE).values())
            print(
                f"site: {len(ledger.pages)} paths; uninterrupted pass: "
                f"{figures.reference_requests} requests",
                flush=True,
            )
            while figures.cuts < args.kills:
                with new_memory(args.db, work, figures.passes) as memory:
                    soak_pass(Runner(work, memory), ledger, start, fresh, figures, args, rng)
    except AssertionError as exc:
        print(f"FAILED (seed {seed}): {exc}", file=sys.stderr)
        figures.print(time.monotonic() - started, args.db, signum)
        return 1
    figures.print(time.monotonic() - started, args.db, signum)
    return 0


if __name__ == "__main__":
    sys.exit(main())
