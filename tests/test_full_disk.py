"""A full disk: one line that says so, a distinct exit code, a memory that stays sound.

The disk is a small tmpfs mounted for the test (root only; where mounting is not
permitted the tests are skipped, saying why, unless ``CI=true``: then they fail). A
filler file takes most of its room, as a runaway log would; deleting it frees the disk.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import (
    Runner,
    Serve,
    assert_memory_intact,
    comparable,
    memory_done,
    memory_rows,
)
from tests.test_stop_resume import generated_site

DISK_SIZE = 32 * 1024 * 1024  # room for the memory of a whole crawl, its WAL included
ROOM = 768 * 1024  # left free for a crawl: its memory outgrows this within a few hundred URLs
CHUNK = 64 * 1024


class Disk:
    """A small file system of its own, to be filled and freed."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.filler = folder / "filler"

    def free_bytes(self) -> int:
        return shutil.disk_usage(self.folder).free

    def fill(self, leave: int = 0) -> None:
        """Take all of the room but ``leave`` bytes (all of it: not a byte left)."""
        block = b"\0" * CHUNK
        with self.filler.open("ab") as filler:
            try:
                while (room := self.free_bytes() - leave) > 0:
                    filler.write(block[: min(room, CHUNK)])
                    filler.flush()
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
        if not leave:
            assert self.free_bytes() == 0

    def free(self) -> None:
        self.filler.unlink()


def _mount(folder: Path) -> str | None:
    """Mount a small tmpfs on ``folder``; None, or why it could not be done."""
    if not shutil.which("mount"):
        return "no mount command"
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE},mode=0755", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if proc.returncode != 0:
        return " ".join(proc.stderr.split()) or f"mount exited with {proc.returncode}"
    return None


def _unmount(folder: Path) -> None:
    proc = subprocess.run(["umount", str(folder)], capture_output=True, timeout=30, check=False)
    if proc.returncode != 0:  # something still holds it: detach it now, it goes when let go
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=30, check=False)


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Disk]:
    folder = tmp_path / "disk"
    folder.mkdir()
    problem = _mount(folder)
    if problem is not None:
        reason = f"cannot mount a small tmpfs to fill up ({problem}); needs root"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI=true, so this is a failure, not a skip", pytrace=False)
        pytest.skip(reason)
    try:
        yield Disk(folder)
    finally:
        _unmount(folder)


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The command failed as a user should see it: exit 2, one line, no report."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def assert_intact_as_left(db: Path, scratch: Path) -> None:
    """The memory is sound as the failed run left it on the full disk.

    SQLite cannot even read a WAL database where it has no room for the WAL index, so
    the files are checked where there is: copied as they are, WAL and all.
    """
    scratch.mkdir()
    for suffix in ("", "-wal"):
        if Path(f"{db}{suffix}").exists():
            shutil.copyfile(f"{db}{suffix}", scratch / f"{db.name}{suffix}")
    assert_memory_intact(str(scratch / db.name))


def fresh_report(run: Runner, start: str, tmp_path: Path) -> dict:
    code, report = run.check_json(start, "--db", str(tmp_path / "fresh.db"))
    assert code == 1
    return report


def test_a_disk_that_fills_up_mid_crawl_stops_it_and_the_memory_resumes_once_freed(
    tmp_path: Path, serve: Serve, disk: Disk
) -> None:
    site = serve(generated_site(indexes=20, per_index=40))
    start = site.url("/")
    db = disk.folder / "memory.db"
    run = Runner(tmp_path, str(db))
    disk.fill(leave=ROOM)

    proc = run.check("--format", "json", start)

    line = one_line(proc)
    assert line.startswith(f"linkpatrol: {db}: disk full"), line
    assert site.requests(), "the crawl should have started"
    assert_intact_as_left(db, tmp_path / "copy")
    pass_ids, complete, done = memory_done(str(tmp_path / "copy" / db.name), start)[1:]
    assert len(pass_ids) == 1 and not complete
    before = site.counts()

    disk.free()
    code, resumed = run.check_json(start)

    assert code == 1 and resumed["complete"] is True and resumed["pass"] == pass_ids[0]
    assert_memory_intact(str(db))
    after = site.counts()
    assert not {path for path in done if after[path] > before[path]}, "asked again"
    assert comparable(resumed) == comparable(fresh_report(run, start, tmp_path))


