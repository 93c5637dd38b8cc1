"""The memory in a PostgreSQL database, for memories too big or too shared for one file.

``--db postgresql://user[:password]@host[:port]/dbname`` (or ``postgres://``); libpq's
query parameters apply, so ``?options=-csearch_path%3Dname`` keeps the memory in its own
schema. The tables, and the logic over them, are those of SQLite (``linkpatrol.store.sql``);
statements run on a pool of connections, and the frontier is claimed with
``SELECT … FOR UPDATE SKIP LOCKED`` so that writers never wait for each other's rows.

Many workers, one crawl: crawlers started with the same start URLs share one pass. Each
holds a session-level advisory lock of its own (its key is in the ``workers`` table) on a
connection of its own for as long as it runs; the server drops the lock with that
connection, so a worker whose lock is not in ``pg_locks`` is gone, and the URLs it had
leased are due again at once. Changes to passes and to the crew are serialized by a
transaction-level advisory lock keyed by the memory's schema.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import os
import random
import re
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from linkpatrol.model import Action, State, StoreError
from linkpatrol.store import (
    CrewPlace,
    Earlier,
    Outcome,
    PassInfo,
    Probe,
    SiteRecord,
    SlotUsage,
    Task,
)
from linkpatrol.store.pgtext import Text, storable
from linkpatrol.store.sql import SCHEMA_VERSION, WORKER_SILENCE, Dialect, Session, SqlStore

POSTGRES = Dialect(
    name="postgresql",
    serial="BIGSERIAL PRIMARY KEY",
    integer="BIGINT",
    real="DOUBLE PRECISION",
    link_id="id BIGSERIAL",  # no rowid here: a page's links keep their order in this
    link_order="id",
    binary_text=' COLLATE "C"',  # URLs sort byte by byte, as in SQLite, whatever the locale
    nulls_first=" NULLS FIRST",
    lock_rows=" FOR UPDATE SKIP LOCKED",
    list_param=True,
    chunk=10_000,
    # a btree entry holds at most ~2.7 kB, and a data: URL can be far longer
    url_digest="md5",
    table_exists="SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = ?",
    lock_row=" FOR UPDATE",
)

CONNECT_TIMEOUT = 10  # seconds, unless the URL says otherwise
OUTAGE_WAIT = 60.0  # seconds a crawl waits for its lost connection to come back (--db-wait)
OUTAGE_TRY = 2.0  # seconds each try waits for a connection while riding out an outage
POOL_SIZE = 4
POOL_TIMEOUT = 30.0  # seconds to wait for a connection from the pool
# A peer that vanishes without a word (a machine powered off, a network cut) is noticed in
# seconds, not in the hours of the system's TCP defaults: libpq's keepalives and time-out
# for unacknowledged data on this side of each connection, unless the URL sets them, and
# the server's with the same values on its side, which ends a vanished worker's session
# and so frees its liveness lock and any row it had locked (the crew would wait on it)
KEEPALIVE = {  # libpq's parameter: (its value here, the server's setting for its side)
    "keepalives_idle": (5, "tcp_keepalives_idle"),  # seconds idle before the first probe
    "keepalives_interval": (2, "tcp_keepalives_interval"),  # seconds between probes
    "keepalives_count": (3, "tcp_keepalives_count"),  # probes unanswered: dropped
    "tcp_user_timeout": (15_000, "tcp_user_timeout"),  # ms data may go unacknowledged
}
_LOCK_CLASS = 0x6C6B7074  # "lkpt": the first key of linkpatrol's advisory locks
_WORKER_CLASS = 0x6C6B7077  # "lkpw": the first key of a worker's liveness lock
_cursor_names = itertools.count(1)
_holders: weakref.WeakSet[psycopg.Connection[Any]] = weakref.WeakSet()
_ARRAY_OF = {"int": "bigint[]", "real": "double precision[]", "text": "text[]", "bool": "boolean[]"}
_COPY_TYPE = {"int": "int8", "real": "float8", "text": "text"}


@functools.lru_cache(maxsize=512)
def native(sql: str) -> str:
    """The shared SQL's ``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


def _forget_holders() -> None:
    """In a forked child (a parse worker): let go of the crawl lock's socket, unused.

    Else a child outliving a crawler killed with SIGKILL would keep the lock held.
    """
    for conn in list(_holders):
        with contextlib.suppress(OSError):
            os.close(conn.pgconn.socket)


