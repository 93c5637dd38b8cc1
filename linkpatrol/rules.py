"""The rule book: what becomes of a URL, decided by pure functions over plain data.

The engine asks and carries out, the memory writes, and these rules decide: whether a
claimed URL is requested at all, how it is requested, what an answer means for the link,
what the memory keeps of its standing, and which discovered URLs a limit holds back. No
rule does I/O or reads the settings whole: each takes the few facts it needs and a
:class:`RuleOptions`, so every rule is tested as a table, without a server.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

from linkpatrol.httpparts import TRANSIENT_STATUSES
from linkpatrol.model import (
    HTML_TYPES,
    Action,
    AnchorMode,
    LinkKind,
    Look,
    Probe,
    Reason,
    Soft404Mode,
    State,
    Task,
)
from linkpatrol.urls import folder_and_name, has_userinfo, is_http, origin, scheme

MAX_REDIRECT_HOPS = 10
# the answers that say a URL moved for good: links to it are best changed to its target
PERMANENT_REDIRECTS = (301, 308)
MAX_LABEL = 63  # characters in a DNS label (RFC 1035)
MAX_NAME = 253  # characters in a DNS name, written with dots
# answers that mean "this server refuses robots" rather than "this link is gone"
DEFAULT_WARN = frozenset({401, 403, 429, 999})
# schemes no browser follows a redirect to: a link redirecting there is dead for everyone
UNFOLLOWED_REDIRECT_SCHEMES = frozenset(
    {"javascript", "data", "file", "about", "blob", "filesystem", "view-source"}
)


@dataclass(frozen=True, slots=True)
class RuleOptions:
    """The settings the rules read, and nothing else."""

    accept: frozenset[int] = frozenset()  # statuses that are also ok
    warn: frozenset[int] = frozenset()  # statuses that are warnings
    broken: frozenset[int] = frozenset()  # statuses that are broken
    recheck_good: float = 0.0  # seconds a good verdict is trusted without a request
    follow_ghost: float = 7 * 86400.0  # seconds a failing page's links are still followed
    max_size: int = 10 * 1024 * 1024  # bytes of a page read
    check_anchors: AnchorMode = AnchorMode.OFF
    robots: bool = True  # robots.txt obeyed (--no-robots: not at all)
    robots_off: tuple[str, ...] = ()  # prefixes of [[site]] tables with robots = false
    cert_expiry: int = 14  # days ahead a host's certificate ending is warned of (0: never)
    soft_404: Soft404Mode = Soft404Mode.SITE  # whose good answers are compared with a probe's
    require_https: bool = False  # a good http: URL whose host serves https: is a warning


class Verdict(NamedTuple):
    """A URL's verdict and why: the reason and the words for people (None when good)."""

    state: State
    reason: Reason | None = None
    error: str | None = None


# ---- a URL's action, and the guards against crawler traps --------------------------------


def requestable(url: str, local: bool) -> bool:
    """Whether linkpatrol can request a URL at all: an ``http``/``https`` one, or a
    ``file:`` URL when ``local`` (under the checked folder)."""
    return is_http(url) or (local and url.startswith("file:"))


def default_action(
    url: str,
    site: tuple[str, ...],
    local: bool,
    offline: bool,
    only: frozenset[str] | None = None,
) -> Action:
    """The action of a URL that no hook or ``[[rule]]`` decided: the site's pages (under
    one of the ``site`` prefixes; with ``--no-recurse``, exactly the URLs ``only`` holds)
    are parsed, other web URLs checked, anything else only recorded. A ``file:`` URL is
    read only when ``local`` (under the checked folder), never for a web page; a URL with
    a user name or password, or any with ``--offline``, is recorded."""
    if not requestable(url, local):
        return Action.RECORD
    inside = url.startswith(site) if only is None else url in only
    if url.startswith("file:"):
        return Action.PARSE if inside else Action.CHECK
    if has_userinfo(url) or offline:
        return Action.RECORD
    return Action.PARSE if inside else Action.CHECK


