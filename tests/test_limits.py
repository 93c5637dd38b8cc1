"""Limits against infinite URL spaces and URLs left out by their form; parse workers that
hang or die. How each URL is judged is in test_urls.py: this is what needs a crawl."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from pathlib import Path

import pytest

from linkpatrol.rules import MAX_PROBES
from tests.conftest import Runner, Serve, by_url
from tests.sitesrv import Handler, Page, html
from tests.sitesrv import TestSite as LoopbackSite


def test_urls_not_requested_for_their_form_are_in_the_report(run: Runner, serve: Serve) -> None:
    """Spellings of one URL are requested once (tests/test_urls.py has them all); a URL
    with a password, or deeper than --max-depth, is not requested but is in the report."""
    site = serve({})
    start = f"http://localhost:{site.port}/"
    userinfo = f"http://user:secret@localhost:{site.port}/private.html"
    site.pages.update(
        {
            "/": Page(
                html(
                    "<html><body>",
                    f'<a href="http://LocalHost:{site.port}/a/b/c.html">three segments</a>',
                    '<a href="/a/./b/x/../c.html#top">the same, spelled otherwise</a>',
                    '<a href="/a/b/c/">three, a folder</a>',
                    '<a href="/a/b/c/d.html">four segments</a>',
                    f'<a href="{userinfo}">userinfo</a>',
                    "</body></html>",
                )
            ),
            "/a/b/c.html": Page("c"),
            "/a/b/c/": Page(html('<a href="d/e.html">five</a>')),
            "/a/b/c/d.html": Page("d"),
            "/private.html": Page("private"),
        }
    )

    code, report = run.check_json(start, "--max-depth", "3")
    text = run("report", "--db", run.db)

    assert code == 0, report
    urls = by_url(report)
    three = urls[start + "a/b/c.html"]
    assert three["state"] == "ok"
    assert sorted(r["line"] for r in three["referrers"]) == [2, 3]
    assert urls[start + "a/b/c/"]["state"] == "ok"
    for path in ("a/b/c/d.html", "a/b/c/d/e.html"):
        entry = urls[start + path]
        assert entry["state"] == "unchecked", entry
        assert "--max-depth 3" in entry["error"]
        assert entry["reportable"] is False
    assert (urls[userinfo]["action"], urls[userinfo]["state"]) == ("record", "unchecked")
    counts = site.counts()
    assert counts["/a/b/c/d.html"] == counts["/a/b/c/d/e.html"] == counts["/private.html"] == 0
    assert all(n == 1 for n in counts.values()), counts
    # the text report says which URLs were left out and why
    assert "Not checked, a limit was reached (2):" in text.stdout
    for path in ("a/b/c/d.html", "a/b/c/d/e.html"):
        assert f"{start}{path}  (not requested: " in text.stdout


# ---- the calendar trap ---------------------------------------------------------------------

_MONTH = re.compile(r"/cal/(\d{4,})/(\d\d)")


def _month(year: int, month: int, step: int) -> str:
    index = year * 12 + month - 1 + step
    return f"/cal/{index // 12:04d}/{index % 12 + 1:02d}"


class CalendarSite(LoopbackSite):
    """A site whose /cal/YYYY/MM pages link the month before and after, forever."""

    def lookup(self, path: str) -> Page | Handler | None:
        m = _MONTH.fullmatch(path)
        if m is None:
            return super().lookup(path)
        year, month = int(m.group(1)), int(m.group(2))
        if not 1 <= month <= 12:
            return None
        return Page(
            html(
                f"<html><head><title>{year}-{month:02d}</title></head><body>",
                f'<a href="{_month(year, month, -1)}">previous month</a>',
                f'<a href="{_month(year, month, 1)}">next month</a>',
                "</body></html>",
            )
        )


def calendar_site() -> CalendarSite:
    return CalendarSite(
        {
            "/": Page(html("<html><body>", '<a href="/cal/2024/06">calendar</a>', "</body>")),
            "/robots.txt": Page("", status=404),
        }
    )


def test_max_urls_stops_the_calendar_trap(run: Runner) -> None:
    with calendar_site() as site:
        proc = run.check(site.url("/"), "--max-urls", "50", "--format", "json", timeout=90)
        text = run("report", "--db", run.db)

    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    assert report["complete"] is True
    checked = [e for e in report["urls"] if e["state"] != "unchecked"]
    limited = [e for e in report["urls"] if e["state"] == "unchecked"]
    assert len(checked) <= 50
    assert limited, "the URLs beyond the limit are in the report"
    for entry in limited:
        assert "--max-urls" in entry["error"], entry
        assert entry["reportable"] is False
        assert site.counts()[entry["url"][len(site.base) :]] == 0
    assert len(site.requests(probes=False)) <= 51  # robots.txt and at most 50 URLs
    assert sum(site.probes().values()) <= 50  # and a probe of each of their folders
    # the text report says which URLs were left out and why
    assert "--max-urls" in text.stdout
    for entry in limited:
        assert entry["url"] in text.stdout


def test_calendar_trap_finishes_with_default_limits(run: Runner) -> None:
    with calendar_site() as site:
        code, report = run.check_json(site.url("/"), timeout=110)
        months = [h.path for h in site.requests(probes=False) if h.path.startswith("/cal/")]
        probes = site.probes()

    assert code == 0
    assert report["complete"] is True
    # the calendar pages differ only in their numbers: at most --max-similar (3000) of them
    assert 1500 <= len(months) <= 3000
    assert len(months) == len(set(months))
    # and a probe of a folder of them each, a host's probes of a run bounded
    assert set(probes.values()) == {1} and sum(probes.values()) == MAX_PROBES
    limited = [e for e in report["urls"] if e["state"] == "unchecked"]
    assert limited
    assert all("--max-similar limit of 3000 URLs like" in e["error"] for e in limited), limited[0]
    assert all(e["reportable"] is False for e in limited)


def test_max_similar_zero_lifts_the_pattern_limit(run: Runner) -> None:
    with calendar_site() as site:
        code, report = run.check_json(site.url("/"), "--max-similar", "0", "--max-urls", "300")

    assert code == 0
    limited = [e for e in report["urls"] if e["state"] == "unchecked"]
    assert limited and all("--max-urls" in e["error"] for e in limited)


class DeepeningSite(LoopbackSite):
    """Every page under /trap/ links to a folder one level deeper, forever."""

    def lookup(self, path: str) -> Page | Handler | None:
        if path.startswith("/trap/") and path.partition("?")[0].endswith("/"):
            return Page(html('<a href="more/">deeper</a>', '<a href="?sort=asc">sorted</a>'))
        return super().lookup(path)


def test_deepening_trap_finishes_with_default_limits(run: Runner) -> None:
    with DeepeningSite({"/": Page(html('<a href="/trap/">trap</a>'))}) as site:
        code, report = run.check_json(site.url("/"), timeout=90)

    assert code == 0
    assert report["complete"] is True
    limited = [e for e in report["urls"] if e["state"] == "unchecked"]
    assert limited and all("--max-depth 20" in e["error"] for e in limited)
    deepest = max(len(e["url"].split("/")) for e in report["urls"] if e["state"] == "ok")
    assert deepest == len(site.url("/trap/").split("/")) + 19
    assert max(site.counts().values()) == 1


def test_max_requests_and_max_time_accept_values(run: Runner, serve: Serve) -> None:
    site = serve({"/": Page(html('<a href="/a">a</a>')), "/a": Page("a")})

    code, report = run.check_json(site.url("/"), "--max-requests", "1000", "--max-time", "90m")

    assert code == 0
    assert report["complete"] is True
    assert by_url(report)[site.url("/a")]["state"] == "ok"

    Path(run.cwd, "linkpatrol.toml").write_text(
        'max-requests = 500\nmax_time = "1h30m"\n', encoding="utf-8"
    )
    again, report = run.check_json(site.url("/"))
    assert again == 0 and report["complete"] is True


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--max-requests", "-1"),
        ("--max-requests", "lots"),
        ("--max-time", "soon"),
        ("--max-urls", "0"),
        ("--max-depth", "0"),
    ],
)
def test_bad_limit_values_are_usage_errors(run: Runner, option: str, value: str) -> None:
    proc = run.check("http://127.0.0.1:9/", f"{option}={value}")

    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and option in proc.stderr


# ---- parallel work: no URL twice, a hung parser taken back ------------------------------------


def test_two_hundred_pages_with_concurrency_32_request_each_url_once(
    run: Runner, serve: Serve
) -> None:
    far = serve({f"/ext/{n}": Page("ext") for n in range(20)})
    far.pages["/robots.txt"] = Page("", status=404)
    pages: dict[str, Page] = {}
    for n in range(200):
        links = [f"/p/{(n * 7 + k * 13 + 1) % 200}.html" for k in range(8)]
        links.append(f"/gone/{n % 10}.html")
        links.append(far.url(f"/ext/{n % 20}"))
        pages[f"/p/{n}.html"] = Page(html(*(f'<a href="{u}">x</a>' for u in links)))
    pages["/"] = Page(html(*(f'<a href="/p/{n}.html">{n}</a>' for n in range(0, 200, 10))))
    site = serve(pages)

    code, report = run.check_json(site.url("/"), "--concurrency", "32", "--per-host", "16")

    assert code == 1
    assert report["complete"] is True
    urls = by_url(report)
    assert len(urls) == 1 + 200 + 10 + 20
    assert all(urls[site.url(f"/p/{n}.html")]["state"] == "ok" for n in range(200))
    assert all(urls[site.url(f"/gone/{n}.html")]["state"] == "broken" for n in range(10))
    for server in (site, far):
        for method in ("GET", "HEAD"):
            counts = server.counts(method)
            assert all(n == 1 for n in counts.values()), (method, counts.most_common(3))
    assert len(site.counts("GET", probes=False)) == 1 + 200 + 10 + 1  # robots.txt too
    assert site.probes() == {"/p/": 1}  # /gone/ answered 404: no page to compare
    assert len(far.counts("HEAD")) == 20


def misbehaving_hooks(target: str, mark: str, misdeed: str) -> str:
    """A hooks file whose action() misbehaves only inside a parse worker, for one link."""
    return f"""
