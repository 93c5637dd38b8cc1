"""`linkpatrol serve` in headless Chromium: live progress, the report's table, no injection."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import quote

from playwright.sync_api import Browser

from tests.browser import Watch, new_page
from tests.browser import browser as browser_fixture
from tests.browser import chromium as chromium_fixture
from tests.conftest import Runner, Serve
from tests.test_dashboard import StartDashboard, injection_site
from tests.test_dashboard import dashboard_of as dashboard_fixture
from tests.test_report_html import png_size
from tests.test_stop_resume import Gate, generated_site

chromium, browser = chromium_fixture, browser_fixture  # pytest fixtures from tests.browser
dashboard_of = dashboard_fixture


def test_dashboard_shows_the_report_with_its_own_scripts_under_a_strict_policy(
    run: Runner, serve: Serve, dashboard_of: StartDashboard, browser: Browser, tmp_path: Path
) -> None:
    site = serve(generated_site(indexes=3, per_index=12))
    run.check_json(site.url("/"))
    board = dashboard_of(run.db)
    page = new_page(browser)
    watch = Watch(page)

    page.goto(board.base)

    assert page.locator("#progress [data-field=phase]").inner_text() == "complete"
    assert page.locator("svg.chart").count() >= 3
    rows = page.locator("#problems tbody tr:visible").count()
    assert rows > 0
    assert page.locator("#problems thead th button").count() == 5  # the report's script ran
    page.fill("#problems-filter", "no such text anywhere")
    assert page.locator("#problems tbody tr:visible").count() == 0
    assert watch.errors == [] and watch.dialogs == []
    assert watch.matching(lambda line: "Content Security Policy" in line) == []
    shot = tmp_path / "dashboard.png"
    page.screenshot(path=str(shot), full_page=True)
    width, height = png_size(shot.read_bytes())
    assert width > 900 and height > 600


def test_progress_updates_without_reloading_while_a_crawl_runs(
    run: Runner, serve: Serve, dashboard_of: StartDashboard, browser: Browser
) -> None:
    gate = Gate(generated_site(indexes=4, per_index=10), after=20)
    site = serve(gate.site())
    crawl = run.popen("check", "--db", run.db, "--format", "json", site.url("/"))
    try:
        gate.wait_holding(crawl)
        board = dashboard_of(run.db)
        page = new_page(browser)
        watch = Watch(page)
        page.goto(board.base)
        page.evaluate("window.__samePage = 'yes'")
        phase_before = page.locator("#progress [data-field=phase]").inner_text()
        done_before = int(page.locator("#progress [data-field=done]").inner_text())
        assert page.locator("#progress-note").is_hidden()
    finally:
        gate.release()
        crawl.communicate(timeout=60)

    deadline = time.monotonic() + 30
    phase = phase_before
    while phase != "complete" and time.monotonic() < deadline:
        page.wait_for_timeout(200)
        phase = page.locator("#progress [data-field=phase]").inner_text()

    assert phase_before == "running" and phase == "complete"
    done_after = int(page.locator("#progress [data-field=done]").inner_text())
    assert done_after > done_before
    assert done_after == int(page.locator("#progress [data-field=seen]").inner_text())
    assert page.locator("#progress-note").is_visible()
    assert page.evaluate("window.__samePage") == "yes"  # updated in place, never reloaded
    assert watch.errors == []


def test_no_crawled_payload_runs_on_any_dashboard_page(
    run: Runner, serve: Serve, dashboard_of: StartDashboard, browser: Browser
) -> None:
    site = serve(injection_site())
    run.check_json(site.url("/"))
    board = dashboard_of(run.db)

    for path in ("/", "/search?q=javascript", "/search?q=x", f"/url?u={quote(site.url('/'))}"):
        page = new_page(browser)
        watch = Watch(page)
        page.goto(board.base.rstrip("/") + path)
        for link in page.locator("main a").all()[:10]:
            link.hover()

        assert watch.dialogs == [], path
        assert page.evaluate("typeof window.__pwned") == "undefined", path
        assert watch.errors == [], path
        assert page.locator("header form input[name=q]").count() == 1  # the page did render
        page.context.close()
