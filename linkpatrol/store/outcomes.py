"""What became of the URLs a crawl claimed: verdicts, links, history, and what a pass keeps
besides (its counts, the prefixes its site grew by, robots.txt, folders' probes, plugins'
fields)."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from typing import Any

from linkpatrol.model import REASONS, STATES, Look, Probe, Reason, RobotsState, State
from linkpatrol.rules import standing
from linkpatrol.store import ArchiveAnswer, Discovered, Earlier, Outcome, SiteRecord
from linkpatrol.store.frontier import FrontierPart, _origin_of
from linkpatrol.store.schema import SEEN_LINKED, SEEN_SETTLED, Session, anchors_text

# the kinds of the values of an outcome's update, in the order of its ``?``: action, state,
# http_status, error, reason, content_type; links_unchanged (then base_url is kept), base_url,
# redirect_to; last_modified, etag, last_checked, last_good, failing_since; links_at,
# response_ms, anchors, heading_ids
_OUTCOME_KINDS = (
    *("text", "text", "int", "text", "text", "text"),
    *("bool", "text", "text"),
    *("text", "text", "real", "real", "real"),
    *("real", "real", "text", "text"),
)
_SEEN_COLUMNS = (("pass_id", "int"), ("url_id", "int"), ("stage", "int"))
# a URL settled in its pass; a page whose links were written in the pass stays so
_SETTLED_IN_PASS = (
    "ON CONFLICT(pass_id, url_id) DO UPDATE SET stage = "
    "CASE WHEN excluded.stage > seen.stage THEN excluded.stage ELSE seen.stage END"
)
# a URL of the pass, settled in it, of the outcomes' origins and a reason
_SETTLED_OF = (
    "SELECT u.id, u.origin FROM seen m JOIN urls u ON u.id = m.url_id "
    f"WHERE m.pass_id = ? AND m.stage >= {SEEN_SETTLED} AND u.reason = ?"
)
_LINK_COLUMNS = (
    ("src", "int"),
    ("dst", "int"),
    ("line", "int"),
    ("fragment", "text"),
    ("kind", "int"),
)
# the frontier's order puts the URLs waiting for a second look after all others: above
# the random numbers of the first looks (62 bits), within a 64-bit integer
SECOND_LOOKS = 1 << 62
_HISTORY_COLUMNS = (
    ("url_id", "int"),
    ("at", "real"),
    ("pass_id", "int"),
    ("state", "text"),
    ("http_status", "int"),
    ("error", "text"),
    ("reason", "text"),
)


class OutcomesPart(FrontierPart):
    """What a crawl writes of its outcomes, in :class:`~linkpatrol.store.sql.SqlStore`."""

    def _written_before(self, s: Session, batch: int) -> bool:
        """Whether this worker wrote batch ``batch`` already; if not, it is noted as written
        (with the rest of the transaction)."""
        row = s.execute("SELECT batches FROM workers WHERE id = ?", (self._owner,)).fetchone()
        if row is None:  # not enlisted (any more): nothing to tell by
            return False
        if row[0] >= batch:
            return True
        s.execute("UPDATE workers SET batches = ? WHERE id = ?", (batch, self._owner))
        return False

    def complete(
        self,
        pass_id: int,
        outcomes: Sequence[Outcome],
        now: float,
        extra_requests: int = 0,
        batch: int = 0,
    ) -> set[str]:
        """Write a batch of outcomes, their links and what they discover, in one transaction;
        the origins of the URLs it queued.

        ``batch`` numbers this worker's batches (from 1; 0: unnumbered): one written before,
        whose commit's answer was lost, is not written again.

        An outcome due for a second look (a transient failure) whose URL has not had one in
        the pass stays in the frontier for it, last in its order and leased to nobody until
        it is due, and its failure is not written: the second look's outcome is the URL's.
        """
        d = self.dialect
        origins: set[str] = set()
        with self._learning() as s:
            if batch and self._written_before(s, batch):
                return {_origin_of(f.url) for o in outcomes for f in o.links or ()} - {""}
            if d.lock_row:
                # the workers of a pass write in turn, each from the URLs' standing as the
                # one before left it: two settling a URL at once change its history once.
                # The pass's row is the first lock of every batch, so none waits in a cycle.
                s.execute(f"SELECT id FROM passes WHERE id = ?{d.lock_row}", (pass_id,))
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
            again = self._second_looks(s, pass_id, outcomes)
            self._one_certificate_warning(s, pass_id, outcomes)

            updates: list[tuple[Any, ...]] = []
            members: dict[int, int] = {}  # each URL's stage in the pass (the last answer's)
            history: list[tuple[Any, ...]] = []
            dropped: list[int] = []
            replaced: list[int] = []
            new_links: list[tuple[int, int, int | None, str | None, int]] = []
            requests, requested, parsed = extra_requests, 0, 0
            for o in outcomes:
                requests += o.requests
                if o.url_id in again:
                    continue
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
                        o.reason,
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
                        now if o.good_links else None,
                        o.response_ms,
                        anchors_text(o.anchors),
                        anchors_text(o.heading_ids),
                        o.url_id,
                    )
                )
                members[o.url_id] = SEEN_LINKED if has_links else SEEN_SETTLED
                if has_links and not o.links_unchanged:
                    replaced.append(o.url_id)
                    src = o.url_id
                    new_links.extend(
                        (src, ids[url], line, fragment, kind)
                        for url, line, _, _, fragment, kind in o.links or ()
                    )
            if updates:
                s.update_many(
                    "urls",
                    "action = ?, state = ?, http_status = ?, error = ?, reason = ?, "
                    "content_type = ?, base_url = CASE WHEN ? THEN base_url ELSE ? END, "
                    "redirect_to = ?, "
                    "last_modified = coalesce(?, last_modified), etag = coalesce(?, etag), "
                    "last_checked = coalesce(?, last_checked), last_good = ?, "
                    "failing_since = ?, links_at = coalesce(?, links_at), "
                    "response_ms = coalesce(?, response_ms), "
                    "anchors = coalesce(?, anchors), heading_ids = coalesce(?, heading_ids)",
                    _OUTCOME_KINDS,
                    updates,
                )
                s.insert_many(
                    "seen",
                    _SEEN_COLUMNS,
                    [(pass_id, url_id, stage) for url_id, stage in members.items()],
                    _SETTLED_IN_PASS,
                )
            if dropped:
                self._forget_seen()
            for chunk in d.chunks(dropped):
                condition, values = d.member("url_id", chunk)
                s.execute(f"DELETE FROM seen WHERE pass_id = ? AND {condition}", [pass_id, *values])
            for chunk in d.chunks(replaced):
                condition, values = d.member("src", chunk)
                s.execute(f"DELETE FROM links WHERE {condition}", values)
            if new_links:
                s.insert_many("links", _LINK_COLUMNS, new_links)
            if history:
                s.insert_many("history", _HISTORY_COLUMNS, history)
            settled = [url_id for url_id in outcome_ids if url_id not in again]
            for chunk in d.chunks(settled):
                condition, values = d.member("url_id", chunk)
                s.execute(
                    f"DELETE FROM frontier WHERE pass_id = ? AND {condition}", [pass_id, *values]
                )
            if again:
                s.executemany(
                    "UPDATE frontier SET looks = 1, lease_owner = NULL, lease_until = ?, "
                    "rnd = ? WHERE pass_id = ? AND url_id = ?",
                    [
                        (at, SECOND_LOOKS + random.getrandbits(62), pass_id, i)
                        for i, at in again.items()
                    ],
                )
                s.executemany(
                    "UPDATE urls SET looked_again = ? WHERE id = ?",
                    [(pass_id, url_id) for url_id in again],
                )
            s.execute(
                "UPDATE passes SET requests = requests + ?, requested = requested + ?, "
                "parsed = parsed + ?, dropped = dropped + ? WHERE id = ?",
                (requests, requested, parsed, len(dropped), pass_id),
            )
        return origins

    def _second_looks(
        self, s: Session, pass_id: int, outcomes: Sequence[Outcome]
    ) -> dict[int, float]:
        """The outcomes' URLs due for a second look that have not had one in the pass, and
        when each is due."""
        due = {o.url_id: o.look_again_at for o in outcomes if o.look_again_at is not None}
        again: dict[int, float] = {}
        d = self.dialect
        for chunk in d.chunks(list(due)):
            condition, values = d.member("url_id", chunk)
            for (url_id,) in s.execute(
                f"SELECT url_id FROM frontier WHERE pass_id = ? AND looks = 0 AND {condition}",
                [pass_id, *values],
            ):
                at = due[url_id]
                if at is not None:
                    again[url_id] = at
        return again

    def _one_certificate_warning(
        self, s: Session, pass_id: int, outcomes: Sequence[Outcome]
    ) -> None:
        """A host's certificate ending soon is warned of on one URL of a pass: an outcome
        warning of it again (in a resumed run, or by another worker of the crew) is written
        as the good answer it is. The workers write in turn, so two never both keep one."""
        warning = [o for o in outcomes if o.reason is Reason.CERT_EXPIRY]
        if not warning:
            return
        d = self.dialect
        condition, values = d.member("id", [o.url_id for o in warning])
        origin_of: dict[int, str] = dict(
            s.execute(f"SELECT id, origin FROM urls WHERE {condition}", values).fetchall()
        )
        condition, values = d.member("u.origin", sorted(set(origin_of.values())))
        warned: dict[str, set[int]] = {}
        for url_id, origin in s.execute(
            f"{_SETTLED_OF} AND {condition}",
            [pass_id, Reason.CERT_EXPIRY.value, *values],
        ):
            warned.setdefault(origin, set()).add(url_id)
        for o in warning:
            ids = warned.setdefault(origin_of.get(o.url_id, ""), set())
            if ids and o.url_id not in ids:
                o.state, o.reason, o.error = State.OK, None, None
            else:
                ids.add(o.url_id)

    def certificates_warned(self, pass_id: int) -> set[str]:
        with self._read() as s:
            return {
                origin for _, origin in s.execute(_SETTLED_OF, (pass_id, Reason.CERT_EXPIRY.value))
            }

    def redirects(self, pass_id: int) -> dict[str, tuple[int, str]]:
        with self._read() as s:
            return {
                url: (url_id, target)
                for url_id, url, target in s.execute(
                    "SELECT u.id, u.url, u.redirect_to FROM seen m JOIN urls u ON u.id = m.url_id "
                    "WHERE m.pass_id = ? AND u.state = ? AND u.redirect_to IS NOT NULL",
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

    def https_served(self, origin: str, since: float) -> bool | None:
        with self._read() as s:
            row = s.execute(
                "SELECT served FROM https_hosts WHERE origin = ? AND asked_at >= ?",
                (origin, since),
            ).fetchone()
        return None if row is None else bool(row[0])

    def save_https_served(self, origin: str, served: bool, at: float) -> None:
        with self._tx() as s:
            s.execute(
                "INSERT INTO https_hosts(origin, served, asked_at) VALUES(?, ?, ?) "
                "ON CONFLICT(origin) DO UPDATE SET served = excluded.served, "
                "asked_at = excluded.asked_at",
                (origin, int(served), at),
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

    # ---- folders' probes (soft 404s) -----------------------------------------------

    def probes(self, origin: str) -> list[Probe]:
        with self._read() as s:
            rows = s.execute(
                "SELECT folder, status, probed_at, redirect_to, title, size, simhash FROM probes "
                "WHERE origin = ?",
                (origin,),
            ).fetchall()
        return [
            Probe(
                origin,
                folder,
                status,
                probed_at,
                redirect_to,
                None if simhash is None else Look(title or "", size or 0, int(simhash, 16)),
            )
            for folder, status, probed_at, redirect_to, title, size, simhash in rows
        ]

    def save_probe(self, probe: Probe) -> None:
        look = probe.look
        with self._tx() as s:
            s.execute(
                "INSERT INTO probes(origin, folder, status, probed_at, redirect_to, title, size, "
                "simhash) VALUES(?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(origin, folder) DO UPDATE "
                "SET status = excluded.status, probed_at = excluded.probed_at, "
                "redirect_to = excluded.redirect_to, title = excluded.title, "
                "size = excluded.size, simhash = excluded.simhash",
                (
                    probe.origin,
                    probe.folder,
                    probe.status,
                    probe.probed_at,
                    probe.redirect_to,
                    look and look.title,
                    look and look.size,
                    None if look is None else f"{look.simhash:016x}",
                ),
            )

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

    def save_named(self, pass_id: int, named: Mapping[str, State]) -> None:
        """Keep the URLs the pass's report named, each broken or a warning: what the report
        of the next pass of its start URLs is compared with to say what is new."""
        kept = json.dumps({url: state.value for url, state in named.items()}, ensure_ascii=False)
        with self._tx() as s:
            s.execute("UPDATE passes SET named = ? WHERE id = ?", (kept, pass_id))

    def save_baseline(self, pass_id: int, earlier: Earlier) -> None:
        """Keep a baseline with the pass, as what its report is compared with."""
        kept = json.dumps(earlier.as_dict(), ensure_ascii=False)
        with self._tx() as s:
            s.execute("UPDATE passes SET baseline = ? WHERE id = ?", (kept, pass_id))

    def save_archived(self, answers: Sequence[ArchiveAnswer], now: float) -> None:
        with self._tx() as s:
            s.executemany(
                "UPDATE urls SET archive_for = ?, archive_asked = ?, archive_url = ?, "
                "archive_at = ? WHERE id = ?",
                [
                    (
                        a.last_good,
                        now,
                        None if a.copy is None else a.copy.url,
                        None if a.copy is None else a.copy.at,
                        a.url_id,
                    )
                    for a in answers
                ],
            )

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
