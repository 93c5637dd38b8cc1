"""The engine: claims due URLs from the memory, fetches them politely, parses, writes back.

Data flows one way: frontier (the store's due URLs) -> fetch -> extract/decide (parse
pool) -> store -> frontier. The memory is the source of truth; the engine holds only
a bounded window of claimed tasks and a short list of outcomes not yet written.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from linkpatrol.config import SiteSettings, report_options, rule_options, wants_rendering
from linkpatrol.curlfetch import make_fetcher
from linkpatrol.downloader import Downloader, Slot
from linkpatrol.fetch import Fetcher
from linkpatrol.model import ConfigError, Outcome, Probe, State, Task
from linkpatrol.observer import CrawlStats, Observer
from linkpatrol.parsepool import ParsePool
from linkpatrol.pipeline import Pipeline
from linkpatrol.policy import Policy
from linkpatrol.rules import (
    HTTPS_KEPT,
    MAX_REDIRECT_HOPS,
    folder_of,
    https_available,
    https_counterpart,
    may_be_soft_404,
    obeys_robots,
    probe_due,
    probe_kept,
    probe_url,
    probes_for,
    worth_second_look,
)
from linkpatrol.scheduler import Scheduler
from linkpatrol.spider import Spider
from linkpatrol.store import CrawlMemory, PassInfo, PassLimits, SiteRecord
from linkpatrol.transport import Response
from linkpatrol.urls import BadURL

T = TypeVar("T")


FLUSH_INTERVAL = 0.25
FLUSH_BATCH = 256
# outcomes written at once when the frontier is dry (new work waits on them). Each write
# is a transaction, and each transaction writes every page of the memory it changed: on a
# fast site the frontier is dry most of the time, and fewer, bigger batches write less
FLUSH_EARLY = 128
# how often a worker says it lives and learns its share of the per-host limit
HEARTBEAT_INTERVAL = 0.5
# how often a worker with nothing to claim looks again while others hold the rest
POLL_INTERVAL = 0.2


@dataclass(frozen=True, slots=True)
class CrawlResult:
    pass_info: PassInfo
    stop_reason: str | None


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Crawl:
    """One run of the engine over one pass (new or resumed)."""

    def __init__(
        self,
        settings: SiteSettings,
        store: CrawlMemory,
        observer: Observer | None = None,
        fetcher: Fetcher | None = None,
    ):
        self.settings = settings
        self.store = store
        self.observer = observer or Observer()
        self.policy = Policy(settings)
        self.rules = rule_options(settings)
        self.fetcher = make_fetcher(settings) if fetcher is None else fetcher
        self.hard_limit = settings.timeout * 2
        self.stats = CrawlStats()
        self._db = ThreadPoolExecutor(max_workers=1, thread_name_prefix="linkpatrol-store")
        self.downloader = Downloader(
            settings.concurrency, settings.per_host, settings.delay, self.fetcher, self.observer
        )
        self.pipeline = Pipeline(
            store, self._call, self.policy, self.observer, self.stats, self._wake
        )
        self.spider = Spider(self.policy, self.rules, self.pipeline, self.observer, self._site_grew)
        if wants_rendering(settings):  # the browser itself starts with the first page it renders
            from linkpatrol.render import Renderer, find_browser

            self.spider.renderer = Renderer(settings, find_browser(settings))
        self.scheduler = Scheduler(
            store,
            self._call,
            self.policy,
            self.rules,
            self.downloader,
            self.pipeline,
            settings.concurrency,
            lambda slot: self._spawn(self._load_robots(slot)),
            self._fail,
        )
        self._inflight: set[asyncio.Task[None]] = set()
        # folders' probes: what the memory has of each host's, and each folder's in this run
        self._remembered: dict[str, asyncio.Task[dict[str, Probe]]] = {}
        self._probes: dict[tuple[str, str], asyncio.Task[Probe | None]] = {}
        self._probes_made: Counter[str] = Counter()  # probes requested in this run, by host
        # the loop's wake-up: set by whatever settles or frees something, read each round
        self._woken = False
        self._waiter: asyncio.Future[None] | None = None
        self._stop_reason: str | None = None
        self._fatal: BaseException | None = None
        self._pass: PassInfo | None = None
        self._unstarted = 0
        self._budget_spent = False
        self._running: asyncio.AbstractEventLoop | None = None
        # --require-https: whether each http: origin serves https:, asked once a run
        self._https_asked: dict[str, asyncio.Task[bool]] = {}

    # ---- plumbing ------------------------------------------------------------

    def _loop_now(self) -> asyncio.AbstractEventLoop:
        """The running loop, asked for once: asyncio asks the system for the process's id
        each time it is asked (to tell a forked child), several times per URL."""
        loop = self._running
        if loop is None:
            loop = self._running = asyncio.get_running_loop()
        return loop

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a store call on the store's own thread, never on the event loop."""
        return await self._loop_now().run_in_executor(self._db, fn, *args)

    def _wake(self) -> None:
        """Have the loop run a round now (or as soon as the one running ends)."""
        self._woken = True
        if self._waiter is not None:
            _resolve(self._waiter)

    async def _sleep(self, wait: float) -> None:
        """Until a wake-up (none waits if one came during the round) or for ``wait``
        seconds: a future and a timer, which cost a third of an Event in a timeout."""
        if self._woken:
            return
        loop = self._loop_now()
        waiter = self._waiter = loop.create_future()
        timer = loop.call_later(wait, _resolve, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None

    def _tell_outage(self, said: str) -> None:
        """Say on the loop's thread, while it runs, that the memory lost its database."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: the crawl is over
            self._loop_now().call_soon_threadsafe(self.observer.note, said)

    def stop(self, reason: str) -> None:
        """Stop taking new work (a signal, --max-time, --max-requests)."""
        if self._stop_reason is None:
            self._stop_reason = reason
        self.store.stop_waiting()
        self._wake()

    # ---- the run -------------------------------------------------------------------

    async def run(self) -> CrawlResult:
        started = time.monotonic()
        now = time.time()
        start_urls = self._start_urls()
        parser = self.spider.parser = ParsePool(self.settings, self.hard_limit, self._loop_now())
        parser.start()
        self.store.on_outage(self._tell_outage)
        try:
            self._pass = await self._call(
                self.store.begin_pass,
                start_urls,
                now,
                PassLimits(
                    self.settings.max_urls,
                    self.settings.max_similar,
                    self.settings.max_requests,
                    self.settings.max_time,
                ),
                report_options(self.settings),
                self.settings.inputs,
            )
            pass_id = self._pass.id
            self.observer.pass_started(self._pass)
            seeds = [(u, self.policy.action(u)) for u in start_urls]
            await self._call(self.store.seed, pass_id, seeds, now)
            self.spider.roots = set(start_urls)
            if self.policy.add_sites(self._pass.sites):  # grown in an earlier run
                parser.grow(self.policy.grown)
            if self._pass.resumed:  # the hosts warned of, and the start URLs' redirects
                warned = await self._call(self.store.certificates_warned, pass_id)
                self.spider.cert_warned.update(warned)
                redirects = await self._call(self.store.redirects, pass_id)
                for url in start_urls:
                    for _ in range(MAX_REDIRECT_HOPS):
                        if url not in redirects:
                            break
                        target = redirects[url][1]
                        self.spider.extend_site(url, target)
                        url = target
        except BaseException:
            parser.close()
            self._db.shutdown(wait=True)
            raise
        timer = None
        if self.settings.max_time > 0:  # per run, so the same command resumes and progresses
            timer = self._loop_now().call_later(self.settings.max_time, self.stop, "max-time")
        complete = False
        try:
            complete = await self._loop(pass_id)
        finally:
            if timer is not None:
                timer.cancel()
            side = [*self._remembered.values(), *self._probes.values()]
            for task in [*self._inflight, *side]:
                task.cancel()
            if self._inflight or side:
                await asyncio.gather(*self._inflight, *side, return_exceptions=True)
            try:
                if self.spider.renderer is not None:
                    await self.spider.renderer.close()
                await self.fetcher.close()
            finally:
                # else parse workers left running would keep the process from exiting
                parser.close()
            try:
                await self._flush(pass_id, final=True)
                if complete:
                    await self._finish_redirects(pass_id)
                info = await self._call(
                    self.store.end_run,
                    pass_id,
                    time.monotonic() - started,
                    time.time(),
                    complete,
                    None if complete else (self._stop_reason or "error"),
                    self.downloader.usage,
                )
            finally:
                self._db.shutdown(wait=True)
        if self._fatal is not None:
            raise self._fatal
        return CrawlResult(info, None if complete else self._stop_reason)

    def _start_urls(self) -> list[str]:
        urls = []
        for raw in self.settings.start_urls:
            try:
                urls.append(self.policy.normalize(raw))
            except BadURL as exc:
                raise ConfigError(f"start URL {raw!r}: {exc}") from None
        return list(dict.fromkeys(urls))

    async def _loop(self, pass_id: int) -> bool:
        """Dispatch requests, and keep the memory in step without waiting for it.

        Every write and read of the memory (a batch of outcomes, a claim, a heartbeat, a
        count) runs as a background job, one at a time, as the store has one thread: the
        requests go on while the memory writes, which on a big site takes longer than
        the requests themselves.
        """
        last_flush = time.monotonic()
        last_progress = 0.0
        last_beat = -HEARTBEAT_INTERVAL
        claim_empty = False
        finished = False
        poll_after = 0.0  # others hold the rest of the frontier: look again after this
        job: asyncio.Task[None] | None = None

        async def flush() -> None:
            nonlocal claim_empty
            await self._flush(pass_id)
            claim_empty = False

        async def claim(busy: list[str]) -> None:
            nonlocal claim_empty
            claim_empty = not await self.scheduler.claim(pass_id, busy)

        async def progress() -> None:
            self.stats.queued = await self._call(self.store.pending, pass_id)
            self.stats.requests = self.fetcher.requests + self.pipeline.extra_requests
            self.observer.progress(self.stats)

        async def check_done() -> None:
            # the pass is complete once its frontier is empty; until then other workers
            # hold the rest, and their leases end with them or expire
            nonlocal finished, claim_empty, poll_after
            if await self._call(self.store.pending, pass_id) == 0:
                finished = True
            else:
                claim_empty = False
                self.scheduler.dry = None
                poll_after = time.monotonic() + POLL_INTERVAL

        try:
            while True:
                # cleared before the work, so whatever this round settles wakes the next
                self._woken = False
                if job is not None and job.done():
                    done, job = job, None
                    done.result()
                if finished:
                    return True
                if self._fatal is not None or self._stop_reason is not None:
                    return False
                now = time.monotonic()
                if job is None:
                    idle = (
                        not self._inflight
                        and not self.pipeline.outcomes
                        and self.scheduler.held == 0
                    )
                    wants_claim = (
                        self.downloader.share
                        and not claim_empty
                        and self.scheduler.held < self.scheduler.window
                        and now >= poll_after
                    )
                    busy = self.downloader.busy_origins() if wants_claim else []
                    if (
                        wants_claim
                        and self.scheduler.dry is not None
                        and self.scheduler.dry.issubset(busy)
                    ):
                        # alone, every host the frontier may hold unleased URLs of is
                        # busy: a claim would scan it for nothing (a big site's costliest
                        # query)
                        claim_empty, wants_claim = True, False
                    # batch writes while there is other work at hand. Once the frontier
                    # is dry, new work can only come from these outcomes: a batch of them
                    # is written while the URLs at hand last, not once they have run out
                    # (the requests would stop while the memory writes), and the last
                    # ones at once.
                    due = claim_empty and (
                        self.scheduler.held == 0 or len(self.pipeline.outcomes) >= FLUSH_EARLY
                    )
                    step: Coroutine[Any, Any, None] | None = None
                    if self.pipeline.outcomes and (
                        due
                        or len(self.pipeline.outcomes) >= FLUSH_BATCH
                        or now - last_flush >= FLUSH_INTERVAL
                    ):
                        last_flush = now
                        step = flush()
                    elif now - last_beat >= HEARTBEAT_INTERVAL:
                        last_beat = now
                        step = self._heartbeat(pass_id)
                    elif wants_claim:
                        step = claim(busy)
                    elif now - last_progress >= 0.5:
                        last_progress = now
                        step = progress()
                    elif (claim_empty or not self.downloader.share) and idle and now >= poll_after:
                        step = check_done()
                    if step is not None:
                        job = self._loop_now().create_task(step)
                        job.add_done_callback(lambda _: self._wake())
                self._dispatch()
                self.downloader.sample(time.monotonic(), len(self._inflight), self.stats.queued)
                self.stats.waiting = self.downloader.waiting
                if self._budget_spent and not self._inflight and not self.pipeline.outcomes:
                    self.stop("max-requests")
                    continue
                wait = self.downloader.next_wait(FLUSH_INTERVAL)
                if poll_after > now:
                    wait = min(wait, max(poll_after - now, 0.001))
                await self._sleep(wait)
        finally:
            if job is not None:
                # a batch half written or a claim half taken is finished, not dropped
                await asyncio.wait([job])
                if not job.cancelled() and (error := job.exception()) is not None:
                    raise error

    # ---- the crew: workers sharing the pass ---------------------------------------------

    async def _heartbeat(self, pass_id: int) -> None:
        """Say this worker lives, and take its share of the per-host limit.

        In a crew a worker keeps only what it can start soon, and a worker left without
        a share keeps nothing: what it hands back is for the others.
        """
        share, workers, rank = await self._call(
            self.store.heartbeat,
            time.time(),
            self.stats.done,
            self.downloader.busiest(),
            self.settings.per_host,
        )
        self.downloader.share, self.downloader.workers, self.downloader.rank = share, workers, rank
        if workers > 1:  # another worker may have seen the site grow
            grown = await self._call(self.store.sites, pass_id)
            if self.policy.add_sites(grown) and self.spider.parser is not None:
                self.spider.parser.grow(self.policy.grown)
        await self.scheduler.crew(pass_id, share, workers)

    def _dispatch(self) -> None:
        now = time.monotonic()
        for slot in self.downloader.due(now, self._inflight):
            if self._out_of_requests():
                return
            task = self.scheduler.take(slot)
            verdict = None
            if obeys_robots(task.url, self.rules):
                verdict = self.downloader.robots_verdict(slot, task)
            if verdict is not None:
                self.pipeline.settle(task, verdict)
                continue
            load = self.downloader.start(slot, now)
            self._unstarted += 1
            self._spawn(self._work(task, slot, load))

    def _out_of_requests(self) -> bool:
        """--max-requests reached: start nothing new; the run stops once in-flight work ends."""
        limit = self.settings.max_requests
        if limit and self.fetcher.requests + self._unstarted >= limit:
            self._budget_spent = True
        return self._budget_spent

    def _spawn(self, coro: Any) -> None:
        task = self._loop_now().create_task(coro)
        self._inflight.add(task)
        self.stats.in_flight = len(self._inflight)

        def done(t: asyncio.Task[None]) -> None:
            self._inflight.discard(t)
            self.stats.in_flight = len(self._inflight)
            if not t.cancelled() and t.exception() is not None:
                self._fail(t.exception())  # type: ignore[arg-type]
            self._wake()

        task.add_done_callback(done)

    def _fail(self, exc: BaseException) -> None:
        if self._fatal is None:
            self._fatal = exc
        self._wake()

    async def _flush(self, pass_id: int, final: bool = False) -> None:
        self.scheduler.queued(await self.pipeline.flush(pass_id, final))

    async def _load_robots(self, slot: Slot) -> None:
        async def remembered(origin: str) -> SiteRecord | None:
            return await self._call(self.store.site, origin)

        async def keep(record: SiteRecord) -> None:
            await self._call(self.store.save_site, record)

        obey = obeys_robots(slot.origin + "/", self.rules)
        requests = await self.downloader.load_robots(slot, obey, remembered, keep)
        self.pipeline.extra_requests += requests

    async def _https_available(self, task: Task, slot: Slot, outcome: Outcome) -> None:
        """A good http: URL whose host serves https: too is a warning (--require-https)."""
        counterpart = https_counterpart(task.url)
        if counterpart is None:
            return
        asked = self._https_asked.get(task.origin)
        if asked is None:
            asked = self._loop_now().create_task(self._ask_https(slot, task.origin, counterpart))
            self._https_asked[task.origin] = asked
        verdict = https_available(outcome.state, task.url, await asyncio.shield(asked))
        if verdict is not None:
            outcome.state, outcome.reason, outcome.error = verdict

    async def _ask_https(self, slot: Slot, origin: str, counterpart: str) -> bool:
        """Whether the http: origin serves https:: from the memory while fresh, else asked
        with the https: counterpart of its first URL checked, and kept."""
        served = await self._call(self.store.https_served, origin, time.time() - HTTPS_KEPT)
        if served is None:
            served, requests = await self.downloader.ask_https(slot, counterpart)
            self.pipeline.extra_requests += requests
            await self._call(self.store.save_https_served, origin, served, time.time())
        return served

    async def _work(self, task: Task, slot: Slot, load: int) -> None:
        self._unstarted -= 1  # the fetch below counts its request before it first yields
        probe: Probe | None = None

        async def probe_folder(response: Response) -> None:
            nonlocal probe
            folder = folder_of(task.url)
            if folder is not None and may_be_soft_404(response.status, response.content_type):
                probe = await self._folder_probe(slot, *folder)

        after = probe_folder if probes_for(task.action, self.rules) else None
        try:
            fetched = await self.downloader.fetch(task, slot, self.rules, load, after)
        finally:
            self._wake()
        response, requests = fetched.response, fetched.requests
        if fetched.again:
            self.pipeline.extra_requests += requests
            self.scheduler.again(slot, task)
            return
        outcome = await self.spider.judge(task, task.action, response, probe)
        if self.rules.require_https and outcome.state is State.OK:
            await self._https_available(task, slot, outcome)
        if fetched.limited is not None and outcome.error is not None:
            outcome.error = f"{outcome.error}: {fetched.limited}"
        pause = self.settings.second_look
        if pause > 0 and worth_second_look(
            outcome.state, response.status, response.transient, fetched.limited
        ):
            outcome.look_again_at = time.time() + pause
        outcome.requests = requests
        outcome.fetched = True
        outcome.response_ms = response.elapsed * 1000
        self.pipeline.settle(task, outcome)

    # ---- folders' probes (soft 404s) -----------------------------------------------------

    async def _folder_probe(self, slot: Slot, origin: str, folder: str) -> Probe | None:
        """How the folder answers a name that cannot exist: from the memory while fresh,
        else asked once in the run, by the first of its URLs to need it (the others
        wait for it)."""
        key = (origin, folder)
        if key not in self._probes:
            self._probes[key] = self._loop_now().create_task(self._probe(slot, origin, folder))
        return await asyncio.shield(self._probes[key])

    async def _probe(self, slot: Slot, origin: str, folder: str) -> Probe | None:
        if origin not in self._remembered:
            self._remembered[origin] = self._loop_now().create_task(self._remembered_probes(origin))
        known = (await asyncio.shield(self._remembered[origin])).get(folder)
        limit = self.settings.max_requests
        if not probe_due(known, time.time(), self._probes_made[origin]) or (
            limit and self.fetcher.requests + self._unstarted >= limit
        ):
            return known  # fresh, past the run's probes or --max-requests: as old as it is
        self._probes_made[origin] += 1
        url = probe_url(origin, folder, "lp-" + os.urandom(12).hex())
        response = await self.downloader.probe(slot, url, obeys_robots(url, self.rules))
        if response is None:
            return None
        self.pipeline.extra_requests += response.attempts
        probe = await self.spider.probed(origin, folder, url, response)
        if not probe_kept(probe.status):
            return None
        await self._call(self.store.save_probe, probe)
        return probe

    async def _remembered_probes(self, origin: str) -> dict[str, Probe]:
        return {probe.folder: probe for probe in await self._call(self.store.probes, origin)}

    def _site_grew(self) -> None:
        """The site grew (a start URL redirected): for the parse workers, and, kept with
        the pass, for other workers and runs."""
        grown = self.policy.grown
        if self.spider.parser is not None:
            self.spider.parser.grow(grown)
        if self._pass is not None:
            kept = self._loop_now().run_in_executor(
                self._db, self.store.extend_site, self._pass.id, grown
            )
            kept.add_done_callback(self._written)

    def _written(self, done: asyncio.Future[Any]) -> None:
        if not done.cancelled() and (error := done.exception()) is not None:
            self._fail(error)

    async def _finish_redirects(self, pass_id: int) -> None:
        redirects = await self._call(self.store.redirects, pass_id)
        outcomes = self.spider.broken_chains(redirects)
        if outcomes:
            await self._call(self.store.complete, pass_id, outcomes, time.time(), 0)
