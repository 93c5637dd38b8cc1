"""The JSON report: the documented, stable shape for scripts (schema 1)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from json.encoder import encode_basestring as quoted
from typing import Any

from linkpatrol.helper import Helper, HelperFailed
from linkpatrol.model import RENDERED
from linkpatrol.report import (
    JSON_SCHEMA_VERSION,
    Entry,
    PartJob,
    Referrer,
    Report,
    StoredEntries,
    iso,
)
from linkpatrol.store import Archived, Change, Part, open_store
from linkpatrol.urls import local_path

REFERRER_BATCH = 1000  # referrers encoded at once: few calls, and never all of a big page's
# pages whose encoded start ('{"url":"...","line":') is kept for their next link: a page
# links to many URLs, so each is encoded once, not once per link; a big site's pages
# beyond this many are encoded again
PAGE_HEADS = 50_000


def change_dict(change: Change) -> dict[str, Any]:
    return {
        "at": iso(change.at),
        "pass": change.pass_id,
        "state": change.state.value,
        "http_status": change.http_status,
        "error": change.error,
        "reason": None if change.reason is None else change.reason.value,
    }


def _head(entry: Entry) -> dict[str, Any]:
    """An URL's fields before its referrers: a local file's path after its URL."""
    url = entry.url
    head: dict[str, Any] = {
        "url": url,
        "path": local_path(url) if url.startswith("file://") else None,
        "action": entry.action.value,
        "state": entry.state.value,
        "http_status": entry.http_status,
        "error": entry.error,
        "reason": None if entry.reason is None else entry.reason.value,
        "content_type": entry.content_type,
        "redirect_to": entry.redirect_to,
        "reportable": entry.reportable,
        "last_checked": iso(entry.last_checked),
        "last_good": iso(entry.last_good),
        "failing_since": iso(entry.failing_since),
    }
    if head["path"] is None:  # a web URL has none
        del head["path"]
    return head


def _tail(entry: Entry) -> dict[str, Any]:
    """An URL's fields after its referrers (its links, with --xref, come last)."""
    data: dict[str, Any] = {
        "response_ms": None if entry.response_ms is None else round(entry.response_ms, 1),
        "new": entry.new,
        "second_look": entry.second_look,
        "flapping": entry.flapping,
    }
    if entry.changes is not None:
        data["changes"] = [change_dict(c) for c in entry.changes]
    if entry.archived is not None:
        data["archived"] = archived_dict(entry.archived)
    return data


def archived_dict(archived: Archived) -> dict[str, Any]:
    return {"url": archived.url, "at": iso(archived.at)}


def _places(pages: list[Referrer], heads: dict[str, str]) -> Iterator[str]:
    """Pages and lines as ``{"url": ..., "line": ...}`` objects (a local file's ``"path"``
    after its URL), a batch at a time: written
    as the encoder would, three times as fast for the millions of referrers of a big site,
    and never all of a big page's at once. ``heads`` keeps each page's encoded start."""
    for start in range(0, len(pages), REFERRER_BATCH):
        parts: list[str] = []
        for url, line in pages[start : start + REFERRER_BATCH]:
            head = heads.get(url)
            if head is None:
                if len(heads) >= PAGE_HEADS:
                    heads.clear()
                path = f',"path":{quoted(local_path(url))}' if url.startswith("file://") else ""
                head = heads[url] = f'{{"url":{quoted(url)}{path},"line":'
            if line is None:
                parts.append(f"{head}null}}")
            elif line == RENDERED:
                parts.append(f'{head}null,"rendered":true}}')
            else:
                parts.append(f"{head}{line}}}")
        yield ","[: min(start, 1)] + ",".join(parts)


def report_dict(report: Report) -> dict[str, Any]:
    """The report's fields but its URLs."""
    s = report.summary
    data = {
        "tool": "linkpatrol",
        "version": report.version,
        "schema": JSON_SCHEMA_VERSION,
        "complete": report.complete,
        "stop_reason": report.stop_reason,
        "pass": report.pass_id,
        "started_at": iso(report.started_at),
        "finished_at": iso(report.finished_at),
        "start_urls": report.start_urls,
        "inputs": report.inputs,
        "options": report.options.as_dict(),
        "summary": {
            "urls": s.urls,
            "requested": s.requested,
            "parsed": s.parsed,
            "broken": s.broken,
            "reportable": s.reportable,
            "warnings": s.warnings,
            "redirects": s.redirects,
            "requests": s.requests,
            "elapsed": round(s.elapsed, 3),
            "new": len(report.new),
            "fetch": None
            if s.fetch is None
            else {
                "slots": round(s.fetch.slots, 1),
                "busy": round(s.fetch.busy, 3),
                "waiting": round(s.fetch.waiting, 3),
                "idle": round(s.fetch.idle, 3),
                "queue": round(s.fetch.queue, 1),
            },
        },
        "passes": [
            {
                "pass": p.id,
                "started_at": iso(p.started_at),
                "complete": p.complete,
                "broken": p.broken,
                "warnings": p.warnings,
            }
            for p in report.passes
        ],
        "plugins": report.plugins,
        "compared_with": None
        if report.earlier is None
        else {"pass": report.earlier.pass_id, "baseline": report.earlier.baseline},
    }
    data.update(report.extra)
    return data


# half of the URLs are written by a helper process once there are this many of them
SHARED_FROM = 1000
# the helper sends its URLs' JSON in batches of about this many characters
SHARED_BATCH = 1 << 16
# the part of the URLs a helper writes (those with odd ids); the command writes the rest
_THEIRS, _MINE = Part(1, 2), Part(0, 2)


