"""What people and cron see: exit codes, -q, -v, --log, and progress only on a terminal."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Runner, Serve
from tests.sitesrv import Page, html

STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d) ")


def clean_site() -> dict[str, Page]:
    return {
        "/": Page(html("<html><body>", '<a href="/a.html">a</a>', "</body></html>")),
        "/a.html": Page(html("<p>", '<a href="/">home</a>', "</p>")),
        "/robots.txt": Page("", status=404),
    }


def broken_site(outside: str) -> dict[str, Page]:
    return {
        "/": Page(
            html(
                "<html><body>",
                '<a href="/a.html">a</a>',
                '<a href="/gone.html">gone</a>',
                f'<a href="{outside}/far">far</a>',
                '<a href="mailto:web@example.com">mail</a>',
                '<a href="http://[::1">bad</a>',
                "</body></html>",
            )
        ),
        "/a.html": Page(html("<p>", '<a href="/gone.html">gone</a>', "</p>")),
        "/robots.txt": Page("", status=404),
    }


def test_version_says_how_the_installed_package_was_built(run: Runner) -> None:
    """The command that runs says whether its hot modules are compiled; in CI, where the
    package is installed with a compiler at hand, they must be, so the suite tests the
    build users get."""
    where = subprocess.run(
        [sys.executable, "-c", "import linkpatrol.extract as e; print(e.__file__)"],
        cwd=run.cwd,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    compiled = where.endswith((".so", ".pyd"))
    proc = run("--version")
    assert proc.returncode == 0, proc.stderr
    expected = "compiled" if compiled else "plain Python"
    assert proc.stdout.strip() == f"linkpatrol 0.1.0 ({expected})"
    if os.environ.get("CI") == "true" and "site-packages" in where:
        assert compiled, f"CI installed linkpatrol without compiling it: {where}"


# what only a crawl needs: the event loop, TLS, HTTP and the HTML parser
CRAWL_MODULES = {"asyncio", "ssl", "pycurl", "lxml"}


def imports_of(
    run: Runner, command: list[str]
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """The command run under ``-X importtime``, and the modules it imported."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "linkpatrol", *command],
        cwd=run.cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    imported = {
        line.rpartition("|")[2].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    return proc, imported


def test_commands_that_only_read_the_memory_load_nothing_a_crawl_needs(
    run: Runner, serve: Serve
) -> None:
    """``--version``, ``status``, ``history`` and ``report`` start without the crawl's
    libraries (asyncio and ssl alone are a fifth of the command's start)."""
    site = serve(clean_site())
    assert run.check(site.url("/")).returncode == 0
    commands = [
        ["--version"],
        ["status", "--db", run.db],
        ["history", "--db", run.db, site.url("/")],
        *(["report", "--db", run.db, "--format", f] for f in ("text", "json", "html")),
    ]
    for command in commands:
        proc, imported = imports_of(run, command)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout, command
        assert "linkpatrol.cli" in imported  # the listing is read right
        assert imported.isdisjoint(CRAWL_MODULES), (command, imported & CRAWL_MODULES)


# what a check of a web site without a browser, plugins or a baseline never uses
UNUSED_BY_A_PLAIN_CHECK = {
    "linkpatrol.render",
    "linkpatrol.plugins",
    "linkpatrol.plugins.host",
    "linkpatrol.report.baseline",
    "linkpatrol.markdown",
    "difflib",
    "secrets",
}


def test_a_check_of_a_web_site_loads_nothing_it_does_not_use(run: Runner, serve: Serve) -> None:
    site = serve(clean_site())

    proc, imported = imports_of(run, ["check", site.url("/"), "--db", run.db])

    assert proc.returncode == 0 and "linkpatrol.crawl" in imported, proc.stderr[-2000:]
    assert imported.isdisjoint(UNUSED_BY_A_PLAIN_CHECK), imported & UNUSED_BY_A_PLAIN_CHECK


AT_EXIT_COLLECTING = (
    "import atexit, gc, sys; atexit.register(lambda: print('collecting', gc.isenabled()));"
    "sys.argv[0] = 'linkpatrol'; from linkpatrol.__main__ import main; main()"
)


@pytest.mark.parametrize("command", [["--version"], ["check"], ["report"]])
def test_the_command_loads_without_collections_and_runs_with_them(
    run: Runner, serve: Serve, command: list[str]
) -> None:
    site = serve(clean_site())
    if command != ["--version"]:
        command = [*command, "--db", run.db, *([site.url("/")] if command == ["check"] else [])]
        assert run.check(site.url("/")).returncode == 0

    proc = subprocess.run(
        [sys.executable, "-c", AT_EXIT_COLLECTING, *command],
        cwd=run.cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith("collecting True"), proc.stdout[-500:]


def test_exit_0_when_clean_and_1_when_broken(run: Runner, serve: Serve) -> None:
    clean = serve(clean_site())
    far = serve({"/far": Page("far")})
    broken = serve(broken_site(far.base))

    ok = run.check(clean.url("/"))
    bad = run.check(broken.url("/"), "--db", str(run.cwd / "other.db"))

    assert ok.returncode == 0, ok.stderr
    assert "(complete)" in ok.stdout and "Broken links" not in ok.stdout
    assert bad.returncode == 1, bad.stderr
    assert "Broken links (2):" in bad.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["check", "--no-such-option", "http://127.0.0.1:9/"], "--no-such-option"),
        (["check", "--max-time", "soon", "http://127.0.0.1:9/"], "soon"),
        (["check", "--recheck-good=-3d", "http://127.0.0.1:9/"], "-3d"),
        (["check", "--concurrency", "lots", "http://127.0.0.1:9/"], "lots"),
        (["check"], "no start URL"),
        (["check", "--format", "xml", "http://127.0.0.1:9/"], "xml"),
        (["frobnicate"], "frobnicate"),
    ],
)
def test_usage_errors_exit_2_with_one_line_and_write_nothing(
    run: Runner, args: list[str], needle: str
) -> None:
    log = run.cwd / "run.log"
    proc = run(*args[:1], "--db", run.db, "--log", str(log), *args[1:])

    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("linkpatrol") and needle in lines[0]
    assert sorted(os.listdir(run.cwd)) == []


