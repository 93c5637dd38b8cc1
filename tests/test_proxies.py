"""Proxies: the environment's (``http_proxy``, ``https_proxy``, ``all_proxy``, ``no_proxy``)
as curl reads them, ``--proxy`` and the ``proxy`` key, and a proxy's password from
``LINKPATROL_PROXY_PASSWORD``, never written anywhere.

The rules without a network; then a real forward proxy on 127.0.0.1 that logs what it
carries, the real command, and the proxy's and the servers' logs.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from linkpatrol.model import ConfigError
from linkpatrol.proxies import PASSWORD_VARIABLE, Proxies, Proxy, bypasses, proxy_option
from tests.conftest import Runner, Serve, by_url
from tests.proxysrv import ForwardProxy
from tests.sitesrv import Page, html, is_probe
from tests.test_config import assert_config_error, write
from tests.test_sites import assert_nowhere, written_by
from tests.test_tls import https_site

ROBOTS_OK = Page("User-agent: *\nAllow: /\n", content_type="text/plain")

# ---- the rules, without a network -----------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "no_proxy", "bypassed"),
    [
        ("example.org", "example.org", True),
        ("www.example.org", "example.org", True),
        ("www.example.org", ".example.org", True),
        ("example.org", ".example.org", True),
        ("nonexample.org", "example.org", False),
        ("example.org.", "example.org", True),
        ("Example.ORG", "EXAMPLE.org", True),
        ("example.org", "other.net, example.org", True),
        ("example.org", "other.net,,example.org", True),
        ("example.org", "*", True),
        ("example.org", "*.example.org", False),  # no globs
        ("example.org", "", False),
        ("10.1.2.3", "10.0.0.0/8", True),
        ("10.1.2.3", "10.1.2.3", True),
        ("10.1.2.4", "10.1.2.3", False),
        ("127.0.0.1", "localhost", False),  # names match names, addresses addresses
        ("localhost", "127.0.0.1", False),
        ("::1", "::1", True),
        ("fd00::5", "fd00::/8", True),
        ("fd00::5", "[fd00::5]", True),
    ],
)
def test_no_proxy_matches_as_curl_does(host: str, no_proxy: str, bypassed: bool) -> None:
    assert bypasses(host, no_proxy) is bypassed


def test_the_environments_proxies_as_curl_reads_them() -> None:
    def proxy(url: str, **environ: str) -> str | None:
        found = Proxies(None, environ).for_url(url)
        return found.url if found is not None else None

    assert proxy("http://a.example/") is None
    assert proxy("http://a.example/", http_proxy="p:3128") == "http://p:3128"
    # HTTP_PROXY is what a CGI program gets of a request's "Proxy:" header: never read
    assert proxy("http://a.example/", HTTP_PROXY="http://p:3128") is None
    assert proxy("https://a.example/", http_proxy="p:3128") is None
    assert proxy("https://a.example/", HTTPS_PROXY="http://s:1") == "http://s:1"
    assert proxy("https://a.example/", https_proxy="http://s:1", HTTPS_PROXY="x:2") == "http://s:1"
    assert proxy("http://a.example/", all_proxy="socks5h://s") == "socks5h://s:1080"
    assert proxy("https://a.example/", ALL_PROXY="https://s") == "https://s:443"
    # the first variable set counts, even empty
    assert proxy("https://a.example/", https_proxy="", all_proxy="s:1") is None
    assert proxy("http://a.example/", http_proxy="p:1", no_proxy="ample") == "http://p:1"
    assert proxy("http://a.example/", http_proxy="p:1", NO_PROXY="a.example") is None
    assert proxy("http://a.example/", http_proxy="p:1", no_proxy="*") is None
    assert proxy("file:///tmp/x.html", all_proxy="p:1") is None


def test_the_proxy_option_wins_over_the_environment_but_not_over_no_proxy() -> None:
    environ = {"http_proxy": "http://env:1", "no_proxy": "intranet.example"}
    option = Proxies(proxy_option("http://opt:2"), environ)
    assert option.for_url("http://a.example/") == Proxy("http://opt:2")
    assert option.for_url("https://a.example/") == Proxy("http://opt:2")
    assert option.for_url("http://intranet.example/") is None
    # '' is no proxy at all, not the environment's either
    assert Proxies(proxy_option(""), environ).for_url("http://a.example/") is None


def test_a_proxy_password_only_from_the_environment() -> None:
    with pytest.raises(ValueError, match=PASSWORD_VARIABLE) as refused:
        proxy_option("http://robot:hunter2@p:3128")
    assert "hunter2" not in str(refused.value)
    assert proxy_option("http://robot@p:3128") == "http://robot@p:3128"
    with pytest.raises(ConfigError, match=PASSWORD_VARIABLE):
        Proxies("http://robot@p:3128", {})
    found = Proxies("http://robot@p:3128", {PASSWORD_VARIABLE: "hunter2"}).for_url("http://a/")
    assert found == Proxy("http://p:3128", "robot", "hunter2")
    assert "hunter2" not in repr(found)
    # the environment's URL may hold one, as curl takes it; an error never quotes it
    env = Proxies(None, {"http_proxy": "http://robot:pw%40x@p:3128"}).for_url("http://a/")
    assert env == Proxy("http://p:3128", "robot", "pw@x")
    with pytest.raises(ConfigError) as bad:
        Proxies(None, {"https_proxy": "ftp://robot:hunter2@p:3128"})
    assert "https_proxy" in str(bad.value) and "hunter2" not in str(bad.value)


# ---- through a real proxy -------------------------------------------------------------------


@pytest.fixture
def proxy() -> Iterator[ForwardProxy]:
    with ForwardProxy() as server:
        yield server


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def test_a_check_goes_through_the_environments_proxy_but_not_for_no_proxy_hosts(
    run: Runner, serve: Serve, proxy: ForwardProxy
) -> None:
    site = serve({"/robots.txt": ROBOTS_OK, "/page": Page("<p>x</p>")})
    port = site.port
    site.pages["/"] = Page(
        html(
            f'<a href="http://127.0.0.1:{port}/page">through the proxy</a>',
            f'<a href="http://localhost:{port}/page">direct</a>',
        )
    )
    environ = {"http_proxy": f"127.0.0.1:{proxy.port}", "no_proxy": "localhost"}

    code, report = run.check_json(site.url("/"), env=environ)

    assert code == 0, report
    urls = by_url(report)
    assert urls[f"http://localhost:{port}/page"]["state"] == "ok"
    assert sorted(s for s in proxy.seen if not is_probe(s[1])) == [
        ("GET", site.url("/")),
        ("GET", site.url("/page")),
        ("GET", site.url("/robots.txt")),
    ]
    direct = [h for h in site.requests() if h.headers.get("Host", "").startswith("localhost")]
    assert sorted(h.path for h in direct) == ["/page", "/robots.txt"]


def test_https_goes_through_the_proxy_key_with_connect(
    run: Runner, proxy: ForwardProxy, ca: trustme.CA, tmp_path: Path
) -> None:
    site = https_site(ca, {"/robots.txt": ROBOTS_OK, "/": Page(html('<a href="/page">p</a>'))})
    site.pages["/page"] = Page("<p>x</p>")
    site.start()
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    write(run.cwd, "linkpatrol.toml", f'proxy = "{proxy.url}"\n')
    try:
        code, report = run.check_json(site.url("/"), "--ca-bundle", str(bundle))
    finally:
        site.stop()

    assert code == 0, report
    assert by_url(report)[site.url("/page")]["state"] == "ok"
    assert set(proxy.seen) == {("CONNECT", f"127.0.0.1:{site.port}")}
    assert sorted(h.path for h in site.requests(probes=False)) == ["/", "/page", "/robots.txt"]


def test_a_proxy_with_a_user_and_a_password_from_the_environment(
    run: Runner, serve: Serve, tmp_path: Path
) -> None:
    password = f"pw-{uuid.uuid4().hex[:12]}"
    site = serve({"/robots.txt": ROBOTS_OK, "/": Page(html('<a href="/page">p</a>'))})
    site.pages["/page"] = Page("<p>x</p>")
    log = tmp_path / "run.log"
    with ForwardProxy(login=f"robot:{password}") as proxy:
        proc = run.check(
            site.url("/"),
            "--proxy",
            f"http://robot@127.0.0.1:{proxy.port}",
            "--log",
            str(log),
            "-vv",
            env={PASSWORD_VARIABLE: password},
        )

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proxy.refused == []
    assert sorted(s for s in proxy.seen if not is_probe(s[1])) == [
        ("GET", site.url("/")),
        ("GET", site.url("/page")),
        ("GET", site.url("/robots.txt")),
    ]
    # the proxy took its login: the site never sees it
    assert all("Proxy-Authorization" not in h.headers for h in site.requests())
    assert log.exists()
    assert_nowhere([password], proc.stdout, proc.stderr, files=written_by(run))


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_wrong_proxy_password_is_a_clear_failure(
    run: Runner, serve: Serve, ca: trustme.CA, scheme: str
) -> None:
    site = serve({"/robots.txt": ROBOTS_OK, "/": Page("<p>x</p>")})
    start = site.url("/").replace("http://", f"{scheme}://")
    with ForwardProxy(login="robot:right") as proxy:
        code, report = run.check_json(
            start,
            "--proxy",
            f"http://robot@127.0.0.1:{proxy.port}",
            env={PASSWORD_VARIABLE: "wrong"},
        )

    entry = by_url(report)[start]
    assert entry["state"] == "broken"
    assert entry["error"] == "the proxy refused the user name and password: HTTP 407"
    assert code == 1
    assert proxy.seen == [] and proxy.refused
    assert site.requests() == []


def test_a_proxy_user_without_the_password_variable_is_refused(
    run: Runner, serve: Serve, proxy: ForwardProxy
) -> None:
    site = serve({"/": Page("<p>x</p>")})

    proc = run.check(site.url("/"), "--proxy", f"http://robot@127.0.0.1:{proxy.port}")

    assert_config_error(proc, "--proxy", PASSWORD_VARIABLE)
    assert proxy.seen == [] and proxy.refused == []
    assert site.requests() == []
    assert not Path(run.db).exists()  # refused before anything is written
