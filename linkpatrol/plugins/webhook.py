"""The ``webhook`` plugin: a JSON summary of the pass POSTed to a URL when a run ends.

Options (``[plugin.webhook]``):

- ``url`` (required): an ``http://`` or ``https://`` URL; redirects are not followed, so
  the summary goes there and nowhere else;
- ``timeout``: for each attempt (default ``10s``); a failed attempt (no connection, no
  answer in time, HTTP 5xx, 408 or 429) is tried once more after a second;
- ``top``: the broken links named in the summary, worst first (default 10);
- ``headers``: a table of headers to send; ``headers_env``: headers whose values are read
  from environment variables (``{ Authorization = "WEBHOOK_AUTH" }``), for tokens that
  have no place in a configuration file. A variable not set stops the run before it starts.

A summary that cannot be posted is one line on stderr, never a failed run. The report
says whether it was posted, to which host, with what answer; it never holds the URL (a
webhook URL is often a secret) nor the headers.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from linkpatrol import __version__
from linkpatrol.config import parse_duration
from linkpatrol.model import line_field
from linkpatrol.plugins import Plugin
from linkpatrol.report import Report, iso
from linkpatrol.store import PassInfo

TIMEOUT = 10.0
TOP = 10
RETRY_PAUSE = 1.0
REFERRERS = 5  # pages named per broken link
_OPTIONS = frozenset(("url", "timeout", "top", "headers", "headers_env"))
_UNSENDABLE = frozenset("\x00\r\n")


def _table(options: Mapping[str, Any], key: str) -> dict[str, str]:
    value = options.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError(f"'{key}' must be a table of strings")
    return dict(value)


def _headers(options: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    headers = _table(options, "headers")
    for name, variable in _table(options, "headers_env").items():
        value = environ.get(variable)
        if not value:
            raise ValueError(f"'headers_env': environment variable {variable} is not set or empty")
        headers[name] = value
    for name, value in headers.items():
        if _UNSENDABLE & set(name + value):
            raise ValueError(f"header {name!r} holds a line break or NUL")
    return headers


def summary(report: Report, top: int) -> dict[str, Any]:
    """What the webhook receives: the pass in figures, and its worst broken links."""
    broken = report.broken
    return {
        "tool": "linkpatrol",
        "version": __version__,
        "site": report.start_urls[0] if report.start_urls else None,
        "start_urls": report.start_urls,
        "pass": report.pass_id,
        "complete": report.complete,
        "stop_reason": report.stop_reason,
        "started_at": iso(report.started_at),
        "finished_at": iso(report.finished_at),
        "duration": round(report.summary.elapsed, 3),
        "urls": report.summary.urls,
        "broken": len(broken),
        "warnings": len(report.warnings),
        "requests": report.summary.requests,
        "top_broken": [
            {
                "url": entry.url,
                "state": entry.state.value,
                "http_status": entry.http_status,
                "error": entry.error,
                "linked_from": [
                    {"url": r.url, **line_field(r.line)} for r in entry.referrers[:REFERRERS]
                ],
            }
            for entry in broken[:top]
        ],
    }


class WebhookPlugin(Plugin):
    """POSTs a summary of the pass to a URL when each run ends."""

    def __init__(
        self, options: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(options)
        unknown = set(self.options) - _OPTIONS
        if unknown:
            raise ValueError(f"unknown option '{sorted(unknown)[0]}'")
        url = self.options.get("url")
        if not isinstance(url, str) or not url:
            raise ValueError("needs 'url', the address to POST the summary to")
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            raise ValueError("'url' must be an http:// or https:// URL")
        self.url = url
        self.host = parts.hostname
        try:
            self.timeout = parse_duration(self.options.get("timeout", TIMEOUT))
        except ValueError as exc:
            raise ValueError(f"'timeout': {exc}") from None
        if self.timeout <= 0:
            raise ValueError("'timeout' must be more than 0")
        top = self.options.get("top", TOP)
        if isinstance(top, bool) or not isinstance(top, int) or top < 0:
            raise ValueError(f"'top' must be a whole number, got {top!r}")
        self.top = top
        self.headers = {
            "User-Agent": f"linkpatrol/{__version__}",
            **_headers(self.options, os.environ if environ is None else environ),
            "Content-Type": "application/json",
        }
        self.result: dict[str, Any] | None = None

    def pass_finished(self, info: PassInfo, report: Report) -> None:
        body = json.dumps(summary(report, self.top), ensure_ascii=False).encode("utf-8")
        attempts, status, error = asyncio.run(self._post(body))
        self.result = {"host": self.host, "posted": error is None, "attempts": attempts}
        if status is not None:
            self.result["http_status"] = status
        if error is not None:
            self.result["error"] = error
            tries = "twice" if attempts > 1 else "once"
            self.note(f"could not post the summary to {self.host} ({error}; tried {tries})")

    async def _post(self, body: bytes) -> tuple[int, int | None, str | None]:
        """(attempts, the last HTTP status, why it failed or None)."""
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        status: int | None = None
        error: str | None = None
        async with aiohttp.ClientSession(timeout=timeout) as session:
            for attempt in (1, 2):
                if attempt > 1:
                    await asyncio.sleep(RETRY_PAUSE)
                status, error = None, None
                try:
                    async with session.post(
                        self.url, data=body, headers=self.headers, allow_redirects=False
                    ) as response:
                        status = response.status
                        await response.read()
                except TimeoutError:
                    error = f"no answer within {self.timeout:g} s"
                except aiohttp.ClientError as exc:
                    words = " ".join(str(exc).split()).replace(self.url, self.host)
                    error = words or type(exc).__name__
                if status is None:
                    continue
                if 200 <= status < 300:
                    return attempt, status, None
                error = f"HTTP {status}"
                if 300 <= status < 400:
                    error += " (redirects are not followed)"
                if status < 500 and status not in (408, 429):
                    return attempt, status, error  # asking again would not change the answer
        return 2, status, error

    def report_fields(self) -> dict[str, Any] | None:
        return self.result


__all__ = ["WebhookPlugin", "summary"]
