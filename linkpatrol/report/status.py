"""Where the latest pass stands, read from the memory while a crawl may be writing it."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from linkpatrol.model import State, StoreError, duration_text
from linkpatrol.report import iso
from linkpatrol.store import PassInfo, ReadMemory, WorkerInfo, starts_named


@dataclass(frozen=True, slots=True)
class PassStatus:
    info: PassInfo
    pending: int  # URLs discovered and still waiting for a verdict
    verdicts: dict[State, int]  # verdicts given so far in this pass
    workers: tuple[WorkerInfo, ...] = ()  # the crawlers at work on it now
    now: float | None = None  # when it was read (None: take the figures as kept)

    @property
    def done(self) -> int:
        return max(0, self.info.seen - self.pending)

    @property
    def fraction(self) -> float:
        """How much of what is known of the pass is done (it grows as links are found)."""
        return 1.0 if self.info.complete or not self.info.seen else self.done / self.info.seen

    @property
    def phase(self) -> str:
        if self.info.complete:
            return "complete"
        if self.info.stopped_at is not None:
            return f"stopped by {self.info.stop_reason}" if self.info.stop_reason else "stopped"
        if self.workers:
            return "running"
        return "cut off (no crawler at work: run the same check again to resume)"

    @property
    def elapsed(self) -> float:
        """Seconds of crawling: the runs that ended, and the one under way since its
        first worker started."""
        if self.now is None or not self.workers or self.info.complete:
            return self.info.elapsed
        return self.info.elapsed + max(0.0, self.now - min(w.started_at for w in self.workers))


def pass_status(store: ReadMemory, info: PassInfo | None = None) -> PassStatus:
    """Where a pass stands (by default the latest)."""
    info = info or store.latest_pass()
    if info is None:
        raise StoreError(f"{store.location}: no pass recorded yet (run 'linkpatrol check' first)")
    return PassStatus(
        info,
        store.pending(info.id),
        store.verdicts(info.id),
        tuple(w for w in store.workers() if w.pass_id == info.id),
        time.time(),
    )


def status_dict(status: PassStatus) -> dict[str, Any]:
    info = status.info
    return {
        "pass": info.id,
        "start_urls": list(info.start_urls),
        "inputs": list(info.inputs),
        "phase": status.phase,
        "complete": info.complete,
        "started_at": iso(info.started_at),
        "finished_at": iso(info.finished_at or info.stopped_at),
        "seen": info.seen,
        "done": status.done,
        "pending": status.pending,
        "requested": info.requested,
        "parsed": info.parsed,
        "requests": info.requests,
        "elapsed": round(status.elapsed, 3),
        "verdicts": {state.value: status.verdicts.get(state, 0) for state in State},
        "reported": {"broken": info.broken, "warnings": info.warnings},
        "options": info.options.as_dict() if info.options is not None else None,
        "workers": [
            {
                "id": w.id,
                "host": w.host,
                "pid": w.pid,
                "since": iso(w.started_at),
                "heartbeat": iso(w.heartbeat),
                "done": w.done,
                "max_requests": w.max_requests or None,
                "max_time": w.max_time or None,
            }
            for w in status.workers
        ],
    }


def render_status_text(status: PassStatus) -> str:
    info = status.info
    verdicts = ", ".join(
        f"{status.verdicts[state]} {state.value}" for state in State if status.verdicts.get(state)
    )
    workers = "".join(
        f"    {w.id} on {w.host}, pid {w.pid}: since {iso(w.started_at)}, "
        f"last heartbeat {iso(w.heartbeat)}, {w.done} URLs done{_budget(w)}\n"
        for w in status.workers
    )
    return (
        f"pass {info.id} of {', '.join(starts_named(info.inputs, info.start_urls))}: "
        f"{status.phase}\n"
        f"  started {iso(info.started_at)}, {status.elapsed:.1f} s crawling"
        f"{'' if info.complete else ' so far'}\n"
        f"  {status.done} of {info.seen} URLs done ({status.fraction:.0%}), "
        f"{status.pending} waiting\n"
        f"  {info.requested} requested, {info.parsed} parsed, {info.requests} requests\n"
        f"  verdicts: {verdicts or 'none yet'}\n"
        + _reported(info)
        + (f"  workers ({len(status.workers)}):\n{workers}" if status.workers else "")
    )


def _budget(worker: WorkerInfo) -> str:
    """A worker's own limits (each worker has its own): when it stops, if it stops early."""
    limits = []
    if worker.max_requests:
        limits.append(f"stops after {worker.max_requests} requests (--max-requests)")
    if worker.max_time:
        limits.append(f"stops after {duration_text(worker.max_time)} (--max-time)")
    return "; " + ", ".join(limits) if limits else ""


def _reported(info: PassInfo) -> str:
    """What the pass's report named, once a run of it ended, and what shaped it."""
    if info.broken is None:
        return ""
    flags = info.options.flags() if info.options is not None else []
    return (
        f"  reported: {info.broken} broken, {info.warnings or 0} warnings"
        + (f" (checked with {' '.join(flags)})" if flags else "")
        + "\n"
    )


def render_status_json(status: PassStatus) -> str:
    return json.dumps(status_dict(status), ensure_ascii=False) + "\n"
