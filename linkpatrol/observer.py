"""What a crawl tells the world as it goes: the command line shows it, plugins may react.

Kept apart from the engine so that the classes built on it (the console, the plugins'
host, a user's own) may subclass it whichever way the engine itself is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from linkpatrol.crawl import CrawlStats
    from linkpatrol.store import Outcome, PassInfo


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
