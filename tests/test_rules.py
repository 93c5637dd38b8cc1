"""The rule book as tables: every decision about a URL, without a server or a process."""

from __future__ import annotations

from typing import Any

import pytest

from linkpatrol.model import Action, AnchorMode, Look, Probe, Reason, Soft404Mode, State
from linkpatrol.rules import (
    LIMIT_PAUSE,
    MAX_PROBES,
    Admission,
    HostPace,
    Plan,
    RuleOptions,
    Verdict,
    admit,
    chosen_action,
    default_action,
    discovered,
    expiring_certificate,
    folder_of,
    follows_ghost,
    get_after_head,
    host_pace,
    is_reportable,
    judge,
    judge_host,
    judge_page,
    judge_redirect,
    judge_soft_404,
    judge_status,
    may_be_soft_404,
    obeys_robots,
    parse_failed,
    plan,
    probe_due,
    probe_kept,
    probes_for,
    redirect_failures,
    request_headers,
    robots_verdict,
    share_of,
    standing,
    trap,
    unchanged_status,
    unfollowed_redirect,
)
from linkpatrol.store import Task

NOW = 1_800_000_000.0
DAY = 86400.0
U = "http://h.test/page"


def task(**fields: Any) -> Task:
    """A claimed URL with what the memory knows of it (nothing, unless given)."""
    values: dict[str, Any] = dict(
        url_id=1,
        url=U,
        origin="http://h.test",
        action=Action.CHECK,
        state=None,
        http_status=None,
        error=None,
        content_type=None,
        last_checked=None,
        last_good=None,
        links_at=None,
        etag=None,
        last_modified=None,
        referrer=None,
    )
    values.update(fields)
    return Task(**values)


# ---- a URL's action and the crawler-trap guards ------------------------------------------

SITE = ("http://h.test/docs/", "file:///d/")


@pytest.mark.parametrize(
    ("url", "local", "offline", "action"),
    [
        ("http://h.test/docs/a.html", False, False, Action.PARSE),
        ("http://h.test/blog/", False, False, Action.CHECK),  # the same host, not the site
        ("https://other.test/", False, False, Action.CHECK),
        ("https://other.test/", False, True, Action.RECORD),  # --offline
        ("http://h.test/docs/a.html", False, True, Action.RECORD),
        ("http://bob:pw@h.test/docs/", False, False, Action.RECORD),  # credentials in it
        ("mailto:a@h.test", False, False, Action.RECORD),
        ("ftp://h.test/docs/x", False, False, Action.RECORD),
        ("file:///d/a.html", True, False, Action.PARSE),
        ("file:///d/a.html", True, True, Action.PARSE),  # local files need no network
        ("file:///elsewhere/a.html", True, False, Action.CHECK),
        ("file:///etc/passwd", False, False, Action.RECORD),  # not under the checked folder
    ],
)
def test_default_action(url: str, local: bool, offline: bool, action: Action) -> None:
    assert default_action(url, SITE, local, offline) is action


@pytest.mark.parametrize(
    ("chosen", "url", "local", "action"),
    [
        (Action.CHECK, "https://other.test/", False, Action.CHECK),
        (Action.PARSE, "http://bob:pw@h.test/docs/", False, Action.PARSE),  # the trap guard holds it
        (Action.IGNORE, "ftp://h.test/x", False, Action.IGNORE),
        (Action.RECORD, "https://other.test/", False, Action.RECORD),
        # what linkpatrol cannot request is recorded, whatever a rule or hook asks
        (Action.CHECK, "ftp://h.test/x", False, Action.RECORD),
        (Action.PARSE, "tel:+15551234", False, Action.RECORD),
        (Action.CHECK, "mailto:a@h.test", False, Action.RECORD),
        (Action.CHECK, "file:///etc/passwd", False, Action.RECORD),  # linked from a web page
        (Action.PARSE, "file:///elsewhere/a.html", True, Action.PARSE),
    ],
)  # fmt: skip
def test_an_action_chosen_by_a_rule_or_hook(
    chosen: Action, url: str, local: bool, action: Action
) -> None:
    assert chosen_action(chosen, url, local) is action


@pytest.mark.parametrize(
    ("userinfo", "depth", "max_depth", "reason"),
    [
        (False, 3, 20, None),
        (False, 20, 20, None),
        (False, 21, 20, "not requested: 21 path segments, over --max-depth 20"),
        (True, 1, 20, "not requested: URL carries a user name or password"),
    ],
)
def test_crawler_trap_guards(
    userinfo: bool, depth: int, max_depth: int, reason: str | None
) -> None:
    assert trap(userinfo, depth, max_depth) == reason


