"""The configuration file end to end: keys, rules, rewrites, hooks, and every kind of bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import Runner, Serve, by_url
from tests.sitesrv import Page, html


def write(folder: Path, name: str, text: str, mode: int = 0o644) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def deep_site() -> dict[str, Page]:
    return {
        "/": Page(html("<html><body>", '<a href="/a/b/c.html">deep</a>', "</body></html>")),
        "/a/b/c.html": Page("<p>deep</p>"),
    }


def assert_config_error(proc, *names: str) -> None:  # type: ignore[no-untyped-def]
    """Exit 2, exactly one line on stderr naming the file (and key), no report."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    for name in names:
        assert name in lines[0], (name, lines[0])


# ---- keys, files and precedence ------------------------------------------------------------


def test_linkpatrol_toml_in_cwd_is_read_with_dashed_key(run: Runner, serve: Serve) -> None:
    site = serve(deep_site())
    write(run.cwd, "linkpatrol.toml", "max-depth = 2\n")

    code, report = run.check_json(site.url("/"))

    deep = by_url(report)[site.url("/a/b/c.html")]
    assert deep["state"] == "unchecked"
    assert "--max-depth 2" in deep["error"]
    assert site.counts()["/a/b/c.html"] == 0
    assert code == 0


def test_config_option_names_the_file_and_underscore_key(run: Runner, serve: Serve) -> None:
    site = serve(deep_site())
    # the file in the current directory is not read when --config names another one
    write(run.cwd, "linkpatrol.toml", "no_such_key = 1\n")
    sub = run.cwd / "conf"
    sub.mkdir()
    write(sub, "other.toml", 'max_depth = 2\nhooks = "hooks.py"\n')
    # a relative hooks path is found next to the configuration file
    write(sub, "hooks.py", "def rewrite(url):\n    return url.replace('/c.html', '/c/d.html')\n")

    code, report = run.check_json(site.url("/"), "--config", str(sub / "other.toml"))

    entry = by_url(report)[site.url("/a/b/c/d.html")]
    assert entry["state"] == "unchecked"
    assert "--max-depth 2" in entry["error"]
    assert code == 0


def test_command_line_wins_over_the_file(run: Runner, serve: Serve) -> None:
    site = serve(deep_site())
    write(run.cwd, "linkpatrol.toml", 'max-depth = 2\nformat = "text"\n')

    code, report = run.check_json(site.url("/"), "--max-depth", "5")

    assert by_url(report)[site.url("/a/b/c.html")]["state"] == "ok"
    assert site.counts()["/a/b/c.html"] == 1
    assert code == 0


def test_start_urls_format_and_db_from_the_file(run: Runner, serve: Serve) -> None:
    site = serve(deep_site())
    write(
        run.cwd,
        "linkpatrol.toml",
        f'start = ["{site.url("/")}"]\nformat = "json"\ndb = "from-config.db"\n',
    )

    proc = run("check")

    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["start_urls"] == [site.url("/")]
    assert (run.cwd / "from-config.db").is_file()


# ---- rules and rewrites -----------------------------------------------------------------------


def test_ordered_rules_first_match_wins(run: Runner, serve: Serve) -> None:
    site = serve(
        {
            "/": Page(
                html(
                    "<html><body>",
                    '<a href="/shop/cart/add">cart</a>',
                    '<a href="/shop/item.html">item</a>',
                    '<a href="/x/shop/list.html">list</a>',
                    '<a href="/plain.html">plain</a>',
                    "</body></html>",
                )
            ),
            "/shop/cart/add": Page("added"),
            "/shop/item.html": Page("item"),
            "/x/shop/list.html": Page(html('<a href="/x/never.html">n</a>')),
            "/plain.html": Page(html('<a href="/linked.html">l</a>')),
            "/linked.html": Page("fine"),
        }
    )
    write(
        run.cwd,
        "linkpatrol.toml",
        f"""
[[rule]]
prefix = "{site.url("/shop/cart/")}"
action = "ignore"

[[rule]]
glob = "{site.url("/shop/*")}"
action = "record"

[[rule]]
regex = '/shop/'
action = "check"
""",
    )

    code, report = run.check_json(site.url("/"))

    urls = by_url(report)
    assert site.url("/shop/cart/add") not in urls
    assert urls[site.url("/shop/item.html")]["action"] == "record"
    assert urls[site.url("/shop/item.html")]["state"] == "unchecked"
    listing = urls[site.url("/x/shop/list.html")]
    assert (listing["action"], listing["state"]) == ("check", "ok")
    assert site.url("/x/never.html") not in urls  # checked only, so not parsed
    assert urls[site.url("/plain.html")]["action"] == "parse"
    assert urls[site.url("/linked.html")]["state"] == "ok"
    counts = site.counts()
    assert counts["/shop/cart/add"] == 0
    assert counts["/shop/item.html"] == 0
    assert site.counts("GET")["/x/shop/list.html"] == 0
    assert code == 0


