"""``linkpatrol fix``: the local files' links that moved for good, rewritten to their targets.

A real site on 127.0.0.1 answers 301, 308 and 302 and has a broken URL; a git repository
of HTML and Markdown files links to them. After ``check``, ``fix`` prints a diff that
``git apply`` takes, ``--write`` makes the same change, a second run finds nothing, and
a file changed since the check is left alone. The rewriting itself is tested on text.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from linkpatrol.fix import Rewrite, UnsafeRewrite, rewrite_links, spelled_like
from linkpatrol.local import STAND_IN_BASE, Mount
from tests.conftest import Runner, Serve
from tests.sitesrv import Page

if TYPE_CHECKING:
    from tests.sitesrv import TestSite

pytestmark = pytest.mark.backends()

ROOT = "file:///repo/"
MOUNT = Mount(ROOT, STAND_IN_BASE)
PAGE = ROOT + "docs/page.md"
OLD = "https://old.example/a"
NEW = "https://new.example/b"


def resolve(written: str) -> str | None:
    return MOUNT.resolve(written, PAGE)


def spell(written: str, new: str) -> str:
    return spelled_like(written, new, PAGE, MOUNT)


def rewritten(text: str, *rewrites: Rewrite, markdown: bool = True) -> str:
    return rewrite_links(text, markdown, rewrites, resolve, spell).text


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (f"See [a]({OLD}).", f"See [a]({NEW})."),
        (f"See [a]({OLD}#usage).", f"See [a]({NEW}#usage)."),
        (f"<{OLD}>", f"<{NEW}>"),
        (f"bare {OLD}, then more", f"bare {NEW}, then more"),
        (f"[x]: {OLD}\n\n[use][x]", f"[x]: {NEW}\n\n[use][x]"),
        (f'[x]: {OLD} "title"\n\n[x]', f'[x]: {NEW} "title"\n\n[x]'),
        (f"![logo]({OLD} 'logo')", f"![logo]({NEW} 'logo')"),
        (f"`{OLD}` and [a]({OLD})", f"`{OLD}` and [a]({NEW})"),
        (f"[a]({OLD}) and [b]({OLD}#x)", f"[a]({NEW}) and [b]({NEW}#x)"),
        (f"[a]({OLD}/more) and [b]({OLD})", f"[a]({OLD}/more) and [b]({NEW})"),
        (f'<a href="{OLD}">a</a> **bold**', f'<a href="{NEW}">a</a> **bold**'),
        (f"[a](<{OLD}>)", f"[a](<{NEW}>)"),
    ],
)
def test_markdown_links_are_rewritten_where_they_are_links(before: str, after: str) -> None:
    assert rewritten(before, Rewrite(1, OLD, NEW)) == after


@pytest.mark.parametrize(
    "text",
    [
        f"```\n{OLD}\n```",
        f"    {OLD}",
        f"`{OLD}`",
        f"``[a]({OLD})``",
        f"<!-- [a]({OLD}) -->",
    ],
)
def test_code_and_comments_stay_as_they_are(text: str) -> None:
    rewrites = [Rewrite(line, OLD, NEW) for line in (1, 2, 3)]
    assert rewritten(text, *rewrites) == text


def test_only_the_line_the_memory_names_is_rewritten() -> None:
    text = f"[a]({OLD})\n[b]({OLD})\n"
    assert rewritten(text, Rewrite(2, OLD, NEW)) == f"[a]({OLD})\n[b]({NEW})\n"


def test_html_keeps_its_entities_and_the_rest_of_the_line() -> None:
    old, new = "https://old.example/q?a=1&b=2", "https://new.example/q?a=1&b=2"
    text = (
        "<p>\n"
        f'<a class="x" href="{old.replace("&", "&amp;")}">q</a> <code>{old}</code>\n'
        f"<img src='{OLD}' alt=\"{OLD}\">\n"
        "</p>"
    )
    expected = (
        "<p>\n"
        f'<a class="x" href="{new.replace("&", "&amp;")}">q</a> <code>{old}</code>\n'
        f"<img src='{NEW}' alt=\"{OLD}\">\n"
        "</p>"
    )
    done = rewrite_links(text, False, [Rewrite(2, old, new), Rewrite(3, OLD, NEW)], resolve, spell)
    assert (done.text, done.rewritten) == (expected, 2)


def test_srcset_candidates_and_crlf_line_ends() -> None:
    text = f'<p>\r\n<img srcset="{OLD} 1x, {OLD}2 2x" src="x.png">\r\n</p>\r\n'
    expected = f'<p>\r\n<img srcset="{NEW} 1x, {OLD}2 2x" src="x.png">\r\n</p>\r\n'
    assert rewritten(text, Rewrite(2, OLD, NEW), markdown=False) == expected
    text = f"[a]({OLD})\r\n\r\n`{OLD}`\r\n"
    assert rewritten(text, Rewrite(1, OLD, NEW)) == f"[a]({NEW})\r\n\r\n`{OLD}`\r\n"


def test_a_new_url_that_would_break_the_markdown_is_refused() -> None:
    with pytest.raises(UnsafeRewrite):
        rewritten(f"[a]({OLD}) [b](x)", Rewrite(1, OLD, "https://new.example/a)b"))


@pytest.mark.parametrize(
    ("written", "new", "spelled"),
    [
        (OLD, NEW, NEW),
        (OLD + "#top", NEW, NEW + "#top"),
        (OLD + "#top", NEW + "#there", NEW + "#there"),
        ("guide", ROOT + "docs/guide/", "guide/"),
        ("guide#install", ROOT + "docs/guide/", "guide/#install"),
        ("../docs", ROOT + "docs/", "./"),
        ("/docs/guide", ROOT + "docs/guide/", "/docs/guide/"),
        ("other.md", ROOT + "docs/sub/other.md", "sub/other.md"),
        ("guide", NEW, NEW),
        (STAND_IN_BASE + "docs/guide", ROOT + "docs/guide/", STAND_IN_BASE + "docs/guide/"),
    ],
)
def test_the_new_url_is_spelled_as_the_old_one_was(written: str, new: str, spelled: str) -> None:
    assert spell(written, new) == spelled


# the site the files link to
def _site(serve: Serve) -> TestSite:
    def moved(location: str, status: int) -> Page:
        return Page("", status=status, headers={"Location": location}, etag=False)

    return serve(
        {
            "/robots.txt": Page("", status=404),
            "/old": moved("/new", 301),
            "/perm": moved("/new?a=1&b=2", 308),
            "/perm?x=1&y=2": moved("/new?a=1&b=2", 308),
            "/chain": moved("/old", 301),
            "/temp": moved("/new", 302),
            "/to-temp": moved("/temp", 301),
            "/to-gone": moved("/gone", 301),
            "/new": Page("<p>new</p>"),
            "/new?a=1&b=2": Page("<p>new</p>"),
            "/gone": Page("", status=404),
        }
    )


def _files(base: str) -> dict[str, str]:
    return {
        "README.md": (
            "# Links\n"
            "\n"
            f"See [old]({base}/old#part) and `{base}/old`, and <{base}/perm>.\n"
            f"A chain [c]({base}/chain), a temporary [t]({base}/temp), a gone [g]({base}/gone).\n"
            f"Through a temporary one: [tt]({base}/to-temp); to a gone one: [tg]({base}/to-gone).\n"
            "The guide: [guide](docs/guide) and [again][ref].\n"
            "\n"
            f"[ref]: {base}/old\n"
            "\n"
            "```\n"
            f"{base}/old\n"
            "```\n"
            "\n"
            f"    {base}/old\n"
        ),
        "docs/guide/index.html": (
            "<!doctype html>\n"
            "<html><body>\n"
            f'<a href="{base}/perm?x=1&amp;y=2">p</a> <a href="{base}/old">o</a>'
            f" <code>{base}/old</code>\n"
            f"<pre>{base}/old</pre>\n"
            "<a href='../../README.md'>home</a>\n"
            "</body></html>"  # no end of line
        ),
    }


def _fixed(base: str) -> dict[str, str]:
    files = _files(base)
    readme = files["README.md"].split("\n")
    readme[2] = f"See [old]({base}/new#part) and `{base}/old`, and <{base}/new?a=1&b=2>."
    readme[3] = f"A chain [c]({base}/new), a temporary [t]({base}/temp), a gone [g]({base}/gone)."
    readme[4] = f"Through a temporary one: [tt]({base}/temp); to a gone one: [tg]({base}/to-gone)."
    readme[5] = "The guide: [guide](docs/guide/) and [again][ref]."
    readme[7] = f"[ref]: {base}/new"
    page = (
        files["docs/guide/index.html"]
        .replace(f'<a href="{base}/old">', f'<a href="{base}/new">')
        .replace(f'"{base}/perm?x=1&amp;y=2"', f'"{base}/new?a=1&amp;b=2"')
    )
    return {"README.md": "\n".join(readme), "docs/guide/index.html": page}


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
    }
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, env=env, timeout=60
    )


def _repository(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8", newline="")
    assert _git(repo, "init", "-q", ".").returncode == 0
    assert _git(repo, "add", "-A").returncode == 0
    assert _git(repo, "commit", "-q", "-m", "site").returncode == 0
    return repo


def _contents(repo: Path, names: list[str]) -> dict[str, str]:
    return {name: (repo / name).read_text(encoding="utf-8") for name in names}


def test_fix_prints_a_diff_git_applies(tmp_path: Path, db: str, serve: Serve) -> None:
    base = _site(serve).base
    repo = _repository(tmp_path, _files(base))
    run = Runner(repo, db)
    assert run.check(".", "-q").returncode == 1  # /gone and /to-gone are broken

    proc = run("fix", ".", "--db", db)

    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.startswith("--- a/README.md\n+++ b/README.md\n")
    assert "--- a/docs/guide/index.html\n" in proc.stdout
    patch = tmp_path / "fix.patch"
    patch.write_text(proc.stdout, encoding="utf-8")
    assert _git(repo, "apply", "--check", str(patch)).returncode == 0
    assert _git(repo, "apply", str(patch)).returncode == 0
    assert _contents(repo, list(_fixed(base))) == _fixed(base)

    again = run("fix", ".", "--db", db)
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
    assert run.check(".", "-q").returncode == 1
    after_check = run("fix", ".", "--db", db)
    assert (after_check.returncode, after_check.stdout, after_check.stderr) == (0, "", "")


def test_fix_write_makes_the_same_change(tmp_path: Path, db: str, serve: Serve) -> None:
    base = _site(serve).base
    repo = _repository(tmp_path, _files(base))
    run = Runner(repo, db)
    run.check(".", "-q")

    proc = run("fix", "--write", "--db", db, "README.md", "docs")

    assert (proc.returncode, proc.stdout) == (0, "")
    assert "rewrote 8 link(s) in 2 file(s)" in proc.stderr
    assert _contents(repo, list(_fixed(base))) == _fixed(base)
    again = run("fix", "--write", "--db", db, ".")
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")


def test_a_file_changed_since_the_check_is_left_alone(
    tmp_path: Path, db: str, serve: Serve
) -> None:
    base = _site(serve).base
    repo = _repository(tmp_path, _files(base))
    run = Runner(repo, db)
    run.check(".", "-q")
    readme = repo / "README.md"
    readme.write_text("New first line.\n" + readme.read_text(encoding="utf-8"), encoding="utf-8")

    proc = run("fix", ".", "--db", db)

    assert proc.returncode == 4
    assert proc.stderr == (
        "linkpatrol: README.md: changed since the last check; check it again first\n"
    )
    assert "--- a/README.md" not in proc.stdout
    assert proc.stdout.startswith("--- a/docs/guide/index.html\n")  # the others proceed
    written = run("fix", ".", "--db", db, "--write")
    assert written.returncode == 4
    assert _contents(repo, ["docs/guide/index.html"]) == {
        "docs/guide/index.html": _fixed(base)["docs/guide/index.html"]
    }
    assert readme.read_text(encoding="utf-8").count(f"{base}/old") == 5


def test_fix_refuses_what_it_cannot_fix(tmp_path: Path, db: str) -> None:
    run = Runner(tmp_path, db)
    (tmp_path / "a.md").write_text("[a](https://example.org/)\n", encoding="utf-8")

    web = run("fix", "https://example.org/", "--db", db)
    nothing = run("fix", "--db", db)
    missing = run("fix", "nowhere/", "--db", db)

    assert (web.returncode, web.stderr) == (
        2,
        "linkpatrol: https://example.org/: fix rewrites local files only\n",
    )
    assert nothing.returncode == 2 and "give the local folders or files" in nothing.stderr
    assert missing.returncode == 2 and "nowhere/: no such file or folder" in missing.stderr


def test_fix_archived_rewrites_a_dead_link_to_its_copy_from_before_it_broke(
    tmp_path: Path, db: str, serve: Serve
) -> None:
    from tests.test_archived import API, SNAPSHOT_STAMP, ArchiveStandIn

    site = serve({"/robots.txt": Page("", status=404), "/was": Page("<p>here</p>")})
    was = site.url("/was")
    repo = _repository(
        tmp_path,
        {
            "README.md": f"# Read me\n\nSee [the page]({was}#part) and `{was}`.\n",
            "never.md": f"[never]({site.url('/never')})\n",
        },
    )
    run = Runner(repo, db)
    with ArchiveStandIn() as archive:
        asked = ("--archived", "--archive-endpoint", archive.url(API), "-q")
        assert run.check(".", *asked).returncode == 1  # /never is broken, never good
        site.pages["/was"] = Page("<h1>gone</h1>", status=404)
        assert run.check(".", *asked).returncode == 1

    plain = run("fix", ".", "--db", db)
    assert (plain.returncode, plain.stdout) == (0, "")  # nothing moved for good
    proc = run("fix", ".", "--archived", "--db", db)

    assert proc.returncode == 1, proc.stderr
    assert "never.md" not in proc.stdout  # never good: no copy to go to
    patch = tmp_path / "archived.patch"
    patch.write_text(proc.stdout, encoding="utf-8")
    assert _git(repo, "apply", str(patch)).returncode == 0
    copy = f"http://web.archive.org/web/{SNAPSHOT_STAMP}/{was}"
    assert (repo / "README.md").read_text() == (
        f"# Read me\n\nSee [the page]({copy}#part) and `{was}`.\n"
    )
    again = run("fix", ".", "--archived", "--db", db)
    assert (again.returncode, again.stdout) == (0, "")