# ---- admission -------------------------------------------------------------------------

RECHECK = RuleOptions(recheck_good=DAY)


@pytest.mark.parametrize(
    ("action", "limited", "known", "options", "admitted"),
    [
        (Action.IGNORE, None, {}, RuleOptions(), Admission.DROP),
        (Action.RECORD, None, {}, RuleOptions(), Admission.RECORD),
        (Action.CHECK, "not requested: 30 path segments", {}, RuleOptions(), Admission.LIMITED),
        (Action.PARSE, "not requested: user name", {}, RuleOptions(), Admission.LIMITED),
        (Action.CHECK, None, {}, RuleOptions(), Admission.REQUEST),
        (Action.PARSE, None, {}, RuleOptions(), Admission.REQUEST),
        # a recent good verdict is trusted only with --recheck-good
        (Action.CHECK, None, {"state": State.OK, "last_good": NOW - 60}, RuleOptions(), Admission.REQUEST),
        (Action.CHECK, None, {"state": State.OK, "last_good": NOW - 60}, RECHECK, Admission.TRUST),
        (Action.PARSE, None, {"state": State.REDIRECT, "last_good": NOW - 60}, RECHECK, Admission.TRUST),
        (Action.CHECK, None, {"state": State.OK, "last_good": NOW - 2 * DAY}, RECHECK, Admission.REQUEST),
        (Action.CHECK, None, {"state": State.BROKEN, "last_good": NOW - 60}, RECHECK, Admission.REQUEST),
        (Action.CHECK, None, {"state": State.WARNING, "last_good": NOW - 60}, RECHECK, Admission.REQUEST),
        (Action.CHECK, None, {"state": State.OK, "last_good": None}, RECHECK, Admission.REQUEST),
        # a limit wins over trust; an ignored URL is dropped whatever it was
        (Action.CHECK, "not requested: depth", {"state": State.OK, "last_good": NOW}, RECHECK, Admission.LIMITED),
        (Action.IGNORE, None, {"state": State.OK, "last_good": NOW}, RECHECK, Admission.DROP),
    ],
)  # fmt: skip
def test_admission(
    action: Action,
    limited: str | None,
    known: dict[str, Any],
    options: RuleOptions,
    admitted: Admission,
) -> None:
    assert admit(action, limited, task(**known), NOW, options) is admitted


WWW = Verdict(State.WARNING, Reason.INVALID_HOST, "invalid host: www is a single-label name")


@pytest.mark.parametrize(
    ("action", "limited", "known", "admitted"),
    [
        (Action.CHECK, None, {}, Admission.JUDGED),
        (Action.PARSE, "not requested: depth", {}, Admission.JUDGED),
        (Action.CHECK, None, {"state": State.OK, "last_good": NOW}, Admission.JUDGED),
        (Action.RECORD, None, {}, Admission.RECORD),
        (Action.IGNORE, None, {}, Admission.DROP),
    ],
)  # fmt: skip
def test_admission_of_a_url_its_host_judges(
    action: Action, limited: str | None, known: dict[str, Any], admitted: Admission
) -> None:
    assert admit(action, limited, task(**known), NOW, RECHECK, WWW) is admitted


SINGLE = "is a single-label name, not looked up (intranet only)"
NAMED = frozenset({"intranet", "127.0.0.1"})


@pytest.mark.parametrize(
    ("host", "verdict"),
    [
        ("example.org", None),
        ("localhost", None),
        ("app.localhost", None),
        ("127.0.0.1", None),
        ("[::1]", None),
        ("intranet", None),  # a host the user named: a start URL's or a site prefix's
        ("xn--bcher-kva.example", None),
        ("a" * 63 + ".example", None),
        ("www", Verdict(State.WARNING, Reason.INVALID_HOST, f"invalid host: www {SINGLE}")),
        ("wiki", Verdict(State.WARNING, Reason.INVALID_HOST, f"invalid host: wiki {SINGLE}")),
        ("foo..com", Verdict(State.BROKEN, Reason.INVALID_HOST, "invalid host: foo..com has an empty label")),
        (".foo.com", Verdict(State.BROKEN, Reason.INVALID_HOST, "invalid host: .foo.com has an empty label")),
        ("a" * 64 + ".example", Verdict(State.BROKEN, Reason.INVALID_HOST, f"invalid host: {'a' * 64}.example is longer than a DNS name may be")),
        ("a." * 127 + "example", Verdict(State.BROKEN, Reason.INVALID_HOST, f"invalid host: {'a.' * 127}example is longer than a DNS name may be")),
    ],
)  # fmt: skip
def test_hosts_judged_without_a_dns_query(host: str, verdict: Verdict | None) -> None:
    assert judge_host(host, NAMED) == verdict


