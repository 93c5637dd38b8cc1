"""The scheduler: this worker's side of the frontier.

It claims URLs due from the memory, admits each by the rule book (dropped, recorded,
held back by a limit, trusted from memory, or queued in its host's slot), and holds no
more than it can start soon: alone, a worker claims well ahead; in a crew, little more
than it can start, and what it cannot goes back to the others.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from linkpatrol.downloader import Downloader, Slot
from linkpatrol.model import Action, ConfigError, Outcome, Reason, State, Task
from linkpatrol.pipeline import Pipeline, StoreCall
from linkpatrol.policy import Policy
from linkpatrol.rules import Admission, RuleOptions, admit
from linkpatrol.store import CrawlMemory

LEASE_SECONDS = 600.0
# claimed URLs held in memory: enough that one claim feeds many requests, few enough
# that memory does not grow with the site
WINDOW = 256
CREW_WINDOW = 16  # the least a worker sharing the pass claims ahead
_REQUESTED = frozenset((Action.PARSE.value, Action.CHECK.value))  # actions that request


class Scheduler:
    """Claims, admits and holds the URLs one worker is about to request."""

    def __init__(
        self,
        store: CrawlMemory,
        call: StoreCall,
        policy: Policy,
        rules: RuleOptions,
        downloader: Downloader,
        pipeline: Pipeline,
        concurrency: int,
        robots_for: Callable[[Slot], None],
        fail: Callable[[BaseException], None],
    ) -> None:
        self.store = store
        self._call = call
        self.policy = policy
        self.rules = rules
        self.downloader = downloader
        self.pipeline = pipeline
        self.concurrency = concurrency
        self._robots_for = robots_for  # starts learning a host's robots.txt
        self._fail = fail
        self.held = 0  # URLs claimed and queued in the hosts' slots, not started yet
        self.window = self._alone_window = max(concurrency * 2, WINDOW)
        self.alone = True
        # alone, once a claim came back short: the only origins the frontier may hold
        # unleased URLs of; a claim is not worth asking for while they are all busy
        self.dry: set[str] | None = None

    async def claim(self, pass_id: int, busy: list[str]) -> int:
        """Claim what the window has room for, leaving out the ``busy`` hosts; how many
        URLs the frontier gave."""
        room = self.window - self.held
        if room <= 0:
            return 0
        tasks = await self._call(self.store.claim, pass_id, room, time.time(), busy, LEASE_SECONDS)
        self.dry = set(busy) if self.alone and len(tasks) < room else None
        trusted: list[tuple[Task, Action]] = []
        for task in tasks:
            action = self.admit(task)
            if action is not None:
                trusted.append((task, action))
        for task, action in trusted:
            self.pipeline.trusted(task, action)
        return len(tasks)

    def admit(self, task: Task) -> Action | None:
        """Decide a claimed URL afresh: settle it, queue it in its host's slot, or
        (returned) trust what the memory knows of it."""
        try:
            action = self.policy.action(task.url)
        except ConfigError as exc:
            self._fail(exc)
            return None
        limited = judged = None
        if action.value in _REQUESTED:
            limited = self.policy.limit_reason(task.url)
            judged = self.policy.host_verdict(task.url)
        admission = admit(action, limited, task, time.time(), self.rules, judged)
        if admission is Admission.DROP:
            self.pipeline.settle(task, Outcome(task.url_id, action, State.UNCHECKED, dropped=True))
            return None
        if admission is Admission.RECORD:
            self.pipeline.settle(task, Outcome(task.url_id, action, State.UNCHECKED, checked=False))
            return None
        if admission is Admission.JUDGED:
            assert judged is not None
            state, reason, error = judged
            outcome = Outcome(task.url_id, action, state, error=error, reason=reason)
            self.pipeline.settle(task, outcome)
            return None
        if admission is Admission.LIMITED:
            outcome = Outcome(
                task.url_id,
                action,
                State.UNCHECKED,
                error=limited,
                checked=False,
                reason=Reason.LIMIT,
            )
            self.pipeline.settle(task, outcome)
            return None
        if admission is Admission.TRUST:
            return action
        slot = self.downloader.slot(task.origin)
        if action is not task.action:  # decided afresh: the request follows the new action
            task = dataclasses.replace(task, action=action)
        slot.waiting.append(task)
        self.held += 1
        if slot.robots is None and not slot.robots_pending:
            slot.robots_pending = True
            self._robots_for(slot)
        return None

    def take(self, slot: Slot) -> Task:
        """The next URL due of a host the downloader says may start one."""
        self.held -= 1
        return slot.waiting.popleft()

    def again(self, slot: Slot, task: Task) -> None:
        """A URL refused for its host's limit: the first of its host's URLs again, for
        when the host's pause ends."""
        slot.waiting.appendleft(task)
        self.held += 1

    def queued(self, origins: set[str]) -> None:
        """A batch of outcomes queued URLs of these hosts: the frontier is not dry there."""
        if self.dry is not None:
            self.dry |= origins

    async def crew(self, pass_id: int, share: int, workers: int) -> None:
        """The crew's heartbeat said this worker's share of a host and how many work: keep
        a window to match, and give back to the frontier what is held beyond it."""
        self.alone = workers == 1
        if not self.alone:
            self.dry = None  # the others queue URLs too
            can_start = max(1, share) * max(1, len(self.downloader.slots))
            self.window = max(CREW_WINDOW, 2 * min(self.concurrency, can_start))
        else:
            self.window = self._alone_window
        keep = self.window if share else 0
        handed, hosts = self.downloader.stuck() if not self.alone else ([], set())
        if self.held - len(handed) > keep:
            more, also = self.downloader.hand_back(self.held - len(handed) - keep)
            handed, hosts = [*handed, *more], hosts | also
        if handed:
            if self.dry is not None:
                self.dry |= hosts
            self.held -= len(handed)
            await self._call(self.store.release, pass_id, handed)
