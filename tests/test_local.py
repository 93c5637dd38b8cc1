"""Local inputs: a folder or files checked as the site a static server would make of them."""

from __future__ import annotations

import gzip
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from linkpatrol.inputs import parse_sitemap
from linkpatrol.model import ConfigError
from tests.conftest import Runner, Serve, by_url
from tests.sitesrv import Page


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, body in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            path.write_bytes(body)
        else:
            path.write_text(body, encoding="utf-8")


def lines(*rows: str) -> str:
    return "\n".join(rows) + "\n"


INDEX = lines(
    "<!doctype html><html><body>",  # 1
    '<a href="/docs/">docs</a>',  # 2
    '<a href="/docs">docs without slash</a>',  # 3
    '<a href="docs/guide.html#install">present anchor</a>',  # 4
    '<a href="docs/guide.html#nope">missing anchor</a>',  # 5
    '<a href="/missing.html">missing file</a>',  # 6
    '<a href="https://example.com/about">production URL, clean</a>',  # 7
    '<a href="https://example.com/gone.html">production URL, missing</a>',  # 8
    '<img src="/img/logo.png" alt="">',  # 9
    '<img src="/img/none.png" alt="">',  # 10
    '<a href="https://elsewhere.example/page">outside</a>',  # 11
    '<a href="mailto:team@example.com">mail</a>',  # 12
    '<a href="style.css?v=3">query ignored</a>',  # 13
    "</body></html>",
)
SITE: dict[str, str | bytes] = {
    "index.html": INDEX,
    "style.css": "body {}",
    "drafts/orphan.html": lines("<p>linked from nowhere</p>", '<a href="/gone-too.html">x</a>'),
    "about.html": "<html><body>about</body></html>",
    "img/logo.png": b"\x89PNG\r\n\x1a\n",
    "docs/index.html": lines(
        "<html><body>",
        '<a href="guide.html">guide</a>',
        '<a href="../index.html">home</a>',
        "</body></html>",
    ),
    "docs/guide.html": lines(
        "<html><body>",
        '<h2 id="install">Install</h2>',
        '<a href="/nowhere/">a folder that is not there</a>',
        "</body></html>",
    ),
}


def broken_lines(report: dict[str, Any]) -> dict[str, list[tuple[str, int]]]:
    return {
        e["url"]: [(r["url"], r["line"]) for r in e["referrers"]]
        for e in report["urls"]
        if e["reportable"]
    }


def test_a_static_site_folder_is_checked_offline_with_the_lines_of_its_files(
    tmp_path: Path,
) -> None:
    public = tmp_path / "public"
    write(public, SITE)
    root = public.as_uri() + "/"
    run = Runner(tmp_path)

    code, report = run.check_json(
        "public", "--base-url", "https://example.com/", "--offline", "--check-anchors"
    )

    assert code == 1
    assert broken_lines(report) == {
        root + "docs/guide.html#nope": [(root, 5)],
        root + "missing.html": [(root, 6)],
        root + "gone.html": [(root, 8)],
        root + "img/none.png": [(root, 10)],
        root + "nowhere/": [(root + "docs/guide.html", 3)],
        # every page of the folder is checked, linked or not
        root + "gone-too.html": [(root + "drafts/orphan.html", 2)],
    }
    urls = by_url(report)
    assert urls[root + "missing.html"]["error"] == "file not found: missing.html"
    assert urls[root + "nowhere/"]["error"] == "file not found: nowhere"
    # a folder redirects to its '/' form and serves its index.html, like a web server
    assert urls[root + "docs"]["state"] == "redirect"
    assert urls[root + "docs"]["redirect_to"] == root + "docs/"
    assert urls[root + "docs/"]["state"] == "ok" and urls[root + "docs/"]["action"] == "parse"
    # '../index.html' is the folder itself: one file, one URL
    assert (root + "docs/", 3) in [(r["url"], r["line"]) for r in urls[root]["referrers"]]
    assert root + "index.html" not in urls
    # the production URL is the file; '/about' is about.html; a query is not part of a file
    assert urls[root + "about"]["state"] == "ok"
    assert urls[root + "style.css"]["state"] == "ok"
    assert urls[root + "img/logo.png"]["state"] == "ok"
    # offline: the outside link is recorded, not requested
    outside = urls["https://elsewhere.example/page"]
    assert (outside["action"], outside["state"]) == ("record", "unchecked")
    assert urls["mailto:team@example.com"]["action"] == "record"
    # index, docs/, docs/guide.html, drafts/orphan.html, about.html and '/about' (the same
    # file), and the stylesheet style.css
    assert report["summary"]["parsed"] == 7

    # the text report names the files, relative to where the command ran, with lines
    text = run.check("public", "--base-url", "https://example.com/", "--offline").stdout
    assert "public/index.html:6" in text
    assert "public/docs/guide.html:3" in text


