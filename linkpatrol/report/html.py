"""The HTML report: one self-contained file, to open offline from a mail attachment.

The file holds a summary of the pass, pictures drawn here as inline SVG (verdicts, response
times, the pages holding the most broken links, broken links over the last passes) and a
table of the broken links and warnings with every page and line linking to them. The table
is complete and sorted worst first in the HTML itself; an inlined script adds sorting by
column and filtering by text and verdict. Nothing is fetched: no external script, style,
font or image.

Safety, since every URL and error text comes from the crawled web:

- all crawled text goes through :func:`text` (control characters made visible, then
  ``html.escape``), and every attribute value is quoted;
- only ``http``/``https`` URLs of a plain shape become links (:func:`link`); anything else,
  ``javascript:`` and ``data:`` included, is shown as text;
- no crawled text enters the script, which reads what it needs from ``data-*`` attributes;
- a Content-Security-Policy ``<meta>`` allows the one inline script and the one inline style
  by their SHA-256 hashes and nothing else, so even an escaping bug could not run anything.

Size: the document holds the reported URLs and those failing but not reported yet, never
every good URL; the charts are counts. A row names at most ``MAX_REFERRERS`` referring pages.

Reuse: the pieces are separate functions over the :class:`~linkpatrol.report.Report`, each
returning a fragment of safe HTML: :func:`summary_section`, :func:`verdict_chart`,
:func:`response_time_chart`, :func:`top_pages_chart`, :func:`trend_chart`,
:func:`charts_section`, :func:`problems_table`, and the three sections together as
:func:`report_sections` (also named ``dashboard_sections``). :func:`stylesheet`,
:func:`script` and :func:`content_security_policy` are for the page around them, so that the
live dashboard (``linkpatrol serve``) composes its pages from the same pieces. The fragments
hold no inline ``style`` attribute and no inline event handler, so they work under a strict
CSP; the sorting and filtering script looks for ``table#problems``.
"""

from __future__ import annotations

import base64
import hashlib
import html
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

from linkpatrol.model import Reason, State, line_label, line_labels
from linkpatrol.report import (
    FLAP_PASSES,
    Entry,
    Report,
    archived_words,
    iso,
    moment,
    recent_passes,
    recent_verdicts,
)
from linkpatrol.report.text import SAID_IN_WORDS, clean, plugin_text
from linkpatrol.urls import as_shown, relative_to

MAX_REFERRERS = 20  # referring pages named in one table row; the rest are counted
TOP_PAGES = 10  # bars in the "pages holding the most broken links" chart
LABEL_CHARS = 36  # a page's label in that chart, shortened in the middle beyond this

# Okabe-Ito colours, told apart with every common colour-vision deficiency
STATE_COLOURS = {
    State.OK: "#009E73",
    State.BROKEN: "#D55E00",
    State.WARNING: "#E69F00",
    State.REDIRECT: "#56B4E9",
    State.DISALLOWED: "#CC79A7",
    State.UNCHECKED: "#999999",
}
BLUE = "#0072B2"

# response-time buckets: upper bound in milliseconds, range, unit; about 1-2.5-5 per decade
TIME_BUCKETS: tuple[tuple[float, str, str], ...] = (
    (50, "<50", "ms"),
    (100, "50–100", "ms"),
    (250, "100–250", "ms"),
    (500, "250–500", "ms"),
    (1000, "0.5–1", "s"),
    (2500, "1–2.5", "s"),
    (5000, "2.5–5", "s"),
    (10000, "5–10", "s"),
    (math.inf, "≥10", "s"),
)
_UNITS = {"ms": "milliseconds", "s": "seconds"}

# what a link may look like to become an href: http(s), and nothing a canonical URL encodes
_WEB_URL = re.compile(r"https?://[^\s\"<>\\^`{|}\x00-\x1f\x7f]+\Z", re.IGNORECASE)


# ---- text and links -----------------------------------------------------------------------


