"""The fetcher and the engine over canned answers in memory: no server, no socket.

What the fetcher decides (retries, their waits, Retry-After, the body limit, the headers
each request carries) and what the engine makes of the answers (HEAD then GET, broken
links found) are shown here with a MemoryTransport in place of the network.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from linkpatrol.checker import check
from linkpatrol.config import SiteSettings, SiteTable
from linkpatrol.fetch import Fetcher, retry_wait
from linkpatrol.report import render
from linkpatrol.store.sqlite import MEMORY_ONLY
from linkpatrol.transport import MemoryTransport, Request, Response
from tests.sitesrv import is_probe

SITE = "http://site.test"
FAR = "http://far.test"


def page(body: str, status: int = 200) -> Response:
    return Response("GET", status, content_type="text/html", body=body.encode())


def in_turn(*answers: Response) -> Callable[[Request], Response]:
    """The answers one after the other, the last one again once they run out."""
    given = list(answers)

    def answer(request: Request) -> Response:
        return given.pop(0) if len(given) > 1 else given[0]

    return answer


class Sleeps:
    """The waits the fetcher asks for, none of them waited."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def fetch(
    transport: MemoryTransport,
    method: str,
    url: str,
    settings: SiteSettings | None = None,
    **options: object,
) -> tuple[Response, Fetcher, Sleeps]:
    sleeps = Sleeps()
    fetcher = Fetcher(settings or SiteSettings(), transport, sleep=sleeps)

    async def run() -> Response:
        try:
            return await fetcher.fetch(method, url, **options)  # type: ignore[arg-type]
        finally:
            await fetcher.close()

    return asyncio.run(run()), fetcher, sleeps


# ---- the fetcher ----------------------------------------------------------------------------


def test_a_busy_server_is_asked_again_after_waits_that_double() -> None:
    busy = Response("GET", 503)
    transport = MemoryTransport({f"{SITE}/": in_turn(busy, busy, page("<p>at last</p>"))})

    response, fetcher, sleeps = fetch(transport, "GET", f"{SITE}/", want_body=True)

    assert (response.status, response.attempts, response.body) == (200, 3, b"<p>at last</p>")
    assert fetcher.requests == 3 and len(transport.sent) == 3
    first, second = sleeps.waits
    assert 0.125 <= first <= 0.375 and 0.25 <= second <= 0.75


def test_waits_double_up_to_a_bound_each_with_its_jitter() -> None:
    assert [retry_wait(n, None, 1.0) for n in range(1, 8)] == [0.25, 0.5, 1, 2, 4, 8, 8]
    assert retry_wait(3, None, 0.5) == 0.5 and retry_wait(3, None, 1.5) == 1.5


@pytest.mark.parametrize(
    ("retry_after", "waits", "attempts", "status"),
    [
        (2.0, [2.0, 2.0], 3, 503),  # as long as asked, every time
        (0.0, [0.0, 0.0], 3, 503),
        (60.0, [60.0, 60.0], 3, 503),
        (61.0, [], 1, 503),  # longer than is worth waiting: the answer stands
    ],
)
def test_retry_after_is_honoured_up_to_a_minute(
    retry_after: float, waits: list[float], attempts: int, status: int
) -> None:
    slow_down = Response("GET", 503, retry_after=retry_after)
    transport = MemoryTransport({f"{SITE}/": slow_down})

    response, _, sleeps = fetch(transport, "HEAD", f"{SITE}/")

    assert (response.status, response.attempts, sleeps.waits) == (status, attempts, waits)


@pytest.mark.parametrize(
    ("answer", "attempts"),
    [
        (Response("GET", 429), 2),
        (Response("GET", 504), 2),
        (Response("GET", error="timeout after 15s", transient=True), 2),
        (Response("GET", error="connection refused", reachable=False), 1),
        (Response("GET", 500), 1),
        (Response("GET", 404), 1),
        (Response("GET", 200), 1),
    ],
)
def test_only_what_may_pass_is_tried_again_as_often_as_retries_say(
    answer: Response, attempts: int
) -> None:
    transport = MemoryTransport({f"{SITE}/": answer})

    response, fetcher, _ = fetch(transport, "HEAD", f"{SITE}/", SiteSettings(retries=1))

    assert response.attempts == attempts == fetcher.requests
    assert (response.status, response.error) == (answer.status, answer.error)


def test_each_retry_waits_for_the_hosts_turn_too() -> None:
    transport = MemoryTransport({f"{SITE}/": in_turn(Response("GET", 503), Response("GET", 200))})
    turns: list[int] = []

    async def pace() -> None:
        turns.append(len(transport.sent))

    response, _, _ = fetch(transport, "HEAD", f"{SITE}/", pace=pace)

    assert response.status == 200 and turns == [1]  # after the first answer, before the second


@pytest.mark.parametrize(
    ("max_size", "limit", "cap", "kept"),
    [(1000, None, 1000, 100), (10, None, 10, 10), (1000, 20, 20, 20), (10, 20, 10, 10)],
)
def test_a_body_is_kept_up_to_the_smaller_of_max_size_and_the_callers_limit(
    max_size: int, limit: int | None, cap: int, kept: int
) -> None:
    transport = MemoryTransport({f"{SITE}/": page("x" * 100)})

    response, _, _ = fetch(
        transport, "GET", f"{SITE}/", SiteSettings(max_size=max_size), want_body=True, limit=limit
    )

    assert transport.sent[0].limit == cap
    assert response.body == b"x" * kept and response.truncated is (kept < 100)


