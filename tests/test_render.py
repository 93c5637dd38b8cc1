"""--render: pages built by JavaScript, loaded in the system's Chromium, their DOM's links read.

A real single-page app on 127.0.0.1 (links added by a script, a client-side router) and
hostile pages (an endless script, a huge DOM), checked by the real command driving Debian's
Chromium through Playwright. Without Chromium or Playwright these tests are skipped, but
fail under ``CI=true`` (as the dashboard's browser tests do: CI installs both).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from linkpatrol.config import SiteSettings, SiteTable
from linkpatrol.model import RENDERED, Action, Discovered, line_labels
from linkpatrol.render import renders
from linkpatrol.spider import only_rendered
from tests.browser import chromium_path, unavailable
from tests.conftest import Runner, Serve, by_url, running, wait_until
from tests.sitesrv import Page


@pytest.fixture
def chromium() -> str:
    """The system's Chromium (and Playwright to drive it), or a skip saying what is missing."""
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        unavailable("Playwright is not installed (pip install '.[test]')")
    return chromium_path()


def html(*body: str) -> str:
    return f"<!doctype html><html><head><title>t</title></head><body>{''.join(body)}</body></html>"


# links a script adds once the page has loaded, after a fetch of its own (the network idle
# is what the render waits for)
APP = html(
    '<a href="/about">About</a>',
    '<div id="app">loading</div>',
    "<script>",
    "fetch('/api/nav').then(r => r.json()).then(nav => {",
    "  const app = document.getElementById('app');",
    "  app.textContent = '';",
    "  for (const href of nav) {",
    "    const a = document.createElement('a'); a.href = href; a.textContent = href;",
    "    app.append(a);",
    "  }",
    "  const img = document.createElement('img'); img.src = '/img/logo.png'; app.append(img);",
    "  const about = document.createElement('a'); about.href = '/about'; app.append(about);",
    "});",
    "</script>",
)
# a client-side router: it moves to /app/settings without a request and draws links
# relative to where it now is
ROUTER = html(
    "<main></main>",
    "<script>",
    "history.pushState({}, '', '/app/settings');",
    "document.querySelector('main').innerHTML =",
    '  \'<a href="reports">reports</a> <a href="missing-view">gone</a>\';',
    "</script>",
)


def spa() -> dict[str, Page]:
    return {
        "/": Page(APP),
        "/api/nav": Page('["/good", "/gone"]', content_type="application/json"),
        "/good": Page(html("<p>good</p>")),
        "/about": Page(html('<a href="/app/">the app</a>')),
        "/img/logo.png": Page(b"\x89PNG", content_type="image/png"),
        "/app/": Page(ROUTER),
        "/app/reports": Page(html("<p>reports</p>")),
    }


def test_links_a_script_adds_are_found_only_when_rendered(
    run: Runner, serve: Serve, chromium: str
) -> None:
    site = serve(spa())
    code, plain = run.check_json(site.url("/"), "--db", str(run.cwd / "plain.db"))
    assert code == 0, plain
    assert site.url("/gone") not in by_url(plain)
    assert site.url("/app/missing-view") not in by_url(plain)

    code, report = run.check_json(site.url("/"), "--render", "--browser", chromium)
    assert code == 1, report
    urls = by_url(report)
    gone = urls[site.url("/gone")]
    assert gone["state"] == "broken" and gone["http_status"] == 404
    assert gone["referrers"] == [{"url": site.url("/"), "line": None, "rendered": True}]
    assert urls[site.url("/good")]["state"] == "ok"
    assert urls[site.url("/img/logo.png")]["state"] == "ok"  # an image the script adds
    # a link in the served HTML keeps its line, also where the script adds it again
    about = [r for r in urls[site.url("/about")]["referrers"] if r["url"] == site.url("/")]
    assert about == [{"url": site.url("/"), "line": 1}]
    # the router's links resolve against where it moved to, not the URL served
    missing = urls[site.url("/app/missing-view")]
    assert missing["state"] == "broken"
    assert missing["referrers"][0] == {"url": site.url("/app/"), "line": None, "rendered": True}
    assert urls[site.url("/app/reports")]["state"] == "ok"

    text = run("report", "--db", run.db, "--format", "text").stdout
    assert "/:rendered" in text, text
    csv = run("report", "--db", run.db, "--format", "csv").stdout
    assert f"{site.url('/')},rendered," in csv, csv
    for fmt, shown in (("markdown", "/:rendered"), ("junit", "/:rendered"), ("html", ":rendered")):
        out = run("report", "--db", run.db, "--format", fmt).stdout
        assert shown in out, (fmt, out)
    sarif = json.loads(run("report", "--db", run.db, "--format", "sarif").stdout)
    results = sarif["runs"][0]["results"]
    [found] = [
        r for r in results if r["message"]["text"].startswith(f"Link to {site.url('/gone')}")
    ]
    assert "(in the rendered page)" in found["message"]["text"]
    [place] = found["locations"]
    assert place["physicalLocation"] == {"artifactLocation": {"uri": site.url("/")}}


