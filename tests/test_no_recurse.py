"""--no-recurse: the start values are requested and their links checked; no page found on
them is parsed, so nothing beyond their links is ever requested."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from linkpatrol.config import SiteSettings
from linkpatrol.model import Action
from linkpatrol.policy import Policy
from tests import sitesrv
from tests.conftest import Runner, Serve, by_url
from tests.sitesrv import Page, html

START = "https://example.org/docs/"
PARSE, CHECK, RECORD = Action.PARSE, Action.CHECK, Action.RECORD


@pytest.mark.parametrize(
    ("recurse", "url", "action"),
    [
        (True, START, PARSE),
        (True, START + "guide.html", PARSE),
        (False, START, PARSE),
        (False, "https://example.org/docs", PARSE),  # a start value, written without a slash
        (False, START + "guide.html", CHECK),  # in the site, yet only checked
        (False, "https://example.org/list.html", PARSE),  # the other start value
        (False, "https://other.example/", CHECK),
        (False, "mailto:web@example.org", RECORD),
    ],
)
def test_only_the_start_values_are_parsed(recurse: bool, url: str, action: Action) -> None:
    starts = (START, "https://example.org/list.html")
    policy = Policy(SiteSettings(start_urls=starts, recurse=recurse))
    if url == "https://example.org/docs":
        policy = Policy(SiteSettings(start_urls=(url,), recurse=recurse))
    assert policy.action(url) is action


def test_a_start_value_that_redirects_has_its_landing_page_parsed_on_any_host() -> None:
    policy = Policy(SiteSettings(start_urls=(START,), recurse=False))

    assert policy.extend_site(START, "https://www.example.net/manual/")
    assert policy.action("https://www.example.net/manual/") is PARSE
    assert policy.action("https://www.example.net/manual/intro.html") is CHECK
    assert policy.grown == ("https://www.example.net/manual/",)
    # only a start value's landing page joins; a page it links to that redirects does not
    assert not policy.extend_site(START + "old", START + "new")
    assert policy.action(START + "new") is CHECK


def test_workers_told_of_a_landing_page_parse_it_too() -> None:
    """A parse worker's own policy learns the landing pages as the site's growth."""
    worker = Policy(SiteSettings(start_urls=(START,), recurse=False))

    assert worker.add_sites(("https://www.example.net/manual/",))
    assert worker.action("https://www.example.net/manual/") is PARSE
    assert worker.action("https://example.org/docs/other.html") is CHECK


def _site(serve: Serve) -> sitesrv.TestSite:
    pages = {
        "/": Page(
            html(
                "<html><body>",
                '<a href="/a.html">a</a>',
                '<a href="/gone.html">gone</a>',
                '<a href="/old/">moved</a>',
                "</body></html>",
            )
        ),
        "/a.html": Page(html('<a href="/deep.html">deep</a>', '<a href="/deep-gone">x</a>')),
        "/deep.html": Page("deep"),
        "/gone.html": Page("gone", status=404),
        "/old/": Page("", status=301, headers={"Location": "/new/"}),
        "/new/": Page(html('<a href="/beyond.html">beyond</a>')),
        "/list/": Page("", status=302, headers={"Location": "/landing.html"}),
        "/landing.html": Page(html("<p>", '<a href="/landing-gone.html">x</a>')),
    }
    return serve(pages)


def test_a_check_without_recursion_requests_the_start_pages_links_and_nothing_more(
    tmp_path: Path, serve: Serve
) -> None:
    site = _site(serve)

    code, report = Runner(tmp_path).check_json(site.url("/"), "--no-recurse")

    assert code == 1
    urls = by_url(report)
    assert urls[site.url("/gone.html")]["state"] == "broken"
    assert urls[site.url("/a.html")]["state"] == "ok"
    assert urls[site.url("/old/")]["state"] == "redirect"
    assert urls[site.url("/new/")]["state"] == "ok"  # a link that redirects is followed
    requested = set(site.counts())
    assert "/deep.html" not in requested and "/deep-gone" not in requested
    assert "/beyond.html" not in requested  # a redirected link's page is not parsed either
    assert "/new/" in requested
    assert site.counts("GET")["/a.html"] == 0  # checked, not read

    code, report = Runner(tmp_path).check_json(site.url("/"), "--db", str(tmp_path / "full.db"))
    assert "/deep-gone" in site.counts()  # the same site crawled: its pages are parsed


def test_a_list_on_stdin_and_a_redirecting_start_value_under_the_config_key(
    tmp_path: Path, serve: Serve
) -> None:
    site = _site(serve)
    (tmp_path / "linkpatrol.toml").write_text("recurse = false\n")
    listing = f"{site.url('/list/')}\n{site.url('/gone.html')}\n"

    proc = Runner(tmp_path).check("-", "--format", "json", "-v", input=listing)

    assert proc.returncode == 1, proc.stderr
    urls = by_url(json.loads(proc.stdout))
    # the start value redirected: the page it landed on was parsed, its link checked
    assert urls[site.url("/landing-gone.html")]["state"] == "broken"
    assert urls[site.url("/gone.html")]["state"] == "broken"
    assert "its links are checked" in proc.stderr
    assert "/" not in site.counts()
