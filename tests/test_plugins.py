"""Plugins end to end: the shipped mailto and webhook plugins, plugins of one's own, failures.

Every test runs the real ``linkpatrol check`` on a little site served on 127.0.0.1; the
plugins written here are loaded as ``module:Class`` from the test's folder (PYTHONPATH).
"""

from __future__ import annotations

import asyncio
import json
import re
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from jsonschema import Draft202012Validator

from linkpatrol.plugins.mailto import mailto_addresses
from tests.conftest import Runner, by_url, comparable
from tests.sitesrv import Page, html
from tests.sitesrv import TestSite as LoopbackSite
from tests.test_report_json import SCHEMA_PATH, assert_valid

README = Path(__file__).resolve().parent.parent / "docs" / "plugins.md"  # the manual's page


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def own_plugins(run: Runner) -> dict[str, str]:
    """The environment that lets ``module:Class`` find the modules in the test's folder."""
    return {"PYTHONPATH": str(run.cwd)}


def one_line_error(proc: Any, *words: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return str(lines[0])


def mail_site(serve: Any) -> LoopbackSite:
    """Addresses planted on three pages, spelled in every way a page may spell them."""
    return serve(
        {
            "/": Page(
                html(
                    "<!doctype html>",
                    "<html><body>",
                    '<a href="mailto:Info%40Example.ORG?subject=Hello%20there">write</a>',
                    '<a href="/contact.html">contact</a>',
                    '<a href="/team.html">team</a>',
                    '<a href="/gone.html">gone</a>',
                    "</body></html>",
                )
            ),
            "/contact.html": Page(
                html(
                    "<p>",
                    '<a href="MAILTO:info@EXAMPLE.org">info</a>',
                    '<a href="mailto:sales@example.org,support@xn--exmple-cua.example'
                    '?cc=boss@Example.org">',
                    "several</a>",
                    '<a href="mailto:?subject=no%20address">none</a>',
                    "</p>",
                )
            ),
            "/team.html": Page(html('<a href="mailto:Jane.Doe+web@example.org">Jane</a>')),
        }
    )


def mailto_fields(site: LoopbackSite) -> dict[str, Any]:
    return {
        "count": 6,
        "left_out": 0,
        "addresses": [
            {"address": "Info@example.org", "pages": [{"url": site.url("/"), "line": 3}]},
            {
                "address": "Jane.Doe+web@example.org",
                "pages": [{"url": site.url("/team.html"), "line": 1}],
            },
            {
                "address": "boss@example.org",
                "pages": [{"url": site.url("/contact.html"), "line": 3}],
            },
            {
                "address": "info@example.org",
                "pages": [{"url": site.url("/contact.html"), "line": 2}],
            },
            {
                "address": "sales@example.org",
                "pages": [{"url": site.url("/contact.html"), "line": 3}],
            },
            {
                "address": "support@exämple.example",
                "pages": [{"url": site.url("/contact.html"), "line": 3}],
            },
        ],
    }


# ---- mailto --------------------------------------------------------------------------------


def test_mailto_addresses_are_decoded_and_checked() -> None:
    assert list(mailto_addresses("mailto:A%40B.ORG,c@d.org?cc=e@F.org&subject=x&bcc=A@b.org")) == [
        "A@b.org",
        "c@d.org",
        "e@f.org",
    ]
    assert list(mailto_addresses("mailto:Jane%20Doe%20%3Cjane@Example.org%3E")) == [
        "jane@example.org"
    ]
    assert list(mailto_addresses("mailto:?subject=hi")) == []
    assert list(mailto_addresses("mailto:not-an-address")) == []
    assert list(mailto_addresses("mailto:a b@example.org")) == []
    assert list(mailto_addresses("https://example.org/?to=a@b.org")) == []


def test_addresses_beyond_ascii_are_one_url_and_one_entry_per_address(
    run: Runner, serve: Any
) -> None:
    """``mailto:`` URLs are percent-encoded as browsers encode them: two spellings of one
    address are one URL; a link to several addresses counts for each of them."""
    site = serve(
        {
            "/robots.txt": Page("", status=404),
            "/": Page(
                html(
                    '<a href="mailto:jörg@bücher.example">Jörg</a>',
                    '<a href="mailto:j%C3%B6rg@b%C3%BCcher.example">Jörg again</a>',
                    '<a href="mailto:ann@example.org,jörg@bücher.example?subject=Grüße">both</a>',
                ).encode("cp1252"),
                content_type="text/html; charset=windows-1252",
            ),
        }
    )

    code, report = run.check_json(site.url("/"), "--plugins", "mailto")

    assert code == 0
    mailto = [e for e in report["urls"] if e["url"].startswith("mailto:")]
    assert sorted((e["url"], [r["line"] for r in e["referrers"]]) for e in mailto) == [
        ("mailto:ann@example.org,j%C3%B6rg@b%C3%BCcher.example?subject=Gr%C3%BC%C3%9Fe", [3]),
        ("mailto:j%C3%B6rg@b%C3%BCcher.example", [1, 2]),
    ]
    addresses = report["plugins"]["mailto"]["addresses"]
    assert [(a["address"], [p["line"] for p in a["pages"]]) for a in addresses] == [
        ("ann@example.org", [3]),
        ("jörg@bücher.example", [1, 2, 3]),
    ]


@pytest.mark.backends
def test_mailto_plugin_lists_every_address_with_its_pages_and_lines(
    run: Runner, serve: Any, validator: Draft202012Validator
) -> None:
    site = mail_site(serve)

    code, report = run.check_json(site.url("/"), "--plugins", "mailto")
    again = run("report", "--db", run.db, "--format", "json")

    assert code == 1, "the planted broken link still counts"
    assert_valid(validator, report)
    assert report["plugins"] == {"mailto": mailto_fields(site)}
    assert json.loads(again.stdout) == report


@pytest.mark.backends
def test_mailto_plugin_finds_the_addresses_of_unchanged_pages_again(
    run: Runner, serve: Any
) -> None:
    """A second pass gets 304 for every page: no page is parsed, the addresses are all there."""
    site = mail_site(serve)
    run.check(site.url("/"), "--plugins", "mailto")
    site.clear()

    _, report = run.check_json(site.url("/"), "--plugins", "mailto")

    assert report["pass"] == 2 and report["summary"]["parsed"] == 0
    statuses = {h.path: h.status for h in site.requests("GET")}
    assert [statuses[p] for p in ("/", "/contact.html", "/team.html")] == [304, 304, 304]
    assert report["plugins"] == {"mailto": mailto_fields(site)}


def test_mailto_plugin_in_the_text_markdown_and_html_reports(run: Runner, serve: Any) -> None:
    site = mail_site(serve)

    text = run.check(site.url("/"), "--plugins", "mailto").stdout
    markdown = run("report", "--db", run.db, "--format", "markdown").stdout
    page = run("report", "--db", run.db, "--format", "html").stdout

    section = text.split("Plugin mailto:\n", 1)[1].split("\n\n", 1)[0]
    assert section.splitlines()[:5] == [
        "  count: 6",
        "  left_out: 0",
        "  addresses:",
        "    - address: Info@example.org",
        "      pages:",
    ]
    assert f"        - url: {site.url('/contact.html')}, line: 2" in section
    assert text.index("Plugin mailto:") < text.index("Summary:")
    assert run("report", "--db", run.db).stdout == text
    assert "#### Plugin `mailto`" in markdown
    assert "  - `address: info@example.org`" in markdown
    assert '<h2 id="plugins-title">Plugins</h2>' in page
    assert "<h3>mailto</h3>" in page and "address: support@exämple.example" in page


def test_mailto_plugin_bounds_what_it_lists(run: Runner, serve: Any) -> None:
    site = serve(
        {
            "/": Page(html(*(f'<a href="mailto:n{i}@example.org">n</a>' for i in range(5)))),
            "/a.html": Page(html(*('<a href="mailto:n0@example.org">again</a>' for _ in range(4)))),
            "/b.html": Page(html('<a href="/">home</a>', '<a href="/a.html">a</a>')),
        }
    )
    write(run.cwd, "linkpatrol.toml", "[plugin.mailto]\nmax_addresses = 2\nmax_pages = 3\n")

    _, report = run.check_json(site.url("/b.html"), "--plugins", "mailto")

    fields = report["plugins"]["mailto"]
    assert (fields["count"], fields["left_out"]) == (5, 3)
    listed = {a["address"]: a for a in fields["addresses"]}
    assert set(listed) == {"n0@example.org", "n1@example.org"}
    assert len(listed["n0@example.org"]["pages"]) == 3
    assert listed["n0@example.org"]["more_pages"] == 2  # 5 places: line 1 of / and 4 of /a.html


def test_bad_plugin_options_are_one_line_before_any_request(run: Runner, serve: Any) -> None:
    site = serve({"/": Page("<p>hi</p>")})
    write(run.cwd, "linkpatrol.toml", "plugins = ['mailto']\n[plugin.mailto]\nmax_adresses = 5\n")

    proc = run.check(site.url("/"))

    one_line_error(proc, "plugin 'mailto'", "unknown option 'max_adresses'")
    assert site.counts() == {}


# ---- webhook -------------------------------------------------------------------------------


@dataclass
class HookServer:
    """An aiohttp server on 127.0.0.1 that answers each POST with the next status given."""

    statuses: list[int] = field(default_factory=lambda: [200])
    received: list[tuple[dict[str, str], Any]] = field(default_factory=list)
    url: str = ""

    async def _handle(self, request: web.Request) -> web.Response:
        self.received.append((dict(request.headers), await request.json()))
        status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        return web.Response(status=status, text="thanks")


@pytest.fixture
def hook() -> Iterator[HookServer]:
    server = HookServer()
    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_post("/hooks/T0KEN-in-path", server._handle)
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = runner.addresses[0][1]
    server.url = f"http://127.0.0.1:{port}/hooks/T0KEN-in-path"
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield server
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)
    loop.run_until_complete(runner.cleanup())
    loop.close()


