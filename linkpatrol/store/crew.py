"""The crawlers of a pass: how a run begins, joins or resumes a pass and ends, and how
workers that share a pass live, share the per-host limit, and are taken for gone."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import time
from collections.abc import Sequence
from typing import Any

from linkpatrol.model import ReportOptions, StoreError
from linkpatrol.rules import share_of
from linkpatrol.store import (
    CrewPlace,
    PassInfo,
    PassLimits,
    SlotUsage,
    WorkerInfo,
    starts_named,
)
from linkpatrol.store.outcomes import OutcomesPart
from linkpatrol.store.schema import LINKS_BY_TARGET, Session

# a worker that has not said it lives for this long is taken for gone by readers that
# cannot ask the database (a crawler says so every half second)
WORKER_SILENCE = 10.0
# how long a crawl from other start URLs waits for a crew that holds the memory to be
# gone: a process killed a moment ago keeps its lock until the server sees its connection
# close, which takes milliseconds, or longer on a busy machine
CREW_GRACE = 2.0

PASS_COLUMNS = (
    "id, start_urls, started_at, finished_at, stopped_at, complete, elapsed, requests, "
    "requested, parsed, seen, stop_reason, broken, warnings, usage, options, sites, inputs"
)


def _gone(pid: int) -> bool:
    """Whether the process ``pid`` of this machine has ended (killed, crashed): a worker
    of this machine is known gone at once, not after its heartbeats have stopped for a
    while."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's: it is there
        return False
    return False


class _OtherCrew(Exception):
    """Workers at work on other start URLs hold the memory: those, as a person names
    them."""

    def __init__(self, named: list[str]) -> None:
        super().__init__()
        self.named = named


def _options(text: str | None) -> ReportOptions | None:
    """The report options kept with a pass; None for a pass of a version that kept none."""
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return ReportOptions.of_dict(data) if isinstance(data, dict) else None


def pass_from_row(row: Sequence[Any], resumed: bool = False) -> PassInfo:
    """A row of ``PASS_COLUMNS`` as a pass."""
    return PassInfo(
        id=row[0],
        start_urls=tuple(json.loads(row[1])),
        started_at=row[2],
        finished_at=row[3],
        stopped_at=row[4],
        complete=bool(row[5]),
        elapsed=row[6],
        requests=row[7],
        requested=row[8],
        parsed=row[9],
        seen=row[10],
        stop_reason=row[11],
        broken=row[12],
        warnings=row[13],
        usage=SlotUsage(**json.loads(row[14])) if row[14] else None,
        resumed=resumed,
        options=_options(row[15]),
        sites=tuple(json.loads(row[16])) if row[16] else (),
        inputs=tuple(json.loads(row[17])) if row[17] else (),
    )