def test_a_full_disk_refuses_a_new_memory_with_one_line_before_any_request(
    tmp_path: Path, serve: Serve, disk: Disk
) -> None:
    site = serve(generated_site(indexes=2, per_index=5))
    db = disk.folder / "memory.db"
    run = Runner(tmp_path, str(db))
    disk.fill()

    line = one_line(run.check(site.url("/")))

    assert line.startswith(f"linkpatrol: {db}: disk full"), line
    assert site.requests() == []
    assert sorted(os.listdir(disk.folder)) == ["filler"]


def test_a_full_disk_leaves_an_existing_memory_intact_and_resumable(
    tmp_path: Path, serve: Serve, disk: Disk
) -> None:
    site = serve(generated_site(indexes=4, per_index=20))
    start = site.url("/")
    db = disk.folder / "memory.db"
    run = Runner(tmp_path, str(db))
    code, first = run.check_json(start, "--max-requests", "20")
    assert code == 3
    disk.fill()

    line = one_line(run.check(start))

    assert line.startswith(f"linkpatrol: {db}: disk full"), line
    assert_intact_as_left(db, tmp_path / "copy")
    copy = str(tmp_path / "copy" / db.name)
    assert memory_rows(copy, "SELECT id, complete FROM passes") == [(first["pass"], 0)]

    disk.free()
    code, resumed = run.check_json(start)

    assert code == 1 and resumed["complete"] is True and resumed["pass"] == first["pass"]
    assert comparable(resumed) == comparable(fresh_report(run, start, tmp_path))


@pytest.mark.parametrize("command", ["check", "report"])
def test_a_report_to_a_full_disk_fails_with_one_line_and_the_memory_keeps_the_pass(
    tmp_path: Path, serve: Serve, disk: Disk, command: str
) -> None:
    site = serve(generated_site(indexes=2, per_index=10))
    start = site.url("/")
    run = Runner(tmp_path)
    if command == "report":
        assert run.check(start).returncode == 1
    out = disk.folder / "report.json"
    disk.fill()

    urls = [start] if command == "check" else []
    proc = run(command, "--db", run.db, "--format", "json", "-o", str(out), *urls)

    line = one_line(proc)
    assert line.startswith(f"linkpatrol: {out}: cannot write report: disk full"), line
    assert not out.exists(), "a report cut short is worse than none"
    assert_memory_intact(run.db)
    again = run("report", "--db", run.db, "--format", "json")
    assert again.returncode == 1, again.stderr
    assert json.loads(again.stdout)["complete"] is True


def test_a_report_to_standard_output_on_a_full_disk_fails_with_one_line(
    tmp_path: Path, serve: Serve, disk: Disk
) -> None:
    site = serve(generated_site(indexes=2, per_index=10))
    run = Runner(tmp_path)
    disk.fill()

    with (disk.folder / "report.txt").open("w") as out:
        proc = subprocess.run(
            [sys.executable, "-m", "linkpatrol", "check", "--db", run.db, site.url("/")],
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=120,
            check=False,
        )

    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("linkpatrol: standard output: cannot write report: disk full")
    assert_memory_intact(run.db)


def test_a_log_on_a_full_disk_is_given_up_with_one_line_and_the_crawl_goes_on(
    tmp_path: Path, serve: Serve, disk: Disk
) -> None:
    site = serve(generated_site(indexes=2, per_index=10))
    run = Runner(tmp_path)
    log = disk.folder / "crawl.log"
    log.write_text("", encoding="utf-8")  # it opens; the first lines written do not fit
    disk.fill()

    proc = run.check("--log", str(log), "--format", "json", site.url("/"))

    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["complete"] is True
    assert proc.stderr.splitlines() == [
        f"linkpatrol: {log}: cannot write the log (No space left on device); "
        "logging stopped, the crawl goes on"
    ]
    assert_memory_intact(run.db)
