"""Schema versions: an older memory is brought forward when opened, a newer one refused."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from linkpatrol.model import Action, AnchorMode, ReportOptions, State
from linkpatrol.store import ArchiveAnswer, Archived, Discovered, Outcome, open_store
from linkpatrol.store.sql import SCHEMA_VERSION
from tests.conftest import (
    Runner,
    Serve,
    assert_memory_intact,
    is_postgres,
    memory_rows,
    memory_write,
    sqlite_plan,
    sqlite_statements,
)
from tests.sitesrv import Page
from tests.test_memory import _mount_namespaces_work

# Written by linkpatrol with schema 1: two complete passes over a three-page site on a
# loopback port long gone; the second pass found one more broken link than the first.
FIXTURE = Path(__file__).parent / "fixtures" / "memory-v1.db"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def old_memory(tmp_path: Path) -> Path:
    copy = tmp_path / "old.db"
    shutil.copyfile(FIXTURE, copy)
    return copy


def test_the_fixture_is_a_schema_1_memory() -> None:
    assert memory_rows(str(FIXTURE), "SELECT value FROM meta") == [("1",)]


def test_a_report_upgrades_a_schema_1_memory_and_reads_it_all(
    run: Runner, old_memory: Path
) -> None:
    proc = run("report", "--db", str(old_memory), "--format", "json")

    assert proc.returncode == 1, proc.stderr
    assert memory_rows(str(old_memory), "SELECT value FROM meta") == [(str(SCHEMA_VERSION),)]
    assert_memory_intact(str(old_memory))
    report = json.loads(proc.stdout)
    assert report["pass"] == 2 and report["complete"] is True
    broken = sorted(u["url"].rsplit("/", 1)[1] for u in report["urls"] if u["reportable"])
    assert broken == ["gone.html", "missing.png", "new-broken.html"]
    gone = next(u for u in report["urls"] if u["url"].endswith("/gone.html"))
    assert [(r["url"].rsplit("/", 1)[1], r["line"]) for r in gone["referrers"]] == [("", 2)]
    assert report["plugins"] == {}
    assert memory_rows(str(old_memory), "SELECT count(*) FROM plugin_fields") == [(0,)]
    # the latest pass's verdicts are counted into it; older passes were never counted
    store = open_store(str(old_memory), crawl=False)
    try:
        passes = store.passes(10)
        assert [(p.id, p.broken, p.warnings) for p in passes] == [(1, None, None), (2, 3, 0)]
        record = store.url_record(gone["url"])
        assert record is not None and record.response_ms is None
        changes = store.changes([record.id])[record.id]
        assert [(c.pass_id, c.state, c.http_status) for c in changes] == [(1, State.BROKEN, 404)]
    finally:
        store.close()


def test_a_crawl_on_an_upgraded_memory_adds_a_pass_with_response_times(
    run: Runner, serve: Serve, old_memory: Path
) -> None:
    site = serve({"/": Page('<a href="/x">x</a>'), "/x": Page("x")})

    proc = run("check", "--db", str(old_memory), "--format", "json", site.url("/"))

    assert proc.returncode == 0, proc.stderr
    assert_memory_intact(str(old_memory))
    rows = memory_rows(
        str(old_memory), "SELECT url, response_ms FROM urls WHERE seen_pass = 3 ORDER BY id"
    )
    assert [url for url, _ in rows] == [site.url("/"), site.url("/x")]
    assert all(ms is not None and ms > 0 for _, ms in rows)
    assert memory_rows(str(old_memory), "SELECT broken, warnings FROM passes WHERE id = 3") == [
        (0, 0)
    ]


@pytest.mark.skipif(
    not _mount_namespaces_work(),
    reason="needs root and mount namespaces to bind-mount the database read-only",
)
def test_a_read_only_schema_1_memory_is_refused_with_one_line_and_left_as_it_was(
    old_memory: Path,
) -> None:
    before = _digest(old_memory)
    mount = 'mount --bind -o ro "$0" "$0" && exec "$@"'
    command = [sys.executable, "-m", "linkpatrol", "report", "--db", str(old_memory)]
    proc = subprocess.run(
        ["unshare", "--mount", "sh", "-c", mount, str(old_memory), *command],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )

    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"written by an older linkpatrol (schema 1, now {SCHEMA_VERSION})" in lines[0]
    assert "needs write access" in lines[0]
    assert _digest(old_memory) == before


SCHEMA_6 = (
    ("passes", "options"),
    ("passes", "sites"),
    ("urls", "reason"),
    ("history", "reason"),
    ("sites", "reason"),
)


ARCHIVE_COLUMNS = ("archive_for", "archive_asked", "archive_url", "archive_at")


def back_to_schema_13(db: str) -> None:
    """A memory as schema 13 had it: no copies in the web archive."""
    for column in ARCHIVE_COLUMNS:
        memory_write(db, f"ALTER TABLE urls DROP COLUMN {column}")


def back_to_schema_12(db: str) -> None:
    """A memory as schema 12 had it: its links of no kind, no https: hosts."""
    back_to_schema_13(db)
    memory_write(db, "ALTER TABLE links DROP COLUMN kind")
    memory_write(db, "DROP TABLE https_hosts")


def back_to_schema_11(db: str) -> None:
    """A memory as schema 11 had it: no folders' probes."""
    back_to_schema_12(db)
    memory_write(db, "DROP TABLE probes")