# ---- the request plan --------------------------------------------------------------------

SITE_ANCHORS = RuleOptions(check_anchors=AnchorMode.SITE)
ALL_ANCHORS = RuleOptions(check_anchors=AnchorMode.ALL)
ALL_SOFT = RuleOptions(soft_404=Soft404Mode.ALL)
ALL_ANCHORS_SOFT = RuleOptions(check_anchors=AnchorMode.ALL, soft_404=Soft404Mode.ALL)


@pytest.mark.parametrize(
    ("action", "url", "options", "planned"),
    [
        (Action.PARSE, U, RuleOptions(), Plan("GET", True, True, "")),
        (Action.CHECK, U, RuleOptions(), Plan("HEAD", True, False, "")),
        (Action.CHECK, U, SITE_ANCHORS, Plan("HEAD", True, False, "")),
        (Action.CHECK, U, ALL_ANCHORS, Plan("GET", False, True, "; for its anchors")),
        (Action.CHECK, "file:///d/a.html", SITE_ANCHORS, Plan("GET", False, True, "; for its anchors")),
        (Action.CHECK, "file:///d/a.html", RuleOptions(), Plan("HEAD", True, False, "")),
        (Action.PARSE, U, ALL_ANCHORS, Plan("GET", True, True, "")),
        (Action.CHECK, U, ALL_SOFT, Plan("GET", False, True, "; for a soft 404")),
        (Action.CHECK, U, ALL_ANCHORS_SOFT, Plan("GET", False, True, "; for its anchors")),
        (Action.PARSE, U, ALL_SOFT, Plan("GET", True, True, "")),
    ],
)  # fmt: skip
def test_request_plan(action: Action, url: str, options: RuleOptions, planned: Plan) -> None:
    assert plan(action, url, options) == planned


@pytest.mark.parametrize(
    ("status", "reachable", "transient", "refused", "again"),
    [
        (405, True, False, False, True),  # HEAD not allowed: many answer HEAD wrongly
        (404, True, False, False, True),
        (500, True, False, False, True),
        (503, True, False, False, True),
        (503, True, False, True, False),  # with Retry-After: the host's limit
        (429, True, False, True, False),  # asked to slow down: a GET would not help
        (429, True, False, False, False),  # after the retries, the same
        (200, True, False, False, False),
        (301, True, False, False, False),
        (None, True, False, False, True),  # the connection broke on HEAD
        (None, True, True, False, False),  # a time-out: the retries already tried
        (None, False, False, False, False),  # no such host: a GET finds none either
    ],
)
def test_get_after_a_failed_head(
    status: int | None, reachable: bool, transient: bool, refused: bool, again: bool
) -> None:
    assert get_after_head(status, reachable, transient, refused) is again


LONG = "the host asks for a pause of {} s, longer than 300 s"


@pytest.mark.parametrize(
    ("status", "retry_after", "remaining", "reset", "pace"),
    [
        (200, None, None, None, HostPace()),
        (200, None, 42, 30.0, HostPace(room=42)),  # requests left: as many may go
        (200, None, 0, 30.0, HostPace(30.0)),  # the last one of the window: wait for the next
        (200, None, 0, None, HostPace()),  # no window said: nothing to wait for
        (200, None, 5, None, HostPace(room=5)),
        (200, None, 0, 3600.0, HostPace()),  # longer than a pass waits: find out per URL
        (304, 5.0, None, None, HostPace()),  # a Retry-After on an answer is no refusal
        (429, 2.0, None, None, HostPace(2.0, True, told=True)),
        # Retry-After first, as it is the answer's
        (429, 2.0, 0, 40.0, HostPace(2.0, True, told=True)),
        (429, None, 0, 40.0, HostPace(40.0, True, told=True)),
        (429, None, 3, 40.0, HostPace(LIMIT_PAUSE, True)),  # a window not spent: a moment,
        # and the URL's --retries
        (429, None, None, None, HostPace(LIMIT_PAUSE, True)),
        (429, 0.0, None, None, HostPace(0.0, True, told=True)),
        (429, 3600.0, None, None, HostPace(too_long=LONG.format(3600))),
        (429, None, 0, 900.0, HostPace(too_long=LONG.format(900))),
        (503, 10.0, None, None, HostPace(10.0, True, told=True)),
        (503, None, None, None, HostPace()),  # down, not limited: the URL's own retries
        (503, None, 0, 10.0, HostPace(10.0)),
        (502, 10.0, None, None, HostPace()),
        (None, None, None, None, HostPace()),
    ],
)
def test_what_an_answer_says_of_its_hosts_pace(
    status: int | None,
    retry_after: float | None,
    remaining: int | None,
    reset: float | None,
    pace: HostPace,
) -> None:
    assert host_pace(status, retry_after, remaining, reset) == pace


