"""Odd pages (issue 5 point 1): what a generator, a broken template or an attacker puts online.

A page with a million links, elements nested 100,000 deep, NUL bytes, bytes that are not
in the declared charset, a charset declared twice differently, UTF-16, URLs of 100 KB,
every URL scheme and malformed ones, IPv6 literals and IDN host names. Each is crawled by
the real command from a real server on 127.0.0.1 (and ::1): the run ends, in bounded time
and memory, every odd URL has a verdict or is recorded with its reason, at its line.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import sitesrv
from tests.conftest import Runner, Serve, by_url, memory_rows
from tests.hostile import MB, run_measured
from tests.sitesrv import Page, html

RUN_TIMEOUT = 90  # seconds: a run that has not ended by then never would
DEEP = 100_000
LONG = 100_000  # characters in a long URL
MILLION = 1_000_000


def referrers(entry: dict[str, Any]) -> list[tuple[str, int | None]]:
    return sorted((r["url"], r["line"]) for r in entry["referrers"])


# ------------------------------------------------------------------ one site of odd pages


class _Ipv6Server(sitesrv._Server):
    address_family = socket.AF_INET6


def _serve_on_ipv6(site: sitesrv.TestSite) -> tuple[_Ipv6Server | None, str | None]:
    """The same site also on [::1], on a port of its own; (None, None) without IPv6."""
    try:
        server = _Ipv6Server(("::1", 0), sitesrv._RequestHandler)
    except OSError:
        return None, None
    server.site = site
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    return server, f"http://[::1]:{server.server_address[1]}"


NESTED = html(
    "<html><body>",
    '<a href="/before-nest.html">before</a>',
    "<div>" * DEEP + "<span><b><i>" * 10,
    '<a href="/deep.html">at the bottom</a>',
    "</i></b></span>" * 10 + "</div>" * DEEP,
    '<a href="/after-nest.html">after</a>',
    "</body></html>",
)
NUL = b"\n".join(
    [
        b"\x00\x00<html><body>\x00",
        b'<a href="/a\x00b.html">a NUL in a URL</a>',
        b"text \x00 with <b\x00>NULs</b\x00> \x00",
        b'<a href="/after-nul.html">after</a><a hr\x00ef="/not-an-href.html">x</a>',
        b"</body></html>\x00",
    ]
)
BAD_UTF8 = b"\n".join(
    [
        b"<html><body>",
        b"\xff\xfe\xc3( invalid \xe2\x82 UTF-8 \xf0\x28\x8c\xbc \xc0\xaf",
        b'<a href="/caf\xc3\xa9.html">valid UTF-8</a>',
        b'<a href="/bad\xff.html">an invalid byte in a URL</a>',
        b'<a href="/after-bad.html">after</a>',
    ]
)
META_VS_HEADER = b"\n".join(
    [
        b'<html><head><meta charset="utf-8"></head><body>',
        b'<a href="/caf\xe9-latin.html">header says ISO-8859-1, meta says UTF-8</a>',
    ]
)
BOM_VS_META = "\ufeff" + html(
    '<html><head><meta charset="windows-1251"></head><body>',
    '<a href="/caf\u00e9-bom.html">a UTF-8 BOM wins over the meta</a>',
)
UTF16 = html(
    "<html><body>",
    "",
    '<a href="/\u00fcber-16.html">UTF-16</a>',
)


def long_urls(base: str) -> list[str]:
    return [
        "/long/" + "a" * LONG,
        "/exists.html?q=" + "q" * LONG,
        "http://" + "h" * LONG + ".invalid/",
        "http://h.invalid:99999/" + "x" * LONG,
        "data:text/plain," + "d" * LONG,
        "/exists.html#" + "f" * LONG,
        base + "/exists.html?" + "%41" * (LONG // 3),
    ]


# (markup, what the crawl makes of it: (canonical URL, state, error) or None for "site URL")
SCHEMES = [
    ("mailto:someone@example.com", ("mailto:someone@example.com", "unchecked", None)),
    ("  MAILTO:padded@example.com  ", ("mailto:padded@example.com", "unchecked", None)),
    ("tel:+1-555-0100", ("tel:+1-555-0100", "unchecked", None)),
    ("data:text/html,%3Cb%3Ex%3C/b%3E", ("data:text/html,%3Cb%3Ex%3C/b%3E", "unchecked", None)),
    ("javascript:alert(1)", ("javascript:alert(1)", "unchecked", None)),
    ("ftp://ftp.example.com/pub/f.txt#x", ("ftp://ftp.example.com/pub/f.txt", "unchecked", None)),
    ("file:///etc/passwd", ("file:///etc/passwd", "unchecked", None)),
    ("about:blank", ("about:blank", "unchecked", None)),
    ("blob:https://example.com/9b1d", ("blob:https://example.com/9b1d", "unchecked", None)),
    ("ws://127.0.0.1:9/socket", ("ws://127.0.0.1:9/socket", "unchecked", None)),
    ("wss://example.com/socket", ("wss://example.com/socket", "unchecked", None)),
    ("x-unknown-scheme:whatever", ("x-unknown-scheme:whatever", "unchecked", None)),
    ("urn:isbn:0451450523", ("urn:isbn:0451450523", "unchecked", None)),
    ("http://[::1", ("http://[::1", "broken", "invalid URL: invalid IPv6 address")),
    ("https://[::g]/", ("https://[::g]/", "broken", "invalid URL: invalid IPv6 address")),
    ("//[::1", ("//[::1", "broken", "invalid URL: invalid IPv6 address")),
    ("http://", ("http://", "broken", "invalid URL: empty host")),
    ("http://exa mple.com/", ("http://exa mple.com/", "broken", "invalid URL: invalid host")),
    ("http://h.invalid:99999/", ("http://h.invalid:99999/", "broken", "invalid URL: invalid port")),
    ("http://h.invalid:8o/", ("http://h.invalid:8o/", "broken", "invalid URL: invalid port")),
    ("http:\\\\SITE/exists.html", None),
    ("HTTP:/exists.html", None),
    ("ht!tp://x/", None),  # not a scheme: a relative path
]  # fmt: skip


@pytest.fixture(scope="module")
def odd_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One crawl of a site of odd pages: its site, its IPv6 twin's base and the JSON report."""
    site = sitesrv.TestSite()
    v6_server, v6_base = _serve_on_ipv6(site)
    base = site.base
    v6 = v6_base or "http://[::1]:9"
    hosts = [
        f"{v6}/v6.html",
        f"{v6.replace('[::1]', '[0:0:0:0:0:0:0:1]')}/v6.html",
        "http://bücher.invalid/",
        "http://BÜCHER.invalid./x",
        "http://xn--bcher-kva.invalid/y",
        "http://例え.invalid/",
        "http://b%C3%BCcher.invalid/z",
    ]
    schemes = [markup.replace("SITE", base.removeprefix("http://")) for markup, _ in SCHEMES]
    odd = [
        "/nested.html",
        "/nul.html",
        "/bad-utf8.html",
        "/meta-vs-header.html",
        "/bom-vs-meta.html",
        "/utf16le.html",
        "/utf16be.html",
        "/long-urls.html",
        "/schemes.html",
        "/hosts.html",
    ]
    good = [
        "/before-nest.html",
        "/deep.html",
        "/after-nest.html",
        "/after-nul.html",
        "/caf%C3%A9.html",
        "/after-bad.html",
        "/caf%C3%A9-latin.html",
        "/caf%C3%A9-bom.html",
        "/%C3%BCber-16.html",
        "/exists.html",
        "/v6.html",
    ]
    site.pages.update(
        {
            "/": Page(html("<html><body>", *(f'<a href="{p}">{p}</a>' for p in odd))),
            "/nested.html": Page(NESTED),
            "/nul.html": Page(NUL),
            "/bad-utf8.html": Page(BAD_UTF8),
            "/meta-vs-header.html": Page(
                META_VS_HEADER, content_type="text/html; charset=iso-8859-1"
            ),
            "/bom-vs-meta.html": Page(BOM_VS_META.encode("utf-8"), content_type="text/html"),
            "/utf16le.html": Page(("\ufeff" + UTF16).encode("utf-16-le"), content_type="text/html"),
            "/utf16be.html": Page(
                ("\ufeff" + UTF16).encode("utf-16-be"), content_type="text/html; charset=utf-8"
            ),
            "/long-urls.html": Page(
                html("<html><body>", *(f'<a href="{u}">long</a>' for u in long_urls(base)))
            ),
            "/schemes.html": Page(
                html("<html><body>", *(f'<a href="{u}">scheme</a>' for u in schemes))
            ),
            "/hosts.html": Page(html("<html><body>", *(f'<a href="{u}">host</a>' for u in hosts))),
            **{path: Page(html("<p>fine</p>")) for path in good},
        }
    )
    site.start()
    cwd = tmp_path_factory.mktemp("odd")
    try:
        run = Runner(cwd)
        proc = run.check("--format", "json", base + "/", timeout=RUN_TIMEOUT)
        assert proc.returncode == 1, proc.stderr  # broken links, and nothing worse
        assert "Traceback" not in proc.stderr, proc.stderr
        report = json.loads(proc.stdout)
        yield {"site": site, "v6": v6_base, "report": report, "urls": by_url(report), "run": run}
    finally:
        site.stop()
        if v6_server is not None:
            v6_server.shutdown()
            v6_server.server_close()