def webhook_config(run: Runner, url: str, extra: str = "") -> None:
    write(
        run.cwd,
        "linkpatrol.toml",
        f'plugins = ["webhook"]\n[plugin.webhook]\nurl = "{url}"\ntimeout = "5s"\n{extra}',
    )


def broken_site(serve: Any) -> LoopbackSite:
    return serve(
        {
            "/": Page(
                html(
                    '<a href="/a.html">a</a>',
                    '<a href="/gone.html">gone</a>',
                    '<a href="/moved.html">moved</a>',
                )
            ),
            "/a.html": Page(html('<a href="/gone.html">gone again</a>', '<a href="/x.png">x</a>')),
            "/moved.html": Page("", status=301, headers={"Location": "/a.html"}),
            "/x.png": Page(b"\x89PNG", content_type="image/png"),
        }
    )


@pytest.mark.backends
def test_webhook_posts_the_summary_with_a_token_from_the_environment(
    run: Runner, serve: Any, hook: HookServer, validator: Draft202012Validator
) -> None:
    site = broken_site(serve)
    webhook_config(run, hook.url, 'top = 1\nheaders_env = { Authorization = "TEST_HOOK_AUTH" }\n')

    proc = run.check(site.url("/"), "--format", "json", env={"TEST_HOOK_AUTH": "Bearer s3cret"})

    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""
    [(headers, body)] = hook.received
    assert headers["Authorization"] == "Bearer s3cret"
    assert headers["Content-Type"] == "application/json"
    assert headers["User-Agent"].startswith("linkpatrol/")
    assert body["site"] == site.url("/") and body["start_urls"] == [site.url("/")]
    assert (body["pass"], body["complete"], body["stop_reason"]) == (1, True, None)
    assert (body["urls"], body["broken"], body["warnings"]) == (5, 1, 0)
    assert body["duration"] >= 0 and body["requests"] >= 5
    assert body["top_broken"] == [
        {
            "url": site.url("/gone.html"),
            "state": "broken",
            "http_status": 404,
            "error": "HTTP 404",
            "linked_from": [
                {"url": site.url("/"), "line": 2},
                {"url": site.url("/a.html"), "line": 1},
            ],
        }
    ]
    report = json.loads(proc.stdout)
    assert_valid(validator, report)
    assert report["plugins"] == {
        "webhook": {"host": "127.0.0.1", "posted": True, "attempts": 1, "http_status": 200}
    }
    stored = run("report", "--db", run.db, "--format", "json").stdout
    for secret in ("s3cret", "T0KEN"):
        assert secret not in proc.stdout and secret not in stored


