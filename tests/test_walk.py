"""The walk of extraction in C reads what the walk over lxml's elements reads: the same
elements in the same order, their tags, lines and attributes, and every id, on every page.

The C walk is in the installed package where it was built compiled (as in CI); the check
runs there, in a command of its own, on the fixture pages and on pages made of pieces that
move lines, hide elements and repeat attributes."""

from __future__ import annotations

import os
import pickle
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_properties import BLANK_PIECES, HTML_PIECES, ID_PIECES

ROOT = Path(__file__).resolve().parent.parent

# attribute spellings the walk must read as lxml does, or leave alone
ATTRIBUTE_PIECES = [
    "<a href=/1 href=/2>", "<a HREF=/U>", "<a href>", "<a href=''>", "<a name=a name=b>",
    "<img src=/i.png src=/j.png srcset='/k 2x'>", "<link rel=stylesheet href=/s.css>",
    "<link rel='preconnect dns-prefetch' href=//h>", "<input type=image src=/in.png>",
    "<input type=IMAGE src=/in2.png>", "<svg><use xlink:href=#x></use><image xlink:href=/x.png>",
    "<svg:a xlink:href=/q>", "<a xml:lang=en href=/l>", "<p style='background:url(/b.png)'>",
    "<style>@import '/i.css';</style>", "<body background=/bg.png>", "<q cite=/c>",
    "<object data=/o>", "<video poster=/p.png src=/v.mp4>", "<base href=/b/><base href=/c/>",
    "<title>one</title><title>two</title>", "<svg><title>in svg</title></svg>",
    "<meta http-equiv=refresh content='1; url=/m'>", "<a href=/e&#x20;x>", "<a id=&lt;>",
    "<area href=/ar>", "<frame src=/f>", "<iframe src=/if></iframe>", "<embed src=/em>",
    "</body></html><h2 id=after>", "</html><a href=/late id=late>",  # libxml2 leaves these
]  # fmt: skip
PIECES = HTML_PIECES + BLANK_PIECES + ID_PIECES + ATTRIBUTE_PIECES


def made_pages(count: int, seed: int) -> list[bytes]:
    chance = random.Random(seed)
    return [
        "".join(chance.choices(PIECES, k=chance.randrange(1, 80))).encode("utf-8", "replace")
        for _ in range(count)
    ]


def capped_page() -> bytes:
    """Links past line 65535, where libxml2 stops counting and the proxy's line is read."""
    head = b"<html><body>\n" + b"<p>x</p>\n" * 70_000
    return head + b"<a href=/far>far</a>\n<p>\n<img\nsrc=/farther.png>"


def after_the_root() -> bytes:
    """Content after </html>, which libxml2 leaves beside the root: its ids count."""
    return b"<!doctype html><html><body><a href=/in>in</a></body></html><h2 id=here>x</h2>"


def fixture_pages() -> list[bytes]:
    return [
        path.read_bytes()
        for path in sorted((ROOT / "tests").rglob("*"))
        if path.suffix in (".html", ".htm", ".xhtml") and path.is_file()
    ]


# Run where the installed package is imported, not this checkout's sources: for each
# page, both walks in both modes (the elements that may hold links, every element),
# compared; prints the number of pages compared, or what differs.
COMPARE = r"""
import pickle, sys
from lxml import etree
from linkpatrol import extract as ex

if ex._native_walk is None:
    print("no C walk")
    sys.exit(0)
pages = pickle.load(open(sys.argv[1], "rb"))
READ = frozenset(ex._READ)

def plain(items):
    seen = []
    for tag, line, attrs, element in items:
        read = {k: v for k, v in attrs.items() if k in READ}
        if tag in ex._KEPT:
            assert element is not None and element.tag == tag, (tag, element)
            element = ("".join(element.itertext()), element.text, element.sourceline)
        else:
            element = None
        seen.append((tag, line, read, element))
    return seen

compared = 0
for number, body in enumerate(pages):
    data = ex._decode(body, "utf-8").encode("utf-8", "replace")
    if not data.strip():
        continue
    root = etree.fromstring(data, ex._parser())
    if root is None:
        continue
    for every in (False, True):
        native_items, native_ids = ex._native_walk(
            root, None if every else ex._LINK_TAGS, ex._READ, ex._KEPT
        )
        lxml_items, lxml_ids = ex._walk_lxml(root, every)
        native, lxml = plain(native_items), plain(lxml_items)
        lxml_ids = [ident for ident in lxml_ids if ident]  # extraction leaves the empty out
        if native != lxml or list(native_ids) != lxml_ids:
            print(f"page {number}, every={every}: C {native[:5]} {native_ids[:5]}"
                  f" lxml {lxml[:5]} {lxml_ids[:5]}")
            sys.exit(1)
    compared += 1
print(compared)
"""


def test_the_c_walk_reads_what_the_walk_over_lxml_reads(tmp_path: Path) -> None:
    pages = [capped_page(), after_the_root(), *fixture_pages(), *made_pages(600, seed=35)]
    corpus = tmp_path / "pages.pickle"
    corpus.write_bytes(pickle.dumps(pages))
    script = tmp_path / "compare.py"
    script.write_text(COMPARE)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, str(script), str(corpus)],
        cwd=tmp_path,  # the installed package, not the checkout
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if proc.stdout.strip() == "no C walk":
        # CI installs the compiled build, which has it (see test_cli_output.py)
        assert os.environ.get("CI") != "true", "CI installed linkpatrol without its C walk"
        pytest.skip("this install was not compiled: it has no C walk")
    assert int(proc.stdout) >= len(pages) - 50, proc.stdout  # few made pages are empty