def test_root_relative_links_without_a_base_url_resolve_in_the_folder(tmp_path: Path) -> None:
    write(
        tmp_path / "site",
        {
            "index.html": lines('<a href="/a/b.html">b</a>', '<a href="/../../etc/passwd">up</a>'),
            "a/b.html": lines('<a href="/index.html">home</a>', '<a href="/c.html">c</a>'),
        },
    )
    root = (tmp_path / "site").as_uri() + "/"

    code, report = Runner(tmp_path).check_json("site")

    # '/' is the folder's root; dot segments cannot climb out of it
    assert broken_lines(report) == {
        root + "c.html": [(root + "a/b.html", 2)],
        root + "etc/passwd": [(root, 2)],
    }
    assert code == 1


def test_outside_links_of_local_files_are_checked_over_http(tmp_path: Path, serve: Serve) -> None:
    site = serve({"/ok": Page("<html></html>"), "/gone": Page("no", status=404)})
    write(
        tmp_path / "www",
        {
            "index.html": lines(
                f'<a href="{site.url("/ok")}">ok</a>', f'<a href="{site.url("/gone")}">gone</a>'
            )
        },
    )

    code, report = Runner(tmp_path).check_json("www")

    urls = by_url(report)
    assert urls[site.url("/ok")]["state"] == "ok"
    assert urls[site.url("/gone")]["state"] == "broken"
    assert code == 1
    assert sorted(h.path for h in site.requests() if h.path != "/robots.txt") == [
        "/gone",
        "/gone",
        "/ok",
    ]


def test_unchanged_files_are_not_read_again_and_still_answer_for_their_anchors(
    tmp_path: Path,
) -> None:
    write(tmp_path / "public", SITE)
    run = Runner(tmp_path)
    args = ("public", "--offline", "--check-anchors")
    run.check_json(*args)

    code, second = run.check_json(*args)

    root = (tmp_path / "public").as_uri() + "/"
    assert second["summary"]["parsed"] == 0  # every page answered 304
    assert root + "docs/guide.html#nope" in broken_lines(second)
    assert code == 1

    guide = tmp_path / "public" / "docs" / "guide.html"
    guide.write_text('<h2 id="install">Install</h2><p id="nope">now here</p>', encoding="utf-8")
    later = time.time() + 5
    os.utime(guide, (later, later))

    _, third = run.check_json(*args)

    assert third["summary"]["parsed"] == 1
    assert root + "docs/guide.html#nope" not in broken_lines(third)


def test_a_file_given_alone_is_parsed_alone_and_what_it_links_to_is_checked(
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        {
            "README.md": lines(
                "# Project",  # 1
                "",
                "See [the guide](docs/guide.md#install) and",  # 3
                "[the API](/docs/api.md#nope).",  # 4
                "![logo](img/logo.png)",  # 5
            ),
            "docs/guide.md": lines("# Guide", "## Install", "[broken](nothere.md)"),
            "docs/api.md": lines("# API"),
        },
    )
    readme = (tmp_path / "README.md").as_uri()
    docs = (tmp_path / "docs").as_uri()

    code, report = Runner(tmp_path).check_json("README.md", "--check-anchors")

    assert broken_lines(report) == {
        docs + "/api.md#nope": [(readme, 4)],
        (tmp_path / "img" / "logo.png").as_uri(): [(readme, 5)],
    }
    urls = by_url(report)
    # the guide is checked (and read for its anchors), not parsed: its own link is not followed
    assert urls[docs + "/guide.md"]["action"] == "check"
    assert (tmp_path / "docs" / "nothere.md").as_uri() not in urls
    assert code == 1