def test_webhook_tries_once_more_after_a_server_error(
    run: Runner, serve: Any, hook: HookServer
) -> None:
    site = broken_site(serve)
    hook.statuses = [503, 200]
    webhook_config(run, hook.url)

    code, report = run.check_json(site.url("/"))

    assert code == 1
    assert len(hook.received) == 2 and hook.received[0][1] == hook.received[1][1]
    assert report["plugins"]["webhook"] == {
        "host": "127.0.0.1",
        "posted": True,
        "attempts": 2,
        "http_status": 200,
    }


@pytest.mark.parametrize(("statuses", "posts"), [([500], 2), ([404], 1), ([302], 1)])
def test_a_webhook_that_fails_is_a_note_not_a_failed_run(
    run: Runner, serve: Any, hook: HookServer, statuses: list[int], posts: int
) -> None:
    site = serve({"/": Page(html('<a href="/a.html">a</a>')), "/a.html": Page("a")})
    hook.statuses = statuses
    webhook_config(run, hook.url)

    proc = run.check(site.url("/"), "--format", "json")

    assert proc.returncode == 0, "nothing broken: a failed webhook changes nothing"
    report = json.loads(proc.stdout)
    assert report["complete"] is True
    assert len(hook.received) == posts
    [line] = proc.stderr.splitlines()
    assert line.startswith("linkpatrol: plugin webhook: could not post the summary to 127.0.0.1")
    assert f"HTTP {statuses[0]}" in line and "T0KEN" not in line
    fields = report["plugins"]["webhook"]
    assert (fields["posted"], fields["http_status"]) == (False, statuses[0])