def chosen_action(action: Action, url: str, local: bool) -> Action:
    """The action a hook or ``[[rule]]`` chose for a URL: to parse or check one that
    linkpatrol cannot request (``ftp:``, ``mailto:``, a ``file:`` URL of a web page) is to
    record it, as the default does, rather than to judge it by a request that cannot be
    made."""
    if (action is Action.PARSE or action is Action.CHECK) and not requestable(url, local):
        return Action.RECORD
    return action


def trap(userinfo: bool, depth: int, max_depth: int) -> str | None:
    """Why a URL is not requested although its action says so: it carries a user name or
    password, or has more path segments than --max-depth (a crawler trap's mark)."""
    if userinfo:
        return "not requested: URL carries a user name or password"
    if depth > max_depth:
        return f"not requested: {depth} path segments, over --max-depth {max_depth}"
    return None


def share_of(limit: int, workers: int, rank: int) -> int:
    """A worker's share of a limit on requests in flight that the crew of a pass shares:
    ``limit // workers`` each, one more for the oldest ``limit % workers`` (``rank`` 0 is
    the oldest). The shares add up to the limit, so a limit smaller than the crew leaves
    the youngest without any."""
    return limit // workers + (rank < limit % workers)


def judge_host(host: str, named: frozenset[str]) -> Verdict | None:
    """A host name no DNS server answers for, judged without asking one: an empty label
    (``foo..com``, ``.foo.com``) or one too long is broken; a single label other than
    ``localhost`` (``http://www/``) a warning, as only a local network's search domain
    makes it a name (intranet links), never on the internet. The hosts the user ``named``
    (of the start URLs and site prefixes) and IP literals are never judged here."""
    if not host or host in named or host.startswith("["):
        return None
    labels = host.split(".")
    if "" in labels:
        error = f"invalid host: {host} has an empty label"
    elif len(host) > MAX_NAME or max(map(len, labels)) > MAX_LABEL:
        error = f"invalid host: {host} is longer than a DNS name may be"
    elif len(labels) == 1 and host != "localhost":
        error = f"invalid host: {host} is a single-label name, not looked up (intranet only)"
        return Verdict(State.WARNING, Reason.INVALID_HOST, error)
    else:
        return None
    return Verdict(State.BROKEN, Reason.INVALID_HOST, error)


# ---- admission: a URL claimed from the frontier ---------------------------------------


class Admission(enum.Enum):
    """What becomes of a URL claimed from the frontier, before any request."""

    DROP = "drop"  # ignored: left out of the pass, not even listed
    RECORD = "record"  # kept in the cross-reference, never requested
    LIMITED = "limited"  # a limit keeps it from being requested
    JUDGED = "judged"  # judged without a request: its host is no name to look up
    TRUST = "trust"  # found good recently: its verdict (and a page's links) stand
    REQUEST = "request"


def admit(
    action: Action,
    limited: str | None,
    task: Task,
    now: float,
    options: RuleOptions,
    judged: Verdict | None = None,
) -> Admission:
    """Decide a claimed URL whose action is decided afresh as ``action``; ``limited`` says
    why a crawler-trap guard holds it back, if one does, ``judged`` what its host alone
    says of it (:func:`judge_host`)."""
    if action is Action.IGNORE:
        return Admission.DROP
    if action is Action.RECORD:
        return Admission.RECORD
    if judged is not None:
        return Admission.JUDGED
    if limited is not None:
        return Admission.LIMITED
    if (
        options.recheck_good > 0
        and task.state in (State.OK, State.REDIRECT)
        and task.last_good is not None
        and now - task.last_good < options.recheck_good
    ):
        return Admission.TRUST
    return Admission.REQUEST


# ---- the request plan ----------------------------------------------------------------


class Plan(NamedTuple):
    """How a URL is requested first."""

    method: str
    conditional: bool  # If-None-Match / If-Modified-Since from what the memory knows
    want_body: bool
    purpose: str  # what the log adds to the action ("" or "; for its anchors")


def wants_anchors(url: str, mode: AnchorMode) -> bool:
    """A page only checked is read for its anchors: a local file whenever anchors are
    checked, an outside page with --check-anchors=all."""
    return mode is AnchorMode.ALL or (mode is AnchorMode.SITE and url.startswith("file:"))


