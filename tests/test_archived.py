"""Archived copies of dead links: a link that was good and broke is looked up in the web
archive (a stand-in for its availability API on 127.0.0.1), asked about its last-good
moment once; the memory keeps the copy and every report shows it."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from jsonschema import Draft202012Validator

from linkpatrol.archive import availability_url, read_answer
from linkpatrol.store import Archived, open_store
from tests.conftest import Runner, Serve, by_url, memory_write
from tests.sitesrv import Hit, Page, html
from tests.sitesrv import TestSite as LoopbackSite
from tests.test_report_json import SCHEMA_PATH, assert_valid

SNAPSHOT_STAMP = "20260302120000"  # when the stand-in says its copies were taken
SNAPSHOT_AT = "2026-03-02T12:00:00+00:00"
API = "/wayback/available"


class ArchiveStandIn(LoopbackSite):
    """The availability API as the web archive answers it: each URL asked about has a
    copy (``answer``: "copy"), none ("none"), one from after it broke ("later"), or the
    archive fails ("500", "garbage")."""

    answer = "copy"

    def lookup(self, path: str) -> Page | None:
        where, _, query = path.partition("?")
        if where != API:
            return None
        if self.answer == "500":
            return Page("<h1>server error</h1>", status=500)
        if self.answer == "garbage":
            return Page("<html>not what was asked</html>", content_type="application/json")
        url = parse_qs(query)["url"][0]
        stamp = "20991231000000" if self.answer == "later" else SNAPSHOT_STAMP
        closest = {
            "available": True,
            "url": f"http://web.archive.org/web/{stamp}/{url}",
            "timestamp": stamp,
            "status": "200",
        }
        found: dict[str, Any] = {} if self.answer == "none" else {"closest": closest}
        body = json.dumps({"url": url, "archived_snapshots": found})
        return Page(body, content_type="application/json")

    def asked(self) -> list[dict[str, str]]:
        """The questions asked, each as its query's fields."""
        return [_fields(hit) for hit in self.requests() if hit.path.startswith(API)]


def _fields(hit: Hit) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(hit.path).query).items()}


@pytest.fixture
def archive() -> Any:
    with ArchiveStandIn() as stand_in:
        yield stand_in


def _stamp(moment: str) -> str:
    """An ISO moment of a report as the archive's timestamp."""
    return datetime.fromisoformat(moment).astimezone(UTC).strftime("%Y%m%d%H%M%S")


def _site(serve: Serve) -> LoopbackSite:
    """A home page linking to a page that is good (for now) and one that never was."""
    return serve(
        {
            "/": Page(html('<a href="/gone.html">gone</a>', '<a href="/never.html">never</a>')),
            "/gone.html": Page("<p>here for now</p>"),
        }
    )


def _broke_since(
    run: Runner, serve: Serve, archive: ArchiveStandIn
) -> tuple[LoopbackSite, str, tuple[str, ...]]:
    """The site checked once, then its page gone: the site, that page's URL, and the
    options that ask the stand-in."""
    site = _site(serve)
    assert run.check(site.url("/")).returncode == 1
    site.pages["/gone.html"] = Page("<h1>gone</h1>", status=404)
    return site, site.url("/gone.html"), ("--archive-endpoint", archive.url(API))


@pytest.mark.backends
def test_a_link_that_broke_is_shown_with_its_copy_from_before_asked_about_once(
    run: Runner, serve: Serve, archive: ArchiveStandIn, db: str
) -> None:
    site = _site(serve)
    gone, never = site.url("/gone.html"), site.url("/never.html")
    endpoint = ("--archive-endpoint", archive.url(API))
    assert run.check(site.url("/"), "--archived", *endpoint).returncode == 1  # never.html
    assert archive.asked() == []  # nothing broke that was once good

    site.pages["/gone.html"] = Page("<h1>gone</h1>", status=404)
    code, plain = run.check_json(site.url("/"))
    assert code == 1 and "archived" not in by_url(plain)[gone]
    assert archive.asked() == []  # without --archived nothing is asked

    code, report = run.check_json(site.url("/"), "--archived", *endpoint)

    assert code == 1
    entry = by_url(report)[gone]
    assert archive.asked() == [{"url": gone, "timestamp": _stamp(entry["last_good"])}]
    (hit,) = archive.requests()
    assert hit.headers["User-Agent"].startswith("linkpatrol/")
    copy = f"http://web.archive.org/web/{SNAPSHOT_STAMP}/{gone}"
    assert entry["archived"] == {"url": copy, "at": SNAPSHOT_AT}
    assert "archived" not in by_url(report)[never]  # never good: nothing to ask about
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert_valid(Draft202012Validator(schema), report)

    text = run.check(site.url("/"), "--archived", *endpoint).stdout  # a third run
    assert f"archived copy from 2026-03-02: {copy}" in text
    assert len(archive.asked()) == 1  # the memory knew the answer

    def report_in(fmt: str) -> str:
        proc = run("report", "--db", db, "--format", fmt)
        assert proc.returncode == 1, proc.stderr
        return proc.stdout

    assert f"archived copy from 2026-03-02: `{copy}`" in report_in("markdown")
    assert f'href="{copy}"' in report_in("html")
    (row,) = [r for r in csv.DictReader(io.StringIO(report_in("csv"))) if r["url"] == gone]
    assert (row["archived_url"], row["archived_at"]) == (copy, SNAPSHOT_AT)
    (result,) = [
        r
        for r in json.loads(report_in("sarif"))["runs"][0]["results"]
        if r["message"]["text"].startswith(f"Link to {gone}")
    ]
    assert result["properties"]["archived"] == {"url": copy, "at": SNAPSHOT_AT}
    assert f"archived copy from 2026-03-02: {copy}" in report_in("junit")
    (node,) = [line for line in report_in("dot").splitlines() if f'"{gone}' in line]
    assert f'archived copy from 2026-03-02: {copy}"' in node and f'URL="{copy}"' in node
    history = run("history", gone, "--db", db, "--format", "json")
    assert json.loads(history.stdout)["archived"] == {"url": copy, "at": SNAPSHOT_AT}

    store = open_store(db, crawl=False)
    try:
        latest = store.latest_pass()
        assert latest is not None
        copies = store.archived_copies(latest.id)
    finally:
        store.close()
    assert copies == {gone: Archived(copy, datetime.fromisoformat(SNAPSHOT_AT).timestamp())}

    # it comes back: nothing to show; it breaks again: asked about its new last-good moment
    site.pages["/gone.html"] = Page("<p>back</p>")
    code, recovered = run.check_json(site.url("/"), "--archived", *endpoint)
    assert code == 1 and "archived" not in by_url(recovered)[gone]
    site.pages["/gone.html"] = Page("<h1>gone again</h1>", status=404)
    code, again = run.check_json(site.url("/"), "--archived", *endpoint)
    last_good = by_url(again)[gone]["last_good"]
    assert last_good > entry["last_good"]
    assert archive.asked()[1:] == [{"url": gone, "timestamp": _stamp(last_good)}]
    assert by_url(again)[gone]["archived"] == {"url": copy, "at": SNAPSHOT_AT}


