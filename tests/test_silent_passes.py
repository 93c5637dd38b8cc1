"""No silent passes: a check that cannot check what it was given says so and fails, and a
pass that requested nothing says that too."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Runner, Serve
from tests.sitesrv import Page, html


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("htp://127.0.0.1:8701/", "the scheme 'htp:' (give an http:, https: or file: URL"),
        ("htp://127.0.0.1:8701/", "did you mean http:?"),
        ("mailto:someone@example.org", "the scheme 'mailto:'"),
        ("javascript:alert(1)", "the scheme 'javascript:'"),
        ("ftp://127.0.0.1/pub/", "the scheme 'ftp:'"),
        ("http://exa mple.org/", "http://exa mple.org/: not a valid URL (invalid host)"),
        ("./no/such/folder", "./no/such/folder: no such file or folder"),
    ],
)
def test_a_start_value_that_cannot_be_checked_is_refused_before_any_write(
    run: Runner, value: str, said: str
) -> None:
    proc = run.check(value)

    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"linkpatrol: {value}"[:20])
    assert said in proc.stderr, proc.stderr
    assert not Path(run.db).exists()


def test_a_start_list_is_refused_for_one_uncheckable_value(run: Runner, serve: Serve) -> None:
    site = serve({"/": Page(html("<p>home</p>"))})

    proc = run.check("-", input=f"{site.url('/')}\nhtp://{site.url('/')[7:]}\n")

    assert proc.returncode == 2 and "the scheme 'htp:'" in proc.stderr
    assert site.hits == [] and not Path(run.db).exists()


def test_a_file_whose_name_looks_like_a_scheme_is_still_a_file(run: Runner) -> None:
    (run.cwd / "docs:old.html").write_text(html("<p>kept for its name</p>"))

    proc = run.check("docs:old.html")

    assert proc.returncode == 0, proc.stderr
    assert "1 requested" in proc.stdout, proc.stdout


def test_a_pass_that_requested_nothing_says_so(run: Runner, serve: Serve) -> None:
    site = serve({"/": Page(html("<a href='/gone'>x</a>"))})
    (run.cwd / "linkpatrol.toml").write_text(
        f'[[rule]]\nprefix = "{site.url("/")}"\naction = "ignore"\n'
    )

    loud = run.check(site.url("/"))
    quiet = run.check(site.url("/"), "-q")
    markdown = run.check(site.url("/"), "--format", "markdown")

    said = "nothing was requested in this pass: every start URL was ignored by a rule"
    assert loud.returncode == 0 and site.hits == []
    assert "Nothing was requested in this pass: every start URL was ignored" in loud.stdout
    assert loud.stderr == quiet.stderr == f"linkpatrol: {said} or the hooks\n"
    assert quiet.stdout == ""
    assert "### ⚠️ linkpatrol" in markdown.stdout
    assert "**Nothing was requested in this pass" in markdown.stdout


def test_a_pass_that_requested_something_says_nothing_of_it(run: Runner, serve: Serve) -> None:
    site = serve({"/": Page(html("<p>home</p>"))})

    proc = run.check(site.url("/"))

    assert proc.returncode == 0 and proc.stderr == ""
    assert "Nothing was requested" not in proc.stdout