def text(value: object) -> str:
    """Any text for HTML content or a quoted attribute: control characters shown, escaped."""
    return html.escape(clean(str(value)), quote=True)


def is_web_url(url: str) -> bool:
    """Whether a crawled URL may be an href: http or https, in the plain canonical shape."""
    return _WEB_URL.match(url) is not None


def link(url: str, label: str | None = None, css: str = "") -> str:
    """The URL as a link if it is a web URL, else as text; ``label`` is shown instead of it."""
    shown = text(url if label is None else label)
    cls = f' class="{css}"' if css else ""
    if not is_web_url(url):
        return f'<span{cls} title="{text(url)}">{shown}</span>'
    return f'<a{cls} href="{text(url)}" title="{text(url)}" rel="noopener noreferrer">{shown}</a>'


def _number(n: int) -> str:
    return f"{n:,}"


def _plural(n: int, word: str, words: str | None = None) -> str:
    return f"{_number(n)} {word if n == 1 else (words or word + 's')}"


def _moment(timestamp: float | None) -> str:
    return "—" if timestamp is None else f"{moment(timestamp)} UTC"


def _time(timestamp: float | None, day_only: bool = False) -> str:
    """A <time> element, the day or the moment in UTC, with the exact moment as its title."""
    stamp = iso(timestamp)
    if stamp is None:
        return "—"
    shown = stamp[:10] if day_only else _moment(timestamp)
    return f'<time datetime="{stamp}" title="{_moment(timestamp)}">{shown}</time>'


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def milliseconds(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def shorten(label: str, limit: int = LABEL_CHARS) -> str:
    """A label cut in the middle to at most ``limit`` characters."""
    if len(label) <= limit:
        return label
    head = (limit - 1) * 3 // 5
    return label[:head] + "…" + label[len(label) - (limit - 1 - head) :]


# ---- who links to a URL ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Holder:
    """A page holding a link to a URL: its lines, and the redirect the link goes through."""

    page: str
    lines: tuple[int, ...]
    via: str | None = None


def _grouped(entry: Entry) -> dict[str, list[int]]:
    pages: dict[str, list[int]] = {}
    for ref in entry.referrers:
        lines = pages.setdefault(ref.url, [])
        if ref.line is not None:
            lines.append(ref.line)
    return pages


def holders(entry: Entry, redirects: dict[str, Entry]) -> list[Holder]:
    """The pages linking to ``entry``, and through a redirect those linking to the redirect."""
    out: list[Holder] = []
    for page, lines in _grouped(entry).items():
        source = redirects.get(page) if not lines else None
        if source is None or not source.referrers:
            out.append(Holder(page, tuple(sorted(lines))))
            continue
        for outer, outer_lines in _grouped(source).items():
            out.append(Holder(outer, tuple(sorted(outer_lines)), via=page))
    return out


def _redirects(report: Report) -> dict[str, Entry]:
    return report.redirects


# ---- summary -------------------------------------------------------------------------------


def headline(report: Report) -> str:
    """The verdict in a few words: '4 broken links, 1 warning' or 'No broken links'."""
    broken, warnings = len(report.broken), len(report.warnings)
    if not broken and not warnings:
        return "No broken links"
    parts = [_plural(broken, "broken link")] if broken else ["No broken links"]
    if warnings:
        parts.append(_plural(warnings, "warning"))
    return ", ".join(parts)


def _stat(key: str, label: str, value: str) -> str:
    return f'<div class="stat stat-{key}" data-stat="{key}"><dt>{label}</dt><dd>{value}</dd></div>'


def summary_section(report: Report) -> str:
    """The headline, when the pass ran and whether it is complete, and the counts."""
    s = report.summary
    broken, warnings = len(report.broken), len(report.warnings)
    pills = []
    if broken:
        pills.append(f'<span class="pill pill-broken">{_plural(broken, "broken link")}</span>')
    if warnings:
        pills.append(f'<span class="pill pill-warning">{_plural(warnings, "warning")}</span>')
    if not pills:
        pills.append('<span class="pill pill-ok">No broken links</span>')
    waiting = len(report.not_yet_reported)
    if waiting:
        pills.append(
            f'<span class="pill pill-pending">{_number(waiting)} failing, not reported yet</span>'
        )
    starts = ", ".join(link(value, css="url") for value in report.starts) or "—"
    if report.complete:
        state = '<span data-complete="true">complete</span>'
    else:
        state = '<strong data-complete="false">incomplete</strong>'
    ran = f"started {_time(report.started_at)}"
    if report.finished_at is not None:
        verb = "finished" if report.complete else "stopped"
        ran += f", {verb} {_time(report.finished_at)}"
    out = [
        '<section class="summary report-head" id="summary" aria-labelledby="summary-title">',
        '<div class="brand">linkpatrol report</div>',
        f'<h1 id="summary-title">Links of {starts}</h1>',
        f'<p class="headline">{"".join(pills)}</p>',
        f'<p class="meta">Pass {report.pass_id} · {ran} · {state}</p>',
    ]
    if report.reported:
        said = text(report.new_said[:1].upper() + report.new_said[1:])
        out.append(f'<p class="meta" data-new="{len(report.new)}">{said}.</p>')
    if looked := len(report.figures.second_looks):
        out.append(
            f'<p class="meta" data-second-looks="{looked}">{_plural(looked, "URL")} failed '
            f"at first and {'was' if looked == 1 else 'were'} asked again at the end of the "
            "pass (--second-look).</p>"
        )
    if not report.complete:
        reason = report.stop_reason
        why = f"stopped by {text(reason)}" if reason else "still running, or cut off"
        out.append(
            f'<p class="incomplete" role="status"><strong>This pass is incomplete</strong>: '
            f"{why}. The next <code>linkpatrol check</code> with the same start URLs "
            "resumes it; until then some URLs have no verdict.</p>"
        )
    limited = report.figures.limited
    if limited:
        out.append(
            f'<p class="meta">{_plural(limited, "URL")} not checked: a limit was reached '
            "(<code>--max-urls</code>, <code>--max-depth</code> or <code>--max-similar</code>).</p>"
        )
    out.append("</section>")
    broken_value = _number(s.broken)
    if s.reportable != s.broken:
        broken_value += f" <small>{_number(s.reportable)} reported</small>"
    out += [
        '<dl class="stats" aria-label="Summary of the pass">',
        _stat("urls", "URLs seen", _number(s.urls)),
        _stat("requested", "Requested", _number(s.requested)),
        _stat("parsed", "Pages parsed", _number(s.parsed)),
        _stat("broken", "Broken", broken_value),
        _stat("warnings", "Warnings", _number(s.warnings)),
        _stat("requests", "Requests", _number(s.requests)),
        _stat("elapsed", "Elapsed", text(duration(s.elapsed))),
        "</dl>",
    ]
    return "\n".join(out)


# ---- charts --------------------------------------------------------------------------------


def _svg(ident: str, title: str, desc: str, width: int, height: float, body: Iterable[str]) -> str:
    """An accessible inline SVG picture: role img, a label, and a title and description."""
    return "\n".join(
        [
            f'<svg class="chart" id="{ident}" role="img" aria-label="{text(title)}. {text(desc)}" '
            f'viewBox="0 0 {width} {height:g}" width="{width}" height="{height:g}" '
            'xmlns="http://www.w3.org/2000/svg">',
            f"<title>{text(title)}</title>",
            f"<desc>{text(desc)}</desc>",
            *body,
            "</svg>",
        ]
    )


def _figure(key: str, title: str, caption: str, picture: str) -> str:
    return (
        f'<figure class="chart-card" data-chart="{key}">'
        f"<figcaption><h3>{text(title)}</h3><p>{caption}</p></figcaption>\n{picture}\n</figure>"
    )


def _nothing(key: str, title: str, message: str) -> str:
    return _figure(key, title, "", f'<p class="none">{text(message)}</p>')


def _bar_rows(
    ident: str,
    title: str,
    desc: str,
    rows: Sequence[tuple[str, str, int, str]],
    label_width: int,
    total: int | None = None,
) -> str:
    """Horizontal bars: (label, full name for the tooltip, value, colour) per row."""
    width, row_height, value_width = 480, 26, 74
    scale = max((value for _, _, value, _ in rows), default=0) or 1
    span = width - label_width - value_width
    body = []
    for n, (label, full, value, colour) in enumerate(rows):
        y = 6 + n * row_height
        bar = 0.0 if value == 0 else max(2.0, span * value / scale)
        share = f" ({value / total:.0%})" if total else ""
        body.append(
            f'<g class="bar" data-label="{text(full)}" data-value="{value}">'
            f"<title>{text(full)}: {_number(value)}{share}</title>"
            f'<text class="label" x="{label_width - 8}" y="{y + 15}" text-anchor="end">'
            f"{text(label)}</text>"
            f'<rect x="{label_width}" y="{y + 3}" width="{bar:.1f}" height="{row_height - 8}" '
            f'rx="2" fill="{colour}"/>'
            f'<text class="value" x="{label_width + bar + 6:.1f}" y="{y + 15}">'
            f"{_number(value)}</text>"
            + (
                f'<text class="muted" x="{width}" y="{y + 15}" text-anchor="end">'
                f"{value / total:.0%}</text>"
                if total
                else ""
            )
            + "</g>"
        )
    body.insert(
        0,
        f'<line class="baseline" x1="{label_width}" y1="4" x2="{label_width}" '
        f'y2="{8 + len(rows) * row_height}"/>',
    )
    return _svg(ident, title, desc, width, 12 + len(rows) * row_height, body)


def verdict_counts(report: Report) -> dict[State, int]:
    """URLs of the pass per verdict, every verdict named (0 where none)."""
    counts = report.figures.states
    return {state: counts.get(state, 0) for state in State}


def verdict_chart(report: Report) -> str:
    counts = verdict_counts(report)
    total = sum(counts.values())
    desc = ", ".join(f"{state.value} {_number(n)}" for state, n in counts.items())
    rows = [(state.value, state.value, n, STATE_COLOURS[state]) for state, n in counts.items()]
    picture = _bar_rows(
        "chart-verdicts", "URLs per verdict", desc, rows, label_width=92, total=total
    )
    return _figure("verdicts", "Verdicts", f"{_plural(total, 'URL')} in this pass", picture)


def response_times(report: Report) -> list[float]:
    return sorted(report.figures.response_ms)


def time_buckets(times: Iterable[float]) -> list[tuple[str, int]]:
    """How many response times fall in each of ``TIME_BUCKETS``, as ('50–100 ms', count)."""
    counts = [0] * len(TIME_BUCKETS)
    for ms in times:
        counts[next(i for i, (upper, _, _) in enumerate(TIME_BUCKETS) if ms < upper)] += 1
    return [(f"{span} {unit}", n) for (_, span, unit), n in zip(TIME_BUCKETS, counts, strict=True)]


def _percentile(ordered: Sequence[float], share: float) -> float:
    return ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)]


