"""robots.txt (issue point 7): asked first, obeyed, once per run; RFC 9309 on errors.

404 means everything is allowed; a 5xx or no answer means nothing is requested;
``Crawl-delay`` spaces requests; ``--no-robots`` overrides it all, with a warning.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from tests.conftest import Runner, Serve, by_url
from tests.sitesrv import Page, free_port, html

if TYPE_CHECKING:
    from http.server import BaseHTTPRequestHandler

    from tests.sitesrv import Handler


def robots(*lines: str) -> Page:
    return Page("\n".join(lines) + "\n", content_type="text/plain")


def arriving(pages: dict[str, Page], log: list[str]) -> dict[str, Handler]:
    """The pages, each noting its path in ``log`` as its request comes in.

    The server's own log is written when a request is done, so two requests on two
    connections can be logged in the other order; this one cannot.
    """

    def wrap(page: Page) -> Handler:
        def handle(h: BaseHTTPRequestHandler) -> int:
            log.append(h.path)
            return h._send_page(page, h.path)  # type: ignore[attr-defined]

        return handle

    return {path: wrap(page) for path, page in pages.items()}


def test_robots_txt_is_asked_first_and_once_per_host(run: Runner, serve: Serve) -> None:
    far_log: list[str] = []
    site_log: list[str] = []
    far_pages = {
        "/robots.txt": robots("User-agent: *", "Disallow:"),
        **{f"/f{i}": Page("fine") for i in range(12)},
    }
    far = serve(arriving(far_pages, far_log))
    links = [f'<a href="/p{i}">{i}</a>' for i in range(12)]
    links += [f'<a href="{far.url(f"/f{i}")}">far {i}</a>' for i in range(12)]
    site_pages = {
        "/robots.txt": robots("User-agent: *", "Allow: /"),
        "/": Page(html(*links)),
        **{f"/p{i}": Page(html('<a href="/">home</a>')) for i in range(12)},
    }
    site = serve(arriving(site_pages, site_log))

    code, report = run.check_json(site.url("/"))

    assert code == 0
    assert report["summary"]["urls"] == 25
    for log in (site_log, far_log):
        assert log[0] == "/robots.txt"
        assert log.count("/robots.txt") == 1
        assert len(log) == len(set(log))  # nothing asked twice
    # robots.txt goes to memory, not to the report
    assert site.url("/robots.txt") not in by_url(report)


def test_disallowed_urls_are_never_requested(run: Runner, serve: Serve) -> None:
    far = serve(
        {
            "/robots.txt": robots("User-agent: *", "Disallow: /private"),
            "/public": Page("fine"),
        }
    )
    site = serve(
        {
            "/robots.txt": robots("User-agent: *", "Disallow: /secret/", "Disallow: /*.pdf$"),
            "/": Page(
                html(
                    '<a href="/secret/plans.html">plans</a>',
                    '<a href="/docs/manual.pdf">pdf</a>',
                    '<a href="/docs/manual.pdf.html">html</a>',
                    f'<a href="{far.url("/private/x")}">far private</a>',
                    f'<a href="{far.url("/public")}">far public</a>',
                )
            ),
            "/docs/manual.pdf.html": Page("fine"),
        }
    )

    code, report = run.check_json(site.url("/"))

    assert code == 0
    urls = by_url(report)
    for url in (
        site.url("/secret/plans.html"),
        site.url("/docs/manual.pdf"),
        far.url("/private/x"),
    ):
        entry = urls[url]
        assert entry["state"] == "disallowed", entry
        assert entry["reportable"] is False
        assert entry["http_status"] is None
        assert "robots.txt" in entry["error"]
    assert urls[site.url("/docs/manual.pdf.html")]["state"] == "ok"
    assert urls[far.url("/public")]["state"] == "ok"
    requested = {h.path for h in site.requests(probes=False)} | {h.path for h in far.requests()}
    assert requested == {"/robots.txt", "/", "/docs/manual.pdf.html", "/public"}
    assert site.probes() == {"/docs/": 1}  # its made-up name is allowed


def test_disallowed_start_url_is_not_requested(run: Runner, serve: Serve) -> None:
    site = serve({"/robots.txt": robots("User-agent: *", "Disallow: /"), "/": Page("home")})

    code, report = run.check_json(site.url("/"))

    assert code == 0
    assert by_url(report)[site.url("/")]["state"] == "disallowed"
    assert [h.path for h in site.requests()] == ["/robots.txt"]


def test_missing_robots_txt_allows_everything(run: Runner, serve: Serve) -> None:
    site = serve(
        {
            "/robots.txt": Page("gone", status=410),
            "/": Page(html('<a href="/a">a</a>')),
            "/a": Page("fine"),
        }
    )

    code, report = run.check_json(site.url("/"))

    assert code == 0
    assert by_url(report)[site.url("/a")]["state"] == "ok"
    assert site.counts()["/a"] == 1


def test_robots_server_error_means_nothing_is_requested(run: Runner, serve: Serve) -> None:
    far = serve({"/robots.txt": Page("oops", status=500), "/x": Page("fine")})
    flaky = serve({"/robots.txt": Page("busy", status=503), "/y": Page("fine")})
    site = serve(
        {
            "/robots.txt": Page("", status=404),
            "/": Page(
                html(f'<a href="{far.url("/x")}">x</a>', f'<a href="{flaky.url("/y")}">y</a>')
            ),
        }
    )

    code, report = run.check_json(site.url("/"), "--retries", "1")

    assert code == 0
    urls = by_url(report)
    x = urls[far.url("/x")]
    assert (x["state"], x["reportable"]) == ("disallowed", False)
    assert "robots.txt answered 500" in x["error"]
    assert urls[flaky.url("/y")]["state"] == "disallowed"
    assert [h.path for h in far.requests()] == ["/robots.txt"]
    assert [h.path for h in flaky.requests()] == ["/robots.txt", "/robots.txt"]  # one retry


def test_robots_txt_answering_too_many_requests_means_nothing_is_requested(
    run: Runner, serve: Serve
) -> None:
    """A 429 asks the robot to slow down; read as a 4xx it would allow everything."""
    busy = serve(
        {"/robots.txt": Page("slow down", status=429, headers={"Retry-After": "0"}), "/x": Page("")}
    )
    site = serve(
        {"/robots.txt": Page("", status=404), "/": Page(html(f'<a href="{busy.url("/x")}">x</a>'))}
    )

    code, report = run.check_json(site.url("/"), "--retries", "1")

    assert code == 0
    x = by_url(report)[busy.url("/x")]
    assert (x["state"], x["reportable"]) == ("disallowed", False)
    assert "robots.txt answered 429" in x["error"]
    assert [h.path for h in busy.requests()] == ["/robots.txt", "/robots.txt"]  # one retry


def test_refused_host_gives_broken_urls_without_requests(run: Runner, serve: Serve) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    site = serve(
        {
            "/robots.txt": Page("", status=404),
            "/": Page(html(f'<a href="{dead}/a">a</a>', f'<a href="{dead}/b">b</a>')),
        }
    )

    code, report = run.check_json(site.url("/"))

    assert code == 1
    urls = by_url(report)
    for path in ("/a", "/b"):
        entry = urls[dead + path]
        assert (entry["state"], entry["reportable"]) == ("broken", True)
        assert "connection refused" in entry["error"]


def test_robots_failure_is_not_remembered_into_the_next_run(run: Runner, serve: Serve) -> None:
    """A host whose robots.txt failed tonight is asked again tomorrow, not judged from memory."""
    far = serve({"/robots.txt": Page("oops", status=500), "/x": Page("fine")})
    site = serve(
        {"/robots.txt": Page("", status=404), "/": Page(html(f'<a href="{far.url("/x")}">x</a>'))}
    )
    _, first = run.check_json(site.url("/"))
    assert by_url(first)[far.url("/x")]["state"] == "disallowed"

    far.pages["/robots.txt"] = Page("", status=404)
    code, second = run.check_json(site.url("/"))

    assert by_url(second)[far.url("/x")]["state"] == "ok"
    assert far.counts()["/x"] == 1
    assert code == 0


def test_good_robots_txt_is_remembered_for_the_next_run(run: Runner, serve: Serve) -> None:
    site = serve(
        {
            "/robots.txt": robots("User-agent: *", "Disallow: /no"),
            "/": Page(html('<a href="/no">no</a>', '<a href="/yes">yes</a>')),
            "/yes": Page("fine"),
        }
    )
    run.check_json(site.url("/"))

    code, report = run.check_json(site.url("/"))

    assert code == 0
    assert by_url(report)[site.url("/no")]["state"] == "disallowed"
    assert site.counts()["/robots.txt"] == 1
    assert site.counts()["/no"] == 0


def test_crawl_delay_spaces_requests(run: Runner, serve: Serve) -> None:
    site = serve(
        {
            "/robots.txt": robots("User-agent: *", "Crawl-delay: 1"),
            "/": Page(html('<a href="/a">a</a>')),
            "/a": Page("fine"),
        }
    )

    code, _ = run.check_json(site.url("/"))

    assert code == 0
    times = sorted(h.at for h in site.requests() if h.path != "/robots.txt")
    assert len(times) == 3  # the folder's probe takes its turn too
    assert min(b - a for a, b in itertools.pairwise(times)) >= 0.9


def test_no_robots_requests_everything_with_a_warning(run: Runner, serve: Serve) -> None:
    site = serve(
        {
            "/robots.txt": robots("User-agent: *", "Disallow: /"),
            "/": Page(html('<a href="/secret">s</a>')),
            "/secret": Page("fine"),
        }
    )

    proc = run.check(site.url("/"), "--no-robots", "--format", "json")

    assert proc.returncode == 0
    assert "robots.txt" in proc.stderr and "--no-robots" in proc.stderr
    assert site.counts()["/secret"] == 1
    assert site.counts()["/robots.txt"] == 0


def test_group_for_linkpatrol_wins_over_the_wildcard(run: Runner, serve: Serve) -> None:
    site = serve(
        {
            "/robots.txt": robots(
                "User-agent: *",
                "Disallow: /",
                "",
                "User-agent: SomeOtherBot",
                "Disallow: /public",
                "",
                "User-agent: LinkPatrol",
                "Disallow: /private/",
                "Allow: /private/press/",
            ),
            "/": Page(
                html(
                    '<a href="/public">public</a>',
                    '<a href="/private/plans">plans</a>',
                    '<a href="/private/press/kit">press kit</a>',
                )
            ),
            "/public": Page("fine"),
            "/private/press/kit": Page("fine"),
        }
    )

    code, report = run.check_json(site.url("/"))

    assert code == 0
    urls = by_url(report)
    assert urls[site.url("/")]["state"] == "ok"
    assert urls[site.url("/public")]["state"] == "ok"
    assert urls[site.url("/private/plans")]["state"] == "disallowed"
    assert urls[site.url("/private/press/kit")]["state"] == "ok"
    assert site.counts()["/private/plans"] == 0


def test_redirected_robots_txt_is_followed(run: Runner, serve: Serve) -> None:
    log: list[str] = []
    pages = {
        "/robots.txt": Page("", status=301, headers={"Location": "/real-robots.txt"}),
        "/real-robots.txt": robots("User-agent: *", "Disallow: /hidden"),
        "/": Page(html('<a href="/hidden">h</a>', '<a href="/shown">s</a>')),
        "/shown": Page("fine"),
    }
    site = serve(arriving(pages, log))

    code, report = run.check_json(site.url("/"))

    assert code == 0
    urls = by_url(report)
    assert urls[site.url("/hidden")]["state"] == "disallowed"
    assert urls[site.url("/shown")]["state"] == "ok"
    assert log[:2] == ["/robots.txt", "/real-robots.txt"]
    assert "/hidden" not in log


def test_robots_txt_starting_with_a_byte_order_mark_is_obeyed(run: Runner, serve: Serve) -> None:
    """Editors on Windows save robots.txt with a UTF-8 BOM; its first group still counts."""
    site = serve(
        {
            "/robots.txt": Page(
                b"\xef\xbb\xbfUser-agent: *\r\nDisallow: /private/\r\n", content_type="text/plain"
            ),
            "/": Page(html('<a href="/private/plans">plans</a>', '<a href="/public">public</a>')),
            "/private/plans": Page("secret"),
            "/public": Page("fine"),
        }
    )

    code, report = run.check_json(site.url("/"))

    assert code == 0
    urls = by_url(report)
    assert urls[site.url("/private/plans")]["state"] == "disallowed"
    assert urls[site.url("/public")]["state"] == "ok"
    assert site.counts()["/private/plans"] == 0


def test_robots_txt_redirected_away_from_http_counts_as_missing(run: Runner, serve: Serve) -> None:
    """A redirect to a non-HTTP URL cannot be followed: as if there were no robots.txt
    (RFC 9309, 2.3.1.2), never a local file read or the whole host judged broken."""
    for target in ("file:///etc/hostname", "data:text/plain,User-agent:%20*%0ADisallow:%20/"):
        site = serve(
            {
                "/robots.txt": Page("", status=302, headers={"Location": target}),
                "/": Page(html('<a href="/a">a</a>')),
                "/a": Page("fine"),
            }
        )

        code, report = run.check_json(site.url("/"), "--db", ":memory:")

        assert code == 0, target
        urls = by_url(report)
        assert urls[site.url("/")]["state"] == "ok", target
        assert urls[site.url("/a")]["state"] == "ok", target
        assert site.counts()["/a"] == 1, target


def test_robots_txt_cut_at_the_size_limit_loses_its_partial_last_line(
    run: Runner, serve: Serve
) -> None:
    """A rule cut in half by the 500 KiB limit would be another rule: 'Allow: /private/pr'
    of 'Allow: /private/press/' would open /private/prices too."""
    limit = 500 * 1024
    head = "User-agent: *\nDisallow: /private/\n"
    kept = "Allow: /private/pr"  # all of the last rule the limit leaves
    body = head + "#" * (limit - len(kept) - len(head) - 1) + "\n" + "Allow: /private/press/\n"
    assert body[:limit].endswith("\n" + kept)
    site = serve(
        {
            "/robots.txt": Page(body, content_type="text/plain"),
            "/": Page(html('<a href="/private/prices">prices</a>', '<a href="/ok">ok</a>')),
            "/private/prices": Page("secret"),
            "/ok": Page("fine"),
        }
    )

    code, report = run.check_json(site.url("/"))

    assert code == 0
    urls = by_url(report)
    assert urls[site.url("/private/prices")]["state"] == "disallowed"
    assert urls[site.url("/ok")]["state"] == "ok"
    assert site.counts()["/private/prices"] == 0


def test_groups_are_matched_by_the_whole_product_token(run: Runner, serve: Serve) -> None:
    """'User-agent: LinkPatrol/0.1' (copied from a server log) names linkpatrol;
    'User-agent: Link' names another robot, whose name linkpatrol's merely begins with."""
    versioned = serve(
        {
            "/robots.txt": robots(
                "User-agent: *",
                "Disallow:",
                "",
                "User-agent: LinkPatrol/0.1 (+https://example.org/bot)",
                "Disallow: /private/",
            ),
            "/private/x": Page("secret"),
            "/public": Page("fine"),
        }
    )
    prefix = serve(
        {
            "/robots.txt": robots(
                "User-agent: *", "Disallow: /private/", "", "User-agent: Link", "Disallow: /"
            ),
            "/private/x": Page("secret"),
            "/public": Page("fine"),
        }
    )
    site = serve(
        {
            "/robots.txt": Page("", status=404),
            "/": Page(
                html(
                    *(
                        f'<a href="{host.url(path)}">{path}</a>'
                        for host in (versioned, prefix)
                        for path in ("/private/x", "/public")
                    )
                )
            ),
        }
    )

    code, report = run.check_json(site.url("/"))

    assert code == 0
    urls = by_url(report)
    for host in (versioned, prefix):
        assert urls[host.url("/private/x")]["state"] == "disallowed"
        assert urls[host.url("/public")]["state"] == "ok"
        assert host.counts()["/private/x"] == 0