@pytest.mark.parametrize("command", ["check", "report"])
def test_a_reader_that_stops_reading_ends_the_command_as_it_ends_a_filter(
    run: Runner, serve: Serve, command: str
) -> None:
    """``linkpatrol check ... | head``: the command dies of SIGPIPE, as cat or grep would,
    with no traceback; the memory keeps the whole pass."""
    far = serve({"/far": Page("far")})
    site = serve(broken_site(far.base))
    if command == "report":
        assert run.check(site.url("/")).returncode == 1
    args = [site.url("/")] if command == "check" else []
    proc = subprocess.Popen(
        [sys.executable, "-m", "linkpatrol", command, "--db", run.db, "--format", "json", *args],
        cwd=run.cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # gone before the report is written
    try:
        errors = proc.stderr.read().decode()
        proc.wait(timeout=60)
    finally:
        proc.kill()

    assert proc.returncode == -signal.SIGPIPE, errors
    assert errors == ""
    again = run("report", "--db", run.db, "--format", "json")
    report = json.loads(again.stdout)
    assert (report["pass"], report["complete"], report["summary"]["broken"]) == (1, True, 2)


@pytest.mark.parametrize("unbuffered", [False, True])
def test_a_report_to_a_full_non_blocking_pipe_is_written_whole(
    run: Runner, serve: Serve, unbuffered: bool
) -> None:
    """Standard output a pipe that a process sharing it made non-blocking, read slowly:
    the report waits for room rather than losing what did not fit (an unbuffered Python
    dropped it, a buffered one gave up)."""
    pages = {"/": Page(html(*(f'<a href="/p/{n}.txt">{n}</a>' for n in range(600))))}
    pages.update({f"/p/{n}.txt": Page("x", content_type="text/plain") for n in range(600)})
    site = serve(pages)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    command = ["check", "--db", run.db, "--format", "json", site.url("/")]
    proc = subprocess.Popen(
        [sys.executable, "-m", "linkpatrol", *command],
        cwd=run.cwd,
        stdout=write_end,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    os.close(write_end)
    received = bytearray()
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:  # 4 KB at a time, far slower than it is written
            if not select.select([read_end], [], [], 0.1)[0]:
                continue
            chunk = os.read(read_end, 4096)
            if not chunk:
                break
            received += chunk
            time.sleep(0.002)
        errors = proc.communicate(timeout=60)[1].decode()
    finally:
        os.close(read_end)
        proc.kill()

    assert proc.returncode == 0, errors
    assert len(json.loads(received)["urls"]) == 601


def test_exit_3_when_stopped_early(run: Runner, serve: Serve) -> None:
    site = serve(clean_site())

    proc = run.check(site.url("/"), "--max-requests", "1")

    assert proc.returncode == 3
    assert "INCOMPLETE, stopped by max-requests" in proc.stdout
    again = run.check(site.url("/"))
    assert again.returncode == 0, again.stdout
    assert "(complete)" in again.stdout


def test_quiet_prints_nothing_when_nothing_is_reportable(run: Runner, serve: Serve) -> None:
    site = serve(clean_site())
    site.pages["/a.html"] = Page(html("<p>", '<a href="/gone.html">gone</a>', "</p>"))

    # broken, but failing for less than --report-after: nothing to say yet
    waiting = run.check(site.url("/"), "-q", "--report-after", "2d", "--damp-new")

    assert (waiting.returncode, waiting.stdout, waiting.stderr) == (0, "", "")
    site.pages["/a.html"] = Page("<p>fixed</p>")
    clean = run.check(site.url("/"), "-q")
    assert (clean.returncode, clean.stdout, clean.stderr) == (0, "", "")


def test_quiet_with_broken_links_prints_the_report_only(run: Runner, serve: Serve) -> None:
    far = serve({"/far": Page("far")})
    site = serve(broken_site(far.base))

    proc = run.check(site.url("/"), "-q", "--no-robots")

    assert proc.returncode == 1
    assert proc.stderr == ""  # not even the --no-robots warning
    assert proc.stdout.startswith("linkpatrol ")
    assert "Broken links (2):" in proc.stdout and "Summary:" in proc.stdout


def test_quiet_says_nothing_of_a_pass_cut_short(run: Runner, serve: Serve) -> None:
    """A nightly job that advances a big site bit by bit mails only once a pass completes
    with something to say."""
    far = serve({"/far": Page("far")})
    site = serve(broken_site(far.base))

    cut = [run.check(site.url("/"), "-q", "--max-requests", "1") for _ in range(2)]
    done = run.check(site.url("/"), "-q")

    assert [(p.returncode, p.stdout, p.stderr) for p in cut] == [(3, "", "")] * 2
    assert done.returncode == 1 and "(complete)" in done.stdout.splitlines()[0]
    assert "Broken links (2):" in done.stdout and done.stderr == ""


def test_quiet_says_nothing_of_a_pass_stopped_by_a_signal(run: Runner, serve: Serve) -> None:
    started = threading.Event()

    def slow(request: Any) -> int:
        started.set()
        time.sleep(0.5)
        request.send_response(200)
        request.send_header("Content-Type", "text/html")
        request.end_headers()
        request.wfile.write(b"<p>slow</p>")
        return 200

    site = serve({"/": Page(html(*(f'<a href="/s{i}">s</a>' for i in range(20)))), "/s0": slow})
    for i in range(1, 20):
        site.pages[f"/s{i}"] = slow
    proc = run.popen("check", "--db", run.db, site.url("/"), "-q")
    try:
        assert started.wait(20), "no slow page was asked for"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)

    assert (proc.returncode, out, err) == (3, "", "")


def test_verbose_prints_one_line_per_url_with_its_verdict(run: Runner, serve: Serve) -> None:
    far = serve({"/far": Page("far")})
    site = serve(broken_site(far.base))

    proc = run.check(site.url("/"), "-v", "--format", "json")

    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    lines = proc.stderr.splitlines()
    verdicts: dict[str, list[str]] = {}
    for line in lines:
        state, _status, url, *_ = [*line.split(maxsplit=3), ""]
        verdicts.setdefault(url, []).append(state)
    expected = {e["url"]: [e["state"]] for e in report["urls"]}
    assert verdicts == expected
    assert len(lines) == len(report["urls"])


def test_very_verbose_also_says_what_is_requested_and_why(run: Runner, serve: Serve) -> None:
    far = serve({"/far": Page("far")})
    site = serve(broken_site(far.base))

    proc = run.check(site.url("/"), "-vv")

    assert proc.returncode == 1
    err = proc.stderr
    assert f"starting pass 1 of {site.url('/')}" in err
    assert f"GET {site.url('/a.html')} (parse, linked from {site.url('/')})" in err
    assert f"HEAD {far.url('/far')} (check, linked from {site.url('/')})" in err
    assert re.search(rf"^broken +404 {re.escape(site.url('/gone.html'))}", err, re.M)


def test_log_appends_timestamped_lines_of_what_was_requested_and_why(
    run: Runner, serve: Serve
) -> None:
    far = serve({"/far": Page("far")})
    site = serve(broken_site(far.base))
    log = run.cwd / "crawl.log"

    first = run.check(site.url("/"), "--log", str(log))

    assert first.returncode == 1
    assert first.stderr == ""  # the log is no reason to talk
    text = log.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines and all(STAMP.match(line) for line in lines), text
    home = site.url("/")
    assert f"GET {site.url('/robots.txt')} (robots.txt)" in text
    assert f"GET {site.url('/a.html')} (parse, linked from {home})" in text
    assert f"HEAD {far.url('/far')} (check, linked from {home})" in text
    assert re.search(rf"GET {re.escape(site.url('/gone.html'))} \(parse, linked from ", text)
    assert any("broken" in line and site.url("/gone.html") in line for line in lines)

    second = run.check(site.url("/"), "--log", str(log))

    assert second.returncode == 1
    again = log.read_text(encoding="utf-8")
    assert again.startswith(text) and len(again) > len(text)
    assert "pass 2" in again[len(text) :]


def test_no_progress_output_when_stdout_is_not_a_terminal(run: Runner, serve: Serve) -> None:
    far = serve({"/far": Page("far")})
    site = serve(broken_site(far.base))

    proc = run.check(site.url("/"))

    assert proc.returncode == 1
    assert proc.stderr == ""
    assert "\x1b" not in proc.stdout


def slow(body: str, pause: float) -> Any:
    def serve(request: Any) -> int:
        time.sleep(pause)
        return int(request._send_page(Page(body), request.path))

    return serve


@pytest.mark.parametrize("report_to_terminal", [True, False])
def test_progress_is_shown_on_a_terminal(
    run: Runner, serve: Serve, report_to_terminal: bool
) -> None:
    """On the terminal stderr is, also while the report goes to a file or a pipe."""
    links = [f'<a href="/s/{k}">s</a>' for k in range(8)]
    pages: dict[str, Any] = {"/": Page(html("<body>", *links, "</body>"))}
    pages.update({f"/s/{k}": slow("<p>slow</p>", 0.4) for k in range(8)})
    site = serve(pages)
    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    env["TERM"] = "xterm"
    command = [sys.executable, "-m", "linkpatrol", "check", "--db", run.db, "--per-host", "2"]
    try:
        proc = subprocess.run(
            [*command, site.url("/")],
            cwd=run.cwd,
            stdin=subprocess.DEVNULL,
            stdout=slave if report_to_terminal else subprocess.PIPE,
            stderr=slave,
            env=env,
            timeout=60,
            check=False,
        )
    finally:
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)
    shown = b"".join(chunks).decode("utf-8", "replace")

    assert proc.returncode == 0
    live = (
        r"\d+ done · \d+ queued · \d+ in flight · \d+ waiting( for a host)? · \d+ broken · "
        r"\d+ req/s"
    )
    assert re.search(live, shown), shown
    # each state of the line fits the terminal's 80 columns: it never wraps
    states = re.findall(r"\d+ done[^\r\x1b]*", shown)
    assert states and max(len(state) for state in states) < 80, states
    if report_to_terminal:
        assert "(complete)" in shown
    else:
        assert proc.stdout.startswith(b"linkpatrol ") and b"\x1b" not in proc.stdout