def response_time_chart(report: Report) -> str:
    title = "Response times"
    times = response_times(report)
    if not times:
        return _nothing("times", title, "No response times recorded in this pass.")
    buckets = time_buckets(times)
    width, height, left, top, bottom = 480, 200, 8, 22, 160
    slot = (width - left) / len(buckets)
    scale = max(n for _, n in buckets) or 1
    body = [f'<line class="baseline" x1="{left}" y1="{bottom}" x2="{width}" y2="{bottom}"/>']
    for i, (label, n) in enumerate(buckets):
        x = left + i * slot
        bar = 0.0 if n == 0 else max(2.0, (bottom - top) * n / scale)
        middle = x + slot / 2
        body.append(
            f'<g class="bar" data-label="{text(label)}" data-value="{n}">'
            f"<title>{text(label)}: {_plural(n, 'URL')}</title>"
            f'<rect x="{x + 4:.1f}" y="{bottom - bar:.1f}" width="{slot - 8:.1f}" '
            f'height="{bar:.1f}" rx="2" fill="{BLUE}"/>'
            f'<text class="value" x="{middle:.1f}" y="{bottom - bar - 5:.1f}" '
            f'text-anchor="middle">{_number(n)}</text>'
            f'<text class="muted" x="{middle:.1f}" y="{bottom + 16}" text-anchor="middle">'
            f"{text(TIME_BUCKETS[i][1])}</text></g>"
        )
    for unit, name in _UNITS.items():  # a bracket under the buckets of each unit, named
        members = [i for i, bucket in enumerate(TIME_BUCKETS) if bucket[2] == unit]
        x1, x2 = left + members[0] * slot + 6, left + (members[-1] + 1) * slot - 6
        body.append(
            f'<g class="axis"><path class="baseline" fill="none" d="M{x1:.1f},{bottom + 23} '
            f'v4 H{x2:.1f} v-4"/><text x="{(x1 + x2) / 2:.1f}" y="{bottom + 39}" '
            f'text-anchor="middle">{name}</text></g>'
        )
    median, p95 = _percentile(times, 0.5), _percentile(times, 0.95)
    caption = (
        f"{_plural(len(times), 'URL')} timed · median {milliseconds(median)} · "
        f"95th percentile {milliseconds(p95)}"
    )
    desc = "; ".join(f"{label}: {n}" for label, n in buckets)
    picture = _svg("chart-times", "Response times (histogram)", desc, width, height, body)
    return _figure("times", title, text(caption), picture)


