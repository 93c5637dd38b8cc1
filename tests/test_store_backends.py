"""The memory's interface, used directly, behaves the same on SQLite and on PostgreSQL.

Each test marked ``backends`` runs once per backend on a fresh memory (``db``); the rest
are about PostgreSQL alone: rows locked by another writer, the crawl lock, bad URLs.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

import linkpatrol.store.frontier as frontier
import linkpatrol.store.queries as queries
import linkpatrol.store.sqlite as sqlite_store
from linkpatrol.model import Action, RobotsState, State, StoreError
from linkpatrol.report import missing_anchors
from linkpatrol.store import Discovered, Outcome, PassLimits, SiteRecord, Store, Task, open_store
from linkpatrol.store.postgres import PostgresStore
from linkpatrol.store.sql import SCHEMA_VERSION
from tests.conftest import (
    Runner,
    assert_memory_intact,
    is_postgres,
    memory_rows,
    memory_write,
    sqlite_plan,
    sqlite_statements,
    store_statements,
)
from tests.sitesrv import Page, free_port, html

T0 = 1_700_000_000.0
H = "http://h.test"
OTHER = "http://other.test"


@pytest.fixture
def store(db: str) -> Iterator[Store]:
    opened = open_store(db, crawl=True)
    try:
        yield opened
    finally:
        opened.close()


def action_of(url: str) -> Action:
    if not url.startswith("http"):
        return Action.RECORD
    return Action.PARSE if url.startswith(H) else Action.CHECK


def ok(task: Task, *links: tuple[str, int | None], **changes: Any) -> Outcome:
    """A page (or other resource) answered 200, with the links it holds."""
    found = [Discovered(url, line, action_of(url)) for url, line in links]
    outcome = Outcome(
        task.url_id,
        task.action,
        State.OK,
        http_status=200,
        content_type="text/html",
        requests=1,
        fetched=True,
        parsed=bool(links),
        links=found if task.action is Action.PARSE else None,
        good_links=True,
    )
    return replace(outcome, **changes)


def claim_all(store: Store, pass_id: int, now: float = T0, lease: float = 60.0) -> list[Task]:
    return store.claim(pass_id, 1000, now, (), lease)


# a small site: what each page links to, with lines
SITE: dict[str, list[tuple[str, int | None]]] = {
    f"{H}/": [(f"{H}/b", 3), (f"{H}/B", 4), (f"{H}/a", 5), (f"{OTHER}/x", 6), ("mailto:m@h", 7)],
    f"{H}/a": [(f"{H}/", 2), (f"{H}/gone", 3), (f"{H}/gone", 9)],
    f"{H}/b": [(f"{H}/gone", 1), (f"{H}/old", 2)],
    f"{H}/B": [(f"{H}/gone", 8)],
    f"{H}/old": [],
    f"{H}/new": [(f"{H}/a", 1), (f"{H}/a", None)],
    f"{H}/gone": [],
    f"{OTHER}/x": [],
}


def answer(task: Task) -> Outcome:
    """What the little site says to a request: a redirect, a 404, or a page."""
    if task.url == f"{H}/old":
        return ok(
            task,
            state=State.REDIRECT,
            http_status=301,
            redirect_to=f"{H}/new",
            links=[Discovered(f"{H}/new", None, Action.PARSE)],
            parsed=False,
        )
    if task.url == f"{H}/gone":
        return ok(task, state=State.BROKEN, http_status=404, error="HTTP 404", links=None)
    return ok(task, *SITE[task.url])


def crawl_by_hand(
    store: Store, start: str = f"{H}/", answers: Callable[[Task], Outcome] = answer
) -> int:
    """A whole pass driven as the engine drives it, the site saying ``answers``; the pass id."""
    info = store.begin_pass([start], T0)
    store.seed(info.id, [(start, Action.PARSE)], T0)
    for _ in range(20):
        tasks = claim_all(store, info.id)
        if not tasks:
            break
        store.complete(info.id, [answers(t) for t in tasks], T0)
    store.end_run(info.id, 1.5, T0 + 2, store.pending(info.id) == 0, None)
    return info.id


def observable(store: Store, pass_id: int) -> dict[str, Any]:
    """All a report can see of a pass."""
    return {
        "pass": store.latest_pass(),
        "urls": list(store.pass_urls(pass_id)),
        "outlinks": list(store.outlinks(pass_id)),
        "redirects": {url: target for url, (_, target) in store.redirects(pass_id).items()},
    }


# ---- both backends ----------------------------------------------------------------------


# a small site of fragments: each page's links (with their fragments) and its anchors
FRAGMENTS: dict[str, tuple[list[tuple[str, int, str]], frozenset[str]]] = {
    f"{H}/": ([(f"{H}/a", 3, "x"), (f"{H}/a", 4, "gone"), (f"{H}/b", 5, "top")], frozenset()),
    f"{H}/a": (
        [(f"{H}/a", 2, "gone"), (f"{H}/", 7, "gone"), (f"{H}/old", 8, "y")],
        frozenset({"x"}),
    ),
    f"{H}/b": (
        [(f"{H}/a", 1, "gone"), (f"{H}/a", 1, "x"), (f"{H}/old", 3, "nope")],
        frozenset(),
    ),
    f"{H}/new": ([(f"{H}/new", 9, "caf%C3%A9")], frozenset({"y", "café"})),
}


def fragment_answer(task: Task) -> Outcome:
    if task.url == f"{H}/old":
        return answer(task)  # a redirect to /new
    links, anchors = FRAGMENTS[task.url]
    found = [Discovered(url, line, Action.PARSE, fragment=f) for url, line, f in links]
    return ok(task, anchors=anchors, links=found, parsed=True)


@pytest.mark.backends
@pytest.mark.parametrize("at_once", [1, 2, queries.ANCHORS_AT_ONCE])
def test_missing_anchors_are_found_once_per_target_with_every_link_to_them(
    store: Store, at_once: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through a redirect too: page#x where page redirects lands on its target's #x.
    The targets' anchors are read a few at a time: the same, however few."""
    monkeypatch.setattr(queries, "ANCHORS_AT_ONCE", at_once)
    pass_id = crawl_by_hand(store, answers=fragment_answer)

    missing = {e.url: [tuple(r) for r in e.referrers] for e in missing_anchors(store, pass_id)}

    assert missing == {
        f"{H}/a#gone": [(f"{H}/", 4), (f"{H}/a", 2), (f"{H}/b", 1)],
        f"{H}/#gone": [(f"{H}/a", 7)],
        f"{H}/new#nope": [(f"{H}/b", 3)],
    }
    assert [e.url for e in missing_anchors(store, pass_id)] == list(missing)


