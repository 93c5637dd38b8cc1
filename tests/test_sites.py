"""Per-site settings: ``[[site]]`` tables give the URLs under a prefix their own headers,
cookies, basic auth, proxy, user agent, timeout, politeness and TLS, and nothing of it
reaches any other origin.

Two (or more) real servers on 127.0.0.1, on different ports, so different origins; the
real command; assertions on what each server's own log says it received, and on every
file the command writes.
"""

from __future__ import annotations

import base64
import http.client
import itertools
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import trustme

from linkpatrol.config import SiteTable
from linkpatrol.model import ConfigError
from linkpatrol.sites import NO_SITE, SiteMatcher
from tests import sitesrv
from tests.conftest import Runner, Serve, by_url
from tests.sitesrv import Hit, Page, html, is_probe
from tests.test_config import assert_config_error, write
from tests.test_fetching import head_refused, sequence, sleeper
from tests.test_tls import https_site

CREDENTIAL_HEADERS = ("authorization", "cookie", "x-api-token", "x-team")
ROBOTS_OK = Page("User-agent: *\nAllow: /\n", content_type="text/plain")


def secrets() -> dict[str, str]:
    """Environment variables holding values no file the command writes may show."""
    tag = uuid.uuid4().hex[:12]
    return {
        "LP_SITE_TEST_PASSWORD": f"pw-{tag}",
        "LP_SITE_TEST_TOKEN": f"token-{tag}",
        "LP_SITE_TEST_SESSION": f"session-{tag}",
    }


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def lower(hit: Hit) -> dict[str, str]:
    return {name.lower(): value for name, value in hit.headers.items()}


def written_by(run: Runner) -> dict[str, bytes]:
    """Every file in the command's folder (the memory and its journal, the log, reports)."""
    return {p.name: p.read_bytes() for p in Path(run.cwd).iterdir() if p.is_file()}


def assert_nowhere(secret_values: list[str], *texts: str | bytes, files: dict[str, bytes]) -> None:
    for value in secret_values:
        for text in texts:
            blob = text.encode() if isinstance(text, str) else text
            assert value.encode() not in blob, value
        for name, data in files.items():
            assert value.encode() not in data, (value, name)


def arrivals(times: list[float], lock: threading.Lock) -> Callable[..., int]:
    """A handler noting when each request arrives (the server's log notes when it ends)."""

    def handle(h: BaseHTTPRequestHandler) -> int:
        with lock:
            times.append(time.monotonic())
        body = b"<p>fine</p>" if h.command != "HEAD" else b""
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        h.send_header("Content-Length", "11")
        h.end_headers()
        h.wfile.write(body)
        return 200

    return handle


def hang(seconds: float) -> Callable[..., int]:
    """A handler that answers nothing for ``seconds``, then gives up."""

    def handle(h: BaseHTTPRequestHandler) -> int:
        time.sleep(seconds)
        h.close_connection = True
        return -1

    return handle


