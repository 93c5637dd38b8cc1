"""The text report: short enough for a cron mail, exact enough to fix every link it names."""

from __future__ import annotations

import re
from collections.abc import Iterable

from linkpatrol.model import State
from linkpatrol.report import FLAP_DAYS, FLAPPING, MISSING_ANCHOR, Entry, Referrer, Report, iso
from linkpatrol.urls import relative_to

LIMITED_SHOWN = 100  # URLs left out by a limit listed in the text report
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def clean(text: str) -> str:
    """Crawled text with control characters and escape sequences made harmless."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _day(timestamp: float | None) -> str:
    stamp = iso(timestamp)
    return stamp[:10] if stamp else "never"


def status_line(entry: Entry, until: float | None = None) -> str:
    """The verdict in one line; ``until`` (the report's moment) adds how often it flapped."""
    parts = [entry.state.value]
    detail = entry.error or (f"HTTP {entry.http_status}" if entry.http_status else None)
    if detail:
        parts[0] += f": {detail}"
    if entry.redirect_to:
        parts.append(f"-> {entry.redirect_to}")
    if entry.state is State.BROKEN and entry.error != MISSING_ANCHOR:
        if entry.last_good is None:
            parts.append("never good")
        else:
            parts.append(f"last good {_day(entry.last_good)}")
        if entry.failing_since is not None:
            parts.append(f"failing since {_day(entry.failing_since)}")
    if entry.new:
        parts.append("new since the last pass")
    if until is not None and (flaps := entry.flaps(until)) >= FLAPPING:
        parts.append(f"flapping: {flaps} changes in {FLAP_DAYS:g} days")
    return " · ".join(parts)


def grouped_referrers(referrers: Iterable[Referrer], base: str) -> list[str]:
    """'page: lines 3, 9' per referring page, pages written relative to the site."""
    pages: dict[str, list[int]] = {}
    for ref in referrers:
        lines = pages.setdefault(ref.url, [])
        if ref.line is not None:
            lines.append(ref.line)
    out = []
    for page, lines in pages.items():
        shown = relative_to(page, base)
        if not lines:
            out.append(f"{shown} (redirect)")
        elif len(lines) == 1:
            out.append(f"{shown}:{lines[0]}")
        else:
            out.append(f"{shown}: lines {', '.join(str(n) for n in sorted(lines))}")
    return out


def _entry_block(entry: Entry, base: str, by_url: dict[str, Entry], until: float) -> list[str]:
    lines = [f"  {clean(entry.url)}", f"    {clean(status_line(entry, until))}"]
    referrers = grouped_referrers(entry.referrers, base)
    redirected_from = [by_url[r.url] for r in entry.referrers if r.line is None and r.url in by_url]
    for source in redirected_from:
        for page in grouped_referrers(source.referrers, base):
            referrers.append(f"{page} (via {relative_to(source.url, base)})")
    if referrers:
        lines.append("    linked from:")
        lines.extend(f"      {clean(r)}" for r in referrers)
    return lines


def render_text(report: Report) -> str:
    base = report.start_urls[0] if report.start_urls else ""
    by_url = {e.url: e for e in report.entries if e.state is State.REDIRECT}
    state = "complete" if report.complete else f"INCOMPLETE, stopped by {report.stop_reason}"
    if not report.complete and report.stop_reason is None:
        state = "INCOMPLETE, still running or cut off"
    out = [
        f"linkpatrol {report.version}: pass {report.pass_id} of "
        f"{', '.join(clean(u) for u in report.start_urls)} ({state})",
        "",
    ]
    broken = report.broken
    if broken:
        out.append(f"Broken links ({len(broken)}):")
        for entry in broken:
            out.append("")
            out.extend(_entry_block(entry, base, by_url, report.until))
        out.append("")
    waiting = report.not_yet_reported
    if waiting:
        out.append(f"Failing, not reported yet ({len(waiting)}), see --report-after:")
        out.extend(f"  {clean(e.url)}  ({clean(status_line(e, report.until))})" for e in waiting)
        out.append("")
    warnings = report.warnings
    if warnings:
        out.append(f"Warnings ({len(warnings)}):")
        for entry in warnings:
            out.append("")
            out.extend(_entry_block(entry, base, by_url, report.until))
        out.append("")
    limited = [e for e in report.entries if e.state is State.UNCHECKED and e.error]
    if limited:
        out.append(f"Not checked, a limit was reached ({len(limited)}):")
        out.extend(f"  {clean(e.url)}  ({clean(e.error or '')})" for e in limited[:LIMITED_SHOWN])
        if len(limited) > LIMITED_SHOWN:
            out.append(f"  ... and {len(limited) - LIMITED_SHOWN} more (--format json lists all)")
        out.append("")
    if report.xref:
        out.append("Cross-reference:")
        for entry in report.entries:
            out.append("")
            out.append(f"  {clean(entry.url)}  [{entry.action.value}, {entry.state.value}]")
            if entry.referrers:
                out.append("    linked from:")
                out.extend(f"      {clean(r)}" for r in grouped_referrers(entry.referrers, base))
            if entry.links:
                out.append("    links to:")
                out.extend(
                    f"      {clean(relative_to(r.url, base))}"
                    + (f" (line {r.line})" if r.line is not None else "")
                    for r in entry.links
                )
        out.append("")
    s = report.summary
    warn_word = "warning" if s.warnings == 1 else "warnings"
    broken_text = f"{s.broken} broken"
    if s.reportable != s.broken:
        broken_text += f" ({s.reportable} reported)"
    out.append(
        f"Summary: {s.urls} URLs seen, {s.requested} requested, {s.parsed} parsed, "
        f"{broken_text}, {s.warnings} {warn_word}, {s.requests} requests, "
        f"{s.elapsed:.1f} s"
    )
    if s.fetch is not None:
        f = s.fetch
        out.append(
            f"Fetch slots ({f.slots:.0f}): {f.busy:.0%} busy, {f.waiting:.0%} waiting for a "
            f"host's turn, {f.idle:.0%} idle; {f.queue:.0f} URLs queued on average"
        )
        if (advice := f.advice()) is not None:
            out.append(f"  ({advice})")
    return "\n".join(out) + "\n"