@pytest.mark.parametrize(
    ("known", "conditional", "headers"),
    [
        ({}, True, {}),
        ({"referrer": "http://h.test/"}, False, {"Referer": "http://h.test/"}),
        ({"state": State.OK, "etag": '"x"'}, True, {"If-None-Match": '"x"'}),
        ({"state": State.OK, "etag": '"x"'}, False, {}),
        ({"state": State.WARNING, "last_modified": "Tue, 1 Dec 2026"}, True, {"If-Modified-Since": "Tue, 1 Dec 2026"}),
        ({"state": State.BROKEN, "etag": '"x"'}, True, {}),  # a broken answer is not reused
        ({"state": None, "etag": '"x"'}, True, {}),
    ],
)  # fmt: skip
def test_request_headers(known: dict[str, Any], conditional: bool, headers: dict[str, str]) -> None:
    assert request_headers(task(**known), conditional) == headers


# ---- judging an answer -----------------------------------------------------------------

LISTS = RuleOptions(accept=frozenset({403}), warn=frozenset({404}), broken=frozenset({200}))


@pytest.mark.parametrize(
    ("status", "options", "state"),
    [
        (200, RuleOptions(), State.OK),
        (204, RuleOptions(), State.OK),
        (304, RuleOptions(), State.OK),
        (301, RuleOptions(), State.REDIRECT),
        (308, RuleOptions(), State.REDIRECT),
        (401, RuleOptions(), State.WARNING),
        (403, RuleOptions(), State.WARNING),
        (429, RuleOptions(), State.WARNING),
        (999, RuleOptions(), State.WARNING),
        (404, RuleOptions(), State.BROKEN),
        (410, RuleOptions(), State.BROKEN),
        (500, RuleOptions(), State.BROKEN),
        (102, RuleOptions(), State.WARNING),
        # the user's lists win: broken over warn over accept
        (403, LISTS, State.OK),
        (404, LISTS, State.WARNING),
        (200, LISTS, State.BROKEN),
    ],
)
def test_status(status: int, options: RuleOptions, state: State) -> None:
    assert judge_status(status, options) is state


TIMED_OUT = Verdict(State.BROKEN, Reason.TIMEOUT, "timed out after 15s")


@pytest.mark.parametrize(
    ("status", "failure", "page", "verdict", "flags"),
    [
        (200, None, True, Verdict(State.OK), {"parse"}),
        (200, None, False, Verdict(State.OK), set()),
        (304, None, False, Verdict(State.OK), {"unchanged"}),
        (301, None, False, Verdict(State.REDIRECT), {"redirect"}),
        (404, None, True, Verdict(State.BROKEN, Reason.HTTP_STATUS, "HTTP 404"), {"ghost"}),
        (403, None, True, Verdict(State.WARNING, Reason.HTTP_STATUS, "HTTP 403"), set()),
        (None, TIMED_OUT, False, TIMED_OUT, {"ghost"}),
        (None, None, False, Verdict(State.BROKEN, Reason.CONNECTION, "no answer"), {"ghost"}),
    ],
)
def test_judging_an_answer(
    status: int | None, failure: Verdict | None, page: bool, verdict: Verdict, flags: set[str]
) -> None:
    judged = judge(status, failure, page, RuleOptions())
    assert judged.verdict == verdict
    shown = {name for name in ("unchanged", "redirect", "parse", "ghost") if getattr(judged, name)}
    assert shown == flags


def test_a_page_cut_at_max_size_is_a_warning_and_a_parse_failure_broken() -> None:
    options = RuleOptions(max_size=1024)
    assert judge_page(State.OK, False, options) == Verdict(State.OK)
    assert judge_page(State.OK, True, options) == Verdict(
        State.WARNING, Reason.TOO_LARGE, "page larger than --max-size (1024 bytes)"
    )
    assert parse_failed("parse timeout after 30s") == Verdict(
        State.BROKEN, Reason.PARSE_ERROR, "parse timeout after 30s"
    )


def soon(date: str, words: str) -> Verdict:
    error = f"certificate of example.org expires {date} ({words})"
    return Verdict(State.WARNING, Reason.CERT_EXPIRY, error)