def test_a_site_table_turns_rendering_on_for_its_pages(
    run: Runner, serve: Serve, chromium: str
) -> None:
    site = serve(spa())
    (run.cwd / "linkpatrol.toml").write_text(
        f'[[site]]\nprefix = "{site.url("/")}"\nrender = true\n\n'
        f'[[site]]\nprefix = "{site.url("/app/")}"\nrender = false\n',
        encoding="utf-8",
    )
    code, report = run.check_json(site.url("/"), "--browser", chromium)
    urls = by_url(report)
    assert code == 1, report
    assert urls[site.url("/gone")]["referrers"][0]["rendered"] is True
    assert site.url("/app/missing-view") not in urls  # its table says no


# an endless script in the page itself: it never loads, and its renderer never answers
SPIN = html('<a href="/spin-child">served</a>', "<script>while (true) {}</script>")
# 300,000 elements, far past --max-size once serialized
HUGE = html(
    "<script>",
    "const box = document.createElement('div');",
    "for (let i = 0; i < 300000; i++) {",
    "  const p = document.createElement('p'); p.textContent = 'x'.repeat(8); box.append(p);",
    "}",
    "document.body.append(box);",
    "</script>",
)
# a text of 2 MB: past --max-size 1MB, and quick to make
BIG = html("<script>document.body.append('x'.repeat(2000000));</script>")
# an endless script started once the page has loaded and gone idle
LATE_SPIN = html(
    '<a href="/ok">ok</a>',
    "<script>addEventListener('load', () => setTimeout(() => { while (true) {} }, 50));</script>",
)


def test_hostile_pages_are_reported_and_the_crawl_goes_on(
    run: Runner, serve: Serve, chromium: str
) -> None:
    site = serve(
        {
            "/": Page(
                html(
                    '<a href="/spin">spin</a> <a href="/huge">huge</a>',
                    '<a href="/late">late</a> <a href="/ok">ok</a> <a href="/big">big</a>',
                )
            ),
            "/spin": Page(SPIN),
            "/spin-child": Page(html("<p>child</p>")),
            "/huge": Page(HUGE),
            "/late": Page(LATE_SPIN),
            "/big": Page(BIG),
            "/ok": Page(html("<p>fine</p>")),
        }
    )
    started = time.monotonic()
    code, report = run.check_json(
        site.url("/"),
        "--render",
        "--browser",
        chromium,
        "--render-timeout",
        "3s",
        "--max-size",
        "1MB",
        timeout=120,
    )
    took = time.monotonic() - started
    urls = by_url(report)
    assert report["complete"] is True
    assert "render timeout" in urls[site.url("/spin")]["error"]
    # the others are too big, or still busy when their time is up on a busy machine
    for path in ("/spin", "/huge", "/big", "/late"):
        entry = urls[site.url(path)]
        assert (entry["state"], entry["reason"]) == ("warning", "render"), entry
    # the served HTML of a page that could not be rendered is checked all the same
    assert urls[site.url("/spin-child")]["state"] == "ok"
    assert urls[site.url("/ok")]["state"] == "ok"
    assert urls[site.url("/")]["state"] == "ok"
    assert code == 0, report
    assert took < 60, f"took {took:.1f}s"


def test_a_dom_bigger_than_max_size_is_not_read(run: Runner, serve: Serve, chromium: str) -> None:
    site = serve({"/": Page(html('<a href="/big">big</a>')), "/big": Page(BIG)})
    code, report = run.check_json(
        site.url("/"), "--render", "--browser", chromium, "--max-size", "1MB"
    )
    big = by_url(report)[site.url("/big")]
    assert (big["state"], big["reason"]) == ("warning", "render"), big
    assert big["error"].startswith("rendered page larger than --max-size ("), big
    assert code == 0


def test_without_a_browser_one_line_and_exit_2_before_anything_is_written(
    run: Runner, serve: Serve, tmp_path: Path
) -> None:
    site = serve(spa())
    memory = tmp_path / "never.db"
    named = run.check(
        site.url("/"), "--render", "--browser", "/nowhere/chromium", "--db", str(memory)
    )
    assert named.returncode == 2, named
    assert named.stderr.strip().count("\n") == 0, named.stderr
    assert "/nowhere/chromium" in named.stderr
    bare = run.check(
        site.url("/"), "--render", "--db", str(memory), env={"PATH": str(tmp_path / "empty")}
    )
    assert bare.returncode == 2, bare
    assert bare.stderr.strip().count("\n") == 0, bare.stderr
    assert "Chromium" in bare.stderr and "--browser" in bare.stderr, bare.stderr
    assert not memory.exists()
    assert site.requests() == []  # refused before the first request


# ---- the pure parts ----------------------------------------------------------------------


def test_only_links_the_served_html_lacks_are_added_once_each() -> None:
    served = [
        Discovered("https://s/a", 3, Action.CHECK),
        Discovered("https://s/b", 4, Action.CHECK),
    ]
    rendered = [
        Discovered("https://s/a", 1, Action.CHECK),
        Discovered("https://s/a", 1, Action.CHECK, fragment="top"),
        Discovered("https://s/c", 2, Action.PARSE),
        Discovered("https://s/c", 9, Action.PARSE),
    ]
    assert only_rendered(served, rendered) == [
        Discovered("https://s/a", RENDERED, Action.CHECK, fragment="top"),
        Discovered("https://s/c", RENDERED, Action.PARSE),
    ]


