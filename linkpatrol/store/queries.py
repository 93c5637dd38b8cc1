"""What the reports read of the memory: a pass's URLs with their referrers, its links,
verdicts, anchors and plugins' fields, the passes, and one URL's history."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from linkpatrol.model import ACTIONS, REASONS, STATES, LinkKind, State
from linkpatrol.rules import INSECURE_LOAD, PERMANENT_REDIRECTS, SECURE_PAGE
from linkpatrol.rules import MAX_REDIRECT_HOPS as MAX_HOPS
from linkpatrol.store import (
    Anchors,
    Archived,
    Change,
    Earlier,
    MovedLink,
    Part,
    PassInfo,
    Referrer,
    UrlRecord,
)
from linkpatrol.store.crew import PASS_COLUMNS, CrewPart, pass_from_row
from linkpatrol.store.schema import (
    NOT_WITHIN,
    SEEN_LINKED,
    SEEN_SETTLED,
    Session,
    anchors_of,
)

# a broken URL's copy in the web archive, kept for its present last-good moment (a URL
# that was good since, and broke again, has none until the archive is asked again)


def _archived(url: str) -> str:
    """The URL (a table's alias) is broken, with a copy asked for its last-good day."""
    return f"{url}.state = '{State.BROKEN.value}' AND {url}.archive_for = {url}.last_good"


_ARCHIVED = _archived("u")
_ARCHIVED_COLUMNS = (
    f"CASE WHEN {_ARCHIVED} THEN u.archive_url END, CASE WHEN {_ARCHIVED} THEN u.archive_at END"
)


def _url_columns(pass_id: str) -> str:
    """A URL's columns (of ``u``), whether it needed a second look in the pass ``pass_id``
    (a column or a value), and its copy in the web archive."""
    return (
        "u.id, u.url, u.action, u.state, u.http_status, u.error, u.content_type, u.base_url, "
        "u.redirect_to, u.last_checked, u.last_good, u.failing_since, u.last_modified, "
        "u.response_ms, u.first_seen, u.reason, "
        f"CASE WHEN u.looked_again = {pass_id} THEN 1 ELSE 0 END, {_ARCHIVED_COLUMNS}"
    )


# the pages (``s``) whose links were written in the pass (the first parameter)
_PAGES_OF_PASS = f"JOIN seen ms ON ms.url_id = s.id AND ms.pass_id = ? AND ms.stage = {SEEN_LINKED}"
# the URLs (``u``) of the pass
_URLS_OF_PASS = "FROM seen m JOIN urls u ON u.id = m.url_id WHERE m.pass_id = ?"


# targets of links with a #fragment whose anchors are read at once: a page's can be many
# (a Doxygen page's hundreds), and all of a chunk's are held while its fragments are
# looked for
ANCHORS_AT_ONCE = 50

# the links (``l``) with a #fragment of the pass's pages to URLs (``d``) of the pass
_FRAGMENT_LINKS = (
    "FROM links l JOIN seen ms ON ms.url_id = l.src AND ms.pass_id = ? "
    f"AND ms.stage = {SEEN_LINKED} "
    "JOIN seen md ON md.url_id = l.dst AND md.pass_id = ms.pass_id "
    "JOIN urls d ON d.id = l.dst WHERE l.fragment IS NOT NULL"
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


def _url_record(row: Sequence[Any], referrers: list[Referrer]) -> UrlRecord:
    """A row of :func:`_url_columns` as a record."""
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
        second_look=bool(row[16]),
        archived=None if row[17] is None else Archived(row[17], row[18]),
    )


class QueriesPart(CrewPart):
    """The reports' reads, in :class:`~linkpatrol.store.sql.SqlStore`."""

    def latest_pass(
        self, inputs: Sequence[str] = (), start_urls: Sequence[str] = ()
    ) -> PassInfo | None:
        where, params = "", []
        if inputs or start_urls:
            where = "WHERE inputs = ? OR start_urls = ? "
            params = [json.dumps(list(inputs)), json.dumps(list(start_urls))]
        with self._read() as s:
            row = s.execute(
                f"SELECT {PASS_COLUMNS} FROM passes {where}"
                "ORDER BY coalesce(active_at, started_at) DESC, id DESC LIMIT 1",
                params,
            )
            found = row.fetchone()
        return pass_from_row(found) if found else None

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
                        f"SELECT u.id, u.url {_URLS_OF_PASS} AND m.stage = {SEEN_LINKED}",
                        (pass_id,),
                    )
                )
                ref_rows = s.stream(
                    self._referrer_query(_in_part("l.dst", part), "s.id"), (pass_id,)
                )
            url_rows = s.stream(
                f"SELECT {_url_columns('m.pass_id')} {_URLS_OF_PASS} "
                f"AND {_in_part('m.url_id', part)} ORDER BY m.url_id",
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
        target, page and line; ``few``: of a few targets, found by target, not by page
        (SQLite, without statistics, would read every page of the pass and its links)."""
        d = self.dialect
        pages = (
            "WHERE EXISTS (SELECT 1 FROM seen ms WHERE ms.url_id = s.id AND ms.pass_id = ? "
            f"AND ms.stage = {SEEN_LINKED}) AND"
            if few
            else f"{_PAGES_OF_PASS} WHERE"
        )
        return (
            f"SELECT l.dst, {page}, l.line FROM links l JOIN urls s ON s.id = l.src "
            f"{pages} {NOT_WITHIN} AND {condition} "
            f"ORDER BY l.dst, s.url{d.binary_text}, l.line{d.nulls_first}"
        )

    def referrers(self, pass_id: int, url_ids: Sequence[int]) -> dict[int, list[Referrer]]:
        found: dict[int, list[Referrer]] = {}
        pages: dict[str, str] = {}
        with self._read() as s:
            for chunk in self.dialect.chunks(list(url_ids)):
                condition, values = self.dialect.member("l.dst", chunk)
                for dst, page, line in s.execute(
                    self._referrer_query(condition, few=True), (pass_id, *values)
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
                f"{_PAGES_OF_PASS} JOIN urls d ON d.id = l.dst "
                f"WHERE {NOT_WITHIN} AND {_in_part('ms.url_id', part)} "
                f"ORDER BY ms.url_id, l.{self.dialect.link_order}",
                (pass_id,),
            ):
                if src != current:
                    if current is not None:
                        yield current, targets
                    current, targets = src, []
                targets.append(_referrer(dst, line))
        if current is not None:
            yield current, targets

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

    def earlier(self, info: PassInfo) -> Earlier | None:
        with self._read() as s:
            row = s.execute("SELECT baseline FROM passes WHERE id = ?", (info.id,)).fetchone()
            if row is not None and row[0]:
                return Earlier.of_dict(json.loads(row[0]))
            found = s.execute(
                "SELECT id, named FROM passes WHERE id < ? AND complete = 1 AND start_urls = ? "
                "ORDER BY id DESC LIMIT 1",
                (info.id, json.dumps(list(info.start_urls))),
            ).fetchone()
        if found is None or found[1] is None:
            return None
        named = json.loads(found[1])
        return Earlier({url: STATES[state] for url, state in named.items()}, pass_id=found[0])

    # ---- copies in the web archive ------------------------------------------------------

    def archive_due(self, pass_id: int, none_before: float) -> list[UrlRecord]:
        with self._read() as s:
            rows = s.execute(
                f"SELECT {_url_columns('m.pass_id')} {_URLS_OF_PASS} AND u.state = ? "
                "AND u.last_good IS NOT NULL AND (u.archive_for IS NULL "
                "OR u.archive_for <> u.last_good "
                "OR (u.archive_url IS NULL AND u.archive_asked < ?)) "
                "ORDER BY m.url_id",
                (pass_id, State.BROKEN.value, none_before),
            ).fetchall()
        return [_url_record(row, []) for row in rows]

    def archived_copies(self, pass_id: int) -> dict[str, Archived]:
        with self._read() as s:
            return {
                url: Archived(copy, at)
                for url, copy, at in s.execute(
                    f"SELECT u.url, {_ARCHIVED_COLUMNS} {_URLS_OF_PASS} AND {_ARCHIVED} "
                    "AND u.archive_url IS NOT NULL ORDER BY m.url_id",
                    (pass_id,),
                )
            }

    # ---- history and single URLs ------------------------------------------------------

    def verdicts(self, pass_id: int) -> dict[State, int]:
        with self._read() as s:
            return {
                STATES[state]: count
                for state, count in s.execute(
                    f"SELECT u.state, count(*) {_URLS_OF_PASS} AND m.stage >= {SEEN_SETTLED} "
                    "GROUP BY u.state",
                    (pass_id,),
                )
                if state
            }

    def fragments(self, pass_id: int) -> Iterator[tuple[int, str, str, Anchors]]:
        """Each #fragment the pass links to, once per target, with the page it lands on
        and that page's anchors: (the target's id, the page, the fragment, its anchors).
        A big site's navigation links to the same few fragments from every page: each is
        looked for once, and each target's anchors are read once, by id, a few targets at
        a time."""
        d = self.dialect
        with self._read() as s:
            linked = s.execute(
                f"SELECT DISTINCT d.id, l.fragment{d.binary_text} {_FRAGMENT_LINKS} "
                "AND d.anchors IS NOT NULL ORDER BY 1, 2",
                (pass_id,),
            ).fetchall()
            at = 0
            targets = list(dict.fromkeys(row[0] for row in linked))
            for chunk in d.chunks(targets, ANCHORS_AT_ONCE):
                condition, values = d.member("id", chunk)
                pages = {
                    url_id: (url, Anchors(anchors_of(ids), anchors_of(heading_ids)))
                    for url_id, url, ids, heading_ids in s.execute(
                        f"SELECT id, url, anchors, heading_ids FROM urls WHERE {condition}",
                        values,
                    )
                }
                while at < len(linked) and linked[at][0] in pages:
                    dst_id, fragment = linked[at]
                    page, anchors = pages[dst_id]
                    yield dst_id, page, fragment, anchors
                    at += 1
        # a fragment survives a redirect, as in browsers: page#x where page redirects to
        # page/ is page/#x
        landings: dict[str, tuple[str, Anchors] | None] = {}
        with self._read() as s:
            redirected = s.execute(
                f"SELECT DISTINCT d.id, d.redirect_to, l.fragment{d.binary_text} "
                f"{_FRAGMENT_LINKS} AND d.state = ? AND d.redirect_to IS NOT NULL "
                "ORDER BY 1, 3",
                (pass_id, State.REDIRECT.value),
            ).fetchall()
            for dst_id, target, fragment in redirected:
                if target not in landings:
                    landings[target] = self._landing(s, target, pass_id)
                landing = landings[target]
                if landing is not None:
                    yield dst_id, landing[0], fragment, landing[1]

    def fragment_referrers(
        self, pass_id: int, linked: Collection[tuple[int, str]]
    ) -> dict[tuple[int, str], list[Referrer]]:
        """The pages (and lines) of the pass that link to each (target id, #fragment), in
        page and line order."""
        d = self.dialect
        found: dict[tuple[int, str], list[Referrer]] = {key: [] for key in linked}
        with self._read() as s:
            for chunk in d.chunks(sorted(found)):
                targets, target_values = d.member("l.dst", sorted({key[0] for key in chunk}))
                fragments, fragment_values = d.member("l.fragment", sorted({k[1] for k in chunk}))
                for dst, fragment, page, line in s.execute(
                    "SELECT l.dst, l.fragment, s.url, l.line FROM links l "
                    f"JOIN urls s ON s.id = l.src {_PAGES_OF_PASS} "
                    "JOIN seen md ON md.url_id = l.dst AND md.pass_id = ms.pass_id "
                    f"WHERE {targets} AND {fragments} "
                    f"ORDER BY s.url{d.binary_text}, l.line",
                    (pass_id, *target_values, *fragment_values),
                ):
                    pages = found.get((dst, fragment))
                    if pages is not None:
                        pages.append(_referrer(page, line))
        return found

    def loaded_links(self, pass_id: int) -> Iterator[tuple[int, str, str, int | None, int]]:
        d = self.dialect
        with self._read() as s:
            yield from s.stream(
                "SELECT l.dst, s.url, d.url, l.line, l.kind FROM links l "
                f"JOIN urls s ON s.id = l.src {_PAGES_OF_PASS} JOIN urls d ON d.id = l.dst "
                "WHERE l.kind = ? AND s.url LIKE ? AND d.url LIKE ? "
                f"ORDER BY l.dst, s.url{d.binary_text}, l.line{d.nulls_first}",
                (pass_id, LinkKind.SUBRESOURCE.value, f"{SECURE_PAGE}%", f"{INSECURE_LOAD}%"),
            )

    def _landing(self, s: Session, url: str, pass_id: int) -> tuple[str, Anchors] | None:
        """Where a redirect to ``url`` lands in the pass, following further redirects (a
        few hops at most), with the landing page's anchors; None: nowhere known, or a page
        whose anchors are not known."""
        for _ in range(MAX_HOPS):
            url = url.partition("#")[0]
            row = s.execute(
                "SELECT u.state, u.redirect_to, u.anchors, u.heading_ids "
                f"{_URLS_OF_PASS} AND u.url = ?",
                (pass_id, url),
            ).fetchone()
            if row is None:
                return None
            state, target, ids, heading_ids = row
            if state != State.REDIRECT.value or target is None:
                if ids is None:
                    return None
                return url, Anchors(anchors_of(ids), anchors_of(heading_ids))
            url = target
        return None

    def _local_links(self, s: Session, pass_id: int, to: str, condition: str) -> list[Any]:
        """(page, its validator, line, target, ``to``) of the links of the pass's local
        pages, at a line of theirs, to URLs ``d`` of the pass that meet ``condition``."""
        return s.execute(
            f"SELECT s.url, s.etag, l.line, d.url, {to} FROM links l "
            f"JOIN urls s ON s.id = l.src {_PAGES_OF_PASS} "
            "JOIN seen md ON md.url_id = l.dst AND md.pass_id = ms.pass_id "
            f"JOIN urls d ON d.id = l.dst WHERE s.url LIKE 'file:%' AND l.line > 0 "
            f"AND {condition} ORDER BY s.url{self.dialect.binary_text}, l.line",
            (pass_id,),
        ).fetchall()

    def archived_links(self, pass_id: int) -> list[MovedLink]:
        with self._read() as s:
            rows = self._local_links(
                s, pass_id, "d.archive_url", f"{_archived('d')} AND d.archive_url IS NOT NULL"
            )
        return [MovedLink(*row) for row in rows]

    def moved_links(self, pass_id: int) -> list[MovedLink]:
        moved = ",".join(str(status) for status in PERMANENT_REDIRECTS)
        found: list[MovedLink] = []
        landings: dict[str, str | None] = {}
        with self._read() as s:
            rows = self._local_links(
                s,
                pass_id,
                "d.redirect_to",
                f"d.state = '{State.REDIRECT.value}' AND d.http_status IN ({moved}) "
                "AND d.redirect_to IS NOT NULL",
            )
            for page, etag, line, target, first in rows:
                if first not in landings:
                    landings[first] = self._moved_to(s, first, pass_id)
                landing = landings[first]
                if landing is not None:
                    found.append(MovedLink(page, etag, line, target, landing))
        return found

    def _moved_to(self, s: Session, url: str, pass_id: int) -> str | None:
        """Where a permanent redirect to ``url`` lands: the first URL of its chain that
        does not move for good (a few hops at most); None: broken, or not known."""
        for _ in range(MAX_HOPS):
            condition, values = self.dialect.member_url([url])
            row = s.execute(
                f"SELECT u.state, u.http_status, u.redirect_to {_URLS_OF_PASS} AND {condition}",
                (pass_id, *values),
            ).fetchone()
            if row is None or row[0] == State.BROKEN.value:
                return None
            state, status, target = row
            if state != State.REDIRECT.value or status not in PERMANENT_REDIRECTS or not target:
                return url
            url = target
        return None

    def passes(self, limit: int, like: int | None = None) -> list[PassInfo]:
        where, params = "", [limit]
        if like is not None:
            where = "WHERE start_urls = (SELECT start_urls FROM passes WHERE id = ?) "
            params = [like, limit]
        with self._read() as s:
            rows = s.execute(
                f"SELECT {PASS_COLUMNS} FROM passes {where}ORDER BY id DESC LIMIT ?", params
            ).fetchall()
        return [pass_from_row(row) for row in rows[::-1]]

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
                f"SELECT {_url_columns('u.seen_pass')} FROM urls u "
                "WHERE lower(u.url) LIKE ? ESCAPE '\\' ORDER BY u.id LIMIT ? OFFSET ?",
                (pattern, limit, offset),
            ).fetchall()
        return [_url_record(row, []) for row in rows]

    def url_record(self, url: str) -> UrlRecord | None:
        d = self.dialect
        condition, values = d.member_url([url])
        with self._read() as s:
            row = s.execute(
                f"SELECT {_url_columns('u.seen_pass')}, u.seen_pass FROM urls u WHERE {condition}",
                values,
            )
            found = row.fetchone()
            if found is None:
                return None
            referrers = [
                _referrer(page, line)
                for page, line in s.execute(
                    "SELECT s.url, l.line FROM links l JOIN urls s ON s.id = l.src "
                    "JOIN seen ms ON ms.url_id = s.id AND ms.pass_id = ? "
                    f"WHERE l.dst = ? AND {NOT_WITHIN} "
                    f"ORDER BY s.url{d.binary_text}, l.line{d.nulls_first}",
                    (found[-1], found[0]),
                )
            ]
        record = _url_record(found, referrers)
        record.pass_id = found[-1]
        return record

    def links_from(self, url: str) -> list[Referrer]:
        d = self.dialect
        condition, values = d.member_url([url])
        with self._read() as s:
            return [
                _referrer(target, line)
                for target, line in s.execute(
                    "SELECT d.url, l.line FROM links l JOIN urls d ON d.id = l.dst "
                    f"WHERE l.src = (SELECT id FROM urls WHERE {condition}) AND {NOT_WITHIN} "
                    f"ORDER BY l.{d.link_order}",
                    values,
                )
            ]
