"""Which URLs are parsed, checked, recorded or ignored: defaults, --site, rules and hooks."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Runner, Serve, by_url
from tests.sitesrv import Page, html

OTHER_SCHEMES = [
    "mailto:someone@example.com",
    "tel:+15551234",
    "javascript:void(0)",
    "data:text/plain,hello",
    "ftp://ftp.example.com/pub/file.txt",
]


def test_default_actions(run: Runner, serve: Serve) -> None:
    far = serve(
        {
            "/ok.html": Page(html('<a href="/far-child.html">never followed</a>')),
            "/robots.txt": Page("", status=404),
        }
    )
    site = serve(
        {
            "/docs/start.html": Page(
                html(
                    "<html><body>",
                    '<a href="sub/page.html">inside</a>',
                    '<a href="/other/page.html">same host, outside the folder</a>',
                    f'<a href="{far.url("/ok.html")}">other host</a>',
                    *(f'<a href="{u}">x</a>' for u in OTHER_SCHEMES),
                    "</body></html>",
                )
            ),
            "/docs/sub/page.html": Page(html('<a href="deeper.html">d</a>')),
            "/docs/sub/deeper.html": Page("deep"),
            "/other/page.html": Page(html('<a href="/other/child.html">c</a>')),
        }
    )

    code, report = run.check_json(site.url("/docs/start.html"))

    assert code == 0, report
    urls = by_url(report)
    assert urls[site.url("/docs/start.html")]["action"] == "parse"
    assert urls[site.url("/docs/sub/page.html")]["action"] == "parse"
    assert urls[site.url("/docs/sub/deeper.html")]["state"] == "ok"
    other = urls[site.url("/other/page.html")]
    assert (other["action"], other["state"]) == ("check", "ok")
    assert site.url("/other/child.html") not in urls
    assert site.counts("GET")["/other/page.html"] == 0
    outside = urls[far.url("/ok.html")]
    assert (outside["action"], outside["state"]) == ("check", "ok")
    assert far.url("/far-child.html") not in urls
    assert far.counts("GET")["/ok.html"] == 0
    for raw in OTHER_SCHEMES:
        entry = next(e for u, e in urls.items() if u.split(":")[0] == raw.split(":")[0])
        assert (entry["action"], entry["state"], entry["reportable"]) == (
            "record",
            "unchecked",
            False,
        ), entry
        assert entry["http_status"] is None
        assert entry["referrers"][0]["url"] == site.url("/docs/start.html")
    assert report["summary"]["broken"] == 0


def test_record_schemes_are_never_reported_as_broken(run: Runner, serve: Serve) -> None:
    site = serve(
        {"/": Page(html("<html><body>", *(f'<a href="{u}">x</a>' for u in OTHER_SCHEMES)))}
    )

    proc = run.check(site.url("/"))

    assert proc.returncode == 0, proc.stdout
    assert "Broken" not in proc.stdout
    assert "0 broken" in proc.stdout


def test_site_prefixes_make_other_hosts_parsed(run: Runner, serve: Serve) -> None:
    one = serve(
        {
            "/blog/": Page(html('<a href="post.html">post</a>')),
            "/blog/post.html": Page("post"),
            "/robots.txt": Page("", status=404),
        }
    )
    two = serve(
        {
            "/wiki/": Page(html('<a href="/wiki/gone.html">gone</a>')),
            "/robots.txt": Page("", status=404),
        }
    )
    site = serve(
        {
            "/": Page(
                html(
                    "<html><body>",
                    f'<a href="{one.url("/blog/")}">blog</a>',
                    f'<a href="{two.url("/wiki/")}">wiki</a>',
                    f'<a href="{two.url("/elsewhere.html")}">not in the prefix</a>',
                    "</body></html>",
                )
            )
        }
    )
    two.pages["/elsewhere.html"] = Page(html('<a href="/never.html">n</a>'))

    code, report = run.check_json(
        site.url("/"), "--site", one.url("/blog/"), "--site", two.url("/wiki/")
    )

    urls = by_url(report)
    assert urls[one.url("/blog/")]["action"] == "parse"
    assert urls[one.url("/blog/post.html")]["state"] == "ok"
    assert urls[two.url("/wiki/")]["action"] == "parse"
    assert urls[two.url("/wiki/gone.html")]["state"] == "broken"
    assert urls[two.url("/elsewhere.html")]["action"] == "check"
    assert two.url("/never.html") not in urls
    assert code == 1


def test_precedence_hook_then_rules_then_defaults(run: Runner, serve: Serve) -> None:
    site = serve(
        {
            "/": Page(
                html(
                    "<html><body>",
                    '<a href="/a.html">rule check, hook parse</a>',
                    '<a href="/b.html">rule record, hook silent</a>',
                    '<a href="/c.html">no rule, hook silent</a>',
                    '<a href="/d.html">no rule, hook record</a>',
                    "</body></html>",
                )
            ),
            "/a.html": Page(html('<a href="/from-a.html">x</a>')),
            "/b.html": Page("b"),
            "/c.html": Page(html('<a href="/from-c.html">x</a>')),
            "/d.html": Page("d"),
            "/from-a.html": Page("fa"),
            "/from-c.html": Page("fc"),
        }
    )
    Path(run.cwd, "hooks.py").write_text(
        """
def action(url):
    if url.endswith("/a.html"):
        return "parse"
    if url.endswith("/d.html"):
        return "record"
    return None
""",
        encoding="utf-8",
    )
    Path(run.cwd, "linkpatrol.toml").write_text(
        f"""
[[rule]]
prefix = "{site.url("/a.html")}"
action = "check"