def plan(action: Action, url: str, options: RuleOptions) -> Plan:
    """A page to parse is read whole, conditionally; a page read for its anchors, or one
    only checked compared with its folder's probe (``--soft-404 all``), whole and
    unconditionally (a page only checked before has no anchors in the memory, and was not
    compared); anything else is asked for with HEAD, conditionally."""
    if action is Action.PARSE:
        return Plan("GET", True, True, "")
    if wants_anchors(url, options.check_anchors):
        return Plan("GET", False, True, "; for its anchors")
    if probes_for(action, options):  # unconditionally, as for its anchors
        return Plan("GET", False, True, "; for a soft 404")
    return Plan("HEAD", True, False, "")


def get_after_head(
    status: int | None, reachable: bool, transient: bool, refused: bool = False
) -> bool:
    """HEAD refused or broken: worth a GET (many servers answer HEAD wrongly), unless the
    server asked us to slow down (a 429; ``refused``: any answer that refused the request
    for the host's limit, see :func:`host_pace`) or could not be reached at all."""
    if refused:
        return False
    if status is not None:
        return status >= 400 and status != 429
    return reachable and not transient


def request_headers(task: Task, conditional: bool) -> dict[str, str]:
    """The Referer naming a page that links to the URL, and, on a conditional request of a
    URL that answered well before, the validators it answered with."""
    headers: dict[str, str] = {}
    if task.referrer:
        headers["Referer"] = task.referrer
    if conditional and task.state in (State.OK, State.REDIRECT, State.WARNING):
        if task.etag:
            headers["If-None-Match"] = task.etag
        if task.last_modified:
            headers["If-Modified-Since"] = task.last_modified
    return headers


# ---- a host's pace ----------------------------------------------------------------------

# the longest pause a host may ask of all its URLs; one asking for longer gets its URLs
# judged on what it answered, rather than the pass waiting on it
MAX_HOST_PAUSE = 300.0
# the pause of a host that refuses a request for its limit without saying for how long
LIMIT_PAUSE = 1.0
# times a URL is refused for its host's limit and queued again before it is judged, when
# the host says when to come back (when it does not, --retries times)
MAX_REFUSALS = 8


class HostPace(NamedTuple):
    """What an answer says of its host's pace."""

    pause: float = 0.0  # seconds before the host's next request (0: none asked)
    refused: bool = False  # the request was refused for the host's limit: ask it again
    too_long: str | None = None  # the host asked for a longer pause than we wait: why
    room: int | None = None  # requests it allows until its window resets, where it says
    told: bool = False  # a refusal that said when to come back (Retry-After, the reset)


NO_PACE = HostPace()


def host_pace(
    status: int | None,
    retry_after: float | None,
    remaining: int | None,
    reset: float | None,
    longest: float = MAX_HOST_PAUSE,
) -> HostPace:
    """What an answer with ``status``, ``Retry-After`` and ``X-RateLimit-Remaining`` /
    ``-Reset`` (in seconds from now) means for its host: a 429, or a 503 that says when to
    come back, refuses the request for the host's limit, and the whole host pauses for as
    long as it says (Retry-After, else until its window resets, else LIMIT_PAUSE); an
    answer leaving no request in the window pauses the host until it resets, and one
    leaving a few says how many may be asked for now. A pause longer than ``longest`` is
    not waited for: a refused URL is judged on its answer."""
    spent = remaining == 0 and reset is not None
    if status == 429 or (status == 503 and retry_after is not None):
        pause = LIMIT_PAUSE
        if retry_after is not None:
            pause = retry_after
        elif spent and reset is not None:
            pause = reset
        if pause > longest:
            why = f"the host asks for a pause of {pause:.0f} s, longer than {longest:.0f} s"
            return HostPace(too_long=why)
        return HostPace(pause, True, told=retry_after is not None or spent)
    if spent and reset is not None and reset <= longest:
        return HostPace(reset)
    if remaining:
        return HostPace(room=remaining)
    return NO_PACE


# ---- judging an answer -----------------------------------------------------------------


def judge_status(status: int, options: RuleOptions) -> State:
    """The verdict for an HTTP status: the user's lists (broken, warn, accept) win over
    the defaults."""
    if status in options.broken:
        return State.BROKEN
    if status in options.warn:
        return State.WARNING
    if status in options.accept:
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


