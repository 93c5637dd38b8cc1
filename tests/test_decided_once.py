"""A link is decided once: what plugins are told, what the memory keeps and what the
report shows agree, even when the site moves during the pass (a start URL redirects)."""

from __future__ import annotations

import json
import textwrap
from collections import defaultdict
from typing import Any

import pytest

from linkpatrol.config import SiteSettings
from linkpatrol.extract import Link
from linkpatrol.extract import Page as ParsedHtml
from linkpatrol.model import Action
from linkpatrol.parsepool import LinkDecider
from linkpatrol.policy import Policy
from linkpatrol.store import open_store
from tests.conftest import Runner, by_url, memory_rows
from tests.sitesrv import Page, html

T0 = 1_700_000_000.0

WATCHER = """
import json
from linkpatrol.plugins import Plugin


class Watcher(Plugin):
    def __init__(self, options=None):
        super().__init__(options)
        self.out = open("events.jsonl", "a", encoding="utf-8")

    def url_checked(self, url, verdict):
        self.out.write(json.dumps(["checked", url, verdict.action.value]) + "\\n")

    def page_parsed(self, page, links):
        for link in links:
            self.out.write(json.dumps(["linked", link.url, link.action.value]) + "\\n")

    def pass_finished(self, info, report):
        self.out.close()
"""


def moved(location: str) -> Page:
    return Page("", status=301, headers={"Location": location}, etag=False)


def events(run: Runner) -> dict[str, set[tuple[str, str]]]:
    """Each URL's actions as plugins were told them: (event, action) pairs."""
    seen: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for line in (run.cwd / "events.jsonl").read_text(encoding="utf-8").splitlines():
        event, url, action = json.loads(line)
        seen[url].add((event, action))
    return seen


@pytest.mark.backends
def test_a_start_url_that_moves_the_site_is_decided_the_same_everywhere(
    run: Runner, serve: Any
) -> None:
    site = serve(
        {
            "/robots.txt": Page("", status=404),
            "/old/": moved("/new/"),
            "/new/": Page(html('<a href="a.html">a</a>', '<a href="b.html">b</a>')),
            "/new/a.html": Page(html('<a href="b.html">b</a>', '<a href="c.html">c</a>')),
            "/new/b.html": Page(html('<a href="a.html">a</a>', '<a href="/outside">o</a>')),
            "/new/c.html": Page(html('<a href="gone.html">gone</a>')),
            "/outside": Page("fine", content_type="text/plain"),
        }
    )
    (run.cwd / "watcher.py").write_text(textwrap.dedent(WATCHER), encoding="utf-8")

    code, report = run.check_json(
        site.url("/old/"),
        "--plugins",
        "watcher:Watcher",
        env={"PYTHONPATH": str(run.cwd)},
    )

    assert code == 1  # new/gone.html
    told = events(run)
    urls = by_url(report)
    kept = dict(memory_rows(run.db, "SELECT url, action FROM urls"))
    for name in ("a.html", "b.html", "c.html", "gone.html"):
        url = site.url(f"/new/{name}")
        assert told[url] == {("linked", "parse"), ("checked", "parse")}, url
        assert urls[url]["action"] == kept[url] == "parse", url
    outside = site.url("/outside")
    assert told[outside] == {("linked", "check"), ("checked", "check")}
    assert urls[outside]["action"] == kept[outside] == "check"
    assert site.counts("GET").get("/outside", 0) == 0  # only checked, never read


@pytest.mark.backends
def test_the_site_s_growth_is_kept_with_the_pass_for_every_worker(db: str) -> None:
    start = "http://127.0.0.1:9/old/"
    first = open_store(db, crawl=True)
    try:
        info = first.begin_pass([start], T0)
        assert info.sites == ()
        assert first.extend_site(info.id, ["http://127.0.0.1:9/new/"]) == (
            "http://127.0.0.1:9/new/",
        )
        # another worker's growth adds to it; one already known changes nothing
        grown = first.extend_site(info.id, ["http://127.0.0.1:9/new/", "https://127.0.0.1:9/"])
        assert grown == ("http://127.0.0.1:9/new/", "https://127.0.0.1:9/")
        assert first.sites(info.id) == grown
        first.end_run(info.id, 1.0, T0 + 1, False, "SIGINT")
    finally:
        first.close()
    again = open_store(db, crawl=True)
    try:
        resumed = again.begin_pass([start], T0 + 2)
        assert resumed.id == info.id and resumed.sites == grown
    finally:
        again.close()


def test_a_parse_worker_decides_with_the_site_as_it_grew() -> None:
    settings = SiteSettings(start_urls=("http://h.test/old/",))
    decider = LinkDecider(Policy(settings))
    link = Link("/new/a.html", 3, "a", "href")
    page = ParsedHtml([link], None, "utf-8", frozenset(), None)
    (before,) = decider.page(page, "http://h.test/old/x.html")[0]
    decider.grow(("http://h.test/new/",))
    (after,) = decider.page(page, "http://h.test/old/x.html")[0]
    assert (before[0], before[2]) == ("http://h.test/new/a.html", Action.CHECK)
    assert (after[0], after[2]) == ("http://h.test/new/a.html", Action.PARSE)