@pytest.mark.parametrize(
    ("flag", "tables", "url", "expected"),
    [
        (False, (), "https://s/x", False),
        (True, (), "https://s/x", True),
        (True, (), "file:///site/index.html", False),
        (False, (("https://s/", True),), "https://s/x", True),
        (False, (("https://s/", True), ("https://s/app/", False)), "https://s/app/x", False),
        (True, (("https://s/app/", False),), "https://s/x", True),
        (True, (("https://s/", None),), "https://s/x", True),
    ],
)
def test_the_longest_prefix_with_a_render_key_decides(
    flag: bool, tables: tuple[tuple[str, Any], ...], url: str, expected: bool
) -> None:
    settings = SiteSettings(
        render=flag, site_tables=tuple(SiteTable(prefix, render=on) for prefix, on in tables)
    )
    assert renders(url, settings) is expected


def test_rendered_lines_are_listed_last() -> None:
    assert line_labels([9, RENDERED, 3]) == "3, 9, rendered"


def _browsers(pid: int) -> list[psutil.Process]:
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    return [c for c in children if "chrom" in c.name().lower()]


@pytest.mark.parametrize("whole_group", [False, True], ids=["signal", "ctrl-c"])
def test_a_signal_stops_the_browser_with_the_crawl(
    run: Runner, serve: Serve, chromium: str, whole_group: bool
) -> None:
    site = serve({"/": Page(html('<a href="/ok">ok</a>')), "/ok": Page(SPIN)})
    options = ("--render", "--browser", chromium, "--render-timeout", "60s")
    proc = run.popen("check", "--db", run.db, *options, site.url("/"), new_session=True)
    try:

        def loading() -> bool:
            running(proc)
            return sum(1 for hit in site.requests("GET") if hit.path == "/ok") >= 2

        wait_until(loading, 60, "the browser loading /ok (the crawl's GET, then its own)")
        browsers = _browsers(proc.pid)
        assert browsers, "no browser process under the crawl"
        if whole_group:  # Ctrl-C on a terminal reaches the browser too
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 3, (out, err)
    assert "Traceback" not in err, err
    assert out.startswith("linkpatrol") and "INCOMPLETE" in out.splitlines()[0], out
    _, alive = psutil.wait_procs(browsers, timeout=15)
    assert not alive, [p.cmdline()[:2] for p in alive]


def test_a_crashed_renderer_is_reported_and_the_next_page_renders(
    run: Runner, serve: Serve, chromium: str
) -> None:
    site = serve(
        {
            "/": Page(html('<a href="/crash">crash</a>')),
            "/crash": Page(SPIN.replace("/spin-child", "/later")),
            "/later": Page(html("<script>document.write('<a href=/gone>gone</a>')</script>")),
            "/spin-child": Page(html("")),
        }
    )
    options = ("--render", "--browser", chromium, "--render-pages", "1", "--render-timeout", "60s")
    proc = run.popen("check", "--db", run.db, "--format", "json", *options, site.url("/"))
    try:

        def loading() -> bool:
            running(proc)
            return sum(1 for hit in site.requests("GET") if hit.path == "/crash") >= 2

        wait_until(loading, 60, "the browser loading /crash")
        started = time.monotonic()
        renderers = [p for p in _browsers(proc.pid) if "--type=renderer" in p.cmdline()]
        assert renderers, "no renderer under the crawl"
        for renderer in renderers:
            renderer.kill()
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, err  # /gone, which /later's script writes
    urls = by_url(json.loads(out))
    crashed = urls[site.url("/crash")]
    assert (crashed["state"], crashed["reason"]) == ("warning", "render"), crashed
    assert crashed["error"] == "render failed: the renderer crashed", crashed
    assert took < 30, f"the crash was noticed after {took:.1f}s, not at once"
    assert urls[site.url("/gone")]["referrers"][0]["rendered"] is True
    assert urls[site.url("/later")]["state"] == "ok"


def test_a_browser_that_will_not_start_is_tried_once_and_the_crawl_goes_on(
    run: Runner, serve: Serve, chromium: str, tmp_path: Path
) -> None:
    broken = tmp_path / "chromium"
    broken.write_text("#!/bin/sh\necho 'no display, no luck' >&2\nexit 1\n", encoding="utf-8")
    broken.chmod(0o755)
    site = serve(spa())
    code, report = run.check_json(site.url("/"), "--render", "--browser", str(broken))
    urls = by_url(report)
    assert report["complete"] is True
    for path in ("/", "/about", "/app/"):
        entry = urls[site.url(path)]
        assert (entry["state"], entry["reason"]) == ("warning", "render"), entry
        assert entry["error"].startswith("browser did not start: "), entry
    assert site.url("/gone") not in urls
    assert code == 0