os.register_at_fork(after_in_child=_forget_holders)
# the pool logs each connection it drops or fails to make again; the error that ends the
# run says it once, on one line (an application that configures logging still sees them)
logging.getLogger("psycopg").addHandler(logging.NullHandler())

# SQLSTATEs of a connection that is gone: the server shut down or restarted, an
# administrator ended it, or it failed (class 08)
_CUT_OFF = ("57P01", "57P02", "57P03")
_R = TypeVar("_R")


class _Lost(StoreError):
    """The connection to the database is gone, or none can be made now."""


def _is_lost(exc: BaseException) -> bool:
    if isinstance(exc, PoolTimeout):
        return True
    if isinstance(exc, psycopg.OperationalError):
        state = exc.sqlstate or ""
        return state in _CUT_OFF or state.startswith("08") or not state
    return False


def _configure(keepalive: Sequence[tuple[str, str]], conn: psycopg.Connection[Any]) -> None:
    conn.adapters.register_dumper(str, Text)
    _keep_alive(conn, keepalive)
    if not conn.autocommit:
        conn.commit()  # the pool takes back an idle connection


def _keep_alive(conn: psycopg.Connection[Any], keepalive: Sequence[tuple[str, str]]) -> None:
    """The server's side of the connection probes and times out as this side does (on a
    Unix socket the server ignores these)."""
    calls = ", ".join("set_config(%s, %s, false)" for _ in keepalive)
    conn.execute(f"SELECT {calls}", [value for pair in keepalive for value in pair])


class _PgSession:
    """The shared SQL's view of one pooled connection."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        return self._conn.execute(native(sql), params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._conn.cursor() as cursor:  # pipelined: one round trip, not one per row
            cursor.executemany(native(sql), rows)

    def update_many(
        self,
        table: str,
        assignments: str,
        kinds: Sequence[str],
        rows: Sequence[Sequence[Any]],
    ) -> None:
        """One statement for the lot: each column one array, joined to the table by id, as
        for an ``INSERT``; where an id repeats, a row at a time (a join would apply only
        one of its rows)."""
        if not rows:
            return
        parts = assignments.split("?")
        assert len(parts) == len(kinds) + 1, (assignments, kinds)
        if len(rows) == 1 or len({row[-1] for row in rows}) < len(rows):
            self.executemany(f"UPDATE {table} SET {assignments} WHERE id = ?", rows)
            return
        merged = "".join(f"{part}v.c{i}" for i, part in enumerate(parts[:-1]))
        arrays = ", ".join(f"?::{_ARRAY_OF[kind]}" for kind in (*kinds, "int"))
        names = ", ".join(f"c{i}" for i in range(len(kinds)))
        self.execute(
            f"UPDATE {table} SET {merged}{parts[-1]} FROM unnest({arrays}) AS v({names}, id) "
            f"WHERE {table}.id = v.id",
            [list(values) for values in zip(*rows, strict=True)],
        )

    def insert_many(
        self,
        table: str,
        columns: Sequence[tuple[str, str]],
        rows: Sequence[Sequence[Any]],
        tail: str = "",
    ) -> None:
        """One statement for the lot. Plain rows go by ``COPY``, in binary: the server takes
        them in their order at about half the cost of an ``INSERT``, and the client sends
        them at a quarter of the cost of arrays. With ``tail`` (``ON CONFLICT``, which
        ``COPY`` has not), each column is one array and ``unnest`` makes rows again."""
        if not rows:
            return
        names = ", ".join(name for name, _ in columns)
        if not tail:
            self._copy(table, names, columns, rows)
            return
        arrays = ", ".join(f"?::{_ARRAY_OF[kind]}" for _, kind in columns)
        self.execute(
            f"INSERT INTO {table}({names}) SELECT {names} FROM unnest({arrays}) "
            f"WITH ORDINALITY AS v({names}, n) ORDER BY n {tail}",
            [list(values) for values in zip(*rows, strict=True)],
        )

    def _copy(
        self,
        table: str,
        names: str,
        columns: Sequence[tuple[str, str]],
        rows: Sequence[Sequence[Any]],
    ) -> None:
        texts = [i for i, (_, kind) in enumerate(columns) if kind == "text"]
        with (
            self._conn.cursor() as cursor,
            cursor.copy(f"COPY {table}({names}) FROM STDIN (FORMAT BINARY)") as copy,
        ):
            copy.set_types([_COPY_TYPE[kind] for _, kind in columns])
            for row in rows:
                for i in texts:  # NUL as a text parameter's dumper has it; COPY's refuses it
                    if row[i] is not None and "\x00" in row[i]:
                        row = [storable(v) if isinstance(v, str) else v for v in row]
                        break
                copy.write_row(row)

    def insert_id(self, sql: str, params: Sequence[Any]) -> int:
        row = self._conn.execute(native(sql) + " RETURNING id", params).fetchone()
        assert row is not None
        return int(row[0])

    def stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[Any]:
        with self._conn.cursor(name=f"linkpatrol_{next(_cursor_names)}") as cursor:
            cursor.itersize = 2000
            cursor.execute(native(sql), params)
            yield from cursor


def redacted(url: str) -> str:
    """The URL without its password, to be shown in messages."""
    url = re.sub(r"(://[^:/@?#]*:)[^@/?#]*@", r"\1***@", url)
    return re.sub(r"([?&]password=)[^&]*", r"\1***", url)


def _continued(line: str) -> str:
    """A second line of an error, to follow the first: ``CONTEXT:  COPY links, line 3`` as
    ``context: COPY links, line 3``; ``Is the server running…`` as ``is the server…``."""
    label, colon, rest = line.partition(":")
    if colon and label.isupper():
        return f"{label.lower()}: {rest.strip()}"
    return line[:1].lower() + line[1:]


def _explain(exc: BaseException) -> str:
    """libpq's and the server's words, on one line, with what to do where that is known."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    first = (lines[0] if lines else type(exc).__name__).removeprefix("connection failed: ")
    hint = f"; {_continued(lines[1])}" if len(lines) > 1 else ""
    where, _, why = first.rpartition(" failed: ")
    why = why.removeprefix("FATAL:").strip()
    if why.startswith("database") and why.endswith("does not exist"):
        return f"{why} (create it first: createdb, or CREATE DATABASE)"
    if why.startswith("role") and why.endswith("does not exist"):
        return f"authentication failed: {why}"
    if "password authentication failed" in why or "no password supplied" in why:
        return f"authentication failed: {why}"
    if where.startswith("connection to server") or first.startswith("failed to resolve host"):
        return f"cannot connect to PostgreSQL: {first}{hint}"
    if isinstance(exc, psycopg.OperationalError):
        return f"PostgreSQL: {why}{hint}"
    return f"{why}{hint}"