def test_urls_on_stdin_are_start_urls(tmp_path: Path, serve: Serve) -> None:
    site = serve(
        {
            "/a": Page("<html><body>a</body></html>"),
            "/b": Page("gone", status=404),
        }
    )
    listing = f"# pages to check\n{site.url('/a')}\n\n{site.url('/b')}\n"

    proc = Runner(tmp_path).check("-", "--format", "json", input=listing)

    assert proc.returncode == 1, proc.stderr
    urls = by_url(json.loads(proc.stdout))
    assert urls[site.url("/a")]["state"] == "ok"
    assert urls[site.url("/b")]["state"] == "broken"
    assert site.counts("GET")["/a"] == 1 and site.counts()["/b"] >= 1


def test_sitemaps_by_url_through_an_index_and_gzip(tmp_path: Path, serve: Serve) -> None:
    pages: dict[str, Any] = {
        "/blog/one.html": Page('<html><body><a href="two.html">two</a></body></html>'),
        "/blog/two.html": Page("<html><body>two</body></html>"),
        "/old.html": Page("gone", status=404),
    }
    site = serve(pages)
    urlset = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{site.url('/blog/one.html')}</loc></url>"
        f"<url><loc> {site.url('/old.html')} </loc></url>"
        "</urlset>"
    )
    site.pages["/pages.xml.gz"] = Page(
        gzip.compress(urlset.encode()), content_type="application/gzip"
    )
    site.pages["/sitemap.xml"] = Page(
        '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{site.url('/pages.xml.gz')}</loc></sitemap></sitemapindex>",
        content_type="application/xml",
    )

    code, report = Runner(tmp_path).check_json("--sitemap", site.url("/sitemap.xml"))

    urls = by_url(report)
    assert urls[site.url("/blog/one.html")]["action"] == "parse"
    assert urls[site.url("/blog/two.html")]["state"] == "ok"  # found on a listed page
    assert urls[site.url("/old.html")]["state"] == "broken"
    assert code == 1

    (tmp_path / "list.xml").write_text(urlset, encoding="utf-8")
    code, report = Runner(tmp_path).check_json("--sitemap", "list.xml")
    assert by_url(report)[site.url("/old.html")]["state"] == "broken"


def test_check_anchors_all_reads_outside_pages_for_their_anchors(
    tmp_path: Path, serve: Serve
) -> None:
    outside = serve({"/doc.html": Page('<html><body><h1 id="there">x</h1></body></html>')})
    home = serve(
        {
            "/": Page(
                lines(
                    "<html><body>",
                    f'<a href="{outside.url("/doc.html#there")}">present</a>',
                    f'<a href="{outside.url("/doc.html#gone")}">missing</a>',
                    "</body></html>",
                )
            )
        }
    )
    run = Runner(tmp_path)

    _, site_only = run.check_json(home.url("/"), "--check-anchors")
    assert broken_lines(site_only) == {}
    assert outside.counts("GET")["/doc.html"] == 0

    code, everything = run.check_json(home.url("/"), "--check-anchors=all")

    assert broken_lines(everything) == {outside.url("/doc.html#gone"): [(home.url("/"), 3)]}
    assert outside.counts("GET")["/doc.html"] == 1
    assert code == 1


def test_file_urls_are_never_read_for_a_web_page_or_outside_the_folder(
    tmp_path: Path, serve: Serve
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("secret", encoding="utf-8")
    site = serve({"/": Page(f'<html><body><a href="{secret.as_uri()}">x</a></body></html>')})
    write(tmp_path / "pub", {"index.html": f'<a href="{secret.as_uri()}">x</a>'})
    run = Runner(tmp_path)

    _, web = run.check_json(site.url("/"))
    _, local = run.check_json("pub", "--db", str(tmp_path / "other.db"))

    for report in (web, local):
        entry = by_url(report)[secret.as_uri()]
        assert (entry["action"], entry["state"]) == ("record", "unchecked")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nothere",), "nothere: no such file or folder"),
        (("example.com",), "for a web site give its URL, e.g. https://example.com/"),
        (("--base-url", "ftp://example.com/", "."), "--base-url 'ftp://example.com/'"),
        (("--sitemap", "missing.xml"), "sitemap missing.xml: cannot read"),
    ],
)
def test_bad_inputs_are_one_line_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    proc = Runner(tmp_path).check(*args)

    assert proc.returncode == 2
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not proc.stdout