def test_rewrites_alias_hosts_strip_index_and_unwrap_redirector(run: Runner, serve: Serve) -> None:
    far = serve({"/ok": Page("fine"), "/robots.txt": Page("", status=404)})
    site = serve({})
    port = site.port
    site.pages.update(
        {
            "/": Page(
                html(
                    "<html><body>",
                    f'<a href="http://localhost:{port}/x.html">alias</a>',
                    '<a href="/x.html">same</a>',
                    '<a href="/docs/index.html">docs index</a>',
                    '<a href="/docs/">docs</a>',
                    f'<a href="/cgi/go/{far.url("/ok")}">out</a>',
                    "</body></html>",
                )
            ),
            "/x.html": Page("x"),
            "/docs/": Page(html('<a href="index.html">self</a>')),
            "/docs/index.html": Page("<p>never asked for</p>"),
        }
    )
    write(
        run.cwd,
        "linkpatrol.toml",
        r"""
[[rewrite]]
regex = '^http://localhost:(\d+)/'
replace = 'http://127.0.0.1:\1/'

[[rewrite]]
regex = '/index\.html$'
replace = '/'

[[rewrite]]
regex = '^http://127\.0\.0\.1:\d+/cgi/go/(https?://.+)$'
replace = '\1'
""",
    )

    code, report = run.check_json(site.url("/"))

    assert code == 0, report
    urls = by_url(report)
    assert not [u for u in urls if "localhost" in u or "index.html" in u or "/cgi/" in u]
    assert sorted(r["line"] for r in urls[site.url("/x.html")]["referrers"]) == [2, 3]
    docs = urls[site.url("/docs/")]
    assert sorted((r["url"], r["line"]) for r in docs["referrers"]) == [
        (site.url("/"), 4),
        (site.url("/"), 5),
        (site.url("/docs/"), 1),
    ]
    outside = urls[far.url("/ok")]
    assert (outside["action"], outside["state"]) == ("check", "ok")
    assert outside["referrers"] == [{"url": site.url("/"), "line": 6}]
    counts = site.counts()
    assert counts["/x.html"] == 1
    assert counts["/docs/"] == 1
    assert counts["/docs/index.html"] == 0
    assert not [p for p in counts if p.startswith("/cgi/")]
    assert far.counts()["/ok"] == 1


def test_hooks_file_action_and_rewrite(run: Runner, serve: Serve) -> None:
    site = serve(
        {
            "/": Page(
                html(
                    "<html><body>",
                    '<a href="/old/a.html">moved</a>',
                    '<a href="/manual.pdf">pdf</a>',
                    '<a href="/private/x.html">private</a>',
                    "</body></html>",
                )
            ),
            "/new/a.html": Page("a"),
            "/manual.pdf": Page(b"%PDF", content_type="application/pdf"),
            "/private/x.html": Page("secret"),
        }
    )
    write(
        run.cwd,
        "hooks.py",
        """
def rewrite(url: str) -> str:
    return url.replace("/old/", "/new/")


def action(url: str) -> str | None:
    if url.endswith(".pdf"):
        return "record"
    if "/private/" in url:
        return "ignore"
    return None
""",
    )
    write(run.cwd, "linkpatrol.toml", 'hooks = "hooks.py"\n')

    code, report = run.check_json(site.url("/"))

    assert code == 0
    urls = by_url(report)
    assert urls[site.url("/new/a.html")]["state"] == "ok"
    assert site.url("/old/a.html") not in urls
    assert urls[site.url("/manual.pdf")]["action"] == "record"
    assert site.url("/private/x.html") not in urls
    counts = site.counts()
    assert counts["/new/a.html"] == 1
    assert counts["/old/a.html"] == counts["/manual.pdf"] == counts["/private/x.html"] == 0


# ---- bad configuration: one line, exit 2, no report --------------------------------------------