@pytest.mark.parametrize(
    ("state", "expires", "days", "verdict"),
    [
        # NOW is 2027-01-15 08:00 UTC; days are counted by the calendar, in UTC
        (State.OK, NOW + 5 * DAY, 14, soon("2027-01-20", "in 5 days")),
        (State.OK, NOW + 3 * DAY - 1, 14, soon("2027-01-18", "in 3 days")),
        (State.OK, NOW + DAY, 14, soon("2027-01-16", "in 1 day")),
        (State.OK, NOW + 3600, 14, soon("2027-01-15", "today")),
        (State.OK, NOW + 16 * 3600, 14, soon("2027-01-16", "in 1 day")),  # after midnight
        (State.OK, NOW + 14 * DAY + 15 * 3600, 14, soon("2027-01-29", "in 14 days")),
        (State.OK, NOW + 15 * DAY, 14, None),  # not within the days
        (State.OK, NOW + 60 * DAY, 14, None),
        (State.OK, NOW + 60 * DAY, 90, soon("2027-03-16", "in 60 days")),
        (State.OK, NOW + 5 * DAY, 0, None),  # --cert-expiry 0: never
        (State.OK, NOW - 60, 14, None),  # expired: a TLS error, not this warning
        (State.OK, None, 14, None),  # plain HTTP, an unverified host: nothing known
        (State.BROKEN, NOW + 5 * DAY, 14, None),  # its own verdict stands
        (State.WARNING, NOW + 5 * DAY, 14, None),
        (State.REDIRECT, NOW + 5 * DAY, 14, None),
    ],
)
def test_a_certificate_ending_soon_is_a_warning_on_a_good_answer(
    state: State, expires: float | None, days: int, verdict: Verdict | None
) -> None:
    assert expiring_certificate(state, "example.org", expires, NOW, days) == verdict


@pytest.mark.parametrize(
    ("known", "status"),
    [
        ({"state": State.OK, "http_status": 200}, 200),
        ({"state": State.OK, "http_status": None}, None),
        ({"state": State.WARNING, "http_status": 403}, None),
    ],
)
def test_an_unchanged_url_keeps_its_good_status(known: dict[str, Any], status: int | None) -> None:
    assert unchanged_status(task(**known)) == status


@pytest.mark.parametrize(
    ("known", "now", "follows"),
    [
        ({"action": Action.PARSE, "links_at": NOW - DAY, "last_good": NOW - DAY}, NOW, True),
        ({"action": Action.PARSE, "links_at": NOW - DAY, "last_good": NOW - 8 * DAY}, NOW, False),
        ({"action": Action.PARSE, "links_at": None, "last_good": NOW - DAY}, NOW, False),
        ({"action": Action.PARSE, "links_at": NOW - DAY, "last_good": None}, NOW, False),
        ({"action": Action.CHECK, "links_at": NOW - DAY, "last_good": NOW - DAY}, NOW, False),
    ],
)
def test_ghost_links_of_a_failing_page(known: dict[str, Any], now: float, follows: bool) -> None:
    assert follows_ghost(task(**known), now, RuleOptions()) is follows


@pytest.mark.parametrize(
    ("location", "target", "invalid", "verdict"),
    [
        ("/new", "http://h.test/new", None, Verdict(State.REDIRECT)),
        # browsers show a 3xx without a Location as it is: no redirect, but nothing dead
        (None, None, None, Verdict(State.WARNING, Reason.REDIRECT, "HTTP 301 redirect without a target (no Location header)")),
        ("http://[x", None, "bad host", Verdict(State.BROKEN, Reason.REDIRECT, "redirect to an invalid URL (bad host): http://[x")),
        ("/page", U, None, Verdict(State.BROKEN, Reason.REDIRECT_LOOP, "redirect loop: redirects to itself")),
        ("javascript:go()", "javascript:go()", None, Verdict(State.BROKEN, Reason.REDIRECT, "redirect to a javascript: URL, which browsers do not follow")),
        ("data:,x", "data:,x", None, Verdict(State.BROKEN, Reason.REDIRECT, "redirect to a data: URL, which browsers do not follow")),
        # a browser hands these to another program; the target is recorded as a link to it is
        ("ftp://h.test/f", "ftp://h.test/f", None, Verdict(State.REDIRECT)),
        ("mailto:a@h.test", "mailto:a@h.test", None, Verdict(State.REDIRECT)),
    ],
)  # fmt: skip
def test_judging_a_redirect(
    location: str | None, target: str | None, invalid: str | None, verdict: Verdict
) -> None:
    assert judge_redirect(U, 301, location, target, invalid) == verdict


