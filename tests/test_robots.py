"""robots.txt (issue point 7): asked first, obeyed, once per run; RFC 9309 on errors.

404 means everything is allowed; a 5xx or no answer means nothing is requested;
``Crawl-delay`` spaces requests; ``--no-robots`` overrides it all, with a warning.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.conftest import Runner, by_url
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


def test_robots_txt_is_asked_first_and_once_per_host(run: Runner, serve) -> None:
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


def test_disallowed_urls_are_never_requested(run: Runner, serve) -> None:
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
    requested = {h.path for h in site.requests()} | {h.path for h in far.requests()}
    assert requested == {"/robots.txt", "/", "/docs/manual.pdf.html", "/public"}


def test_disallowed_start_url_is_not_requested(run: Runner, serve) -> None:
    site = serve({"/robots.txt": robots("User-agent: *", "Disallow: /"), "/": Page("home")})

    code, report = run.check_json(site.url("/"))

    assert code == 0
    assert by_url(report)[site.url("/")]["state"] == "disallowed"
    assert [h.path for h in site.requests()] == ["/robots.txt"]


def test_missing_robots_txt_allows_everything(run: Runner, serve) -> None:
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


def test_robots_server_error_means_nothing_is_requested(run: Runner, serve) -> None:
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


def test_refused_host_gives_broken_urls_without_requests(run: Runner, serve) -> None:
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


def test_robots_failure_is_not_remembered_into_the_next_run(run: Runner, serve) -> None:
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


def test_good_robots_txt_is_remembered_for_the_next_run(run: Runner, serve) -> None:
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


def test_crawl_delay_spaces_requests(run: Runner, serve) -> None:
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
    assert len(times) == 2
    assert times[1] - times[0] >= 0.9


def test_no_robots_requests_everything_with_a_warning(run: Runner, serve) -> None:
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


def test_group_for_linkpatrol_wins_over_the_wildcard(run: Runner, serve) -> None:
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


def test_redirected_robots_txt_is_followed(run: Runner, serve) -> None:
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