def pages_with_most_broken(report: Report, limit: int = TOP_PAGES) -> list[tuple[str, int]]:
    """The pages holding links to the most reported broken URLs, most first, as (page, count)."""
    redirects = _redirects(report)
    counts: Counter[str] = Counter()
    for entry in report.broken:
        counts.update({holder.page for holder in holders(entry, redirects)})
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]


def top_pages_chart(report: Report, limit: int = TOP_PAGES) -> str:
    title = "Pages with the most broken links"
    top = pages_with_most_broken(report, limit)
    if not top:
        return _nothing("pages", title, "No page holds a reported broken link.")
    base = report.start_urls[0] if report.start_urls else ""
    rows = [
        (shorten(relative_to(page, base)), page, n, STATE_COLOURS[State.BROKEN]) for page, n in top
    ]
    desc = "; ".join(f"{page}: {n}" for page, n in top)
    picture = _bar_rows("chart-pages", title, desc, rows, label_width=250)
    caption = f"broken links each page holds; the top {len(top)}" if len(top) > 1 else ""
    return _figure("pages", title, text(caption), picture)


def trend_chart(report: Report) -> str:
    """Broken links and warnings over the last passes; empty when fewer than two are counted."""
    passes = [p for p in report.passes if p.broken is not None]
    if len(passes) < 2:
        return ""
    title = "Broken links over the last passes"
    width, height, left, right, top, bottom = 480, 210, 34, 18, 22, 168
    highest = max(max(p.broken or 0, p.warnings or 0) for p in passes)
    step = _nice_step(highest)
    ceiling = max(step, math.ceil(highest / step) * step)
    span = (width - left - right) / (len(passes) - 1)

    def x(i: int) -> float:
        return left + i * span

    def y(value: int) -> float:
        return bottom - (bottom - top) * value / ceiling

    body = []
    for tick in range(0, ceiling + 1, step):
        body.append(
            f'<g class="axis"><line class="grid" x1="{left}" y1="{y(tick):.1f}" '
            f'x2="{width - right}" y2="{y(tick):.1f}"/>'
            f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">'
            f"{_number(tick)}</text></g>"
        )
    every = max(1, math.ceil(len(passes) / 10))
    for i, p in enumerate(passes):
        if i % every == 0 or i == len(passes) - 1:
            body.append(
                f'<g class="axis"><title>pass {p.id}, {_moment(p.started_at)}</title>'
                f'<text x="{x(i):.1f}" y="{bottom + 18}" text-anchor="middle">#{p.id}</text></g>'
            )
    body.append(
        f'<text class="muted" x="{(left + width - right) / 2:.1f}" y="{bottom + 36}" '
        'text-anchor="middle">pass</text>'
    )
    series = (
        ("broken", STATE_COLOURS[State.BROKEN], "", [p.broken or 0 for p in passes]),
        ("warnings", "#B07A00", ' stroke-dasharray="5 4"', [p.warnings or 0 for p in passes]),
    )
    for key, colour, dash, values in series:
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
        body.append(
            f'<g class="series" data-series="{key}"><polyline points="{points}" fill="none" '
            f'stroke="{colour}" stroke-width="2"{dash}/>'
        )
        for i, (p, value) in enumerate(zip(passes, values, strict=True)):
            cx, cy = x(i), y(value)
            marker = (
                f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="{colour}"/>'
                if key == "broken"
                else f'<rect x="{cx - 3.5:.1f}" y="{cy - 3.5:.1f}" width="7" height="7" '
                f'fill="#fff" stroke="{colour}" stroke-width="2"/>'
            )
            above = key == "broken" or cy + 16 > bottom
            label_y = cy - 8 if above else cy + 16
            body.append(
                f'<g class="point" data-pass="{p.id}" data-value="{value}">'
                f"<title>pass {p.id}: {_plural(value, key[:-1] if value == 1 else key, key)}"
                f"</title>{marker}"
                f'<text class="value" x="{cx:.1f}" y="{label_y:.1f}" text-anchor="middle" '
                f'fill="{colour}">{_number(value)}</text></g>'
            )
        body.append("</g>")
    body.append(
        f'<g class="legend"><circle cx="{left + 6}" cy="8" r="4" '
        f'fill="{STATE_COLOURS[State.BROKEN]}"/><text x="{left + 14}" y="12">broken</text>'
        f'<rect x="{left + 70}" y="4.5" width="7" height="7" fill="#fff" stroke="#B07A00" '
        f'stroke-width="2"/><text x="{left + 82}" y="12">warnings (dashed)</text></g>'
    )
    desc = "; ".join(f"pass {p.id}: {p.broken} broken, {p.warnings} warnings" for p in passes)
    picture = _svg("chart-trend", title, desc, width, height, body)
    caption = f"the last {len(passes)} passes with counts"
    return _figure("trend", title, text(caption), picture)