def test_a_webhook_nobody_answers_is_a_note(
    run: Runner, serve: Any, validator: Draft202012Validator
) -> None:
    site = serve({"/": Page("<p>hi</p>")})
    webhook_config(run, "http://127.0.0.1:9/hook")

    proc = run.check(site.url("/"), "--format", "json")

    assert proc.returncode == 0
    assert "plugin webhook: could not post the summary to 127.0.0.1" in proc.stderr
    assert "tried twice" in proc.stderr
    report = json.loads(proc.stdout)
    assert_valid(validator, report)
    assert report["plugins"]["webhook"]["posted"] is False


@pytest.mark.parametrize(
    ("options", "env", "words"),
    [
        ('url = "file:///etc/passwd"\n', {}, ["http:// or https://"]),
        ('url = "ftp://example.org/x"\n', {}, ["http:// or https://"]),
        ("", {}, ["needs 'url'"]),
        (
            'url = "https://example.org/"\nheaders_env = { Authorization = "LP_TEST_UNSET" }\n',
            {},
            ["LP_TEST_UNSET", "not set"],
        ),
        ('url = "https://example.org/"\ntimeout = "soon"\n', {}, ["'timeout'"]),
    ],
)
def test_a_webhook_configured_wrong_is_refused_before_any_request(
    run: Runner, serve: Any, options: str, env: dict[str, str], words: list[str]
) -> None:
    site = serve({"/": Page("<p>hi</p>")})
    write(run.cwd, "linkpatrol.toml", f'plugins = ["webhook"]\n[plugin.webhook]\n{options}')

    proc = run.check(site.url("/"), env=env)

    one_line_error(proc, "plugin 'webhook'", *words)
    assert site.counts() == {}


# ---- plugins of one's own ------------------------------------------------------------------

RECORDER = """
    import json

    from linkpatrol.plugins import Plugin


    class Recorder(Plugin):
        def _log(self, *event):
            with open(self.options["path"], "a", encoding="utf-8") as out:
                out.write(json.dumps(event) + "\\n")

        def pass_started(self, info):
            self._log("pass_started", info.id, info.resumed, list(info.start_urls))

        def url_checked(self, url, verdict):
            self._log(
                "url_checked", url, verdict.state, verdict.status, verdict.error,
                verdict.action, verdict.requested,
            )

        def page_parsed(self, page, links):
            self._log("page_parsed", page, [[l.url, l.line, l.action, l.fragment] for l in links])

        def url_discovered(self, page, link):
            self._log("url_discovered", page, link.url, link.line)

        def pass_finished(self, info, report):
            self._log("pass_finished", info.id, info.complete, report.summary.urls)

        def report_fields(self):
            return {"seen": "all of it", "numbers": [1, 2], "nested": {"deep": None}}
"""


