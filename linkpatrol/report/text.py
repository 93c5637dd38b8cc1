"""The text report: short enough for a cron mail, exact enough to fix every link it names."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from linkpatrol.model import Reason, State, line_label, line_labels
from linkpatrol.report import FLAP_PASSES, Entry, Referrer, Report, archived_words, iso
from linkpatrol.urls import as_shown, relative_to

PLUGIN_LINES = 40  # lines of one plugin's report fields shown; the JSON report has all
# reasons the verdict's own words already give ("HTTP 404", "missing anchor", "certificate
# of example.org expires")
SAID_IN_WORDS = frozenset(
    {
        Reason.HTTP_STATUS,
        Reason.MISSING_ANCHOR,
        Reason.CERT_EXPIRY,
        Reason.MIXED_CONTENT,
        Reason.HTTPS_AVAILABLE,
    }
)
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
    if entry.reason is not None and entry.reason not in SAID_IN_WORDS:
        parts.append(f"kind: {entry.reason.value}")
    if entry.redirect_to:
        parts.append(f"-> {entry.redirect_to}")
    if entry.state is State.BROKEN and entry.reason is not Reason.MISSING_ANCHOR:
        if entry.last_good is None:
            parts.append("never good")
        else:
            parts.append(f"last good {_day(entry.last_good)}")
        if entry.failing_since is not None:
            parts.append(f"failing since {_day(entry.failing_since)}")
    if entry.new:
        parts.append("new")
    if until is not None and entry.flapping:
        parts.append(f"flapping: {entry.flips} changes in the last {FLAP_PASSES} passes")
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
            out.append(f"{shown}:{line_label(lines[0])}")
        else:
            out.append(f"{shown}: lines {line_labels(lines)}")
    return out


def _scalar(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, dict | list)


def _flat(value: Any) -> bool:
    """Shown on one line: a scalar, or a list of scalars."""
    return _is_scalar(value) or (isinstance(value, list) and all(map(_is_scalar, value)))


def _shown(value: Any) -> str:
    """A value on one line: lists of plain values joined, anything deeper as JSON."""
    if isinstance(value, list) and all(map(_is_scalar, value)):
        return ", ".join(_scalar(v) for v in value) or "none"
    if not _is_scalar(value):
        return json.dumps(value, ensure_ascii=False) if value else "none"
    return _scalar(value)


def plugin_lines(fields: Mapping[str, Any]) -> list[tuple[int, str, bool]]:
    """A plugin's report fields for people: (depth, text, is a list item) per line.

    ``key: value`` per field, lists of plain values on one line, nested objects indented;
    an object in a list is one item line of its plain fields, its nested ones below it.
    """
    lines: list[tuple[int, str, bool]] = []

    def field(depth: int, key: str, value: Any, item: bool = False) -> None:
        if _flat(value) or not value:
            lines.append((depth, f"{key}: {_shown(value)}", item))
            return
        lines.append((depth, f"{key}:", item))
        if isinstance(value, dict):
            for k, v in value.items():
                field(depth + 1, str(k), v)
        else:
            items(depth + 1, value)

    def items(depth: int, values: list[Any]) -> None:
        for value in values:
            if not isinstance(value, dict) or not value:
                lines.append((depth, _shown(value), True))
                continue
            plain = [(k, v) for k, v in value.items() if _flat(v)]
            nested = [(k, v) for k, v in value.items() if not _flat(v)]
            if plain:
                lines.append((depth, ", ".join(f"{k}: {_shown(v)}" for k, v in plain), True))
            else:
                key, first = nested.pop(0)
                field(depth, str(key), first, item=True)
            for k, v in nested:
                field(depth + 1, str(k), v)

    for key, value in fields.items():
        field(0, str(key), value)
    return lines


def plugin_text(fields: Mapping[str, Any]) -> list[str]:
    """A plugin's report fields as indented lines: at most ``PLUGIN_LINES``, then how many more."""
    lines = plugin_lines(fields)
    out = [
        "  " * depth + ("- " if item else "") + text for depth, text, item in lines[:PLUGIN_LINES]
    ]
    if len(lines) > PLUGIN_LINES:
        out.append(f"... {len(lines) - PLUGIN_LINES} more lines (--format json has all)")
    return out


