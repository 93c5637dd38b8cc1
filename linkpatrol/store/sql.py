"""The memory's logic in SQL, written once for every database it runs on.

:class:`SqlStore` implements the whole :class:`~linkpatrol.store.Store` interface —
passes, the frontier and its leases, discovery and its limits, outcomes, links, history,
robots.txt, the reports' queries — in the SQL that SQLite and PostgreSQL both speak, with
``?`` placeholders. A :class:`Dialect` names the few places where they differ (column
types, how a list of values is passed, row locks, ordering of text and NULLs), and each
backend supplies its connections and transactions as a :class:`Session`:
``linkpatrol.store.sqlite`` (one file, flock, WAL) and ``linkpatrol.store.postgres``
(a connection pool, an advisory lock).
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import socket
import time
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from linkpatrol.model import (
    ACTIONS,
    REASONS,
    STATES,
    Action,
    ReportOptions,
    RobotsState,
    State,
    StoreError,
)
from linkpatrol.rules import discovered, standing
from linkpatrol.store import (
    Change,
    Discovered,
    Outcome,
    Part,
    PassInfo,
    PassLimits,
    Referrer,
    SiteRecord,
    SlotUsage,
    Task,
    UrlRecord,
    WorkerInfo,
)
from linkpatrol.urls import is_http, origin, similar_pattern

SCHEMA_VERSION = 6
# a worker that has not said it lives for this long is taken for gone by readers that
# cannot ask the database (a crawler says so every half second)
WORKER_SILENCE = 10.0
# how long a crawl from other start URLs waits for a crew that holds the memory to be
# gone: a process killed a moment ago keeps its lock until the server sees its connection
# close, which takes milliseconds, or longer on a busy machine
CREW_GRACE = 2.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS passes(
  id {serial},
  start_urls TEXT NOT NULL,
  started_at {real} NOT NULL,
  finished_at {real},
  stopped_at {real},
  complete {int} NOT NULL DEFAULT 0,
  elapsed {real} NOT NULL DEFAULT 0,
  requests {int} NOT NULL DEFAULT 0,
  requested {int} NOT NULL DEFAULT 0,
  parsed {int} NOT NULL DEFAULT 0,
  seen {int} NOT NULL DEFAULT 0,
  max_urls {int} NOT NULL DEFAULT 0,
  max_similar {int} NOT NULL DEFAULT 0,
  stop_reason TEXT,
  broken {int},
  warnings {int},
  usage TEXT,
  dropped {int} NOT NULL DEFAULT 0,
  options TEXT,
  sites TEXT
);
CREATE TABLE IF NOT EXISTS urls(
  id {serial},
  url TEXT NOT NULL{url_unique},
  origin TEXT NOT NULL,
  action TEXT NOT NULL,
  state TEXT,
  http_status {int},
  error TEXT,
  content_type TEXT,
  base_url TEXT,
  redirect_to TEXT,
  last_modified TEXT,
  etag TEXT,
  first_seen {real} NOT NULL,
  last_checked {real},
  last_good {real},
  failing_since {real},
  seen_pass {int},
  done_pass {int},
  links_pass {int},
  links_at {real},
  referrer_id {int},
  response_ms {real},
  anchors TEXT,
  reason TEXT
);
CREATE INDEX IF NOT EXISTS urls_seen ON urls(seen_pass);
CREATE TABLE IF NOT EXISTS links(
  {link_id}src {int} NOT NULL, dst {int} NOT NULL, line {int}, fragment TEXT
);
CREATE INDEX IF NOT EXISTS links_src ON links(src{link_order});
{links_by_target};
CREATE TABLE IF NOT EXISTS frontier(
  url_id {int} PRIMARY KEY,
  pass_id {int} NOT NULL,
  origin TEXT NOT NULL,
  rnd {int} NOT NULL,
  lease_owner TEXT,
  lease_until {real}
);
{frontier_pick};
CREATE TABLE IF NOT EXISTS patterns(
  pass_id {int} NOT NULL,
  pattern TEXT NOT NULL,
  urls {int} NOT NULL,
  PRIMARY KEY(pass_id, pattern)
);
CREATE TABLE IF NOT EXISTS sites(
  origin TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  status {int},
  body TEXT,
  fetched_at {real} NOT NULL,
  error TEXT,
  reason TEXT
);
CREATE TABLE IF NOT EXISTS history(
  url_id {int} NOT NULL,
  at {real} NOT NULL,
  pass_id {int},
  state TEXT NOT NULL,
  http_status {int},
  error TEXT,
  reason TEXT
);
CREATE INDEX IF NOT EXISTS history_url ON history(url_id, at);
CREATE TABLE IF NOT EXISTS workers(
  id TEXT NOT NULL,
  pass_id {int} NOT NULL,
  host TEXT NOT NULL,
  pid {int} NOT NULL,
  lock_key {int} NOT NULL DEFAULT 0,
  started_at {real} NOT NULL,
  crew_since {real} NOT NULL,
  heartbeat {real} NOT NULL,
  done {int} NOT NULL DEFAULT 0,
  slots {int} NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS plugin_fields(
  pass_id {int} NOT NULL,
  plugin TEXT NOT NULL,
  fields TEXT NOT NULL,
  PRIMARY KEY(pass_id, plugin)
);
"""

# The frontier's order for claims, and all a claim tests of a row: on a big site most rows
# are skipped (leased, or of a host busy enough), and none of them is read from the table
FRONTIER_PICK = (
    "CREATE INDEX IF NOT EXISTS frontier_pick ON frontier(pass_id, rnd, lease_until, origin)"
)

# A verdict's reason, as a memory of schema 5 or older spelled it in its error's words
_REASON_OF_ERROR = """CASE
  WHEN error LIKE 'HTTP %' AND http_status IS NOT NULL THEN 'http-status'
  WHEN error LIKE 'invalid URL: %' THEN 'invalid-url'
  WHEN error LIKE 'not checked: %' OR error LIKE 'not requested: %' THEN 'limit'
  WHEN error LIKE 'redirect loop%' OR error LIKE 'too many redirects%' THEN 'redirect-loop'
  WHEN error LIKE 'redirect to %' OR error LIKE 'HTTP % redirect without%' THEN 'redirect'
  WHEN error LIKE 'page larger than%' THEN 'too-large'
  WHEN error LIKE 'parse%' OR error LIKE 'parser %' THEN 'parse-error'
  WHEN state = 'disallowed' OR error LIKE 'robots.txt%' THEN 'robots'
  WHEN error LIKE 'DNS%' OR error LIKE '%resolve%' THEN 'dns'
  WHEN error LIKE '%timed out%' OR error LIKE '%timeout%' THEN 'timeout'
  WHEN error LIKE '%certificate%' OR error LIKE 'TLS%' OR error LIKE 'SSL%' THEN 'tls'
  WHEN error LIKE 'file not found%' OR error LIKE 'cannot read %' OR error LIKE 'folder without%'
    OR error LIKE 'not a file under%' THEN 'file'
  WHEN error LIKE 'refused%' OR error LIKE '%private%' THEN 'refused'
  WHEN error LIKE 'invalid HTTP response%' OR error LIKE 'undecodable%' THEN 'protocol'
  WHEN state = 'broken' THEN 'connection'
END"""

