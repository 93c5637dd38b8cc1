#!/usr/bin/env python3
"""Two builds of linkpatrol, one site: does every report format say the same?

    python bench/same_reports.py OLD_LINKPATROL NEW_LINKPATROL URL [--options '...']

Runs ``check URL --format F`` with each command, for every format, each on a memory of
its own, and compares the outputs once what differs from run to run is set aside (times,
durations, response times, how the fetch slots were used) and, with ``--additions``, what
the newer build adds on purpose (listed in ``ADDITIONS``). Prints one line per format and
exits 1 if any differs. Not part of the test suite: it crawls a whole site per format.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

FORMATS = ("text", "json", "csv", "markdown", "junit", "sarif", "dot", "sitemap", "html")

# what changes from one run to the next, whichever build
VOLATILE = [
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:\+00:00|Z)?"), "TIME"),
    (re.compile(r"\d+(?:\.\d+)? ?s\b"), "SECONDS"),
    (re.compile(r'"?(?:elapsed|response_ms|time|duration)"?[:=] ?"?[\d.]+"?'), "ELAPSED"),
    (re.compile(r'time="[\d.]+"'), 'time="T"'),
    (re.compile(r"^Fetch slots.*\n(?:  \(.*\)\n)?", re.M), ""),
    # the HTML report's chart of response times, and its fetch slots
    (re.compile(r'<figure class="chart-card" data-chart="times">.*?</figure>', re.S), ""),
    (re.compile(r'<figure class="chart-card" data-chart="slots">.*?</figure>', re.S), ""),
    (re.compile(r"sha256-[A-Za-z0-9+/=]+"), "sha256-HASH"),  # of the inline styles
    (re.compile(r'data-sort="\d{9,11}(?:\.\d+)?"'), 'data-sort="EPOCH"'),
]
# what the newer build adds on purpose: a verdict's reason, the options a pass was
# checked with
ADDITIONS = [
    (re.compile(r" · kind: [a-z-]+"), ""),
    (re.compile(r"^Checked with .*\n", re.M), ""),
    (re.compile(r'<span class="reason">[a-z-]+</span>'), ""),
    (re.compile(r"^\.problems \.reason \{.*\}\n", re.M), ""),  # its style
    (re.compile(r",(?:[a-z-]+)?\r?$", re.M), ""),  # the CSV's last column
]


def run(command: str, url: str, fmt: str, options: list[str], folder: Path) -> str:
    db = folder / f"{fmt}.db"
    proc = subprocess.run(
        [*shlex.split(command), "check", url, "--db", str(db), "--format", fmt, *options],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode not in (0, 1):
        sys.exit(f"{command} --format {fmt}: exit {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def _json_without(data: Any, keys: set[str]) -> Any:
    """The JSON without those keys anywhere (and without a "properties" left empty), its
    lists in sorted order: a crawl finds URLs and referrers in an order of its own."""
    if isinstance(data, dict):
        kept = {k: _json_without(v, keys) for k, v in data.items() if k not in keys}
        if kept.get("properties") == {}:
            del kept["properties"]
        return kept
    if isinstance(data, list):
        items = [_json_without(v, keys) for v in data]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    return data


_DOT_NODE = re.compile(r'^\s*(n\d+) \[label=.*?tooltip="([^"]*)"', re.M)
_DOT_ID = re.compile(r"\bn\d+\b")
_SITEMAP_URL = re.compile(r"<url>.*?</url>", re.S)


def normalized(fmt: str, text: str, additions: bool) -> str:
    """The output with what changes from run to run set aside (times, and the order in
    which a crawl found things), and with ``additions`` (for the newer build's output)
    what it adds on purpose."""
    if fmt in ("json", "sarif"):
        if additions:  # SARIF's messages are the text report's lines
            text = re.sub(r" (?:·|\\u00b7) kind: [a-z-]+", "", text)
        data = json.loads(text)
        drop = {"started_at", "finished_at", "last_checked", "last_good", "failing_since"}
        drop |= {"elapsed", "response_ms", "fetch", "at", "startTimeUtc", "endTimeUtc"}
        # each pass's figures: counted by state once, as its report counted them now
        drop.add("passes")
        if additions:
            drop |= {"options", "reason"}
        return json.dumps(_json_without(data, drop), indent=1, sort_keys=True)
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    if additions:
        for pattern, replacement in ADDITIONS[:-1] if fmt != "csv" else ADDITIONS[-1:]:
            text = pattern.sub(replacement, text)
    if fmt == "dot":  # nodes are numbered in the order found: name them by their URL
        names = dict(_DOT_NODE.findall(text))
        text = _DOT_ID.sub(lambda m: names.get(m.group(), m.group()), text)
    if fmt == "sitemap":
        return "\n".join(sorted(_SITEMAP_URL.findall(text)))
    if fmt in ("csv", "dot", "junit", "html"):
        return "\n".join(sorted(text.splitlines()))
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", help="the older build's command, e.g. /tmp/old/bin/linkpatrol")
    parser.add_argument("new", help="the newer build's command")
    parser.add_argument("url", help="the site to check")
    parser.add_argument("--options", default="", help="more options for both, one string")
    parser.add_argument(
        "--additions",
        action="store_true",
        help="set aside what the newer build adds on purpose (reasons, kept options)",
    )
    args = parser.parse_args()
    options = shlex.split(args.options)
    differing = 0
    with tempfile.TemporaryDirectory() as tmp:
        old_dir, new_dir = Path(tmp, "old"), Path(tmp, "new")
        old_dir.mkdir()
        new_dir.mkdir()
        for fmt in FORMATS:
            old = normalized(fmt, run(args.old, args.url, fmt, options, old_dir), False)
            new = normalized(fmt, run(args.new, args.url, fmt, options, new_dir), args.additions)
            if old == new:
                print(f"{fmt:9} same ({len(new):,} characters)")
                continue
            differing += 1
            diff = list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm=""))
            print(f"{fmt:9} DIFFERS: {len(diff)} diff lines; the first:")
            for line in diff[:12]:
                print(f"    {line[:160]}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
