"""The memory in one SQLite file (WAL mode, one transaction per batch of outcomes).

One crawling process at a time holds an exclusive ``flock`` on the database file, so a
second crawl of the same memory is refused at once; reports read it freely meanwhile.
The memory's logic itself is shared with the other databases, in ``linkpatrol.store.sql``.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from linkpatrol.model import ReportOptions, State, StoreError
from linkpatrol.store import Earlier, PassInfo, PassLimits
from linkpatrol.store.sql import LINKS_BY_TARGET, SCHEMA_VERSION, Dialect, Session, SqlStore


def _null(value: None) -> None:
    return value


# The sqlite3 module binds a parameter that is not exactly an int, float, str or bytes (None,
# True) by asking its type for an adapter, and finding none costs two failed attribute
# look-ups, one of which formats an AttributeError: a crawl binds about 80,000 NULLs. An
# adapter registered for them is found in one dictionary look-up; they bind as before.
sqlite3.register_adapter(type(None), _null)
sqlite3.register_adapter(bool, int)

SQLITE = Dialect(
    name="sqlite",
    serial="INTEGER PRIMARY KEY",
    integer="INTEGER",
    real="REAL",
    link_id="",  # a page's links keep their order in the implicit rowid
    link_order="rowid",
    binary_text="",
    nulls_first="",
    lock_rows="",  # a write transaction (BEGIN IMMEDIATE) already excludes other writers
    list_param=False,
    chunk=500,
    url_digest="",
    table_exists="SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
    sole_crawler=True,  # the crawl lock keeps a second crawler out
    without_rowid=" WITHOUT ROWID",
)


DISK_SLACK = 1024 * 1024  # bytes free below which a failed write means a full disk
_lock_fds: set[int] = set()  # the crawl locks this process holds


def _forget_locks() -> None:
    """In a forked child (a parse worker): let go of the crawl lock's descriptors.

    The lock stays with the crawler; else a worker still parsing after its crawler was
    killed with SIGKILL would keep the memory locked against the next run.
    """
    for fd in list(_lock_fds):
        with contextlib.suppress(OSError):
            os.close(fd)
    _lock_fds.clear()


os.register_at_fork(after_in_child=_forget_locks)


# seconds the end of a crawl's own connection waits for the write lock; if it cannot
# have it, closing the memory makes the index instead
FINISH_TIMEOUT = 10.0
# SQLite's page cache, in KiB: 8 MB for a crawl (a larger one makes the crawl's memory grow
# with the site, for no gain in speed); 2 MB to read the memory: its largest sort (the
# report's, of every link) then spills to a file, which is no slower than sorting in memory
CRAWL_CACHE_KIB = 8192
READ_CACHE_KIB = 2048
STATEMENTS_KEPT = 512  # compiled statements the connection keeps: a batch's few sizes stay
# rows of one INSERT or UPDATE (fewer where SQLite takes fewer variables): see _batches
ROWS_PER_STATEMENT = 128


def _spans(count: int, most: int) -> Iterator[int]:
    """The sizes of the statements that write ``count`` rows: as many of ``most`` as fit,
    then the rest in powers of two, so that a few statement texts, each compiled once,
    serve batches of any size."""
    size = most
    while count:
        while size > count:
            size //= 2
        yield size
        count -= size


class _SqliteSession:
    """The shared SQL's view of the one connection: SQLite speaks its ``?`` natively.

    Many rows are written many to a statement: executemany steps a statement per row, and
    the sqlite3 module lets go of the interpreter lock around each step: twice the work,
    and, with the crawl's thread busy, a wait for the lock after every row.
    """

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._variables = db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self._db.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._db.executemany(sql, rows)

    def _batches(
        self, statement: Callable[[str], str], width: int, rows: Sequence[Sequence[Any]]
    ) -> None:
        """``statement(values)`` for a ``VALUES`` list of rows of ``width`` values each, run
        over all the rows, in their order."""
        row = f"({', '.join('?' * width)})"
        most = 1
        while most * 2 <= min(ROWS_PER_STATEMENT, self._variables // width):
            most *= 2
        start = 0
        for size in _spans(len(rows), most):
            chunk = rows[start : start + size]
            start += size
            sql = statement(f"VALUES{','.join([row] * size)}")
            self._db.execute(sql, list(itertools.chain.from_iterable(chunk)))

    def insert_many(
        self,
        table: str,
        columns: Sequence[tuple[str, str]],
        rows: Sequence[Sequence[Any]],
        tail: str = "",
    ) -> None:
        names = ", ".join(name for name, _ in columns)
        self._batches(
            lambda values: f"INSERT INTO {table}({names}) {values} {tail}", len(columns), rows
        )

    def update_many(
        self,
        table: str,
        assignments: str,
        kinds: Sequence[str],
        rows: Sequence[Sequence[Any]],
    ) -> None:
        """The rows joined to the table by id, as many to a statement as for an INSERT;
        where an id repeats, a row at a time (a join would apply only one of its rows)."""
        width = assignments.count("?") + 1
        if len({row[-1] for row in rows}) < len(rows):
            self._db.executemany(f"UPDATE {table} SET {assignments} WHERE id = ?", rows)
            return
        parts = assignments.split("?")
        merged = "".join(f"{part}v.column{i}" for i, part in enumerate(parts[:-1], 1))
        self._batches(
            lambda values: (
                f"UPDATE {table} SET {merged}{parts[-1]} FROM ({values}) AS v "
                f"WHERE {table}.id = v.column{width}"
            ),
            width,
            rows,
        )

    def insert_id(self, sql: str, params: Sequence[Any]) -> int:
        return self._db.execute(sql, params).lastrowid or 0

    def stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[Any]:
        return iter(self._db.execute(sql, params))


MEMORY_ONLY = ":memory:"


class SqliteStore(SqlStore):
    """The :class:`~linkpatrol.store.Store` over a SQLite file."""

    dialect = SQLITE

    def __init__(self, path: str, *, crawl: bool) -> None:
        super().__init__()
        self.location = path
        self._lock_fd: int | None = None
        self._finisher: threading.Thread | None = None
        self._unfinished = False
        self.ephemeral = path == MEMORY_ONLY  # lives for this run only: nothing on disk
        created = self.ephemeral or not Path(path).exists()
        if not crawl and created:
            raise StoreError(f"{path}: no such database (run 'linkpatrol check' first)")
        try:
            self._db = sqlite3.connect(
                path,
                isolation_level=None,
                check_same_thread=False,
                timeout=10.0,
                cached_statements=STATEMENTS_KEPT,
            )
        except sqlite3.Error as exc:
            raise StoreError(f"{path}: cannot open database: {exc}") from None
        self._session = _SqliteSession(self._db)
        try:
            self._prepare(crawl)
        except (sqlite3.DatabaseError, StoreError) as exc:
            self._db.close()
            self._unlock()
            if created:
                self._remove_empty()
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"{path}: {self._explain(exc)}") from None

    def _remove_empty(self) -> None:
        """Take away the empty file a refused new memory left (a full disk, say)."""
        with contextlib.suppress(OSError):
            if os.path.getsize(self.location) == 0:
                for suffix in ("-wal", "-shm", "-journal", ""):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self.location + suffix)

    def _disk_full(self, exc: sqlite3.Error) -> bool:
        """SQLite says the disk is full, or fails to write where there is no room left."""
        name = getattr(exc, "sqlite_errorname", "")
        if name == "SQLITE_FULL" or "database or disk is full" in str(exc):
            return True
        if not name.startswith("SQLITE_IOERR") and "disk I/O error" not in str(exc):
            return False
        try:  # the WAL index grows by 32 KB: an I/O error with less room left is that
            return shutil.disk_usage(Path(self.location).absolute().parent).free < DISK_SLACK
        except OSError:
            return False

    def _explain(self, exc: sqlite3.Error) -> str:
        text = str(exc)
        if self._disk_full(exc):
            return (
                f"disk full, cannot write the memory ({text}); "
                "free some space and run the same command again"
            )
        if "malformed" in text:
            return f"damaged database ({text}); restore a copy or start a new one"
        if "not a database" in text:
            return f"not a linkpatrol database ({text})"
        if "readonly" in text or "read-only" in text:
            return "database is read-only"
        if "locked" in text or "busy" in text:
            return "database is locked by another process"
        if "disk" in text and ("full" in text or "I/O" in text):
            return f"cannot write the database: {text}"
        return text

    def _prepare(self, crawl: bool) -> None:
        db = self._db
        db.execute("PRAGMA busy_timeout = 10000")
        if self.ephemeral:
            with self._tx() as s:
                self._create_schema(s)
            return
        self._check_size()
        db.execute(f"PRAGMA cache_size = -{READ_CACHE_KIB}")  # a crawl's: see begin_pass
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        version = self._schema_version(self._session) if "meta" in tables else None
        self._check_memory(tables, version, crawl)
        if not crawl:
            if version is not None and version < SCHEMA_VERSION:
                try:
                    with self._tx() as s:
                        self._create_schema(s)
                except (sqlite3.Error, StoreError) as exc:
                    text = self._explain(exc) if isinstance(exc, sqlite3.Error) else str(exc)
                    raise StoreError(self._upgrade_message(version, Exception(text))) from None
            return
        # the mode bits count even for root, whom os.access lets write anything
        if not os.access(self.location, os.W_OK) or not os.stat(self.location).st_mode & 0o222:
            raise StoreError(f"{self.location}: database is read-only")
        self._lock()
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        # rarer checkpoints: the crawl writes in large batches
        db.execute("PRAGMA wal_autocheckpoint = 4096")
        # temporary b-trees (the report's sort of every link) spill to a file, not to memory
        # (a crawl keeps its statement journals in memory: see begin_pass)
        with self._tx() as s:
            self._create_schema(s)

    def _check_size(self) -> None:
        """Refuse a file shorter than its header says (a truncated copy) before any write."""
        try:
            size = os.path.getsize(self.location)
            wal = Path(self.location + "-wal")
            wal_size = wal.stat().st_size if wal.exists() else 0
        except OSError:
            return
        if size == 0:
            return
        page_size, pages = self._header_size()
        if not page_size:
            return  # not a SQLite file at all: opening it says so
        if size % page_size or (wal_size == 0 and size < pages * page_size):
            raise StoreError(
                f"{self.location}: damaged database: the file is truncated "
                f"({size} bytes, its header says {pages * page_size})"
            )

    def _header_size(self) -> tuple[int, int]:
        """(page size, pages) as the file's header records them, read from the bytes: a
        truncated file may have lost the pages SQLite needs to answer a PRAGMA. The page
        count is 0 when the header does not vouch for it."""
        try:
            with open(self.location, "rb") as handle:
                header = handle.read(100)
        except OSError:
            return 0, 0
        if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
            return 0, 0
        page_size = int.from_bytes(header[16:18], "big")
        page_size = 65536 if page_size == 1 else page_size
        valid = header[24:28] == header[92:96]
        return page_size, int.from_bytes(header[28:32], "big") if valid else 0

    def _lock(self) -> None:
        fd = os.open(self.location, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreError(
                f"{self.location}: another linkpatrol process is crawling with this database"
            ) from None
        self._lock_fd = fd
        _lock_fds.add(fd)

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            _lock_fds.discard(self._lock_fd)
            os.close(self._lock_fd)
            self._lock_fd = None

    def _tx(self) -> AbstractContextManager[Session]:
        return self._transaction()

    @contextmanager
    def _transaction(self) -> Iterator[Session]:
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"{self.location}: {self._explain(exc)}") from None
        try:
            yield self._session
        except BaseException as exc:
            if db.in_transaction:  # SQLite may have rolled back already (a full disk)
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.DatabaseError):
                raise StoreError(f"{self.location}: {self._explain(exc)}") from None
            raise
        try:
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
            raise StoreError(f"{self.location}: {self._explain(exc)}") from None

    def _read(self) -> AbstractContextManager[Session]:
        return self._reading()

    @contextmanager
    def _reading(self) -> Iterator[Session]:
        try:
            yield self._session
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.location}: {self._explain(exc)}") from None

    def _index_links_by_target(self) -> None:
        """The index, and checkpoints of the write-ahead log (else made at close), in a
        thread of their own, on a connection of their own, while the report is read: the
        crawl is over, and the other core is free."""
        # the report's sorts (of every link, on a big site) spill to a file again, past a
        # reader's cache
        self._db.execute("PRAGMA temp_store = DEFAULT")
        self._db.execute(f"PRAGMA cache_size = -{READ_CACHE_KIB}")
        self._finished()
        if self.ephemeral:
            super()._index_links_by_target()
            return
        self._finisher = threading.Thread(target=self._finish, name="linkpatrol-finish")
        self._finisher.start()

    def save_counts(self, pass_id: int, broken: int, warnings: int) -> None:
        # after the end of the crawl, whose index holds the write lock: waiting for the
        # lock, SQLite would look again only every few dozen milliseconds
        self._finished()
        super().save_counts(pass_id, broken, warnings)

    def save_named(self, pass_id: int, named: Mapping[str, State]) -> None:
        self._finished()  # as save_counts
        super().save_named(pass_id, named)

    def save_baseline(self, pass_id: int, earlier: Earlier) -> None:
        self._finished()  # as save_counts
        super().save_baseline(pass_id, earlier)

    def _finished(self) -> None:
        """Wait for the end of the last crawl; make the index here if it could not."""
        if self._finisher is not None:
            self._finisher.join()
            self._finisher = None
        if self._unfinished:
            self._unfinished = False
            super()._index_links_by_target()

    def begin_pass(
        self,
        start_urls: Sequence[str],
        now: float,
        limits: PassLimits | None = None,
        options: ReportOptions | None = None,
        inputs: Sequence[str] = (),
    ) -> PassInfo:
        self._finished()  # another crawl by this process: the last one's end is over
        # A statement that writes many rows keeps the pages it changes in a journal of its
        # own, which past 64 KB goes to a temporary file: each batch of a crawl made one
        # (and deleted it). In memory it is as big as one statement's rows at most.
        self._db.execute("PRAGMA temp_store = MEMORY")
        self._db.execute(f"PRAGMA cache_size = -{CRAWL_CACHE_KIB}")
        return super().begin_pass(start_urls, now, limits, options, inputs)

    def _finish(self) -> None:
        try:
            db = sqlite3.connect(self.location, isolation_level=None, timeout=FINISH_TIMEOUT)
            try:
                # the crawl's pages into the file first: the report's reading, begun before
                # the index is made, keeps the index's own pages in the log until it ends
                db.execute("PRAGMA wal_checkpoint(PASSIVE)")
                db.execute("BEGIN IMMEDIATE")
                db.execute(LINKS_BY_TARGET)
                db.execute("COMMIT")
                db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            finally:
                db.close()  # rolls back what failed
        except sqlite3.Error:
            self._unfinished = True  # made again at close, where a failure is told

    def close(self) -> None:
        try:
            self._finished()
        finally:
            try:
                self._db.close()
            finally:
                self._unlock()


__all__ = ["SCHEMA_VERSION", "SQLITE", "SqliteStore"]
