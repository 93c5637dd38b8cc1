"""Many workers, one crawl: the same command started several times shares one pass.

On PostgreSQL, but for the last test (SQLite keeps one crawler at a time). Every worker
runs the real command against a real site on 127.0.0.1 (or, where hosts of their own
matter, on addresses of network namespaces the test makes); what is checked is what a
user sees: the requests the server got, the exit codes, the reports, ``linkpatrol status``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests import netlab, sitesrv
from tests.conftest import (
    Runner,
    Serve,
    assert_memory_intact,
    comparable,
    memory_rows,
    running,
    scratch_schema,
    wait_until,
)
from tests.relay import Relay, relay
from tests.sitesrv import Page
from tests.test_stop_resume import Gate, generated_site

WORKERS = 3
LIMIT = 120.0  # seconds any one worker may take: the leases of the dead are never waited for


@pytest.fixture
def fresh_url(postgres_server: str) -> Iterator[str]:
    """A second empty schema: where one worker alone crawls the same site, to compare."""
    with scratch_schema(postgres_server) as url:
        yield url


def slowly(handlers: dict[str, Callable[[Any], int]], pause: float) -> dict[str, Any]:
    """The same handlers, each answering after ``pause`` seconds, so that requests overlap."""

    def paced(inner: Callable[[Any], int]) -> Callable[[Any], int]:
        def serve(request: Any) -> int:
            time.sleep(pause)
            return inner(request)

        return serve

    return {path: paced(handler) for path, handler in handlers.items()}


def gated(pages: dict[str, Page], pause: float) -> tuple[Gate, dict[str, Any]]:
    """A gate that holds all but the first few requests until the crew is together."""
    gate = Gate(pages, after=3)
    return gate, slowly(gate.site(), pause)


def enlisted(db: str) -> int:
    try:
        return int(memory_rows(db, "SELECT count(*) FROM workers")[0][0])
    except Exception:  # the first worker has not made the tables yet
        return 0


def all_running(procs: list[subprocess.Popen[str]]) -> bool:
    """True, or a failure saying which worker ended before its time and what it said."""
    for proc in procs:
        running(proc)
    return True


def assemble(gate: Gate, db: str, procs: list[subprocess.Popen[str]]) -> None:
    """Hold the site until every worker has joined the pass, then let it answer."""
    try:
        wait_until(lambda: all_running(procs) and enlisted(db) >= len(procs), 60, "the crew")
        assert enlisted(db) == len(procs)
    finally:
        gate.release()


def start_workers(run: Runner, db: str, *args: str, count: int = WORKERS) -> list[Any]:
    return [run.popen("check", "--db", db, "--format", "json", "-v", *args) for _ in range(count)]


def finish(procs: list[subprocess.Popen[str]]) -> list[tuple[int, str, str]]:
    """Each worker's exit code, stdout and stderr; none is left running."""
    results = []
    deadline = time.monotonic() + LIMIT
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            results.append((proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=30)
    return results


WAITING = "the connection to the database was lost; waiting up to"


def checked_lines(err: str) -> int:
    """How many URLs a worker settled, from its ``-v`` lines."""
    return sum(1 for line in err.splitlines() if "127.0.0.1" in line)


def repeated(site: sitesrv.TestSite) -> dict[str, int]:
    return {p: n for p, n in site.counts().items() if n > 1 and p != "/robots.txt"}


def test_three_workers_share_one_pass_and_print_the_same_report(
    run: Runner, serve: Serve, postgres_url: str, fresh_url: str
) -> None:
    pages = generated_site(indexes=10, per_index=30)
    # slow enough that the pass outlasts a few heartbeats: the first worker to have a
    # share of --per-host gives part of it up only at a heartbeat (every 0.5 s)
    gate, handlers = gated(pages, 0.04)
    site = serve(handlers)
    start = site.url("/")
    procs = start_workers(run, postgres_url, start, "--per-host", "6")
    try:
        assemble(gate, postgres_url, procs)
    finally:
        results = finish(procs)

    assert [code for code, _, _ in results] == [1] * WORKERS, [e for _, _, e in results]
    reports = [json.loads(out) for _, out, _ in results]
    assert all(r["complete"] for r in reports)
    assert len({r["pass"] for r in reports}) == 1
    # every URL was asked for once, by one worker or another; robots.txt once
    assert repeated(site) == {}
    assert site.counts()["/robots.txt"] == 1
    assert set(site.counts(probes=False)) == set(pages) - {"/private/x"}
    assert sum(checked_lines(err) > 0 for _, _, err in results) >= 2, "the workers did not share"
    assert memory_rows(postgres_url, "SELECT count(*) FROM passes") == [(1,)]
    assert memory_rows(postgres_url, "SELECT count(*) FROM workers") == [(0,)]
    assert_memory_intact(postgres_url)

    code, alone = run.check_json(start, "--db", fresh_url)
    assert code == 1
    for report in reports:
        assert comparable(report) == comparable(alone)
    assert reports[0]["summary"]["urls"] == alone["summary"]["urls"] == len(pages)


def test_a_worker_killed_mid_crawl_loses_nothing(
    run: Runner, serve: Serve, postgres_url: str, fresh_url: str
) -> None:
    pages = generated_site(indexes=10, per_index=30)
    gate, handlers = gated(pages, 0.02)
    site = serve(handlers)
    start = site.url("/")
    procs = start_workers(run, postgres_url, start, "--per-host", "6")
    try:
        assemble(gate, postgres_url, procs)
        wait_until(
            lambda: all_running(procs[:1]) and len(site.requests()) >= 100, 60, "100 requests"
        )
        # frozen first, so that what it holds can be read before the others take it back
        procs[0].send_signal(signal.SIGSTOP)
        held = {
            urlsplit(url).path
            for (url,) in memory_rows(
                postgres_url,
                "SELECT u.url FROM frontier f JOIN urls u ON u.id = f.url_id "
                "JOIN workers w ON w.id = f.lease_owner WHERE w.pid = ?",
                (procs[0].pid,),
            )
        }
        procs[0].send_signal(signal.SIGKILL)
        killed_at = len(site.requests())
    finally:
        results = finish(procs)

    assert results[0][0] == -signal.SIGKILL
    assert [code for code, _, _ in results[1:]] == [1, 1], [e for _, _, e in results]
    reports = [json.loads(out) for _, out, _ in results[1:]]
    assert all(r["complete"] for r in reports)
    assert killed_at < len(pages)
    # only what the killed worker had in flight, or answered and not yet written, is
    # asked again, each once more; the rest it held was taken back and asked once
    again = repeated(site)
    assert set(again) <= held and set(again.values()) <= {2}, (again, held)
    assert set(site.counts(probes=False)) == set(pages) - {"/private/x"}
    assert_memory_intact(postgres_url)

    code, alone = run.check_json(start, "--db", fresh_url)
    assert code == 1
    for report in reports:
        assert comparable(report) == comparable(alone)


def through(relayed: Relay, url: str) -> str:
    """The PostgreSQL URL reached through the relay."""
    parts = urlsplit(url)
    return parts._replace(netloc=f"{parts.username}@127.0.0.1:{relayed.port}").geturl()


def wait_for_requests(site: sitesrv.TestSite, count: int, procs: list[Any]) -> None:
    wait_until(
        lambda: all_running(procs) and len(site.requests()) >= count, 60, f"{count} requests"
    )


def test_workers_ride_out_a_database_gone_for_a_while_and_say_so_when_it_stays_gone(
    run: Runner, serve: Serve, postgres_url: str, fresh_url: str
) -> None:
    # the database goes away (every connection dropped, none taken) for 2 s, as when its
    # server restarts: with --db-wait 1s a worker gives up, with the default it waits
    pages = generated_site(indexes=10, per_index=30)
    gate, handlers = gated(pages, 0.02)
    gate.release()
    site = serve(handlers)
    start = site.url("/")
    server = urlsplit(postgres_url)
    with relay((server.hostname or "127.0.0.1", server.port or 5432)) as relayed:
        db = through(relayed, postgres_url)
        proc = run.popen("check", "--db", db, "--format", "json", start, "--db-wait", "1s")
        try:
            wait_for_requests(site, 40, [proc])
            relayed.cut(2.0)
        finally:
            ((code, out, err),) = finish([proc])
        assert code == 2 and out == "", err
        said, error = err.splitlines()
        assert said == f"linkpatrol: {WAITING} 1 s for it to come back (--db-wait)", err
        assert error.startswith(f"linkpatrol: {db}"), err
        assert "the database was lost and it was not made again within 1 s" in err, err
        assert "run the same command again" in err
        assert len(site.requests()) < len(pages)
        assert_memory_intact(postgres_url)
        before = site.counts()

        procs = start_workers(run, db, start, "--per-host", "4", count=2)
        try:
            # both at work before the cut: one that starts while it lasts cannot connect
            wait_until(lambda: all_running(procs) and enlisted(postgres_url) >= 2, 60, "the crew")
            wait_for_requests(site, sum(before.values()) + 40, procs)
            relayed.cut(2.0)
        finally:
            results = finish(procs)

    assert [code for code, _, _ in results] == [1, 1], [e for _, _, e in results]
    assert not any("discarding" in e or "error connecting" in e for _, _, e in results)
    reports = [json.loads(out) for _, out, _ in results]
    assert all(r["complete"] and r["pass"] == 1 for r in reports)
    assert set(site.counts(probes=False)) == set(pages) - {"/private/x"}
    # riding it out, neither took the other for gone: no URL was asked for twice
    again = {p: n - before.get(p, 0) for p, n in site.counts().items() if p != "/robots.txt"}
    assert max(again.values()) == 1, sorted(p for p, n in again.items() if n > 1)
    assert_memory_intact(postgres_url)
    code, alone = run.check_json(start, "--db", fresh_url)
    assert code == 1
    for report in reports:
        assert comparable(report) == comparable(alone)


def test_a_stop_ends_the_wait_for_a_database_gone(
    run: Runner, serve: Serve, postgres_url: str
) -> None:
    pages = generated_site(indexes=10, per_index=30)
    gate, handlers = gated(pages, 0.02)
    gate.release()
    site = serve(handlers)
    server = urlsplit(postgres_url)
    with relay((server.hostname or "127.0.0.1", server.port or 5432)) as relayed:
        db = through(relayed, postgres_url)
        proc = run.popen("check", "--db", db, "--format", "json", site.url("/"))
        cutting = threading.Thread(target=relayed.cut, args=(LIMIT,), daemon=True)
        try:
            wait_for_requests(site, 40, [proc])
            cutting.start()
            # the crawl's next write finds the database gone, and it says it waits
            said = proc.stderr.readline() if proc.stderr else ""
            assert said.startswith(f"linkpatrol: {WAITING} 60 s"), said
            assert proc.poll() is None
            proc.send_signal(signal.SIGTERM)
            # it stops waiting at once, not when the 60 s of --db-wait are over
            out, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
            finish([proc])
    cutting.join(timeout=10)
    assert proc.returncode == 2 and out == "", err
    lines = err.splitlines()
    assert lines[0].startswith("linkpatrol: SIGTERM: stopping"), err
    assert len(lines) == 2 and lines[1].startswith(f"linkpatrol: {db}"), err
    assert "the database was lost and the crawl stopped before it came back" in lines[1]


def test_the_per_host_limit_holds_for_all_workers_together(
    run: Runner, serve: Serve, postgres_url: str
) -> None:
    pages = generated_site(indexes=4, per_index=20)
    gate, handlers = gated(pages, 0.02)
    site = serve(handlers)
    start = site.url("/")
    procs = start_workers(run, postgres_url, start, "--per-host", "2")
    try:
        assemble(gate, postgres_url, procs)
    finally:
        results = finish(procs)

    assert [code for code, _, _ in results] == [1] * WORKERS, [e for _, _, e in results]
    assert 1 <= site.max_active <= 2
    assert repeated(site) == {}
    reports = [json.loads(out) for _, out, _ in results]
    assert all(r["complete"] for r in reports)
    assert len({json.dumps(comparable(r)) for r in reports}) == 1


def test_a_site_tables_per_host_below_the_crew_holds_for_all_workers_together(
    run: Runner, serve: Serve, postgres_url: str
) -> None:
    """A [[site]] per_host of 1 with three workers: one of them has the host's share, the
    others leave its URLs to it (and give back those they held)."""
    pages = generated_site(indexes=4, per_index=20)
    gate, handlers = gated(pages, 0.02)
    site = serve(handlers)
    start = site.url("/")
    config = run.cwd / "site.toml"
    config.write_text(f'[[site]]\nprefix = "{start}"\nper_host = 1\n')
    procs = start_workers(run, postgres_url, start, "--per-host", "6", "--config", str(config))
    try:
        assemble(gate, postgres_url, procs)
    finally:
        results = finish(procs)

    assert [code for code, _, _ in results] == [1] * WORKERS, [e for _, _, e in results]
    assert site.max_active == 1
    assert repeated(site) == {}
    reports = [json.loads(out) for _, out, _ in results]
    assert all(r["complete"] for r in reports)
    assert len({json.dumps(comparable(r)) for r in reports}) == 1


@pytest.fixture
def lab() -> Iterator[netlab.Lab]:
    """Three hosts of their own and one for the site; skipped where namespaces cannot be
    made, unless ``CI=true``."""
    reason = netlab.unavailable()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI=true, so this is a failure, not a skip", pytrace=False)
        pytest.skip(reason)
    with netlab.Lab(WORKERS) as made:
        yield made


def test_workers_on_hosts_of_their_own_hold_the_per_host_limit_together(
    run: Runner, lab: netlab.Lab, postgres_url: str
) -> None:
    pages = generated_site(indexes=4, per_index=25)
    gate, handlers = gated(pages, 0.03)
    site = lab.serve(handlers)
    try:
        start = site.url("/")
        shared = netlab.by_socket(postgres_url)
        procs = [
            run.popen(
                "check",
                "--db",
                shared,
                "--format",
                "json",
                start,
                "--per-host",
                "3",
                prefix=lab.on_worker(i),
            )
            for i in range(WORKERS)
        ]
        try:
            assemble(gate, postgres_url, procs)
        finally:
            results = finish(procs)
    finally:
        site.stop()

    assert [code for code, _, _ in results] == [1] * WORKERS, [e for _, _, e in results]
    # the workers asked from addresses of their own, and the server never had more than
    # three requests at once (--per-host 3) from all of them together
    clients = {hit.client for hit in site.requests()}
    assert clients <= set(lab.addresses) and len(clients) >= 2, clients
    assert 1 <= site.max_active <= 3
    assert repeated(site) == {}
    assert site.counts()["/robots.txt"] == 1
    assert set(site.counts(probes=False)) == set(pages) - {"/private/x"}
    reports = [json.loads(out) for _, out, _ in results]
    assert all(r["complete"] for r in reports)
    assert len({json.dumps(comparable(r)) for r in reports}) == 1
    assert reports[0]["summary"]["urls"] == len(pages)
    hosts = {w for (w,) in memory_rows(postgres_url, "SELECT count(*) FROM workers")}
    assert hosts == {0}
    assert_memory_intact(postgres_url)


def test_a_worker_cut_off_without_a_word_is_taken_for_gone_in_seconds_and_says_so(
    run: Runner, lab: netlab.Lab
) -> None:
    # Worker 0's host drops off the network silently (no reset, no refusal), as when its
    # cable is pulled or its machine loses power. The database's side of its connection
    # gives up within seconds, not the hours of the system's TCP defaults, so its liveness
    # lock goes and worker 1 finishes the pass alone, not waiting out the 10 minutes of
    # worker 0's leases. Worker 0's side gives up as soon, rides out --db-wait, and stops.
    pages = generated_site(indexes=6, per_index=25)
    gate, handlers = gated(pages, 0.05)
    armed, caught = threading.Event(), threading.Event()

    def watched(inner: Callable[[Any], int]) -> Callable[[Any], int]:
        def serve(request: Any) -> int:
            if armed.is_set() and request.client_address[0] == lab.addresses[0]:
                caught.set()  # worker 0 holds this URL's lease: it is not done when cut
                time.sleep(1.0)
            return inner(request)

        return serve

    site = lab.serve({path: watched(handler) for path, handler in handlers.items()})
    try:
        with lab.postgres() as (shared, here):
            start = site.url("/")
            args = ("--db", shared, "--format", "json", start, "--per-host", "4", "--db-wait", "3s")
            procs = [run.popen("check", *args, prefix=lab.on_worker(i)) for i in range(2)]
            try:
                assemble(gate, here, procs)
                wait_for_requests(site, 40, procs)
                armed.set()
                assert caught.wait(20)
                lab.cut(0)
                cut_at = time.monotonic()
                out, err = procs[1].communicate(timeout=LIMIT)
                alone_for = time.monotonic() - cut_at
            finally:
                results = finish(procs)
            assert procs[1].returncode == 1, err
            report = json.loads(out)
            assert report["complete"], err
            assert set(site.counts(probes=False)) == set(pages) - {"/private/x"}
            # detected in about 11 s (5 s idle, then 3 probes 2 s apart); the leases of a
            # worker its lock still holds for would last 600 s
            assert alone_for < 60, alone_for
            assert memory_rows(here, "SELECT count(*) FROM workers") == [(0,)]
            assert_memory_intact(here)
    finally:
        site.stop()

    code, out, err = results[0]
    assert code == 2 and out == "", err
    said, error = err.splitlines()
    assert said.startswith(f"linkpatrol: {WAITING} 3 s"), err
    assert "the database was lost and it was not made again within 3 s" in error, err


def test_other_start_urls_are_refused_while_workers_run_and_status_lists_them(
    run: Runner, serve: Serve, postgres_url: str, tmp_path: Path
) -> None:
    pages = generated_site(indexes=3, per_index=10)
    gate = Gate(pages, after=10)
    site = serve(gate.site())
    start = site.url("/")
    procs = start_workers(run, postgres_url, start, count=2)
    try:
        gate.wait_holding(procs[0])

        def both_listed() -> list[dict[str, Any]] | None:
            status = run("status", "--db", postgres_url, "--format", "json")
            assert status.returncode == 0, status.stderr
            workers: list[dict[str, Any]] = json.loads(status.stdout)["workers"]
            return workers if len(workers) == 2 else None

        listed = wait_until(both_listed, 30, "both workers in the status", every=0.1)
        assert sorted(w["pid"] for w in listed) == sorted(p.pid for p in procs)
        assert all(w["host"] and w["since"] and w["heartbeat"] for w in listed)
        text = run("status", "--db", postgres_url)
        assert "workers (2):" in text.stdout and f"pid {procs[0].pid}" in text.stdout
        before = len(site.requests(probes=False))  # a folder's probe may come later

        other = run.check(site.url("/idx/0.html"), "--db", postgres_url)

        assert other.returncode == 2
        assert other.stdout == ""
        lines = other.stderr.splitlines()
        assert len(lines) == 1, other.stderr
        assert "another linkpatrol process" in lines[0] and "other start URLs" in lines[0]
        assert start in lines[0]
        assert len(site.requests(probes=False)) == before
        gate.release()
        results = finish(procs)
    finally:
        gate.release()
        finish(procs)

    assert [code for code, _, _ in results] == [1, 1], [e for _, _, e in results]
    first, second = (json.loads(out) for _, out, _ in results)
    assert first["complete"] and comparable(first) == comparable(second)
    assert repeated(site) == {}
    # nobody at work any more: other start URLs start a pass of their own
    code, other_pass = run.check_json(site.url("/idx/0.html"), "--db", postgres_url)
    assert code == 0 and other_pass["pass"] == first["pass"] + 1


def test_status_lists_the_one_crawler_of_a_sqlite_memory(
    run: Runner, serve: Serve, tmp_path: Path
) -> None:
    pages = generated_site(indexes=2, per_index=5)
    gate = Gate(pages, after=4)
    site = serve(gate.site())
    db = str(tmp_path / "memory.db")
    procs = [run.popen("check", "--db", db, "--format", "json", site.url("/"))]
    try:
        gate.wait_holding(procs[0])
        status = run("status", "--db", db, "--format", "json")
        running = run("status", "--db", db).stdout
        gate.release()
        results = finish(procs)
    finally:
        gate.release()
        finish(procs)

    assert status.returncode == 0, status.stderr
    listed = json.loads(status.stdout)["workers"]
    assert [w["pid"] for w in listed] == [procs[0].pid]
    assert " s crawling so far\n" in running, running
    assert results[0][0] == 1
    after = run("status", "--db", db, "--format", "json")
    assert json.loads(after.stdout)["workers"] == []
    done = run("status", "--db", db).stdout
    assert ": complete\n" in done and " s crawling\n" in done, done  # no longer "so far"


@pytest.mark.backends
def test_status_tells_the_time_crawling_and_forgets_a_crawler_killed(
    run: Runner, serve: Serve
) -> None:
    gate = Gate(generated_site(indexes=2, per_index=5), after=4)
    site = serve(gate.site())
    budget = ("--max-requests", "500", "--max-time", "2h")
    crawler = run.popen("check", "--db", run.db, "--format", "json", *budget, site.url("/"))
    try:
        gate.wait_holding(crawler)
        first = json.loads(run("status", "--db", run.db, "--format", "json").stdout)
        running_text = run("status", "--db", run.db).stdout
        second = json.loads(run("status", "--db", run.db, "--format", "json").stdout)
        crawler.kill()
        crawler.communicate(timeout=30)  # gone, and waited for: no process by its id
        killed = run("status", "--db", run.db, "--format", "json")
        text = run("status", "--db", run.db).stdout
    finally:
        gate.release()
        if crawler.poll() is None:
            crawler.kill()
            crawler.communicate(timeout=30)

    assert first["phase"] == second["phase"] == "running"
    assert [w["pid"] for w in first["workers"]] == [crawler.pid]
    # each worker's own budget, as the README says they are per worker
    assert (first["workers"][0]["max_requests"], first["workers"][0]["max_time"]) == (500, 7200)
    assert "stops after 500 requests (--max-requests), stops after 2h (--max-time)" in (
        running_text
    )
    assert 0 < first["elapsed"] < second["elapsed"], (first["elapsed"], second["elapsed"])
    after = json.loads(killed.stdout)
    assert after["workers"] == [], after["workers"]  # at once, not after 10 s of silence
    assert after["phase"].startswith("cut off") and "cut off (no crawler at work" in text


def test_commits_whose_answers_were_lost_count_once(
    run: Runner, serve: Serve, postgres_url: str
) -> None:
    """A batch made again after its commit's answer was lost (the server had committed
    it) changes nothing more: the pass's figures and the history are those of one
    writing."""
    pages = generated_site(indexes=6, per_index=25)
    gate, handlers = gated(pages, 0.01)
    gate.release()
    site = serve(handlers)
    server = urlsplit(postgres_url)
    with relay((server.hostname or "127.0.0.1", server.port or 5432)) as relayed:
        db = through(relayed, postgres_url)
        (proc,) = start_workers(run, db, site.url("/"), count=1)
        try:
            wait_for_requests(site, 20, [proc])
            relayed.lose_commit_answers(6)
            wait_until(lambda: relayed.commits_lost == 6 or proc.poll() is not None, 60, "6 cuts")
        finally:
            ((code, out, err),) = finish([proc])

    assert relayed.commits_lost == 6
    assert code == 1, err
    report = json.loads(out)
    assert report["complete"]
    hits = site.requests()
    assert report["summary"]["requests"] == len(hits), (report["summary"], len(hits))
    fetched = {h.path for h in site.requests(probes=False) if h.path != "/robots.txt"}
    assert report["summary"]["requested"] == len(fetched), report["summary"]
    # one history row per URL: each changed once, from nothing to its verdict
    assert (
        memory_rows(postgres_url, "SELECT url_id FROM history GROUP BY url_id HAVING count(*) > 1")
        == []
    )