def _nice_step(highest: int) -> int:
    """A round gridline step giving at most about four gridlines up to ``highest``."""
    step = 1
    while highest / step > 4:
        for factor in (2, 5, 10):
            if highest / (step * factor) <= 4:
                return step * factor
        step *= 10
    return step


def charts_section(report: Report) -> str:
    pictures = [
        verdict_chart(report),
        response_time_chart(report),
        top_pages_chart(report),
        trend_chart(report),
    ]
    return "\n".join(
        [
            '<section class="charts" id="charts" aria-label="Pictures of the pass">',
            *(p for p in pictures if p),
            "</section>",
        ]
    )


# ---- the table -----------------------------------------------------------------------------

_VERDICT_LABEL = {
    "broken": "broken",
    "pending": "not reported yet",
    "warning": "warning",
    "redirect": "redirect",
}


def problem_rows(report: Report) -> list[tuple[str, Entry]]:
    """(verdict key, entry) for every row of the table, worst first."""
    rows = [("broken", e) for e in report.broken]
    rows += [("pending", e) for e in report.not_yet_reported]
    rows += [("redirect" if e.state is State.REDIRECT else "warning", e) for e in report.warnings]
    return rows


def _status_cell(entry: Entry) -> str:
    status = entry.http_status
    shown = str(status) if status else "—"
    details = []
    if entry.error and entry.reason is not Reason.HTTP_STATUS:
        details.append(f'<span class="detail">{text(entry.error)}</span>')
    if entry.reason is not None and entry.reason not in SAID_IN_WORDS:
        details.append(f'<span class="reason">{text(entry.reason.value)}</span>')
    if entry.redirect_to:
        details.append(f'<span class="detail">→ {link(entry.redirect_to, css="url")}</span>')
    tip = f' title="Content-Type: {text(entry.content_type)}"' if entry.content_type else ""
    return f'<td class="num status" data-sort="{status or ""}"{tip}>{shown}{"".join(details)}</td>'


