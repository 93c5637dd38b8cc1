"""What is due in a pass: discovery (with its limits), claims and their leases.

A URL found for the first time in a pass gets its row, once, and is queued in the
frontier, or settled at once where a limit of the pass or its own form rules it out;
crawlers claim due URLs in random order, leased for a while, skipping busy hosts.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from linkpatrol.model import ACTIONS, STATES, Action, State
from linkpatrol.rules import discovered
from linkpatrol.store import Discovered, Task
from linkpatrol.store.schema import NOT_WITHIN, SEEN_SETTLED, SchemaPart, Session
from linkpatrol.urls import is_http, origin, similar_pattern

# URLs a crawler remembers as seen in its pass, in each of two generations (about 10 MB
# each): a big site's URLs not remembered are looked up again in every batch that links
# to them, a cost that grows with the site
SEEN_KEPT = 50_000


def _origin_of(url: str) -> str:
    return origin(url) if is_http(url) else ""


class FrontierPart(SchemaPart):
    """Discovery and the frontier of :class:`~linkpatrol.store.sql.SqlStore`."""

    def __init__(self) -> None:
        super().__init__()
        self._patterns: dict[str, int] = {}
        # URLs known to be seen in the pass, by id (a site's navigation is linked from every
        # page), while ``_seen_for`` holds: (the pass, its count of URLs dropped from it as
        # this store last read it under the pass's lock, or None for a sole crawler)
        self._seen: dict[str, int] = {}
        # the generation before: what the site's pages still link to moves up again
        self._seen_before: dict[str, int] = {}
        self._seen_for: tuple[int, int | None] | None = None

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
                    "UPDATE frontier SET lease_owner = ?, lease_until = ? "
                    f"WHERE pass_id = ? AND {condition}",
                    [self._owner, now + lease_seconds, pass_id, *values],
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
        unseen = (
            ""
            if unseen_in is None
            else " AND NOT EXISTS (SELECT 1 FROM seen m WHERE m.pass_id = ? AND m.url_id = u.id)"
        )
        with self._read() as s:
            for chunk in d.chunks(list(url_ids)):
                condition, values = d.member("l.src", chunk)
                for src, url, line in s.execute(
                    "SELECT l.src, u.url, l.line FROM links l JOIN urls u ON u.id = l.dst "
                    f"WHERE {condition} AND {NOT_WITHIN}{unseen} "
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
                "SELECT u.id, u.url, m.pass_id, CASE WHEN u.state IN ('broken', 'unchecked') "
                "AND u.http_status IS NULL "
                "AND u.last_good IS NULL AND u.reason = 'invalid-url' THEN u.error END "
                "FROM urls u LEFT JOIN seen m ON m.pass_id = ? AND m.url_id = u.id "
                f"WHERE {condition}",
                [pass_id, *values],
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
            members: list[tuple[int, int, int]] = []
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
                    settled.append((state.value, error, reason and reason.value, checked, url_id))
                    members.append((pass_id, url_id, SEEN_SETTLED))
                else:
                    members.append((pass_id, url_id, 0))
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
            s.insert_many(
                "seen",
                (("pass_id", "int"), ("url_id", "int"), ("stage", "int")),
                members,
                "ON CONFLICT(pass_id, url_id) DO NOTHING",
            )
            if settled:
                s.update_many(
                    "urls",
                    "state = ?, error = ?, reason = ?, http_status = NULL, "
                    "last_checked = coalesce(?, last_checked)",
                    ("text", "text", "text", "real"),
                    settled,
                )
            if queued:
                s.insert_many(
                    "frontier",
                    (("url_id", "int"), ("pass_id", "int"), ("origin", "text"), ("rnd", "int")),
                    queued,
                    "ON CONFLICT(pass_id, url_id) DO UPDATE SET "
                    "origin = excluded.origin, rnd = excluded.rnd, "
                    "lease_owner = NULL, lease_until = NULL, looks = 0",
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