class ForwardProxy:
    """A plain HTTP forward proxy on 127.0.0.1 that relays requests and logs what it got."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []  # (method, absolute URL)
        proxy = self

        class Relay(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.relay()

            def do_HEAD(self) -> None:
                self.relay()

            def relay(self) -> None:
                proxy.seen.append((self.command, self.path))
                target = urlsplit(self.path)
                assert target.hostname is not None, self.path
                upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=10)
                hop = ("connection", "proxy-connection", "keep-alive")
                headers = {k: v for k, v in self.headers.items() if k.lower() not in hop}
                path = target.path + (f"?{target.query}" if target.query else "")
                upstream.request(self.command, path or "/", headers=headers)
                answer = upstream.getresponse()
                body = answer.read()
                upstream.close()
                self.send_response(answer.status)
                framing = (*hop, "transfer-encoding", "content-length")
                for key, value in answer.getheaders():
                    if key.lower() not in framing:
                        self.send_header(key, value)
                length = answer.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", length or str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Relay)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def proxy() -> Iterator[ForwardProxy]:
    server = ForwardProxy()
    yield server
    server.stop()


# ---- matching, without a network -------------------------------------------------------------


def test_longest_prefix_wins_and_only_on_the_same_scheme_host_and_port() -> None:
    tables = (
        SiteTable("http://intranet.example/", headers=(("X-Team", "all"),)),
        SiteTable("http://intranet.example/docs/", headers=(("X-Team", "docs"),)),
        SiteTable("http://intranet.example/api", user_agent="api-robot"),
    )
    sites = SiteMatcher(tables, environ={})

    def team(url: str) -> str | None:
        return sites.for_url(url).headers.get("X-Team")

    assert team("http://intranet.example/") == "all"
    assert team("http://intranet.example/docs/") == "docs"
    assert team("http://intranet.example/docs/deep/page?x=1") == "docs"
    assert team("http://intranet.example/documents") == "all"
    assert sites.for_url("http://intranet.example/api/v2").headers == {"User-Agent": "api-robot"}
    # another scheme, port or host is another origin, whatever the path
    for url in (
        "https://intranet.example/docs/",
        "http://intranet.example:8080/docs/",
        "http://intranet.example.evil.org/docs/",
        "http://evil.org/intranet.example/docs/",
        "http://user:pw@intranet.example/docs/",
    ):
        assert sites.for_url(url) is NO_SITE, url
    # robots.txt not under a prefix: its host's way there, without credentials
    only_docs = SiteMatcher(
        (SiteTable("http://intranet.example/docs/", user_agent="ua", proxy="http://p:3128"),),
        environ={},
    )
    robots = only_docs.for_url("http://intranet.example/robots.txt", robots=True)
    assert robots.headers == {"User-Agent": "ua"} and robots.proxy == "http://p:3128"
    assert only_docs.for_url("http://intranet.example/robots.txt") is NO_SITE
    assert only_docs.for_url("https://intranet.example/robots.txt", robots=True) is NO_SITE


def test_secrets_come_from_the_environment_and_never_show() -> None:
    table = SiteTable(
        "https://intranet.example/",
        where="linkpatrol.toml: site #3",
        headers_env=(("X-Api-Token", "TOKEN_VAR"),),
        cookies=(("lang", "en"),),
        cookies_env=(("session", "SESSION_VAR"),),
        username="bob",
        password_env="PASSWORD_VAR",
    )
    env = {"TOKEN_VAR": "t0k", "SESSION_VAR": "s3ss", "PASSWORD_VAR": "p4ss"}

    request = SiteMatcher((table,), environ=env).for_url("https://intranet.example/a")

    assert dict(request.headers) == {
        "X-Api-Token": "t0k",
        "Cookie": "lang=en; session=s3ss",
        "Authorization": basic("bob", "p4ss"),
    }
    assert "t0k" not in repr(request) and "t0k" not in repr(table)
    for missing in ("TOKEN_VAR", "SESSION_VAR", "PASSWORD_VAR"):
        with pytest.raises(ConfigError) as caught:
            SiteMatcher((table,), environ={k: v for k, v in env.items() if k != missing})
        assert str(caught.value).startswith("linkpatrol.toml: site #3: ")
        assert missing in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        SiteMatcher((table,), environ={**env, "TOKEN_VAR": "line\r\nX-Injected: 1"})
    assert "TOKEN_VAR" in str(caught.value) and "Injected" not in str(caught.value)


def test_github_token_goes_to_githubs_two_https_origins_only() -> None:
    env = {"GITHUB_TOKEN": "ghp_s3cret"}
    sites = SiteMatcher((), environ=env)

    def sent(url: str, robots: bool = False) -> str | None:
        return sites.for_url(url, robots).headers.get("Authorization")

    assert sent("https://github.com/linkpatrol/linkpatrol") == "Bearer ghp_s3cret"
    assert sent("https://api.github.com/repos/linkpatrol/linkpatrol") == "Bearer ghp_s3cret"
    for url in (
        "http://github.com/linkpatrol/",
        "https://github.com:8443/linkpatrol/",
        "https://gist.github.com/linkpatrol/",
        "https://raw.githubusercontent.com/linkpatrol/",
        "https://github.com.evil.org/",
        "https://evil.org/https://github.com/",
        "https://user@github.com/linkpatrol/",
    ):
        assert sent(url) is None, url
    assert "ghp_s3cret" not in repr(sites.for_url("https://github.com/"))
    # not set, or empty: nothing is sent
    assert SiteMatcher((), environ={"GITHUB_TOKEN": ""}).for_url("https://github.com/") is NO_SITE
    # a table of the host keeps its settings and gets the token, unless it sends its own
    tables = (
        SiteTable("https://github.com/ours/", headers=(("X-Team", "docs"),)),
        SiteTable("https://api.github.com/", headers_env=(("Authorization", "OTHER"),)),
    )
    both = SiteMatcher(tables, environ={**env, "OTHER": "token other"})
    assert dict(both.for_url("https://github.com/ours/x").headers) == {
        "X-Team": "docs",
        "Authorization": "Bearer ghp_s3cret",
    }
    assert both.for_url("https://github.com/theirs").headers == {
        "Authorization": "Bearer ghp_s3cret"
    }
    assert both.for_url("https://api.github.com/x").headers == {"Authorization": "token other"}
    # a test's server stands in for GitHub: then GitHub itself gets nothing
    stand_in = {**env, "LINKPATROL_TOKEN_ORIGINS": "http://127.0.0.1:8123"}
    loopback = SiteMatcher((), environ=stand_in)
    assert loopback.for_url("http://127.0.0.1:8123/a").headers == {
        "Authorization": "Bearer ghp_s3cret"
    }
    assert loopback.for_url("https://github.com/") is NO_SITE
    with pytest.raises(ConfigError) as caught:
        SiteMatcher((), environ={"GITHUB_TOKEN": "ghp\r\nX-Injected: 1"})
    assert "GITHUB_TOKEN" in str(caught.value) and "Injected" not in str(caught.value)


# ---- credentials: sent where they belong, nowhere else ---------------------------------------


def test_credentials_reach_their_site_only_redirects_and_retries_included(
    run: Runner, serve: Serve
) -> None:
    env = secrets()
    a = serve({})
    b = serve({})
    b_nohead: list[str] = []
    a_nohead: list[str] = []
    a.pages.update(
        {
            "/robots.txt": ROBOTS_OK,
            "/": Page(
                html(
                    '<a href="/page">page</a>',
                    '<a href="/files/doc.pdf">a file: HEAD</a>',
                    '<a href="/files/nohead">HEAD refused, then GET</a>',
                    '<a href="/files/flaky">503 once, then retried</a>',
                    '<a href="/to-b">redirects to B</a>',
                    f'<a href="{b.url("/page")}">B</a>',
                    f'<a href="{b.url("/nohead")}">B, HEAD refused</a>',
                    f'<a href="{b.url("/back")}">B, redirects back to A</a>',
                )
            ),
            "/page": Page("<p>fine</p>"),
            "/files/doc.pdf": Page(b"%PDF", content_type="application/pdf"),
            "/files/nohead": head_refused(405, a_nohead),
            "/files/flaky": sequence((503, {"Retry-After": "0"}), (200, {})),
            "/to-b": Page(status=302, headers={"Location": b.url("/landing")}),
            "/from-b": Page("<p>back on A</p>"),
        }
    )
    b.pages.update(
        {
            "/robots.txt": ROBOTS_OK,
            "/page": Page("<p>B</p>"),
            "/landing": Page("<p>B</p>"),
            "/nohead": head_refused(405, b_nohead),
            "/back": Page(status=302, headers={"Location": a.url("/from-b")}),
        }
    )
    write(
        run.cwd,
        "linkpatrol.toml",
        f"""