def back_to_schema_10(db: str) -> None:
    """A memory as schema 10 had it: a pass's URLs marked in their own rows, one frontier."""
    back_to_schema_11(db)
    memory_write(db, "ALTER TABLE urls ADD COLUMN done_pass BIGINT")
    memory_write(db, "ALTER TABLE urls ADD COLUMN links_pass BIGINT")
    memory_write(
        db,
        "UPDATE urls SET done_pass = (SELECT m.pass_id FROM seen m WHERE m.url_id = urls.id "
        "AND m.pass_id = urls.seen_pass AND m.stage > 0), links_pass = (SELECT m.pass_id "
        "FROM seen m WHERE m.url_id = urls.id AND m.pass_id = urls.seen_pass AND m.stage = 2)",
    )
    memory_write(db, "DROP TABLE seen")
    memory_write(
        db,
        "CREATE TABLE frontier_before(url_id BIGINT PRIMARY KEY, pass_id BIGINT NOT NULL, "
        "origin TEXT NOT NULL, rnd BIGINT NOT NULL, lease_owner TEXT, lease_until FLOAT, "
        "looks BIGINT NOT NULL DEFAULT 0)",
    )
    memory_write(db, "INSERT INTO frontier_before SELECT * FROM frontier")
    memory_write(db, "DROP TABLE frontier")
    memory_write(db, "ALTER TABLE frontier_before RENAME TO frontier")
    memory_write(db, "CREATE INDEX frontier_pick ON frontier(pass_id, rnd, lease_until, origin)")
    memory_write(db, "CREATE INDEX urls_seen ON urls(seen_pass)")
    memory_write(db, "ALTER TABLE passes DROP COLUMN active_at")


def back_to_schema_9(db: str) -> None:
    """A memory as schema 9 had it: no second looks."""
    back_to_schema_10(db)
    memory_write(db, "ALTER TABLE frontier DROP COLUMN looks")
    memory_write(db, "ALTER TABLE urls DROP COLUMN looked_again")


def back_to_schema_8(db: str) -> None:
    """A memory as schema 8 had it: what each pass's report named is not kept."""
    back_to_schema_9(db)
    memory_write(db, "ALTER TABLE passes DROP COLUMN named")
    memory_write(db, "ALTER TABLE passes DROP COLUMN baseline")


def back_to_schema_7(db: str) -> None:
    """A memory as schema 7 had it: a pass without the start values as given."""
    back_to_schema_8(db)
    memory_write(db, "ALTER TABLE passes DROP COLUMN inputs")