def test_a_site_table_with_robots_false_is_checked_where_robots_txt_forbids_it(
    run: Runner, serve: Serve
) -> None:
    site = serve(
        {
            "/robots.txt": robots("User-agent: *", "Disallow: /"),
            "/staging/": Page(html('<a href="/staging/a">a</a>', '<a href="/live/b">b</a>')),
            "/staging/a": Page(html("<p>a</p>")),
            "/live/b": Page(html("<p>b</p>")),
        }
    )
    (run.cwd / "linkpatrol.toml").write_text(
        f'[[site]]\nprefix = "{site.url("/staging/")}"\nrobots = false\n'
    )

    code, report = run.check_json(site.url("/staging/"))

    urls = by_url(report)
    assert code == 0
    assert urls[site.url("/staging/")]["state"] == "ok"
    assert urls[site.url("/staging/a")]["state"] == "ok"
    # robots.txt still speaks for the rest of the host
    assert urls[site.url("/live/b")]["state"] == "disallowed"
    assert site.counts().get("/live/b", 0) == 0 and site.counts()["/robots.txt"] == 1


def test_a_host_whose_table_has_robots_false_is_not_asked_for_robots_txt(
    run: Runner, serve: Serve
) -> None:
    site = serve(
        {
            "/robots.txt": robots("User-agent: *", "Disallow: /"),
            "/": Page(html('<a href="/a">a</a>')),
            "/a": Page(html("<p>a</p>")),
        }
    )
    (run.cwd / "linkpatrol.toml").write_text(
        f'[[site]]\nprefix = "{site.url("/")}"\nrobots = false\n'
    )

    code, report = run.check_json(site.url("/"))

    assert code == 0 and by_url(report)[site.url("/a")]["state"] == "ok"
    assert "/robots.txt" not in site.counts()
