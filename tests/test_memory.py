"""The memory: what it keeps per URL, and bad database input refused without a write."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Runner, Serve, by_url
from tests.sitesrv import Page, html

ETAG = '"v1-home"'
LAST_MODIFIED = "Tue, 14 Nov 2023 22:13:20 GMT"


def memory_site(outside: str) -> dict[str, Page]:
    return {
        "/": Page(
            html(
                "<html><head><title>Home</title></head><body>",
                '<a href="/docs/">docs</a>',
                '<a href="/gone.html">gone</a>',
                f'<a href="{outside}/fine">outside</a>',
                "</body></html>",
            ),
            headers={"ETag": ETAG},
        ),
        "/docs/": Page(
            html(
                '<html><head><base href="/docs/v2/"></head><body>',
                '<a href="intro.html">intro</a>',
                "",
                '<a href="/gone.html">gone again</a>',
                "</body></html>",
            )
        ),
        "/docs/v2/intro.html": Page("<p>intro</p>"),
        "/robots.txt": Page("", status=404),
    }


def url_rows(db_path: str) -> dict[str, dict[str, Any]]:
    db = sqlite3.connect(db_path)
    db.row_factory = sqlite3.Row
    try:
        return {row["url"]: dict(row) for row in db.execute("SELECT * FROM urls")}
    finally:
        db.close()


def links_from(db_path: str, src: str) -> list[tuple[str, int | None]]:
    db = sqlite3.connect(db_path)
    try:
        return db.execute(
            "SELECT d.url, l.line FROM links l JOIN urls s ON s.id = l.src "
            "JOIN urls d ON d.id = l.dst WHERE s.url = ? ORDER BY l.line",
            (src,),
        ).fetchall()
    finally:
        db.close()


def test_the_memory_keeps_verdicts_validators_times_and_links_with_lines(
    run: Runner, serve: Serve
) -> None:
    far = serve({"/fine": Page("ok", content_type="text/plain")})
    site = serve(memory_site(far.base))

    code, first = run.check_json(site.url("/"))

    assert code == 1
    rows = url_rows(run.db)
    home = rows[site.url("/")]
    assert (home["action"], home["state"], home["http_status"]) == ("parse", "ok", 200)
    assert home["etag"] == ETAG
    assert home["last_modified"] == LAST_MODIFIED
    assert home["content_type"] == "text/html"
    assert home["last_good"] == home["last_checked"] is not None
    assert home["failing_since"] is None
    assert rows[site.url("/docs/")]["base_url"] == site.url("/docs/v2/")
    assert rows[far.url("/fine")]["action"] == "check"
    assert rows[far.url("/fine")]["content_type"] == "text/plain"
    gone = rows[site.url("/gone.html")]
    assert (gone["state"], gone["http_status"], gone["error"]) == ("broken", 404, "HTTP 404")
    assert gone["last_good"] is None and gone["failing_since"] == gone["last_checked"]
    assert links_from(run.db, site.url("/docs/")) == [
        (site.url("/docs/v2/intro.html"), 2),
        (site.url("/gone.html"), 4),
    ]

    docs_links = links_from(run.db, site.url("/docs/"))
    # a later pass: unchanged pages answer 304 and keep what the memory knew of them
    site.pages["/docs/v2/intro.html"] = Page("<p>moved</p>", status=410)
    code, second = run.check_json(site.url("/"))

    assert code == 1 and second["pass"] == first["pass"] + 1
    again = url_rows(run.db)
    assert again[site.url("/docs/")]["base_url"] == site.url("/docs/v2/")
    assert {h.status for h in site.requests("GET") if h.path == "/docs/"} == {200, 304}
    assert links_from(run.db, site.url("/docs/")) == docs_links
    assert again[site.url("/gone.html")]["failing_since"] == gone["failing_since"]
    intro = again[site.url("/docs/v2/intro.html")]
    assert intro["state"] == "broken" and intro["http_status"] == 410
    assert intro["last_good"] == rows[site.url("/docs/v2/intro.html")]["last_good"]
    assert intro["failing_since"] == intro["last_checked"] > intro["last_good"]
    entry = by_url(second)[site.url("/docs/v2/intro.html")]
    assert entry["last_good"] is not None and entry["referrers"] == [
        {"url": site.url("/docs/"), "line": 2}
    ]


def stored_db(run: Runner, serve: Serve, tmp_path: Path) -> Path:
    """A real memory left by one complete run, closed cleanly."""
    site = serve({"/": Page(html("<a href='/a'>a</a>")), "/a": Page("fine")})
    db = tmp_path / "kept.db"
    proc = run.check(site.url("/"), "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    return db


def _not_a_database(db: Path) -> None:
    db.write_text("these are my notes, not a database\n" * 40, encoding="utf-8")


def _truncated(db: Path) -> None:
    data = db.read_bytes()
    db.write_bytes(data[: len(data) * 95 // 100])


def _truncated_at_half(db: Path) -> None:
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])


def _newer_schema(db: Path) -> None:
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    con.close()


def _foreign_sqlite(db: Path) -> None:
    db.unlink()
    con = sqlite3.connect(db)
    with con:
        con.execute("CREATE TABLE photos(id INTEGER PRIMARY KEY, name TEXT)")
    con.close()


def _read_only(db: Path) -> None:
    db.chmod(0o444)


BAD_INPUTS = {
    "not-a-database": (_not_a_database, "not a linkpatrol database"),
    "truncated": (_truncated, "truncated"),
    "truncated-at-half": (_truncated_at_half, "damaged"),
    "newer-schema": (_newer_schema, "newer linkpatrol"),
    "someone-elses-sqlite": (_foreign_sqlite, "not a linkpatrol database"),
    "read-only-file": (_read_only, "read-only"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_database_is_refused_with_one_line_and_left_untouched(
    run: Runner, serve: Serve, tmp_path: Path, case: str
) -> None:
    spoil, message = BAD_INPUTS[case]
    db = stored_db(run, serve, tmp_path)
    spoil(db)
    before = db.read_bytes()
    files_before = sorted(os.listdir(tmp_path))
    site = serve({"/": Page("<p>hello</p>")})

    log = tmp_path / "crawl.log"
    proc = run.check(site.url("/"), "--db", str(db), "--log", str(log), "--no-robots")

    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(db) in lines[0] and message in lines[0]
    assert db.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == files_before
    assert site.requests() == []


def _mount_namespaces_work() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    probe = subprocess.run(
        ["unshare", "--mount", "true"], capture_output=True, timeout=10, check=False
    )
    return probe.returncode == 0


@pytest.mark.skipif(
    not _mount_namespaces_work(),
    reason="needs root and mount namespaces to bind-mount the database read-only",
)
def test_database_on_a_read_only_mount_is_refused_but_reports_still_read_it(
    run: Runner, serve: Serve, tmp_path: Path
) -> None:
    """Root may write any file whatever its mode; a read-only mount stops even root."""
    db = stored_db(run, serve, tmp_path)
    before = db.read_bytes()
    site = serve({"/": Page("<p>hello</p>")})
    mount = 'mount --bind -o ro "$0" "$0" && exec "$@"'

    def in_read_only_mount(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "linkpatrol", *args]
        return subprocess.run(
            ["unshare", "--mount", "sh", "-c", mount, str(db), *command],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            check=False,
        )

    proc = in_read_only_mount("check", "--db", str(db), site.url("/"))

    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"linkpatrol: {db}: database is read-only"]
    assert db.read_bytes() == before
    assert site.requests() == []

    report = in_read_only_mount("report", "--db", str(db))
    assert report.returncode == 0, report.stderr
    assert "(complete)" in report.stdout


def test_report_on_a_missing_database_is_a_usage_error(run: Runner, tmp_path: Path) -> None:
    proc = run("report", "--db", str(tmp_path / "nothing.db"))

    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1 and "nothing.db" in proc.stderr
    assert not (tmp_path / "nothing.db").exists()