def back_to_schema_6(db: str) -> None:
    """A memory as schema 6 had it: a Markdown page's heading ids kept among its anchors."""
    back_to_schema_7(db)
    memory_write(db, "ALTER TABLE urls DROP COLUMN heading_ids")


def back_to_schema_5(db: str) -> None:
    """A memory as schema 5 had it: without the columns schema 6 adds."""
    back_to_schema_6(db)
    for table, column in SCHEMA_6:
        memory_write(db, f"ALTER TABLE {table} DROP COLUMN {column}")


@pytest.mark.backends
def test_each_backend_migrates_a_memory_stripped_back_to_schema_1(db: str) -> None:
    """The migration statements themselves, on SQLite and on PostgreSQL."""
    store = open_store(db, crawl=True)
    info = store.begin_pass(["http://127.0.0.1:9/"], 1_700_000_000.0)
    store.end_run(info.id, 1.0, 1_700_000_001.0, True, None)
    store.close()
    added = (
        ("urls", "response_ms"),
        ("passes", "broken"),
        ("passes", "warnings"),
        ("urls", "anchors"),
        ("links", "fragment"),
        ("passes", "usage"),
        ("passes", "dropped"),
    )
    back_to_schema_5(db)
    for table, column in added:
        memory_write(db, f"ALTER TABLE {table} DROP COLUMN {column}")
    memory_write(db, "DROP TABLE plugin_fields")
    memory_write(db, "UPDATE meta SET value = '1' WHERE key = 'schema_version'")

    store = open_store(db, crawl=True)
    try:
        latest = store.latest_pass()
        assert latest is not None and (latest.broken, latest.warnings) == (0, 0)
    finally:
        store.close()
    assert memory_rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]
    assert memory_rows(db, "SELECT count(response_ms) FROM urls") == [(0,)]


@pytest.mark.backends
def test_each_backend_brings_a_schema_2_memory_forward_to_keep_plugin_fields(db: str) -> None:
    """Schema 3 adds what plugins add to a report; a reader upgrades the memory once."""
    store = open_store(db, crawl=True)
    info = store.begin_pass(["http://127.0.0.1:9/"], 1_700_000_000.0)
    store.end_run(info.id, 1.0, 1_700_000_001.0, True, None)
    store.close()
    memory_write(db, "DROP TABLE plugin_fields")
    memory_write(db, "ALTER TABLE passes DROP COLUMN dropped")
    back_to_schema_5(db)
    memory_write(db, "UPDATE meta SET value = '2' WHERE key = 'schema_version'")

    reader = open_store(db, crawl=False)
    try:
        assert reader.plugin_fields(info.id) == {}
    finally:
        reader.close()
    assert memory_rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]
    store = open_store(db, crawl=True)
    try:
        store.save_plugin_fields(info.id, {"mailto": {"count": 0}})
        assert store.plugin_fields(info.id) == {"mailto": {"count": 0}}
    finally:
        store.close()


def _claim_index(db: str) -> list[str]:
    """The columns of the frontier's index for claims, in order."""
    if is_postgres(db):
        (definition,) = memory_rows(
            db,
            "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() "
            "AND indexname = 'frontier_pick'",
        )[0]
        return [c.strip() for c in definition.split("(", 1)[1].rstrip(")").split(",")]
    return [
        row[0] for row in memory_rows(db, "SELECT name FROM pragma_index_info('frontier_pick')")
    ]


