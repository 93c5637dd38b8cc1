"""Headless Chromium for the tests: the system's browser, driven through Playwright.

One Chromium process is started per test session (``chromium`` fixture) and every test
that asks for ``browser`` connects to it over the DevTools protocol on 127.0.0.1, with a
fresh browser context (``new_page``) of its own. Playwright never downloads a browser here
(no ``playwright install``): it drives Debian's ``/usr/bin/chromium``, or the one named by
``LINKPATROL_TEST_CHROMIUM``.

Why the connection is per test: Playwright's synchronous API keeps an asyncio event loop
marked as running for as long as it is started, and ``asyncio.run`` refuses to start under
it. Held for the whole session it would break every later test that runs an event loop in
the test process; per test it only costs starting Playwright's driver.

Where Chromium or Playwright is missing, the browser tests are skipped, saying why, unless
``CI=true``: then they fail (``.ci/run`` installs both).

A test module makes the fixtures its own by name (an assignment, so that the tests'
parameters of the same names do not read as redefined imports)::

    from tests.browser import browser as browser_fixture
    from tests.browser import chromium as chromium_fixture

    chromium, browser = chromium_fixture, browser_fixture
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM_ENV = "LINKPATROL_TEST_CHROMIUM"
CHROMIUM = "/usr/bin/chromium"
ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-dev-shm-usage",
)
START_SECONDS = 60.0  # for Chromium to open its DevTools port
TIMEOUT_MS = 30_000  # for any one browser action


def unavailable(reason: str) -> NoReturn:
    """Skip, saying why; with ``CI=true`` fail instead, as CI installs the browser."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI=true, so this is a failure, not a skip", pytrace=False)
    pytest.skip(reason)


def chromium_path() -> str:
    path = os.environ.get(CHROMIUM_ENV) or CHROMIUM
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        unavailable(f"no Chromium at {path} (apt-get install chromium, or set {CHROMIUM_ENV})")
    return path


def _devtools_port(profile: Path, process: subprocess.Popen[bytes], log: Path) -> int:
    """The port Chromium wrote to its profile once it listens; bounded by START_SECONDS."""
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        if marker.exists():
            first = marker.read_text(encoding="ascii", errors="replace").split("\n", 1)[0]
            if first.strip().isdigit():
                return int(first)
        time.sleep(0.05)
    error = log.read_text(encoding="utf-8", errors="replace")[-500:].strip()
    unavailable(f"Chromium did not start: {error or 'no DevTools port'}")


@pytest.fixture(scope="session")
def chromium() -> Iterator[str]:
    """One headless Chromium for the session; yields its DevTools URL on 127.0.0.1."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        unavailable("Playwright is not installed (pip install '.[test]')")
    path = chromium_path()
    scratch = Path(tempfile.mkdtemp(prefix="linkpatrol-chromium-"))
    profile, log = scratch / "profile", scratch / "stderr.log"
    with open(log, "wb") as stderr:
        process = subprocess.Popen(
            [
                path,
                *ARGS,
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        yield f"http://127.0.0.1:{_devtools_port(profile, process, log)}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture
def browser(chromium: str) -> Iterator[Browser]:
    """The session's Chromium, connected for this test; its contexts are closed at its end."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        connected = playwright.chromium.connect_over_cdp(chromium, timeout=TIMEOUT_MS)
        try:
            yield connected
        finally:
            connected.close()  # closes the contexts this test made, leaves Chromium running


def new_page(browser: Browser, *, javascript: bool = True, width: int = 1000) -> Page:
    """A page in a fresh context (no cookies, no cache), with bounded waits."""
    context = browser.new_context(
        java_script_enabled=javascript, viewport={"width": width, "height": 800}
    )
    context.set_default_timeout(TIMEOUT_MS)
    return context.new_page()


class Watch:
    """What a page did that a test must see: dialogs opened, console messages, script errors.

    Dialogs are recorded and dismissed, so an ``alert()`` can never block the test.
    """

    def __init__(self, page: Page) -> None:
        self.dialogs: list[str] = []
        self.console: list[str] = []
        self.errors: list[str] = []
        page.on("dialog", self._dialog)
        page.on("console", lambda message: self.console.append(message.text))
        page.on("pageerror", lambda error: self.errors.append(str(error)))

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def matching(self, test: Callable[[str], bool]) -> list[str]:
        return [line for line in self.console if test(line)]