[[site]]
prefix = "{a.url("/")}"
user_agent = "patrol-for-a"
headers = {{ X-Team = "blue" }}
headers_env = {{ X-Api-Token = "LP_SITE_TEST_TOKEN" }}
cookies_env = {{ session = "LP_SITE_TEST_SESSION" }}
username = "bob"
password_env = "LP_SITE_TEST_PASSWORD"

[[rule]]
prefix = "{a.url("/files/")}"
action = "check"
""",
    )

    crawl = run.check(a.url("/"), "--format", "json", "--log", "crawl.log", "-vv", env=env)

    assert crawl.returncode == 0, crawl.stderr
    assert "GET " + a.url("/files/nohead") in crawl.stderr  # -vv shows each request
    report = json.loads(crawl.stdout)
    urls = by_url(report)
    assert urls[a.url("/from-b")]["state"] == "ok"
    assert urls[b.url("/landing")]["state"] == "ok"
    assert a_nohead == ["HEAD", "GET"] and b_nohead == ["HEAD", "GET"]
    expected = {
        "authorization": basic("bob", env["LP_SITE_TEST_PASSWORD"]),
        "cookie": f"session={env['LP_SITE_TEST_SESSION']}",
        "x-api-token": env["LP_SITE_TEST_TOKEN"],
        "x-team": "blue",
        "user-agent": "patrol-for-a",
    }
    a_hits = a.requests()
    assert {(h.method, h.path) for h in a_hits} >= {
        ("GET", "/robots.txt"),
        ("GET", "/"),
        ("HEAD", "/files/doc.pdf"),
        ("HEAD", "/files/nohead"),
        ("GET", "/files/nohead"),
        ("GET", "/to-b"),
        ("GET", "/from-b"),
    }
    assert [h.method for h in a_hits if h.path == "/files/flaky"] == ["HEAD", "HEAD"]
    for hit in a_hits:
        got = lower(hit)
        assert {k: got.get(k) for k in expected} == expected, (hit.method, hit.path)
    b_hits = b.requests()
    assert {h.path for h in b_hits} == {"/robots.txt", "/page", "/nohead", "/landing", "/back"}
    for hit in b_hits:
        got = lower(hit)
        assert not set(got) & set(CREDENTIAL_HEADERS), (hit.method, hit.path, got)
        assert got["user-agent"].startswith("linkpatrol/"), (hit.path, got["user-agent"])

    # the report, later and without the secrets in the environment, shows none of them
    html_report = run("report", "--db", run.db, "--format", "html", "--output", "report.html")
    text_report = run("report", "--db", run.db)
    assert html_report.returncode == 0, html_report.stderr
    assert text_report.returncode == 0, text_report.stderr
    assert (Path(run.cwd) / "crawl.log").stat().st_size > 0
    files = written_by(run)
    assert {"crawl.log", "report.html", "linkpatrol.toml"} <= set(files)
    hidden = [*env.values(), expected["authorization"].split()[1]]
    assert_nowhere(
        hidden,
        crawl.stdout,
        crawl.stderr,
        text_report.stdout,
        text_report.stderr,
        html_report.stderr,
        files=files,
    )


def test_robots_txt_outside_the_prefix_gets_the_user_agent_not_the_credentials(
    run: Runner, serve: Serve
) -> None:
    env = secrets()
    a = serve(
        {
            "/robots.txt": ROBOTS_OK,
            "/docs/": Page(html('<a href="/docs/page">in</a>', '<a href="/other">out</a>')),
            "/docs/page": Page("<p>in</p>"),
            "/other": Page("<p>out</p>"),
        }
    )
    write(
        run.cwd,
        "linkpatrol.toml",
        f"""