@pytest.mark.backends
def test_a_pass_runs_from_its_start_url_to_complete(store: Store) -> None:
    assert store.latest_pass() is None
    pass_id = crawl_by_hand(store)

    info = store.latest_pass()
    assert info is not None and info.id == pass_id
    assert info.complete and info.finished_at == T0 + 2 and info.stopped_at is None
    assert info.start_urls == (f"{H}/",) and info.elapsed == 1.5
    assert (info.requests, info.requested, info.seen) == (8, 8, 9)
    seen = observable(store, pass_id)
    assert [u.url for u in seen["urls"]] == [
        f"{H}/",
        f"{H}/b",
        f"{H}/B",
        f"{H}/a",
        f"{OTHER}/x",
        "mailto:m@h",
        f"{H}/gone",
        f"{H}/old",
        f"{H}/new",
    ]
    states = {u.url: (u.action, u.state, u.http_status) for u in seen["urls"]}
    assert states["mailto:m@h"] == (Action.RECORD, State.UNCHECKED, None)
    assert states[f"{OTHER}/x"] == (Action.CHECK, State.OK, 200)
    assert states[f"{H}/gone"] == (Action.PARSE, State.BROKEN, 404)
    assert seen["redirects"] == {f"{H}/old": f"{H}/new"}
    assert store.pending(pass_id) == 0

    # the next pass starts anew and knows what the last one learned
    again = store.begin_pass([f"{H}/"], T0 + 10)
    assert again.id == pass_id + 1 and not again.resumed
    store.seed(again.id, [(f"{H}/", Action.PARSE)], T0 + 10)
    (task,) = claim_all(store, again.id, T0 + 10)
    assert (task.state, task.http_status, task.last_good, task.referrer) == (
        State.OK,
        200,
        T0,
        None,
    )
    assert store.links_of([task.url_id]) == {task.url_id: SITE[f"{H}/"]}
    assert store.links_of([task.url_id], again.id) == {task.url_id: SITE[f"{H}/"]}

    # once the start page is written, what it links to is seen in the pass: a page's links
    # to URLs seen already are then left out, when asked for those not yet seen
    store.complete(again.id, [answer(task)], T0 + 10)
    page = next(t for t in claim_all(store, again.id, T0 + 10) if t.url == f"{H}/a")
    assert store.links_of([page.url_id]) == {page.url_id: SITE[f"{H}/a"]}
    assert store.links_of([page.url_id], again.id) == {page.url_id: SITE[f"{H}/a"][1:]}


@pytest.mark.backends
def test_links_keep_their_lines_and_referrers_come_in_one_order(store: Store) -> None:
    pass_id = crawl_by_hand(store)
    referrers = {r.url: r.referrers for r in store.pass_urls(pass_id)}

    # by referring URL byte by byte ("B" before "a" before "b"), then line, a redirect's first
    assert referrers[f"{H}/gone"] == [
        (f"{H}/B", 8),
        (f"{H}/a", 3),
        (f"{H}/a", 9),
        (f"{H}/b", 1),
    ]
    assert referrers[f"{H}/new"] == [(f"{H}/old", None)]
    assert referrers[f"{H}/"] == [(f"{H}/a", 2)]
    assert referrers[f"{H}/a"] == [(f"{H}/", 5), (f"{H}/new", None), (f"{H}/new", 1)]
    outlinks = dict(store.outlinks(pass_id))
    assert outlinks[f"{H}/"] == SITE[f"{H}/"]  # in the page's order
    assert outlinks[f"{H}/a"] == SITE[f"{H}/a"]
    assert not any(r.referrers for r in store.pass_urls(pass_id, with_referrers=False))
    # the same lists asked for a few URLs at a time, as a report does for those it names
    ids = {r.url: r.id for r in store.pass_urls(pass_id, with_referrers=False)}
    some = [ids[f"{H}/gone"], ids[f"{H}/a"], ids[f"{H}/new"]]
    assert store.referrers(pass_id, some) == {
        ids[url]: referrers[url] for url in (f"{H}/gone", f"{H}/a", f"{H}/new")
    }
    assert store.referrers(pass_id, []) == {}


def test_the_end_of_a_crawl_indexes_links_by_target_while_the_report_is_read(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "memory.db")
    index = "SELECT name FROM sqlite_master WHERE name = 'links_dst'"
    # a crawl goes without the index; its end makes it on a connection of its own
    store = open_store(db, crawl=True)
    pass_id = crawl_by_hand(store)
    referrers = {r.url: r.referrers for r in store.pass_urls(pass_id)}
    store.close()
    assert memory_rows(db, index) == [("links_dst",)]
    assert not os.path.exists(db + "-wal")  # checkpointed and gone
    assert referrers[f"{H}/gone"] == [(f"{H}/B", 8), (f"{H}/a", 3), (f"{H}/a", 9), (f"{H}/b", 1)]

    # should its own connection fail to make the index, closing the memory makes it
    monkeypatch.setattr(sqlite_store, "LINKS_BY_TARGET", "CREATE INDEX links_dst ON nowhere(x)")
    store = open_store(db, crawl=True)
    crawl_by_hand(store)
    assert memory_rows(db, index) == []
    store.close()
    assert memory_rows(db, index) == [("links_dst",)]
    assert_memory_intact(db)


def test_the_referrers_of_a_few_urls_are_read_by_target_not_through_every_page(
    tmp_path: Any,
) -> None:
    # A report names its broken URLs with the pages that link to them. Without statistics
    # SQLite would read them through every page of the pass, and every page's links (on a
    # big site, millions of links for a few dozen URLs); the index of links by target
    # finds only theirs.
    db = str(tmp_path / "memory.db")
    store = open_store(db, crawl=True)
    pass_id = crawl_by_hand(store)
    store.close()  # the index of links by target is made
    reader = open_store(db, crawl=False)
    expected = {r.id: r.referrers for r in reader.pass_urls(pass_id) if r.referrers}
    assert len(expected) >= 5  # from five targets on, SQLite's guess picks the pages
    with sqlite_statements(reader) as statements:
        found = reader.referrers(pass_id, list(expected))
    reader.close()
    assert found == expected
    (query,) = [s for s in statements if "FROM links" in s]
    plan = " | ".join(sqlite_plan(db, query))
    assert "USING INDEX links_dst" in plan and "SCAN" not in plan, plan