def test_a_local_folder_redirect_stays_among_local_files() -> None:
    assert unfollowed_redirect("file:///d/sub/", "file:///d/sub") is None
    assert unfollowed_redirect("file:///etc/passwd", "http://h.test/") is not None


@pytest.mark.parametrize(
    ("redirects", "failures"),
    [
        ({"a": "b", "b": "c"}, {}),
        ({"a": "b", "b": "a"}, {"a": "redirect loop: a -> b -> a", "b": "redirect loop: b -> a -> b"}),
        ({f"u{n}": f"u{n + 1}" for n in range(12)}, {"u0": "too many redirects (more than 10 hops)", "u1": "too many redirects (more than 10 hops)"}),
    ],
)  # fmt: skip
def test_redirect_chains(redirects: dict[str, str], failures: dict[str, str]) -> None:
    assert redirect_failures(redirects) == failures


@pytest.mark.parametrize(
    ("unreachable", "error", "denial", "verdict"),
    [
        (None, None, None, None),
        (None, None, "forbidden by robots.txt", Verdict(State.DISALLOWED, Reason.ROBOTS, "forbidden by robots.txt")),
        (Reason.CONNECTION, "connection refused", None, Verdict(State.BROKEN, Reason.CONNECTION, "connection refused")),
        (Reason.DNS, "DNS failure: cannot resolve h.test", None, Verdict(State.BROKEN, Reason.DNS, "DNS failure: cannot resolve h.test")),
    ],
)  # fmt: skip
def test_robots(
    unreachable: Reason | None, error: str | None, denial: str | None, verdict: Verdict | None
) -> None:
    assert robots_verdict(unreachable, error, denial) == verdict


# ---- discovered URLs and their limits --------------------------------------------------


@pytest.mark.parametrize(
    ("action", "invalid", "seen", "max_urls", "similar", "max_similar", "verdict"),
    [
        (Action.CHECK, None, 10, 100, 0, 0, None),
        (Action.PARSE, None, 99, 100, 0, 0, None),
        (Action.CHECK, "invalid URL: bad port", 10, 100, 0, 0, Verdict(State.BROKEN, Reason.INVALID_URL, "invalid URL: bad port")),
        (Action.RECORD, None, 10, 100, 0, 0, Verdict(State.UNCHECKED)),
        (Action.RECORD, None, 100, 100, 0, 0, Verdict(State.UNCHECKED)),  # recorded, never held back
        (Action.CHECK, None, 100, 100, 0, 0, Verdict(State.UNCHECKED, Reason.LIMIT, "not checked: --max-urls limit of 100 URLs reached")),
        (Action.CHECK, None, 100, 0, 0, 0, None),  # 0: no limit
        (Action.CHECK, None, 10, 100, 3, 3, Verdict(State.UNCHECKED, Reason.LIMIT, "not checked: --max-similar limit of 3 URLs like /d/#")),
        (Action.CHECK, None, 10, 100, 2, 3, None),
        (Action.CHECK, "invalid URL: x", 100, 100, 3, 3, Verdict(State.BROKEN, Reason.INVALID_URL, "invalid URL: x")),
        # a hook or rule that records a link that is no URL: unchecked, still saying why
        (Action.RECORD, "invalid URL: invalid host", 10, 100, 0, 0, Verdict(State.UNCHECKED, Reason.INVALID_URL, "invalid URL: invalid host")),
        (Action.PARSE, "invalid URL: invalid host", 10, 100, 0, 0, Verdict(State.BROKEN, Reason.INVALID_URL, "invalid URL: invalid host")),
    ],
)  # fmt: skip
def test_discovered_urls_and_their_limits(
    action: Action,
    invalid: str | None,
    seen: int,
    max_urls: int,
    similar: int,
    max_similar: int,
    verdict: Verdict | None,
) -> None:
    pattern = "/d/#" if max_similar else None
    assert discovered(action, invalid, seen, max_urls, pattern, similar, max_similar) == verdict


# ---- the standing the memory keeps -----------------------------------------------------