site = [{{ prefix = "{a.url("/docs/")}", user_agent = "docs-robot", username = "bob", \
password_env = "LP_SITE_TEST_PASSWORD" }}]
""",
    )

    code, report = run.check_json(a.url("/docs/"), env=env)

    assert code == 0, report
    seen = {h.path: lower(h) for h in a.requests()}
    assert {path for path in seen if not is_probe(path)} == {
        "/robots.txt",
        "/docs/",
        "/docs/page",
        "/other",
    }
    auth = basic("bob", env["LP_SITE_TEST_PASSWORD"])
    for path in ("/docs/", "/docs/page"):
        assert seen[path]["authorization"] == auth
        assert seen[path]["user-agent"] == "docs-robot"
    assert "authorization" not in seen["/robots.txt"]
    assert seen["/robots.txt"]["user-agent"] == "docs-robot"
    assert "authorization" not in seen["/other"]
    assert seen["/other"]["user-agent"].startswith("linkpatrol/")


def test_a_missing_secret_is_one_line_naming_the_table_and_the_variable(
    run: Runner, serve: Serve
) -> None:
    a = serve({"/": Page("<p>fine</p>")})
    write(
        run.cwd,
        "linkpatrol.toml",
        f'[[site]]\nprefix = "{a.url("/")}"\nheaders_env = {{ X-Api-Token = "LP_SITE_UNSET" }}\n',
    )

    proc = run.check(a.url("/"), env={"LP_SITE_UNSET": ""})

    assert_config_error(proc, "linkpatrol.toml", "site #1", "LP_SITE_UNSET")
    assert a.requests() == []
    assert not Path(run.db).exists()  # refused before anything is written


def test_a_secret_with_a_line_break_is_refused_without_showing_it(
    run: Runner, serve: Serve
) -> None:
    a = serve({"/": Page("<p>fine</p>")})
    write(
        run.cwd,
        "linkpatrol.toml",
        f'[[site]]\nprefix = "{a.url("/")}"\nusername = "bob"\npassword_env = "LP_SITE_PW"\n',
    )

    proc = run.check(a.url("/"), env={"LP_SITE_PW": "hunter2\r\nX-Evil: 1"})

    assert_config_error(proc, "site #1", "LP_SITE_PW")
    assert "hunter2" not in proc.stderr
    assert a.requests() == []


# ---- the way there: user agent, proxy, timeout, TLS ------------------------------------------


def test_proxy_carries_the_sites_requests_only(
    run: Runner, serve: Serve, proxy: ForwardProxy
) -> None:
    a = serve({"/robots.txt": ROBOTS_OK, "/page": Page("<p>A</p>")})
    b = serve({"/robots.txt": ROBOTS_OK, "/page": Page("<p>B</p>")})
    start = serve(
        {
            "/robots.txt": ROBOTS_OK,
            "/": Page(
                html(f'<a href="{a.url("/page")}">A</a>', f'<a href="{b.url("/page")}">B</a>')
            ),
        }
    )
    write(
        run.cwd,
        "linkpatrol.toml",
        f'[[site]]\nprefix = "{a.url("/")}"\nproxy = "{proxy.url}"\n'
        'headers = { X-Team = "blue" }\n',
    )

    code, report = run.check_json(start.url("/"))

    assert code == 0, report
    assert sorted(proxy.seen) == [("GET", a.url("/robots.txt")), ("HEAD", a.url("/page"))]
    # what reached A came through the proxy, with the site's header
    assert [(h.method, h.path) for h in a.requests()] == [("GET", "/robots.txt"), ("HEAD", "/page")]
    assert all(lower(h)["x-team"] == "blue" for h in a.requests())
    assert {h.path for h in b.requests()} == {"/robots.txt", "/page"}
    assert all("x-team" not in lower(h) for h in b.requests())


def test_a_sites_timeout_is_its_own(run: Runner, serve: Serve) -> None:
    a = serve({"/robots.txt": ROBOTS_OK, "/hang": hang(3.0)})
    b = serve({"/robots.txt": ROBOTS_OK, "/slow": sleeper(1.0)})
    start = serve(
        {
            "/robots.txt": ROBOTS_OK,
            "/": Page(
                html(f'<a href="{a.url("/hang")}">A</a>', f'<a href="{b.url("/slow")}">B</a>')
            ),
        }
    )
    write(run.cwd, "linkpatrol.toml", f'[[site]]\nprefix = "{a.url("/")}"\ntimeout = "0.3s"\n')

    code, report = run.check_json(start.url("/"), "--retries", "0")

    urls = by_url(report)
    assert urls[a.url("/hang")]["state"] == "broken"
    assert urls[a.url("/hang")]["error"] == "timeout after 0.3s"
    assert urls[b.url("/slow")]["state"] == "ok"  # 1 s is well within the default 15 s
    assert code == 1


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def secure_sites(ca: trustme.CA) -> Iterator[list[sitesrv.TestSite]]:
    """Three HTTPS servers whose certificates a CA unknown to the system signed."""
    sites = [
        https_site(ca, {"/robots.txt": ROBOTS_OK, "/doc": Page("fine"), "/docs/doc": Page("fine")})
        for _ in range(3)
    ]
    for site in sites:
        site.start()
    yield sites
    for site in sites:
        site.stop()


def test_tls_per_site_a_ca_bundle_for_one_no_verification_for_another(
    run: Runner, serve: Serve, ca: trustme.CA, secure_sites: list[sitesrv.TestSite]
) -> None:
    trusted, unknown, insecure = secure_sites
    ca.cert_pem.write_to_path(str(Path(run.cwd) / "ca.pem"))
    start = serve(
        {
            "/robots.txt": ROBOTS_OK,
            "/": Page(
                html(
                    f'<a href="{trusted.url("/doc")}">trusted by its table</a>',
                    f'<a href="{unknown.url("/doc")}">no table</a>',
                    f'<a href="{insecure.url("/docs/doc")}">not verified</a>',
                )
            ),
        }
    )
    write(
        run.cwd,
        "linkpatrol.toml",
        f"""