class Judgement(NamedTuple):
    """What an answer means for a URL, and what the engine does next."""

    verdict: Verdict
    unchanged: bool = False  # 304: the URL is what it was (type, status, a page's links)
    redirect: bool = False  # a redirect: judged by judge_redirect
    parse: bool = False  # the body goes to a parse worker
    ghost: bool = False  # a failing page: its remembered links may still be followed


def judge(
    status: int | None,
    failure: Verdict | None,
    page_body: bool,
    options: RuleOptions,
) -> Judgement:
    """An answer: its HTTP ``status``, or the ``failure`` that left none; ``page_body``
    when it carried a document to read (a page, or a stylesheet of the site)."""
    if status is None:
        verdict = failure or Verdict(State.BROKEN, Reason.CONNECTION, "no answer")
        return Judgement(verdict, ghost=verdict.state is State.BROKEN)
    if status == 304:
        return Judgement(Verdict(State.OK), unchanged=True)
    if 300 <= status < 400:
        return Judgement(Verdict(State.REDIRECT), redirect=True)
    state = judge_status(status, options)
    if state is State.BROKEN or state is State.WARNING:
        verdict = Verdict(state, Reason.HTTP_STATUS, f"HTTP {status}")
        return Judgement(verdict, ghost=state is State.BROKEN)
    return Judgement(Verdict(state), parse=page_body)


def worth_second_look(
    state: State, status: int | None, transient: bool, limited: str | None
) -> bool:
    """A URL that failed as a busy or briefly unreachable server fails (a time-out, a
    reset, 429, 502, 503, 504, after its retries) is asked once more at the end of the
    pass, before an alarm; not one whose host asked to be left alone for longer than we
    wait (``limited`` says why)."""
    if state is not State.BROKEN and state is not State.WARNING:
        return False
    return (transient or status in TRANSIENT_STATUSES) and limited is None


def judge_page(state: State, truncated: bool, options: RuleOptions) -> Verdict:
    """A page read and parsed: a page cut at --max-size is a warning, as its links past the
    cut are not checked."""
    if truncated:
        limit = options.max_size
        error = f"page larger than --max-size ({limit} bytes)"
        return Verdict(State.WARNING, Reason.TOO_LARGE, error)
    return Verdict(state)


def expiring_certificate(
    state: State, host: str, expires: float | None, now: float, days: int
) -> Verdict | None:
    """A good answer from ``host``, whose certificate ``expires`` (POSIX time) within
    --cert-expiry ``days`` (counted in calendar days, UTC): a warning, so that it is renewed
    before its links break. Any other verdict stands; an expired certificate is a TLS
    error already, and an unknown one (plain HTTP, an unverified host) says nothing."""
    if state is not State.OK or expires is None or days <= 0 or expires <= now:
        return None
    ends = datetime.fromtimestamp(expires, UTC).date()
    left = (ends - datetime.fromtimestamp(now, UTC).date()).days
    if left > days:
        return None
    when = "today" if left == 0 else "in 1 day" if left == 1 else f"in {left} days"
    error = f"certificate of {host} expires {ends.isoformat()} ({when})"
    return Verdict(State.WARNING, Reason.CERT_EXPIRY, error)


# the schemes of mixed content: a page of the first that loads a URL of the second
SECURE_PAGE = "https:"
INSECURE_LOAD = "http:"
MIXED_CONTENT = "mixed content"


def mixed_content(page: str, target: str, kind: int) -> bool:
    """Whether a link (of a ``LinkKind``'s value) makes its page mixed content: an https:
    page that loads an http: URL into itself (an image, a script, a stylesheet, a frame,
    media), which browsers block or warn of. A link followed to an http: URL is none, and
    neither is anything an http: page loads."""
    return (
        kind == LinkKind.SUBRESOURCE
        and page[:6].lower() == SECURE_PAGE
        and target[:5].lower() == INSECURE_LOAD
    )