@pytest.mark.parametrize(
    ("before", "status_before", "last_good", "failing_since", "after", "status", "kept"),
    [
        (None, None, None, None, State.OK, 200, (NOW, None, True)),
        (State.OK, 200, NOW - DAY, None, State.OK, 200, (NOW, None, False)),
        (State.OK, 200, NOW - DAY, None, State.BROKEN, 404, (NOW - DAY, NOW, True)),
        (State.BROKEN, 404, NOW - DAY, NOW - 60, State.BROKEN, 404, (NOW - DAY, NOW - 60, False)),
        (State.BROKEN, 404, NOW - DAY, NOW - 60, State.BROKEN, 500, (NOW - DAY, NOW - 60, True)),
        (State.BROKEN, 404, None, NOW - 60, State.OK, 200, (NOW, None, True)),
        (State.OK, 200, NOW - DAY, None, State.REDIRECT, 301, (NOW, None, True)),
        (State.OK, 200, NOW - DAY, None, State.WARNING, 403, (NOW - DAY, None, True)),
        (None, None, None, None, State.BROKEN, None, (None, NOW, True)),
    ],
)  # fmt: skip
def test_standing(
    before: State | None,
    status_before: int | None,
    last_good: float | None,
    failing_since: float | None,
    after: State,
    status: int | None,
    kept: tuple[float | None, float | None, bool],
) -> None:
    assert standing(before, status_before, last_good, failing_since, after, status, NOW) == kept


def test_a_warning_of_the_hosts_certificate_is_a_good_answer_still() -> None:
    expiring = standing(State.OK, 200, NOW - DAY, None, State.WARNING, 200, NOW, Reason.CERT_EXPIRY)
    assert expiring == (NOW, None, True)
    too_large = standing(State.OK, 200, NOW - DAY, None, State.WARNING, 200, NOW, Reason.TOO_LARGE)
    assert too_large == (NOW - DAY, None, True)


@pytest.mark.parametrize(
    ("state", "last_good", "failing_since", "after", "damp_new", "reportable"),
    [
        (State.BROKEN, None, NOW, 0.0, False, True),
        (State.OK, None, None, 0.0, False, False),
        (State.WARNING, None, None, 0.0, False, False),
        (State.BROKEN, NOW - 4 * DAY, NOW - 4 * DAY, 3 * DAY, False, True),
        (State.BROKEN, NOW - DAY, NOW - DAY, 3 * DAY, False, False),
        # never good: reported at once, however long --report-after is
        (State.BROKEN, None, NOW, 3 * DAY, False, True),
        (State.BROKEN, None, NOW - DAY, 3 * DAY, False, True),
        # ... unless --damp-new holds it back as long as one that was good
        (State.BROKEN, None, NOW, 3 * DAY, True, False),
        (State.BROKEN, None, NOW - DAY, 3 * DAY, True, False),
        (State.BROKEN, None, NOW - 4 * DAY, 3 * DAY, True, True),
        (State.BROKEN, NOW - DAY, NOW - DAY, 3 * DAY, True, False),
        (State.BROKEN, None, NOW, 0.0, True, True),
    ],
)
def test_reportable(
    state: State,
    last_good: float | None,
    failing_since: float | None,
    after: float,
    damp_new: bool,
    reportable: bool,
) -> None:
    assert is_reportable(state, NOW, last_good, failing_since, after, damp_new) is reportable


@pytest.mark.parametrize(
    ("robots", "off", "url", "obeyed"),
    [
        (True, (), "http://h.test/a", True),
        (False, (), "http://h.test/a", False),  # --no-robots
        (True, ("http://h.test/staging/",), "http://h.test/staging/a", False),
        (True, ("http://h.test/staging/",), "http://h.test/live/a", True),
        (True, ("http://h.test/staging/",), "http://h.test/", True),  # robots.txt still read
        (True, ("http://h.test/",), "http://h.test/", False),  # the whole host: not read
        (True, ("http://h.test/",), "http://other.test/", True),
    ],
)
def test_obeys_robots(robots: bool, off: tuple[str, ...], url: str, obeyed: bool) -> None:
    assert obeys_robots(url, RuleOptions(robots=robots, robots_off=off)) is obeyed


@pytest.mark.parametrize(
    ("limit", "workers", "shares"),
    [
        (6, 1, [6]),
        (6, 3, [2, 2, 2]),
        (7, 3, [3, 2, 2]),  # the oldest take the remainder
        (2, 3, [1, 1, 0]),  # fewer than the crew: the youngest have none
        (1, 3, [1, 0, 0]),
    ],
)
def test_a_crew_shares_a_limit_that_adds_up_to_it(
    limit: int, workers: int, shares: list[int]
) -> None:
    assert [share_of(limit, workers, rank) for rank in range(workers)] == shares


# ---- soft 404s ----------------------------------------------------------------------------

NOT_FOUND = Look("Page not found", 400, 0b1111)
PROBED_PAGE = Probe("http://h", "/a/", 200, 0.0, None, NOT_FOUND)
PROBED_HOME = Probe("http://h", "/c/", 302, 0.0, "http://h/", None)
HONEST = Probe("http://h", "/d/", 404, 0.0)
SOFT = (State.BROKEN, Reason.SOFT_404)