def _plugin_sections(report: Report) -> list[str]:
    out = []
    for name, fields in report.plugins.items():
        out.append(f"Plugin {clean(name)}:")
        out.extend(f"  {clean(line)}" for line in plugin_text(fields))
        out.append("")
    return out


def _entry_block(entry: Entry, base: str, by_url: dict[str, Entry], until: float) -> list[str]:
    lines = [f"  {clean(as_shown(entry.url))}", f"    {clean(status_line(entry, until))}"]
    if entry.archived is not None:
        lines.append(f"    {archived_words(entry.archived)}: {clean(entry.archived.url)}")
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
    by_url = report.redirects
    state = "complete" if report.complete else f"INCOMPLETE, stopped by {report.stop_reason}"
    if not report.complete and report.stop_reason is None:
        state = "INCOMPLETE, still running or cut off"
    out = [
        f"linkpatrol {report.version}: pass {report.pass_id} of "
        f"{', '.join(clean(u) for u in report.starts)} ({state})",
    ]
    if flags := report.options.flags():
        out.append(f"Checked with {' '.join(flags)}")
    out.append("")
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
        out.extend(
            f"  {clean(as_shown(e.url))}  ({clean(status_line(e, report.until))})" for e in waiting
        )
        out.append("")
    warnings = report.warnings
    if warnings:
        out.append(f"Warnings ({len(warnings)}):")
        for entry in warnings:
            out.append("")
            out.extend(_entry_block(entry, base, by_url, report.until))
        out.append("")
    figures = report.figures
    if figures.limited:
        out.append(f"Not checked, a limit was reached ({figures.limited}):")
        out.extend(
            f"  {clean(as_shown(e.url))}  ({clean(e.error or '')})" for e in figures.limited_first
        )
        if figures.limited > len(figures.limited_first):
            more = figures.limited - len(figures.limited_first)
            out.append(f"  ... and {more} more (--format json lists all)")
        out.append("")
    if figures.second_looks:
        looked = figures.second_looks
        out.append(f"Failed at first, asked again at the end of the pass ({len(looked)}):")
        out.extend(
            f"  {clean(as_shown(e.url))}  ({clean(status_line(e, report.until))})" for e in looked
        )
        out.append("")
    if report.xref:
        out.append("Cross-reference:")
        for entry in report.entries:
            out.append("")
            out.append(
                f"  {clean(as_shown(entry.url))}  [{entry.action.value}, {entry.state.value}]"
            )
            if entry.referrers:
                out.append("    linked from:")
                out.extend(f"      {clean(r)}" for r in grouped_referrers(entry.referrers, base))
            if entry.links:
                out.append("    links to:")
                out.extend(
                    f"      {clean(relative_to(r.url, base))}"
                    + (f" (line {line_label(r.line)})" if r.line is not None else "")
                    for r in entry.links
                )
        out.append("")
    out.extend(_plugin_sections(report))
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
    if report.reported:
        out.append(f"New: {report.new_said}")
    if (nothing := report.nothing_requested) is not None:
        out.append(f"{nothing}.")
    if s.fetch is not None:
        f = s.fetch
        out.append(
            f"Fetch slots ({f.slots:.0f}): {f.busy:.0%} busy, {f.waiting:.0%} waiting for a "
            f"host's turn, {f.idle:.0%} idle; {f.queue:.0f} URLs queued on average"
        )
        if (advice := f.advice()) is not None:
            out.append(f"  ({advice})")
    if not report.complete and report.stop_reason is not None:
        resume = report.extra.get("resume")
        out.append(
            "The memory keeps what was checked; to resume the pass, run the same command "
            + (f"again:\n  {clean(str(resume))}" if resume else "again.")
        )
    return "\n".join(out) + "\n"
