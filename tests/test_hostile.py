"""A hostile web (issue 5 point 1): servers that stall, flood, lie, bomb, or are not who they say.

Each run is the real command against real servers on 127.0.0.1 (see tests/hostile.py):
whatever a server does, the run ends (a generous subprocess timeout is the only clock),
the misbehaving URL gets a verdict with an error a user can act on, and the rest of the
site is still checked.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import trustme

from linkpatrol.addresses import is_public, never_resolves
from linkpatrol.tls import parse_host
from tests.conftest import Runner, Serve, by_url
from tests.hostile import (
    GB,
    MB,
    YESTERDAY,
    Behaviour,
    Bomb,
    RawServer,
    brotli_bomb,
    chunked,
    drip,
    endless,
    gzip_bomb,
    head,
    https_site,
    run_measured,
    self_signed,
    sends,
    server_context,
    serves_bomb,
)
from tests.sitesrv import Page, html

if TYPE_CHECKING:
    from tests.sitesrv import TestSite

    # the ``https`` fixture: starts an HTTPS site presenting the given certificate
    Https = Callable[[ssl.SSLContext], TestSite]

RUN_TIMEOUT = 90  # seconds: a run that has not ended by then never would

Hostile = Callable[..., RawServer]


@pytest.fixture
def hostile() -> Iterator[Hostile]:
    """Start any number of hostile servers for the test; all are stopped at its end."""
    servers: list[RawServer] = []

    def start(behaviour: Behaviour, **kw: Any) -> RawServer:
        server = RawServer(behaviour, **kw)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def no_robots() -> Page:
    return Page("", status=404)


def site_linking_to(serve: Callable[..., TestSite], *urls: str) -> TestSite:
    """A little site whose home page links to ``urls`` and to a page of its own with a link."""
    return serve(
        {
            "/robots.txt": no_robots(),
            "/": Page(
                html(
                    *[f'<a href="{url}">hostile</a>' for url in urls],
                    '<a href="/fine.html">fine</a>',
                )
            ),
            "/fine.html": Page(html('<a href="/deeper.html">deeper</a>')),
            "/deeper.html": Page("fine"),
        }
    )


def check_site(
    run: Runner, site: TestSite, servers: list[RawServer], *options: str
) -> tuple[int, dict[str, dict[str, Any]]]:
    """Check ``site`` with the hostile servers as part of it (so their pages are GET and
    parsed), and assert what every test here asserts: the run ended, complete, and the
    rest of the site was checked."""
    sites = [arg for server in servers for arg in ("--site", server.base + "/")]
    code, report = run.check_json(site.url("/"), *sites, *options, timeout=RUN_TIMEOUT)
    urls = by_url(report)
    assert report["complete"] is True
    assert urls[site.url("/fine.html")]["state"] == "ok"
    assert urls[site.url("/deeper.html")]["state"] == "ok"
    return code, urls


def test_an_endless_robots_txt_is_read_up_to_its_limit_and_obeyed(
    run: Runner, serve: Serve, hostile: Hostile
) -> None:
    """robots.txt is read up to 500 KiB (what RFC 9309 asks a crawler to parse at least),
    not up to --max-size: the rest of an endless one is never downloaded."""
    page = html('<a href="/private/x.html">private</a>', '<a href="/open.html">open</a>')
    robots = endless(
        head(200, {"Content-Type": "text/plain", "Connection": "close"})
        + b"User-agent: *\nDisallow: /private/\n",
        b"# " + b"x" * 1021 + b"\n",
    )
    served = page.encode()
    server = hostile(
        sends(
            head(200, {"Content-Type": "text/html", "Content-Length": str(len(served))}) + served
        ),
        robots=robots,
    )
    site = site_linking_to(serve, server.url("/"))

    # it answers every path with this page: each of its pages would be a soft 404
    code, urls = check_site(run, site, [server], "--max-size", "10MB", "--soft-404", "off")
    assert code == 0, urls

    assert urls[server.url("/private/x.html")]["state"] == "disallowed"
    assert urls[server.url("/open.html")]["state"] == "ok"
    robots_sent = max(server.sent)
    assert 500 * 1024 <= robots_sent < 2 * MB, robots_sent


# ---- stalling: a byte now and then -------------------------------------------------------------

HTML_HEAD = head(200, {"Content-Type": "text/html", "Content-Length": str(MB)})
FILE_HEAD = head(200, {"Content-Type": "application/octet-stream", "Content-Length": str(MB)})


def test_servers_that_drip_get_timeouts_and_the_run_ends(
    run: Runner, serve: Serve, hostile: Hostile
) -> None:
    """A byte every 0.2 s never lets a read time out: only the bound on each whole request
    (--timeout) ends these, and each retry has the same bound. (Servers that never answer
    at all: tests/test_fetching.py.)"""
    slow_headers = hostile(drip(b"HTTP/1.1 200 OK\r\n", b"X-Drip: 1\r\n", every=0.2))
    slow_page = hostile(drip(HTML_HEAD + b"<html><body>", b" ", every=0.2))
    slow_file = hostile(drip(FILE_HEAD, b"\0", every=0.2))
    site = site_linking_to(
        serve, *[s.url("/page.html") for s in (slow_headers, slow_page)], slow_file.url("/f.bin")
    )

    code, urls = check_site(
        run,
        site,
        [slow_headers, slow_page, slow_file],
        "--timeout",
        "1",
        "--retries",
        "1",
        "--second-look",
        "0",  # one look: its retries are what is counted here
    )

    for server in (slow_headers, slow_page):
        entry = urls[server.url("/page.html")]
        assert (entry["state"], entry["error"]) == ("broken", "timeout after 1s"), entry
        assert server.paths() == ["/page.html", "/page.html"]  # asked again once, then judged
        assert all(sent > 0 for sent in server.sent)  # bytes kept coming until the end
    # of a file only the first chunk is read: one byte will do
    assert urls[slow_file.url("/f.bin")]["state"] == "ok"
    assert code == 1


# ---- flooding: bodies without end ---------------------------------------------------------------

ENDLESS_HTML = html("<html><body>", '<a href="/early.html">early</a>').encode()
FILLER = b"<p>" + b"x" * 4000 + b"</p>\n"


def test_endless_bodies_are_read_only_as_far_as_needed(
    run: Runner, serve: Serve, hostile: Hostile
) -> None:
    no_length = hostile(
        endless(
            head(200, {"Content-Type": "text/html", "Connection": "close"}) + ENDLESS_HTML, FILLER
        )
    )
    in_chunks = hostile(
        endless(
            head(200, {"Content-Type": "text/html", "Transfer-Encoding": "chunked"})
            + chunked(ENDLESS_HTML),
            chunked(FILLER),
        )
    )
    binary = hostile(
        endless(
            head(200, {"Content-Type": "application/octet-stream", "Connection": "close"}),
            bytes(4096),
        )
    )
    servers = [no_length, in_chunks, binary]
    site = site_linking_to(serve, *[s.url("/page.html") for s in servers])

    code, urls = check_site(run, site, servers, "--max-size", "256KB")

    for server in (no_length, in_chunks):
        page = urls[server.url("/page.html")]
        assert page["state"] == "warning" and "max-size" in page["error"], page
        # links before the limit are followed (and that page is endless too)
        assert urls[server.url("/early.html")]["state"] == "warning"
        assert server.sent[0] < 256 * 1024 + 4 * MB, server.sent
    file = urls[binary.url("/page.html")]
    assert (file["state"], file["content_type"]) == ("ok", "application/octet-stream")
    assert binary.sent[0] < 4 * MB, binary.sent
    assert code == 0  # warnings only


# ---- lying: half a body, garbage, too many headers ---------------------------------------------


def test_half_a_body_is_broken_after_retries(run: Runner, serve: Serve, hostile: Hostile) -> None:
    half = hostile(
        sends(head(200, {"Content-Type": "text/html", "Content-Length": "100000"}) + b"<p>" * 2000)
    )
    site = site_linking_to(serve, half.url("/page.html"))

    code, urls = check_site(run, site, [half], "--retries", "1", "--second-look", "0")

    page = urls[half.url("/page.html")]
    assert page["state"] == "broken"
    assert page["error"] == (
        "incomplete response body: Not enough data to satisfy content length header "
        "(received 6000 of 100000 bytes)"
    )
    assert half.paths() == ["/page.html", "/page.html"]  # a broken connection may be a hiccup
    assert code == 1


INVALID = {
    "garbage status line": (
        b"HELLO THERE, FRIEND\r\n\r\nnothing to see\r\n",
        "invalid HTTP response: Bad status line: not an HTTP/1.x status line",
    ),
    "binary noise": (bytes(range(256)) * 64, "invalid HTTP response: Bad status line: "),
    "100 KB header line": (
        head(200, {"X-Long": "y" * 100_000}),
        "invalid HTTP response: a header line longer than 8190 bytes",
    ),
    "300 headers": (
        head(200, {f"X-Pad-{i}": "y" * 300 for i in range(300)}),
        "invalid HTTP response: more than 128 headers",
    ),
    "undecodable gzip": (
        head(200, {"Content-Encoding": "gzip", "Content-Length": "10", "Content-Type": "text/html"})
        + b"0123456789",
        "undecodable response body: Can not decode content-encoding: gzip",
    ),
}


def test_invalid_responses_are_broken_with_one_clear_line(
    run: Runner, serve: Serve, hostile: Hostile
) -> None:
    servers = {case: hostile(sends(data)) for case, (data, _) in INVALID.items()}
    endless_headers = hostile(endless(b"HTTP/1.1 200 OK\r\n", b"X-More: yes\r\n"))
    site = site_linking_to(
        serve, endless_headers.url("/page.html"), *[s.url("/page.html") for s in servers.values()]
    )

    code, urls = check_site(run, site, [*servers.values(), endless_headers])

    for case, server in servers.items():
        error = urls[server.url("/page.html")]["error"]
        assert urls[server.url("/page.html")]["state"] == "broken", case
        assert error.startswith(INVALID[case][1]), (case, error)
        assert "\n" not in error and len(error) <= 160, (case, error)
        assert server.paths() == ["/page.html"], case  # a server that talks nonsense is not retried
    endless_entry = urls[endless_headers.url("/page.html")]
    assert endless_entry["error"] == "invalid HTTP response: more than 128 headers"
    assert endless_headers.sent[0] < 1 * MB, endless_headers.sent
    assert code == 1


def test_a_hundred_kilobytes_of_headers_in_short_lines_are_accepted(
    run: Runner, serve: Serve, hostile: Hostile
) -> None:
    """Browsers take up to 256 KB of headers; within 128 lines of 8 KB, so does linkpatrol."""
    padded = hostile(
        sends(head(200, {"Content-Length": "0", **{f"X-Pad-{i}": "y" * 1000 for i in range(100)}}))
    )
    site = site_linking_to(serve, padded.url("/page.html"))

    code, urls = check_site(run, site, [padded])

    assert urls[padded.url("/page.html")]["state"] == "ok"
    assert code == 0


# ---- bombs: a few KB that decode to gigabytes ------------------------------------------------

BOMB_PAGE = html("<html><body>", '<a href="/early.html">early</a>').encode()
PEAK_RSS_BOUND = 400 * MB


@pytest.fixture(scope="module")
def bombs() -> dict[str, Bomb]:
    """Gzip and brotli bodies that decode to a little HTML and 2 GB of zeros (built once)."""
    return {
        "gzip": gzip_bomb(BOMB_PAGE, 2),
        "br": brotli_bomb(BOMB_PAGE, 2),
    }


@pytest.mark.parametrize("encoding", ["gzip", "br"])
def test_decompression_bombs_are_capped_and_memory_stays_bounded(
    tmp_path: Path, serve: Serve, hostile: Hostile, bombs: dict[str, Bomb], encoding: str
) -> None:
    bomb = bombs[encoding]
    assert len(bomb.body) < 3 * MB and bomb.decoded_size > 2 * GB
    page = hostile(serves_bomb(bomb, "text/html"))
    file = hostile(serves_bomb(bomb, "application/octet-stream"))
    site = site_linking_to(serve, page.url("/page.html"), file.url("/data.bin"))
    sites = [arg for server in (page, file) for arg in ("--site", server.base + "/")]

    proc, peak_rss = run_measured(
        tmp_path,
        *("check", site.url("/"), *sites, "--db", str(tmp_path / "memory.db")),
        *("--format", "json"),
        timeout=RUN_TIMEOUT,
    )

    assert proc.returncode == 0, proc.stderr
    urls = by_url(json.loads(proc.stdout))
    # the page is read up to --max-size, decoded; what came before the limit is followed
    bombed = urls[page.url("/page.html")]
    assert (bombed["state"], bombed["error"]) == (
        "warning",
        "page larger than --max-size (10485760 bytes)",
    )
    assert page.url("/early.html") in urls
    # of a file only the first chunk is read, however small it is compressed
    assert urls[file.url("/data.bin")]["state"] == "ok"
    assert urls[site.url("/deeper.html")]["state"] == "ok"
    assert peak_rss < PEAK_RSS_BOUND, f"peak RSS {peak_rss / MB:.0f} MB"


# ---- TLS: certificates that are expired, self-signed, or for another host ------------------


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def https(tmp_path: Path) -> Iterator[Https]:
    """Start HTTPS sites (each serving /page.html) presenting a given certificate."""
    sites: list[TestSite] = []

    def start(context: ssl.SSLContext) -> TestSite:
        site = https_site({"/robots.txt": no_robots(), "/page.html": Page("fine")}, context)
        site.start()
        sites.append(site)
        return site

    yield start
    for site in sites:
        site.stop()


def test_bad_certificates_are_broken_and_a_ca_bundle_trusts_a_private_ca(
    run: Runner, serve: Serve, ca: trustme.CA, https: Https, tmp_path: Path
) -> None:
    month_ago = YESTERDAY - datetime.timedelta(days=30)
    servers = {
        "good": https(server_context(ca.issue_cert("127.0.0.1"), tmp_path)),
        "expired": https(
            server_context(
                ca.issue_cert("127.0.0.1", not_before=month_ago, not_after=YESTERDAY), tmp_path
            )
        ),
        "wrong host": https(server_context(ca.issue_cert("wrong.example"), tmp_path)),
        "self-signed": https(server_context(self_signed("127.0.0.1"), tmp_path)),
    }
    site = site_linking_to(serve, *[s.url("/page.html") for s in servers.values()])
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))

    _, unknown_ca = check_site(run, site, [])
    code, with_bundle = check_site(
        Runner(tmp_path, str(tmp_path / "second.db")), site, [], "--ca-bundle", str(bundle)
    )

    def error(urls: dict[str, dict[str, Any]], name: str) -> str:
        entry = urls[servers[name].url("/page.html")]
        assert entry["state"] == "broken", (name, entry)
        return str(entry["error"])

    assert error(unknown_ca, "good") == (
        "TLS error: certificate verify failed: unable to get local issuer certificate"
    )
    assert with_bundle[servers["good"].url("/page.html")]["state"] == "ok"
    assert (
        error(with_bundle, "expired")
        == "TLS error: certificate verify failed: certificate has expired"
    )
    assert error(with_bundle, "wrong host").startswith(
        "TLS error: certificate verify failed: IP address mismatch"
    )
    for urls in (unknown_ca, with_bundle):
        assert error(urls, "self-signed") == (
            "TLS error: certificate verify failed: self-signed certificate"
        )
    assert servers["good"].requests()  # the bundle let the request through
    assert not servers["self-signed"].requests()  # no HTTP request ever passed a refused handshake
    assert code == 1


def test_insecure_and_tls_entries_relax_only_the_hosts_they_name(
    run: Runner, serve: Serve, ca: trustme.CA, https: Https, tmp_path: Path
) -> None:
    self_a = https(server_context(self_signed("127.0.0.1"), tmp_path))
    self_b = https(server_context(self_signed("127.0.0.1"), tmp_path))
    private_a = https(server_context(ca.issue_cert("127.0.0.1"), tmp_path))
    private_b = https(server_context(ca.issue_cert("127.0.0.1"), tmp_path))
    servers = [self_a, self_b, private_a, private_b]
    site = site_linking_to(serve, *[s.url("/page.html") for s in servers])
    ca.cert_pem.write_to_path(str(tmp_path / "private-ca.pem"))

    def states(urls: dict[str, dict[str, Any]]) -> list[str]:
        return [urls[s.url("/page.html")]["state"] for s in servers]

    _, by_option = check_site(run, site, [], "--insecure", f"127.0.0.1:{self_a.port}")
    (tmp_path / "linkpatrol.toml").write_text(
        f'insecure = ["127.0.0.1:{self_b.port}"]\n'
        "[[tls]]\n"
        f'host = "127.0.0.1:{self_a.port}"\n'
        "verify = false\n"
        "[[tls]]\n"
        f'host = "127.0.0.1:{private_a.port}"\n'
        'ca_bundle = "private-ca.pem"\n'
    )
    _, by_config = check_site(Runner(tmp_path, str(tmp_path / "second.db")), site, [])

    assert states(by_option) == ["ok", "broken", "broken", "broken"]
    assert states(by_config) == ["ok", "ok", "ok", "broken"]
    assert "self-signed" in by_option[self_b.url("/page.html")]["error"]
    assert "local issuer" in by_config[private_b.url("/page.html")]["error"]


def test_insecure_star_verifies_no_host(
    run: Runner, serve: Serve, https: Https, tmp_path: Path
) -> None:
    servers = [https(server_context(self_signed("127.0.0.1"), tmp_path)) for _ in range(2)]
    site = site_linking_to(serve, *[s.url("/page.html") for s in servers])

    code, urls = check_site(run, site, [], "--insecure", "*")

    assert [urls[s.url("/page.html")]["state"] for s in servers] == ["ok", "ok"]
    assert code == 0


TLS_CONFIG_ERRORS = {
    "missing bundle option": ([], "--ca-bundle absent.pem", ["option --ca-bundle", "absent.pem"]),
    "missing bundle key": (
        ['ca_bundle = "absent.pem"'],
        "",
        ["linkpatrol.toml", "ca_bundle", "absent.pem", "not found"],
    ),
    "bundle without certificates": (
        [],
        "--ca-bundle linkpatrol.toml",
        ["option --ca-bundle", "no PEM certificate"],
    ),
    "bundle is a folder": ([], "--ca-bundle .", ["option --ca-bundle", "cannot read"]),
    "bad host": ([], "--insecure http://x/", ["option --insecure", "not a host"]),
    "tls entry without host": (
        ["[[tls]]", "verify = false"],
        "",
        ["linkpatrol.toml", "tls #1", "host"],
    ),
    "tls entry with a bad bundle": (
        ["[[tls]]", 'host = "intranet"', 'ca_bundle = "absent.pem"'],
        "",
        ["linkpatrol.toml", "tls #1", "ca_bundle", "absent.pem"],
    ),
    "tls entry with a string verify": (
        ["[[tls]]", 'host = "intranet"', 'verify = "no"'],
        "",
        ["linkpatrol.toml", "tls #1", "verify"],
    ),
}


@pytest.mark.parametrize("case", sorted(TLS_CONFIG_ERRORS))
def test_bad_tls_settings_are_one_line_and_exit_2(run: Runner, case: str) -> None:
    lines, options, names = TLS_CONFIG_ERRORS[case]
    (run.cwd / "linkpatrol.toml").write_text("\n".join(["# tls", *lines]) + "\n")

    proc = run.check("http://127.0.0.1:9/", *options.split())

    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    for name in names:
        assert name in line, (name, line)
    assert not Path(run.db).exists()


# ---- redirects nowhere: other schemes, names that never resolve, loops across hosts ----------


def moved(location: str) -> Page:
    return Page("", status=302, headers={"Location": location}, etag=False)


def test_redirects_to_other_schemes_and_unresolvable_hosts_get_verdicts(
    run: Runner, serve: Serve
) -> None:
    unfollowed = {
        "/to-file": "file:///etc/passwd",
        "/to-javascript": "javascript:alert(1)",
        "/to-data": "data:text/html,<p>hi</p>",
    }
    recorded = {
        "/to-ftp": "ftp://ftp.example.org/pub/file.txt",
        "/to-mailto": "mailto:someone@example.org",
    }
    targets = {**unfollowed, **recorded, "/to-nowhere": "http://no-such-host.invalid/page"}
    site = serve(
        {
            "/robots.txt": no_robots(),
            "/": Page(html(*[f'<a href="{path}">x</a>' for path in targets])),
            **{path: moved(location) for path, location in targets.items()},
        }
    )

    code, report = run.check_json(site.url("/"), timeout=RUN_TIMEOUT)

    urls = by_url(report)
    assert report["complete"] is True
    for path, target in unfollowed.items():
        hop = urls[site.url(path)]
        scheme = target.split(":")[0]
        assert (hop["state"], hop["redirect_to"]) == ("broken", target), hop
        assert hop["error"] == f"redirect to a {scheme}: URL, which browsers do not follow"
        assert (urls[target]["action"], urls[target]["state"]) == ("record", "unchecked")
    for path, target in recorded.items():  # the browser hands these to another program
        assert urls[site.url(path)]["state"] == "redirect"
        assert (urls[target]["action"], urls[target]["state"]) == ("record", "unchecked")
    assert urls[site.url("/to-nowhere")]["state"] == "redirect"
    nowhere = urls["http://no-such-host.invalid/page"]
    assert (nowhere["state"], nowhere["error"]) == (
        "broken",
        "DNS failure: cannot resolve no-such-host.invalid",
    )
    assert code == 1


def test_hosts_no_dns_server_answers_for_are_judged_without_asking_one(
    run: Runner, serve: Serve
) -> None:
    """An empty label is broken; a single label (other than localhost) a warning, as on an
    intranet a search domain may make it a name."""
    site = serve({"/robots.txt": no_robots(), "/fine.html": Page("fine")})
    site.pages["/"] = Page(
        html(
            '<a href="http://foo..com/">empty label</a>',
            '<a href="http://.foo.com/x">leading dot</a>',
            '<a href="http://www/">single label</a>',
            '<a href="https://wiki:8443/start">intranet name</a>',
            f'<a href="http://localhost:{site.port}/fine.html">localhost</a>',
        )
    )

    code, report = run.check_json(site.url("/"), timeout=RUN_TIMEOUT)

    urls = by_url(report)
    verdicts = {
        url: (e["state"], e["reason"], e["error"])
        for url, e in urls.items()
        if e["reason"] == "invalid-host"
    }
    single = "is a single-label name, not looked up (intranet only)"
    assert verdicts == {
        "http://foo..com/": ("broken", "invalid-host", "invalid host: foo..com has an empty label"),
        "http://.foo.com/x": (
            "broken",
            "invalid-host",
            "invalid host: .foo.com has an empty label",
        ),
        "http://www/": ("warning", "invalid-host", f"invalid host: www {single}"),
        "https://wiki:8443/start": ("warning", "invalid-host", f"invalid host: wiki {single}"),
    }
    assert urls[f"http://localhost:{site.port}/fine.html"]["state"] == "ok"
    assert (report["summary"]["broken"], report["summary"]["warnings"]) == (2, 2)
    assert code == 1


def test_never_resolving_names_are_not_looked_up() -> None:
    """RFC 6761 and 7686: such names fail at once, no DNS server is asked."""
    assert never_resolves("no-such-host.invalid")
    assert never_resolves("WWW.Example.INVALID.")
    assert never_resolves("hidden-service.onion")
    assert not never_resolves("invalid.example.org")
    assert not never_resolves("localhost")


def test_a_redirect_loop_across_two_hosts_is_broken_and_the_run_ends(
    run: Runner, serve: Serve
) -> None:
    there = serve({"/robots.txt": no_robots()})
    here = serve(
        {
            "/robots.txt": no_robots(),
            "/": Page(html('<a href="/go">go</a>', '<a href="/fine.html">fine</a>')),
            "/go": moved(there.url("/back")),
            "/fine.html": Page("fine"),
        }
    )
    there.pages["/back"] = moved(here.url("/go"))

    code, report = run.check_json(here.url("/"), timeout=RUN_TIMEOUT)

    urls = by_url(report)
    assert report["complete"] is True
    for url in (here.url("/go"), there.url("/back")):
        assert urls[url]["state"] == "broken"
        assert urls[url]["error"].startswith("redirect loop: ")
    assert urls[here.url("/fine.html")]["state"] == "ok"
    assert here.counts()["/go"] == 1 and there.counts()["/back"] == 1  # asked once each
    assert code == 1


# ---- --no-private: no requests to private addresses, however they are named -------------------

FINE = head(200, {"Content-Type": "text/plain", "Content-Length": "4"}) + b"fine"


def test_no_private_refuses_private_addresses_but_the_sites_own_hosts(
    run: Runner, serve: Serve, hostile: Hostile, tmp_path: Path
) -> None:
    other_loopback = hostile(sends(FINE), host="127.0.0.2")
    by_name = serve({"/robots.txt": no_robots(), "/page.html": Page("fine")})
    same_host = serve({"/robots.txt": no_robots(), "/page.html": Page("fine")})
    unspecified = f"http://0.0.0.0:{by_name.port}/page.html"  # connects to this machine
    metadata = "http://169.254.169.254/latest/meta-data/"  # a cloud's secrets, link-local
    refused = {
        other_loopback.url("/page.html"): "127.0.0.2 is not a public address",
        f"http://localhost:{by_name.port}/page.html": (
            "localhost resolves to 127.0.0.1, not a public address"
        ),
        unspecified: "0.0.0.0 is not a public address",
        metadata: "169.254.169.254 is not a public address",
    }
    site = serve(
        {
            "/robots.txt": no_robots(),
            "/": Page(
                html(
                    *[f'<a href="{url}">x</a>' for url in refused],
                    f'<a href="{same_host.url("/page.html")}">same host, other port</a>',
                    '<a href="/moved">moved</a>',
                )
            ),
            "/moved": moved(other_loopback.url("/moved-here.html")),
        }
    )

    code, report = run.check_json(site.url("/"), "--no-private", timeout=RUN_TIMEOUT)

    urls = by_url(report)
    assert report["complete"] is True
    for url, reason in refused.items():
        entry = urls[url]
        assert (entry["state"], entry["error"]) == (
            "broken",
            f"private address refused (--no-private): {reason}",
        ), url
    # a redirect is no way around it
    assert urls[site.url("/moved")]["state"] == "redirect"
    assert urls[other_loopback.url("/moved-here.html")]["state"] == "broken"
    # the start URL's host is the user's own: any port of it may be asked
    assert urls[same_host.url("/page.html")]["state"] == "ok"
    assert other_loopback.requests == [] and by_name.requests() == []
    assert code == 1

    # the same from the configuration file, with the other loopback host made part of the site
    (tmp_path / "linkpatrol.toml").write_text(
        f'no_private = true\nsite = ["{other_loopback.base}/"]\n'
    )
    _, report = Runner(tmp_path, str(tmp_path / "second.db")).check_json(
        site.url("/"), timeout=RUN_TIMEOUT
    )

    urls = by_url(report)
    assert urls[other_loopback.url("/page.html")]["state"] == "ok"
    assert urls[f"http://localhost:{by_name.port}/page.html"]["state"] == "broken"
    assert by_name.requests() == []


def test_without_no_private_the_same_links_are_requested(run: Runner, serve: Serve) -> None:
    by_name = serve({"/robots.txt": no_robots(), "/page.html": Page("fine")})
    site = site_linking_to(serve, f"http://localhost:{by_name.port}/page.html")

    code, urls = check_site(run, site, [])

    assert urls[f"http://localhost:{by_name.port}/page.html"]["state"] == "ok"
    assert code == 0


# ---- the decisions behind the options, without a network ---------------------------------------


def test_host_patterns_are_spelled_as_urls_spell_hosts() -> None:
    assert parse_host("Example.ORG") == ("example.org", None)
    assert parse_host("bücher.example:8443") == ("xn--bcher-kva.example", 8443)
    assert parse_host("[::1]:8443") == ("::1", 8443)
    assert parse_host("::1") == ("::1", None)
    assert parse_host("*") == ("*", None)
    for bad in ("http://x/", "a/b", "user@host", "host:0", "host:65536", "[::1]x", ""):
        with pytest.raises(ValueError, match="not a host"):
            parse_host(bad)


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "0.0.0.0",
     "100.64.0.1", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1",
     "ff02::1", "::ffff:127.0.0.1", "64:ff9b::a00:1", "2002:c0a8:101::1"],
)  # fmt: skip
def test_addresses_that_are_not_public(address: str) -> None:
    assert not is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"])
def test_addresses_that_are_public(address: str) -> None:
    assert is_public(ipaddress.ip_address(address))
