"""The pipeline: what the crawl settles, on its way to the memory.

Each URL's outcome is told to the observer (and the links the memory settles without a
request, with their lines), gathered, given the page's remembered links where it carries
them (a page unchanged, trusted or failing), and written a batch at a time, in one
transaction each.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from linkpatrol.model import Action, Discovered, Outcome, State, Task
from linkpatrol.observer import CrawlStats, Observer
from linkpatrol.policy import Policy
from linkpatrol.rules import Verdict, settled_link
from linkpatrol.store import CrawlMemory

StoreCall = Callable[..., Awaitable[Any]]  # runs a store method on the store's own thread


class Pipeline:
    """The outcomes of one run, from their verdicts to the memory."""

    def __init__(
        self,
        store: CrawlMemory,
        call: StoreCall,
        policy: Policy,
        observer: Observer,
        stats: CrawlStats,
        wake: Callable[[], None],
    ) -> None:
        self.store = store
        self._call = call
        self.policy = policy
        self.observer = observer
        self.stats = stats
        self._wake = wake
        self.outcomes: list[Outcome] = []
        self.extra_requests = 0  # requests that are no URL's (robots.txt, folders' probes)
        self._from_memory: set[int] = set()  # pages whose outcome carries remembered links
        self._announced: set[str] = set()

    def settle(self, task: Task, outcome: Outcome) -> None:
        """A URL has its outcome: told now, written with the next batch."""
        self.outcomes.append(outcome)
        self.stats.done += 1
        if outcome.state is State.BROKEN:
            self.stats.broken += 1
        self.observer.url_checked(task.url, outcome)
        self._announce_links(outcome)
        self._wake()

    def remembered(self, task: Task, outcome: Outcome) -> None:
        """The outcome carries the page's remembered links (read at the next write)."""
        if task.links_at is not None:
            outcome.links_unchanged = True
            self._from_memory.add(task.url_id)

    def trusted(self, task: Task, action: Action) -> None:
        """A URL found good recently: its verdict stands, a page's links from memory."""
        outcome = Outcome(
            task.url_id,
            action,
            task.state or State.OK,
            http_status=task.http_status,
            content_type=task.content_type,
            checked=False,
        )
        if action is Action.PARSE:
            self.remembered(task, outcome)
        self.settle(task, outcome)

    def _announce_links(self, outcome: Outcome) -> None:
        """Links the memory settles without a request (record, invalid) get their line too."""
        record = Action.RECORD  # once: each look-up on the class is a call of its __getattr__
        for found in outcome.links or ():
            if found.invalid is None and found.action is not record:
                continue
            if found.url in self._announced:
                continue
            self._announced.add(found.url)
            invalid = None if found.invalid is None else f"invalid URL: {found.invalid}"
            verdict = settled_link(found.action, invalid) or Verdict(State.UNCHECKED)
            settled = Outcome(0, found.action, verdict.state, checked=False)
            settled.reason, settled.error = verdict.reason, verdict.error
            if verdict.state is State.BROKEN:
                self.stats.broken += 1
            self.observer.url_checked(found.url, settled)

    async def _remembered_links(
        self, pass_id: int, url_ids: list[int]
    ) -> dict[int, list[Discovered]]:
        """The links remembered for these pages to URLs not yet seen in the pass, each
        decided afresh (one store call): they are not written again, only followed."""
        stored = await self._call(self.store.links_of, url_ids, pass_id)
        actions: dict[str, Action] = {}
        found: dict[int, list[Discovered]] = {}
        for url_id, links in stored.items():
            decided: list[Discovered] = []
            for url, line in links:
                action = actions.get(url)
                if action is None:
                    action = actions[url] = self.policy.remembered_action(url)
                if action is not Action.IGNORE:
                    decided.append(Discovered(url, line, action))
            found[url_id] = decided
        return found

    async def flush(self, pass_id: int, final: bool = False) -> set[str]:
        """Write the outcomes gathered so far; the origins of the URLs they queued. A batch
        that fails stays to be written again, unless this is the run's last."""
        if not self.outcomes and not self.extra_requests:
            return set()
        batch, self.outcomes = self.outcomes, []
        extra, self.extra_requests = self.extra_requests, 0
        waiting = [o for o in batch if o.url_id in self._from_memory]
        if waiting:
            remembered = await self._remembered_links(pass_id, [o.url_id for o in waiting])
            for o in waiting:
                o.links = remembered.get(o.url_id, [])
                self._from_memory.discard(o.url_id)
        try:
            queued: set[str] = await self._call(
                self.store.complete, pass_id, batch, time.time(), extra
            )
        except BaseException:
            if not final:
                self.outcomes = batch + self.outcomes
            raise
        return queued