def loaded_insecurely(state: State) -> Verdict | None:
    """The verdict of a URL that https: pages load over http: (see :func:`mixed_content`):
    a warning, whatever its own answer was (a good one does not make it safe to load).
    A verdict that says more stands (broken, a warning or a redirect of its own, or
    robots.txt forbidding it), and names those pages among its referrers."""
    if state is State.OK or state is State.UNCHECKED:
        return Verdict(State.WARNING, Reason.MIXED_CONTENT, MIXED_CONTENT)
    return None


HTTPS_AVAILABLE = "HTTPS available"
# how long a host's answer over https: is trusted before it is asked again
HTTPS_KEPT = 7 * 86400.0


def https_counterpart(url: str) -> str | None:
    """The https: URL of a canonical http: one, as browsers upgrade it: the scheme
    changes and an explicit port stays (port 80, the default, is 443 then); None for any
    other URL."""
    if url[:7].lower() != "http://":
        return None
    return "https" + url[4:]


def answers_over_https(status: int | None) -> bool:
    """Whether the https: counterpart's answer shows the host serves it: 2xx or 3xx (a
    redirect to a login page is served too); nothing, an error or a TLS failure is not."""
    return status is not None and 200 <= status < 400


def https_available(state: State, url: str, served: bool | None) -> Verdict | None:
    """With --require-https, a good http: URL whose host serves its https: counterpart
    (``served``, asked once a host) is a warning: the link should say https:. Any other
    verdict stands."""
    if state is not State.OK or not served or https_counterpart(url) is None:
        return None
    return Verdict(State.WARNING, Reason.HTTPS_AVAILABLE, HTTPS_AVAILABLE)


def parse_failed(message: str) -> Verdict:
    """A page its parse workers could not read within the limits."""
    return Verdict(State.BROKEN, Reason.PARSE_ERROR, message)


def render_failed(verdict: Verdict, message: str) -> Verdict:
    """A good page the browser could not render within the limits: a warning, as the
    links only its DOM holds are not checked; a worse verdict stands."""
    if verdict.state is not State.OK:
        return verdict
    return Verdict(State.WARNING, Reason.RENDER, message)


def unchanged_status(task: Task) -> int | None:
    """A 304's status as the memory shows it: the status it had when it was good."""
    return task.http_status if task.state is State.OK and task.http_status else None


def follows_ghost(task: Task, now: float, options: RuleOptions) -> bool:
    """A page that fails now, but was good within --follow-ghost, keeps its remembered
    links: one broken index page does not hide the rest of the site."""
    return (
        task.action is Action.PARSE
        and task.links_at is not None
        and task.last_good is not None
        and now - task.last_good <= options.follow_ghost
    )


def unfollowed_redirect(target: str, source: str = "") -> str | None:
    """Why a browser would not follow a redirect to ``target``; None if it would.

    A local folder's redirect to its ``/`` form stays among local files, where a
    browser goes too."""
    name = scheme(target)
    if name in UNFOLLOWED_REDIRECT_SCHEMES and scheme(source) != name:
        return f"redirect to a {name}: URL, which browsers do not follow"
    return None


def judge_redirect(
    url: str, status: int, location: str | None, target: str | None, invalid: str | None
) -> Verdict:
    """A redirect of ``url`` (with ``status``) to ``location``, which canonicalizes to
    ``target``, or is no URL for the reason ``invalid``."""
    if not location:  # browsers show such an answer as it is: not dead, but no redirect
        error = f"HTTP {status} redirect without a target (no Location header)"
        return Verdict(State.WARNING, Reason.REDIRECT, error)
    if target is None:
        error = f"redirect to an invalid URL ({invalid}): {location[:200]}"
        return Verdict(State.BROKEN, Reason.REDIRECT, error)
    if target == url:
        return Verdict(State.BROKEN, Reason.REDIRECT_LOOP, "redirect loop: redirects to itself")
    unfollowed = unfollowed_redirect(target, url)
    if unfollowed is not None:
        return Verdict(State.BROKEN, Reason.REDIRECT, unfollowed)
    return Verdict(State.REDIRECT)


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


def obeys_robots(url: str, rules: RuleOptions) -> bool:
    """Whether robots.txt speaks for ``url``: not with --no-robots, nor under the prefix of
    a ``[[site]]`` table with ``robots = false``. For a host's root (``origin + "/"``):
    whether its robots.txt is to be read at all."""
    return rules.robots and not url.startswith(rules.robots_off)