@pytest.mark.backends
def test_a_batch_of_links_and_changes_is_stored_in_order_and_whole(db: str, store: Store) -> None:
    """Links and changes of state go in many rows at once (by COPY on PostgreSQL): each
    page keeps its links in the order found, repeats included; text that PostgreSQL
    cannot hold (NUL) is stored there as U+FFFD, and SQLite keeps it."""
    info = store.begin_pass([f"{H}/"], T0)
    store.seed(info.id, [(f"{H}/", Action.PARSE)], T0)
    (task,) = claim_all(store, info.id)
    targets = [f"{H}/p{i % 700}" for i in range(1500)]  # many pages' worth, repeated
    found = [Discovered(url, n + 1, Action.PARSE) for n, url in enumerate(targets)]
    found.append(Discovered(f"{H}/p1", None, Action.PARSE, fragment="frag\x00ment"))
    outcome = replace(ok(task), links=found, state=State.BROKEN, http_status=500)
    outcome = replace(outcome, error="server said \x00 then stopped")
    store.complete(info.id, [outcome], T0)

    stored = memory_rows(
        db,
        "SELECT d.url, l.line, l.fragment FROM links l JOIN urls d ON d.id = l.dst "
        "WHERE l.src = ?" + (" ORDER BY l.id" if is_postgres(db) else " ORDER BY l.rowid"),
        (task.url_id,),
    )
    nul = "\ufffd" if is_postgres(db) else "\x00"
    assert stored == [(url, n + 1, None) for n, url in enumerate(targets)] + [
        (f"{H}/p1", None, f"frag{nul}ment")
    ]
    assert memory_rows(db, "SELECT state, error FROM history WHERE url_id = ?", (task.url_id,)) == [
        ("broken", f"server said {nul} then stopped")
    ]


