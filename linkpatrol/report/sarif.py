"""The SARIF 2.1.0 report, for code-scanning views: one result per place a problem link occurs.

A result is located at the referring page (its URL, and the line of the tag); a link that
reaches the target through a redirect has no line, and a start URL that no page links to is
located at itself. Rules: ``broken-link`` (error), ``link-warning`` (warning) and, with
``--redirects report``, ``redirected-link`` (note).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from linkpatrol.model import RENDERED, State
from linkpatrol.report import Entry, Referrer, Report, archived_words, iso
from linkpatrol.report.json import archived_dict
from linkpatrol.report.text import status_line
from linkpatrol.urls import as_shown, local_path

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
INFORMATION_URI = "https://github.com/linkpatrol/linkpatrol"

# rule id, level, short description, full description
_RULES = (
    (
        "broken-link",
        "error",
        "Broken link",
        "The link's target could not be fetched or answered with an error status.",
    ),
    (
        "link-warning",
        "warning",
        "Questionable link",
        "The link's target refused the check (401, 403, 429, 999 or a status set with --warn).",
    ),
    (
        "redirected-link",
        "note",
        "Redirected link",
        "The link's target redirects elsewhere; link to the final address instead.",
    ),
)
_RULE_OF = {State.BROKEN: 0, State.WARNING: 1, State.REDIRECT: 2}


def _rule(rule_id: str, level: str, short: str, full: str) -> dict[str, Any]:
    return {
        "id": rule_id,
        "name": "".join(word.capitalize() for word in rule_id.split("-")),
        "shortDescription": {"text": short},
        "fullDescription": {"text": full},
        "defaultConfiguration": {"level": level},
        "helpUri": f"{INFORMATION_URI}#reports",
    }


def _location(page: str, line: int | None) -> dict[str, Any]:
    """Where a link is: a web page by its URL, a local file by its path relative to the
    current folder (in CI, the repository), as code scanning places results in files."""
    if page.startswith("file://"):
        path = local_path(page)
        uri = quote(path) if not path.startswith("/") else "file://" + quote(path)
        physical: dict[str, Any] = {"artifactLocation": {"uri": uri}}
    else:
        physical = {"artifactLocation": {"uri": page}}
    if line is not None and line != RENDERED:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}


def _result(entry: Entry, ref: Referrer | None, failing: bool) -> dict[str, Any]:
    index = _RULE_OF[entry.state]
    rule_id, level = _RULES[index][0], _RULES[index][1]
    if failing and level != "error":
        level = "error"  # --fail-on warning: the run fails on it, so it shows as one
    how = ""
    if ref is not None and ref.line is None:
        how = " (through a redirect)"
    elif ref is not None and ref.line == RENDERED:
        how = " (in the rendered page)"
    text = f"Link to {as_shown(entry.url)}{how}: {status_line(entry)}"
    properties: dict[str, Any] = {
        "reason": entry.reason.value if entry.reason is not None else None,
        "new": entry.new,
    }
    if entry.archived is not None:
        text += f"; {archived_words(entry.archived)}: {entry.archived.url}"
        properties["archived"] = archived_dict(entry.archived)
    where = _location(entry.url, None) if ref is None else _location(ref.url, ref.line)
    return {
        "ruleId": rule_id,
        "ruleIndex": index,
        "level": level,
        "message": {"text": text},
        "locations": [where],
        "properties": properties,
    }


def _new_since(report: Report) -> str | None:
    """What the results' ``new`` is measured against (None: nothing; all are new)."""
    return None if report.earlier is None else report.earlier.source


def sarif_dict(report: Report) -> dict[str, Any]:
    failing = {entry.url for entry in report.failing}
    results: list[dict[str, Any]] = []
    for entry in report.listed:
        refs: list[Referrer | None] = [*entry.referrers] or [None]
        results.extend(_result(entry, ref, entry.url in failing) for ref in refs)
    invocation: dict[str, Any] = {
        "executionSuccessful": report.complete,
        "startTimeUtc": iso(report.started_at),
    }
    if report.finished_at is not None:
        invocation["endTimeUtc"] = iso(report.finished_at)
    if not report.complete:
        reason = report.stop_reason or "still running or cut off"
        invocation["toolExecutionNotifications"] = [
            {"level": "warning", "message": {"text": f"incomplete pass: {reason}"}}
        ]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "linkpatrol",
                        "version": report.version,
                        "informationUri": INFORMATION_URI,
                        "rules": [_rule(*rule) for rule in _RULES],
                    }
                },
                "invocations": [invocation],
                "results": results,
                "properties": {
                    "pass": report.pass_id,
                    "startUrls": report.start_urls,
                    "inputs": report.inputs,
                    "newSince": _new_since(report),
                    "onlyNew": report.options.only_new,
                },
            }
        ],
    }


def render_sarif(report: Report) -> str:
    return json.dumps(sarif_dict(report), ensure_ascii=False, indent=2) + "\n"