def _since_cell(entry: Entry) -> str:
    since = entry.failing_since
    stamp = "" if since is None else f"{since:.3f}"
    if entry.last_good is None:
        good = "never good"
    else:
        good = f"last good {_time(entry.last_good, day_only=True)}"
    if entry.archived is not None:
        copy = link(entry.archived.url, archived_words(entry.archived), "archived")
        good += f" · {copy}"
    detail = f'<span class="detail">{good}</span>' if entry.state is State.BROKEN else ""
    return f'<td class="since" data-sort="{stamp}">{_time(since, day_only=True)}{detail}</td>'


def _holders_cell(entry: Entry, redirects: dict[str, Entry], base: str) -> str:
    found = holders(entry, redirects)
    items = []
    for holder in found[:MAX_REFERRERS]:
        page = link(holder.page, relative_to(holder.page, base))
        if len(holder.lines) == 1:
            where = f'<span class="line">:{line_label(holder.lines[0])}</span>'
        elif holder.lines:
            where = f'<span class="line">: lines {line_labels(holder.lines)}</span>'
        else:
            where = ' <span class="line">(redirect)</span>'
        via = ""
        if holder.via is not None:
            through = link(holder.via, relative_to(holder.via, base))
            via = f' <span class="detail-inline">(via {through})</span>'
        items.append(f"<li>{page}{where}{via}</li>")
    if len(found) > MAX_REFERRERS:
        rest = len(found) - MAX_REFERRERS
        items.append(
            f'<li class="more">and {_plural(rest, "more page")} '
            "(<code>--format csv</code> lists all)</li>"
        )
    listing = f"<ul>{''.join(items)}</ul>" if items else "—"
    return f'<td class="holders" data-sort="{len(found)}">{listing}</td>'


