"""``bench/floor.py`` on a small site: the floor crawls it whole, however it parses.

The floor is quoted as the least any crawler on linkpatrol's libraries takes: this keeps
it from being fast by checking less than the site holds.
"""

from __future__ import annotations

import pytest

from bench import floor
from tests import sitesrv
from tests.test_stop_resume import generated_site


def expected(pages: dict[str, sitesrv.Page], base: str) -> tuple[set[str], set[str]]:
    """(every URL the site links to, home page included; the broken ones)."""
    linked = {base + "/", base + "/private/x"}  # the home page links to a page not served
    linked |= {base + path for path in pages if path not in ("/", "/robots.txt")}
    broken = {base + "/private/x"} | {base + path for path in pages if path.startswith("/missing/")}
    return linked, broken


@pytest.mark.parametrize("workers", [0, 2])
def test_the_floor_checks_every_url_of_the_site_once(workers: int) -> None:
    pages = generated_site(indexes=3, per_index=10)
    with sitesrv.TestSite(pages) as site:
        crawl = floor.Floor(site.url("/"), workers)
        crawl.run()
        hits = site.counts()
    linked, broken = expected(pages, site.base)
    assert crawl.seen == linked
    assert crawl.checked == len(linked)
    assert set(crawl.broken) == broken and len(broken) >= 2
    assert max(hits.values()) == 1  # nothing asked twice
    assert all(kid.exitcode is not None for kid in crawl.kids)  # the parse processes ended


def test_site_only_requests_no_url_of_another_site() -> None:
    with sitesrv.TestSite({"/": sitesrv.Page("far")}) as far:
        pages = {
            "/": sitesrv.Page(sitesrv.html(f'<a href="{far.url("/")}">far</a><a href="/a">a</a>'))
        }
        pages["/a"] = sitesrv.Page("a")
        with sitesrv.TestSite(pages) as site:
            kept = floor.Floor(site.url("/"), 0, site_only=True)
            kept.run()
            free = floor.Floor(site.url("/"), 0)
            free.run()
        asked = far.counts()
    assert kept.seen == {site.url("/"), site.url("/a")} and kept.checked == 2
    assert free.seen == kept.seen | {far.url("/")} and free.checked == 3
    assert asked == {"/": 1}  # by the crawl not kept to its site alone


def test_a_round_is_timed_in_a_fresh_process() -> None:
    pages = generated_site(indexes=2, per_index=5)
    with sitesrv.TestSite(pages) as site:
        wall, cpu, checked, broken = floor.one_round(site.url("/"), 1, "libxml2")
    linked, dead = expected(pages, site.base)
    assert checked == len(linked) and broken == len(dead)
    assert wall > 0 and cpu > 0