import multiprocessing
import os
import time
from pathlib import Path

MARK = Path(__file__).with_name("{mark}")


def action(url):
    in_worker = multiprocessing.current_process().name != "MainProcess"
    if url.endswith("{target}") and in_worker:
        with MARK.open("a") as f:
            f.write(url + "\\n")
        {misdeed}
    return None
"""


HANGING_HOOKS = misbehaving_hooks("/hang-target.html", "hung.log", "time.sleep(120)")


# one worker: the other pages wait in its pipe behind the bad one, and must not pay for it
WORKERS = pytest.mark.parametrize("workers", [(), ("--parse-workers", "1")], ids=["pool", "one"])


@WORKERS
def test_parser_hanging_past_the_hard_limit_is_retried_once_then_broken(
    run: Runner, serve: Serve, workers: tuple[str, ...]
) -> None:
    site = serve(
        {
            "/": Page(
                html(
                    "<html><body>",
                    '<a href="/hang.html">hangs the parser</a>',
                    '<a href="/fine.html">fine</a>',
                    "</body></html>",
                )
            ),
            "/hang.html": Page(html('<a href="/hang-target.html">t</a>')),
            "/hang-target.html": Page("never reached"),
            "/fine.html": Page(html('<a href="/fine-child.html">c</a>')),
            "/fine-child.html": Page("child"),
        }
    )
    Path(run.cwd, "hooks.py").write_text(HANGING_HOOKS, encoding="utf-8")

    code, report = run.check_json(site.url("/"), "--hooks", "hooks.py", "--timeout", "1", *workers)

    assert code == 1, report
    assert report["complete"] is True
    urls = by_url(report)
    hung = urls[site.url("/hang.html")]
    assert hung["state"] == "broken"
    assert "parse timeout" in hung["error"]
    assert hung["reportable"] is True
    attempts = Path(run.cwd, "hung.log").read_text(encoding="utf-8").splitlines()
    assert len(attempts) == 2, attempts
    assert urls[site.url("/fine.html")]["state"] == "ok"
    assert urls[site.url("/fine-child.html")]["state"] == "ok"
    assert site.url("/hang-target.html") not in urls
    assert site.counts()["/hang.html"] == 1


CRASHING_HOOKS = misbehaving_hooks("/crash-target.html", "crashed.log", "os._exit(7)")


@WORKERS
def test_parser_dying_is_retried_once_then_broken(
    run: Runner, serve: Serve, workers: tuple[str, ...]
) -> None:
    site = serve(
        {
            "/": Page(html('<a href="/crash.html">c</a>', '<a href="/fine.html">f</a>')),
            "/crash.html": Page(html('<a href="/crash-target.html">t</a>')),
            "/fine.html": Page(html('<a href="/fine-child.html">c</a>')),
            "/fine-child.html": Page("child"),
        }
    )
    Path(run.cwd, "hooks.py").write_text(CRASHING_HOOKS, encoding="utf-8")

    code, report = run.check_json(site.url("/"), "--hooks", "hooks.py", *workers)

    assert code == 1, report
    urls = by_url(report)
    crashed = urls[site.url("/crash.html")]
    assert crashed["state"] == "broken"
    assert "crash" in crashed["error"]
    attempts = Path(run.cwd, "crashed.log").read_text(encoding="utf-8").splitlines()
    assert len(attempts) == 2, attempts
    assert urls[site.url("/fine.html")]["state"] == "ok"
    assert urls[site.url("/fine-child.html")]["state"] == "ok"
    assert site.counts()["/crash.html"] == 1


class SessionSite(LoopbackSite):
    """Every page links to pages carrying a fresh session ID, forever."""

    def __init__(self, pages: dict[str, Page | Handler]) -> None:
        super().__init__(pages)
        self._ids = itertools.count(1)

    def _sid(self) -> str:
        return hashlib.sha1(str(next(self._ids)).encode()).hexdigest()[:24]

    def lookup(self, path: str) -> Page | Handler | None:
        if not path.startswith("/shop/"):
            return super().lookup(path)
        return Page(
            html(
                f'<a href="/shop/item?sid={self._sid()}">item</a>',
                f'<a href="/shop/item?sid={self._sid()}">another</a>',
            )
        )


class FacetSite(LoopbackSite):
    """Faceted navigation: each page links to itself with every facet added, in any order."""

    FACETS = ("color", "size", "brand", "price", "sort", "stock", "rating", "ship")

    def lookup(self, path: str) -> Page | Handler | None:
        if not path.startswith("/list"):
            return super().lookup(path)
        query = path.partition("?")[2]
        given = [part for part in query.split("&") if part]
        links = [
            f'<a href="/list?{"&".join([*given, f"{name}=x"])}">{name}</a>'
            for name in self.FACETS
            if not any(part.startswith(name + "=") for part in given)
        ]
        return Page(html(*links))


@pytest.mark.parametrize(
    ("site_class", "start", "pattern"),
    [
        (SessionSite, "/shop/", "session IDs"),
        (FacetSite, "/list", "query permutations"),
    ],
    ids=["session-ids", "query-permutations"],
)
def test_session_id_and_query_permutation_traps_end_under_default_limits(
    run: Runner, site_class: type[LoopbackSite], start: str, pattern: str
) -> None:
    home = {"/": Page(html(f'<a href="{start}">{pattern}</a>')), "/robots.txt": Page("")}
    with site_class(home) as site:
        code, report = run.check_json(site.url("/"), timeout=110)
        requested = [h.path for h in site.requests(probes=False) if h.path != "/robots.txt"]
        probes = sum(site.probes().values())

    assert code == 0 and report["complete"] is True
    # each trap is one family of similar URLs: at most --max-similar (3000) requested
    assert 1000 <= len(requested) <= 3000 + 2
    assert probes <= 2  # one for each folder
    assert len(requested) == len(set(requested))
    limited = [e for e in report["urls"] if e["state"] == "unchecked"]
    assert limited
    assert all("--max-similar limit of 3000 URLs like" in e["error"] for e in limited)
