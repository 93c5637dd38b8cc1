"""One URL's story from the memory: its verdict now, each change of verdict, who links to it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from linkpatrol.model import StoreError, line_field, line_label
from linkpatrol.report import (
    FLAP_PASSES,
    Entry,
    Referrer,
    archived_words,
    entry_of,
    flips,
    iso,
    moment,
)
from linkpatrol.report.json import archived_dict, change_dict
from linkpatrol.report.text import clean, status_line
from linkpatrol.store import Change, ReadMemory, UrlRecord
from linkpatrol.urls import BadURL, canonical


@dataclass(frozen=True, slots=True)
class UrlHistory:
    record: UrlRecord
    changes: list[Change]
    links: list[Referrer]  # what the page held when last parsed (empty for non-pages)
    recent: frozenset[int] = frozenset()  # the memory's last FLAP_PASSES passes

    @property
    def entry(self) -> Entry:
        """The URL as a report entry, so the renderers' wording serves here too."""
        entry = entry_of(self.record)
        entry.changes = self.changes
        entry.flips = flips(self.changes, self.recent)
        return entry


def load_history(store: ReadMemory, url: str) -> UrlHistory:
    """The history of ``url`` (any spelling of it); StoreError when the memory never saw it."""
    try:
        key = canonical(url)
    except BadURL as exc:
        raise StoreError(f"{url}: not a URL ({exc})") from None
    record = store.url_record(key)
    if record is None:
        raise StoreError(f"{store.location}: {key} is not in the memory")
    changes = store.changes([record.id]).get(record.id, [])
    links = store.links_from(key)
    recent = frozenset(p.id for p in store.passes(FLAP_PASSES, like=record.pass_id))
    return UrlHistory(record, changes, links, recent)


def render_history_text(history: UrlHistory) -> str:
    r = history.record
    entry = history.entry
    out = [clean(r.url), f"  now: {clean(status_line(entry))}"]
    if r.archived is not None:
        out.append(f"  {archived_words(r.archived)}: {clean(r.archived.url)}")
    out.append(
        f"  first seen {moment(r.first_seen)}, last checked {moment(r.last_checked)}, "
        f"last good {moment(r.last_good)} (UTC)"
    )
    heading = f"  changes of verdict ({len(history.changes)}"
    if entry.flapping:
        heading += f"; flapping: {entry.flips} in the last {FLAP_PASSES} passes"
    out.append(heading + "):")
    for change in history.changes:
        detail = change.error or (f"HTTP {change.http_status}" if change.http_status else "")
        where = f"pass {change.pass_id}" if change.pass_id is not None else ""
        out.append(
            f"    {moment(change.at)}  {where:<8} {change.state.value:<9} {clean(detail)}".rstrip()
        )
    if not history.changes:
        out.append("    none recorded")
    if r.referrers:
        out.append("  linked from:")
        out.extend(
            f"    {clean(page)}" + (f":{line_label(line)}" if line is not None else " (redirect)")
            for page, line in r.referrers
        )
    if history.links:
        out.append(f"  links to ({len(history.links)}):")
        out.extend(
            f"    {clean(link.url)}"
            + (f" (line {line_label(link.line)})" if link.line is not None else "")
            for link in history.links
        )
    return "\n".join(out) + "\n"


def history_dict(history: UrlHistory) -> dict[str, Any]:
    """The history as the JSON the command prints."""
    r = history.record
    return {
        "url": r.url,
        "action": r.action.value,
        "state": r.state.value,
        "http_status": r.http_status,
        "error": r.error,
        "content_type": r.content_type,
        "redirect_to": r.redirect_to,
        "first_seen": iso(r.first_seen),
        "last_checked": iso(r.last_checked),
        "last_good": iso(r.last_good),
        "failing_since": iso(r.failing_since),
        "response_ms": None if r.response_ms is None else round(r.response_ms, 1),
        "archived": None if r.archived is None else archived_dict(r.archived),
        "changes": [change_dict(c) for c in history.changes],
        "referrers": [{"url": page, **line_field(line)} for page, line in r.referrers],
        "links": [{"url": link.url, **line_field(link.line)} for link in history.links],
    }


def render_history_json(history: UrlHistory) -> str:
    return json.dumps(history_dict(history), ensure_ascii=False, indent=1) + "\n"