# What each schema version adds to the one before; a memory written by an older version is
# brought forward, in one transaction, when it is next opened.
_MIGRATIONS: dict[int, tuple[str, ...]] = {
    2: (
        "ALTER TABLE urls ADD COLUMN response_ms {real}",
        "ALTER TABLE passes ADD COLUMN broken {int}",
        "ALTER TABLE passes ADD COLUMN warnings {int}",
        "ALTER TABLE urls ADD COLUMN anchors TEXT",
        "ALTER TABLE passes ADD COLUMN usage TEXT",
        "ALTER TABLE links ADD COLUMN fragment TEXT",
    ),
    3: (
        "CREATE TABLE IF NOT EXISTS plugin_fields(pass_id {int} NOT NULL, plugin TEXT NOT NULL, "
        "fields TEXT NOT NULL, PRIMARY KEY(pass_id, plugin))",
    ),
    4: (
        "DROP INDEX IF EXISTS frontier_pick",
        FRONTIER_PICK,
    ),
    5: ("ALTER TABLE passes ADD COLUMN dropped {int} NOT NULL DEFAULT 0",),
    6: (
        "ALTER TABLE passes ADD COLUMN options TEXT",
        "ALTER TABLE passes ADD COLUMN sites TEXT",
        "ALTER TABLE urls ADD COLUMN reason TEXT",
        "ALTER TABLE history ADD COLUMN reason TEXT",
        "ALTER TABLE sites ADD COLUMN reason TEXT",
        # the reasons of the verdicts kept so far, read once from their words
        f"UPDATE urls SET reason = {_REASON_OF_ERROR} WHERE error IS NOT NULL",
        f"UPDATE history SET reason = {_REASON_OF_ERROR} WHERE error IS NOT NULL",
    ),
}

# a link to a #fragment of its own page: kept for --check-anchors, not as a link elsewhere
LINKS_BY_TARGET = "CREATE INDEX IF NOT EXISTS links_dst ON links(dst)"
# URLs a crawler remembers as seen in its pass, in each of two generations (about 10 MB
# each): a big site's URLs not remembered are looked up again in every batch that links
# to them, a cost that grows with the site
SEEN_KEPT = 50_000
_NOT_WITHIN = "(l.fragment IS NULL OR l.src <> l.dst)"
# the kinds of the values of an outcome's update, in the order of its ``?``: action, state,
# http_status, error, reason, content_type; links_unchanged (then base_url is kept), base_url,
# redirect_to; last_modified, etag, last_checked, last_good, failing_since; done_pass,
# links_pass, links_at, response_ms, anchors
_OUTCOME_KINDS = (
    *("text", "text", "int", "text", "text", "text"),
    *("bool", "text", "text"),
    *("text", "text", "real", "real", "real"),
    *("int", "int", "real", "real", "text"),
)
_LINK_COLUMNS = (("src", "int"), ("dst", "int"), ("line", "int"), ("fragment", "text"))
_HISTORY_COLUMNS = (
    ("url_id", "int"),
    ("at", "real"),
    ("pass_id", "int"),
    ("state", "text"),
    ("http_status", "int"),
    ("error", "text"),
    ("reason", "text"),
)
_PASS_COLUMNS = (
    "id, start_urls, started_at, finished_at, stopped_at, complete, elapsed, requests, "
    "requested, parsed, seen, stop_reason, broken, warnings, usage, options, sites"
)


@dataclass(frozen=True, slots=True)
class Dialect:
    """Where the SQL of one database differs from the shared statements."""

    name: str
    serial: str  # a key the database numbers itself, in insertion order
    integer: str
    real: str
    link_id: str  # the column that orders a page's links ("" where the table has a rowid)
    link_order: str  # that column as an ORDER BY key
    binary_text: str  # appended to a text ORDER BY key: compare bytes, not the locale
    nulls_first: str  # appended to an ORDER BY key: NULLs first, as SQLite does
    lock_rows: str  # appended to a SELECT that claims rows other writers must skip
    list_param: bool  # a list of values is one array parameter (else one "?" each)
    chunk: int  # values per statement in ``member``
    url_digest: str  # a function of the URL that keeps URLs unique where index entries are
    # bounded in size ("" where the URL itself can be)
    table_exists: str  # a query with one row when the table named by its parameter exists
    # appended to a SELECT of one row that concurrent writers must take turns on ("" where
    # a write transaction already excludes every other writer)
    lock_row: str = ""
    # put before a column in a condition, keeps the planner from using the column's index
    # for it ("" where the planner knows better): SQLite, without statistics, reads the
    # links of a few targets through every page of the pass rather than by target
    unindexed: str = ""
    # one crawler at a time (a lock keeps the others out): the index of links by target is
    # built in one go when its run ends, not row by row during it (a big crawl's costliest
    # write)
    sole_crawler: bool = False

    def schema(self) -> list[str]:
        ddl = _SCHEMA.format(
            serial=self.serial,
            int=self.integer,
            real=self.real,
            link_id=f"{self.link_id}, " if self.link_id else "",
            link_order=f", {self.link_order}" if self.link_id else "",
            url_unique="" if self.url_digest else " UNIQUE",
            links_by_target=LINKS_BY_TARGET,
            frontier_pick=FRONTIER_PICK,
        )
        statements = [s.strip() for s in ddl.split(";") if s.strip()]
        if self.sole_crawler:
            statements.remove(LINKS_BY_TARGET)
        if self.url_digest:
            statements.append(
                f"CREATE UNIQUE INDEX IF NOT EXISTS urls_url ON urls({self.url_digest}(url))"
            )
        return statements

    def migration(self, version: int) -> list[str]:
        """The statements that bring a memory of ``version - 1`` to ``version``."""
        return [m.format(int=self.integer, real=self.real) for m in _MIGRATIONS[version]]

    @property
    def url_conflict(self) -> str:
        """The ON CONFLICT target of a new URL."""
        return f"(({self.url_digest}(url)))" if self.url_digest else "(url)"

    def member(
        self, column: str, values: Sequence[Any], negate: bool = False
    ) -> tuple[str, list[Any]]:
        """``column`` is (not) one of ``values``: the condition and its parameters."""
        if self.list_param:
            return (f"{column} <> ALL(?)" if negate else f"{column} = ANY(?)"), [list(values)]
        # padded to a power of two with its last value, which changes nothing for IN: a
        # few statement texts, each compiled once, serve lists of any length
        padded = list(values)
        if padded:
            padded += padded[-1:] * ((1 << (len(padded) - 1).bit_length()) - len(padded))
        marks = ",".join("?" * len(padded))
        return f"{column} {'NOT IN' if negate else 'IN'} ({marks})", padded

    def member_url(self, urls: Sequence[str]) -> tuple[str, list[Any]]:
        """``url`` is one of ``urls``, found through the index that keeps URLs unique."""
        if not self.url_digest:
            return self.member("url", urls)
        digest = self.url_digest
        return f"{digest}(url) = ANY(ARRAY(SELECT {digest}(v) FROM unnest(?::text[]) v))", [
            list(urls)
        ]

    def chunks(self, items: Sequence[Any]) -> Iterator[Sequence[Any]]:
        for i in range(0, len(items), self.chunk):
            yield items[i : i + self.chunk]


