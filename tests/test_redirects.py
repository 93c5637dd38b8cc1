"""Redirects (issue point 5): each hop recorded, the target judged by its own action.

A redirect is a page with one link (its target, at line null); loops and chains of
more than ten hops are broken; ``--redirects report`` lists redirects as warnings.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Runner, Serve, by_url
from tests.sitesrv import Page, html


def moved(location: str, status: int = 301) -> Page:
    return Page("", status=status, headers={"Location": location}, etag=False)


def no_robots() -> Page:
    return Page("", status=404)


def test_redirect_inside_the_site_leads_to_a_parsed_page(run: Runner, serve: Serve) -> None:
    site = serve(
        {
            "/robots.txt": no_robots(),
            "/": Page(html("<p>", '<a href="/old">old</a>', '<a href="/rel">rel</a>')),
            "/old": moved("/new"),
            "/rel": moved("new2", status=308),  # a relative Location
            "/new": Page(html('<a href="/deep">deep</a>')),
            "/new2": Page("fine"),
            "/deep": Page("fine"),
        }
    )

    code, report = run.check_json(site.url("/"))

    assert code == 0
    urls = by_url(report)
    old = urls[site.url("/old")]
    assert (old["state"], old["http_status"], old["redirect_to"]) == (
        "redirect",
        301,
        site.url("/new"),
    )
    assert old["referrers"] == [{"url": site.url("/"), "line": 2}]
    assert old["reportable"] is False
    new = urls[site.url("/new")]
    assert (new["state"], new["action"]) == ("ok", "parse")
    assert new["referrers"] == [{"url": site.url("/old"), "line": None}]
    assert urls[site.url("/deep")]["state"] == "ok"  # the target was parsed
    assert urls[site.url("/rel")]["redirect_to"] == site.url("/new2")
    assert urls[site.url("/new2")]["state"] == "ok"
    # the client did not follow on its own: each hop asked once
    assert site.counts()["/old"] == 1 and site.counts()["/new"] == 1


def test_redirect_to_an_outside_url_is_only_checked(run: Runner, serve: Serve) -> None:
    far = serve(
        {
            "/robots.txt": no_robots(),
            "/landing": Page(html('<a href="/far-inner">never parsed</a>')),
        }
    )
    site = serve(
        {
            "/robots.txt": no_robots(),
            "/": Page(html('<a href="/go">go</a>')),
            "/go": moved(far.url("/landing"), status=302),
        }
    )

    code, report = run.check_json(site.url("/"))

    assert code == 0
    urls = by_url(report)
    assert urls[site.url("/go")]["redirect_to"] == far.url("/landing")
    landing = urls[far.url("/landing")]
    assert (landing["state"], landing["action"]) == ("ok", "check")
    assert landing["referrers"] == [{"url": site.url("/go"), "line": None}]
    assert far.counts("GET")["/landing"] == 0
    assert far.counts("HEAD")["/landing"] == 1
    assert far.url("/far-inner") not in urls


def test_outside_url_redirecting_into_the_site_gets_the_page_parsed(
    run: Runner, serve: Serve
) -> None:
    site_pages: dict[str, Page] = {
        "/robots.txt": no_robots(),
        "/docs/": Page(html("<p>home</p>")),
        "/docs/landing": Page(html('<a href="inner">inner</a>')),
        "/docs/inner": Page("fine"),
    }
    site = serve(site_pages)
    far = serve({"/robots.txt": no_robots(), "/short": moved(site.url("/docs/landing"))})
    site_pages["/docs/"] = Page(html(f'<a href="{far.url("/short")}">short link</a>'))
    site.pages.update(site_pages)

    code, report = run.check_json(site.url("/docs/"))

    assert code == 0
    urls = by_url(report)
    short = urls[far.url("/short")]
    assert (short["action"], short["state"]) == ("check", "redirect")
    assert far.counts("HEAD")["/short"] == 1 and far.counts("GET")["/short"] == 0
    landing = urls[site.url("/docs/landing")]
    assert (landing["action"], landing["state"]) == ("parse", "ok")
    assert site.counts("GET")["/docs/landing"] == 1
    assert urls[site.url("/docs/inner")]["state"] == "ok"


def test_redirect_loop_and_long_chain_are_broken(run: Runner, serve: Serve) -> None:
    hops = 12
    pages: dict[str, Page] = {
        "/robots.txt": no_robots(),
        "/": Page(html('<a href="/a">loop</a>', '<a href="/hop0">chain</a>')),
        "/a": moved("/b"),
        "/b": moved("/a"),
        **{f"/hop{i}": moved(f"/hop{i + 1}") for i in range(hops)},
        f"/hop{hops}": Page("the end"),
    }
    site = serve(pages)

    code, report = run.check_json(site.url("/"))

    assert code == 1
    assert report["complete"] is True
    urls = by_url(report)
    for path in ("/a", "/b"):
        entry = urls[site.url(path)]
        assert entry["state"] == "broken"
        assert "redirect loop" in entry["error"]
        assert entry["reportable"] is True
    first = urls[site.url("/hop0")]
    assert first["state"] == "broken" and first["reportable"] is True
    assert "too many redirects" in first["error"]
    assert first["redirect_to"] == site.url("/hop1")
    # ten hops from here to the page: allowed
    assert urls[site.url("/hop2")]["state"] == "redirect"
    assert urls[site.url(f"/hop{hops}")]["state"] == "ok"
    # each hop requested once: the loop did not spin
    counts = site.counts()
    assert counts["/a"] == 1 and counts["/b"] == 1
    assert all(counts[f"/hop{i}"] == 1 for i in range(hops + 1))


def test_redirect_to_itself_is_broken(run: Runner, serve: Serve) -> None:
    site = serve(
        {
            "/robots.txt": no_robots(),
            "/": Page(html('<a href="/self">self</a>')),
            "/self": moved("/self?"),  # the same URL once canonical
        }
    )

    code, report = run.check_json(site.url("/"))

    entry = by_url(report)[site.url("/self")]
    assert entry["state"] == "broken" and "loop" in entry["error"]
    assert code == 1


def test_redirects_report_lists_them_as_warnings(run: Runner, serve: Serve) -> None:
    site = serve(
        {
            "/robots.txt": no_robots(),
            "/": Page(html('<a href="/old">old</a>', '<a href="/ok">ok</a>')),
            "/old": moved("/new"),
            "/new": Page("fine"),
            "/ok": Page("fine"),
        }
    )

    proc = run.check(site.url("/"), "--redirects", "report")

    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "Broken links" not in out
    assert "Warnings (1):" in out
    warnings = out.split("Warnings (1):", 1)[1].split("Summary:", 1)[0]
    assert site.url("/old") in warnings
    assert site.url("/new") in warnings  # where it goes
    assert "/:1" in warnings  # and which page links to it
    assert "0 broken, 1 warning," in out

    # the same pass from memory, as JSON: the redirect counts as a warning, nothing broken
    as_json = run("report", "--db", run.db, "--format", "json", "--redirects", "report")
    assert as_json.returncode == 0
    report = json.loads(as_json.stdout)
    assert (report["summary"]["warnings"], report["summary"]["broken"]) == (1, 0)
    assert by_url(report)[site.url("/old")]["state"] == "redirect"
    # the pass as it was checked: the redirect a warning
    as_checked = run("report", "--db", run.db)
    assert as_checked.stdout == proc.stdout
    # follow, given to the report, has nothing to say about the redirect
    followed = run("report", "--db", run.db, "--redirects", "follow")
    assert followed.returncode == 0
    assert "Warnings" not in followed.stdout
    assert "0 warnings" in followed.stdout


def test_broken_target_of_a_redirect_names_the_page_linking_to_the_redirect(
    run: Runner, serve: Serve
) -> None:
    site = serve(
        {
            "/robots.txt": no_robots(),
            "/": Page(html("<p>", "<p>", '<a href="/docs/">docs</a>')),
            "/docs/": Page(html("<ul>", '<li><a href="/old-guide">guide</a></li>', "</ul>")),
            "/old-guide": moved("/guide-gone"),
        }
    )

    proc = run.check(site.url("/"))

    assert proc.returncode == 1
    out = proc.stdout
    assert "Broken links (1):" in out
    block = out.split(site.url("/guide-gone"), 1)[1].split("\n\n", 1)[0]
    assert "HTTP 404" in block
    assert "/old-guide (redirect)" in block
    assert "/docs/:2 (via /old-guide)" in block


def test_redirect_hops_through_an_outside_site_are_all_recorded(run: Runner, serve: Serve) -> None:
    far = serve({"/robots.txt": no_robots()})
    site = serve(
        {
            "/robots.txt": no_robots(),
            "/": Page(html('<a href="/out">out</a>')),
            "/out": moved(far.url("/hop")),
            "/final": Page("fine"),
        }
    )
    far.pages["/hop"] = moved(far.url("/hop2"), status=307)
    far.pages["/hop2"] = moved(site.url("/final"), status=303)

    code, report = run.check_json(site.url("/"))

    assert code == 0
    urls = by_url(report)
    assert urls[site.url("/out")]["redirect_to"] == far.url("/hop")
    assert (urls[far.url("/hop")]["state"], urls[far.url("/hop")]["http_status"]) == (
        "redirect",
        307,
    )
    assert urls[far.url("/hop2")]["redirect_to"] == site.url("/final")
    final = urls[site.url("/final")]
    assert (final["state"], final["action"]) == ("ok", "parse")
    assert final["referrers"] == [{"url": far.url("/hop2"), "line": None}]


def test_a_start_url_that_redirects_takes_the_site_with_it(run: Runner, serve: Serve) -> None:
    far = serve({"/robots.txt": no_robots(), "/login": Page(html('<a href="/x">x</a>'))})
    site = serve(
        {
            "/robots.txt": no_robots(),
            "/old/": moved("/new/"),
            "/new/": Page(html("<p>", '<a href="page.html">page</a>', "</p>")),
            "/new/page.html": Page(html("<p>", '<a href="gone.html">gone</a>', "</p>")),
            "/away/": moved(far.url("/login")),
        }
    )

    code, report = run.check_json(site.url("/old/"), site.url("/away/"))

    urls = by_url(report)
    assert code == 1
    # the folder the start URL moved to is parsed as the site
    assert urls[site.url("/new/page.html")]["action"] == "parse"
    gone = urls[site.url("/new/gone.html")]
    assert gone["state"] == "broken"
    assert gone["referrers"] == [{"url": site.url("/new/page.html"), "line": 2}]
    # a redirect to another host (a login service, say) does not make that host the site
    assert urls[far.url("/login")]["action"] == "check"
    assert far.counts("GET")["/login"] == 0
    assert far.url("/x") not in urls


def test_a_redirect_without_a_target_is_a_warning(run: Runner, serve: Serve) -> None:
    site = serve(
        {
            "/robots.txt": no_robots(),
            "/": Page(html('<a href="/nowhere">nowhere</a>', '<a href="/choices">choices</a>')),
            "/nowhere": Page("", status=302, etag=False),
            "/choices": Page("", status=300, etag=False),
        }
    )

    proc = run.check(site.url("/"))

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken, 2 warnings," in proc.stdout
    assert "warning: HTTP 302 redirect without a target (no Location header)" in proc.stdout
    report = json.loads(run("report", "--db", run.db, "--format", "json").stdout)
    nowhere = by_url(report)[site.url("/nowhere")]
    assert (nowhere["state"], nowhere["reason"], nowhere["redirect_to"]) == (
        "warning",
        "redirect",
        None,
    )
    assert by_url(report)[site.url("/choices")]["state"] == "warning"


def test_a_redirect_to_a_scheme_not_checked_records_its_target(run: Runner, serve: Serve) -> None:
    """Like a link to it: an ``ftp:`` or ``tel:`` target is recorded, even where a rule
    asks to check every URL of the domain, as no request can check it."""
    targets = {
        "/to-ftp": "ftp://ftp.example.org/pub/file.txt",
        "/to-tel": "tel:+15551234",
        "/to-mailto": "mailto:someone@example.org",
    }
    site = serve(
        {
            "/robots.txt": no_robots(),
            "/": Page(
                html(
                    *[f'<a href="{path}">x</a>' for path in targets],
                    '<a href="ftp://ftp.example.org/pub/other.txt">a link to one</a>',
                )
            ),
            **{path: moved(target, status=302) for path, target in targets.items()},
        }
    )
    Path(run.cwd, "linkpatrol.toml").write_text(
        '[[rule]]\nregex = "example\\\\.org|^tel:"\naction = "check"\n', encoding="utf-8"
    )

    code, report = run.check_json(site.url("/"))

    assert code == 0, report
    urls = by_url(report)
    for path, target in targets.items():
        assert (urls[site.url(path)]["state"], urls[site.url(path)]["redirect_to"]) == (
            "redirect",
            target,
        )
        assert (urls[target]["action"], urls[target]["state"], urls[target]["error"]) == (
            "record",
            "unchecked",
            None,
        )
        assert urls[target]["referrers"] == [{"url": site.url(path), "line": None}]
    linked = urls["ftp://ftp.example.org/pub/other.txt"]
    assert (linked["action"], linked["state"]) == ("record", "unchecked")
