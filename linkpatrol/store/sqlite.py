"""The memory in one SQLite file (WAL mode, one transaction per batch of outcomes).

One crawling process at a time holds an exclusive ``flock`` on the database file, so a
second crawl of the same memory is refused at once; reports read it freely meanwhile.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import sqlite3
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from linkpatrol.model import Action, State, StoreError
from linkpatrol.store import (
    Discovered,
    Outcome,
    PassInfo,
    PassLimits,
    SiteRecord,
    Task,
    UrlRecord,
)
from linkpatrol.urls import is_http, numeric_pattern, origin

SCHEMA_VERSION = 1
_CHUNK = 500

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS passes(
  id INTEGER PRIMARY KEY,
  start_urls TEXT NOT NULL,
  started_at REAL NOT NULL,
  finished_at REAL,
  stopped_at REAL,
  complete INTEGER NOT NULL DEFAULT 0,
  elapsed REAL NOT NULL DEFAULT 0,
  requests INTEGER NOT NULL DEFAULT 0,
  requested INTEGER NOT NULL DEFAULT 0,
  parsed INTEGER NOT NULL DEFAULT 0,
  seen INTEGER NOT NULL DEFAULT 0,
  max_urls INTEGER NOT NULL DEFAULT 0,
  max_similar INTEGER NOT NULL DEFAULT 0,
  stop_reason TEXT
);
CREATE TABLE IF NOT EXISTS urls(
  id INTEGER PRIMARY KEY,
  url TEXT NOT NULL UNIQUE,
  origin TEXT NOT NULL,
  action TEXT NOT NULL,
  state TEXT,
  http_status INTEGER,
  error TEXT,
  content_type TEXT,
  base_url TEXT,
  redirect_to TEXT,
  last_modified TEXT,
  etag TEXT,
  first_seen REAL NOT NULL,
  last_checked REAL,
  last_good REAL,
  failing_since REAL,
  seen_pass INTEGER,
  done_pass INTEGER,
  links_pass INTEGER,
  links_at REAL,
  referrer_id INTEGER
);
CREATE INDEX IF NOT EXISTS urls_seen ON urls(seen_pass);
CREATE TABLE IF NOT EXISTS links(src INTEGER NOT NULL, dst INTEGER NOT NULL, line INTEGER);
CREATE INDEX IF NOT EXISTS links_src ON links(src);
CREATE INDEX IF NOT EXISTS links_dst ON links(dst);
CREATE TABLE IF NOT EXISTS frontier(
  url_id INTEGER PRIMARY KEY,
  pass_id INTEGER NOT NULL,
  origin TEXT NOT NULL,
  rnd INTEGER NOT NULL,
  lease_owner TEXT,
  lease_until REAL
);
CREATE INDEX IF NOT EXISTS frontier_pick ON frontier(pass_id, rnd);
CREATE TABLE IF NOT EXISTS patterns(
  pass_id INTEGER NOT NULL,
  pattern TEXT NOT NULL,
  urls INTEGER NOT NULL,
  PRIMARY KEY(pass_id, pattern)
);
CREATE TABLE IF NOT EXISTS sites(
  origin TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  status INTEGER,
  body TEXT,
  fetched_at REAL NOT NULL,
  error TEXT
);
CREATE TABLE IF NOT EXISTS history(
  url_id INTEGER NOT NULL,
  at REAL NOT NULL,
  pass_id INTEGER,
  state TEXT NOT NULL,
  http_status INTEGER,
  error TEXT
);
CREATE INDEX IF NOT EXISTS history_url ON history(url_id, at);
"""

_PASS_COLUMNS = (
    "id, start_urls, started_at, finished_at, stopped_at, complete, elapsed, requests, "
    "requested, parsed, seen, stop_reason"
)


def _origin_of(url: str) -> str:
    return origin(url) if is_http(url) else ""


def _chunks(items: Sequence[Any], size: int = _CHUNK) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