def _new_title(report: Report) -> str:
    if report.earlier is None:
        return "new: no earlier complete pass of these start URLs to compare with"
    return f"not reported by {report.earlier.source}"


def _marks(entry: Entry, report: Report) -> str:
    """Its verdict in each of the last passes, oldest first, as a row of marks."""
    recent = recent_passes((p.id for p in report.passes), report.pass_id)
    marks = "".join(
        f'<i class="mark mark-{state.value if state else "none"}" '
        f'title="pass {pass_id}: {state.value if state else "not seen"}"></i>'
        for pass_id, state in zip(recent, recent_verdicts(entry.changes, recent), strict=True)
    )
    return f'<span class="marks" data-marker="verdicts">{marks}</span>'


def _row(key: str, entry: Entry, report: Report, redirects: dict[str, Entry], base: str) -> str:
    label = _VERDICT_LABEL[key]
    badges = [f'<span class="badge badge-{key} verdict">{label}</span>']
    if entry.new:
        badges.append(
            '<span class="badge badge-new" data-marker="new" '
            f'title="{text(_new_title(report))}">new</span>'
        )
    if entry.flapping:
        badges.append(
            '<span class="badge badge-flapping" data-marker="flapping" '
            f'title="{entry.flips} changes of verdict in the last {FLAP_PASSES} passes">'
            "flapping</span>"
        )
        badges.append(_marks(entry, report))
    shown = link(entry.url, as_shown(entry.url), "url")
    return (
        f'<tr data-verdict="{key}">'
        f'<td class="link" data-sort="{text(entry.url)}">{shown}</td>'
        f'<td class="verdict-cell" data-sort="{label}">{"".join(badges)}</td>'
        f"{_status_cell(entry)}{_since_cell(entry)}{_holders_cell(entry, redirects, base)}"
        "</tr>"
    )


