"""Plugins: code of your own that follows a crawl and adds to its report.

A plugin is a subclass of :class:`Plugin` that overrides the events it cares about; every
event does nothing by default. linkpatrol calls them in the crawl process, in this order:

1. :meth:`Plugin.pass_started` once, when this run of a pass begins (new or resumed);
2. for every URL given a verdict, :meth:`Plugin.url_checked`; when that URL is a page
   fetched and parsed in this run, :meth:`Plugin.page_parsed` with all its links right
   after, then :meth:`Plugin.url_discovered` once per link, in page order;
3. :meth:`Plugin.pass_finished` once, when the run ends (complete or stopped), with the
   report of the whole pass as the memory holds it;
4. :meth:`Plugin.report_fields`, whose answer the memory keeps with the pass and every
   report format shows under the plugin's name.

The events of step 2 are what this process saw: a page unchanged since the last pass
(answered 304 Not Modified) is not parsed again, so it has no ``page_parsed``; its links
come from the memory and are in the report given to ``pass_finished``, which also holds
the work of earlier runs of a resumed pass and of other workers sharing it. What must be
complete belongs there; the events suit what happens as it happens.

The crawl events (steps 1 and 2) are called on the crawl's event loop and must return
quickly: a slow event slows the crawl. ``pass_finished`` is called after the crawl, outside
the event loop, and may take its time (``asyncio.run`` of its own, say). A plugin that
raises is reported once, disabled for the rest of the run, and the crawl goes on.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from linkpatrol.model import Action, State
from linkpatrol.store import Discovered as Link
from linkpatrol.store import Outcome, PassInfo

if TYPE_CHECKING:
    from linkpatrol.report import Report

GROUP = "linkpatrol.plugins"  # the entry point group installed plugins register in


@dataclass(frozen=True, slots=True)
class Verdict:
    """What became of one URL in this pass."""

    state: State
    status: int | None  # the HTTP status of its last response; None without one
    error: str | None  # why it is broken or a warning, in words
    action: Action  # what was done with it: parse, check or record
    redirect_to: str | None = None  # where a redirect points
    requested: bool = False  # False: decided without a request (a mailto:, a limit, robots.txt)

    @staticmethod
    def of(outcome: Outcome) -> Verdict:
        return Verdict(
            state=outcome.state,
            status=outcome.http_status,
            error=outcome.error,
            action=outcome.action,
            redirect_to=outcome.redirect_to,
            requested=outcome.fetched,
        )


class Plugin:
    """The base of every plugin: override the events you need.

    linkpatrol makes one instance per run, calling the class with the plugin's options
    table from the configuration (``[plugin.NAME]``; an empty dict when there is none).
    A constructor that rejects its options raises ``ValueError`` with the reason: the
    run then stops before any request with one line and exit code 2.
    """

    name: str = ""  # the name the plugin was enabled by; its report fields go under it
    _say: Callable[[str], None] | None = None

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.options: dict[str, Any] = dict(options or {})

    def note(self, message: str) -> None:
        """Tell whoever runs linkpatrol something: one line on stderr (and in ``--log``)."""
        if self._say is not None:
            self._say(message)
        else:
            sys.stderr.write(f"linkpatrol: plugin {self.name}: {message}\n")

    # ---- events ------------------------------------------------------------------------

    def pass_started(self, info: PassInfo) -> None:
        """This run of a pass begins; ``info.resumed`` says whether an earlier run stopped."""

    def url_checked(self, url: str, verdict: Verdict) -> None:
        """A URL got its verdict in this run (with or without a request)."""

    def page_parsed(self, page: str, links: Sequence[Link]) -> None:
        """A page fetched and parsed in this run, with every link on it, in page order.

        A :class:`Link` has ``url`` (canonical; as written when ``invalid`` says why it is
        no URL), ``line``, ``action`` (``record`` for ``mailto:`` and other schemes),
        ``invalid`` and ``fragment`` (the ``#name`` part, without ``#``, or None).
        """

    def url_discovered(self, page: str, link: Link) -> None:
        """One link found on a page parsed in this run: each occurrence, not only the first."""

    def pass_finished(self, info: PassInfo, report: Report) -> None:
        """This run ends; ``info.complete`` says whether the pass is. ``report`` is the
        pass as the memory holds it, every earlier run and worker included; it is the
        report linkpatrol prints next, so read it, never change it."""

    def report_fields(self) -> Mapping[str, Any] | None:
        """What to add to the pass's report: a JSON-able mapping, or None for nothing.

        Asked once, after :meth:`pass_finished`. The memory keeps the answer with the pass
        (a later run of the same pass replaces it), so ``linkpatrol report`` shows it too.
        """
        return None


__all__ = ["GROUP", "Link", "Plugin", "Verdict"]