def test_sitemap_parsing_is_safe_and_knows_every_form() -> None:
    bomb = (
        b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
        b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<url><loc>https://x.example/&b;</loc></url></urlset>"
    )
    pages, nested = parse_sitemap(bomb, "bomb.xml")
    assert nested == [] and all(len(p) < 100 for p in pages)

    assert parse_sitemap(b"https://a.example/\n\nhttps://b.example/x\n", "list.txt") == (
        ["https://a.example/", "https://b.example/x"],
        [],
    )
    index = b"<sitemapindex><sitemap><loc>https://a.example/s.xml</loc></sitemap></sitemapindex>"
    assert parse_sitemap(gzip.compress(index), "i.xml.gz") == ([], ["https://a.example/s.xml"])
    with pytest.raises(ConfigError, match="not valid XML"):
        parse_sitemap(b"<urlset><url>", "bad.xml")
    with pytest.raises(ConfigError, match="not <urlset>"):
        parse_sitemap(b"<html></html>", "page.html")


def test_a_memory_for_this_run_only_leaves_no_file(tmp_path: Path) -> None:
    write(tmp_path / "site", {"index.html": '<a href="gone.html">gone</a>'})
    before = sorted(p.name for p in tmp_path.iterdir())

    proc = Runner(tmp_path).check("site", "--db", ":memory:", "--offline")

    assert proc.returncode == 1, proc.stderr
    assert "gone.html" in proc.stdout and "site/index.html:1" in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_markdown_docs_folder_resolves_links_between_files_and_heading_anchors(
    tmp_path: Path,
) -> None:
    write(
        tmp_path / "docs",
        {
            "README.md": lines(
                "# Docs",  # 1
                "",
                "Start with [installing](install.md#requirements).",  # 3
                "A [missing page](nothere.md) and a [missing heading](install.md#nope).",  # 4
                "Jump [down](#see-also) or [nowhere](#no-such-heading).",  # 5
                "![diagram](img/flow.png)",  # 6
                "",
                "```",
                "[not a link](inside-code.md)",  # 9
                "```",
                "",
                "## See also",  # 12
                "[The API](api/index.md#get-items)",  # 13
            ),
            "install.md": lines(
                "---",
                "title: Install",
                "---",
                "# Install",  # 4
                "## Requirements",  # 5
                "[Back](README.md) and [root-relative](/docs/api/index.md)",  # 6
                "[broken from the second file](missing-too.md)",  # 7
            ),
            "api/index.md": lines("# API", "", "## GET /items", "Returns items."),
            "img/flow.png": b"\x89PNG\r\n\x1a\n",
        },
    )
    docs = (tmp_path / "docs").as_uri() + "/"

    code, report = Runner(tmp_path).check_json("docs", "--offline", "--check-anchors")

    readme, install = docs + "README.md", docs + "install.md"
    assert broken_lines(report) == {
        docs + "nothere.md": [(readme, 4)],
        docs + "install.md#nope": [(readme, 4)],
        docs + "README.md#no-such-heading": [(readme, 5)],
        docs + "missing-too.md": [(install, 7)],
    }
    urls = by_url(report)
    assert urls[docs + "api/index.md"]["action"] == "parse"
    assert (install, 6) in [(r["url"], r["line"]) for r in urls[docs + "api/index.md"]["referrers"]]
    assert urls[docs + "img/flow.png"]["state"] == "ok"
    assert docs + "inside-code.md" not in urls
    assert code == 1

    # --root-dir moves the root: '/docs/api/index.md' is then looked for under docs/
    _, moved = Runner(tmp_path).check_json(
        "docs", "--offline", "--root-dir", "docs", "--db", str(tmp_path / "moved.db")
    )
    assert broken_lines(moved)[docs + "docs/api/index.md"] == [(install, 6)]