@pytest.mark.backends
def test_each_backend_brings_a_schema_3_memory_forward_to_claim_from_the_index_alone(
    db: str,
) -> None:
    """Schema 4 puts all a claim tests of a frontier row in the index it claims by; a
    memory's URLs still queued are claimed through it once it is brought forward."""
    store = open_store(db, crawl=True)
    info = store.begin_pass(["http://127.0.0.1:9/"], 1_700_000_000.0)
    store.seed(info.id, [("http://127.0.0.1:9/", Action.PARSE)], 1_700_000_000.0)
    store.close()
    assert _claim_index(db) == ["pass_id", "rnd", "lease_until", "origin"]
    memory_write(db, "DROP INDEX frontier_pick")
    memory_write(db, "CREATE INDEX frontier_pick ON frontier(pass_id, rnd)")
    memory_write(db, "ALTER TABLE passes DROP COLUMN dropped")
    back_to_schema_5(db)
    memory_write(db, "UPDATE meta SET value = '3' WHERE key = 'schema_version'")

    store = open_store(db, crawl=True)
    try:
        with contextlib.ExitStack() as trace:
            if not is_postgres(db):
                statements = trace.enter_context(sqlite_statements(store))
            (task,) = store.claim(info.id, 10, 1_700_000_001.0, ("http://other.test",), 60.0)
        assert task.url == "http://127.0.0.1:9/"
    finally:
        store.close()
    assert _claim_index(db) == ["pass_id", "rnd", "lease_until", "origin"]
    assert memory_rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]
    if not is_postgres(db):  # SQLite's plan of the claim: no row of the table read to test one
        (query,) = [s for s in statements if "FROM frontier" in s and "ORDER BY rnd" in s]
        assert "origin NOT IN" in query and "lease_until" in query, query
        plan = sqlite_plan(db, query)
        assert "USING COVERING INDEX frontier_pick" in plan[0], plan


@pytest.mark.backends
def test_each_backend_brings_a_schema_4_memory_forward_to_count_urls_dropped_from_a_pass(
    db: str,
) -> None:
    """Schema 5 counts the URLs workers drop from a pass (a rule now ignores them), which
    tells the others to forget what they remember of the pass's URLs."""
    start = "http://127.0.0.1:9/"
    store = open_store(db, crawl=True)
    info = store.begin_pass([start], 1_700_000_000.0)
    store.seed(info.id, [(start, Action.PARSE)], 1_700_000_000.0)
    store.close()
    memory_write(db, "ALTER TABLE passes DROP COLUMN dropped")
    back_to_schema_5(db)
    memory_write(db, "UPDATE meta SET value = '4' WHERE key = 'schema_version'")

    store = open_store(db, crawl=True)
    try:
        assert store.begin_pass([start], 1_700_000_001.0).id == info.id  # resumed
        (task,) = store.claim(info.id, 10, 1_700_000_001.0, (), 60.0)
        dropped = Outcome(task.url_id, task.action, State.UNCHECKED, dropped=True)
        store.complete(info.id, [dropped], 1_700_000_001.0)
    finally:
        store.close()
    assert memory_rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]
    assert memory_rows(db, "SELECT dropped FROM passes") == [(1,)]
    assert memory_rows(db, "SELECT count(*) FROM seen") == [(0,)]