class SqliteStore:
    """The :class:`~linkpatrol.store.Store` over a SQLite file."""

    def __init__(self, path: str, *, crawl: bool) -> None:
        self.location = path
        self._lock_fd: int | None = None
        self._owner = f"{os.getpid()}-{random.getrandbits(32):08x}"
        self._patterns: dict[str, int] = {}
        if not crawl and not Path(path).exists():
            raise StoreError(f"{path}: no such database (run 'linkpatrol check' first)")
        try:
            self._db = sqlite3.connect(
                path, isolation_level=None, check_same_thread=False, timeout=10.0
            )
        except sqlite3.Error as exc:
            raise StoreError(f"{path}: cannot open database: {exc}") from None
        try:
            self._prepare(crawl)
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise StoreError(f"{path}: {self._explain(exc)}") from None
        except StoreError:
            self._db.close()
            self._unlock()
            raise

    @staticmethod
    def _explain(exc: sqlite3.Error) -> str:
        text = str(exc)
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
        self._check_size()
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and "meta" not in tables:
            raise StoreError(f"{self.location}: not a linkpatrol database (no meta table)")
        if "meta" in tables:
            row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.location}: written by a newer linkpatrol (schema {version}, "
                    f"this version reads up to {SCHEMA_VERSION}); upgrade linkpatrol"
                )
        if not crawl:
            if "meta" not in tables:
                raise StoreError(f"{self.location}: empty database (no pass recorded yet)")
            return
        # the mode bits count even for root, whom os.access lets write anything
        if not os.access(self.location, os.W_OK) or not os.stat(self.location).st_mode & 0o222:
            raise StoreError(f"{self.location}: database is read-only")
        self._lock()
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        with self._tx():
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )

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
        page_size = int(self._db.execute("PRAGMA page_size").fetchone()[0])
        pages = int(self._db.execute("PRAGMA page_count").fetchone()[0])
        if size % page_size or (wal_size == 0 and size < pages * page_size):
            raise StoreError(
                f"{self.location}: damaged database: the file is truncated "
                f"({size} bytes, its header says {pages * page_size})"
            )

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

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"{self.location}: {self._explain(exc)}") from None
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        try:
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise StoreError(f"{self.location}: {self._explain(exc)}") from None

    def close(self) -> None:
        try:
            self._db.close()
        finally:
            self._unlock()

    # ---- passes -----------------------------------------------------------

    def _pass_from_row(self, row: Sequence[Any], resumed: bool = False) -> PassInfo:
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
            resumed=resumed,
        )

    def _pass(self, pass_id: int, resumed: bool = False) -> PassInfo:
        row = self._db.execute(
            f"SELECT {_PASS_COLUMNS} FROM passes WHERE id = ?", (pass_id,)
        ).fetchone()
        return self._pass_from_row(row, resumed)

    def latest_pass(self) -> PassInfo | None:
        try:
            row = self._db.execute(
                f"SELECT {_PASS_COLUMNS} FROM passes ORDER BY id DESC LIMIT 1"
            ).fetchone()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.location}: {self._explain(exc)}") from None
        return self._pass_from_row(row) if row else None

    def begin_pass(
        self, start_urls: Sequence[str], now: float, limits: PassLimits | None = None
    ) -> PassInfo:
        """Resume the last pass if it stopped early with the same start URLs, else start one."""
        encoded = json.dumps(list(start_urls))
        limits = limits or PassLimits()
        self._patterns.clear()
        with self._tx() as db:
            row = db.execute(
                "SELECT id, complete, start_urls FROM passes ORDER BY id DESC LIMIT 1"
            ).fetchone()
            if row and not row[1] and row[2] == encoded:
                pass_id = row[0]
                db.execute(
                    "UPDATE frontier SET lease_owner = NULL, lease_until = NULL WHERE pass_id = ?",
                    (pass_id,),
                )
                db.execute(
                    "UPDATE passes SET max_urls = ?, max_similar = ?, stopped_at = NULL "
                    "WHERE id = ?",
                    (limits.max_urls, limits.max_similar, pass_id),
                )
                resumed = True
            else:
                pass_id = (
                    db.execute(
                        "INSERT INTO passes(start_urls, started_at, max_urls, max_similar) "
                        "VALUES(?, ?, ?, ?)",
                        (encoded, now, limits.max_urls, limits.max_similar),
                    ).lastrowid
                    or 0
                )
                db.execute("DELETE FROM frontier WHERE pass_id != ?", (pass_id,))
                db.execute("DELETE FROM patterns WHERE pass_id != ?", (pass_id,))
                resumed = False
        return self._pass(pass_id, resumed)

    def end_run(
        self, pass_id: int, elapsed: float, now: float, complete: bool, stop_reason: str | None
    ) -> PassInfo:
        with self._tx() as db:
            db.execute(
                "UPDATE passes SET elapsed = elapsed + ?, complete = ?, finished_at = ?, "
                "stopped_at = ?, stop_reason = ? WHERE id = ?",
                (
                    elapsed,
                    int(complete),
                    now if complete else None,
                    None if complete else now,
                    stop_reason,
                    pass_id,
                ),
            )
            db.execute(
                "UPDATE frontier SET lease_owner = NULL, lease_until = NULL WHERE pass_id = ?",
                (pass_id,),
            )
        return self._pass(pass_id)

    # ---- the frontier -------------------------------------------------------

    def seed(self, pass_id: int, urls: Sequence[tuple[str, Action]], now: float) -> None:
        with self._tx():
            targets: dict[str, tuple[Discovered, int | None]] = {
                url: (Discovered(url, None, action), None) for url, action in urls
            }
            self._discover(pass_id, targets, now)

    def claim(
        self,
        pass_id: int,
        limit: int,
        now: float,
        exclude_origins: Collection[str],
        lease_seconds: float,
    ) -> list[Task]:
        """Lease up to ``limit`` due URLs, in random order, skipping busy hosts."""
        excluded = list(exclude_origins)
        where = "f.pass_id = ? AND (f.lease_until IS NULL OR f.lease_until < ?)"
        params: list[Any] = [pass_id, now]
        if excluded:
            where += f" AND f.origin NOT IN ({','.join('?' * len(excluded))})"
            params.extend(excluded)
        with self._tx() as db:
            rows = db.execute(
                f"SELECT f.url_id FROM frontier f WHERE {where} ORDER BY f.rnd LIMIT ?",
                [*params, limit],
            ).fetchall()
            if not rows:
                return []
            ids = [r[0] for r in rows]
            tasks: list[Task] = []
            for chunk in _chunks(ids):
                marks = ",".join("?" * len(chunk))
                db.execute(
                    f"UPDATE frontier SET lease_owner = ?, lease_until = ? "
                    f"WHERE url_id IN ({marks})",
                    [self._owner, now + lease_seconds, *chunk],
                )
                for row in db.execute(
                    "SELECT u.id, u.url, u.origin, u.action, u.state, u.http_status, u.error, "
                    "u.content_type, u.last_checked, u.last_good, u.links_at, u.etag, "
                    "u.last_modified, r.url FROM urls u LEFT JOIN urls r ON r.id = u.referrer_id "
                    f"WHERE u.id IN ({marks})",
                    list(chunk),
                ):
                    tasks.append(
                        Task(
                            url_id=row[0],
                            url=row[1],
                            origin=row[2],
                            action=Action(row[3]),
                            state=State(row[4]) if row[4] else None,
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
        with self._tx() as db:
            for chunk in _chunks(list(url_ids)):
                db.execute(
                    "UPDATE frontier SET lease_owner = NULL, lease_until = NULL "
                    f"WHERE pass_id = ? AND url_id IN ({','.join('?' * len(chunk))})",
                    [pass_id, *chunk],
                )

    def pending(self, pass_id: int) -> int:
        row = self._db.execute(
            "SELECT count(*) FROM frontier WHERE pass_id = ?", (pass_id,)
        ).fetchone()
        return int(row[0])

    def links_of(self, url_ids: Sequence[int]) -> dict[int, list[tuple[str, int | None]]]:
        found: dict[int, list[tuple[str, int | None]]] = {i: [] for i in url_ids}
        for chunk in _chunks(list(url_ids)):
            for src, url, line in self._db.execute(
                "SELECT l.src, u.url, l.line FROM links l JOIN urls u ON u.id = l.dst "
                f"WHERE l.src IN ({','.join('?' * len(chunk))}) ORDER BY l.src, l.rowid",
                list(chunk),
            ):
                found[src].append((url, line))
        return found

    def _discover(
        self,
        pass_id: int,
        targets: dict[str, tuple[Discovered, int | None]],
        now: float,
    ) -> dict[str, int]:
        """Make sure every target URL has a row; queue those new to this pass."""
        db = self._db
        ids: dict[str, tuple[int, int | None]] = {}
        invalid: dict[str, str] = {}  # found invalid before: still so, even as a remembered link
        urls = list(targets)
        for chunk in _chunks(urls):
            for url_id, url, seen, error in db.execute(
                "SELECT id, url, seen_pass, CASE WHEN state = 'broken' AND http_status IS NULL "
                "AND last_good IS NULL AND error LIKE 'invalid URL: %' THEN error END "
                f"FROM urls WHERE url IN ({','.join('?' * len(chunk))})",
                list(chunk),
            ):
                ids[url] = (url_id, seen)
                if error is not None:
                    invalid[url] = error
        missing = [u for u in urls if u not in ids]
        if missing:
            db.executemany(
                "INSERT INTO urls(url, origin, action, first_seen) VALUES(?, ?, ?, ?)",
                [(u, _origin_of(u), targets[u][0].action.value, now) for u in missing],
            )
            for chunk in _chunks(missing):
                for url_id, url in db.execute(
                    f"SELECT id, url FROM urls WHERE url IN ({','.join('?' * len(chunk))})",
                    list(chunk),
                ):
                    ids[url] = (url_id, None)
        fresh = [u for u in urls if ids[u][1] != pass_id]
        if fresh:
            seen, max_urls, max_similar = db.execute(
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
                if found.invalid is not None or url in invalid:
                    reason = f"invalid URL: {found.invalid}" if found.invalid else invalid[url]
                    settled.append((State.BROKEN.value, reason, now, pass_id, url_id))
                elif found.action is Action.RECORD:
                    settled.append((State.UNCHECKED.value, None, None, pass_id, url_id))
                elif max_urls and seen >= max_urls:
                    reason = f"not checked: --max-urls limit of {max_urls} URLs reached"
                    settled.append((State.UNCHECKED.value, reason, None, pass_id, url_id))
                elif (
                    max_similar
                    and (pattern := numeric_pattern(url)) is not None
                    and (self._pattern_count(pass_id, pattern, counted) >= max_similar)
                ):
                    reason = (
                        f"not checked: --max-similar limit of {max_similar} URLs like {pattern}"
                    )
                    settled.append((State.UNCHECKED.value, reason, None, pass_id, url_id))
                else:
                    if max_similar and (pattern := numeric_pattern(url)) is not None:
                        counted[pattern] = self._pattern_count(pass_id, pattern, counted) + 1
                    queued.append((url_id, pass_id, _origin_of(url), random.getrandbits(62)))
                seen += 1
            db.executemany(
                "UPDATE urls SET seen_pass = ?, action = ?, referrer_id = ? WHERE id = ?", marked
            )
            if settled:
                db.executemany(
                    "UPDATE urls SET state = ?, error = ?, http_status = NULL, "
                    "last_checked = coalesce(?, last_checked), done_pass = ? WHERE id = ?",
                    settled,
                )
            if queued:
                db.executemany(
                    "INSERT OR REPLACE INTO frontier(url_id, pass_id, origin, rnd) "
                    "VALUES(?, ?, ?, ?)",
                    queued,
                )
            db.execute("UPDATE passes SET seen = ? WHERE id = ?", (seen, pass_id))
            if counted:
                db.executemany(
                    "INSERT INTO patterns(pass_id, pattern, urls) VALUES(?, ?, ?) "
                    "ON CONFLICT(pass_id, pattern) DO UPDATE SET urls = excluded.urls",
                    [(pass_id, pattern, n) for pattern, n in counted.items()],
                )
                self._patterns.update(counted)
        return {u: ids[u][0] for u in urls}

    def _pattern_count(self, pass_id: int, pattern: str, counted: dict[str, int]) -> int:
        """URLs of this pattern queued in the pass so far (this batch first, then memory)."""
        if pattern in counted:
            return counted[pattern]
        if pattern not in self._patterns:
            row = self._db.execute(
                "SELECT urls FROM patterns WHERE pass_id = ? AND pattern = ?", (pass_id, pattern)
            ).fetchone()
            if len(self._patterns) > 100_000:
                self._patterns.clear()
            self._patterns[pattern] = int(row[0]) if row else 0
        return self._patterns[pattern]

    def complete(
        self, pass_id: int, outcomes: Sequence[Outcome], now: float, extra_requests: int = 0
    ) -> None:
        """Write a batch of outcomes, their links and what they discover, in one transaction."""
        with self._tx() as db:
            targets: dict[str, tuple[Discovered, int | None]] = {}
            for outcome in outcomes:
                for found in outcome.links or ():
                    if found.url not in targets:
                        targets[found.url] = (found, outcome.url_id)
            ids = self._discover(pass_id, targets, now) if targets else {}

            previous: dict[int, tuple[Any, ...]] = {}
            outcome_ids = [o.url_id for o in outcomes]
            for chunk in _chunks(outcome_ids):
                for row in db.execute(
                    "SELECT id, state, last_good, failing_since, http_status FROM urls "
                    f"WHERE id IN ({','.join('?' * len(chunk))})",
                    list(chunk),
                ):
                    previous[row[0]] = row

            updates: list[tuple[Any, ...]] = []
            history: list[tuple[Any, ...]] = []
            dropped: list[tuple[int]] = []
            replaced: list[tuple[int]] = []
            new_links: list[tuple[int, int, int | None]] = []
            requests, requested, parsed = extra_requests, 0, 0
            for o in outcomes:
                requests += o.requests
                requested += o.fetched
                parsed += o.parsed
                if o.dropped:
                    dropped.append((o.url_id,))
                    continue
                _, old_state, last_good, failing_since, old_status = previous.get(
                    o.url_id, (o.url_id, None, None, None, None)
                )
                if o.checked:
                    if o.state in (State.OK, State.REDIRECT):
                        last_good = now
                    failing_since = (failing_since or now) if o.state is State.BROKEN else None
                    if old_state != o.state.value or (
                        o.state is State.BROKEN and old_status != o.http_status
                    ):
                        history.append(
                            (o.url_id, now, pass_id, o.state.value, o.http_status, o.error)
                        )
                has_links = o.links is not None
                updates.append(
                    (
                        o.action.value,
                        o.state.value,
                        o.http_status,
                        o.error,
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
                        o.url_id,
                    )
                )
                if has_links and not o.links_unchanged:
                    replaced.append((o.url_id,))
                    new_links.extend((o.url_id, ids[f.url], f.line) for f in o.links or ())
            if updates:
                db.executemany(
                    "UPDATE urls SET action = ?, state = ?, http_status = ?, error = ?, "
                    "content_type = ?, base_url = CASE WHEN ? THEN base_url ELSE ? END, "
                    "redirect_to = ?, "
                    "last_modified = coalesce(?, last_modified), etag = coalesce(?, etag), "
                    "last_checked = coalesce(?, last_checked), last_good = ?, "
                    "failing_since = ?, done_pass = ?, links_pass = coalesce(?, links_pass), "
                    "links_at = coalesce(?, links_at) WHERE id = ?",
                    updates,
                )
            if dropped:
                db.executemany(
                    "UPDATE urls SET seen_pass = NULL, done_pass = NULL WHERE id = ?", dropped
                )
            if replaced:
                db.executemany("DELETE FROM links WHERE src = ?", replaced)
            if new_links:
                db.executemany("INSERT INTO links(src, dst, line) VALUES(?, ?, ?)", new_links)
            if history:
                db.executemany(
                    "INSERT INTO history(url_id, at, pass_id, state, http_status, error) "
                    "VALUES(?, ?, ?, ?, ?, ?)",
                    history,
                )
            db.executemany(
                "DELETE FROM frontier WHERE url_id = ?", [(url_id,) for url_id in outcome_ids]
            )
            db.execute(
                "UPDATE passes SET requests = requests + ?, requested = requested + ?, "
                "parsed = parsed + ? WHERE id = ?",
                (requests, requested, parsed, pass_id),
            )

    def redirects(self, pass_id: int) -> dict[str, tuple[int, str]]:
        return {
            url: (url_id, target)
            for url_id, url, target in self._db.execute(
                "SELECT id, url, redirect_to FROM urls WHERE seen_pass = ? AND state = ? "
                "AND redirect_to IS NOT NULL",
                (pass_id, State.REDIRECT.value),
            )
        }

    # ---- robots.txt -----------------------------------------------------------

    def site(self, origin: str) -> SiteRecord | None:
        row = self._db.execute(
            "SELECT origin, state, status, body, fetched_at, error FROM sites WHERE origin = ?",
            (origin,),
        ).fetchone()
        return SiteRecord(*row) if row else None

    def save_site(self, record: SiteRecord) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO sites(origin, state, status, body, fetched_at, error) "
                "VALUES(?, ?, ?, ?, ?, ?)",
                (
                    record.origin,
                    record.state,
                    record.status,
                    record.body,
                    record.fetched_at,
                    record.error,
                ),
            )

    # ---- reports ------------------------------------------------------------------

    def pass_urls(self, pass_id: int, with_referrers: bool = True) -> Iterator[UrlRecord]:
        """Every URL of the pass, in discovery order, with the pages (and lines) linking to it."""
        try:
            url_rows = self._db.execute(
                "SELECT id, url, action, state, http_status, error, content_type, base_url, "
                "redirect_to, last_checked, last_good, failing_since FROM urls "
                "WHERE seen_pass = ? ORDER BY id",
                (pass_id,),
            )
            ref_rows = (
                self._db.execute(
                    "SELECT l.dst, s.url, l.line FROM links l JOIN urls s ON s.id = l.src "
                    "WHERE s.links_pass = ? AND s.seen_pass = ? ORDER BY l.dst, s.url, l.line",
                    (pass_id, pass_id),
                )
                if with_referrers
                else iter(())
            )
            pending_ref = next(ref_rows, None)
            for row in url_rows:
                referrers: list[tuple[str, int | None]] = []
                while pending_ref is not None and pending_ref[0] <= row[0]:
                    if pending_ref[0] == row[0]:
                        referrers.append((pending_ref[1], pending_ref[2]))
                    pending_ref = next(ref_rows, None)
                yield UrlRecord(
                    id=row[0],
                    url=row[1],
                    action=Action(row[2]),
                    state=State(row[3]) if row[3] else State.UNCHECKED,
                    http_status=row[4],
                    error=row[5],
                    content_type=row[6],
                    base_url=row[7],
                    redirect_to=row[8],
                    last_checked=row[9],
                    last_good=row[10],
                    failing_since=row[11],
                    referrers=referrers,
                )
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.location}: {self._explain(exc)}") from None

    def outlinks(self, pass_id: int) -> Iterator[tuple[str, list[tuple[str, int | None]]]]:
        current: str | None = None
        targets: list[tuple[str, int | None]] = []
        for src, dst, line in self._db.execute(
            "SELECT s.url, d.url, l.line FROM links l JOIN urls s ON s.id = l.src "
            "JOIN urls d ON d.id = l.dst WHERE s.links_pass = ? AND s.seen_pass = ? "
            "ORDER BY s.id, l.rowid",
            (pass_id, pass_id),
        ):
            if src != current:
                if current is not None:
                    yield current, targets
                current, targets = src, []
            targets.append((dst, line))
        if current is not None:
            yield current, targets