def recorded(path: Path) -> list[list[Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.backends
def test_events_come_in_order_with_what_a_plugin_needs(run: Runner, serve: Any) -> None:
    site = serve(
        {
            "/": Page(
                html(
                    "<html><body>",
                    '<a href="/a.html#part">a</a>',
                    '<a href="/gone.html">gone</a>',
                    '<a href="mailto:who@example.org">mail</a>',
                    '<a href="/a.html">a again</a>',
                    "</body></html>",
                )
            ),
            "/a.html": Page(html('<a href="/">home</a>')),
        }
    )
    write(run.cwd, "recorder.py", RECORDER)
    write(run.cwd, "linkpatrol.toml", '[plugin."recorder:Recorder"]\npath = "events.jsonl"\n')

    code, report = run.check_json(
        site.url("/"), "--plugins", "recorder:Recorder", env=own_plugins(run)
    )

    assert code == 1
    events = recorded(run.cwd / "events.jsonl")
    names = [e[0] for e in events]
    assert events[0] == ["pass_started", 1, False, [site.url("/")]]
    assert events[-1] == ["pass_finished", 1, True, 4]
    assert names.count("pass_started") == names.count("pass_finished") == 1
    checked = {e[1]: e[2:] for e in events if e[0] == "url_checked"}
    assert sorted(checked) == sorted(by_url(report)), "each URL once"
    assert len([e for e in events if e[0] == "url_checked"]) == 4
    assert checked[site.url("/gone.html")] == ["broken", 404, "HTTP 404", "parse", True]
    assert checked["mailto:who@example.org"] == ["unchecked", None, None, "record", False]
    assert checked[site.url("/a.html")][:3] == ["ok", 200, None]

    home = names.index("page_parsed")
    assert events[home - 1][:2] == ["url_checked", site.url("/")]
    assert events[home] == [
        "page_parsed",
        site.url("/"),
        [
            [site.url("/a.html"), 2, "parse", "part"],
            [site.url("/gone.html"), 3, "parse", None],
            ["mailto:who@example.org", 4, "record", None],
            [site.url("/a.html"), 5, "parse", None],
        ],
    ]
    assert events[home + 1 : home + 5] == [
        ["url_discovered", site.url("/"), site.url("/a.html"), 2],
        ["url_discovered", site.url("/"), site.url("/gone.html"), 3],
        ["url_discovered", site.url("/"), "mailto:who@example.org", 4],
        ["url_discovered", site.url("/"), site.url("/a.html"), 5],
    ]
    parsed = [e[1] for e in events if e[0] == "page_parsed"]
    assert parsed == [site.url("/"), site.url("/a.html")]
    assert report["plugins"] == {
        "recorder:Recorder": {"seen": "all of it", "numbers": [1, 2], "nested": {"deep": None}}
    }


BOOM = """
    from linkpatrol.plugins import Plugin


    class Boom(Plugin):
        calls = 0

        def url_checked(self, url, verdict):
            Boom.calls += 1
            raise RuntimeError("boom on " + url + "\\nsecond line")

        def report_fields(self):
            return {"calls": Boom.calls}
"""


@pytest.mark.backends
def test_a_plugin_that_raises_is_named_once_and_disabled_while_the_crawl_goes_on(
    run: Runner,
    serve: Any,
    tmp_path_factory: pytest.TempPathFactory,
    validator: Draft202012Validator,
) -> None:
    site = mail_site(serve)
    write(run.cwd, "boomplug.py", BOOM)
    plain = Runner(tmp_path_factory.mktemp("plain"))  # the same crawl without plugins

    proc = run.check(
        site.url("/"), "--format", "json", "--plugins", "boomplug:Boom,mailto", env=own_plugins(run)
    )
    _, without = plain.check_json(site.url("/"))

    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert_valid(validator, report)
    assert report["complete"] is True
    assert comparable(report) == comparable(without)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0] == (
        f"linkpatrol: plugin boomplug:Boom: url_checked raised RuntimeError: boom on "
        f"{site.url('/')} second line; plugin disabled, the crawl goes on"
    )
    assert report["plugins"]["boomplug:Boom"] == {
        "disabled": f"url_checked raised RuntimeError: boom on {site.url('/')} second line"
    }
    assert report["plugins"]["mailto"] == mailto_fields(site), "the other plugin kept working"
    again = json.loads(run("report", "--db", run.db, "--format", "json").stdout)
    assert again["plugins"] == report["plugins"]


LINGERER = """
    import atexit
    import os
    import threading
    import time

    from linkpatrol.plugins import Plugin


    def _last_words():
        with open("atexit.txt", "w") as out:
            out.write("the thread had written first" if os.path.exists("thread.txt") else "alone")


    class Lingerer(Plugin):
        def pass_finished(self, info, report):
            def late():
                time.sleep(0.3)
                with open("thread.txt", "w") as out:
                    out.write("written")

            threading.Thread(target=late).start()
            atexit.register(_last_words)


    class Farewell(Plugin):
        def pass_finished(self, info, report):
            atexit.register(_last_words)
"""


def test_a_plugin_s_threads_and_exit_handlers_end_as_python_ends_them(
    run: Runner, serve: Any
) -> None:
    """The command leaves without tearing its objects down one by one, but not before
    a thread a plugin started has ended and its exit handlers have run, in Python's order."""
    site = serve({"/": Page("<p>hi</p>")})
    write(run.cwd, "lingerer.py", LINGERER)

    alone = run.check(site.url("/"), "--plugins", "lingerer:Farewell", env=own_plugins(run))

    assert alone.returncode == 0, alone.stderr
    assert (run.cwd / "atexit.txt").read_text() == "alone"
    proc = run.check(site.url("/"), "--plugins", "lingerer:Lingerer", env=own_plugins(run))

    assert proc.returncode == 0, proc.stderr
    assert (run.cwd / "thread.txt").read_text() == "written"
    assert (run.cwd / "atexit.txt").read_text() == "the thread had written first"


def test_report_fields_that_are_not_json_disable_the_plugin(run: Runner, serve: Any) -> None:
    site = serve({"/": Page("<p>hi</p>")})
    write(
        run.cwd,
        "oddplug.py",
        """
        from linkpatrol.plugins import Plugin


        class Odd(Plugin):
            def report_fields(self):
                return {"when": object()}
        """,
    )

    proc = run.check(
        site.url("/"), "--format", "json", "--plugins", "oddplug:Odd", env=own_plugins(run)
    )

    assert proc.returncode == 0
    assert "plugin oddplug:Odd: report_fields raised TypeError" in proc.stderr
    fields = json.loads(proc.stdout)["plugins"]["oddplug:Odd"]
    assert fields["disabled"].startswith("report_fields raised TypeError")


def test_crawled_text_in_plugin_fields_never_becomes_markup(run: Runner, serve: Any) -> None:
    site = serve({"/": Page("<p>hi</p>")})
    write(
        run.cwd,
        "hostile.py",
        """
        from linkpatrol.plugins import Plugin


        class Fields(Plugin):
            def report_fields(self):
                return {
                    "script": "<script>alert(1)</script>",
                    "link": "[x](javascript:alert(1)) `tick` | cell",
                    "terminal": "\\x1b[31mred",
                }
        """,
    )
    run.check(site.url("/"), "--plugins", "hostile:Fields", env=own_plugins(run))

    text = run("report", "--db", run.db).stdout
    markdown = run("report", "--db", run.db, "--format", "markdown").stdout
    page = run("report", "--db", run.db, "--format", "html").stdout

    assert "  terminal: \\x1b[31mred" in text and "\x1b" not in text
    assert "- `link: [x](javascript:alert(1)) %60tick%60 %7C cell`" in markdown
    assert "<script>alert" not in page
    assert "script: &lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.parametrize(
    ("module", "name", "words"),
    [
        (
            "raise ImportError('needs a library that is not there')\n",
            "badplug:Plugin",
            ["badplug:Plugin", "ImportError", "not there"],
        ),
        ("def broken(:\n", "badplug:Plugin", ["badplug:Plugin", "SyntaxError"]),
        ("", "badplug:Missing", ["badplug:Missing", "AttributeError"]),
        (
            "class NotOne:\n    pass\n",
            "badplug:NotOne",
            ["not a subclass of linkpatrol.plugins.Plugin"],
        ),
        ("", "nosuchmodule:Plugin", ["nosuchmodule", "No module named"]),
        ("", "nosuch", ["'nosuch'", "no such plugin installed", "mailto", "webhook"]),
        ("", ":Plugin", ["package.module:Class"]),
    ],
)
def test_a_plugin_that_cannot_be_loaded_is_one_line_with_exit_2(
    run: Runner, serve: Any, module: str, name: str, words: list[str]
) -> None:
    site = serve({"/": Page("<p>hi</p>")})
    write(run.cwd, "badplug.py", module)

    proc = run.check(site.url("/"), "--plugins", name, env=own_plugins(run))

    one_line_error(proc, *words)
    assert site.counts() == {}, "refused before any request"
    assert not Path(run.db).exists()