def test_odd_pages_are_all_parsed_and_the_pass_completes(odd_site: dict[str, Any]) -> None:
    report, urls, site = odd_site["report"], odd_site["urls"], odd_site["site"]
    assert report["complete"]
    for path in ("/nested.html", "/nul.html", "/bad-utf8.html", "/utf16le.html", "/schemes.html"):
        entry = urls[site.url(path)]
        assert (entry["state"], entry["error"]) == ("ok", None), entry


def test_links_nested_100000_deep_and_after_them_are_found(odd_site: dict[str, Any]) -> None:
    urls, site = odd_site["urls"], odd_site["site"]
    page = site.url("/nested.html")
    for path, line in (("/before-nest.html", 2), ("/deep.html", 4), ("/after-nest.html", 6)):
        entry = urls[site.url(path)]
        assert entry["state"] == "ok"
        assert referrers(entry) == [(page, line)]


def test_nul_bytes_become_replacement_characters(odd_site: dict[str, Any]) -> None:
    urls, site = odd_site["urls"], odd_site["site"]
    page = site.url("/nul.html")
    nul_url = urls[site.url("/a%EF%BF%BDb.html")]
    assert (nul_url["state"], nul_url["http_status"]) == ("broken", 404)
    assert referrers(nul_url) == [(page, 2)]
    assert referrers(urls[site.url("/after-nul.html")]) == [(page, 4)]
    assert site.url("/not-an-href.html") not in urls


