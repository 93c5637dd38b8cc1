"""The JSON report: the documented, stable shape for scripts (schema 1)."""

from __future__ import annotations

import json
from typing import Any

from linkpatrol.report import JSON_SCHEMA_VERSION, Entry, Report, iso


def entry_dict(entry: Entry) -> dict[str, Any]:
    data: dict[str, Any] = {
        "url": entry.url,
        "action": entry.action.value,
        "state": entry.state.value,
        "http_status": entry.http_status,
        "error": entry.error,
        "content_type": entry.content_type,
        "redirect_to": entry.redirect_to,
        "reportable": entry.reportable,
        "last_checked": iso(entry.last_checked),
        "last_good": iso(entry.last_good),
        "failing_since": iso(entry.failing_since),
        "referrers": [{"url": r.url, "line": r.line} for r in entry.referrers],
    }
    if entry.links is not None:
        data["links"] = [{"url": r.url, "line": r.line} for r in entry.links]
    return data


def report_dict(report: Report) -> dict[str, Any]:
    s = report.summary
    return {
        "tool": "linkpatrol",
        "version": report.version,
        "schema": JSON_SCHEMA_VERSION,
        "complete": report.complete,
        "stop_reason": report.stop_reason,
        "pass": report.pass_id,
        "started_at": iso(report.started_at),
        "finished_at": iso(report.finished_at),
        "start_urls": report.start_urls,
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
        },
        "urls": [entry_dict(e) for e in report.entries],
        **report.extra,
    }


def render_json(report: Report) -> str:
    return json.dumps(report_dict(report), ensure_ascii=False, separators=(",", ":")) + "\n"