class Rows(Protocol):
    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Session(Protocol):
    """One connection, as the shared SQL uses it: statements with ``?`` placeholders."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows: ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    def insert_many(
        self,
        table: str,
        columns: Sequence[tuple[str, str]],
        rows: Sequence[Sequence[Any]],
        tail: str = "",
    ) -> None:
        """Insert many rows, in their order, in as few statements as the database allows.

        ``columns`` pairs each column with its kind (``int``, ``real`` or ``text``);
        ``tail`` is an ``ON CONFLICT`` clause.
        """
        ...

    def update_many(
        self,
        table: str,
        assignments: str,
        kinds: Sequence[str],
        rows: Sequence[Sequence[Any]],
    ) -> None:
        """``UPDATE table SET assignments WHERE id = ?`` for each row: the row's values for
        the assignments' ``?`` (of ``kinds``: int, real, text, bool), then its id; as many
        rows to a statement as the database allows. Where an id repeats, each of its rows
        is applied in turn."""
        ...

    def insert_id(self, sql: str, params: Sequence[Any]) -> int:
        """Run an INSERT of one row into a table with a serial ``id``; that new id."""
        ...

    def stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[Any]:
        """The rows of a query read as they are used, not all held at once."""
        ...


_URL_COLUMNS = (
    "id, url, action, state, http_status, error, content_type, base_url, redirect_to, "
    "last_checked, last_good, failing_since, last_modified, response_ms, first_seen, reason"
)


def _in_part(column: str, part: Part | None) -> str:
    """The condition that an id (a URL's) is of the part; TRUE for all of them."""
    if part is None:
        return "TRUE"
    return f"{column} % {int(part.parts)} = {int(part.remainder)}"


def _referrer(page: str, line: int | None) -> Referrer:
    """Made as tuples are: the named tuple's constructor is Python code, and a big site's
    report has millions."""
    return tuple.__new__(Referrer, (page, line))


class _OtherCrew(Exception):
    """Workers at work on other start URLs hold the memory."""

    def __init__(self, start_urls: list[str]) -> None:
        super().__init__()
        self.start_urls = start_urls


def _url_record(row: Sequence[Any], referrers: list[Referrer]) -> UrlRecord:
    """A row of ``_URL_COLUMNS`` as a record."""
    return UrlRecord(
        id=row[0],
        url=row[1],
        action=ACTIONS[row[2]],
        state=STATES[row[3]] if row[3] else State.UNCHECKED,
        http_status=row[4],
        error=row[5],
        content_type=row[6],
        base_url=row[7],
        redirect_to=row[8],
        last_checked=row[9],
        last_good=row[10],
        failing_since=row[11],
        referrers=referrers,
        last_modified=row[12],
        response_ms=row[13],
        first_seen=row[14],
        reason=REASONS[row[15]] if row[15] else None,
    )


def _options(text: str | None) -> ReportOptions | None:
    """The report options kept with a pass; None for a pass of a version that kept none."""
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return ReportOptions.of_dict(data) if isinstance(data, dict) else None


def _origin_of(url: str) -> str:
    return origin(url) if is_http(url) else ""


class SqlStore(ABC):
    """The :class:`~linkpatrol.store.Store` over any SQL database with a :class:`Dialect`."""

    dialect: Dialect
    location: str

    def __init__(self) -> None:
        self._owner = f"{os.getpid()}-{random.getrandbits(32):08x}"
        self._lock_key = 0  # the key of this worker's liveness lock, where the database has one
        self._enlisted = False  # this store is a crawler's, which has begun a pass
        self._crew_pass: int | None = None  # the pass it crawls
        self._patterns: dict[str, int] = {}
        # URLs known to be seen in the pass, by id (a site's navigation is linked from every
        # page), while ``_seen_for`` holds: (the pass, its count of URLs dropped from it as
        # this store last read it under the pass's lock, or None for a sole crawler)
        self._seen: dict[str, int] = {}
        # the generation before: what the site's pages still link to moves up again
        self._seen_before: dict[str, int] = {}
        self._seen_for: tuple[int, int | None] | None = None

    @abstractmethod
    def _tx(self) -> AbstractContextManager[Session]:
        """A write transaction: committed when the block ends, rolled back on an error."""

    @abstractmethod
    def _read(self) -> AbstractContextManager[Session]:
        """A connection for reading; errors of the database become :class:`StoreError`."""

    @abstractmethod
    def close(self) -> None: ...

    def stop_waiting(self) -> None:  # noqa: B027 (a database without connections to lose)
        """Nothing waits here for a lost connection, but where the database has them."""

    @contextmanager
    def _learning(self) -> Iterator[Session]:
        """A write transaction that may discover URLs: should it fail, what this store
        learned in it (URL ids, counts of similar URLs) is forgotten with it."""
        try:
            with self._tx() as s:
                yield s
        except BaseException:
            self._forget_seen()
            self._patterns.clear()
            raise

    def _forget_seen(self) -> None:
        self._seen.clear()
        self._seen_before.clear()

    # ---- the schema -----------------------------------------------------------------

    def _check_memory(self, tables: Collection[str], version: int | None, crawl: bool) -> None:
        """Refuse what is not a linkpatrol memory this version can read."""
        if tables and "meta" not in tables:
            raise StoreError(f"{self.location}: not a linkpatrol database (no meta table)")
        if version is not None and version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.location}: written by a newer linkpatrol (schema {version}, "
                f"this version reads up to {SCHEMA_VERSION}); upgrade linkpatrol"
            )
        if not crawl and "meta" not in tables:
            raise StoreError(f"{self.location}: empty database (no pass recorded yet)")

    @staticmethod
    def _schema_version(s: Session) -> int:
        row = s.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    def _create_schema(self, s: Session) -> None:
        """Make the tables of a new memory, or bring an older one to this schema version."""
        known = s.execute(self.dialect.table_exists, ("meta",)).fetchone()
        version = (self._schema_version(s) if known else 0) or SCHEMA_VERSION
        if version < SCHEMA_VERSION:
            for step in range(version + 1, SCHEMA_VERSION + 1):
                for statement in self.dialect.migration(step):
                    s.execute(statement)
            self._count_verdicts(s)
        for statement in self.dialect.schema():
            s.execute(statement)
        s.execute(
            "INSERT INTO meta(key, value) VALUES('schema_version', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (str(SCHEMA_VERSION),),
        )

    def _upgrade_message(self, version: int, exc: Exception) -> str:
        reason = str(exc).removeprefix(f"{self.location}: ")
        return (
            f"{self.location}: written by an older linkpatrol (schema {version}, now "
            f"{SCHEMA_VERSION}); opening it upgrades it once, which needs write access ({reason})"
        )

    @staticmethod
    def _count_verdicts(s: Session, pass_id: int | None = None) -> None:
        """Count the broken URLs and warnings of a pass (by default the latest) into it."""
        target = "?" if pass_id is not None else "(SELECT max(id) FROM passes)"
        s.execute(
            "UPDATE passes SET "
            "broken = (SELECT count(*) FROM urls WHERE seen_pass = passes.id AND state = ?), "
            "warnings = (SELECT count(*) FROM urls WHERE seen_pass = passes.id AND state = ?) "
            f"WHERE id = {target}",
            (State.BROKEN.value, State.WARNING.value, *(() if pass_id is None else (pass_id,))),
        )

    # ---- passes -----------------------------------------------------------

    @staticmethod
    def _pass_from_row(row: Sequence[Any], resumed: bool = False) -> PassInfo:
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
        )

    def _pass(self, pass_id: int, resumed: bool = False) -> PassInfo:
        with self._read() as s:
            row = s.execute(f"SELECT {_PASS_COLUMNS} FROM passes WHERE id = ?", (pass_id,))
            return self._pass_from_row(row.fetchone(), resumed)

    def latest_pass(self) -> PassInfo | None:
        with self._read() as s:
            row = s.execute(f"SELECT {_PASS_COLUMNS} FROM passes ORDER BY id DESC LIMIT 1")
            found = row.fetchone()
        return self._pass_from_row(found) if found else None

    def begin_pass(
        self,
        start_urls: Sequence[str],
        now: float,
        limits: PassLimits | None = None,
        options: ReportOptions | None = None,
    ) -> PassInfo:
        """Join the pass other workers are crawling, resume the last pass if it stopped early
        with the same start URLs, else start one; and enlist this process as a worker.

        Workers at work on other start URLs refuse this one: one pass at a time. The
        options that shape the pass's report are kept with it (a run that resumes or joins
        it replaces them with its own).
        """
        encoded = json.dumps(list(start_urls))
        limits = limits or PassLimits()
        kept = json.dumps(options.as_dict()) if options is not None else None
        self._patterns.clear()
        self._forget_seen()
        self._seen_for = None
        self._enlisted = True
        deadline = time.monotonic() + CREW_GRACE
        while True:
            try:
                info = self._begin_pass(encoded, now, limits, kept)
                self._crew_pass = info.id
                return info
            except _OtherCrew as exc:
                if time.monotonic() >= deadline:
                    raise StoreError(
                        f"{self.location}: another linkpatrol process is crawling with this "
                        f"database, from other start URLs ({' '.join(exc.start_urls)})"
                    ) from None
                time.sleep(0.05)

    def _begin_pass(
        self, encoded: str, now: float, limits: PassLimits, options: str | None
    ) -> PassInfo:
        with self._tx() as s:
            self._serialize(s)
            self._reap(s)
            crew = s.execute(
                "SELECT w.pass_id, p.start_urls, min(w.crew_since) FROM workers w "
                "JOIN passes p ON p.id = w.pass_id WHERE w.id <> ? "
                "GROUP BY w.pass_id, p.start_urls ORDER BY w.pass_id DESC",
                (self._owner,),
            ).fetchone()
            row = s.execute(
                "SELECT id, complete, start_urls FROM passes ORDER BY id DESC LIMIT 1"
            ).fetchone()
            crew_since = now
            if crew is not None:
                if crew[1] != encoded:
                    raise _OtherCrew(json.loads(crew[1]))
                pass_id, crew_since = crew[0], min(crew[2], now)
                # whatever the workers that are gone had leased is due again
                s.execute(
                    "UPDATE frontier SET lease_owner = NULL, lease_until = NULL "
                    "WHERE pass_id = ? AND lease_owner NOT IN (SELECT id FROM workers)",
                    (pass_id,),
                )
                resumed = True
            elif row and not row[1] and row[2] == encoded:
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
                s.execute("DELETE FROM frontier WHERE pass_id <> ?", (pass_id,))
                s.execute("DELETE FROM patterns WHERE pass_id <> ?", (pass_id,))
                resumed = False
            if options is not None:
                s.execute("UPDATE passes SET options = ? WHERE id = ?", (options, pass_id))
            s.execute("DELETE FROM workers WHERE id = ?", (self._owner,))
            if self.dialect.sole_crawler:
                s.execute("DROP INDEX IF EXISTS links_dst")
            self._enroll(s, pass_id, now, crew_since)
        return self._pass(pass_id, resumed)

    def _enroll(self, s: Session, pass_id: int, now: float, crew_since: float) -> None:
        s.execute(
            "INSERT INTO workers(id, pass_id, host, pid, lock_key, started_at, crew_since, "
            "heartbeat) VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
            (
                self._owner,
                pass_id,
                socket.gethostname(),
                os.getpid(),
                self._lock_key,
                now,
                crew_since,
                now,
            ),
        )

    def _rejoin(self, s: Session, now: float) -> None:
        """Enlist again, once the others took this worker for gone (its connection to the
        database dropped: its liveness lock went with it), if they still crawl its pass."""
        (latest,) = s.execute("SELECT max(id) FROM passes").fetchone()
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
                s.execute("UPDATE passes SET elapsed = elapsed + ? WHERE id = ?", (crew, pass_id))
            if complete:
                s.execute(
                    "UPDATE passes SET complete = 1, finished_at = coalesce(finished_at, ?), "
                    "stopped_at = NULL, stop_reason = NULL WHERE id = ?",
                    (now, pass_id),
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

    def extend_site(self, pass_id: int, prefixes: Sequence[str]) -> tuple[str, ...]:
        """The pass's site grew by these prefixes (a start URL redirected): keep them with
        the pass, for every worker and every run of it; all it has grown by."""
        with self._tx() as s:
            row = s.execute(
                f"SELECT sites FROM passes WHERE id = ?{self.dialect.lock_row}", (pass_id,)
            ).fetchone()
            known = tuple(json.loads(row[0])) if row and row[0] else ()
            grown = tuple(dict.fromkeys((*known, *prefixes)))
            if grown != known:
                s.execute("UPDATE passes SET sites = ? WHERE id = ?", (json.dumps(grown), pass_id))
        return grown

    def sites(self, pass_id: int) -> tuple[str, ...]:
        """What the pass's site has grown by so far."""
        with self._read() as s:
            row = s.execute("SELECT sites FROM passes WHERE id = ?", (pass_id,)).fetchone()
        return tuple(json.loads(row[0])) if row and row[0] else ()

    def save_counts(self, pass_id: int, broken: int, warnings: int) -> None:
        """Keep the pass's figures as its report gave them: the broken links it reported
        (missing anchors among them) and its warnings; the charts of later passes' reports
        show them."""
        with self._tx() as s:
            s.execute(
                "UPDATE passes SET broken = ?, warnings = ? WHERE id = ?",
                (broken, warnings, pass_id),
            )

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

    def heartbeat(self, now: float, done: int, busy: int, per_host: int) -> tuple[int, int]:
        """Say this worker lives; how many requests it may have in flight to any one host,
        and how many workers are at work.

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
            target = per_host // workers + (rank < per_host % workers)
            mine = crew[rank][1]
            free = per_host - sum(slots for worker, slots in crew if worker != self._owner)
            # more only out of what is free; less only down to what is in flight
            granted = max(mine, min(target, free)) if target >= mine else max(target, busy)
            s.execute(
                "UPDATE workers SET heartbeat = ?, done = ?, slots = ?, lock_key = ? WHERE id = ?",
                (now, done, granted, self._lock_key, self._owner),
            )
        return min(target, granted), workers

    def workers(self) -> list[WorkerInfo]:
        """The workers crawling now, the oldest first."""
        with self._read() as s:
            if s.execute(self.dialect.table_exists, ("workers",)).fetchone() is None:
                return []  # a memory no crawl of this version has opened yet
            dead = set(self._dead_workers(s))
            return [
                WorkerInfo(*row)
                for row in s.execute(
                    "SELECT id, pass_id, host, pid, started_at, heartbeat, done, slots "
                    "FROM workers ORDER BY started_at, id"
                )
                if row[0] not in dead
            ]

    # ---- the frontier -------------------------------------------------------

    def seed(self, pass_id: int, urls: Sequence[tuple[str, Action]], now: float) -> None:
        with self._learning() as s:
            targets: dict[str, tuple[Discovered, int | None]] = {
                url: (Discovered(url, None, action), None) for url, action in urls
            }
            self._discover(s, pass_id, targets, now)

    def claim(
        self,
        pass_id: int,
        limit: int,
        now: float,
        exclude_origins: Collection[str],
        lease_seconds: float,
    ) -> list[Task]:
        """Lease up to ``limit`` due URLs, in random order, skipping busy hosts.

        Rows another writer is claiming at this moment are skipped, not waited for.
        """
        d = self.dialect
        where = "pass_id = ? AND (lease_until IS NULL OR lease_until < ?)"
        params: list[Any] = [pass_id, now]
        if exclude_origins:
            condition, values = d.member("origin", list(exclude_origins), negate=True)
            where += f" AND {condition}"
            params.extend(values)
        with self._tx() as s:
            rows = s.execute(
                f"SELECT url_id FROM frontier WHERE {where} ORDER BY rnd LIMIT ?{d.lock_rows}",
                [*params, limit],
            ).fetchall()
            if not rows:
                return []
            ids = [r[0] for r in rows]
            tasks: list[Task] = []
            for chunk in d.chunks(ids):
                condition, values = d.member("url_id", chunk)
                s.execute(
                    f"UPDATE frontier SET lease_owner = ?, lease_until = ? WHERE {condition}",
                    [self._owner, now + lease_seconds, *values],
                )
                condition, values = d.member("u.id", chunk)
                for row in s.execute(
                    "SELECT u.id, u.url, u.origin, u.action, u.state, u.http_status, u.error, "
                    "u.content_type, u.last_checked, u.last_good, u.links_at, u.etag, "
                    "u.last_modified, r.url FROM urls u LEFT JOIN urls r ON r.id = u.referrer_id "
                    f"WHERE {condition}",
                    values,
                ):
                    tasks.append(
                        Task(
                            url_id=row[0],
                            url=row[1],
                            origin=row[2],
                            action=ACTIONS[row[3]],
                            state=STATES[row[4]] if row[4] else None,
                            http_status=row[5],
                            error=row[6],
                            content_type=row[7],
                            last_checked=row[8],
                            last_good=row[9],
                            links_at=row[10],
                            etag=row[11],
                            last_modified=row[12],
                            referrer=row[13],
                        )
                    )
        order = {url_id: i for i, url_id in enumerate(ids)}
        tasks.sort(key=lambda t: order[t.url_id])
        return tasks

    def release(self, pass_id: int, url_ids: Sequence[int]) -> None:
        d = self.dialect
        with self._tx() as s:
            for chunk in d.chunks(list(url_ids)):
                condition, values = d.member("url_id", chunk)
                s.execute(
                    "UPDATE frontier SET lease_owner = NULL, lease_until = NULL "
                    f"WHERE pass_id = ? AND {condition}",
                    [pass_id, *values],
                )

    def pending(self, pass_id: int) -> int:
        with self._read() as s:
            row = s.execute("SELECT count(*) FROM frontier WHERE pass_id = ?", (pass_id,))
            return int(row.fetchone()[0])

    def links_of(
        self, url_ids: Sequence[int], unseen_in: int | None = None
    ) -> dict[int, list[tuple[str, int | None]]]:
        d = self.dialect
        found: dict[int, list[tuple[str, int | None]]] = {i: [] for i in url_ids}
        # a target already seen in the pass needs nothing from a page whose links are not
        # written again: a site's navigation, on every page, is read once, not per page
        unseen = "" if unseen_in is None else " AND (u.seen_pass IS NULL OR u.seen_pass <> ?)"
        with self._read() as s:
            for chunk in d.chunks(list(url_ids)):
                condition, values = d.member("l.src", chunk)
                for src, url, line in s.execute(
                    "SELECT l.src, u.url, l.line FROM links l JOIN urls u ON u.id = l.dst "
                    f"WHERE {condition} AND {_NOT_WITHIN}{unseen} "
                    f"ORDER BY l.src, l.{d.link_order}",
                    values if unseen_in is None else (*values, unseen_in),
                ):
                    found[src].append((url, line))
        return found

    def _discover(
        self,
        s: Session,
        pass_id: int,
        targets: dict[str, tuple[Discovered, int | None]],
        now: float,
        origins: set[str] | None = None,
    ) -> dict[str, int]:
        """Make sure every target URL has a row; queue those new to this pass (and add
        their origins to ``origins``)."""
        d = self.dialect
        drops: int | None = None
        if d.lock_row:
            # workers sharing the pass discover in turn: each sees what the others queued
            # (so no URL is queued twice), and the pass's counts and limits stay exact
            (drops,) = s.execute(
                f"SELECT dropped FROM passes WHERE id = ?{d.lock_row}", (pass_id,)
            ).fetchone()
            self._patterns.clear()
        # a URL seen in this pass stays so, and its id never changes, until a worker drops
        # it from the pass (a sole crawler forgets what it drops itself)
        if self._seen_for != (pass_id, drops):
            self._forget_seen()
            self._seen_for = (pass_id, drops)
        ids: dict[str, tuple[int, int | None]] = {}
        invalid: dict[str, str] = {}  # found invalid before: still so, even as a remembered link
        urls = list(targets)
        unknown: list[str] = []
        young, before = self._seen, self._seen_before
        for url in urls:
            if (known := young.get(url)) is not None or (known := before.get(url)) is not None:
                ids[url] = (known, pass_id)
            else:
                unknown.append(url)
        for chunk in d.chunks(unknown):
            condition, values = d.member_url(chunk)
            for url_id, url, seen, error in s.execute(
                "SELECT id, url, seen_pass, CASE WHEN state = 'broken' AND http_status IS NULL "
                "AND last_good IS NULL AND reason = 'invalid-url' THEN error END "
                f"FROM urls WHERE {condition}",
                values,
            ):
                ids[url] = (url_id, seen)
                if error is not None:
                    invalid[url] = error
        missing = [u for u in urls if u not in ids]
        if missing:
            s.insert_many(
                "urls",
                (("url", "text"), ("origin", "text"), ("action", "text"), ("first_seen", "real")),
                [(u, _origin_of(u), targets[u][0].action.value, now) for u in missing],
                f"ON CONFLICT{d.url_conflict} DO NOTHING",
            )
            for chunk in d.chunks(missing):
                condition, values = d.member_url(chunk)
                for url_id, url in s.execute(f"SELECT id, url FROM urls WHERE {condition}", values):
                    ids[url] = (url_id, None)
        fresh = [u for u in urls if ids[u][1] != pass_id]
        if fresh:
            seen, max_urls, max_similar = s.execute(
                "SELECT seen, max_urls, max_similar FROM passes WHERE id = ?", (pass_id,)
            ).fetchone()
            counted: dict[str, int] = {}
            queued: list[tuple[int, int, str, int]] = []
            settled: list[tuple[Any, ...]] = []
            marked: list[tuple[Any, ...]] = []
            for url in fresh:
                found, referrer = targets[url]
                url_id = ids[url][0]
                marked.append((pass_id, found.action.value, referrer, url_id))
                why = f"invalid URL: {found.invalid}" if found.invalid is not None else None
                why = why or invalid.get(url)
                pattern = None
                similar = 0
                if max_similar and why is None and not (max_urls and seen >= max_urls):
                    pattern = similar_pattern(url)
                    if pattern is not None:
                        similar = self._pattern_count(s, pass_id, pattern, counted)
                verdict = discovered(
                    found.action, why, seen, max_urls, pattern, similar, max_similar
                )
                if verdict is not None:
                    state, reason, error = verdict
                    checked = now if state is State.BROKEN else None
                    settled.append(
                        (state.value, error, reason and reason.value, checked, pass_id, url_id)
                    )
                else:
                    if pattern is not None:
                        counted[pattern] = similar + 1
                    origin = _origin_of(url)
                    queued.append((url_id, pass_id, origin, random.getrandbits(62)))
                    if origins is not None:
                        origins.add(origin)
                seen += 1
            s.update_many(
                "urls", "seen_pass = ?, action = ?, referrer_id = ?", ("int", "text", "int"), marked
            )
            if settled:
                s.update_many(
                    "urls",
                    "state = ?, error = ?, reason = ?, http_status = NULL, "
                    "last_checked = coalesce(?, last_checked), done_pass = ?",
                    ("text", "text", "text", "real", "int"),
                    settled,
                )
            if queued:
                s.insert_many(
                    "frontier",
                    (("url_id", "int"), ("pass_id", "int"), ("origin", "text"), ("rnd", "int")),
                    queued,
                    "ON CONFLICT(url_id) DO UPDATE SET pass_id = excluded.pass_id, "
                    "origin = excluded.origin, rnd = excluded.rnd, "
                    "lease_owner = NULL, lease_until = NULL",
                )
            s.execute("UPDATE passes SET seen = ? WHERE id = ?", (seen, pass_id))
            if counted:
                s.executemany(
                    "INSERT INTO patterns(pass_id, pattern, urls) VALUES(?, ?, ?) "
                    "ON CONFLICT(pass_id, pattern) DO UPDATE SET urls = excluded.urls",
                    [(pass_id, pattern, n) for pattern, n in counted.items()],
                )
                self._patterns.update(counted)
        if len(young) > SEEN_KEPT:
            self._seen_before, self._seen = young, {}
            young = self._seen
        for url in urls:  # every one of them is now seen in the pass
            young[url] = ids[url][0]
        return {u: ids[u][0] for u in urls}

    def _pattern_count(
        self, s: Session, pass_id: int, pattern: str, counted: dict[str, int]
    ) -> int:
        """URLs of this pattern queued in the pass so far (this batch first, then memory)."""
        if pattern in counted:
            return counted[pattern]
        if pattern not in self._patterns:
            row = s.execute(
                "SELECT urls FROM patterns WHERE pass_id = ? AND pattern = ?", (pass_id, pattern)
            ).fetchone()
            if len(self._patterns) > 100_000:
                self._patterns.clear()
            self._patterns[pattern] = int(row[0]) if row else 0
        return self._patterns[pattern]

    def complete(
        self, pass_id: int, outcomes: Sequence[Outcome], now: float, extra_requests: int = 0
    ) -> set[str]:
        """Write a batch of outcomes, their links and what they discover, in one transaction;
        the origins of the URLs it queued."""
        d = self.dialect
        origins: set[str] = set()
        with self._learning() as s:
            targets: dict[str, tuple[Discovered, int | None]] = {}
            for outcome in outcomes:
                for found in outcome.links or ():
                    url = found.url
                    if url not in targets:
                        targets[url] = (found, outcome.url_id)
            ids = self._discover(s, pass_id, targets, now, origins) if targets else {}

            previous: dict[int, tuple[Any, ...]] = {}
            outcome_ids = [o.url_id for o in outcomes]
            for chunk in d.chunks(outcome_ids):
                condition, values = d.member("id", chunk)
                for row in s.execute(
                    "SELECT id, state, last_good, failing_since, http_status FROM urls "
                    f"WHERE {condition}",
                    values,
                ):
                    previous[row[0]] = row

            updates: list[tuple[Any, ...]] = []
            history: list[tuple[Any, ...]] = []
            dropped: list[int] = []
            replaced: list[int] = []
            new_links: list[tuple[int, int, int | None, str | None]] = []
            requests, requested, parsed = extra_requests, 0, 0
            for o in outcomes:
                requests += o.requests
                requested += o.fetched
                parsed += o.parsed
                if o.dropped:
                    dropped.append(o.url_id)
                    continue
                _, old_state, last_good, failing_since, old_status = previous.get(
                    o.url_id, (o.url_id, None, None, None, None)
                )
                reason = o.reason.value if o.reason is not None else None
                if o.checked:
                    last_good, failing_since, changed = standing(
                        STATES[old_state] if old_state else None,
                        old_status,
                        last_good,
                        failing_since,
                        o.state,
                        o.http_status,
                        now,
                    )
                    if changed:
                        history.append(
                            (o.url_id, now, pass_id, o.state.value, o.http_status, o.error, reason)
                        )
                has_links = o.links is not None
                updates.append(
                    (
                        o.action.value,
                        o.state.value,
                        o.http_status,
                        o.error,
                        reason,
                        o.content_type,
                        o.links_unchanged,
                        o.base_url,
                        o.redirect_to,
                        o.last_modified,
                        o.etag,
                        now if o.checked else None,
                        last_good,
                        failing_since,
                        pass_id,
                        pass_id if has_links else None,
                        now if o.good_links else None,
                        o.response_ms,
                        None if o.anchors is None else "\n".join(sorted(o.anchors)),
                        o.url_id,
                    )
                )
                if has_links and not o.links_unchanged:
                    replaced.append(o.url_id)
                    src = o.url_id
                    new_links.extend(
                        (src, ids[url], line, fragment)
                        for url, line, _, _, fragment in o.links or ()
                    )
            if updates:
                s.update_many(
                    "urls",
                    "action = ?, state = ?, http_status = ?, error = ?, reason = ?, "
                    "content_type = ?, base_url = CASE WHEN ? THEN base_url ELSE ? END, "
                    "redirect_to = ?, "
                    "last_modified = coalesce(?, last_modified), etag = coalesce(?, etag), "
                    "last_checked = coalesce(?, last_checked), last_good = ?, "
                    "failing_since = ?, done_pass = ?, links_pass = coalesce(?, links_pass), "
                    "links_at = coalesce(?, links_at), response_ms = coalesce(?, response_ms), "
                    "anchors = coalesce(?, anchors)",
                    _OUTCOME_KINDS,
                    updates,
                )
            if dropped:
                self._forget_seen()
            for chunk in d.chunks(dropped):
                condition, values = d.member("id", chunk)
                s.execute(
                    f"UPDATE urls SET seen_pass = NULL, done_pass = NULL WHERE {condition}", values
                )
            for chunk in d.chunks(replaced):
                condition, values = d.member("src", chunk)
                s.execute(f"DELETE FROM links WHERE {condition}", values)
            if new_links:
                s.insert_many("links", _LINK_COLUMNS, new_links)
            if history:
                s.insert_many("history", _HISTORY_COLUMNS, history)
            for chunk in d.chunks(outcome_ids):
                condition, values = d.member("url_id", chunk)
                s.execute(f"DELETE FROM frontier WHERE {condition}", values)
            s.execute(
                "UPDATE passes SET requests = requests + ?, requested = requested + ?, "
                "parsed = parsed + ?, dropped = dropped + ? WHERE id = ?",
                (requests, requested, parsed, len(dropped), pass_id),
            )
        return origins

    def redirects(self, pass_id: int) -> dict[str, tuple[int, str]]:
        with self._read() as s:
            return {
                url: (url_id, target)
                for url_id, url, target in s.execute(
                    "SELECT id, url, redirect_to FROM urls WHERE seen_pass = ? AND state = ? "
                    "AND redirect_to IS NOT NULL",
                    (pass_id, State.REDIRECT.value),
                )
            }

    # ---- robots.txt -----------------------------------------------------------

    def site(self, origin: str) -> SiteRecord | None:
        with self._read() as s:
            row = s.execute(
                "SELECT origin, state, status, body, fetched_at, error, reason FROM sites "
                "WHERE origin = ?",
                (origin,),
            ).fetchone()
        if row is None:
            return None
        origin_, state, status, body, fetched_at, error, reason = row
        return SiteRecord(
            origin_, RobotsState(state), status, body, fetched_at, error, REASONS.get(reason or "")
        )

    def save_site(self, record: SiteRecord) -> None:
        with self._tx() as s:
            s.execute(
                "INSERT INTO sites(origin, state, status, body, fetched_at, error, reason) "
                "VALUES(?, ?, ?, ?, ?, ?, ?) ON CONFLICT(origin) DO UPDATE SET "
                "state = excluded.state, status = excluded.status, body = excluded.body, "
                "fetched_at = excluded.fetched_at, error = excluded.error, "
                "reason = excluded.reason",
                (
                    record.origin,
                    record.state.value,
                    record.status,
                    record.body,
                    record.fetched_at,
                    record.error,
                    record.reason and record.reason.value,
                ),
            )

    # ---- reports ------------------------------------------------------------------

    def pass_urls(
        self, pass_id: int, with_referrers: bool = True, part: Part | None = None
    ) -> Iterator[UrlRecord]:
        """Every URL of the pass (or of one part), in discovery order, with the pages (and
        lines) linking to it."""
        with self._read() as s:
            pages: dict[int, str] = {}
            ref_rows: Iterator[Any] = iter(())
            if with_referrers:
                # the referring pages by id, read once: a link's row names its page by id,
                # not by a copy of its URL for each of its links
                pages = dict(
                    s.execute(
                        "SELECT id, url FROM urls WHERE links_pass = ? AND seen_pass = ?",
                        (pass_id, pass_id),
                    )
                )
                ref_rows = s.stream(
                    self._referrer_query(_in_part("l.dst", part), "s.id"), (pass_id, pass_id)
                )
            url_rows = s.stream(
                f"SELECT {_URL_COLUMNS} FROM urls WHERE seen_pass = ? AND {_in_part('id', part)} "
                "ORDER BY id",
                (pass_id,),
            )
            pending_ref = next(ref_rows, None)
            for row in url_rows:
                referrers: list[Referrer] = []
                while pending_ref is not None and pending_ref[0] <= row[0]:
                    if pending_ref[0] == row[0]:
                        referrers.append(_referrer(pages[pending_ref[1]], pending_ref[2]))
                    pending_ref = next(ref_rows, None)
                yield _url_record(row, referrers)

    def _referrer_query(self, condition: str, page: str = "s.url", few: bool = False) -> str:
        """(target id, referring page (its URL, or ``page``), line) of the pass's links, by
        target, page and line; ``few``: of a few targets, found by target, not by page."""
        d = self.dialect
        pages = d.unindexed if few else ""
        return (
            f"SELECT l.dst, {page}, l.line FROM links l JOIN urls s ON s.id = l.src "
            f"WHERE {pages}s.links_pass = ? AND {pages}s.seen_pass = ? AND {_NOT_WITHIN} "
            f"AND {condition} ORDER BY l.dst, s.url{d.binary_text}, l.line{d.nulls_first}"
        )

    def referrers(self, pass_id: int, url_ids: Sequence[int]) -> dict[int, list[Referrer]]:
        found: dict[int, list[Referrer]] = {}
        pages: dict[str, str] = {}
        with self._read() as s:
            for chunk in self.dialect.chunks(list(url_ids)):
                condition, values = self.dialect.member("l.dst", chunk)
                for dst, page, line in s.execute(
                    self._referrer_query(condition, few=True), (pass_id, pass_id, *values)
                ):
                    found.setdefault(dst, []).append(_referrer(pages.setdefault(page, page), line))
        return found

    def outlinks(
        self, pass_id: int, part: Part | None = None
    ) -> Iterator[tuple[str, list[Referrer]]]:
        current: str | None = None
        targets: list[Referrer] = []
        with self._read() as s:
            for src, dst, line in s.stream(
                "SELECT s.url, d.url, l.line FROM links l JOIN urls s ON s.id = l.src "
                "JOIN urls d ON d.id = l.dst WHERE s.links_pass = ? AND s.seen_pass = ? "
                f"AND {_NOT_WITHIN} AND {_in_part('s.id', part)} "
                f"ORDER BY s.id, l.{self.dialect.link_order}",
                (pass_id, pass_id),
            ):
                if src != current:
                    if current is not None:
                        yield current, targets
                    current, targets = src, []
                targets.append(_referrer(dst, line))
        if current is not None:
            yield current, targets

    def save_plugin_fields(self, pass_id: int, fields: Mapping[str, Mapping[str, Any]]) -> None:
        with self._tx() as s:
            s.executemany(
                "INSERT INTO plugin_fields(pass_id, plugin, fields) VALUES(?, ?, ?) "
                "ON CONFLICT(pass_id, plugin) DO UPDATE SET fields = excluded.fields",
                [
                    (pass_id, name, json.dumps(dict(given), ensure_ascii=False))
                    for name, given in fields.items()
                ],
            )

    def plugin_fields(self, pass_id: int) -> dict[str, dict[str, Any]]:
        with self._read() as s:
            return {
                name: json.loads(text)
                for name, text in s.execute(
                    "SELECT plugin, fields FROM plugin_fields WHERE pass_id = ? "
                    f"ORDER BY plugin{self.dialect.binary_text}",
                    (pass_id,),
                )
            }

    # ---- history and single URLs ------------------------------------------------------

    def verdicts(self, pass_id: int) -> dict[State, int]:
        with self._read() as s:
            return {
                STATES[state]: count
                for state, count in s.execute(
                    "SELECT state, count(*) FROM urls WHERE seen_pass = ? AND done_pass = ? "
                    "GROUP BY state",
                    (pass_id, pass_id),
                )
                if state
            }

    def fragment_links(
        self, pass_id: int
    ) -> Iterator[tuple[str, int | None, str, str, frozenset[str]]]:
        d = self.dialect
        with self._read() as s:
            for src, line, dst, fragment, anchors in s.stream(
                "SELECT s.url, l.line, d.url, l.fragment, d.anchors FROM links l "
                "JOIN urls s ON s.id = l.src JOIN urls d ON d.id = l.dst "
                "WHERE l.fragment IS NOT NULL AND s.links_pass = ? AND s.seen_pass = ? "
                "AND d.seen_pass = ? AND d.anchors IS NOT NULL "
                f"ORDER BY d.id, l.fragment{d.binary_text}, s.url{d.binary_text}, l.line",
                (pass_id, pass_id, pass_id),
            ):
                yield src, line, dst, fragment, frozenset(filter(None, anchors.split("\n")))

    def passes(self, limit: int) -> list[PassInfo]:
        with self._read() as s:
            rows = s.execute(
                f"SELECT {_PASS_COLUMNS} FROM passes ORDER BY id DESC LIMIT ?", (limit,)
            ).fetchall()
        return [self._pass_from_row(row) for row in rows[::-1]]

    def changes(self, url_ids: Sequence[int]) -> dict[int, list[Change]]:
        found: dict[int, list[Change]] = {}
        d = self.dialect
        with self._read() as s:
            for chunk in d.chunks(list(url_ids)):
                condition, values = d.member("url_id", chunk)
                for url_id, at, pass_id, state, status, error, reason in s.execute(
                    "SELECT url_id, at, pass_id, state, http_status, error, reason FROM history "
                    f"WHERE {condition} ORDER BY url_id, at",
                    values,
                ):
                    found.setdefault(url_id, []).append(
                        Change(at, pass_id, STATES[state], status, error, REASONS.get(reason or ""))
                    )
        return found

    def find_urls(self, text: str, limit: int, offset: int = 0) -> list[UrlRecord]:
        pattern = (
            "%" + text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        )
        with self._read() as s:
            rows = s.execute(
                f"SELECT {_URL_COLUMNS} FROM urls WHERE lower(url) LIKE ? ESCAPE '\\' "
                "ORDER BY id LIMIT ? OFFSET ?",
                (pattern, limit, offset),
            ).fetchall()
        return [_url_record(row, []) for row in rows]

    def url_record(self, url: str) -> UrlRecord | None:
        d = self.dialect
        condition, values = d.member_url([url])
        with self._read() as s:
            row = s.execute(f"SELECT {_URL_COLUMNS}, seen_pass FROM urls WHERE {condition}", values)
            found = row.fetchone()
            if found is None:
                return None
            referrers = [
                _referrer(page, line)
                for page, line in s.execute(
                    "SELECT s.url, l.line FROM links l JOIN urls s ON s.id = l.src "
                    "WHERE l.dst = ? AND s.links_pass IS NOT NULL AND s.seen_pass = ? "
                    f"AND {_NOT_WITHIN} "
                    f"ORDER BY s.url{d.binary_text}, l.line{d.nulls_first}",
                    (found[0], found[-1]),
                )
            ]
        return _url_record(found, referrers)

    def links_from(self, url: str) -> list[Referrer]:
        d = self.dialect
        condition, values = d.member_url([url])
        with self._read() as s:
            return [
                _referrer(target, line)
                for target, line in s.execute(
                    "SELECT d.url, l.line FROM links l JOIN urls d ON d.id = l.dst "
                    f"WHERE l.src = (SELECT id FROM urls WHERE {condition}) AND {_NOT_WITHIN} "
                    f"ORDER BY l.{d.link_order}",
                    values,
                )
            ]