BAD_CONFIGS = {
    "unknown key": ("bogus-key = 1\n", ["linkpatrol.toml", "bogus-key"]),
    "wrong type": ('max-depth = "deep"\n', ["linkpatrol.toml", "max-depth"]),
    "out of range": ("concurrency = 0\n", ["linkpatrol.toml", "concurrency"]),
    "bool for number": ("retries = true\n", ["linkpatrol.toml", "retries"]),
    "bad duration": ('max-time = "forever"\n', ["linkpatrol.toml", "max-time"]),
    "bad database wait": ('db-wait = "soon"\n', ["linkpatrol.toml", "db-wait"]),
    "invalid TOML": ("this is = = not toml\n", ["linkpatrol.toml", "TOML"]),
    "bad rule regex": (
        '[[rule]]\nregex = "(unclosed"\naction = "check"\n',
        ["linkpatrol.toml", "rule #1", "regex"],
    ),
    "bad action name": (
        '[[rule]]\nprefix = "http://a/"\naction = "skip"\n',
        ["linkpatrol.toml", "rule #1", "action", "skip"],
    ),
    "rule without pattern": ('[[rule]]\naction = "check"\n', ["linkpatrol.toml", "rule #1"]),
    "bad rewrite regex": (
        '[[rewrite]]\nregex = "[a-"\nreplace = "b"\n',
        ["linkpatrol.toml", "rewrite #1", "regex"],
    ),
    "bad rewrite group": (
        '[[rewrite]]\nregex = "a"\nreplace = "\\\\9"\n',
        ["linkpatrol.toml", "rewrite #1"],
    ),
    "missing hooks file": ('hooks = "nowhere.py"\n', ["linkpatrol.toml", "hooks", "nowhere.py"]),
    "both spellings of a key": (
        "max-depth = 3\nmax_depth = 4\n",
        ["linkpatrol.toml", "max-depth", "max_depth", "twice"],
    ),
    "unknown table": ("[crawl]\nconcurrency = 4\n", ["linkpatrol.toml", "crawl"]),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_invalid_config_is_one_line_exit_2(run: Runner, case: str) -> None:
    text, names = BAD_CONFIGS[case]
    write(run.cwd, "linkpatrol.toml", text)

    proc = run.check("http://127.0.0.1:9/")

    assert_config_error(proc, *names)
    assert not Path(run.db).exists()


def test_missing_config_file_named(run: Runner) -> None:
    proc = run.check("http://127.0.0.1:9/", "--config", "absent.toml")

    assert_config_error(proc, "absent.toml")


def test_bad_command_line_value_names_the_option(run: Runner) -> None:
    proc = run.check("http://127.0.0.1:9/", "--max-urls", "many")

    assert_config_error(proc, "--max-urls")


def test_missing_hooks_option_named(run: Runner) -> None:
    proc = run.check("http://127.0.0.1:9/", "--hooks", "gone.py")

    assert_config_error(proc, "--hooks", "gone.py")


def test_hooks_file_raising_at_import(run: Runner) -> None:
    write(run.cwd, "bad_hooks.py", "raise RuntimeError('boom at import')\n")
    write(run.cwd, "linkpatrol.toml", 'hooks = "bad_hooks.py"\n')

    proc = run.check("http://127.0.0.1:9/")

    assert_config_error(proc, "bad_hooks.py", "boom at import")


def test_hooks_file_with_syntax_error(run: Runner) -> None:
    write(run.cwd, "bad_hooks.py", "def action(url):\n    return (\n")

    proc = run.check("http://127.0.0.1:9/", "--hooks", "bad_hooks.py")

    assert_config_error(proc, "bad_hooks.py", "SyntaxError")


@pytest.mark.skipif(os.name != "posix", reason="file modes")
def test_hooks_file_writable_by_others_is_refused(run: Runner, serve: Serve) -> None:
    site = serve({"/": Page("<p>hi</p>")})
    write(run.cwd, "hooks.py", "def action(url):\n    return None\n", mode=0o666)

    proc = run.check(site.url("/"), "--hooks", "hooks.py")

    assert_config_error(proc, "hooks.py", "writable")
    assert site.counts() == {}


def test_hooks_action_raising_during_the_crawl(run: Runner, serve: Serve) -> None:
    site = serve(
        {
            "/": Page(html("<html><body>", '<a href="/trigger.html">t</a>', "</body></html>")),
            "/trigger.html": Page("x"),
        }
    )
    write(
        run.cwd,
        "hooks.py",
        """
def action(url):
    if url.endswith("/trigger.html"):
        raise ValueError("cannot decide " + url)
    return None
""",
    )
    write(run.cwd, "linkpatrol.toml", 'hooks = "hooks.py"\n')

    proc = run.check(site.url("/"), "--format", "json")

    assert_config_error(proc, "hooks.py", "ValueError", "cannot decide")
    assert site.counts()["/trigger.html"] == 0


@pytest.mark.parametrize(
    ("hooks", "names"),
    [
        ("def action(url):\n    return 'skip'\n", ["hooks.py", "'skip'"]),
        ("def rewrite(url):\n    return 42\n", ["hooks.py", "rewrite"]),
        ("ACTION = 'parse'\n", ["hooks.py", "neither"]),
        ("action = 'parse'\n", ["hooks.py", "'action' must be a function"]),
    ],
)
def test_bad_hooks_answers(run: Runner, serve: Serve, hooks: str, names: list[str]) -> None:
    site = serve({"/": Page(html('<a href="/a">a</a>')), "/a": Page("a")})
    write(run.cwd, "hooks.py", hooks)

    proc = run.check(site.url("/"), "--hooks", "hooks.py")

    assert_config_error(proc, *names)
