"""The memory's tables, and how each database is spoken to.

The schema (and the migrations that bring an older memory to it) in the SQL that SQLite and
PostgreSQL both speak; a :class:`Dialect` names the few places where they differ (column
types, how a list of values is passed, row locks, ordering of text and NULLs), and each
backend supplies its connections and transactions as a :class:`Session`.
:class:`SchemaPart` is the root of the store's parts: its connections, and the check and
upgrade of the schema when the memory is opened.
"""

from __future__ import annotations

import json
import os
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from linkpatrol.model import State, StoreError

R = TypeVar("R")

SCHEMA_VERSION = 14

# how each folder of a host answered a name that cannot exist (soft 404s)
PROBES = """CREATE TABLE IF NOT EXISTS probes(
  origin TEXT NOT NULL,
  folder TEXT NOT NULL,
  status {int},
  probed_at {real} NOT NULL,
  redirect_to TEXT,
  title TEXT,
  size {int},
  simhash TEXT,
  PRIMARY KEY(origin, folder)
)"""

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
  sites TEXT,
  inputs TEXT,
  named TEXT,
  baseline TEXT,
  active_at {real}
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
  links_at {real},
  referrer_id {int},
  response_ms {real},
  anchors TEXT,
  reason TEXT,
  heading_ids TEXT,
  looked_again {int},
  archive_for {real},
  archive_asked {real},
  archive_url TEXT,
  archive_at {real}
);
{seen};
CREATE TABLE IF NOT EXISTS links(
  {link_id}src {int} NOT NULL, dst {int} NOT NULL, line {int}, fragment TEXT, kind {int}
);
CREATE INDEX IF NOT EXISTS links_src ON links(src{link_order});
{links_by_target};
{frontier};
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
{probes};
{https_hosts};
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
  slots {int} NOT NULL DEFAULT 0,
  batches {int} NOT NULL DEFAULT 0,
  max_requests {int} NOT NULL DEFAULT 0,
  max_time {real} NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS plugin_fields(
  pass_id {int} NOT NULL,
  plugin TEXT NOT NULL,
  fields TEXT NOT NULL,
  PRIMARY KEY(pass_id, plugin)
);
"""

# The URLs of each pass, by id: a memory holds the passes of several start sets, and a URL
# may be in several of them (``urls.seen_pass`` is the latest). ``stage``: 0 seen (queued),
# 1 settled in the pass, 2 settled with its links written in the pass (a page parsed, or
# read unchanged)
SEEN = """CREATE TABLE IF NOT EXISTS seen(
  pass_id {int} NOT NULL,
  url_id {int} NOT NULL,
  stage {int} NOT NULL DEFAULT 0,
  PRIMARY KEY(pass_id, url_id)
){without_rowid}"""
SEEN_SETTLED = 1
SEEN_LINKED = 2

# Whether each http: origin served its https: counterpart when last asked (--require-https)
HTTPS_HOSTS = """CREATE TABLE IF NOT EXISTS https_hosts(
  origin TEXT PRIMARY KEY,
  served {int} NOT NULL,
  asked_at {real} NOT NULL
)"""

# What is due in each unfinished pass (several start sets may each have one)
FRONTIER = """CREATE TABLE IF NOT EXISTS {name}(
  url_id {int} NOT NULL,
  pass_id {int} NOT NULL,
  origin TEXT NOT NULL,
  rnd {int} NOT NULL,
  lease_owner TEXT,
  lease_until {real},
  looks {int} NOT NULL DEFAULT 0,
  PRIMARY KEY(pass_id, url_id)
){without_rowid}"""

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
    7: (
        "ALTER TABLE urls ADD COLUMN heading_ids TEXT",
        # the Markdown pages read so far kept their heading ids among the others: without
        # validators they are read again, whole, by the next crawl
        "UPDATE urls SET etag = NULL, last_modified = NULL WHERE anchors IS NOT NULL "
        "AND content_type IN ('text/markdown', 'text/x-markdown')",
        # made again below with the number of the last batch of outcomes each worker wrote
        # (one made again is not counted twice); the table only lists the workers at work
        "DROP TABLE IF EXISTS workers",
    ),
    8: ("ALTER TABLE passes ADD COLUMN inputs TEXT",),
    9: (
        # what each pass's report named, and a baseline it was compared with: what is new
        "ALTER TABLE passes ADD COLUMN named TEXT",
        "ALTER TABLE passes ADD COLUMN baseline TEXT",
    ),
    10: (
        # a URL that failed transiently waits in the frontier for its second look
        "ALTER TABLE frontier ADD COLUMN looks {int} NOT NULL DEFAULT 0",
        # the pass in which it needed one
        "ALTER TABLE urls ADD COLUMN looked_again {int}",
    ),
    11: (
        # the URLs of each pass in a table of their own: a pass of other start URLs no
        # longer takes the URLs it shares with another set's pass from it
        SEEN,
        "INSERT INTO seen(pass_id, url_id, stage) SELECT seen_pass, id, CASE "
        "WHEN done_pass = seen_pass AND links_pass = seen_pass THEN 2 "
        "WHEN done_pass = seen_pass THEN 1 ELSE 0 END FROM urls WHERE seen_pass IS NOT NULL",
        "DROP INDEX IF EXISTS urls_seen",
        "ALTER TABLE urls DROP COLUMN done_pass",
        "ALTER TABLE urls DROP COLUMN links_pass",
        # each unfinished pass keeps its frontier: a URL may be due in two of them
        FRONTIER.replace("{name}", "frontier_by_pass"),
        "INSERT INTO frontier_by_pass(url_id, pass_id, origin, rnd, lease_owner, lease_until, "
        "looks) SELECT url_id, pass_id, origin, rnd, lease_owner, lease_until, looks "
        "FROM frontier",
        "DROP TABLE frontier",
        "ALTER TABLE frontier_by_pass RENAME TO frontier",
        # when a run last began or ended the pass: the latest pass is the one last at work
        "ALTER TABLE passes ADD COLUMN active_at {real}",
        "UPDATE passes SET active_at = coalesce(finished_at, stopped_at, started_at)",
    ),
    # how each folder of a host answered a name that cannot exist (soft 404s)
    12: (PROBES,),
    13: (
        # whether a link is followed or loaded into its page (a LinkKind; NULL: not known)
        "ALTER TABLE links ADD COLUMN kind {int}",
        HTTPS_HOSTS,
        # the https: pages read so far kept their links without it: without validators
        # they are read again, whole, by the next crawl, and their mixed content is seen
        "UPDATE urls SET etag = NULL, last_modified = NULL WHERE url LIKE 'https:%' "
        "AND id IN (SELECT src FROM links)",
    ),
    14: (
        # a broken URL's copy in the web archive: the last-good moment it was asked for,
        # when it was asked, and the copy found (none: NULL)
        "ALTER TABLE urls ADD COLUMN archive_for {real}",
        "ALTER TABLE urls ADD COLUMN archive_asked {real}",
        "ALTER TABLE urls ADD COLUMN archive_url TEXT",
        "ALTER TABLE urls ADD COLUMN archive_at {real}",
    ),
}

# the URLs of a pass (``passes.id``) of one verdict
_COUNT_IN_PASS = (
    "SELECT count(*) FROM seen m JOIN urls u ON u.id = m.url_id "
    "WHERE m.pass_id = passes.id AND u.state = ?"
)

# a sole crawler goes without this index during its run, and builds it in one go at its end
LINKS_BY_TARGET = "CREATE INDEX IF NOT EXISTS links_dst ON links(dst)"
# a link to a #fragment of its own page: kept for --check-anchors, not as a link elsewhere
NOT_WITHIN = "(l.fragment IS NULL OR l.src <> l.dst)"


def anchors_text(anchors: frozenset[str] | None) -> str | None:
    """A page's anchors as the memory keeps them, one a line (None: not read again, so the
    kept ones stand)."""
    return None if anchors is None else "\n".join(sorted(anchors))


def anchors_of(text: str | None) -> frozenset[str]:
    """The anchors kept as :func:`anchors_text` wrote them (none where none were kept)."""
    return frozenset(filter(None, text.split("\n"))) if text else frozenset()


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
    # one crawler at a time (a lock keeps the others out): the index of links by target is
    # built in one go when its run ends, not row by row during it (a big crawl's costliest
    # write)
    sole_crawler: bool = False
    # appended to a table keyed by more than one column: its rows are kept in the key's
    # order, with no other id ("" where the database has no such tables)
    without_rowid: str = ""

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
            seen=self._format(SEEN),
            https_hosts=self._format(HTTPS_HOSTS),
            frontier=self._format(FRONTIER.replace("{name}", "frontier")),
            probes=self._format(PROBES),
        )
        statements = [s.strip() for s in ddl.split(";") if s.strip()]
        if self.sole_crawler:
            statements.remove(LINKS_BY_TARGET)
        if self.url_digest:
            statements.append(
                f"CREATE UNIQUE INDEX IF NOT EXISTS urls_url ON urls({self.url_digest}(url))"
            )
        return statements

    def _format(self, statement: str) -> str:
        return statement.format(int=self.integer, real=self.real, without_rowid=self.without_rowid)

    def migration(self, version: int) -> list[str]:
        """The statements that bring a memory of ``version - 1`` to ``version``."""
        return [self._format(m) for m in _MIGRATIONS[version]]

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

    def chunks(self, items: Sequence[Any], most: int | None = None) -> Iterator[Sequence[Any]]:
        """``items`` a statement's worth at a time (``most`` at most)."""
        size = self.chunk if most is None else min(most, self.chunk)
        for i in range(0, len(items), size):
            yield items[i : i + size]


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


