"""The Markdown report: a summary and a table of problems, for a PR comment or a CI job summary.

Crawled text can never become Markdown: URLs are shown as code spans (so nothing, not even a
renderer's autolinking, makes them links), other text has every character that could start a
link, an image, HTML, a code span, emphasis or a new table cell backslash-escaped, and line
breaks become spaces. The table stops after ``MAX_ROWS`` links and says how many it left out.
"""

from __future__ import annotations

import re

from linkpatrol.model import State
from linkpatrol.report import Entry, Report, archived_words
from linkpatrol.report.text import (
    PLUGIN_LINES,
    clean,
    grouped_referrers,
    plugin_lines,
    status_line,
)
from linkpatrol.urls import as_shown

MAX_ROWS = 50  # links in the table; GitHub comments end at 65,536 characters
MAX_REFERRERS = 10  # referring pages named in one cell

_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~&$])")
_BREAKS = re.compile(r"[\r\n\t\u2028\u2029]+")
# what cannot stand inside a code span in a table cell, as the URL encoding of it
_IN_CODE = {"`": "%60", "|": "%7C", "\r": "%0D", "\n": "%0A"}


def escape(text: str) -> str:
    """Crawled text as literal Markdown text that stays inside its table cell."""
    return _SPECIAL.sub(r"\\\1", _BREAKS.sub(" ", clean(text)))


def code(url: str) -> str:
    """A URL (or page:line) as a code span: shown as is, never a link, never leaves its cell."""
    for char, encoded in _IN_CODE.items():
        url = url.replace(char, encoded)
    return f"`{clean(url)}`"


def _linked_from(entry: Entry, base: str) -> str:
    pages = grouped_referrers(entry.referrers, base)
    shown = [code(page) for page in pages[:MAX_REFERRERS]]
    if len(pages) > MAX_REFERRERS:
        shown.append(f"and {len(pages) - MAX_REFERRERS} more pages")
    return "<br>".join(shown) if shown else "—"


def _headline(report: Report) -> str:
    broken, warnings = len(report.broken), len(report.warnings)
    if report.failing:
        mark = "❌"
    elif broken or warnings or report.nothing_requested is not None:  # --fail-on new: old ones
        mark = "⚠️"
    else:
        mark = "✅"
    return f"### {mark} linkpatrol: {report.counted}"


def _plugin_sections(report: Report) -> list[str]:
    """Each plugin's report fields as a nested list; every line a code span, never markup."""
    out = []
    for name, fields in report.plugins.items():
        out += ["", f"#### Plugin {code(name)}", ""]
        lines = plugin_lines(fields)
        out.extend(f"{'  ' * depth}- {code(text)}" for depth, text, _ in lines[:PLUGIN_LINES])
        if len(lines) > PLUGIN_LINES:
            out.append(f"- …and {len(lines) - PLUGIN_LINES} more lines (`--format json` has all)")
    return out


def render_markdown(report: Report) -> str:
    base = report.start_urls[0] if report.start_urls else ""
    s = report.summary
    if report.complete:
        state = "complete"
    else:
        state = f"**incomplete**, stopped by {escape(report.stop_reason or 'an interruption')}"
    starts = ", ".join(code(url) for url in report.starts)
    out = [
        _headline(report),
        "",
        f"Pass {report.pass_id} of {starts} ({state}): {s.urls} URLs seen, "
        f"{s.requested} requested, {s.parsed} pages parsed, {s.requests} requests "
        f"in {s.elapsed:.1f} s.",
    ]
    if (nothing := report.nothing_requested) is not None:
        out.append(f"**{escape(nothing)}.**")
    waiting = len(report.not_yet_reported)
    if waiting:
        out.append(f"{waiting} more failing, not reported yet (see `--report-after`).")
    if report.reported:
        shown = " (only these are listed: --only-new)" if report.options.only_new else ""
        out.append(f"{escape(report.new_said)}{shown}.")
    rows = report.listed
    if rows:
        out += ["", "| Link | Problem | Linked from (page:line) |", "|---|---|---|"]
        for entry in rows[:MAX_ROWS]:
            problem = escape(status_line(entry))
            if entry.new:
                problem = f"🆕 {problem}"
            if entry.state is State.WARNING or entry.state is State.REDIRECT:
                problem = f"⚠️ {problem}"
            if entry.archived is not None:
                problem += f"<br>{archived_words(entry.archived)}: {code(entry.archived.url)}"
            out.append(f"| {code(as_shown(entry.url))} | {problem} | {_linked_from(entry, base)} |")
        if len(rows) > MAX_ROWS:
            out += [
                "",
                f"…and {len(rows) - MAX_ROWS} more not shown here "
                "(`linkpatrol report --format text`, `csv` or `json` lists all).",
            ]
    out += _plugin_sections(report)
    return "\n".join(out) + "\n"