class PostgresStore(SqlStore):
    """The :class:`~linkpatrol.store.Store` over a PostgreSQL database."""

    dialect = POSTGRES

    def __init__(self, url: str, *, crawl: bool, outage_wait: float = OUTAGE_WAIT) -> None:
        super().__init__()
        self.location = redacted(url)
        self.outage_wait = outage_wait
        self._waiting = threading.local()  # .until: when a call riding out an outage gives up
        self._tell_outage: Callable[[str], None] | None = None
        self._outage_told = False
        self._batches = 0  # batches of outcomes this worker wrote
        self._batches = 0  # batches of outcomes this worker wrote
        self._relocked_at = -WORKER_SILENCE  # when this worker last took its lock again
        self._stopping = threading.Event()
        self._conninfo = url
        self._kwargs, self._keepalive = self._connect_options(url)
        self._pool_lock = threading.Lock()
        self._connections: ConnectionPool | None = None
        self._holder: psycopg.Connection[Any] | None = None
        self._schema_key = 0
        conn = self._connect()
        try:
            self._prepare(conn, crawl)
        except BaseException:
            conn.close()
            raise
        if crawl:
            self._holder = conn  # the crawl's lock lives as long as this connection
            _holders.add(conn)
        else:
            conn.close()

    def _connect_options(self, url: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        """libpq's options beyond the URL's, and the server's keepalive settings."""
        try:
            given = conninfo_to_dict(url)
        except psycopg.Error as exc:
            raise StoreError(f"{self.location}: not a PostgreSQL URL: {_explain(exc)}") from None
        options: dict[str, Any] = {}
        if "connect_timeout" not in given:
            options["connect_timeout"] = CONNECT_TIMEOUT
        if "application_name" not in given:
            options["application_name"] = "linkpatrol"
        keepalive = []
        for name, (value, setting) in KEEPALIVE.items():
            if name not in given:
                options[name] = value
            keepalive.append((setting, str(given.get(name, value))))
        return options, keepalive

    def _connect(self, lock: bool = False) -> psycopg.Connection[Any]:
        """A connection of its own, out of the pool; with ``lock``, holding this worker's
        liveness lock."""
        try:
            conn = psycopg.connect(self._conninfo, autocommit=True, **self._kwargs)
        except psycopg.Error as exc:
            raise self._error(exc) from None
        try:
            _keep_alive(conn, self._keepalive)
            if lock:
                self._enlist(_PgSession(conn))
        except BaseException as exc:
            conn.close()
            if isinstance(exc, psycopg.Error):
                raise self._error(exc) from None
            raise
        return conn

    def _error(self, exc: BaseException) -> StoreError:
        kind = _Lost if _is_lost(exc) else StoreError
        return kind(f"{self.location}: {_explain(exc)}")

    def _prepare(self, conn: psycopg.Connection[Any], crawl: bool) -> None:
        """Check the memory, and for a crawl take the lock and make the tables."""
        session = _PgSession(conn)
        try:
            row = session.execute("SELECT current_schema()").fetchone()
            schema = row[0] if row else None
            if schema is None:
                path = session.execute("SHOW search_path").fetchone()
                raise StoreError(
                    f"{self.location}: no schema to keep the memory in "
                    f"(search_path {path[0] if path else ''!r} names none that exists)"
                )
            tables = {
                r[0]
                for r in session.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
                )
            }
            self._schema_key = zlib.crc32(schema.encode()) - 2**31  # a signed 32-bit key
            version = self._schema_version(session) if "meta" in tables else None
            self._check_memory(tables, version, crawl)
            if not crawl:
                if version is not None and version < SCHEMA_VERSION:
                    try:
                        with conn.transaction():
                            self._create_schema(session)
                    except psycopg.Error as exc:
                        raise StoreError(self._upgrade_message(version, exc)) from None
                return
            self._enlist(session)
            with conn.transaction():
                self._serialize(session)
                self._create_schema(session)
        except psycopg.Error as exc:
            raise StoreError(f"{self.location}: {_explain(exc)}") from None

    def _enlist(self, session: Session) -> None:
        """Take this worker's liveness lock, held as long as this connection lives."""
        # (on a connection whose server side gives up on a vanished peer: see KEEPALIVE)
        for _ in range(100):
            key = random.randrange(1, 2**31)
            row = session.execute(
                "SELECT pg_try_advisory_lock(?::integer, ?::integer)", (_WORKER_CLASS, key)
            ).fetchone()
            if row and row[0]:
                self._lock_key = key
                return
        raise StoreError(f"{self.location}: no free advisory lock key for this crawler")

    def _serialize(self, s: Session) -> None:
        s.execute(
            "SELECT pg_advisory_xact_lock(?::integer, ?::integer)", (_LOCK_CLASS, self._schema_key)
        )

    def _dead_workers(self, s: Session) -> list[str]:
        """Workers whose liveness lock is not held: their connection, so they, are gone.

        Just after this worker lost its own connection and took its lock again, the
        others most likely lost theirs in the same outage and are taking theirs again:
        for a while, only those silent for ``WORKER_SILENCE`` as well are gone."""
        silent = ""
        params: list[Any] = [self._owner, _WORKER_CLASS]
        if time.monotonic() - self._relocked_at < WORKER_SILENCE:
            silent = " AND w.heartbeat < ?"
            params.append(time.time() - WORKER_SILENCE)
        return [
            r[0]
            for r in s.execute(
                "SELECT w.id FROM workers w WHERE w.id <> ? AND NOT EXISTS ("
                "SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted "
                "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                "AND l.classid::bigint = ? AND l.objid::bigint = w.lock_key AND l.objsubid = 2)"
                + silent,
                params,
            )
        ]

    def _pool(self) -> ConnectionPool:
        """The pool, opened at first use: the crawl forks its parsers before any thread."""
        with self._pool_lock:
            if self._connections is None:
                pool = ConnectionPool(
                    self._conninfo,
                    kwargs=self._kwargs,
                    min_size=1,
                    max_size=POOL_SIZE,
                    open=False,
                    configure=functools.partial(_configure, self._keepalive),
                    name="linkpatrol",
                    timeout=POOL_TIMEOUT,
                )
                try:
                    pool.open(wait=True, timeout=CONNECT_TIMEOUT + 5)
                except PoolTimeout:
                    pool.close()
                    raise _Lost(f"{self.location}: cannot connect to PostgreSQL any more") from None
                self._connections = pool
            return self._connections

    def _pool_wait(self) -> float:
        """Seconds to wait for a connection; riding out an outage, a little at a time (a
        stop is heeded between tries) and never past its end."""
        until = getattr(self._waiting, "until", None)
        if until is None:
            return POOL_TIMEOUT
        return max(0.05, min(OUTAGE_TRY, until - time.monotonic()))

    def _tx(self) -> AbstractContextManager[Session]:
        return self._transaction()

    @contextmanager
    def _transaction(self) -> Iterator[Session]:
        try:
            with self._pool().connection(self._pool_wait()) as conn, conn.transaction():
                yield _PgSession(conn)
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._error(exc) from None

    def _read(self) -> AbstractContextManager[Session]:
        return self._reading()

    @contextmanager
    def _reading(self) -> Iterator[Session]:
        try:
            with self._pool().connection(self._pool_wait()) as conn:
                yield _PgSession(conn)
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._error(exc) from None

    def _ride_out(self, attempt: Callable[[], _R], again: Callable[[], None] | None = None) -> _R:
        """``attempt()``, made again (after ``again()``) while the connection is lost."""
        deadline = time.monotonic() + self.outage_wait
        pause = 0.1
        lost: _Lost | None = None  # how the connection was lost (later tries only time out)
        while True:
            try:
                self._waiting.until = deadline
                done = attempt()
                self._outage_told = False
                return done
            except _Lost as exc:
                if not self._outage_told and self._tell_outage is not None:
                    self._outage_told = True  # once an outage, whichever call meets it first
                    self._tell_outage(
                        "the connection to the database was lost; waiting up to "
                        f"{self.outage_wait:g} s for it to come back (--db-wait)"
                    )
                lost = lost or exc
                left = deadline - time.monotonic()
                if left <= 0 or self._stopping.is_set():
                    waited = (
                        "the crawl stopped before it came back"
                        if self._stopping.is_set()
                        else f"it was not made again within {self.outage_wait:g} s"
                    )
                    raise StoreError(
                        f"{lost}; the connection to the database was lost and {waited} (what "
                        "was written is kept: run the same command again to go on)"
                    ) from None
                self._stopping.wait(min(pause, left))
                pause = min(pause * 2, 2.0)
            finally:
                self._waiting.until = None
            if again is not None:
                with contextlib.suppress(_Lost):
                    again()

    def stop_waiting(self) -> None:
        self._stopping.set()

    def steady(self, read: Callable[[], _R]) -> _R:
        return self._ride_out(read)

    def on_outage(self, tell: Callable[[str], None]) -> None:
        self._tell_outage = tell

    def _keep_lock(self) -> None:
        """Take this worker's liveness lock again if its connection was lost; the heartbeat
        that follows writes the new key (and, if the others took this worker for gone in
        the meantime, enlists it again)."""
        holder = self._holder
        if holder is None:
            return  # a reader holds no lock
        if not holder.closed:
            try:
                holder.execute("SELECT 1")
                return
            except psycopg.Error as exc:
                if not _is_lost(exc):
                    raise self._error(exc) from None
            _holders.discard(holder)
            holder.close()  # kept, closed, until a new one is made: tried again next time
        conn = self._connect(lock=True)
        self._holder = conn
        _holders.add(conn)
        self._relocked_at = time.monotonic()

    # What a crawl asks of its memory, each a transaction: tried again on a lost
    # connection. (Methods of their own: the build compiles this class, and a compiled
    # class takes a method only from a ``def``.)
    def _pass(self, pass_id: int, resumed: bool = False) -> PassInfo:
        # the pass read after a worker enlisted (or ended): a read, made again as often
        return self._ride_out(functools.partial(SqlStore._pass, self, pass_id, resumed))

    def heartbeat(self, now: float, done: int, busy: int, per_host: int) -> CrewPlace:
        return self._ride_out(functools.partial(self._beat, now, done, busy, per_host))

    def _beat(self, now: float, done: int, busy: int, per_host: int) -> CrewPlace:
        self._keep_lock()
        return SqlStore.heartbeat(self, now, done, busy, per_host)

    def seed(self, pass_id: int, urls: Sequence[tuple[str, Action]], now: float) -> None:
        self._ride_out(functools.partial(SqlStore.seed, self, pass_id, urls, now))

    def claim(
        self,
        pass_id: int,
        limit: int,
        now: float,
        exclude_origins: Collection[str],
        lease_seconds: float,
    ) -> list[Task]:
        return self._ride_out(
            functools.partial(
                SqlStore.claim, self, pass_id, limit, now, exclude_origins, lease_seconds
            ),
            functools.partial(self._free_lost_claim, pass_id, now + lease_seconds),
        )

    def _free_lost_claim(self, pass_id: int, lease_until: float) -> None:
        """The connection went as a claim was committed: what it leased, if it was, is
        leased until exactly ``lease_until``, to this worker, and is free to be claimed
        again."""
        with self._tx() as s:
            s.execute(
                "UPDATE frontier SET lease_owner = NULL, lease_until = NULL "
                "WHERE pass_id = ? AND lease_owner = ? AND lease_until = ?",
                (pass_id, self._owner, lease_until),
            )

    def links_of(
        self, url_ids: Sequence[int], unseen_in: int | None = None
    ) -> dict[int, list[tuple[str, int | None]]]:
        return self._ride_out(functools.partial(SqlStore.links_of, self, url_ids, unseen_in))

    def complete(
        self,
        pass_id: int,
        outcomes: Sequence[Outcome],
        now: float,
        extra_requests: int = 0,
        batch: int = 0,
    ) -> set[str]:
        # numbered here, once: made again after a lost answer, it keeps its number
        self._batches += 1
        return self._ride_out(
            functools.partial(
                SqlStore.complete, self, pass_id, outcomes, now, extra_requests, self._batches
            )
        )

    def release(self, pass_id: int, url_ids: Sequence[int]) -> None:
        self._ride_out(functools.partial(SqlStore.release, self, pass_id, url_ids))

    def pending(self, pass_id: int) -> int:
        return self._ride_out(functools.partial(SqlStore.pending, self, pass_id))

    def redirects(self, pass_id: int) -> dict[str, tuple[int, str]]:
        return self._ride_out(functools.partial(SqlStore.redirects, self, pass_id))

    def certificates_warned(self, pass_id: int) -> set[str]:
        return self._ride_out(functools.partial(SqlStore.certificates_warned, self, pass_id))

    def end_run(
        self,
        pass_id: int,
        elapsed: float,
        now: float,
        complete: bool,
        stop_reason: str | None,
        usage: SlotUsage | None = None,
    ) -> PassInfo:
        def end() -> PassInfo:
            # as a heartbeat does: a worker that ends just after an outage, its own lock
            # lost too, gives the others time to take theirs again before it takes them
            # for gone
            self._keep_lock()
            return SqlStore.end_run(self, pass_id, elapsed, now, complete, stop_reason, usage)

        return self._ride_out(end)

    def site(self, origin: str) -> SiteRecord | None:
        return self._ride_out(functools.partial(SqlStore.site, self, origin))

    def save_site(self, record: SiteRecord) -> None:
        self._ride_out(functools.partial(SqlStore.save_site, self, record))

    def probes(self, origin: str) -> list[Probe]:
        return self._ride_out(functools.partial(SqlStore.probes, self, origin))

    def save_probe(self, probe: Probe) -> None:
        self._ride_out(functools.partial(SqlStore.save_probe, self, probe))

    def https_served(self, origin: str, since: float) -> bool | None:
        return self._ride_out(functools.partial(SqlStore.https_served, self, origin, since))

    def save_https_served(self, origin: str, served: bool, at: float) -> None:
        self._ride_out(functools.partial(SqlStore.save_https_served, self, origin, served, at))

    def extend_site(self, pass_id: int, prefixes: Sequence[str]) -> tuple[str, ...]:
        return self._ride_out(functools.partial(SqlStore.extend_site, self, pass_id, prefixes))

    def sites(self, pass_id: int) -> tuple[str, ...]:
        return self._ride_out(functools.partial(SqlStore.sites, self, pass_id))

    def save_counts(self, pass_id: int, broken: int, warnings: int) -> None:
        self._ride_out(functools.partial(SqlStore.save_counts, self, pass_id, broken, warnings))

    def save_named(self, pass_id: int, named: Mapping[str, State]) -> None:
        self._ride_out(functools.partial(SqlStore.save_named, self, pass_id, named))

    def save_baseline(self, pass_id: int, earlier: Earlier) -> None:
        self._ride_out(functools.partial(SqlStore.save_baseline, self, pass_id, earlier))

    def save_plugin_fields(self, pass_id: int, fields: Mapping[str, Mapping[str, Any]]) -> None:
        self._ride_out(functools.partial(SqlStore.save_plugin_fields, self, pass_id, fields))

    def close(self) -> None:
        try:
            if self._connections is not None:
                self._connections.close()
                self._connections = None
        finally:
            if self._holder is not None:
                self._holder.close()
                self._holder = None


__all__ = ["POSTGRES", "SCHEMA_VERSION", "PostgresStore", "redacted"]
