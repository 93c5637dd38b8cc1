"""Parsing pages off the event loop: worker processes that turn HTML into decided links.

Each worker holds its own :class:`~linkpatrol.policy.Policy` (hooks included), so a
page comes back as a list of canonical URLs with their lines and actions, and the
crawl process only writes them down. A worker that hangs past the hard limit is
killed and replaced; its page is tried once more, then judged.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from pebble import ProcessExpired, ProcessPool

from linkpatrol.config import SiteSettings
from linkpatrol.extract import Page, extract_html
from linkpatrol.model import Action
from linkpatrol.policy import Policy
from linkpatrol.store import Discovered
from linkpatrol.urls import BadURL

_policy: Policy | None = None


@dataclass(frozen=True, slots=True)
class ParsedPage:
    links: list[Discovered]
    base_url: str | None
    title: str | None


class ParseFailure(Exception):
    """A page could not be parsed within the limits (the worker hung or died)."""


def _init_worker(settings: SiteSettings) -> None:
    global _policy
    _policy = Policy(settings)


def decide_links(policy: Policy, page: Page, url: str) -> ParsedPage:
    """Resolve, canonicalize, rewrite and decide every link of a parsed page."""
    base = url
    base_url = None
    if page.base_href:
        try:
            base = policy.normalize(page.base_href, url)
            base_url = base if base != url else None
        except BadURL:
            base = url
    links: list[Discovered] = []
    for link in page.links:
        raw = link.url
        if raw.startswith("#"):
            continue
        try:
            target = policy.normalize(raw, base)
        except BadURL as exc:
            links.append(Discovered(raw[:2048], link.line, Action.CHECK, invalid=str(exc)))
            continue
        action = policy.action(target)
        if action is not Action.IGNORE:
            links.append(Discovered(target, link.line, action))
    return ParsedPage(links, base_url, page.title)


def parse_page(url: str, body: bytes, charset: str | None) -> ParsedPage:
    """Worker entry point (also usable in-process when there is no pool)."""
    assert _policy is not None
    return decide_links(_policy, extract_html(body, charset), url)


class ParsePool:
    """A pool of parse workers; with ``workers == 0`` pages are parsed in a thread instead."""

    def __init__(self, settings: SiteSettings, hard_limit: float) -> None:
        self.hard_limit = hard_limit
        self.settings = settings
        workers = settings.parse_workers or (os.cpu_count() or 1)
        self._pool: ProcessPool | None = None
        self._local: Policy | None = None
        if workers > 0:
            self._pool = ProcessPool(
                max_workers=workers,
                initializer=_init_worker,
                initargs=(settings,),
                context=multiprocessing.get_context("forkserver"),
            )

    async def parse(self, url: str, body: bytes, charset: str | None) -> ParsedPage:
        for attempt in (1, 2):
            try:
                return await self._parse_once(url, body, charset)
            except (FutureTimeout, TimeoutError):
                reason = f"parse timeout after {self.hard_limit:g}s"
            except ProcessExpired as exc:
                reason = f"parser crashed (exit code {exc.exitcode})"
            if attempt == 2:
                raise ParseFailure(reason)
        raise AssertionError("unreachable")

    async def _parse_once(self, url: str, body: bytes, charset: str | None) -> ParsedPage:
        if self._pool is None:
            if self._local is None:
                self._local = Policy(self.settings)
            policy = self._local
            return await asyncio.to_thread(
                lambda: decide_links(policy, extract_html(body, charset), url)
            )
        future = self._pool.schedule(parse_page, args=(url, body, charset), timeout=self.hard_limit)
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.stop()
            self._pool.join(timeout=5)
            self._pool = None