def test_plugins_named_in_the_config_and_the_option_that_replaces_them(
    run: Runner, serve: Any
) -> None:
    site = mail_site(serve)
    write(run.cwd, "linkpatrol.toml", 'plugins = ["mailto", "nosuch"]\n')

    refused = run.check(site.url("/"))
    _, none = run.check_json(site.url("/"), "--plugins", "")
    _, some = run.check_json(site.url("/"), "--plugins", " mailto , mailto")

    one_line_error(refused, "'nosuch'")
    assert none["plugins"] == {}
    assert list(some["plugins"]) == ["mailto"]


def test_plugin_options_must_be_tables(run: Runner) -> None:
    write(run.cwd, "linkpatrol.toml", 'plugins = ["mailto"]\nplugin = "mailto"\n')

    proc = run.check("http://127.0.0.1:9/")

    one_line_error(proc, "linkpatrol.toml", "[plugin.NAME]")


def test_a_resumed_pass_ends_with_the_whole_pass_in_its_plugin_fields(
    run: Runner, serve: Any
) -> None:
    site = mail_site(serve)

    stopped = run.check(
        site.url("/"), "--format", "json", "--plugins", "mailto", "--max-requests", "2"
    )
    code, report = run.check_json(site.url("/"), "--plugins", "mailto")

    assert stopped.returncode == 3, stopped.stderr
    partial = json.loads(stopped.stdout)["plugins"]["mailto"]
    assert 0 < partial["count"] < 6
    assert (code, report["pass"], report["complete"]) == (1, 1, True)
    assert report["plugins"] == {"mailto": mailto_fields(site)}