def robots_verdict(
    unreachable: Reason | None, error: str | None, denial: str | None
) -> Verdict | None:
    """What robots.txt says of a URL: on a host whose robots.txt could not be fetched at
    all (``unreachable`` says why), nothing can be, and the URL is broken for that reason;
    a URL it forbids is disallowed; None: go on."""
    if unreachable is not None:
        return Verdict(State.BROKEN, unreachable, error)
    if denial is not None:
        return Verdict(State.DISALLOWED, Reason.ROBOTS, denial)
    return None


# ---- soft 404s: a good answer for a page that does not exist ----------------------------

# a folder's probe is trusted this long, then made again (a site's software changes)
PROBE_AGE = 30 * 86400.0
# folders of one host probed in one run at most; the others wait for the next runs
MAX_PROBES = 100
# how far two pages' looks may be apart and still be the same page: simhashes of their
# visible text this many bits apart at most (of 64), and text lengths within this share of
# the longer one (or a few characters, for short pages). The same not-found page comes
# out a few bits apart at most, an echoed name taken out; pages of one template with
# texts of their own 15 or more, their titles aside (tests/test_rules.py, test_soft404.py).
SAME_TEXT_BITS = 6
SAME_SIZE_SHARE = 0.1
SAME_SIZE_SLACK = 32


def probes_for(action: Action, options: RuleOptions) -> bool:
    """Whether a URL requested as ``action`` has a good answer compared with its folder's
    probe: the site's pages (``--soft-404 site``, the default), other URLs checked as well
    with ``--soft-404 all`` (they are then read with GET, not HEAD)."""
    mode = options.soft_404
    if mode is Soft404Mode.OFF:
        return False
    return action is Action.PARSE or (mode is Soft404Mode.ALL and action is Action.CHECK)


def folder_of(url: str) -> tuple[str, str] | None:
    """The origin and folder (path to its last '/') of a web URL with a name in its folder;
    None for a folder's own URL (``/blog/``), which no made-up name stands for."""
    if not is_http(url):
        return None
    folder, name = folder_and_name(url)
    return (origin(url), folder) if name else None


def probe_url(host_origin: str, folder: str, token: str) -> str:
    """The URL of a name that cannot exist in the folder (``token``: random letters)."""
    return f"{host_origin}{folder}{token}"


def probe_due(probe: Probe | None, now: float, made: int = 0) -> bool:
    """A folder is probed when the memory has no answer of it, or one older than
    PROBE_AGE, while its host has had fewer than MAX_PROBES probes in the run (``made``):
    a crawler trap's endless folders (a calendar's months) cost a few requests more, not
    one more for each (a folder past them keeps what the memory has, however old)."""
    return (probe is None or now - probe.probed_at > PROBE_AGE) and made < MAX_PROBES


def probe_kept(status: int | None) -> bool:
    """A probe's answer the memory keeps: any but a failure, a refusal for the host's
    limit or a server error (the folder is probed again in the next run). A 404 or 410
    is kept too: the folder is honest, and is not probed again for PROBE_AGE."""
    if status is None:
        return False
    return status < 500 and status != 429 and status not in TRANSIENT_STATUSES


def may_be_soft_404(status: int | None, content_type: str | None) -> bool:
    """An answer that may hide a missing page: a 2xx HTML page, or a redirect (not a
    304, which says the page is what it was)."""
    if status is None or status == 304:
        return False
    return (200 <= status < 300 and content_type in HTML_TYPES) or 300 <= status < 400


def same_look(a: Look, b: Look) -> bool:
    """The same page, whatever name it was asked by: the same title, texts a few bits
    apart in their simhash, and of about the same length."""
    longer = max(a.size, b.size)
    return (
        a.title == b.title
        and (a.simhash ^ b.simhash).bit_count() <= SAME_TEXT_BITS
        and abs(a.size - b.size) <= max(longer * SAME_SIZE_SHARE, SAME_SIZE_SLACK)
    )