def test_math_in_markdown_files_is_no_link(tmp_path: Path) -> None:
    write(
        tmp_path / "notes",
        {
            "README.md": lines(
                "# Physics",  # 1
                r"The state $[\psi](\mathbf{L})$ is normalised; see [the proof](proof.md).",
                "",
                "$$",  # 4
                r"\langle [x](y) \rangle = \int \psi^* x \psi",
                "$$",
                "",
                r"It costs \$5 and $10 [at the shop](shop.md), and `$`[code](code.md)`$`.",  # 8
            ),
            "proof.md": lines("# Proof", "Display math inside a paragraph:", "$$ [a](b) $$"),
            "code.md": "code\n",
        },
    )
    notes = (tmp_path / "notes").as_uri() + "/"

    code, report = Runner(tmp_path).check_json("notes", "--offline")

    assert broken_lines(report) == {notes + "shop.md": [(notes + "README.md", 8)]}
    assert sorted(by_url(report)) == sorted(
        notes + name for name in ("README.md", "proof.md", "code.md", "shop.md")
    )
    assert code == 1


def test_sarif_places_local_results_in_files_relative_to_the_repository(tmp_path: Path) -> None:
    write(tmp_path / "public site", {"index.html": lines("<p>x</p>", '<a href="gone.html">x</a>')})

    proc = Runner(tmp_path).check("public site", "--offline", "--format", "sarif")

    results = json.loads(proc.stdout)["runs"][0]["results"]
    [location] = results[0]["locations"]
    assert location["physicalLocation"] == {
        "artifactLocation": {"uri": "public%20site/index.html"},
        "region": {"startLine": 2},
    }


def test_reports_name_the_start_values_given_and_local_files_by_their_paths(
    tmp_path: Path,
) -> None:
    """A folder's reports name the folder, not its every page, and show each file by its
    path relative to where the command ran, in every format; JSON keeps the URL too."""
    public = tmp_path / "public"
    pages = {f"p{n}.html": '<a href="gone.html">x</a>' for n in range(8)}
    write(public, {"index.html": '<a href="gone.html">gone</a>', **pages})
    root = public.as_uri() + "/"
    run = Runner(tmp_path)
    common = ("public", "--offline", "--db", str(tmp_path / "m.db"))

    text = run.check(*common).stdout
    assert text.splitlines()[0].endswith("pass 1 of public (complete)"), text
    assert "\n  public/gone.html\n" in text

    report = json.loads(run.check(*common, "--format", "json").stdout)
    assert report["inputs"] == ["public"] and len(report["start_urls"]) == 9
    gone = by_url(report)[root + "gone.html"]
    assert gone["path"] == "public/gone.html"
    assert {"url": root + "p3.html", "path": "public/p3.html", "line": 1} in gone["referrers"]
    assert "path" not in by_url(report).get("mailto:x", {})

    markdown = run.check(*common, "--format", "markdown").stdout
    assert "Pass 3 of `public` (complete)" in markdown
    assert "| `public/gone.html` |" in markdown and "file://" not in markdown

    rows = run.check(*common, "--format", "csv").stdout.splitlines()
    assert rows[0].endswith(",path,referrer_path,new,archived_url,archived_at")
    assert rows[1].startswith(root + "gone.html,") and rows[1].endswith(
        ",public/gone.html,public/index.html,false,,"  # reported by the passes before too
    )

    junit = run.check(*common, "--format", "junit").stdout
    assert 'name="public/gone.html"' in junit

    html = run.check(*common, "--format", "html").stdout
    assert ">public/gone.html</span>" in html and "— public</title>" in html

    many = [str(public / f"p{n}.html") for n in range(8)]
    text = run.check(*many, "--offline", "--db", str(tmp_path / "n.db")).stdout
    head = text.splitlines()[0]
    assert many[3] in head and many[4] not in head and "4 more" in head


def test_a_list_on_stdin_is_named_by_its_count(tmp_path: Path, serve: Serve) -> None:
    site = serve({"/a": Page("<p>a</p>"), "/b": Page("<p>b</p>")})
    listing = f"{site.url('/a')}\n{site.url('/b')}\n"

    proc = Runner(tmp_path).check("-", input=listing)

    assert proc.returncode == 0, proc.stderr
    assert "pass 1 of 2 URLs from stdin (complete)" in proc.stdout.splitlines()[0]