@pytest.mark.backends
def test_each_backend_brings_a_schema_5_memory_forward_to_keep_a_pass_s_report_options(
    db: str,
) -> None:
    """Schema 6 keeps with each pass what shapes its report; a pass of an older memory has
    none (its reports take the options given), a new one has its own."""
    start = "http://127.0.0.1:9/"
    store = open_store(db, crawl=True)
    old = store.begin_pass([start], 1_700_000_000.0)
    store.end_run(old.id, 1.0, 1_700_000_001.0, True, None)
    store.close()
    back_to_schema_5(db)
    memory_write(db, "UPDATE meta SET value = '5' WHERE key = 'schema_version'")

    kept = [  # verdicts as a schema 5 memory spelled them, and the reason each one has
        ("broken", 404, "HTTP 404", "http-status"),
        ("warning", 403, "HTTP 403", "http-status"),
        ("broken", None, "invalid URL: bad port", "invalid-url"),
        ("unchecked", None, "not checked: --max-urls limit of 8 URLs reached", "limit"),
        ("unchecked", None, "not requested: 30 path segments, over --max-depth 20", "limit"),
        ("broken", None, "redirect loop: redirects to itself", "redirect-loop"),
        ("disallowed", None, "forbidden by robots.txt", "robots"),
        ("broken", None, "file not found: docs/a.html", "file"),
        ("broken", None, "connection refused", "connection"),
        ("ok", 200, None, None),
    ]
    for n, (state, status, error, _) in enumerate(kept):
        memory_write(
            db,
            "INSERT INTO urls(url, origin, action, state, http_status, error, first_seen) "
            "VALUES(?, '', 'check', ?, ?, ?, 0)",
            (f"http://127.0.0.1:9/{n}", state, status, error),
        )
    options = ReportOptions(check_anchors=AnchorMode.ALL, report_after=3 * 86400.0)
    store = open_store(db, crawl=True)
    try:
        latest = store.latest_pass()
        assert latest is not None and latest.id == old.id and latest.options is None
        new = store.begin_pass([start], 1_700_000_002.0, options=options)
        assert new.id != old.id and new.options == options
        assert [p.options for p in store.passes(5)] == [None, options]
    finally:
        store.close()
    reasons = memory_rows(db, "SELECT url, reason FROM urls WHERE url <> ?", (start,))
    assert sorted(reasons) == sorted(
        (f"http://127.0.0.1:9/{n}", reason) for n, (*_, reason) in enumerate(kept)
    )
    assert memory_rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]


@pytest.mark.backends
def test_a_schema_6_memory_reads_its_markdown_pages_again_for_their_heading_ids(
    run: Runner, serve: Serve
) -> None:
    """Schema 7 keeps a Markdown page's heading ids apart, as GitHub finds them in any
    case; the pages an older memory read are read again, whole, by the next crawl."""
    site = serve(
        {
            "/": Page('<a href="/guide.md#INSTALL">install</a> <a href="/a.html">a</a>'),
            "/guide.md": Page("# Install\n", content_type="text/markdown"),
            "/a.html": Page("<p>a</p>"),
        }
    )
    assert run.check(site.url("/")).returncode == 0
    back_to_schema_6(run.db)
    guide = site.url("/guide.md")
    memory_write(run.db, "UPDATE urls SET anchors = 'install' WHERE url = ?", (guide,))
    memory_write(run.db, "UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    seen = len(site.requests())

    code, report = run.check_json(site.url("/"), "--check-anchors")

    assert code == 0 and not [u["url"] for u in report["urls"] if u["reportable"]]
    answers = {(h.path, h.status, "If-None-Match" in h.headers) for h in site.requests()[seen:]}
    assert answers == {("/", 304, True), ("/a.html", 304, True), ("/guide.md", 200, False)}
    assert memory_rows(run.db, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]


@pytest.mark.backends
def test_a_schema_7_pass_is_named_by_its_start_urls_and_the_next_by_what_was_given(
    run: Runner, serve: Serve
) -> None:
    """Schema 8 keeps the start values as given with a pass, for its reports to name."""
    site = serve({"/": Page("<p>home</p>")})
    assert run.check(site.url("")).returncode == 0
    back_to_schema_7(run.db)
    memory_write(run.db, "UPDATE meta SET value = '7' WHERE key = 'schema_version'")

    proc = run("report", "--db", run.db)
    assert proc.returncode == 0 and f"pass 1 of {site.url('/')} (complete)" in proc.stdout

    code, report = run.check_json(site.url(""))
    assert code == 0 and report["inputs"] == [site.url("")]
    assert memory_rows(run.db, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]


@pytest.mark.backends
def test_a_schema_9_memory_resumes_its_pass_with_second_looks(
    run: Runner, serve: Serve, db: str
) -> None:
    """Schema 10 keeps in the frontier which URLs wait for their second look."""
    site = serve({"/": Page('<a href="/a">a</a>'), "/a": Page("a")})
    code, stopped = run.check_json(site.url("/"), "--max-requests", "1")
    assert code == 3 and not stopped["complete"]
    back_to_schema_9(db)
    memory_write(db, "UPDATE meta SET value = '9' WHERE key = 'schema_version'")

    code, report = run.check_json(site.url("/"))

    assert code == 0 and report["complete"] and report["pass"] == stopped["pass"]
    assert {u["second_look"] for u in report["urls"]} == {False}
    assert memory_rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]


