"""From what a server said to what it means for the link: pure decisions, no I/O."""

from __future__ import annotations

from linkpatrol.config import SiteSettings
from linkpatrol.model import State
from linkpatrol.urls import scheme

MAX_REDIRECT_HOPS = 10
# answers that mean "this server refuses robots" rather than "this link is gone"
DEFAULT_WARN = frozenset({401, 403, 429, 999})
# schemes no browser follows a redirect to: a link redirecting there is dead for everyone
UNFOLLOWED_REDIRECT_SCHEMES = frozenset(
    {"javascript", "data", "file", "about", "blob", "filesystem", "view-source"}
)


def judge_status(status: int, settings: SiteSettings) -> State:
    """The verdict for an HTTP status: the user's lists (broken, warn, accept) win over defaults."""
    if status in settings.broken:
        return State.BROKEN
    if status in settings.warn:
        return State.WARNING
    if status in settings.accept:
        return State.OK
    if 200 <= status < 300 or status == 304:
        return State.OK
    if 300 <= status < 400:
        return State.REDIRECT
    if status in DEFAULT_WARN:
        return State.WARNING
    if status >= 400:
        return State.BROKEN
    return State.WARNING


def unfollowed_redirect(target: str, source: str = "") -> str | None:
    """Why a browser would not follow a redirect to ``target``; None if it would.

    A local folder's redirect to its ``/`` form stays among local files, where a
    browser goes too."""
    name = scheme(target)
    if name in UNFOLLOWED_REDIRECT_SCHEMES and scheme(source) != name:
        return f"redirect to a {name}: URL, which browsers do not follow"
    return None


def redirect_failures(redirects: dict[str, str]) -> dict[str, str]:
    """Redirecting URLs whose chain loops or runs longer than ten hops, with the reason.

    ``redirects`` maps each redirecting URL of the pass to its target.
    """
    failures: dict[str, str] = {}
    for start in redirects:
        chain = [start]
        seen = {start}
        target = redirects[start]
        while target in redirects:
            if target in seen:
                failures[start] = "redirect loop: " + " -> ".join([*chain, target])
                break
            chain.append(target)
            seen.add(target)
            if len(chain) > MAX_REDIRECT_HOPS:
                failures[start] = f"too many redirects (more than {MAX_REDIRECT_HOPS} hops)"
                break
            target = redirects[target]
    return failures


def is_reportable(
    state: State,
    last_checked: float | None,
    last_good: float | None,
    failing_since: float | None,
    report_after: float,
) -> bool:
    """A broken URL counts once it has failed for longer than --report-after since it was good."""
    if state is not State.BROKEN:
        return False
    if report_after <= 0:
        return True
    since = last_good if last_good is not None else failing_since
    if since is None or last_checked is None:
        return True
    return last_checked - since > report_after
