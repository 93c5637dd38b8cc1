"""Pages built by JavaScript: the site's pages loaded in a headless Chromium, their DOM read.

A page's served HTML is parsed as always; with ``--render`` (or ``render = true`` in its
``[[site]]`` table) it is also loaded in the system's Chromium, driven by Playwright, and
once it has settled (its network idle, or the render timeout near) the DOM is serialized
and read by the same extractor: the links only the DOM holds are added, marked rendered.

The browser is started on the first page that needs it and shares the crawl's event loop.
At most ``render_pages`` pages render at once, each in a fresh context (no cookies, no
cache) and within ``render_timeout``; a page that hangs, crashes its renderer or builds a
DOM bigger than ``--max-size`` is closed and reported, and the crawl goes on. Playwright
never downloads a browser here: the one it drives is found on the ``PATH`` (or named by
``--browser``), and without it a check is refused before anything is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import shutil
import time
from dataclasses import dataclass
from typing import Any

from linkpatrol.config import SiteSettings
from linkpatrol.model import LinkpatrolError

BROWSERS = ("chromium", "chromium-browser", "google-chrome")  # looked up on the PATH
ARGS = (
    "--no-sandbox",  # the crawl may run as root in a container, where the sandbox cannot
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--no-first-run",
    "--no-default-browser-check",
    "--js-flags=--max-old-space-size=512",  # a script's heap: past it, its renderer dies
)
CLOSE_SECONDS = 5.0  # for a page, or the browser, to close before it is killed
CRASH_NEWS_SECONDS = 1.0  # for news of a renderer's crash, once a call has failed
# the DOM, serialized in the page; only its length crosses when it is bigger than allowed
_SERIALIZE = """(cap) => {
  const doctype = document.doctype ? "<!DOCTYPE html>\\n" : "";
  const html = doctype + document.documentElement.outerHTML;
  return html.length > cap ? html.length : html;
}"""


class RenderFailure(Exception):
    """A page could not be rendered within the limits (hung, crashed, too big)."""


@dataclass(frozen=True, slots=True)
class RenderedPage:
    url: str  # where the browser ended (a client-side router may have moved it)
    html: bytes  # the settled DOM, serialized as UTF-8


def renders(url: str, settings: SiteSettings) -> bool:
    """Whether a page of the site at ``url`` is rendered: the ``render`` key of the longest
    ``[[site]]`` prefix it is under that has one, else ``--render``."""
    if not url.startswith(("http://", "https://")):
        return False
    chosen, length = settings.render, -1
    for table in settings.site_tables:
        if table.render is not None and len(table.prefix) > length and url.startswith(table.prefix):
            chosen, length = table.render, len(table.prefix)
    return chosen


def find_browser(settings: SiteSettings) -> str:
    """The Chromium to drive, and Playwright to drive it; else one line naming what is
    missing (``LinkpatrolError``, exit code 2)."""
    if importlib.util.find_spec("playwright") is None:
        raise LinkpatrolError(
            "--render needs the Python package playwright (pip install 'linkpatrol[render]')"
        )
    if settings.browser:
        path = shutil.which(settings.browser)
        if path is None:
            raise LinkpatrolError(f"--browser {settings.browser}: no such executable")
        return path
    for name in BROWSERS:
        path = shutil.which(name)
        if path is not None:
            return path
    raise LinkpatrolError(
        f"--render needs Chromium: none of {', '.join(BROWSERS)} is on the PATH "
        "(apt-get install chromium, or name one with --browser)"
    )


class Renderer:
    """A small pool of browser pages, over one Chromium started when first needed."""

    def __init__(self, settings: SiteSettings, executable: str) -> None:
        self.settings = settings
        self.executable = executable
        self.timeout = settings.render_timeout
        self.max_size = settings.max_size
        self.user_agent = settings.user_agent
        self._slots = asyncio.Semaphore(settings.render_pages)
        self._starting: asyncio.Lock = asyncio.Lock()
        self._playwright: Any = None
        self._browser: Any = None
        self._closed = False
        self._unstartable: str | None = None  # why the browser would not start, once tried

    def wants(self, url: str) -> bool:
        """Whether the page at ``url`` is rendered (see :func:`renders`)."""
        return renders(url, self.settings)

    async def _launched(self) -> Any:
        async with self._starting:
            if self._closed:
                raise RenderFailure("the crawl is ending")
            if self._unstartable is not None:  # tried once: the rest are told at once
                raise RenderFailure(self._unstartable)
            if self._browser is None or not self._browser.is_connected():
                from playwright.async_api import async_playwright

                try:
                    if self._playwright is None:
                        self._playwright = await async_playwright().start()
                    self._browser = await self._playwright.chromium.launch(
                        executable_path=self.executable,
                        args=list(ARGS),
                        timeout=max(self.timeout, 30.0) * 1000,
                        handle_sigint=False,
                        handle_sigterm=False,
                        handle_sighup=False,
                    )
                except Exception as exc:
                    self._unstartable = f"browser did not start: {_first_line(exc)}"
                    raise RenderFailure(self._unstartable) from None
            return self._browser

    async def render(self, url: str) -> RenderedPage:
        """The page's settled DOM; RenderFailure when it could not be had in time."""
        async with self._slots:
            browser = await self._launched()
            started = time.monotonic()
            context = None
            try:
                context = await browser.new_context(
                    user_agent=self.user_agent, service_workers="block", accept_downloads=False
                )
                return await asyncio.wait_for(
                    self._settle(context, url, started), self.timeout + CLOSE_SECONDS
                )
            except TimeoutError:
                raise RenderFailure(f"render timeout after {self.timeout:g}s") from None
            except RenderFailure:
                raise
            except Exception as exc:  # Playwright's: the page crashed, the browser went away
                raise RenderFailure(f"render failed: {_first_line(exc)}") from None
            finally:
                if context is not None:
                    await self._close(context)

    async def _settle(self, context: Any, url: str, started: float) -> RenderedPage:
        from playwright.async_api import TimeoutError as PageTimeout

        page = await context.new_page()
        crashed: list[bool] = []
        page.on("crash", lambda _: crashed.append(True))
        limit = self.timeout * 1000
        try:
            await page.goto(url, wait_until="domcontentloaded", timeout=limit)
            left = limit - (time.monotonic() - started) * 1000
            # a page that never stops polling is read as it stands when its time is up
            with contextlib.suppress(PageTimeout):
                await page.wait_for_load_state("networkidle", timeout=max(left, 1))
            html = await page.evaluate(_SERIALIZE, self.max_size)
        except PageTimeout:
            raise RenderFailure(f"render timeout after {self.timeout:g}s (never loaded)") from None
        except Exception:
            # Playwright's own words say less (a frame detached, say), and it tells of the
            # crash after the call it broke
            if crashed or await _crashes(page):
                raise RenderFailure("render failed: the renderer crashed") from None
            raise
        if isinstance(html, int):
            raise RenderFailure(f"rendered page larger than --max-size ({html} characters)")
        return RenderedPage(page.url, html.encode("utf-8", "replace"))

    async def _close(self, context: Any) -> None:
        """Close a page's context; a browser that cannot is stopped, and started again
        for the next page."""
        try:
            await asyncio.wait_for(context.close(), CLOSE_SECONDS)
        except Exception:
            await self._stop_browser()

    async def _stop_browser(self) -> None:
        browser, self._browser = self._browser, None
        if browser is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(browser.close(), CLOSE_SECONDS)

    async def close(self) -> None:
        """Stop the browser and Playwright, if they were started."""
        self._closed = True
        async with self._starting:
            await self._stop_browser()
            playwright, self._playwright = self._playwright, None
            if playwright is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(playwright.stop(), CLOSE_SECONDS)


async def _crashes(page: Any) -> bool:
    """Whether the page's renderer is found to have crashed within a moment."""
    try:
        await page.wait_for_event("crash", timeout=CRASH_NEWS_SECONDS * 1000)
    except Exception:
        return False
    return True


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__