@dataclass(slots=True)
class Sharing:
    """A helper process that writes half of a big report's URLs, once started, and the
    memory it opens (as given: the store's own location may hide a password)."""

    db: str
    least: int = SHARED_FROM  # URLs in the report before a helper is started
    helper: Helper | None = None
    failures: list[str] = field(default_factory=list)  # why the helper did not finish

    def start(self, urls: int) -> None:
        """Start the helper now if a report of about ``urls`` URLs is to be shared: before
        the report is read, so that it starts up while the command reads."""
        if self.helper is None and urls >= self.least:
            # None: the command writes it all
            self.helper = Helper.start(preload=(part_json.__module__,))

    def close(self) -> None:
        if self.helper is not None:
            self.helper.close()


def _encoder() -> Callable[[Any], str]:
    return json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def iter_json(report: Report, sharing: Sharing | None = None) -> Iterator[str]:
    """The report in pieces, one URL at a time, so a big site's report is never whole in memory.

    With ``sharing``, a big report's URLs of odd id are written by the helper process while
    this one writes the others: the same text, in about half the time.
    """
    encode = _encoder()
    head = report_dict(report)
    extra = {key: head.pop(key) for key in report.extra}
    yield encode(head)[:-1] + ',"urls":['
    heads: dict[str, str] = {}
    entries = report.entries
    # a helper is started only for a report big enough to share (see Sharing.start)
    helper = sharing.helper if sharing is not None else None
    if (
        sharing is not None
        and helper is not None
        and isinstance(entries, StoredEntries)
        and entries.whole
    ):
        objects = _shared(entries, sharing, helper, encode, heads)
    else:
        objects = (_entry_pieces(entry, encode, heads) for entry in entries)
    for i, pieces in enumerate(objects):
        yield ","[:i]
        yield from pieces
    yield "]"
    if extra:
        yield "," + encode(extra)[1:-1]
    yield "}\n"


def _shared(
    entries: StoredEntries,
    sharing: Sharing,
    helper: Helper,
    encode: Callable[[Any], str],
    heads: dict[str, str],
) -> Iterator[Iterable[str]]:
    """Each URL's object as pieces, in the order of the URLs' ids: this process's URLs
    written here, the helper's as it sent them."""
    theirs = _theirs(entries, sharing, helper, encode)
    mine = entries.part(_MINE).numbered()
    own = next(mine, None)  # read while the helper reads its part
    pending = next(theirs, None)
    while own is not None:
        url_id, entry = own
        while pending is not None and pending[0] < url_id:
            yield (pending[1],)
            pending = next(theirs, None)
        yield _entry_pieces(entry, encode, heads)
        own = next(mine, None)
    while pending is not None:
        yield (pending[1],)
        pending = next(theirs, None)
    for entry in entries.tail:
        yield _entry_pieces(entry, encode, heads)


def _theirs(
    entries: StoredEntries, sharing: Sharing, helper: Helper, encode: Callable[[Any], str]
) -> Iterator[tuple[int, str]]:
    """The helper's URLs, by id, as JSON (asked for at once); if it fails, the rest of
    them are written here."""
    batches: Iterator[list[tuple[int, str]]] | None = None
    try:
        batches = helper.run(part_json, entries.part_job(_THEIRS), sharing.db)
    except HelperFailed as exc:
        sharing.failures.append(str(exc))
    return _received(entries, sharing, encode, batches)


def _received(
    entries: StoredEntries,
    sharing: Sharing,
    encode: Callable[[Any], str],
    batches: Iterator[list[tuple[int, str]]] | None,
) -> Iterator[tuple[int, str]]:
    done = -1  # the last id the helper sent
    if batches is not None:
        try:
            for batch in batches:
                for url_id, text in batch:
                    done = url_id
                    yield url_id, text
            return
        except HelperFailed as exc:
            sharing.failures.append(str(exc))
    yield from _texts(entries.part(_THEIRS), encode, after=done)


def _texts(
    entries: StoredEntries, encode: Callable[[Any], str], after: int = -1
) -> Iterator[tuple[int, str]]:
    """Each stored URL's id and whole JSON object, for the ids above ``after``."""
    heads: dict[str, str] = {}
    for url_id, entry in entries.numbered():
        if url_id > after:
            yield url_id, "".join(_entry_pieces(entry, encode, heads))


def part_json(job: PartJob, db: str) -> Iterator[list[tuple[int, str]]]:
    """In a helper: the JSON of one part's URLs, with their ids, in batches."""
    store = open_store(db, crawl=False)
    try:
        batch: list[tuple[int, str]] = []
        size = 0
        for url_id, text in _texts(job.entries(store), _encoder()):
            batch.append((url_id, text))
            size += len(text)
            if size >= SHARED_BATCH:
                yield batch
                batch, size = [], 0
        if batch:
            yield batch
    finally:
        store.close()


def _entry_pieces(
    entry: Entry, encode: Callable[[Any], str], heads: dict[str, str]
) -> Iterator[str]:
    """One URL's object, its referrers written one at a time: a page linked from every page
    of a big site has as many."""
    yield encode(_head(entry))[:-1] + ',"referrers":['
    yield from _places(entry.referrers, heads)
    tail = encode(_tail(entry))
    if entry.links is None:
        yield "]," + tail[1:]
        return
    yield "]," + tail[1:-1] + ',"links":['
    yield from _places(entry.links, heads)
    yield "]}"


def entry_dict(entry: Entry) -> dict[str, Any]:
    """One URL's object of the report, whole (for a few URLs: a report's are streamed)."""
    return dict(json.loads("".join(_entry_pieces(entry, _encoder(), {}))))


def render_json(report: Report) -> str:
    return "".join(iter_json(report))
