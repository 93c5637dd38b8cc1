"""The spider: what an answer means for the crawl, and where it leads.

An answer is judged by the rule book; a page it carries goes to the parse workers for its
links; a redirect becomes a page with one link, its target; a start URL that redirects
on its own host takes the site with it. A host whose certificate ends soon is warned of
once in a run, on its first good answer (the memory keeps it to one per pass).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from linkpatrol.fingerprint import look_of
from linkpatrol.model import (
    HTML_TYPES,
    RENDERED,
    Action,
    Discovered,
    Outcome,
    Probe,
    Reason,
    State,
    Task,
)
from linkpatrol.observer import Observer
from linkpatrol.parsepool import ParseFailure, ParsePool
from linkpatrol.pipeline import Pipeline
from linkpatrol.policy import Policy
from linkpatrol.rules import (
    RuleOptions,
    Verdict,
    expiring_certificate,
    follows_ghost,
    judge,
    judge_page,
    judge_redirect,
    judge_soft_404,
    parse_failed,
    redirect_failures,
    render_failed,
    unchanged_status,
    wants_anchors,
)
from linkpatrol.transport import Response
from linkpatrol.urls import BadURL

if TYPE_CHECKING:
    from linkpatrol.render import Renderer


class Spider:
    """Judges the answers of one run and follows what they link to."""

    def __init__(
        self,
        policy: Policy,
        rules: RuleOptions,
        pipeline: Pipeline,
        observer: Observer,
        site_grew: Callable[[], None],
    ) -> None:
        self.policy = policy
        self.rules = rules
        self.pipeline = pipeline
        self.observer = observer
        self._site_grew = site_grew  # told when a start URL took the site elsewhere
        self.parser: ParsePool | None = None  # the run's parse workers, once started
        self.roots: set[str] = set()  # the start URLs, and where they redirected
        self.cert_warned: set[str] = set()  # origins warned of their certificate's end
        self.renderer: Renderer | None = None  # with --render: the browser's pages

    async def judge(
        self, task: Task, action: Action, response: Response, probe: Probe | None = None
    ) -> Outcome:
        """The outcome of a URL requested as ``action``, from its last answer; a good one
        that is what its folder answered the ``probe`` is a soft 404; the first good
        answer of a host whose certificate ends soon is a warning."""
        outcome = await self._judge(task, action, response)
        if probe is not None and outcome.state in (State.OK, State.REDIRECT):
            look = None
            if probe.look is not None and self._looked_at(response):
                assert response.body is not None
                look = await asyncio.to_thread(look_of, response.body, response.charset, task.url)
            verdict = judge_soft_404(probe, response.status, outcome.redirect_to, look)
            if verdict is not None:
                outcome.state, outcome.reason, outcome.error = verdict
        expires = response.cert_expires
        if expires is not None and task.origin not in self.cert_warned:
            host = task.origin.partition("://")[2]
            days = self.rules.cert_expiry
            warning = expiring_certificate(outcome.state, host, expires, time.time(), days)
            if warning is not None:
                self.cert_warned.add(task.origin)
                outcome.state, outcome.reason, outcome.error = warning
        return outcome

    async def _judge(self, task: Task, action: Action, response: Response) -> Outcome:
        outcome = Outcome(
            task.url_id,
            action,
            State.BROKEN,
            http_status=response.status,
            content_type=response.content_type,
            etag=response.etag,
            last_modified=response.last_modified,
        )
        status = response.status
        failure = None
        if status is None:
            failure = Verdict(State.BROKEN, response.reason or Reason.CONNECTION, response.error)
        # a stylesheet or a PDF has links but no anchors: it is read only when it is the
        # site's; a page only checked (read whole for a soft 404) only for its anchors
        readable = action is Action.PARSE and response.has_links
        readable = readable or (
            response.is_page and wants_anchors(task.url, self.rules.check_anchors)
        )
        judged = judge(status, failure, response.body is not None and readable, self.rules)
        outcome.state, outcome.reason, outcome.error = judged.verdict
        if judged.ghost and follows_ghost(task, time.time(), self.rules):
            self.pipeline.remembered(task, outcome)
        if judged.unchanged:  # the page still is what it was, status included
            outcome.content_type = task.content_type
            if (before := unchanged_status(task)) is not None:
                outcome.http_status = before
            if action is Action.PARSE:
                self.pipeline.remembered(task, outcome)
        elif judged.redirect:
            return self._redirect(task, outcome, response)
        elif judged.parse:
            assert self.parser is not None and response.body is not None
            try:
                page = await self.parser.parse(
                    task.url, response.body, response.charset, response.content_type
                )
            except ParseFailure as exc:
                outcome.state, outcome.reason, outcome.error = parse_failed(str(exc))
                return outcome
            if response.is_page:
                outcome.anchors = page.anchors
                outcome.heading_ids = page.heading_ids
            if action is not Action.PARSE:  # read for its anchors only
                return outcome
            outcome.links = page.links
            outcome.base_url = page.base_url
            outcome.parsed = True
            outcome.good_links = outcome.state is State.OK
            judged_page = judge_page(outcome.state, response.truncated, self.rules)
            outcome.state, outcome.reason, outcome.error = judged_page
            if self.renderer is not None and response.content_type in HTML_TYPES:
                await self._rendered(task.url, outcome)
        return outcome

    async def _rendered(self, url: str, outcome: Outcome) -> None:
        """Add the links and anchors only the page's rendered DOM holds; a page the
        browser could not render is a warning."""
        from linkpatrol.render import RenderFailure  # a check that renders has it already

        assert self.renderer is not None and self.parser is not None
        if not self.renderer.wants(url):
            return
        try:
            rendered = await self.renderer.render(url)
            page = await self.parser.parse(rendered.url, rendered.html, "utf-8", "text/html")
        except (RenderFailure, ParseFailure) as exc:
            verdict = Verdict(outcome.state, outcome.reason, outcome.error)
            outcome.state, outcome.reason, outcome.error = render_failed(verdict, str(exc))
            return
        outcome.links = [*(outcome.links or ()), *only_rendered(outcome.links or (), page.links)]
        outcome.anchors = (outcome.anchors or frozenset()) | page.anchors

    @staticmethod
    def _looked_at(response: Response) -> bool:
        """An answer whose look is compared with a probe's: an HTML page's."""
        return response.body is not None and response.content_type in HTML_TYPES

    async def probed(self, origin: str, folder: str, url: str, response: Response) -> Probe:
        """A folder's probe, from its answer to ``url``: where a redirect leads, what a
        page looks like."""
        status = response.status
        target = look = None
        if status is not None and 300 <= status < 400 and response.location:
            try:
                target = self.policy.normalize(response.location.strip(), url)
            except BadURL:
                target = None
        elif self._looked_at(response):
            assert response.body is not None
            look = await asyncio.to_thread(look_of, response.body, response.charset, url)
        return Probe(origin, folder, status, time.time(), target, look)

    def _redirect(self, task: Task, outcome: Outcome, response: Response) -> Outcome:
        status = response.status or 0
        location = response.location.strip() if response.location else None
        target = invalid = None
        if location:
            try:
                target = self.policy.normalize(location, task.url)
            except BadURL as exc:
                invalid = str(exc)
        outcome.state, outcome.reason, outcome.error = judge_redirect(
            task.url, status, location, target, invalid
        )
        if target is None:
            return outcome
        outcome.redirect_to = target
        if outcome.reason is Reason.REDIRECT_LOOP:
            return outcome
        self.extend_site(task.url, target)
        action = self.policy.action(target)
        outcome.links = [] if action is Action.IGNORE else [Discovered(target, None, action)]
        return outcome

    def extend_site(self, url: str, target: str) -> None:
        """Where a start URL redirects (http to https, a moved folder), the site goes too."""
        if url in self.roots and self.policy.extend_site(url, target):
            self.roots.add(target)
            which = "its links are checked" if self.policy.only else "pages under it are parsed too"
            self.observer.note(f"{url} redirects to {target}: {which}")
            self._site_grew()

    def broken_chains(self, redirects: dict[str, tuple[int, str]]) -> list[Outcome]:
        """The pass's redirects (URL: its id and target) whose chains loop or run too
        long, judged broken once every redirect of the pass is known."""
        failures = redirect_failures({url: target for url, (_, target) in redirects.items()})
        return [
            Outcome(
                redirects[url][0],
                self.policy.action(url),
                State.BROKEN,
                error=reason,
                redirect_to=redirects[url][1],
                checked=False,
                reason=Reason.REDIRECT_LOOP,
            )
            for url, reason in failures.items()
        ]


def only_rendered(served: Iterable[Discovered], rendered: Iterable[Discovered]) -> list[Discovered]:
    """The links of a page's rendered DOM that its served HTML does not have, once each,
    marked rendered (their lines are the serialized DOM's, which no one can look up)."""
    seen = {(link.url, link.fragment) for link in served}
    extra = []
    for link in rendered:
        key = (link.url, link.fragment)
        if key not in seen:
            seen.add(key)
            extra.append(link._replace(line=RENDERED))
    return extra
