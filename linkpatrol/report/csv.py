"""The CSV report: one row per place a reported link occurs, for spreadsheets and scripts."""

from __future__ import annotations

import csv
import io

from linkpatrol.model import line_label
from linkpatrol.report import Referrer, Report, iso
from linkpatrol.urls import local_path

COLUMNS = (
    "url",
    "state",
    "http_status",
    "error",
    "referrer",
    "line",
    "first_failed",
    "last_good",
    "reason",
    "path",  # a local file's path (of the link's target), the URL being the url's
    "referrer_path",
    "new",
    "archived_url",  # a copy in the web archive from before the link broke (--archived)
    "archived_at",
)


def render_csv(report: Report) -> str:
    """Broken links worst first, then warnings; a link with no referrer (a start URL) has one
    row with an empty referrer, a redirect to it a row with the redirect and no line."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for entry in report.reported:
        fixed = (entry.url, entry.state.value, entry.http_status or "", entry.error or "")
        reason = entry.reason.value if entry.reason is not None else ""
        times = (iso(entry.failing_since) or "", iso(entry.last_good) or "", reason)
        path = local_path(entry.url) if entry.url.startswith("file://") else ""
        new = "true" if entry.new else "false"
        copy = entry.archived
        archived = ("", "") if copy is None else (copy.url, iso(copy.at) or "")
        refs: list[Referrer | None] = [*entry.referrers] or [None]
        for ref in refs:
            place = (
                ("", "")
                if ref is None
                else (ref.url, "" if ref.line is None else line_label(ref.line))
            )
            holder = ref.url if ref is not None and ref.url.startswith("file://") else ""
            holder_path = holder and local_path(holder)
            writer.writerow((*fixed, *place, *times, path, holder_path, new, *archived))
    return out.getvalue()