def judge_soft_404(
    probe: Probe, status: int | None, redirect_to: str | None, look: Look | None
) -> Verdict | None:
    """A good answer (``status``; a redirect's target, a page's ``look``) that is what its
    folder answers for a name that cannot exist: broken, as a soft 404. None: it stands."""
    if probe.status is None or status is None:
        return None
    if 300 <= probe.status < 400 and 300 <= status < 400:
        if redirect_to is not None and redirect_to == probe.redirect_to:
            error = f"soft 404: redirects to {redirect_to}, as a made-up name in its folder does"
            return Verdict(State.BROKEN, Reason.SOFT_404, error)
        return None
    if 200 <= status < 300 and probe.look and look and same_look(probe.look, look):
        error = f"soft 404: HTTP {status} with the page a made-up name in its folder gets"
        return Verdict(State.BROKEN, Reason.SOFT_404, error)
    return None


# ---- discovered URLs and their limits ---------------------------------------------------


def settled_link(action: Action, invalid: str | None) -> Verdict | None:
    """A link settled without a request: one only recorded, and one that is no URL
    (``invalid`` says why), which is broken unless a hook or ``[[rule]]`` records it (it
    is then unchecked, and still says why it is no URL)."""
    if invalid is None:
        return Verdict(State.UNCHECKED) if action is Action.RECORD else None
    state = State.UNCHECKED if action is Action.RECORD else State.BROKEN
    return Verdict(state, Reason.INVALID_URL, invalid)


def discovered(
    action: Action,
    invalid: str | None,
    seen: int,
    max_urls: int,
    pattern: str | None,
    similar: int,
    max_similar: int,
) -> Verdict | None:
    """A URL new to the pass: settled at once (invalid, only recorded, or held back by a
    limit), or None to queue it. ``invalid`` says why it is no URL (as linked now, or as
    found before); ``seen`` counts the pass's URLs so far, ``similar`` those of its
    ``pattern`` (None when it has no number-only segment)."""
    settled = settled_link(action, invalid)
    if settled is not None:
        return settled
    if max_urls and seen >= max_urls:
        error = f"not checked: --max-urls limit of {max_urls} URLs reached"
        return Verdict(State.UNCHECKED, Reason.LIMIT, error)
    if max_similar and pattern is not None and similar >= max_similar:
        error = f"not checked: --max-similar limit of {max_similar} URLs like {pattern}"
        return Verdict(State.UNCHECKED, Reason.LIMIT, error)
    return None


# ---- the standing the memory keeps -----------------------------------------------------


class Standing(NamedTuple):
    """What the memory keeps of a URL's health across passes."""

    last_good: float | None
    failing_since: float | None
    changed: bool  # a change of verdict, kept in its history


# warnings given to good answers: the URL answered well all the same
_GOOD_ANSWERS = frozenset((Reason.CERT_EXPIRY, Reason.HTTPS_AVAILABLE))


def standing(
    before: State | None,
    status_before: int | None,
    last_good: float | None,
    failing_since: float | None,
    after: State,
    status: int | None,
    now: float,
    reason: Reason | None = None,
) -> Standing:
    """A URL checked now: good (ok, or a redirect) makes it last good now; broken keeps
    the moment it started failing; a new verdict, or a broken one with another status, is a
    change for its history. A warning of its host's certificate, or of the https: its
    host serves (``reason``), is a good answer all the same: a page broken later was good
    until then."""
    if after is State.OK or after is State.REDIRECT or reason in _GOOD_ANSWERS:
        last_good = now
    failing_since = (failing_since or now) if after is State.BROKEN else None
    changed = before is not after or (after is State.BROKEN and status_before != status)
    return Standing(last_good, failing_since, changed)


def is_reportable(
    state: State,
    last_checked: float | None,
    last_good: float | None,
    failing_since: float | None,
    report_after: float,
    damp_new: bool = False,
) -> bool:
    """A broken URL counts once it has failed for longer than --report-after since it was
    good. One never good counts at once (a typo added today is not hidden for days), unless
    --damp-new holds it back as long, from when it first failed."""
    if state is not State.BROKEN:
        return False
    if report_after <= 0:
        return True
    if last_good is None and not damp_new:
        return True
    since = last_good if last_good is not None else failing_since
    if since is None or last_checked is None:
        return True
    return last_checked - since > report_after
