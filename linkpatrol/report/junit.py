"""The JUnit XML report, for CI servers that show test results (Jenkins, GitLab, and others).

One ``<testsuite>`` per start URL holds the checked URLs of its site (URLs outside every
start URL's site go to the first suite); one ``<testcase>`` per checked URL. A URL that
fails the run (see ``--fail-on``) has a ``<failure>`` naming every page and line linking to
it; a warning that does not fail the run passes with its verdict in ``<system-out>``; a URL
robots.txt kept us from requesting is ``<skipped>``; URLs never requested (``record``
links, URLs a limit left unchecked) are no test cases. An incomplete pass adds a test case
``pass complete`` with an ``<error>``. The shape is described by ``docs/junit.xsd``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from lxml import etree

from linkpatrol.model import State
from linkpatrol.report import Entry, Report, archived_words, start_url_of
from linkpatrol.report.text import clean, grouped_referrers, status_line
from linkpatrol.urls import as_shown, origin

_NOT_XML = re.compile("[\ufffe\uffff]")


def xml_text(text: str) -> str:
    """Crawled text made fit for XML 1.0 (control characters written as escapes)."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", clean(text))


def _details(entry: Entry) -> str:
    lines = [as_shown(entry.url), status_line(entry)]
    if entry.archived is not None:
        lines.append(f"{archived_words(entry.archived)}: {entry.archived.url}")
    pages = grouped_referrers(entry.referrers, "")
    if pages:
        lines.append("linked from:")
        lines.extend(f"  {page}" for page in pages)
    return xml_text("\n".join(lines)) + "\n"


def _testcase(entry: Entry, failing: set[str]) -> etree._Element:
    case = etree.Element(
        "testcase",
        name=xml_text(as_shown(entry.url)),
        classname=xml_text(origin(entry.url) or entry.url.partition(":")[0]),
        time="0",
    )
    if entry.new:
        case.set("status", "new")
    if entry.url in failing:
        failure = etree.SubElement(
            case,
            "failure",
            message=xml_text(status_line(entry)),
            type=entry.state.value,
        )
        failure.text = _details(entry)
    elif entry.state is State.DISALLOWED:
        etree.SubElement(case, "skipped", message="disallowed by robots.txt")
    elif entry.state is not State.OK:
        etree.SubElement(case, "system-out").text = _details(entry)
    return case


def _stamp(timestamp: float) -> str:
    """The Ant format's timestamp: ISO 8601 without a zone (UTC here)."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def render_junit(report: Report) -> str:
    starts = report.start_urls or ["linkpatrol"]
    members: dict[str, list[Entry]] = {start: [] for start in starts}
    for entry in report.entries:
        if entry.state is not State.UNCHECKED:
            members[start_url_of(report, entry.url) or starts[0]].append(entry)
    failing = {entry.url for entry in report.failing}
    elapsed = f"{report.summary.elapsed:.3f}"
    root = etree.Element("testsuites", name="linkpatrol", time=elapsed)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for number, (start, entries) in enumerate(members.items()):
        suite = etree.SubElement(root, "testsuite", name=xml_text(start))
        for entry in entries:
            suite.append(_testcase(entry, failing))
        if number == 0 and not report.complete:
            case = etree.SubElement(suite, "testcase", name="pass complete", classname="linkpatrol")
            case.set("time", "0")
            reason = report.stop_reason or "still running or cut off"
            error = etree.SubElement(case, "error", message=f"incomplete pass: {reason}")
            error.set("type", "incomplete")
        counts = {
            "tests": len(suite),
            "failures": len(suite.findall("testcase/failure")),
            "errors": len(suite.findall("testcase/error")),
            "skipped": len(suite.findall("testcase/skipped")),
        }
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", elapsed)  # the sites are crawled at once: each took the whole pass
        suite.set("timestamp", _stamp(report.started_at))
        suite.set("id", str(number))
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(totals[key]))
    xml: bytes = etree.tostring(root, encoding="UTF-8", xml_declaration=True, pretty_print=True)
    return xml.decode("utf-8")
