"""Certificates about to expire: a good answer from such a host is a warning, once a pass.

A throw-away CA (trustme) signs a certificate for 127.0.0.1 that ends in a few days, and
the site is served over HTTPS on loopback, the CA trusted through SSL_CERT_FILE.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trustme

from linkpatrol.config import SiteSettings
from linkpatrol.curlfetch import CurlTransport
from linkpatrol.model import Action, Outcome, Reason, State
from linkpatrol.store import Discovered, open_store
from linkpatrol.transport import Request, Response
from tests import sitesrv
from tests.conftest import Runner, by_url
from tests.hostile import https_site
from tests.sitesrv import Page, html

Site = Callable[[int], sitesrv.TestSite]


@pytest.fixture
def site_ending(ca: trustme.CA) -> Iterator[Site]:
    """An HTTPS site of three good pages whose certificate ends in so many days."""
    sites: list[sitesrv.TestSite] = []

    def start(days: int) -> sitesrv.TestSite:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ends = datetime.now(UTC) + timedelta(days=days)
        ca.issue_cert("127.0.0.1", not_after=ends).configure_cert(context)
        site = https_site(
            {
                "/robots.txt": Page("", status=404),
                "/": Page(html('<a href="/a">a</a> <a href="/b">b</a>')),
                "/a": Page(html('<a href="/b">b</a>')),
                "/b": Page(html("<p>b</p>")),
            },
            context,
        )
        site.start()
        sites.append(site)
        return site

    yield start
    for site in sites:
        site.stop()


def warned(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in report["urls"] if e["reason"] == "cert-expiry"]


def host_of(site: sitesrv.TestSite) -> str:
    return site.url("/").split("://")[1].rstrip("/")


def test_a_certificate_ending_in_three_days_is_one_warning(
    run: Runner, site_ending: Site, trusting: dict[str, str]
) -> None:
    site = site_ending(3)
    ends = (datetime.now(UTC) + timedelta(days=3)).date().isoformat()

    code, report = run.check_json(site.url("/"), env=trusting)

    assert code == 0, report  # a warning, as warnings go
    [warning] = warned(report)  # three good pages of the host: one warning
    assert warning["state"] == "warning"
    assert warning["url"] == site.url("/")  # the first of the host's URLs checked
    assert warning["error"] == f"certificate of {host_of(site)} expires {ends} (in 3 days)"
    assert warning["last_good"] is not None  # its answer was good all the same
    states = {url: e["state"] for url, e in by_url(report).items()}
    assert states == {site.url("/"): "warning", site.url("/a"): "ok", site.url("/b"): "ok"}
    assert report["summary"]["warnings"] == 1
    assert report["summary"]["parsed"] == 3  # the page warned of is read as any other


def test_the_warning_fails_the_check_with_fail_on_warning(
    run: Runner, site_ending: Site, trusting: dict[str, str]
) -> None:
    site = site_ending(3)

    proc = run.check(site.url("/"), "--fail-on", "warning", env=trusting)

    assert proc.returncode == 1, proc.stderr
    [line] = [line for line in proc.stdout.splitlines() if "certificate of" in line]
    assert line.strip().startswith(f"warning: certificate of {host_of(site)} expires ")
    assert "(in 3 days)" in line
    assert "kind:" not in line  # the words say what it is


@pytest.mark.parametrize(("days", "option"), [(60, ()), (3, ("--cert-expiry", "0"))])
def test_no_warning_for_a_distant_end_or_with_cert_expiry_0(
    run: Runner, site_ending: Site, trusting: dict[str, str], days: int, option: tuple[str, ...]
) -> None:
    site = site_ending(days)

    code, report = run.check_json(site.url("/"), *option, env=trusting)

    assert code == 0, report
    assert warned(report) == []
    assert {e["state"] for e in report["urls"]} == {"ok"}


def test_a_longer_cert_expiry_warns_of_a_distant_end(
    run: Runner, site_ending: Site, trusting: dict[str, str]
) -> None:
    site = site_ending(60)

    code, report = run.check_json(site.url("/"), "--cert-expiry", "90", env=trusting)

    assert code == 0, report
    assert [e["url"] for e in warned(report)] == [site.url("/")]
    assert "(in 60 days)" in warned(report)[0]["error"]


def test_a_resumed_pass_keeps_its_one_warning(
    run: Runner, site_ending: Site, trusting: dict[str, str]
) -> None:
    site = site_ending(3)

    # robots.txt and the start page: the run stops with the warning given, the pages left
    code, first = run.check_json(site.url("/"), "--max-requests", "2", env=trusting)
    assert code == 3, first
    assert [e["url"] for e in warned(first)] == [site.url("/")]

    code, report = run.check_json(site.url("/"), env=trusting)  # a new connection

    assert code == 0, report
    assert report["pass"] == first["pass"] and report["complete"]
    assert [e["url"] for e in warned(report)] == [site.url("/")]
    assert report["summary"]["warnings"] == 1


def test_an_insecure_host_is_not_warned_of(run: Runner, site_ending: Site) -> None:
    site = site_ending(3)

    code, report = run.check_json(site.url("/"), "--insecure", "127.0.0.1")

    assert code == 0, report
    assert warned(report) == []


def send_twice(settings: SiteSettings, url: str) -> list[Response]:
    """Two requests of the URL, one after the other, over libcurl."""

    async def run() -> list[Response]:
        transport = CurlTransport(settings)
        try:
            request = Request("GET", url, {}, 1024, 10.0)
            return [await transport.send(request), await transport.send(request)]
        finally:
            await transport.close()

    return asyncio.run(run())


def test_an_answer_over_a_connection_kept_open_carries_the_certificates_end(
    site_ending: Site, tmp_path: Path, ca: trustme.CA
) -> None:
    site = site_ending(3)
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    ends = (datetime.now(UTC) + timedelta(days=3)).timestamp()

    first, second = send_twice(SiteSettings(ca_bundle=str(bundle)), site.url("/a"))

    assert (first.status, first.reused, second.status, second.reused) == (200, False, 200, True)
    assert first.cert_expires is not None and abs(first.cert_expires - ends) < 60
    assert second.cert_expires == first.cert_expires
    off = send_twice(SiteSettings(ca_bundle=str(bundle), cert_expiry=0), site.url("/a"))
    assert [r.cert_expires for r in off] == [None, None]
    unverified = send_twice(SiteSettings(insecure=("127.0.0.1",)), site.url("/a"))
    assert [r.status for r in unverified] == [200, 200]
    assert [r.cert_expires for r in unverified] == [None, None]


H = "https://h.test"
T0 = 1_800_000_000.0


def good(url_id: int, warned_of: bool = False, links: list[str] | None = None) -> Outcome:
    outcome = Outcome(url_id, Action.PARSE, State.OK, http_status=200, fetched=True)
    if links is not None:
        outcome.links = [Discovered(url, 1, Action.PARSE) for url in links]
    if warned_of:
        outcome.state, outcome.reason = State.WARNING, Reason.CERT_EXPIRY
        outcome.error = "certificate of h.test expires 2027-01-18 (in 3 days)"
    return outcome


@pytest.mark.backends
def test_the_memory_keeps_one_warning_a_pass_whoever_gives_it(db: str) -> None:
    """Two workers of a crew, or a run and the one resuming it, each warn of the host on
    the first good answer they see: the memory keeps the first, and the others as ok."""
    store = open_store(db, crawl=True)
    try:
        info = store.begin_pass([f"{H}/"], T0)
        store.seed(info.id, [(f"{H}/", Action.PARSE)], T0)
        [start] = store.claim(info.id, 10, T0, (), 60.0)
        store.complete(info.id, [good(start.url_id, True, [f"{H}/a", f"{H}/b"])], T0)
        assert store.certificates_warned(info.id) == {H}

        pages = store.claim(info.id, 10, T0, (), 60.0)
        assert sorted(t.url for t in pages) == [f"{H}/a", f"{H}/b"]
        again = [good(start.url_id, True, [f"{H}/a", f"{H}/b"])]  # written again: it stays
        store.complete(info.id, [*again, *(good(t.url_id, True) for t in pages)], T0 + 1)

        states = {u.url: (u.state, u.reason) for u in store.pass_urls(info.id)}
        assert states == {
            f"{H}/": (State.WARNING, Reason.CERT_EXPIRY),
            f"{H}/a": (State.OK, None),
            f"{H}/b": (State.OK, None),
        }
        assert store.certificates_warned(info.id) == {H}
        store.end_run(info.id, 1.0, T0 + 2, True, None)
        next_pass = store.begin_pass([f"{H}/"], T0 + 10)
        assert store.certificates_warned(next_pass.id) == set()
    finally:
        store.close()