def test_installed_plugins_run_only_when_named(run: Runner, serve: Any) -> None:
    site = mail_site(serve)

    _, report = run.check_json(site.url("/"))
    text = run("report", "--db", run.db).stdout

    assert report["plugins"] == {}
    assert "Plugin" not in text


# ---- the README's example ------------------------------------------------------------------


def readme_example() -> str:
    """The example plugin of the manual's page on plugins, as the file it says to write."""
    section = README.read_text(encoding="utf-8")
    after = section.split("`broken_hosts.py`:\n\n", 1)[1]
    lines = []
    for line in after.splitlines():
        if line and not line.startswith("    "):
            break
        lines.append(line)
    return textwrap.dedent("\n".join(lines)).strip() + "\n"


def test_the_readme_example_plugin_works_as_shown(run: Runner, serve: Any) -> None:
    example = readme_example()
    assert "class BrokenHosts(Plugin):" in example
    site = broken_site(serve)
    (run.cwd / "broken_hosts.py").write_text(example, encoding="utf-8")
    command = re.search(r"PYTHONPATH=\. linkpatrol check --plugins (\S+)", README.read_text())
    assert command is not None
    name = command.group(1)

    code, report = run.check_json(site.url("/"), "--plugins", name, env=own_plugins(run))

    assert code == 1
    assert report["plugins"] == {name: {"broken_by_host": {"127.0.0.1": 1}}}
