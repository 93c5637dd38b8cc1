"""One memory, several sites: each set of start values has its own passes. A check of other
start values leaves an unfinished pass to be resumed, and every view of a pass (its report,
its status, its trend, what is new in it) is of passes of its own start values."""

from __future__ import annotations

import json
from typing import Any

import pytest

from linkpatrol.store import open_store
from tests.conftest import Runner, Serve
from tests.sitesrv import Page, html

pytestmark = pytest.mark.backends

T0 = 1_700_000_000.0


def site(shared: str, name: str, pages: int) -> dict[str, Page]:
    """A home page linking to ``pages`` pages, each linking to the shared host's good and
    broken pages and to one broken page of its own site."""
    home = [f'<a href="/{name}{i}.html">{name} {i}</a>' for i in range(pages)]
    site_pages = {"/": Page(html("<html><body>", *home, "</body></html>"))}
    for i in range(pages):
        site_pages[f"/{name}{i}.html"] = Page(
            html(
                "<p>",
                f'<a href="{shared}/ok">ok</a>',
                f'<a href="{shared}/gone">gone</a>',
                f'<a href="/{name}-missing">missing</a>',
                "</p>",
            )
        )
    site_pages["/robots.txt"] = Page("", status=404)
    return site_pages


def broken(report: dict[str, Any]) -> dict[str, list[str]]:
    """Each reportable URL with the pages that link to it."""
    return {
        e["url"]: sorted(r["url"] for r in e["referrers"])
        for e in report["urls"]
        if e["reportable"]
    }


def test_a_check_of_other_start_values_leaves_an_unfinished_pass_to_resume(
    run: Runner, serve: Serve
) -> None:
    shared = serve({"/ok": Page("fine"), "/robots.txt": Page("", status=404)})
    a = serve(site(shared.base, "a", 6))
    b = serve(site(shared.base, "b", 2))

    code, cut = run.check_json(a.url("/"), "--max-requests", "3")
    assert code == 3 and not cut["complete"]
    code, other = run.check_json(b.url("/"))
    assert code == 1 and other["complete"] and other["pass"] == cut["pass"] + 1
    a.clear()
    code, resumed = run.check_json(a.url("/"))

    # the same pass goes on: what it had requested is not requested again
    assert code == 1 and resumed["complete"] and resumed["pass"] == cut["pass"]
    assert ("GET", "/") not in [(h.method, h.path) for h in a.requests()]
    pages = sorted(a.url(f"/a{i}.html") for i in range(6))
    # the URLs it shares with the other site's pass are its own, with its own pages only
    assert broken(resumed) == {shared.url("/gone"): pages, a.url("/a-missing"): pages}
    assert [p["pass"] for p in resumed["passes"]] == [cut["pass"]]

    # a reading command shows the pass of the start values it names
    for values, expected in (([], resumed), ([a.url("/")], resumed), ([b.url("/")], other)):
        proc = run("report", "--db", run.db, "--format", "json", *values)
        assert proc.returncode == 1, proc.stderr
        shown = json.loads(proc.stdout)
        assert shown["pass"] == expected["pass"] and broken(shown) == broken(expected)
        proc = run("status", "--db", run.db, "--format", "json", *values)
        assert proc.returncode == 0 and json.loads(proc.stdout)["pass"] == expected["pass"]
    proc = run("report", "--db", run.db, shared.url("/"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"no pass of {shared.url('/')} recorded" in proc.stderr


def test_what_is_new_and_the_trend_compare_passes_of_the_same_start_values(
    run: Runner, serve: Serve
) -> None:
    shared = serve({"/ok": Page("fine"), "/robots.txt": Page("", status=404)})
    a = serve(site(shared.base, "a", 2))
    b = serve(site(shared.base, "b", 2))

    code, first = run.check_json(a.url("/"))
    assert code == 1 and first["summary"]["new"] == 2
    code, other = run.check_json(b.url("/"))
    assert code == 1 and other["compared_with"] is None  # no pass of its own before
    code, again = run.check_json(a.url("/"), "--fail-on", "new")

    assert code == 0 and again["summary"]["new"] == 0
    assert again["compared_with"]["pass"] == first["pass"]
    assert [p["pass"] for p in again["passes"]] == [first["pass"], again["pass"]]


def test_the_passes_compared_are_those_of_the_same_start_values(db: str) -> None:
    """The passes a report's trend and a URL's flips are counted over, and the pass shown
    by default: the one a run last began or ended."""
    store = open_store(db, crawl=True)
    try:
        ids: dict[str, list[int]] = {"a": [], "b": []}
        for n, name in enumerate("abab"):
            info = store.begin_pass([f"http://{name}.test/"], T0 + 10 * n)
            store.end_run(info.id, 1.0, T0 + 10 * n + 1, True, None)
            ids[name].append(info.id)
        cut = store.begin_pass(["http://a.test/"], T0 + 50)
        store.end_run(cut.id, 1.0, T0 + 51, False, "SIGTERM")
        store.begin_pass(["http://b.test/"], T0 + 60)  # a run of b is under way
        assert [p.id for p in store.passes(10, like=ids["a"][0])] == [*ids["a"], cut.id]
        assert [p.id for p in store.passes(2, like=ids["b"][1])] == [ids["b"][1], ids["b"][1] + 2]
        latest = store.latest_pass()
        assert latest is not None and latest.id == ids["b"][1] + 2
        of_a = store.latest_pass(start_urls=["http://a.test/"])
        assert of_a is not None and of_a.id == cut.id
        named = store.latest_pass(inputs=["http://c.test/"], start_urls=["http://c.test/"])
        assert named is None
    finally:
        store.close()