@pytest.mark.parametrize(
    ("probe", "status", "redirect_to", "page", "expected"),
    [
        (PROBED_PAGE, 200, None, NOT_FOUND, SOFT),
        (PROBED_PAGE, 200, None, NOT_FOUND._replace(size=420, simhash=0b1111_0011), SOFT),
        (PROBED_PAGE, 203, None, NOT_FOUND._replace(size=380, simhash=0b11_1111), SOFT),
        (PROBED_PAGE, 200, None, NOT_FOUND._replace(simhash=0b111_1111_1111), None),  # 7 bits
        (PROBED_PAGE, 200, None, NOT_FOUND._replace(size=480), None),  # 20% longer
        (PROBED_PAGE, 200, None, NOT_FOUND._replace(title="Our shop"), None),
        (Probe("http://h", "/", 200, 0.0, None, Look("", 10, 0)), 200, None, Look("", 40, 0), SOFT),
        (Probe("http://h", "/", 200, 0.0, None, Look("", 10, 0)), 200, None, Look("", 43, 0), None),
        (PROBED_PAGE, 200, None, None, None),  # not an HTML page
        (PROBED_PAGE, 301, "http://h/", None, None),
        (PROBED_HOME, 301, "http://h/", None, SOFT),
        (PROBED_HOME, 302, "http://h/a/", None, None),  # redirects elsewhere
        (PROBED_HOME, 200, None, Look("Home", 400, 0), None),
        (HONEST, 200, None, NOT_FOUND, None),
        (Probe("http://h", "/e/", None, 0.0), 200, None, NOT_FOUND, None),
    ],
)  # fmt: skip
def test_judge_soft_404(
    probe: Probe,
    status: int,
    redirect_to: str | None,
    page: Look | None,
    expected: tuple[State, Reason] | None,
) -> None:
    verdict = judge_soft_404(probe, status, redirect_to, page)
    assert (verdict and (verdict.state, verdict.reason)) == expected


@pytest.mark.parametrize(
    ("action", "mode", "compared"),
    [
        (Action.PARSE, Soft404Mode.SITE, True),
        (Action.CHECK, Soft404Mode.SITE, False),
        (Action.CHECK, Soft404Mode.ALL, True),
        (Action.PARSE, Soft404Mode.ALL, True),
        (Action.PARSE, Soft404Mode.OFF, False),
        (Action.CHECK, Soft404Mode.OFF, False),
        (Action.RECORD, Soft404Mode.ALL, False),
    ],
)
def test_which_urls_are_compared_with_a_probe(
    action: Action, mode: Soft404Mode, compared: bool
) -> None:
    assert probes_for(action, RuleOptions(soft_404=mode)) is compared


@pytest.mark.parametrize(
    ("url", "folder"),
    [
        ("http://h/a/b.html", ("http://h", "/a/")),
        ("https://h:8443/x?q=/y/", ("https://h:8443", "/")),
        ("http://h/a/b/c?x=1", ("http://h", "/a/b/")),
        ("http://h/a/", None),  # a folder's own URL
        ("http://h/", None),
        ("file:///d/a.html", None),
        ("mailto:a@h", None),
    ],
)
def test_folder_of(url: str, folder: tuple[str, str] | None) -> None:
    assert folder_of(url) == folder


@pytest.mark.parametrize(
    ("status", "content_type", "suspect"),
    [
        (200, "text/html", True),
        (206, "application/xhtml+xml", True),
        (200, "text/markdown", False),
        (200, "application/pdf", False),
        (301, None, True),
        (304, "text/html", False),  # what it was
        (404, "text/html", False),
        (None, None, False),
    ],
)
def test_which_answers_may_be_soft_404s(
    status: int | None, content_type: str | None, suspect: bool
) -> None:
    assert may_be_soft_404(status, content_type) is suspect


@pytest.mark.parametrize(
    ("status", "kept"),
    [(200, True), (302, True), (404, True), (410, True), (403, True), (429, False), (500, False),
     (503, False), (None, False)],
)  # fmt: skip
def test_which_probes_the_memory_keeps(status: int | None, kept: bool) -> None:
    assert probe_kept(status) is kept


def test_a_probe_is_made_again_after_30_days() -> None:
    assert probe_due(None, NOW)
    assert not probe_due(Probe("http://h", "/", 404, NOW - 29 * DAY), NOW)
    assert probe_due(Probe("http://h", "/", 404, NOW - 31 * DAY), NOW)
    # a host's probes in one run are bounded: a crawler trap's folders are endless
    assert probe_due(None, NOW, MAX_PROBES - 1)
    assert not probe_due(None, NOW, MAX_PROBES)