def test_a_body_is_kept_only_for_pages_unless_any_type_is_asked() -> None:
    image = Response("GET", 200, content_type="image/png", body=b"\x89PNG")
    transport = MemoryTransport({f"{SITE}/i.png": image})

    plain, _, _ = fetch(transport, "GET", f"{SITE}/i.png", want_body=True)
    any_type, _, _ = fetch(transport, "GET", f"{SITE}/i.png", want_body=True, any_type=True)
    head, _, _ = fetch(transport, "HEAD", f"{SITE}/i.png")

    assert (plain.body, any_type.body, head.body) == (None, b"\x89PNG", None)
    assert head.method == "HEAD" and head.content_type == "image/png"


def test_requests_carry_the_user_agent_from_and_their_sites_headers_only_under_its_prefix() -> None:
    settings = SiteSettings(
        user_agent="patrol/1",
        from_email="ops@example.org",
        site_tables=(
            SiteTable(f"{SITE}/private/", headers=(("Authorization", "Bearer t"),), timeout=3.0),
        ),
    )
    transport = MemoryTransport()

    fetch(transport, "HEAD", f"{SITE}/private/a", settings, headers={"Referer": f"{SITE}/"})
    fetch(transport, "HEAD", f"{SITE}/public", settings)

    private, public = transport.sent
    assert private.headers == {
        "User-Agent": "patrol/1",
        "From": "ops@example.org",
        "Referer": f"{SITE}/",
        "Authorization": "Bearer t",
    }
    assert public.headers == {"User-Agent": "patrol/1", "From": "ops@example.org"}
    assert (private.timeout, public.timeout) == (3.0, settings.timeout)


def test_file_urls_go_to_the_files_transport() -> None:
    web, files = MemoryTransport(), MemoryTransport({"file:///site/a.html": page("<p>a</p>")})
    fetcher = Fetcher(SiteSettings(), web, files)

    async def run() -> Response:
        return await fetcher.fetch("GET", "file:///site/a.html", want_body=True)

    response = asyncio.run(run())
    asyncio.run(fetcher.close())

    assert response.body == b"<p>a</p>" and web.sent == [] and files.closed and web.closed


# ---- the engine -----------------------------------------------------------------------------


def crawl(transport: MemoryTransport, **settings: object) -> tuple[str, bool]:
    """The text report of a crawl of SITE over ``transport``, and whether it completed."""
    config = SiteSettings(start_urls=(f"{SITE}/",), db=MEMORY_ONLY, **settings)  # type: ignore[arg-type]
    texts: list[str] = []
    result = check(
        config, render=lambda report: texts.append(render(report, "text")), transport=transport
    )
    return texts[0], result.complete


def test_a_small_site_with_a_broken_link_is_judged_without_a_server() -> None:
    transport = MemoryTransport(
        {
            f"{SITE}/robots.txt": Response("GET", 404),
            f"{SITE}/": page(
                f'<a href="/about">about</a> <a href="/gone">gone</a> <a href="{FAR}/x">x</a>'
            ),
            f"{SITE}/about": page('<a href="/">home</a> <img src="/logo.png">'),
            f"{SITE}/logo.png": Response("GET", 200, content_type="image/png"),
            f"{FAR}/x": page("<p>far</p>"),
        }
    )

    report, complete = crawl(transport)

    assert complete
    assert "Broken links (1)" in report and f"{SITE}/gone" in report
    assert "5 URLs seen, 5 requested, 2 parsed, 1 broken" in report, report
    # the site's own URLs are read; a link off the site only checked, by HEAD
    assert {url for url in transport.requested("GET") if not is_probe(url)} == {
        f"{SITE}/robots.txt",
        f"{SITE}/",
        f"{SITE}/about",
        f"{SITE}/gone",
        f"{SITE}/logo.png",
        f"{FAR}/robots.txt",
    }
    assert transport.requested("HEAD") == [f"{FAR}/x"]
    assert transport.closed


def test_a_link_whose_head_is_refused_is_asked_with_get() -> None:
    def no_head(request: Request) -> Response:
        return Response("GET", 405 if request.method == "HEAD" else 200, content_type="text/css")

    transport = MemoryTransport(
        {
            f"{SITE}/robots.txt": Response("GET", 404),
            f"{SITE}/": page(f'<link rel=stylesheet href="{FAR}/style.css">'),
            f"{FAR}/style.css": no_head,
        }
    )

    report, complete = crawl(transport)

    assert complete and "Broken links" not in report, report
    asked = [(r.method, r.url) for r in transport.sent if r.url.endswith("css")]
    assert asked == [("HEAD", f"{FAR}/style.css"), ("GET", f"{FAR}/style.css")]


def test_a_site_that_disallows_a_path_is_not_asked_for_it() -> None:
    robots = Response(
        "GET", 200, content_type="text/plain", body=b"User-agent: *\nDisallow: /private\n"
    )
    transport = MemoryTransport(
        {
            f"{SITE}/robots.txt": robots,
            f"{SITE}/": page('<a href="/private/x">x</a> <a href="/open.pdf">open</a>'),
            f"{SITE}/open.pdf": Response("GET", 200, content_type="application/pdf"),
        }
    )

    _, complete = crawl(transport)

    assert complete
    assert f"{SITE}/private/x" not in transport.requested()
    assert f"{SITE}/open.pdf" in transport.requested()