@pytest.mark.backends
def test_a_schema_11_memory_keeps_its_folders_probes(run: Runner, serve: Serve, db: str) -> None:
    """Schema 12 keeps how each folder answered a name that cannot exist."""
    page = Page('<a href="/a/b">b</a>', etag=False, last_modified=None)
    site = serve({"/": Page('<a href="/a/b">b</a>'), "/a/b": page})
    assert run.check_json(site.url("/"))[0] == 0
    back_to_schema_11(db)
    memory_write(db, "UPDATE meta SET value = '11' WHERE key = 'schema_version'")

    code, _ = run.check_json(site.url("/"))

    assert code == 0
    assert memory_rows(db, "SELECT folder, status FROM probes") == [("/a/", 404)]
    assert memory_rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]


def test_a_schema_12_memory_reads_its_https_pages_again_for_the_kinds_of_their_links(
    db: str,
) -> None:
    """Schema 13 keeps whether each link is loaded into its page; the links kept before
    have no kind, so the https: pages among them lose their validators and are read whole."""
    store = open_store(db, crawl=True)
    try:
        info = store.begin_pass(["https://a.test/", "http://b.test/"], 1_700_000_000.0)
        pages = [("https://a.test/", Action.PARSE), ("http://b.test/", Action.PARSE)]
        store.seed(info.id, pages, 1_700_000_000.0)
        store.complete(
            info.id,
            [
                Outcome(
                    task.url_id,
                    Action.PARSE,
                    State.OK,
                    http_status=200,
                    etag='"v1"',
                    links=[Discovered("http://b.test/i.png", 3, Action.CHECK)],
                )
                for task in store.claim(info.id, 10, 1_700_000_000.0, (), 60.0)
            ],
            1_700_000_001.0,
        )
        store.end_run(info.id, 1.0, 1_700_000_002.0, False, None)
    finally:
        store.close()
    back_to_schema_12(db)
    memory_write(db, "UPDATE meta SET value = '12' WHERE key = 'schema_version'")

    open_store(db, crawl=True).close()

    assert memory_rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]
    assert memory_rows(db, "SELECT line, kind FROM links") == [(3, None), (3, None)]
    assert memory_rows(db, "SELECT count(*) FROM https_hosts") == [(0,)]
    assert sorted(memory_rows(db, "SELECT url, etag FROM urls WHERE etag IS NOT NULL")) == [
        ("http://b.test/", '"v1"')
    ]


def test_a_schema_13_memory_keeps_the_web_archive_s_copies_once_brought_forward(
    run: Runner, serve: Serve, db: str
) -> None:
    """Schema 14 keeps with a broken URL its copy in the web archive; an older memory's
    broken URLs have none, until the archive is asked."""
    site = serve({"/": Page('<a href="/a">a</a>'), "/a": Page("a")})
    assert run.check(site.url("/")).returncode == 0
    site.pages["/a"] = Page("gone", status=404)
    assert run.check(site.url("/")).returncode == 1
    back_to_schema_13(db)
    memory_write(db, "UPDATE meta SET value = '13' WHERE key = 'schema_version'")

    store = open_store(db, crawl=True)
    try:
        latest = store.latest_pass()
        assert latest is not None
        (due,) = store.archive_due(latest.id, 0.0)
        assert due.url == site.url("/a") and due.archived is None
        copy = Archived("http://web.archive.org/web/20260302120000/a", 1_772_452_800.0)
        assert due.last_good is not None
        store.save_archived([ArchiveAnswer(due.id, due.last_good, copy)], 1_800_000_000.0)
        assert store.archive_due(latest.id, 0.0) == []
        assert store.archived_copies(latest.id) == {site.url("/a"): copy}
    finally:
        store.close()
    assert memory_rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]
