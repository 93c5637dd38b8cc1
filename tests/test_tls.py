"""TLS (issue points 4 and 6): certificates are verified; a bad one makes the link broken.

A throw-away CA (trustme) signs a certificate for 127.0.0.1; the site is served over
HTTPS on loopback. Unknown to the system, the CA makes every link there broken; named
in SSL_CERT_FILE, it is trusted like any other and the same links are fine.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import trustme

from tests import hostile, sitesrv
from tests.conftest import Runner, Serve, by_url
from tests.sitesrv import Handler, Page, html


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def https_site(
    ca: trustme.CA, pages: Mapping[str, Page | Handler], host: str = "127.0.0.1"
) -> sitesrv.TestSite:
    """A site on ``host`` over HTTPS, its certificate signed by ``ca``."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(host).configure_cert(context)
    return hostile.https_site(dict(pages), context, host)


@pytest.fixture
def secure(ca: trustme.CA) -> Iterator[sitesrv.TestSite]:
    site = https_site(
        ca,
        {"/robots.txt": Page("", status=404), "/doc": Page("fine"), "/page": Page("fine")},
    )
    site.start()
    yield site
    site.stop()


def test_untrusted_certificate_is_a_broken_link(
    run: Runner, serve: Serve, secure: sitesrv.TestSite
) -> None:
    site = serve(
        {
            "/robots.txt": Page("", status=404),
            "/": Page(html(f'<a href="{secure.url("/doc")}">doc</a>')),
        }
    )

    code, report = run.check_json(site.url("/"))

    doc = by_url(report)[secure.url("/doc")]
    assert doc["state"] == "broken"
    assert doc["reportable"] is True
    assert "TLS" in doc["error"] and "certificate" in doc["error"].lower()
    assert code == 1
    assert secure.requests() == []  # no HTTP request ever got through


def test_trusted_certificate_works(
    run: Runner, serve: Serve, ca: trustme.CA, secure: sitesrv.TestSite
) -> None:
    bundle = Path(run.cwd) / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    site = serve(
        {
            "/robots.txt": Page("", status=404),
            "/": Page(html(f'<a href="{secure.url("/doc")}">doc</a>')),
        }
    )

    code, report = run.check_json(site.url("/"), env={"SSL_CERT_FILE": str(bundle)})

    assert code == 0, report
    assert by_url(report)[secure.url("/doc")]["state"] == "ok"
    assert sorted(h.path for h in secure.requests()) == ["/doc", "/robots.txt"]


def test_https_start_url_with_bad_certificate(run: Runner, secure: sitesrv.TestSite) -> None:
    code, report = run.check_json(secure.url("/page"))

    page = by_url(report)[secure.url("/page")]
    assert page["state"] == "broken"
    assert "TLS" in page["error"]
    assert code == 1
