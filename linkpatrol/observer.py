"""What a crawl tells the world as it goes: the command line shows it, plugins may react.

Kept apart from the engine so that the classes built on it (the console, the plugins'
host, a user's own) may subclass it whichever way the engine itself is built.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from linkpatrol.store import Outcome, PassInfo


@dataclass(slots=True)
class CrawlStats:
    """Running figures for the progress display and the summary."""

    done: int = 0
    queued: int = 0
    broken: int = 0
    requests: int = 0
    in_flight: int = 0
    waiting: int = 0  # free fetch slots whose next URL waits for its host's turn
    started: float = field(default_factory=time.monotonic)

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.requests / elapsed if elapsed > 0 else 0.0


class Observer:
    """Receives what the crawl does; every method does nothing unless overridden."""

    def pass_started(self, info: PassInfo) -> None:
        pass

    def url_checked(self, url: str, outcome: Outcome) -> None:
        pass

    def requesting(self, method: str, url: str, why: str) -> None:
        pass

    def progress(self, stats: CrawlStats) -> None:
        pass

    def note(self, message: str) -> None:
        pass
