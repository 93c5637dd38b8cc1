"""The speed and memory targets set for linkpatrol on real sites, held against one
benchmark's figures and against the floor (``floor.py --site-only``: the least a crawler
built on linkpatrol's libraries takes on the same site).

A target is *met* when linkpatrol's figure is within its limit, and *reachable* when the
floor's own time is: a limit below the floor is out of reach of any crawler on these
libraries, however little it does. Beside a time target stand linkpatrol's fixed costs at
either end (from its start to the server's first answer, and from the last answer to its
exit): what of its time is not the crawl. Plain data in, plain data out: ``docsites.py
--targets`` measures, this module judges and prints.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# the link checkers linkpatrol is to take half the time of (the faster of them)
PEERS = ("linklint", "linkinator")
# the plain recursive fetch, with no checking, linkpatrol is to stay within 4 times of
FETCH = "wget2"
# linkpatrol run without --check-anchors, for what checking anchors costs
WITHOUT_ANCHORS = "linkpatrol-no-anchors"
# the small sites, to be checked no slower than linklint
SMALL = ("git",)
MEMORY_MB = 120.0  # the process tree's peak, PSS
ANCHORS_COST = 1.2  # --check-anchors over without
PEER_SHARE = 0.5  # of the faster peer's wall time
FETCH_TIMES = 4.0  # wget2 --spider's wall time


@dataclass(frozen=True)
class Run:
    """One tool's run on one site: its wall time, its process tree's PSS peak, and its
    fixed costs at either end (before the server's first answer and after its last)."""

    wall: float
    pss_mb: float | None = None
    ends: float | None = None


@dataclass(frozen=True)
class Target:
    site: str
    point: int  # of the list of what to build
    what: str
    value: float  # linkpatrol's figure
    limit: float  # the target's
    unit: str
    floor: float | None = None  # the floor's figure for the same thing, where one applies
    ends: float | None = None  # of linkpatrol's time, its start and its end

    @property
    def met(self) -> bool:
        return self.value <= self.limit

    @property
    def reachable(self) -> bool | None:
        """Whether the floor is within the limit; None where no floor applies."""
        return None if self.floor is None else self.floor <= self.limit


def median(values: Iterable[float | None]) -> float | None:
    """The median of the figures measured (None: not measured); None if there are none."""
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


def _wall(tools: Mapping[str, Sequence[Run]], tool: str) -> float | None:
    return median(r.wall for r in tools.get(tool, ()))


def targets(
    runs: Mapping[str, Mapping[str, Sequence[Run]]], floors: Mapping[str, Sequence[float]]
) -> list[Target]:
    """Every target that the figures of ``runs`` (site -> tool -> runs) allow judging,
    site by site; the floor's walls (site -> runs) where it was measured."""
    found: list[Target] = []
    for site, tools in runs.items():
        wall = functools.partial(_wall, tools)
        ours = wall("linkpatrol")
        if ours is None:
            continue
        floor = median(floors.get(site, ()))
        ends = median(r.ends for r in tools.get("linkpatrol", ()))
        plain = wall(WITHOUT_ANCHORS)
        if plain:
            found.append(
                Target(site, 2, "--check-anchors over without", ours / plain, ANCHORS_COST, "x")
            )
        if site in SMALL and (peer := wall("linklint")) is not None:
            found.append(Target(site, 3, "no slower than linklint", ours, peer, "s", floor, ends))
        peers = [w for p in PEERS if (w := wall(p)) is not None]
        if peers:
            limit = PEER_SHARE * min(peers)
            found.append(Target(site, 5, "half the faster peer", ours, limit, "s", floor, ends))
        if (fetch := wall(FETCH)) is not None:
            limit = FETCH_TIMES * fetch
            found.append(Target(site, 5, "4 times wget2 --spider", ours, limit, "s", floor, ends))
        if (pss := median(r.pss_mb for r in tools.get("linkpatrol", ()))) is not None:
            found.append(Target(site, 5, "tree peak, PSS", pss, MEMORY_MB, "MB"))
    return found


def _figure(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "x":
        return f"{value:.2f}x"
    return f"{value:.1f} {unit}" if unit == "MB" else f"{value:.2f} {unit}"


def table(found: Sequence[Target]) -> str:
    """The targets as a Markdown table."""
    lines = [
        "| site | point | target | linkpatrol | limit | met | the floor "
        "| within reach of the floor | of linkpatrol's time, its start and end |",
        "|---|---:|---|---:|---:|---|---:|---|---:|",
    ]
    for t in found:
        reach = {None: "—", True: "yes", False: "no: the limit is below the floor"}[t.reachable]
        lines.append(
            f"| {t.site} | {t.point} | {t.what} | {_figure(t.value, t.unit)} "
            f"| {_figure(t.limit, t.unit)} | {'yes' if t.met else 'no'} "
            f"| {_figure(t.floor, t.unit)} | {reach} | {_figure(t.ends, t.unit)} |"
        )
    return "\n".join(lines)