@pytest.mark.parametrize("answer", ["500", "garbage"])
def test_an_archive_that_fails_is_one_warning_and_changes_no_exit_code(
    run: Runner, serve: Serve, archive: ArchiveStandIn, answer: str
) -> None:
    site, gone, endpoint = _broke_since(run, serve, archive)
    archive.answer = answer

    proc = run.check("--format", "json", site.url("/"), "--archived", *endpoint)

    assert proc.returncode == 1  # as without --archived: never.html and gone.html
    said = [line for line in proc.stderr.splitlines() if "archived" in line]
    assert len(said) == 1, proc.stderr
    assert said[0].startswith(f"linkpatrol: archived copies: {archive.url(API)} failed: ")
    assert "archived" not in by_url(json.loads(proc.stdout))[gone]

    archive.answer = "copy"  # nothing was kept: the next run asks again
    code, report = run.check_json(site.url("/"), "--archived", *endpoint)
    assert code == 1 and by_url(report)[gone]["archived"]["at"] == SNAPSHOT_AT


@pytest.mark.parametrize("answer", ["none", "later"])
def test_no_copy_from_before_is_remembered_and_asked_again_a_month_later(
    run: Runner, serve: Serve, archive: ArchiveStandIn, answer: str
) -> None:
    """A copy taken after the link broke would show its error page: it counts as none."""
    site, gone, endpoint = _broke_since(run, serve, archive)
    archive.answer = answer

    for _ in range(2):
        code, report = run.check_json(site.url("/"), "--archived", *endpoint)
        assert code == 1 and "archived" not in by_url(report)[gone]
    assert len(archive.asked()) == 1

    memory_write(run.db, "UPDATE urls SET archive_asked = archive_asked - 31 * 86400")
    archive.answer = "copy"
    code, report = run.check_json(site.url("/"), "--archived", *endpoint)
    assert len(archive.asked()) == 2 and by_url(report)[gone]["archived"]["at"] == SNAPSHOT_AT


def test_the_question_names_the_url_and_its_last_good_moment() -> None:
    asked = availability_url(
        "https://archive.org/wayback/available", "https://example.org/a b?x=1&y=2", 1772452800.0
    )
    assert asked == (
        "https://archive.org/wayback/available?url=https%3A%2F%2Fexample.org%2Fa+b%3Fx%3D1"
        "%26y%3D2&timestamp=20260302120000"
    )
    assert availability_url("http://127.0.0.1:9/api?key=k", "http://a/", 0.0).startswith(
        "http://127.0.0.1:9/api?key=k&url="
    )


def _closest(stamp: str, status: str) -> dict[str, Any]:
    """An availability answer naming one copy."""
    closest = {"available": True, "url": "http://w/x", "timestamp": stamp, "status": status}
    return {"archived_snapshots": {"closest": closest}}


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        ({"archived_snapshots": {}}, None),
        ({"archived_snapshots": {"closest": {"available": False}}}, None),
        (_closest("20260302120000", "200"), Archived("http://w/x", 1772452800.0)),
        (_closest("20260302120000", "404"), None),  # the archive kept an error page
        (_closest("20260402120000", "200"), None),  # taken after the link was seen broken
    ],
)
def test_an_answer_names_a_copy_only_from_before_the_link_broke(
    answer: dict[str, Any], found: Archived | None
) -> None:
    broke = datetime(2026, 3, 10, tzinfo=UTC).timestamp()
    assert read_answer(json.dumps(answer).encode(), broke) == found


@pytest.mark.parametrize(
    "body",
    [
        b"<html>",
        b"[]",
        b'{"archived_snapshots": []}',
        b'{"archived_snapshots": {"closest": {"available": true, "url": 3}}}',
        b'{"archived_snapshots": {"closest": {"available": true, "url": "http://w/x",'
        b' "timestamp": "yesterday"}}}',
    ],
)
def test_what_is_no_availability_answer_is_refused(body: bytes) -> None:
    with pytest.raises(ValueError):
        read_answer(body, None)