class SchemaPart(ABC):
    """The root of :class:`~linkpatrol.store.sql.SqlStore`: its database, its connections,
    and the schema of the memory in it."""

    dialect: Dialect
    location: str

    def __init__(self) -> None:
        # this store as the owner of leases and as a worker
        self._owner = f"{os.getpid()}-{random.getrandbits(32):08x}"

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

    def steady(self, read: Callable[[], R]) -> R:
        """``read()``: no connection to lose, but where the database has them."""
        return read()

    def on_outage(self, tell: Callable[[str], None]) -> None:  # noqa: B027 (as above)
        """Nothing to tell of a lost connection, but where the database has them."""

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
        found = self._schema_version(s) if known else 0
        if found == SCHEMA_VERSION:
            # made whole in the transaction that wrote its version: nothing to make, and
            # no table locked (on PostgreSQL, CREATE INDEX IF NOT EXISTS locks its table
            # first, and a worker joining a crawl would wait for the others' writes
            # while holding what they wait for)
            return
        version = found or SCHEMA_VERSION
        if version < SCHEMA_VERSION:
            for step in range(version + 1, SCHEMA_VERSION + 1):
                for statement in self.dialect.migration(step):
                    s.execute(statement)
            self._count_verdicts(s)
            if version < 9:
                self._name_verdicts(s)
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
    def _name_verdicts(s: Session) -> None:
        """What the latest pass's report named, as its verdicts say (broken URLs and
        warnings), for the next pass to be compared with: kept by passes since schema 9."""
        row = s.execute("SELECT max(id) FROM passes").fetchone()
        if row is None or row[0] is None:
            return
        named = {
            url: state
            for url, state in s.execute(
                "SELECT u.url, u.state FROM seen m JOIN urls u ON u.id = m.url_id "
                "WHERE m.pass_id = ? AND u.state IN (?, ?)",
                (row[0], State.BROKEN.value, State.WARNING.value),
            )
        }
        s.execute("UPDATE passes SET named = ? WHERE id = ?", (json.dumps(named), row[0]))

    @staticmethod
    def _count_verdicts(s: Session, pass_id: int | None = None) -> None:
        """Count the broken URLs and warnings of a pass (by default the latest) into it."""
        target = "?" if pass_id is not None else "(SELECT max(id) FROM passes)"
        s.execute(
            "UPDATE passes SET "
            f"broken = ({_COUNT_IN_PASS}), warnings = ({_COUNT_IN_PASS}) "
            f"WHERE id = {target}",
            (State.BROKEN.value, State.WARNING.value, *(() if pass_id is None else (pass_id,))),
        )