def test_bytes_invalid_in_the_charset_spoil_only_their_own_link(odd_site: dict[str, Any]) -> None:
    urls, site = odd_site["urls"], odd_site["site"]
    page = site.url("/bad-utf8.html")
    assert referrers(urls[site.url("/caf%C3%A9.html")]) == [(page, 3)]
    assert urls[site.url("/caf%C3%A9.html")]["state"] == "ok"
    spoiled = urls[site.url("/bad%EF%BF%BD.html")]
    assert (spoiled["state"], referrers(spoiled)) == ("broken", [(page, 4)])
    assert referrers(urls[site.url("/after-bad.html")]) == [(page, 5)]


def test_charset_header_beats_meta_and_bom_beats_both(odd_site: dict[str, Any]) -> None:
    urls, site = odd_site["urls"], odd_site["site"]
    latin = urls[site.url("/caf%C3%A9-latin.html")]
    assert (latin["state"], referrers(latin)) == ("ok", [(site.url("/meta-vs-header.html"), 2)])
    bom = urls[site.url("/caf%C3%A9-bom.html")]
    assert (bom["state"], referrers(bom)) == ("ok", [(site.url("/bom-vs-meta.html"), 2)])
    utf16 = urls[site.url("/%C3%BCber-16.html")]
    assert utf16["state"] == "ok"
    assert referrers(utf16) == [(site.url("/utf16be.html"), 3), (site.url("/utf16le.html"), 3)]


def test_a_query_is_sent_in_the_encoding_of_its_page(run: Runner, serve: Serve) -> None:
    """As browsers send it: a link's query in its page's legacy encoding, a character the
    encoding lacks as '&#N;'; the path in UTF-8, as a UTF-16 page's query."""
    latin = html(
        "<html><body>",
        '<a href="/find?q=café">café</a>',
        '<a href="/café?q=€">euro</a>',
        '<a href="/find?q=&#26085;">day</a>',
        '<a href="/u16.html">UTF-16</a>',
    )
    wide = html("<html><body>", '<a href="/find?q=café">café</a>')
    site = serve(
        {
            "/": Page(latin.encode("cp1252"), content_type="text/html; charset=windows-1252"),
            "/u16.html": Page(wide.encode("utf-16"), content_type="text/html; charset=utf-16"),
            "/find?q=caf%E9": Page("found"),
            "/caf%C3%A9?q=%80": Page("found"),
            "/find?q=%26%2326085%3B": Page("found"),
            "/find?q=caf%C3%A9": Page("found"),
        }
    )
    code, report = run.check_json(site.url("/"))
    assert code == 0, report
    urls = by_url(report)
    for line, path in enumerate(("/find?q=caf%E9", "/caf%C3%A9?q=%80", "/find?q=%26%2326085%3B")):
        assert referrers(urls[site.url(path)]) == [(site.url("/"), line + 2)]
    assert referrers(urls[site.url("/find?q=caf%C3%A9")]) == [(site.url("/u16.html"), 2)]
    hits = site.requests(probes=False)
    assert all(hit.status == 200 for hit in hits if hit.path != "/robots.txt")