@pytest.mark.backends
def test_a_url_linked_again_batches_later_is_not_looked_up_again(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A crawler remembers the URLs seen in its pass (up to ``SEEN_KEPT`` in each of two
    # generations), so a link to one is not looked up in the memory again. Here it
    # remembers 4: a URL linked in one batch, not in the next (which brings 5 new ones),
    # and again in the third is still known then.
    monkeypatch.setattr(frontier, "SEEN_KEPT", 4)
    store = open_store(db, crawl=True)
    info = store.begin_pass([f"{H}/"], T0)
    store.seed(info.id, [(f"{H}/", Action.PARSE)], T0)
    batches = [
        [f"{H}/x", *[f"{H}/p{i}" for i in range(4)]],
        [f"{H}/q{i}" for i in range(5)],
        [f"{H}/x", f"{H}/r"],
    ]
    with store_statements(store) as statements:
        for links in batches:
            task = claim_all(store, info.id)[0]
            links_found = [(url, n + 1) for n, url in enumerate(links)]
            store.complete(info.id, [ok(task, *links_found)], T0)
    store.end_run(info.id, 1.0, T0 + 1, False, None)
    store.close()

    looked_up = " ".join(s for s in statements if "m.pass_id, CASE" in s)
    assert looked_up.count(f"'{H}/r'") == 1  # a new URL is
    assert looked_up.count(f"'{H}/x'") == 1, statements  # a known one, only the first time
    reader = open_store(db, crawl=False)
    pages = dict(reader.outlinks(info.id))
    ids = {r.url: r.id for r in reader.pass_urls(info.id)}
    reader.close()
    assert sorted([r.url for r in targets] for targets in pages.values()) == sorted(batches)
    assert len(ids) == len(set(ids.values())) == 1 + 4 + 5 + 2  # one row for each URL


@contextlib.contextmanager
def two_workers(db: str) -> Iterator[tuple[Store, Store, int]]:
    """Two crawlers of one PostgreSQL memory sharing a pass, seeded with its start URL."""
    first = open_store(db, crawl=True)
    second = open_store(db, crawl=True)
    try:
        info = first.begin_pass([f"{H}/"], T0)
        assert second.begin_pass([f"{H}/"], T0).id == info.id
        first.seed(info.id, [(f"{H}/", Action.PARSE)], T0)
        yield first, second, info.id
    finally:
        first.close()
        second.close()


def test_a_url_another_worker_drops_is_queued_again_when_linked_again(postgres_url: str) -> None:
    # Workers remember the URLs seen in their shared pass. One worker, whose rules now
    # ignore a URL, drops it from the pass; when another worker next finds a link to it,
    # that worker must not trust its memory of the URL: the URL is queued again.
    with two_workers(postgres_url) as (first, second, pass_id):
        (home,) = claim_all(first, pass_id)
        first.complete(pass_id, [ok(home, (f"{H}/p", 1), (f"{H}/x", 2))], T0)
        by_url = {t.url: t for t in claim_all(second, pass_id)}
        assert set(by_url) == {f"{H}/p", f"{H}/x"}
        x = by_url[f"{H}/x"]
        second.complete(pass_id, [Outcome(x.url_id, x.action, State.UNCHECKED, dropped=True)], T0)
        second.release(pass_id, [by_url[f"{H}/p"].url_id])
        (page,) = claim_all(first, pass_id)
        assert page.url == f"{H}/p"
        first.complete(pass_id, [ok(page, (f"{H}/x", 4), (f"{H}/", 5))], T0)
        (again,) = claim_all(first, pass_id)
        assert (again.url, again.url_id) == (f"{H}/x", x.url_id)
        with store_statements(first) as statements:
            first.complete(pass_id, [ok(again, (f"{H}/p", 1), (f"{H}/", 2))], T0)
        looked_up = " ".join(s for s in statements if "m.pass_id, CASE" in s)
        assert f"'{H}/p'" in looked_up, statements  # known from before the drop: forgotten
        assert f"'{H}/'" not in looked_up, statements  # linked since: remembered
        assert claim_all(first, pass_id) == []


def test_two_workers_settling_a_url_at_once_write_one_change_of_it(postgres_url: str) -> None:
    """Both workers finishing the pass judge the same redirect loop broken at the same
    moment: the second one's writing waits for the first's and sees its verdict, so the
    URL's history has one change, not two."""
    with two_workers(postgres_url) as (first, second, pass_id):
        (home,) = claim_all(first, pass_id)
        first.complete(pass_id, [ok(home)], T0)
        loop = Outcome(home.url_id, home.action, State.BROKEN, error="redirect loop")
        holder = psycopg.connect(postgres_url, autocommit=False)
        try:
            # the pass's row held, as a third worker's batch would hold it
            holder.execute("SELECT id FROM passes WHERE id = %s FOR UPDATE", (pass_id,))
            threads = [
                threading.Thread(target=w.complete, args=(pass_id, [loop], T0 + 5))
                for w in (first, second)
            ]
            for thread in threads:
                thread.start()
            deadline, waiting = time.monotonic() + 10, 0
            while time.monotonic() < deadline:  # both wait, their batches begun
                row = holder.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND application_name = current_setting('application_name')"
                ).fetchone()
                waiting = row[0] if row is not None else 0
                if waiting >= 2:
                    break
                time.sleep(0.02)
            assert waiting >= 2
        finally:
            holder.rollback()
            holder.close()
        for thread in threads:
            thread.join(timeout=20)
            assert not thread.is_alive()
    changes = memory_rows(
        postgres_url, "SELECT state FROM history WHERE url_id = ? ORDER BY at", (home.url_id,)
    )
    assert changes == [("ok",), ("broken",)]


@pytest.mark.backends
def test_a_page_of_many_links_keeps_every_one_in_its_order(db: str, store: Store) -> None:
    # more links than one INSERT statement takes, the last statement a short one; links
    # repeated, some without a line, some with a fragment
    links = [
        Discovered(
            f"{H}/p{i % 450}",
            None if i % 7 == 0 else i + 1,
            Action.PARSE,
            fragment=f"f{i}" if i % 5 == 0 else None,
        )
        for i in range(1033)
    ]
    info = store.begin_pass([f"{H}/"], T0)
    store.seed(info.id, [(f"{H}/", Action.PARSE)], T0)
    (task,) = claim_all(store, info.id)
    store.complete(info.id, [replace(ok(task), links=links)], T0)

    (stored,) = store.outlinks(info.id)
    assert stored == (f"{H}/", [(link.url, link.line) for link in links])
    assert store.pending(info.id) == 450  # each new URL queued once
    order = "id" if is_postgres(db) else "rowid"
    fragments = memory_rows(db, f"SELECT fragment FROM links ORDER BY {order}")
    assert [row[0] for row in fragments] == [link.fragment for link in links]


@pytest.mark.backends
def test_a_batch_that_answers_a_url_twice_keeps_the_later_answer(store: Store) -> None:
    info = store.begin_pass([f"{H}/"], T0)
    store.seed(info.id, [(f"{H}/", Action.PARSE)], T0)
    (task,) = claim_all(store, info.id)
    store.complete(info.id, [ok(task, *[(f"{H}/p{i}", i) for i in range(40)])], T0)
    tasks = claim_all(store, info.id)
    assert len(tasks) == 40
    broken = [ok(t, state=State.BROKEN, http_status=500, error="HTTP 500") for t in tasks]
    # the first answer for tasks[3], the later for tasks[7]
    first, later = ok(tasks[3], http_status=203), ok(tasks[7], http_status=203)
    store.complete(info.id, [first, *broken, later], T0)

    states = {r.url: (r.state, r.http_status) for r in store.pass_urls(info.id)}
    assert states[tasks[3].url] == (State.BROKEN, 500)
    assert states[tasks[7].url] == (State.OK, 203)
    assert sum(state is State.BROKEN for state, _ in states.values()) == 39


@pytest.mark.backends
def test_an_unfinished_pass_resumes_with_its_leases_cleared(db: str, store: Store) -> None:
    start = [f"{H}/"]
    info = store.begin_pass(start, T0)
    store.seed(info.id, [(f"{H}/", Action.PARSE)], T0)
    (home,) = claim_all(store, info.id)
    store.complete(info.id, [answer(home)], T0)
    leased = claim_all(store, info.id)
    assert len(leased) == 4
    stopped = store.end_run(info.id, 0.5, T0 + 1, False, "SIGTERM")
    assert (stopped.complete, stopped.stopped_at, stopped.stop_reason) == (
        False,
        T0 + 1,
        "SIGTERM",
    )
    store.close()

    reopened = open_store(db, crawl=True)
    try:
        resumed = reopened.begin_pass(start, T0 + 5)
        assert resumed.id == info.id and resumed.resumed and resumed.stopped_at is None
        assert resumed.seen == 6 and resumed.requests == 1
        again = claim_all(reopened, info.id, T0 + 5)
        assert sorted(t.url for t in again) == sorted(t.url for t in leased)
        assert all(t.referrer == f"{H}/" for t in again)

        other = reopened.begin_pass([f"{H}/a"], T0 + 6)
        assert other.id == info.id + 1 and not other.resumed
        assert reopened.pending(info.id) == 4  # another set's pass keeps its frontier
        latest = reopened.latest_pass()
        assert latest is not None and latest.id == other.id
        reopened.end_run(other.id, 0.1, T0 + 7, True, None)
        first_again = reopened.begin_pass(start, T0 + 8)
        assert first_again.id == info.id and first_again.resumed
        assert len(claim_all(reopened, info.id, T0 + 8)) == 4
    finally:
        reopened.close()


@pytest.mark.backends
def test_claims_lease_urls_skip_busy_hosts_and_leases_expire(store: Store) -> None:
    info = store.begin_pass([f"{H}/"], T0)
    urls = [(f"{H}/{k}", Action.CHECK) for k in range(6)] + [
        (f"{OTHER}/{k}", Action.CHECK) for k in range(3)
    ]
    store.seed(info.id, urls, T0)

    first = store.claim(info.id, 4, T0, [OTHER], 30.0)
    assert len(first) == 4 and all(t.origin == H for t in first)
    second = store.claim(info.id, 100, T0 + 1, [OTHER], 30.0)
    assert {t.url for t in second} == {u for u, _ in urls[:6]} - {t.url for t in first}
    assert store.claim(info.id, 100, T0 + 2, [OTHER, H], 30.0) == []
    third = store.claim(info.id, 100, T0 + 3, [], 30.0)
    assert {t.origin for t in third} == {OTHER}

    store.release(info.id, [first[0].url_id])
    assert [t.url for t in store.claim(info.id, 100, T0 + 4, [], 30.0)] == [first[0].url]
    expired = store.claim(info.id, 100, T0 + 30.5, [], 30.0)  # the first leases ran out
    assert {t.url for t in expired} == {t.url for t in first[1:]}
    assert store.pending(info.id) == 9


@pytest.mark.backends
def test_claims_are_random_in_order(store: Store) -> None:
    info = store.begin_pass([f"{H}/"], T0)
    urls = [f"{H}/{k:03}" for k in range(200)]
    store.seed(info.id, [(u, Action.CHECK) for u in urls], T0)

    order = [t.url for t in claim_all(store, info.id)]

    assert sorted(order) == urls and order != urls


@pytest.mark.backends
def test_two_stores_claiming_at_once_never_share_a_url(db: str, store: Store) -> None:
    info = store.begin_pass([f"{H}/"], T0)
    urls = {f"{H}/{k}" for k in range(300)}
    store.seed(info.id, [(u, Action.CHECK) for u in sorted(urls)], T0)
    other = open_store(db, crawl=False)
    got: dict[int, list[str]] = {0: [], 1: []}

    def worker(n: int, claimer: Store) -> None:
        while True:
            tasks = claimer.claim(info.id, 7, T0, [], 60.0)
            if not tasks:
                return
            got[n].extend(t.url for t in tasks)

    try:
        threads = [
            threading.Thread(target=worker, args=(n, s)) for n, s in enumerate([store, other])
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads)
    finally:
        other.close()

    assert len(got[0]) + len(got[1]) == len(urls)
    assert set(got[0]) | set(got[1]) == urls


@pytest.mark.backends
def test_max_urls_and_max_similar_record_the_rest_unchecked(db: str, store: Store) -> None:
    info = store.begin_pass([f"{H}/"], T0, PassLimits(max_urls=8, max_similar=3))
    store.seed(info.id, [(f"{H}/", Action.PARSE)], T0)
    (home,) = claim_all(store, info.id)
    cal = [(f"{H}/cal/{k}", k) for k in range(1, 6)]
    store.complete(info.id, [ok(home, *cal, (f"{H}/p", 7), (f"{H}/q", 8), (f"{H}/r", 9))], T0)
    store.end_run(info.id, 1.0, T0, False, "SIGINT")
    store.close()

    reader = open_store(db, crawl=False)
    try:
        states = {r.url: (r.state, r.error) for r in reader.pass_urls(info.id)}
    finally:
        reader.close()
    like = f"not checked: --max-similar limit of 3 URLs like {H}/cal/#"
    assert [states[f"{H}/cal/{k}"] for k in (4, 5)] == [(State.UNCHECKED, like)] * 2
    assert states[f"{H}/q"] == (State.UNCHECKED, None)  # queued, no verdict yet
    assert states[f"{H}/r"] == (
        State.UNCHECKED,
        "not checked: --max-urls limit of 8 URLs reached",
    )

    # a resumed pass, in a new process, goes on counting where the last one stopped
    again = open_store(db, crawl=True)
    try:
        resumed = again.begin_pass([f"{H}/"], T0 + 1, PassLimits(max_urls=0, max_similar=3))
        assert resumed.resumed
        queued = {t.url: t for t in claim_all(again, info.id, T0 + 1)}
        assert set(queued) == {f"{H}/cal/1", f"{H}/cal/2", f"{H}/cal/3", f"{H}/p", f"{H}/q"}
        page_p = queued[f"{H}/p"]
        again.complete(info.id, [ok(page_p, (f"{H}/cal/9", 1), (f"{H}/s", 2))], T0 + 2)
        last = {r.url: r.state for r in again.pass_urls(info.id)}
        assert last[f"{H}/cal/9"] is State.UNCHECKED and f"{H}/s" in last
    finally:
        again.close()


@pytest.mark.backends
def test_every_change_of_state_is_history(db: str, store: Store) -> None:
    url = f"{H}/flaky"
    answers = [
        (State.OK, 200, None),
        (State.OK, 200, None),
        (State.BROKEN, 404, "HTTP 404"),
        (State.BROKEN, 500, "HTTP 500"),
        (State.BROKEN, 500, "HTTP 500"),
        (State.OK, 200, None),
    ]
    for day, (state, status, error) in enumerate(answers):
        now = T0 + day * 86400
        info = store.begin_pass([url], now)
        store.seed(info.id, [(url, Action.CHECK)], now)
        (task,) = claim_all(store, info.id, now)
        outcome = ok(task, state=state, http_status=status, error=error)
        store.complete(info.id, [outcome], now)
        store.end_run(info.id, 0.1, now, True, None)
        record = next(store.pass_urls(info.id))
        if day == 4:
            assert record.failing_since == T0 + 2 * 86400 and record.last_good == T0 + 86400

    rows = memory_rows(db, "SELECT pass_id, state, http_status, error FROM history ORDER BY at")
    assert rows == [
        (1, "ok", 200, None),
        (3, "broken", 404, "HTTP 404"),
        (4, "broken", 500, "HTTP 500"),
        (6, "ok", 200, None),
    ]


@pytest.mark.backends
def test_robots_txt_is_remembered_per_host(store: Store) -> None:
    assert store.site(H) is None
    first = SiteRecord(H, RobotsState.HANDLED, 200, "User-agent: *\nDisallow: /x\n", T0)
    store.save_site(first)
    store.save_site(
        SiteRecord(OTHER, RobotsState.UNREACHABLE, None, None, T0, "connection refused")
    )
    assert store.site(H) == first
    newer = SiteRecord(H, RobotsState.ERROR, 503, None, T0 + 5, None)
    store.save_site(newer)
    assert store.site(H) == newer
    assert store.site(OTHER) == SiteRecord(
        OTHER, RobotsState.UNREACHABLE, None, None, T0, "connection refused"
    )
    # a NUL, which PostgreSQL text cannot hold, is kept by SQLite and replaced there
    store.save_site(SiteRecord(H, RobotsState.HANDLED, 200, "a\x00b", T0))
    saved = store.site(H)
    assert saved is not None and saved.body in ("a\x00b", "a\ufffdb")


# makes every insert of links fail, as a full disk would, in the middle of a write
_REFUSE_LINKS = {
    "sqlite": [
        "CREATE TRIGGER refuse BEFORE INSERT ON links BEGIN SELECT RAISE(ABORT, 'no room'); END"
    ],
    "postgres": [
        "CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'no room'; END $$ "
        "LANGUAGE plpgsql",
        "CREATE TRIGGER refuse BEFORE INSERT ON links FOR EACH ROW EXECUTE FUNCTION refuse()",
    ],
}


@pytest.mark.backends
def test_a_write_that_fails_leaves_nothing_behind_for_the_next_one(db: str, store: Store) -> None:
    """The URLs a failed write discovered are gone with it: the next write of the same links
    adds them again rather than pointing at rows the memory never kept."""
    info = store.begin_pass([f"{H}/"], T0)
    store.seed(info.id, [(f"{H}/", Action.PARSE)], T0)
    home = claim_all(store, info.id)[0]
    links = [(f"{H}/a", 3), (f"{H}/b", 4), (f"{OTHER}/x", 5)]
    for sql in _REFUSE_LINKS["postgres" if is_postgres(db) else "sqlite"]:
        memory_write(db, sql)
    with pytest.raises(StoreError, match="no room"):
        store.complete(info.id, [ok(home, *links)], T0)
    memory_write(db, "DROP TRIGGER refuse ON links" if is_postgres(db) else "DROP TRIGGER refuse")

    store.complete(info.id, [ok(home, *links)], T0)
    assert_memory_intact(db)
    assert dict(store.outlinks(info.id))[f"{H}/"] == links
    assert sorted(t.url for t in claim_all(store, info.id)) == [f"{H}/a", f"{H}/b", f"{OTHER}/x"]


@pytest.mark.backends("sqlite")  # PostgreSQL crawlers share a pass: tests/test_workers.py
def test_a_second_crawler_is_refused_while_readers_read(db: str, store: Store) -> None:
    info = store.begin_pass([f"{H}/"], T0)

    with pytest.raises(StoreError) as refused:
        open_store(db, crawl=True)

    assert str(refused.value) == f"{db}: another linkpatrol process is crawling with this database"
    reader = open_store(db, crawl=False)
    try:
        latest = reader.latest_pass()
        assert latest is not None and latest.id == info.id
    finally:
        reader.close()
    store.close()
    open_store(db, crawl=True).close()  # free again once the crawler has closed


@pytest.mark.backends
def test_a_newer_or_foreign_schema_is_refused(db: str, store: Store) -> None:
    store.close()
    newer = SCHEMA_VERSION + 1
    memory_write(db, f"UPDATE meta SET value = '{newer}' WHERE key = 'schema_version'")
    for crawl in (True, False):
        with pytest.raises(StoreError, match=f"written by a newer linkpatrol \\(schema {newer}"):
            open_store(db, crawl=crawl)

    memory_write(db, "DROP TABLE meta")
    with pytest.raises(StoreError, match="not a linkpatrol database \\(no meta table\\)"):
        open_store(db, crawl=True)


@pytest.mark.backends
def test_reading_a_memory_without_a_pass_says_so(db: str) -> None:
    if not is_postgres(db):
        with pytest.raises(StoreError, match="no such database"):
            open_store(db, crawl=False)
        open(db, "wb").close()
    with pytest.raises(StoreError, match="empty database \\(no pass recorded yet\\)"):
        open_store(db, crawl=False)


@pytest.mark.backends
def test_plugin_fields_are_kept_per_pass_and_plugin(db: str, store: Store) -> None:
    first = store.begin_pass([f"{H}/"], T0)
    store.end_run(first.id, 1.0, T0 + 1, True, None)
    second = store.begin_pass([f"{H}/"], T0 + 10)
    nested = {"addresses": ["jürgen@exämple.de"], "more": {"a": [1, None, True, 2.5]}}

    store.save_plugin_fields(first.id, {"zeta": {"n": 1}, "mailto": nested})
    store.save_plugin_fields(second.id, {"mod:Plugin": {"n": 2}, "mailto": {"n": 0}})
    store.save_plugin_fields(first.id, {"zeta": {"n": 3}})  # a later run replaces its own

    assert list(store.plugin_fields(first.id).items()) == [("mailto", nested), ("zeta", {"n": 3})]
    assert list(store.plugin_fields(second.id)) == ["mailto", "mod:Plugin"]
    assert store.plugin_fields(second.id + 1) == {}
    store.end_run(second.id, 1.0, T0 + 11, True, None)
    reader = open_store(db, crawl=False)
    try:
        assert reader.plugin_fields(first.id) == {"mailto": nested, "zeta": {"n": 3}}
    finally:
        reader.close()


def test_both_backends_remember_a_crawl_the_same(postgres_url: str, tmp_path: Any) -> None:
    seen = []
    for location in (str(tmp_path / "memory.db"), postgres_url):
        store = open_store(location, crawl=True)
        try:
            first = crawl_by_hand(store)
            second = crawl_by_hand(store)
            seen.append((observable(store, first), observable(store, second)))
        finally:
            store.close()

    assert seen[0] == seen[1]


# ---- PostgreSQL alone -----------------------------------------------------------------------


def test_referrers_come_in_byte_order_whatever_the_locale(postgres_url: str) -> None:
    """A database whose text sorts by a language's rules still lists referrers as SQLite."""
    store = open_store(postgres_url, crawl=True)
    try:
        if not memory_rows(postgres_url, "SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu'"):
            pytest.skip("this PostgreSQL has no ICU collations")
        memory_write(
            postgres_url, 'ALTER TABLE urls ALTER COLUMN url TYPE text COLLATE "und-x-icu"'
        )
        pass_id = crawl_by_hand(store)
        referrers = {r.url: r.referrers for r in store.pass_urls(pass_id)}
    finally:
        store.close()

    assert [url for url, _ in referrers[f"{H}/gone"]] == [f"{H}/B", f"{H}/a", f"{H}/a", f"{H}/b"]


def test_claims_skip_rows_another_writer_holds_without_waiting(postgres_url: str) -> None:
    import psycopg

    store = open_store(postgres_url, crawl=True)
    holder = psycopg.connect(postgres_url)
    try:
        info = store.begin_pass([f"{H}/"], T0)
        store.seed(info.id, [(f"{H}/{k}", Action.CHECK) for k in range(10)], T0)
        held = [
            r[0]
            for r in holder.execute(
                "SELECT url_id FROM frontier ORDER BY url_id LIMIT 4 FOR UPDATE"
            ).fetchall()
        ]
        claimed: list[Task] = []
        claiming = threading.Thread(
            target=lambda: claimed.extend(store.claim(info.id, 100, T0, [], 60.0))
        )
        claiming.start()
        claiming.join(timeout=10)
        waited = claiming.is_alive()
        holder.rollback()
        claiming.join(timeout=10)

        assert not waited, "the claim waited for rows another transaction held"
        assert len(claimed) == 6 and not {t.url_id for t in claimed} & set(held)
        assert {t.url_id for t in claim_all(store, info.id)} == set(held)
    finally:
        holder.close()
        store.close()


@pytest.mark.parametrize(
    ("make_url", "message"),
    [
        (lambda base, port: f"postgresql://postgres@127.0.0.1:{port}/test", "Connection refused"),
        (
            lambda base, port: base.replace("/test", "/linkpatrol_no_such_db", 1),
            'database "linkpatrol_no_such_db" does not exist (create it first',
        ),
        (
            lambda base, port: base.replace("://postgres@", "://linkpatrol_nobody@", 1),
            'authentication failed: role "linkpatrol_nobody" does not exist',
        ),
        (lambda base, port: base + "&sslmode=bogus", "invalid sslmode value"),
        (
            lambda base, port: base.replace("search_path%3D", "search_path%3Dnot_there_", 1),
            "no schema to keep the memory in",
        ),
    ],
    ids=["unreachable", "missing-database", "unknown-role", "bad-option", "no-schema"],
)
def test_a_bad_connection_is_one_clear_line(postgres_url: str, make_url: Any, message: str) -> None:
    url = make_url(postgres_url, free_port())
    for crawl in (True, False):
        with pytest.raises(StoreError) as failed:
            open_store(url, crawl=crawl)
        text = str(failed.value)
        assert text.startswith(f"{url}: ") and message in text, text
        assert "\n" not in text


def test_a_password_is_never_shown(postgres_server: str) -> None:
    url = f"postgresql://someone:s3cret@127.0.0.1:{free_port()}/test"

    with pytest.raises(StoreError) as failed:
        open_store(url, crawl=True)

    assert "s3cret" not in str(failed.value)
    assert str(failed.value).startswith(f"postgresql://someone:***@127.0.0.1:{url.split(':')[3]}")


def test_an_error_of_the_server_is_one_line_with_its_context(postgres_url: str) -> None:
    import psycopg

    from linkpatrol.store.postgres import _explain

    with psycopg.connect(postgres_url) as conn, pytest.raises(psycopg.Error) as failed:
        conn.execute("DO $$ BEGIN RAISE EXCEPTION 'no room for %', 'that'; END $$")

    assert "\nCONTEXT:" in str(failed.value)  # the server's second line, labelled
    assert _explain(failed.value) == (
        "no room for that; context: PL/pgSQL function inline_code_block line 1 at RAISE"
    )


def test_the_command_refuses_an_unreachable_server_with_exit_2(run: Runner) -> None:
    port = free_port()
    url = f"postgres://postgres@127.0.0.1:{port}/test"
    for args in (["check", "--db", url, "http://127.0.0.1:9/"], ["report", "--db", url]):
        proc = run(*args, timeout=60)
        assert proc.returncode == 2
        assert proc.stdout == ""
        assert proc.stderr.splitlines() == [
            f"linkpatrol: {url}: cannot connect to PostgreSQL: connection to server at "
            f'"127.0.0.1", port {port} failed: Connection refused; is the server running '
            "on that host and accepting TCP/IP connections?"
        ]


def test_the_db_key_of_a_configuration_takes_a_postgres_url(
    run: Runner, serve: Any, postgres_url: str
) -> None:
    site = serve({"/": Page(html("<a href='/gone'>x</a>")), "/robots.txt": Page("", status=404)})
    url = "postgres://" + postgres_url.split("://", 1)[1]
    (run.cwd / "linkpatrol.toml").write_text(
        f'start = ["{site.url("/")}"]\nformat = "json"\ndb = "{url}"\n', encoding="utf-8"
    )

    proc = run("check")

    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["summary"]["broken"] == 1
    assert memory_rows(postgres_url, "SELECT id, complete FROM passes") == [(1, 1)]
    assert sorted(p.name for p in run.cwd.iterdir()) == ["linkpatrol.toml"]
    again = run("report")
    assert again.returncode == 1 and again.stdout == proc.stdout


CRAWLER = """
import os, sys, time
from linkpatrol.store import open_store
store = open_store(sys.argv[1], crawl=True)
store.begin_pass(["http://h.test/"], time.time())
if os.fork() == 0:  # a parse worker outliving its crawler
    time.sleep(30)
    os._exit(0)
print("locked", flush=True)
time.sleep(60)
"""


def test_a_crawler_killed_with_sigkill_frees_the_memory_at_once(postgres_url: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", CRAWLER, postgres_url],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        assert select.select([proc.stdout], [], [], 30)[0], "the crawler did not start"
        assert proc.stdout.readline() == "locked\n"
        other = open_store(postgres_url, crawl=True)
        try:
            with pytest.raises(StoreError, match="another linkpatrol process"):
                other.begin_pass(["http://other.test/"], time.time())
            proc.kill()
            proc.wait(timeout=10)
            # the server drops the lock as soon as it sees the connection close (a forked
            # child holding the socket, or TCP keepalives, would take 30 s and more)
            assert other.begin_pass(["http://other.test/"], time.time()).id == 2
        finally:
            other.close()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def test_a_claim_whose_commit_was_answered_on_a_lost_connection_leases_only_what_it_returns(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from linkpatrol.store import postgres

    store = open_store(postgres_url, crawl=True)
    try:
        info = store.begin_pass([f"{H}/"], T0)
        store.seed(info.id, [(f"{H}/{k}", Action.CHECK) for k in range(6)], T0)
        real = postgres.PostgresStore._tx
        lost: list[bool] = []

        @contextlib.contextmanager
        def committed_then_lost(self: Any) -> Iterator[Any]:
            with real(self) as s:
                yield s
            if not lost:  # the first transaction commits, and its answer never comes
                lost.append(True)
                raise postgres._Lost(f"{self.location}: server closed the connection")

        monkeypatch.setattr(postgres.PostgresStore, "_tx", committed_then_lost)
        tasks = store.claim(info.id, 2, T0, (), 60.0)
        assert lost and len(tasks) == 2
        leased = memory_rows(
            postgres_url, "SELECT url_id FROM frontier WHERE lease_owner IS NOT NULL"
        )
        assert sorted(r[0] for r in leased) == sorted(t.url_id for t in tasks)
    finally:
        store.close()


def keepalive_of(conn: Any) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """A connection's keepalive settings: the server's, as it reports them for its side
    of the connection, and this side's, read off the socket."""
    names = ("tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count")
    server = tuple(conn.execute(f"SHOW {name}").fetchone()[0] for name in names)
    server += (conn.execute("SHOW tcp_user_timeout").fetchone()[0],)
    with socket.socket(fileno=os.dup(conn.pgconn.socket)) as sock:
        options = (socket.TCP_KEEPIDLE, socket.TCP_KEEPINTVL, socket.TCP_KEEPCNT)
        client = tuple(sock.getsockopt(socket.IPPROTO_TCP, option) for option in options)
        client += (sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT),)
    return server, client


def test_both_sides_of_every_connection_give_up_on_a_silent_peer_in_seconds(
    postgres_url: str,
) -> None:
    # A vanished worker's lock, and rows it locked, go with its session: the server's side
    # must notice a silent peer as soon as the worker's side does. The URL's own values
    # win on both sides.
    assert urlsplit(postgres_url).hostname == "127.0.0.1", "this test needs TCP"
    for query, server, client in (
        ("", ("5", "2", "3", "15000"), (5, 2, 3, 15000)),
        ("keepalives_idle=7&tcp_user_timeout=9000", ("7", "2", "3", "9000"), (7, 2, 3, 9000)),
    ):
        joint = "&" if "?" in postgres_url else "?"
        url = f"{postgres_url}{joint}{query}" if query else postgres_url
        store = open_store(url, crawl=True)
        assert isinstance(store, PostgresStore)
        try:
            assert keepalive_of(store._holder) == (server, client)  # the liveness lock's
            with store._pool().connection() as pooled:
                assert keepalive_of(pooled) == (server, client)
        finally:
            store.close()


def lose_lock(db: str, worker: Store) -> None:
    """End the connection that holds a worker's liveness lock, from the server."""
    pid = worker._holder.info.backend_pid  # type: ignore[attr-defined]
    # with a time-out, the call returns once the backend is gone, and its locks with it
    assert memory_rows(db, "SELECT pg_terminate_backend(?, 10000)", (pid,)) == [(True,)]


def test_a_worker_taken_for_gone_takes_its_lock_again_and_rejoins_while_its_pass_goes_on(
    postgres_url: str,
) -> None:
    from linkpatrol.store import postgres

    with two_workers(postgres_url) as (first, second, pass_id):
        places = [w.heartbeat(time.time(), 0, 0, 4) for w in (first, second)]
        assert [p[:2] for p in places] == [(2, 2), (2, 2)]
        assert sorted(p.rank for p in places) == [0, 1]  # by age, then by id: one each
        lose_lock(postgres_url, second)
        # the first sees the second's lock gone: its URLs are due again, it is forgotten
        assert first.heartbeat(time.time(), 0, 0, 4) == (4, 1, 0)
        assert len(first.workers()) == 1
        # the second finds its lock connection gone, takes a lock again (its first try to
        # connect fails, as when the server is not back yet) and rejoins
        connect = second._connect  # type: ignore[attr-defined]
        tries: list[int] = []

        def not_yet(*args: Any, **kwargs: Any) -> Any:
            tries.append(1)
            if len(tries) == 1:
                raise postgres._Lost(f"{second.location}: cannot connect to PostgreSQL")
            return connect(*args, **kwargs)

        second._connect = not_yet  # type: ignore[attr-defined]
        assert second.heartbeat(time.time(), 0, 0, 4)[:2] == (0, 2)
        assert len(tries) == 2
        assert {w.pid for w in first.workers()} == {os.getpid()}
        assert len(first.workers()) == 2
        assert first.heartbeat(time.time(), 0, 0, 4)[1] == 2

        # once the pass is over and another begun, it has nothing to rejoin
        lose_lock(postgres_url, second)
        first.end_run(pass_id, 1.0, T0 + 1, True, None)
        first.begin_pass([f"{OTHER}/"], T0 + 2)
        with pytest.raises(StoreError, match=r"taken for gone.*moved on to another pass"):
            second.heartbeat(time.time(), 0, 0, 4)


def test_sqlite_crawl_journals_statements_in_memory_and_the_report_sorts_on_file(
    tmp_path: Any,
) -> None:
    """A crawl's batches keep their statement journals in memory (they went to a new
    temporary file each, past 64 KB), in a page cache of 8 MB; from the end of the run, the
    report's sorts of every link spill to a file again past a reader's 2 MB, as they must
    on a big site (in memory, they held 12 MB more at 20,000 pages)."""
    store = sqlite_store.SqliteStore(str(tmp_path / "memory.db"), crawl=True)
    try:

        def temp_store() -> int:
            return int(store._db.execute("PRAGMA temp_store").fetchone()[0])

        def cache() -> int:
            return int(store._db.execute("PRAGMA cache_size").fetchone()[0])

        default = temp_store()
        assert default != 2
        assert cache() == -2048
        for _ in range(2):  # and again for a second pass by the same store
            info = store.begin_pass([f"{H}/"], T0)
            assert (temp_store(), cache()) == (2, -8192)  # MEMORY
            store.seed(info.id, [(f"{H}/", Action.PARSE)], T0)
            store.complete(info.id, [answer(t) for t in claim_all(store, info.id)], T0)
            assert (temp_store(), cache()) == (2, -8192)
            store.end_run(info.id, 1.0, T0 + 1, False, "SIGINT")
            assert (temp_store(), cache()) == (default, -2048)
    finally:
        store.close()


def test_sqlite_reader_keeps_a_small_cache(tmp_path: Any) -> None:
    """A report's reader (the command's, a helper's, 'linkpatrol report') keeps a page
    cache of 2 MB, past which its sort of every link spills to a file: the 2,000-page
    benchmark's report took as long with 8 MB, and 20,000 pages' 14 MB less."""
    path = str(tmp_path / "memory.db")
    crawler = sqlite_store.SqliteStore(path, crawl=True)
    crawler.close()
    store = sqlite_store.SqliteStore(path, crawl=False)
    try:
        assert store._db.execute("PRAGMA cache_size").fetchone()[0] == -2048
    finally:
        store.close()


def test_sqlite_lists_of_values_come_in_a_few_lengths_and_mean_the_same() -> None:
    """An IN list is padded to a power of two, so that a few compiled statements serve
    lists of every length: the rows it selects, or leaves out, are those asked for."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY)")
    db.executemany("INSERT INTO t VALUES(?)", [(i,) for i in range(40)])
    lengths = set()
    for n in range(1, 34):
        wanted = list(range(0, 2 * n, 2))  # beyond the table's rows from n = 21
        condition, values = sqlite_store.SQLITE.member("id", wanted)
        lengths.add(len(values))
        chosen = db.execute(f"SELECT id FROM t WHERE {condition} ORDER BY id", values)
        assert [row[0] for row in chosen] == [i for i in wanted if i < 40]
        condition, values = sqlite_store.SQLITE.member("id", wanted, negate=True)
        left = db.execute(f"SELECT id FROM t WHERE {condition} ORDER BY id", values)
        assert [row[0] for row in left] == [i for i in range(40) if i not in wanted]
    assert lengths == {1, 2, 4, 8, 16, 32, 64}