[[rule]]
prefix = "{site.url("/b.html")}"
action = "record"
""",
        encoding="utf-8",
    )

    code, report = run.check_json(site.url("/"), "--hooks", "hooks.py")

    assert code == 0, report
    urls = by_url(report)
    assert urls[site.url("/a.html")]["action"] == "parse"
    assert urls[site.url("/from-a.html")]["state"] == "ok"
    assert urls[site.url("/b.html")]["action"] == "record"
    assert urls[site.url("/c.html")]["action"] == "parse"
    assert urls[site.url("/from-c.html")]["state"] == "ok"
    assert urls[site.url("/d.html")]["action"] == "record"
    counts = site.counts()
    assert counts["/b.html"] == counts["/d.html"] == 0


def test_ignore_drops_and_record_keeps_unrequested(run: Runner, serve: Serve) -> None:
    far = serve({"/x": Page("x"), "/robots.txt": Page("", status=404)})
    site = serve(
        {
            "/": Page(
                html(
                    "<html><body>",
                    '<a href="/secret/page.html">ignored</a>',
                    '<a href="/logout">recorded</a>',
                    f'<a href="{far.url("/x")}">ignored outside</a>',
                    '<a href="/page.html">page</a>',
                    "</body></html>",
                )
            ),
            "/page.html": Page(
                html('<a href="/logout">again</a>', '<a href="/secret/other.html">i</a>')
            ),
            "/secret/page.html": Page("s"),
            "/secret/other.html": Page("s"),
            "/logout": Page("bye"),
        }
    )
    Path(run.cwd, "linkpatrol.toml").write_text(
        f"""
[[rule]]
prefix = "{site.url("/secret/")}"
action = "ignore"

[[rule]]
prefix = "{far.base}/"
action = "ignore"

[[rule]]
regex = '/logout$'
action = "record"
""",
        encoding="utf-8",
    )

    code, report = run.check_json(site.url("/"), "--xref")

    assert code == 0
    urls = by_url(report)
    assert not [u for u in urls if "/secret/" in u or u.startswith(far.base)]
    for entry in report["urls"]:
        assert not [r for r in entry.get("links", []) if "/secret/" in r["url"]]
    logout = urls[site.url("/logout")]
    assert (logout["action"], logout["state"], logout["reportable"]) == (
        "record",
        "unchecked",
        False,
    )
    assert logout["last_checked"] is None
    assert sorted((r["url"], r["line"]) for r in logout["referrers"]) == [
        (site.url("/"), 3),
        (site.url("/page.html"), 1),
    ]
    assert report["summary"]["urls"] == len(report["urls"]) == 3
    counts = site.counts()
    assert counts["/logout"] == 0
    assert counts["/secret/page.html"] == counts["/secret/other.html"] == 0
    assert far.counts() == {}


def test_a_start_url_moving_to_https_or_www_moves_the_site_but_not_to_other_hosts() -> None:
    from linkpatrol.config import SiteSettings
    from linkpatrol.policy import Policy

    policy = Policy(SiteSettings(start_urls=("http://example.org/",)))

    assert policy.extend_site("http://example.org/", "https://www.example.org/")
    assert policy.in_site("https://www.example.org/guide/a.html")
    assert not policy.extend_site("http://example.org/", "https://login.example.net/")
    assert not policy.extend_site("http://example.org/", "http://example.org:8080/")
    assert not policy.in_site("https://login.example.net/x")


def test_rules_and_hooks_decide_links_that_are_no_urls(run: Runner, serve: Serve) -> None:
    """Placeholder text in a page is no URL; a rule or hook may still ignore or record it,
    matched on the link as written (as the report shows it), in every pass."""
    site = serve(
        {
            "/robots.txt": Page("", status=404),
            "/": Page(
                html(
                    "<p>Clone <a href='http://&lt;servername&gt;/repo.git'>it</a></p>",
                    "<p><a href='http://&lt;servername&gt;/docs/'>docs</a></p>",
                    "<p><a href='http://[fe80::1/status'>status</a></p>",
                    "<p><a href='http://example.org:99999/'>a typo</a></p>",
                    "<p><a href='//exa mple.org/'>another</a></p>",
                    "<p><a href='/fine.html'>fine</a></p>",
                )
            ),
            "/fine.html": Page("fine"),
        }
    )
    Path(run.cwd, "linkpatrol.toml").write_text(
        '[[rule]]\nprefix = "http://<servername>/"\naction = "ignore"\n', encoding="utf-8"
    )
    Path(run.cwd, "hooks.py").write_text(
        "def action(url):\n    return 'record' if url.startswith('http://[fe80::') else None\n",
        encoding="utf-8",
    )

    for _ in range(2):  # the second pass reads the page's links from the memory (304)
        code, report = run.check_json(site.url("/"), "--hooks", "hooks.py")

        urls = by_url(report)
        assert not [u for u in urls if "servername" in u], report
        status = urls["http://[fe80::1/status"]
        assert (status["action"], status["state"], status["reportable"]) == (
            "record",
            "unchecked",
            False,
        )
        assert (status["reason"], status["error"]) == (
            "invalid-url",
            "invalid URL: invalid IPv6 address",
        )
        assert status["referrers"] == [{"url": site.url("/"), "line": 3}]
        for typo in ("http://example.org:99999/", "//exa mple.org/"):  # decided by neither
            assert (urls[typo]["state"], urls[typo]["reason"]) == ("broken", "invalid-url")
        assert report["summary"]["broken"] == 2
        assert code == 1
    assert [hit.status for hit in site.requests() if hit.path == "/"] == [200, 304]