def problems_table(report: Report) -> str:
    """Broken links, those failing but not reported yet, and warnings, worst first."""
    rows = problem_rows(report)
    heading = '<h2 id="problems-title">Broken links and warnings</h2>'
    if not rows:
        return (
            f'<section class="problems-section" aria-labelledby="problems-title">{heading}'
            '<p class="empty">No broken links and no warnings in this pass.</p></section>'
        )
    base = report.start_urls[0] if report.start_urls else ""
    redirects = _redirects(report)
    out = [
        '<section class="problems-section" aria-labelledby="problems-title">',
        heading,
        '<div class="table-wrap">',
        '<table class="problems" id="problems">',
        "<thead><tr>"
        '<th scope="col" data-type="text">Link</th>'
        '<th scope="col" data-type="text">Verdict</th>'
        '<th scope="col" data-type="number">Status</th>'
        '<th scope="col" data-type="date">Failing since</th>'
        '<th scope="col" data-type="number">Linked from (page:line)</th>'
        "</tr></thead>",
        "<tbody>",
        *(_row(key, entry, report, redirects, base) for key, entry in rows),
        "</tbody>",
        "</table>",
        "</div>",
        "</section>",
    ]
    return "\n".join(out)


# ---- the page ------------------------------------------------------------------------------


@cache
def stylesheet() -> str:
    return files("linkpatrol.report").joinpath("html_report.css").read_text(encoding="utf-8")


@cache
def script() -> str:
    return files("linkpatrol.report").joinpath("html_report.js").read_text(encoding="utf-8")


def csp_hash(source: str) -> str:
    """The CSP source expression allowing exactly this inline script or style."""
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def content_security_policy(script_source: str, style_source: str) -> str:
    """Nothing but the given inline script and style, by hash; no fetches, no inline events."""
    return (
        f"default-src 'none'; script-src {csp_hash(script_source)}; "
        f"style-src {csp_hash(style_source)}; img-src data:; base-uri 'none'; form-action 'none'"
    )


def plugins_section(report: Report) -> str:
    """What plugins added to the report, as text under each one's name ("" without any)."""
    if not report.plugins:
        return ""
    out = [
        '<section class="plugins" id="plugins" aria-labelledby="plugins-title">',
        '<h2 id="plugins-title">Plugins</h2>',
    ]
    for name, fields in report.plugins.items():
        out.append(f"<h3>{text(name)}</h3>")
        out.append(f'<pre class="plugin-fields">{text(chr(10).join(plugin_text(fields)))}</pre>')
    out.append("</section>")
    return "\n".join(out)


def report_sections(report: Report) -> str:
    """The report's body: summary, pictures, table and what plugins added, for a page that
    brings its own shell."""
    sections = [summary_section(report), charts_section(report), problems_table(report)]
    return "\n".join(filter(None, [*sections, plugins_section(report)]))


def render_html(report: Report) -> str:
    style, code = stylesheet(), script()
    starts = ", ".join(report.starts)
    title = f"linkpatrol: {headline(report)} — {starts}"
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta http-equiv="Content-Security-Policy" '
            f'content="{text(content_security_policy(code, style))}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="referrer" content="no-referrer">',
            f'<meta name="generator" content="linkpatrol {text(report.version)}">',
            f"<title>{text(title)}</title>",
            f"<style>{style}</style>",
            "</head>",
            "<body>",
            "<main>",
            report_sections(report),
            f"<footer>linkpatrol {text(report.version)} · pass {report.pass_id} · "
            "times in UTC</footer>",
            "</main>",
            f"<script>{code}</script>",
            "</body>",
            "</html>",
            "",
        ]
    )