def test_a_lone_percent_sign_is_sent_as_browsers_send_it(run: Runner, serve: Serve) -> None:
    """Not as '%25': nginx answers 400 to '/100%.html' (a browser gets that), and a file
    named '100%.html' at '/100%25.html'."""
    site = serve(
        {
            "/": Page(html("<html><body>", '<a href="/100%.html">all</a>')),
            "/100%.html": Page("<h1>bad request</h1>", status=400),
            "/100%25.html": Page("the file"),
        }
    )
    code, report = run.check_json(site.url("/"))
    assert code == 1
    assert by_url(report)[site.url("/100%.html")]["http_status"] == 400
    assert "/100%25.html" not in site.counts()


def test_urls_of_100_kb_get_verdicts(odd_site: dict[str, Any]) -> None:
    urls, site = odd_site["urls"], odd_site["site"]
    page = site.url("/long-urls.html")
    long_path, long_query, long_host, _, data, _, _ = long_urls(site.base)

    path_entry = urls[site.url(long_path)]  # the server refuses a request line over 64 KB
    assert (path_entry["state"], path_entry["http_status"]) == ("broken", 414)
    assert referrers(path_entry) == [(page, 2)]
    assert urls[site.url(long_query)]["state"] == "broken"

    host_entry = urls[long_host]
    assert host_entry["state"] == "broken"
    assert host_entry["reason"] == "invalid-host"  # too long for DNS: not looked up
    assert host_entry["error"].startswith("invalid host: hhhh")
    assert referrers(host_entry) == [(page, 4)]

    invalid = [e for e in urls.values() if e["error"] == "invalid URL: invalid port"]
    port_entry = next(e for e in invalid if e["url"].startswith("http://h.invalid:99999/x"))
    assert len(port_entry["url"]) == 2048  # kept as written, cut short
    assert referrers(port_entry) == [(page, 5)]

    assert (urls[data]["action"], urls[data]["state"]) == ("record", "unchecked")
    exists = urls[site.url("/exists.html")]
    assert exists["state"] == "ok"
    assert (page, 7) in referrers(exists)  # the 100 KB fragment is dropped
    decoded = urls[site.url("/exists.html?" + "A" * (LONG // 3))]
    assert referrers(decoded) == [(page, 8)]


def test_every_scheme_and_malformed_url_has_a_verdict_at_its_line(
    odd_site: dict[str, Any],
) -> None:
    urls, site = odd_site["urls"], odd_site["site"]
    page = site.url("/schemes.html")
    for line, (_, expected) in enumerate(SCHEMES, 2):
        if expected is None:
            continue
        url, state, error = expected
        entry = urls[url]
        assert (entry["state"], entry["error"]) == (state, error), entry
        assert entry["action"] == ("record" if state == "unchecked" else "check")
        assert referrers(entry) == [(page, line)]
    lenient = urls[site.url("/exists.html")]
    assert {(page, 22), (page, 23)} <= set(referrers(lenient))
    assert referrers(urls[site.url("/ht!tp://x/")]) == [(page, 24)]


def test_ipv6_literals_and_idn_hosts(odd_site: dict[str, Any]) -> None:
    urls, site, v6 = odd_site["urls"], odd_site["site"], odd_site["v6"]
    page = site.url("/hosts.html")
    literal = urls[f"{v6 or 'http://[::1]:9'}/v6.html"]
    assert referrers(literal) == [(page, 2), (page, 3)]  # two spellings, one URL
    if v6 is not None:
        assert (literal["state"], literal["http_status"]) == ("ok", 200)
        assert any(hit.path == "/v6.html" for hit in site.requests())
    else:
        assert literal["state"] == "broken" and literal["error"]
    idn = {
        "http://xn--bcher-kva.invalid/": [(page, 4)],
        "http://xn--bcher-kva.invalid/x": [(page, 5)],
        "http://xn--bcher-kva.invalid/y": [(page, 6)],
        "http://xn--r8jz45g.invalid/": [(page, 7)],
        "http://xn--bcher-kva.invalid/z": [(page, 8)],
    }
    for url, lines in idn.items():
        entry = urls[url]
        assert entry["state"] == "broken", entry
        assert entry["error"].startswith("DNS failure: cannot resolve xn--"), entry
        assert referrers(entry) == lines
    assert not [u for u in urls if "bücher" in u or "b%C3%BCcher" in u]


# ------------------------------------------------------------------ malformed redirects


def test_redirect_to_a_malformed_url_is_broken(run: Runner, serve: Serve) -> None:
    site = serve(
        {
            "/": Page(html("<html><body>", '<a href="/moved">moved</a>')),
            "/moved": Page("", status=301, headers={"Location": "http://[::1"}),
        }
    )
    code, report = run.check_json(site.url("/"))
    assert code == 1
    moved = by_url(report)[site.url("/moved")]
    assert moved["state"] == "broken"
    assert moved["error"].startswith("redirect to an invalid URL (invalid IPv6 address)")


def test_robots_txt_redirecting_to_a_malformed_url_allows_everything(
    run: Runner, serve: Serve
) -> None:
    site = serve(
        {
            "/": Page(html("<html><body>", '<a href="/fine.html">fine</a>')),
            "/fine.html": Page("fine"),
            "/robots.txt": Page("", status=302, headers={"Location": "http://[::1"}),
        }
    )
    code, report = run.check_json(site.url("/"))
    assert code == 0, report
    assert by_url(report)[site.url("/fine.html")]["state"] == "ok"


# ------------------------------------------------------------------ a million links


def test_a_million_links_end_in_bounded_time_and_memory(tmp_path: Path, serve: Serve) -> None:
    """16 MB of ``<a href=/x/N>`` (N < 1000): the default --max-size (10 MB) stops reading
    the page, --max-urls stops the requests, and the report says so for each.

    Every link read is decided and remembered with its line. (A million distinct URLs
    take the same path; it is slower only by the memory's writing of each new URL.)
    """
    body = b"<html><body>\n" + b"".join(b"<a href=/x/%d>\n" % (n % 1000) for n in range(MILLION))
    assert len(body) > 15 * MB
    site = serve({"/": Page(body, etag=False)})
    db = str(tmp_path / "memory.db")
    proc, peak = run_measured(
        tmp_path, "check", site.url("/"), "--db", db, "--max-urls", "50", timeout=RUN_TIMEOUT
    )

    assert proc.returncode == 1, proc.stderr  # the /x/N are 404s
    assert "Traceback" not in proc.stderr
    assert peak < 1024 * MB, f"peak RSS {peak / MB:.0f} MB"  # about 560 MB here
    root = site.url("/")
    state, error = memory_rows(db, "SELECT state, error FROM urls WHERE url = ?", (root,))[0]
    assert (state, error) == ("warning", "page larger than --max-size (10485760 bytes)")
    assert "page larger than --max-size (10485760 bytes)" in proc.stdout

    # every link in the first 10 MB is in the memory, at its line
    count, last = memory_rows(db, "SELECT count(*), max(line) FROM links")[0]
    assert 500_000 < count < MILLION and last == count + 1
    samples = memory_rows(
        db,
        "SELECT u.url, l.line FROM links l JOIN urls u ON u.id = l.dst WHERE l.line IN (2, ?, ?)",
        (100_502, count + 1),
    )
    assert sorted(samples, key=lambda row: row[1]) == [
        (site.url("/x/0"), 2),
        (site.url("/x/500"), 100_502),
        (site.url(f"/x/{(count - 1) % 1000}"), count + 1),
    ]

    # --max-urls 50: the start page and 49 links requested, the other 951 recorded unchecked
    assert memory_rows(db, "SELECT count(*) FROM urls")[0][0] == 1001
    assert len(site.requests()) <= 60
    limited = memory_rows(db, "SELECT count(*) FROM urls WHERE error LIKE '%--max-urls%'")[0][0]
    assert limited == 951
    assert "Not checked, a limit was reached (951)" in proc.stdout