class CrewPart(OutcomesPart):
    """Passes and their workers, in :class:`~linkpatrol.store.sql.SqlStore`."""

    def __init__(self) -> None:
        super().__init__()
        self._lock_key = 0  # the key of this worker's liveness lock, where the database has one
        self._enlisted = False  # this store is a crawler's, which has begun a pass
        self._budget: tuple[int, float] = (0, 0.0)  # this worker's --max-requests, --max-time
        self._crew_pass: int | None = None  # the pass it crawls

    # ---- passes ---------------------------------------------------------------------

    def _pass(self, pass_id: int, resumed: bool = False) -> PassInfo:
        with self._read() as s:
            row = s.execute(f"SELECT {PASS_COLUMNS} FROM passes WHERE id = ?", (pass_id,))
            return pass_from_row(row.fetchone(), resumed)

    def begin_pass(
        self,
        start_urls: Sequence[str],
        now: float,
        limits: PassLimits | None = None,
        options: ReportOptions | None = None,
        inputs: Sequence[str] = (),
    ) -> PassInfo:
        """Join the pass other workers are crawling, resume the last pass if it stopped early
        with the same start URLs, else start one; and enlist this process as a worker.

        Workers at work on other start URLs refuse this one: one pass at a time. The
        options that shape the pass's report, and the ``inputs`` it names (the start values
        as given), are kept with it (a run that resumes or joins it replaces them with its
        own).
        """
        encoded = json.dumps(list(start_urls))
        limits = limits or PassLimits()
        kept = json.dumps(options.as_dict()) if options is not None else None
        named = json.dumps(list(inputs)) if inputs else None
        self._patterns.clear()
        self._forget_seen()
        self._seen_for = None
        self._enlisted = True
        self._budget = (limits.max_requests, limits.max_time)
        deadline = time.monotonic() + CREW_GRACE
        while True:
            try:
                info = self._begin_pass(encoded, now, limits, kept, named)
                self._crew_pass = info.id
                return info
            except _OtherCrew as exc:
                if time.monotonic() >= deadline:
                    raise StoreError(
                        f"{self.location}: another linkpatrol process is crawling with this "
                        f"database, from other start URLs ({', '.join(exc.named)})"
                    ) from None
                time.sleep(0.05)

    def _begin_pass(
        self, encoded: str, now: float, limits: PassLimits, options: str | None, inputs: str | None
    ) -> PassInfo:
        with self._tx() as s:
            self._serialize(s)
            self._reap(s)
            crew = s.execute(
                "SELECT w.pass_id, p.start_urls, min(w.crew_since), p.inputs FROM workers w "
                "JOIN passes p ON p.id = w.pass_id WHERE w.id <> ? "
                "GROUP BY w.pass_id, p.start_urls, p.inputs ORDER BY w.pass_id DESC",
                (self._owner,),
            ).fetchone()
            # the last pass of these start URLs (a memory may keep several sets' passes)
            row = s.execute(
                "SELECT id, complete FROM passes WHERE start_urls = ? ORDER BY id DESC LIMIT 1",
                (encoded,),
            ).fetchone()
            crew_since = now
            if crew is not None:
                if crew[1] != encoded:
                    given = json.loads(crew[3]) if crew[3] else ()
                    raise _OtherCrew(starts_named(given, json.loads(crew[1])))
                pass_id, crew_since = crew[0], min(crew[2], now)
                # whatever the workers that are gone had leased is due again
                s.execute(
                    "UPDATE frontier SET lease_owner = NULL, lease_until = NULL "
                    "WHERE pass_id = ? AND lease_owner NOT IN (SELECT id FROM workers)",
                    (pass_id,),
                )
                resumed = True
            elif row and not row[1]:
                pass_id = row[0]
                s.execute(
                    "UPDATE frontier SET lease_owner = NULL, lease_until = NULL WHERE pass_id = ?",
                    (pass_id,),
                )
                s.execute(
                    "UPDATE passes SET max_urls = ?, max_similar = ?, stopped_at = NULL "
                    "WHERE id = ?",
                    (limits.max_urls, limits.max_similar, pass_id),
                )
                resumed = True
            else:
                pass_id = s.insert_id(
                    "INSERT INTO passes(start_urls, started_at, max_urls, max_similar) "
                    "VALUES(?, ?, ?, ?)",
                    (encoded, now, limits.max_urls, limits.max_similar),
                )
                # the other start sets' unfinished passes keep what is due in them
                for table in ("frontier", "patterns"):
                    s.execute(
                        f"DELETE FROM {table} WHERE pass_id IN "
                        "(SELECT id FROM passes WHERE start_urls = ? AND id <> ?)",
                        (encoded, pass_id),
                    )
                resumed = False
            s.execute(
                "UPDATE passes SET options = coalesce(?, options), "
                "inputs = coalesce(?, inputs), active_at = ? WHERE id = ?",
                (options, inputs, now, pass_id),
            )
            s.execute("DELETE FROM workers WHERE id = ?", (self._owner,))
            if self.dialect.sole_crawler:
                s.execute("DROP INDEX IF EXISTS links_dst")
            self._enroll(s, pass_id, now, crew_since)
        return self._pass(pass_id, resumed)

    def _enroll(self, s: Session, pass_id: int, now: float, crew_since: float) -> None:
        s.execute(
            "INSERT INTO workers(id, pass_id, host, pid, lock_key, started_at, crew_since, "
            "heartbeat, max_requests, max_time) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                self._owner,
                pass_id,
                socket.gethostname(),
                os.getpid(),
                self._lock_key,
                now,
                crew_since,
                now,
                *self._budget,
            ),
        )

    def _rejoin(self, s: Session, now: float) -> None:
        """Enlist again, once the others took this worker for gone (its connection to the
        database dropped: its liveness lock went with it), if they still crawl its pass."""
        (latest,) = s.execute(
            "SELECT max(id) FROM passes WHERE start_urls = "
            "(SELECT start_urls FROM passes WHERE id = ?)",
            (self._crew_pass,),
        ).fetchone()
        crews = s.execute("SELECT pass_id, min(crew_since) FROM workers GROUP BY pass_id")
        crew = dict(crews.fetchall())
        if self._crew_pass is None or latest != self._crew_pass or set(crew) - {latest}:
            raise StoreError(
                f"{self.location}: this crawler was taken for gone by the others (its "
                "connection to the database dropped), and the memory has moved on to "
                "another pass"
            )
        self._enroll(s, latest, now, min(crew.get(latest, now), now))

    def end_run(
        self,
        pass_id: int,
        elapsed: float,
        now: float,
        complete: bool,
        stop_reason: str | None,
        usage: SlotUsage | None = None,
    ) -> PassInfo:
        """This worker's run ends: it leaves the crew, its leases are freed at once.

        The pass is complete once any worker found its frontier empty, and stays so; it is
        stopped only when the last worker stops early. Its elapsed time grows by the
        crew's time (from the first of the workers that overlapped to the last).
        """
        with self._tx() as s:
            self._serialize(s)
            self._reap(s)
            mine = s.execute(
                "SELECT started_at, crew_since FROM workers WHERE id = ?", (self._owner,)
            ).fetchone()
            s.execute("DELETE FROM workers WHERE id = ?", (self._owner,))
            if mine is None:  # ended before (its commit's answer lost), or taken for gone
                usage, elapsed = None, 0.0
            if usage is not None:
                row = s.execute("SELECT usage FROM passes WHERE id = ?", (pass_id,)).fetchone()
                if row and row[0]:
                    usage = SlotUsage(**json.loads(row[0])) + usage
                s.execute(
                    "UPDATE passes SET usage = ? WHERE id = ?",
                    (json.dumps(dataclasses.asdict(usage)), pass_id),
                )
            others = s.execute(
                "SELECT count(*) FROM workers WHERE pass_id = ?", (pass_id,)
            ).fetchone()[0]
            if not others:
                joined = mine is not None and mine[1] < mine[0]  # others were at work before
                crew = max(elapsed, now - mine[1]) if joined else elapsed
                s.execute(
                    "UPDATE passes SET elapsed = elapsed + ?, active_at = ? WHERE id = ?",
                    (crew, now, pass_id),
                )
            if complete:
                s.execute(
                    "UPDATE passes SET complete = 1, finished_at = coalesce(finished_at, ?), "
                    "stopped_at = NULL, stop_reason = NULL WHERE id = ?",
                    (now, pass_id),
                )
                # the URLs of the passes of these start URLs before this one: this one is
                # what their reports show now
                s.execute(
                    "DELETE FROM seen WHERE pass_id IN (SELECT e.id FROM passes e "
                    "JOIN passes p ON p.start_urls = e.start_urls WHERE p.id = ? AND e.id < ?)",
                    (pass_id, pass_id),
                )
            elif not others:
                s.execute(
                    "UPDATE passes SET stopped_at = ?, stop_reason = ? "
                    "WHERE id = ? AND complete = 0",
                    (now, stop_reason, pass_id),
                )
            s.execute(
                "UPDATE frontier SET lease_owner = NULL, lease_until = NULL "
                "WHERE pass_id = ? AND lease_owner = ?",
                (pass_id, self._owner),
            )
            self._count_verdicts(s, pass_id)
        if self.dialect.sole_crawler:
            self._index_links_by_target()
        return self._pass(pass_id)

    def _index_links_by_target(self) -> None:
        """Index the links by target again, once the crawl that went without it is over."""
        with self._tx() as s:
            s.execute(LINKS_BY_TARGET)

    # ---- workers: several crawlers sharing one pass -------------------------------------

    def _serialize(self, s: Session) -> None:
        """Make other crawlers' changes to passes and workers wait for this transaction.

        Nothing to do where one crawler at a time holds the memory.
        """
        return None

    def _dead_workers(self, s: Session) -> list[str]:
        """The workers of the table that are gone (killed, crashed, cut off).

        Where one crawler at a time holds the memory, that crawler knows every other one
        is; a reader can only go by their heartbeats.
        """
        if self._enlisted:
            rows = s.execute("SELECT id FROM workers WHERE id <> ?", (self._owner,))
        else:
            rows = s.execute(
                "SELECT id FROM workers WHERE heartbeat < ?", (time.time() - WORKER_SILENCE,)
            )
        return [r[0] for r in rows]

    def _reap(self, s: Session) -> None:
        """Forget the workers that are gone, and make what they had leased due again."""
        dead = self._dead_workers(s)
        d = self.dialect
        for chunk in d.chunks(dead):
            condition, values = d.member("id", chunk)
            s.execute(f"DELETE FROM workers WHERE {condition}", values)
            condition, values = d.member("lease_owner", chunk)
            s.execute(
                f"UPDATE frontier SET lease_owner = NULL, lease_until = NULL WHERE {condition}",
                values,
            )

    def heartbeat(self, now: float, done: int, busy: int, per_host: int) -> CrewPlace:
        """Say this worker lives; how many requests it may have in flight to any one host,
        how many workers are at work, and its rank among them (by age).

        The per-host limit is shared by the live workers, the oldest first: with ``n``
        workers each is meant to have ``per_host // n`` slots (one more for the first
        ``per_host % n``). The shares written here never add up to more than
        ``per_host``: a worker takes more only out of what the others left free, and
        gives back only what it does not have in flight (``busy``, its most requests in
        flight to one host). The answer is what it may start now, at most its share.
        """
        with self._tx() as s:
            self._serialize(s)
            self._reap(s)
            crew_query = "SELECT id, slots FROM workers ORDER BY started_at, id"
            crew = s.execute(crew_query).fetchall()
            if self._owner not in (worker for worker, _ in crew):
                self._rejoin(s, now)
                crew = s.execute(crew_query).fetchall()
            ranks = [worker for worker, _ in crew]
            rank, workers = ranks.index(self._owner), len(crew)
            target = share_of(per_host, workers, rank)
            mine = crew[rank][1]
            free = per_host - sum(slots for worker, slots in crew if worker != self._owner)
            # more only out of what is free; less only down to what is in flight
            granted = max(mine, min(target, free)) if target >= mine else max(target, busy)
            s.execute(
                "UPDATE workers SET heartbeat = ?, done = ?, slots = ?, lock_key = ? WHERE id = ?",
                (now, done, granted, self._lock_key, self._owner),
            )
        return CrewPlace(min(target, granted), workers, rank)

    def workers(self) -> list[WorkerInfo]:
        """The workers crawling now, the oldest first."""
        with self._read() as s:
            if s.execute(self.dialect.table_exists, ("workers",)).fetchone() is None:
                return []  # a memory no crawl of this version has opened yet
            dead = set(self._dead_workers(s))
            here = socket.gethostname()
            return [
                WorkerInfo(*row)
                for row in s.execute(
                    "SELECT id, pass_id, host, pid, started_at, heartbeat, done, slots, "
                    "max_requests, max_time FROM workers ORDER BY started_at, id"
                )
                if row[0] not in dead and not (row[2] == here and _gone(row[3]))
            ]
