"""A baseline: an earlier run's JSON report (``--format json``), read as what the report of
a pass is compared with to say what is new, where the memory did not outlive that run."""

from __future__ import annotations

import json
from typing import Any

from linkpatrol.model import STATES, ConfigError, RedirectMode
from linkpatrol.report import JSON_SCHEMA_VERSION, named_as
from linkpatrol.store import Earlier


def read_baseline(path: str) -> Earlier:
    """What the report in ``path`` named; a file that is not one raises ConfigError, one
    line naming it."""
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the baseline: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: the baseline is not JSON: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: the baseline is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    try:
        return _earlier(data, path)
    except ValueError as exc:
        raise ConfigError(
            f"{path}: the baseline is not a linkpatrol JSON report (--format json): {exc}"
        ) from None


def _earlier(data: Any, path: str) -> Earlier:
    if not isinstance(data, dict) or data.get("tool") != "linkpatrol":
        raise ValueError('no "tool": "linkpatrol"')
    schema = data.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
        raise ValueError('no "schema" number')
    if schema > JSON_SCHEMA_VERSION:
        raise ValueError(f"schema {schema}, this version reads up to {JSON_SCHEMA_VERSION}")
    urls = data.get("urls")
    if not isinstance(urls, list):
        raise ValueError('no "urls" list')
    options = data.get("options")
    redirects = options.get("redirects") if isinstance(options, dict) else None
    as_warnings = redirects == RedirectMode.REPORT.value
    named = {}
    for number, entry in enumerate(urls):
        if not isinstance(entry, dict):
            raise ValueError(f"urls[{number}] is not an object")
        url, state, reportable = entry.get("url"), entry.get("state"), entry.get("reportable")
        if not isinstance(url, str) or state not in STATES or not isinstance(reportable, bool):
            raise ValueError(f'urls[{number}] lacks a "url", "state" or "reportable"')
        kind = named_as(STATES[state], reportable, as_warnings)
        if kind is not None:
            named[url] = kind
    given = data.get("pass")
    pass_id = given if isinstance(given, int) and not isinstance(given, bool) else None
    return Earlier(named, pass_id=pass_id, baseline=path)