[[site]]
prefix = "{trusted.url("/")}"
ca_bundle = "ca.pem"

[[site]]
prefix = "{insecure.url("/docs/")}"
insecure = true
""",
    )

    code, report = run.check_json(start.url("/"))

    urls = by_url(report)
    assert urls[trusted.url("/doc")]["state"] == "ok"
    assert urls[insecure.url("/docs/doc")]["state"] == "ok"
    assert urls[unknown.url("/doc")]["state"] == "broken"
    assert "certificate verify failed" in urls[unknown.url("/doc")]["error"]
    assert code == 1
    # robots.txt, outside the /docs/ prefix, went the site's way too (else: a TLS error)
    assert [h.path for h in insecure.requests()] == ["/robots.txt", "/docs/doc"]
    assert unknown.requests() == []


# ---- politeness: per_host and delay for one host ----------------------------------------------


def test_per_host_for_one_site_leaves_the_others_alone(run: Runner, serve: Serve) -> None:
    slow_pages = {f"/slow/{i}": sleeper(0.2) for i in range(6)}
    a = serve({"/robots.txt": ROBOTS_OK, **slow_pages})
    b = serve({"/robots.txt": ROBOTS_OK, **slow_pages})
    links = [f'<a href="{s.url(p)}">x</a>' for s in (a, b) for p in slow_pages]
    start = serve({"/robots.txt": ROBOTS_OK, "/": Page(html(*links))})
    write(run.cwd, "linkpatrol.toml", f'[[site]]\nprefix = "{a.url("/slow/")}"\nper_host = 1\n')

    code, report = run.check_json(start.url("/"))

    assert code == 0, report
    assert len(a.requests("HEAD")) == 6 and len(b.requests("HEAD")) == 6
    assert a.max_active == 1  # the whole host, though the prefix is /slow/
    assert b.max_active > 1  # --per-host 8 as before


def test_delay_for_one_site_spaces_its_requests(run: Runner, serve: Serve) -> None:
    lock = threading.Lock()
    times: list[float] = []
    pages = {f"/p{i}": arrivals(times, lock) for i in range(4)}
    a = serve({"/robots.txt": ROBOTS_OK, **pages})
    start = serve(
        {"/robots.txt": ROBOTS_OK, "/": Page(html(*(f'<a href="{a.url(p)}">x</a>' for p in pages)))}
    )
    write(run.cwd, "linkpatrol.toml", f'[[site]]\nprefix = "{a.url("/")}"\ndelay = "0.4s"\n')

    code, report = run.check_json(start.url("/"))

    assert code == 0, report
    assert len(times) == 4
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert min(gaps) >= 0.3, gaps  # 0.4 s apart, less what the network may shift
    assert a.max_active == 1


# ---- invalid tables ------------------------------------------------------------------------

BAD_TABLES = {
    "unknown key": ('prefix = "http://a.example/"\ncolour = "red"', ["site #1", "'colour'"]),
    "no prefix": ('headers = { X-Team = "blue" }', ["site #1", "'prefix'"]),
    "prefix not http": ('prefix = "ftp://a.example/"', ["site #1", "'prefix'", "http"]),
    "prefix not a URL": ('prefix = "http://[::1/"', ["site #1", "'prefix'"]),
    "password in prefix": ('prefix = "http://bob:pw@a.example/"', ["site #1", "'prefix'"]),
    "headers not a table": ('prefix = "http://a.example/"\nheaders = "X: 1"', ["'headers'"]),
    "header value not a string": ('prefix = "http://a.example/"\nheaders = { X = 1 }', ["'X'"]),
    "bad header name": ('prefix = "http://a.example/"\nheaders = { "X Y" = "1" }', ["'X Y'"]),
    "bad variable name": (
        'prefix = "http://a.example/"\nheaders_env = { X = "1-NO" }',
        ["'headers_env'", "1-NO"],
    ),
    "cookie with ;": ('prefix = "http://a.example/"\ncookies = { a = "1; b=2" }', ["'cookies'"]),
    "user without password": ('prefix = "http://a.example/"\nusername = "bob"', ["password_env"]),
    "header twice": (
        'prefix = "http://a.example/"\nheaders = { Authorization = "x" }\n'
        'username = "bob"\npassword_env = "PW"',
        ["site #1", "authorization"],
    ),
    "per_host zero": ('prefix = "http://a.example/"\nper_host = 0', ["'per_host'"]),
    "timeout not a duration": ('prefix = "http://a.example/"\ntimeout = "soon"', ["'timeout'"]),
    "insecure not a boolean": ('prefix = "http://a.example/"\ninsecure = "yes"', ["'insecure'"]),
    "https proxy": ('prefix = "http://a.example/"\nproxy = "https://p:3128"', ["'proxy'"]),
    "proxy with a password": (
        'prefix = "http://a.example/"\nproxy = "http://u:pw@p:3128"',
        ["'proxy'"],
    ),
    "missing CA bundle": ('prefix = "http://a.example/"\nca_bundle = "none.pem"', ["ca_bundle"]),
    "same prefix twice": (
        'prefix = "http://a.example/"\n[[site]]\nprefix = "HTTP://A.example:80/"',
        ["site #2", "site #1"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_TABLES))
def test_invalid_site_table_is_one_line_exit_2(run: Runner, case: str) -> None:
    body, names = BAD_TABLES[case]
    write(run.cwd, "linkpatrol.toml", f"[[site]]\n{body}\n")

    proc = run.check("http://127.0.0.1:9/")

    assert_config_error(proc, "linkpatrol.toml", *names)


def test_site_holding_something_else_than_prefixes_and_tables(run: Runner) -> None:
    write(run.cwd, "linkpatrol.toml", 'site = [{ prefix = "http://a.example/" }, 3]\n')

    proc = run.check("http://127.0.0.1:9/")

    assert_config_error(proc, "linkpatrol.toml", "site #2", "table")


def test_parse_true_makes_the_prefix_part_of_the_site(run: Runner, serve: Serve) -> None:
    docs = serve({"/robots.txt": ROBOTS_OK, "/": Page('<a href="/gone">gone</a>')})
    start = serve({"/robots.txt": ROBOTS_OK, "/": Page(f'<a href="{docs.url("/")}">docs</a>')})
    write(run.cwd, "linkpatrol.toml", f'[[site]]\nprefix = "{docs.url("/")}"\nparse = true\n')

    code, report = run.check_json(start.url("/"))

    assert by_url(report)[docs.url("/gone")]["state"] == "broken"
    assert code == 1