def test_report_to_a_file_with_output(run: Runner, serve: Serve, tmp_path: Path) -> None:
    site = serve(clean_site())
    out = tmp_path / "report.txt"
    proc = run.check(site.url("/"), "--output", str(out))
    assert proc.returncode == 0
    assert proc.stdout == ""
    assert "(complete)" in out.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("width", "line"),
    [
        (200, "12 done · 3 queued · 4 in flight · 1 waiting for a host · 0 broken · 7 req/s"),
        (79, "12 done · 3 queued · 4 in flight · 1 waiting for a host · 0 broken · 7 req/s"),
        (70, "12 done · 3 queued · 4 in flight · 1 waiting · 0 broken · 7 req/s"),
        (60, "12 done · 3 queued · 4 in flight · 0 broken · 7 req/s"),
        (45, "12 done · 3 queued · 0 broken · 7 req/s"),
        (30, "12 done · 0 broken · 7 req/s"),
        (20, "12 done · 0 broken…"),
    ],
)
def test_the_live_line_fits_the_terminal(width: int, line: str) -> None:
    from linkpatrol.observer import CrawlStats
    from linkpatrol.progress import progress_line

    stats = CrawlStats(done=12, queued=3, broken=0, requests=7, in_flight=4, waiting=1)
    stats.started -= 1.0

    shown = progress_line(stats, width)

    assert shown == line and len(shown) < width


def test_a_report_written_to_a_file_is_named_on_stderr(run: Runner, serve: Serve) -> None:
    far = serve({"/far": Page("far")})
    site = serve(broken_site(far.base))

    told = run.check(site.url("/"), "-o", "links.json")
    quiet = run.check(site.url("/"), "-o", "quiet.json", "-q")
    again = run("report", "--db", run.db, "-o", "again.txt")

    said = "linkpatrol: 2 broken links, 0 warnings; the report is in"
    assert (told.returncode, told.stdout, told.stderr) == (1, "", f"{said} links.json\n")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (1, "", "")
    assert again.stderr == f"{said} again.txt\n"
    assert json.loads((run.cwd / "links.json").read_text())["complete"] is True


def test_a_pass_cut_short_says_how_to_resume(run: Runner, serve: Serve) -> None:
    far = serve({"/far": Page("far")})
    site = serve(broken_site(far.base))

    proc = run.check(site.url("/"), "--max-requests", "1")

    assert proc.returncode == 3
    assert proc.stdout.endswith(
        "The memory keeps what was checked; to resume the pass, run the same command again:\n"
        f"  linkpatrol check --db {run.db} {site.url('/')} --max-requests 1\n"
    ), proc.stdout
