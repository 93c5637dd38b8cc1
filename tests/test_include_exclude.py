"""--exclude, --include and --remap: the command line's rules and rewrites, ahead of the
configuration's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from linkpatrol.config import Rewrite, Rule, SiteSettings, build_settings, load_file
from linkpatrol.model import Action
from linkpatrol.options import BY_KEY
from linkpatrol.policy import Policy
from tests.conftest import Runner, Serve, by_url
from tests.sitesrv import Page, html

SITE = "https://example.org/"
PARSE, CHECK, RECORD, IGNORE = Action.PARSE, Action.CHECK, Action.RECORD, Action.IGNORE


def _action(url: str, **given: Any) -> Action:
    return Policy(SiteSettings(start_urls=(SITE,), **given)).action(url)


@pytest.mark.parametrize(
    ("given", "url", "action"),
    [
        ({}, "https://example.org/private/x", PARSE),
        ({"exclude": ("/private/",)}, "https://example.org/private/x", IGNORE),
        ({"exclude": ("/private/",)}, "https://example.org/public/x", PARSE),
        ({"exclude": ("/private/", r"\.pdf$")}, "https://other.example/a.pdf", IGNORE),
        ({"include": ("example\\.org",)}, "https://example.org/a", PARSE),
        ({"include": ("example\\.org",)}, "https://other.example/a", IGNORE),
        ({"include": ("example\\.org",)}, "https://sub.example.org/a", CHECK),
        ({"include": ("^https://example", "other")}, "https://other.example/a", CHECK),
        ({"include": ("^https://example", "other")}, "https://third.example/a", IGNORE),
        # an include wins over the excludes: the exceptions to them
        ({"include": ("example",), "exclude": ("/private/",)}, SITE + "private/x", PARSE),
        ({"include": ("secret",), "exclude": ("/private/",)}, SITE + "private/x", IGNORE),
        ({"include": ("secret",), "exclude": ("/private/",)}, SITE + "private/secret", PARSE),
        ({"include": ("secret",), "exclude": ("/private/",)}, SITE + "public/x", PARSE),
        (  # an included URL goes on to the configuration's rules
            {"include": ("example",), "rules": (Rule("prefix", SITE + "cal/", RECORD),)},
            SITE + "cal/2026",
            RECORD,
        ),
        (  # an excluded URL never reaches them
            {"exclude": ("cal",), "rules": (Rule("prefix", SITE + "cal/", CHECK),)},
            SITE + "cal/2026",
            IGNORE,
        ),
        ({"include": ("example",)}, "mailto:web@example.org", RECORD),
        ({"include": ("example",)}, "mailto:web@other.net", IGNORE),
    ],
)
def test_exclude_and_include_decide_ahead_of_the_rules(
    given: dict[str, Any], url: str, action: Action
) -> None:
    assert _action(url, **given) is action


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("exclude", "/private/", ("/private/",)),
        ("exclude", ["a", "b"], ("a", "b")),
        ("include", [r"^https://example\.org/"], (r"^https://example\.org/",)),
    ],
)
def test_the_keys_take_one_regex_or_a_list(key: str, value: Any, expected: tuple[str]) -> None:
    assert BY_KEY[key].convert(value) == expected


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("exclude", "(unclosed", "invalid regex '(unclosed'"),
        ("include", ["a", "[b-"], "invalid regex '[b-'"),
        ("include", ["a", "(?i)b"], "cannot search a or (?i)b together"),
        ("exclude", 3, "expected a list of strings"),
    ],
)
def test_a_wrong_regex_is_refused(key: str, value: Any, said: str) -> None:
    with pytest.raises(ValueError) as caught:
        BY_KEY[key].convert(value)
    assert said in str(caught.value)


def test_the_command_lines_rules_come_before_the_files(tmp_path: Path) -> None:
    config = tmp_path / "linkpatrol.toml"
    config.write_text('exclude = "x"\n[[rule]]\nprefix = "https://a/"\naction = "record"\n')
    settings = build_settings(load_file(config), {"include": ("a",)})

    assert settings.rule_book == (
        Rule("regex", "x", IGNORE, except_for="a"),  # an include is an exception to it
        Rule("prefix", "https://a/", RECORD),
    )
    alone = build_settings({}, {"include": ("a", "b")})
    assert alone.rule_book == (Rule("unless", "(?:a)|(?:b)", IGNORE),)


URLS = (
    "https://a.test/docs/x",
    "https://a.test/blog/x",
    "https://github.com/ours/x",
    "https://github.com/theirs/x",
)


@pytest.mark.parametrize(
    ("include", "exclude", "ignored"),
    [
        # as lychee has them: includes alone are the only URLs checked ...
        (("/docs/",), (), [URLS[1], URLS[2], URLS[3]]),
        # ... beside excludes, an include is an exception to them, and wins
        (("/docs/",), ("a\\.test",), [URLS[1]]),
        (("github\\.com/ours/",), ("github\\.com",), [URLS[3]]),
        ((), ("/blog/",), [URLS[1]]),
    ],
)
def test_an_include_wins_over_the_excludes(
    include: tuple[str, ...], exclude: tuple[str, ...], ignored: list[str]
) -> None:
    policy = Policy(SiteSettings(include=include, exclude=exclude))
    assert [u for u in URLS if policy.action(u) is Action.IGNORE] == ignored


def _site(serve: Serve) -> tuple[Any, Any]:
    outside = serve({"/far.html": Page(html("<p>far</p>"))})
    site = serve(
        {
            "/": Page(
                html(
                    "<html><body>",
                    '<a href="/a.html">a</a>',
                    '<a href="/private/gone.html">private</a>',
                    f'<a href="{outside.url("/far.html")}">far</a>',
                    "</body></html>",
                )
            ),
            "/a.html": Page(html("<p>a</p>")),
            "/robots.txt": Page("", status=404),
        }
    )
    return site, outside


def test_excluded_urls_are_neither_requested_nor_reported(run: Runner, serve: Serve) -> None:
    site, outside = _site(serve)

    code, report = run.check_json(site.url("/"))
    assert code == 1  # /private/gone.html is a 404

    code, report = run.check_json(site.url("/"), "--exclude", "/private/", "--db", ":memory:")

    assert code == 0, report
    assert site.url("/private/gone.html") not in by_url(report)
    assert site.counts()["/private/gone.html"] == 1  # the first run's request only
    assert by_url(report)[outside.url("/far.html")]["state"] == "ok"


def test_only_included_urls_are_requested(run: Runner, serve: Serve) -> None:
    site, outside = _site(serve)

    code, report = run.check_json(site.url("/"), "--include", f":{site.port}/(?!private/)")

    assert code == 0, report
    assert set(by_url(report)) == {site.url("/"), site.url("/a.html")}
    assert outside.requests() == []
    assert site.counts()["/private/gone.html"] == 0


def test_an_include_makes_an_exception_to_an_exclude(run: Runner, serve: Serve) -> None:
    site, outside = _site(serve)
    Path(run.cwd, "linkpatrol.toml").write_text('exclude = ["/private/", "/far"]\n')

    code, report = run.check_json(site.url("/"), "--include", "/private/gone")

    # /private/ is excluded but for what the include names; what neither names is checked
    assert code == 1, report
    checked = {site.url("/"), site.url("/a.html"), site.url("/private/gone.html")}
    assert set(by_url(report)) == checked
    assert outside.requests() == []


# ---- --remap --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("remap", "rewrites", "url", "normal"),
    [
        ((), (), "https://example.net/a", "https://example.net/a"),
        (
            (r"^https://example\.net/ https://example.org/",),
            (),
            "https://example.net/a",
            SITE + "a",
        ),
        (
            (r"^https://example\.org/go/(\w+)$ https://\1.example/",),
            (),
            SITE + "go/far",
            "https://far.example/",
        ),
        (  # the command line's first, then the file's, each on what the one before made
            (r"\.net/ .com/",),
            (Rewrite(r"\.com/", ".org/"),),
            "https://example.net/a",
            SITE + "a",
        ),
        ((r"  /old/   /new/ ",), (), SITE + "old/x", SITE + "new/x"),
    ],
)
def test_remap_rewrites_ahead_of_the_files_rewrites(
    remap: tuple[str, ...], rewrites: tuple[Rewrite, ...], url: str, normal: str
) -> None:
    policy = Policy(SiteSettings(start_urls=(SITE,), remap=remap, rewrites=rewrites))
    assert policy.normalize(url) == normal


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("onlyone", "expected 'REGEX REPLACEMENT'"),
        ("a b c", "expected 'REGEX REPLACEMENT'"),
        ("(a b", "invalid remap '(a b'"),
        (r"a \3", "invalid remap"),
        (["x y", 4], "expected a list of strings"),
    ],
)
def test_a_wrong_remap_is_refused(value: Any, said: str) -> None:
    with pytest.raises(ValueError) as caught:
        BY_KEY["remap"].convert(value)
    assert said in str(caught.value)


def test_a_remap_from_the_command_line_checks_the_new_address(run: Runner, serve: Serve) -> None:
    new = serve({"/doc.html": Page(html("<p>moved here</p>"))})
    old = serve({"/doc.html": Page("", status=404)})
    site = serve(
        {
            "/": Page(html(f'<a href="{old.url("/doc.html")}">doc</a>')),
            "/robots.txt": Page("", status=404),
        }
    )

    code, report = run.check_json(site.url("/"), "--remap", f"^{old.base}/ {new.base}/")

    assert code == 0, report
    assert by_url(report)[new.url("/doc.html")]["state"] == "ok"
    assert old.requests() == []

    proc = run.check(site.url("/"), "--remap", "^http://")
    assert proc.returncode == 2
    assert "option --remap: expected 'REGEX REPLACEMENT'" in proc.stderr
