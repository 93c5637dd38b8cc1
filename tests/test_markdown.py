"""Markdown pages: every link with the line it is written on, and the anchors GitHub makes.

A project's README and docs are read as a person reading them on GitHub would: links,
images, references, bare URLs and raw HTML count, code does not, and ``#fragment`` links
must find the heading slugs GitHub generates.
"""

from __future__ import annotations

import codecs

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linkpatrol.markdown import _PIECE, _extract, extract_markdown, heading_slug

FAST = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def pairs(body: bytes | str, charset: str | None = None) -> list[tuple[str, int]]:
    data = body.encode() if isinstance(body, str) else body
    return [(link.url, link.line) for link in extract_markdown(data, charset).links]


README = """\
---
title: Tidepool
homepage: https://front-matter.example/
---
# Tidepool *Sync* `v2`

[![CI](https://ci.example/badge.svg)](https://ci.example/tidepool)

Tidepool keeps two folders in step. Read the [installation
guide](docs/install.md "Install") first, then the [FAQ][faq], or
the [changelog] and [Roadmap][].

Questions? Write to help@tidepool.example or visit
www.tidepool.example/community; releases are on
https://github.com/tidepool/tidepool/releases.

## Configuration

| Option   | Where it is described          |
|----------|--------------------------------|
| `--sync` | [sync](docs/sync.md#modes)     |
| `--dry`  | <https://dry.example/run>      |

- Platforms:
  - Linux, see [the Linux notes](docs/linux.md)
  - macOS ![mac](img/mac.png)

> **Note**
> Old configs still work: see [migrating](#migrating-from-1x).

## Migrating from 1.x

Run `tidepool migrate [old](nope.md)` once:

```sh
tidepool migrate --from https://nope.example/
```

    [indented](nope-either.md)

This is a footnote reference[^speed].

<p align="center">
  <a href="https://sponsor.example/"><img src="img/sponsor.svg" alt="Sponsor"></a>
</p>

[faq]: docs/faq.md
[changelog]: CHANGELOG.md "Changes"
[roadmap]: https://roadmap.example/
[unused]: https://never-rendered.example/
[^speed]: Measured on [the benchmark](bench/README.md).
"""


def test_a_readme_gives_every_link_with_the_line_it_is_written_on() -> None:
    assert pairs(README) == [
        ("https://ci.example/tidepool", 7),  # the badge's link, then its image
        ("https://ci.example/badge.svg", 7),
        ("docs/install.md", 10),  # the link starts on line 9; its destination is on 10
        ("docs/faq.md", 10),
        ("CHANGELOG.md", 11),
        ("https://roadmap.example/", 11),
        ("mailto:help@tidepool.example", 13),
        ("http://www.tidepool.example/community", 14),
        ("https://github.com/tidepool/tidepool/releases", 15),
        ("docs/sync.md#modes", 21),
        ("https://dry.example/run", 22),
        ("docs/linux.md", 25),
        ("img/mac.png", 26),
        ("#migrating-from-1x", 29),
        ("https://sponsor.example/", 44),
        ("img/sponsor.svg", 44),
        ("docs/faq.md", 47),  # each used reference once more, where it is defined
        ("CHANGELOG.md", 48),
        ("https://roadmap.example/", 49),
        ("bench/README.md", 51),
    ]


def test_a_readme_has_githubs_heading_anchors_and_its_first_title() -> None:
    page = extract_markdown(README.encode())
    assert page.title == "Tidepool Sync v2"
    assert page.heading_ids == {"tidepool-sync-v2", "configuration", "migrating-from-1x"}
    assert page.anchors == frozenset()
    assert page.base_href is None
    assert page.encoding == "utf-8"


def test_reference_links_are_reported_where_used_and_where_defined() -> None:
    doc = """\
See [the guide][Guide] and [guide] again,
and ![the logo][logo].

[GUIDE]: <docs/the guide.md> 'Guide'
[logo]:
  img/logo.png
[spare]: spare.md
[guide]: second-definition-is-ignored.md
"""
    assert pairs(doc) == [
        ("docs/the guide.md", 1),
        ("docs/the guide.md", 1),
        ("img/logo.png", 2),
        ("docs/the guide.md", 4),
        ("img/logo.png", 5),
    ]


def test_destinations_are_kept_as_written_and_empty_ones_dropped() -> None:
    doc = r"""[a](https://x.example/ä%20b?q=1&r=2) [b](<with space.md>) [c](a\_b.md)
[d](javascript:void(0)) [e]() [f](&#x2f;root) [g](file:///etc/hosts)
"""
    assert pairs(doc) == [
        ("https://x.example/ä%20b?q=1&r=2", 1),
        ("with space.md", 1),
        ("a_b.md", 1),
        ("javascript:void(0)", 2),
        ("/root", 2),
        ("file:///etc/hosts", 2),
    ]


def test_entities_in_autolinks_are_decoded_as_github_does() -> None:
    doc = r"""<https://x.example/?a=1&amp;b=2&#x41;&copy=3&nosuch;> <https://y.example/a\_b>
Bare https://z.example/?a=1&amp;b=2 stays as written.
"""
    assert pairs(doc) == [
        ("https://x.example/?a=1&b=2A&copy=3&nosuch;", 1),
        ("https://y.example/a\\_b", 1),
        ("https://z.example/?a=1&amp;b=2", 2),
    ]


def test_bare_urls_count_as_github_links_them() -> None:
    doc = """\
Plain https://a.example/path, and (https://b.example/x_(y)).
Also www.c.example. but not c.example or setup.py or http:/bad.
Mail me: someone@d.example, or mailto:other@d.example.
Already a link: [https://e.example/](https://f.example/) and <https://g.example/>.
"""
    assert pairs(doc) == [
        ("https://a.example/path", 1),
        ("https://b.example/x_(y)", 1),
        ("http://www.c.example", 2),
        ("mailto:someone@d.example", 3),
        ("mailto:other@d.example", 3),
        ("https://f.example/", 4),
        ("https://g.example/", 4),
    ]


def test_nothing_in_code_is_a_link() -> None:
    doc = """\
```markdown
[fenced](fenced.md) https://fenced.example/ <a href="fenced.html">
```

~~~
![tilde](tilde.png)
~~~

    [indented](indented.md)

Inline `[span](span.md)` and ``<https://span.example/>``, and a span over `two
[lines](lines.md)` lines before [the real one](real.md).

- In a list:

  ```
  [listed](listed.md)
  ```
"""
    assert pairs(doc) == [("real.md", 12)]


@pytest.mark.parametrize(
    ("doc", "links"),
    [
        # inline math, as GitHub reads it
        (r"The norm $[\psi](\mathbf{L})$ is [real](real.md).", ["real.md"]),
        ("Math $<a href='x.html'>$ and $https://x.example/$.", []),
        ("$$[a](a.md)$$ inline display math", []),
        # not math: a space inside the dollars, a digit after, an escaped dollar
        ("$ [a](a.md) $", ["a.md"]),
        ("Costs $5 and [a](a.md) $ more", ["a.md"]),
        ("From $[a](a.md)$5 up", ["a.md"]),
        (r"\$[a](a.md)$ and $[b](b.md)\$", ["a.md", "b.md"]),
        ("`$`[a](a.md)`$`", ["a.md"]),  # dollars in code spans open no math
        ("Costs $10, [a](a.md) and `$HOME`", ["a.md"]),  # ... and close none
        ("$`[a](a.md)`$", []),  # GitHub's other inline form: a code span
        # display math blocks, also right after a paragraph, in lists and quotes
        ("$$\n[x](y)\n\\text{[z](z.md)}\n$$\n\n[after](after.md)", ["after.md"]),
        ("Text\n$$\n[x](y)\n$$\n[after](after.md)", ["after.md"]),
        ("- item\n\n  $$\n  [x](y)\n  $$\n> $$\n> [q](q.md)\n> $$", []),
        ("$$ [x](y) $$", []),
        ("- $$\n  [x](x.md)\n- [y](y.md)\n  $$", ["x.md", "y.md"]),  # not past its item
        ("```math\n[x](y)\n```", []),
        # a '$$' never closed is text
        ("$$\n[a](a.md)\n\n[b](b.md)", ["a.md", "b.md"]),
    ],
)
def test_math_is_not_a_link(doc: str, links: list[str]) -> None:
    assert [url for url, _ in pairs(doc)] == links


def test_links_after_math_keep_their_lines_and_headings_their_math() -> None:
    doc = "# Energy $E=mc^2$\n\n$$\na\n\n$$\n\n$a$ and $$\nb\n$$ [c](c.md)\n[d](d.md)\n"
    page = extract_markdown(doc.encode())
    assert [(link.url, link.line) for link in page.links] == [("c.md", 10), ("d.md", 11)]
    assert page.heading_ids == {"energy-emc2"}
    assert page.title == "Energy $E=mc^2$"


def test_raw_html_gives_its_links_and_anchors_with_their_lines() -> None:
    doc = """\
Intro with <a href="inline.html">inline</a> HTML and <img
  alt="two lines" src="wrapped.png">.

<details id="more">
<summary>More</summary>

<a name="legacy"></a>
<a
   href="block.html">block</a>
<!-- <a href="commented.html"> -->
</details>

> <a href="quoted.html">in a quote</a>
"""
    page = extract_markdown(doc.encode())
    assert [(link.url, link.line, link.tag, link.attr) for link in page.links] == [
        ("inline.html", 1, "a", "href"),
        ("wrapped.png", 1, "img", "src"),
        ("block.html", 8, "a", "href"),
        ("quoted.html", 13, "a", "href"),
    ]
    assert page.anchors == {"more", "legacy"}


def test_front_matter_is_skipped_and_its_lines_counted() -> None:
    doc = "\ufeff---\nurl: https://front.example/\nlinks: [a](b.md)\n---\n\nBody [c](c.md)\n"
    assert pairs(doc) == [("c.md", 6)]
    # without a closing line it is no front matter: '---' is a rule, the text a paragraph
    assert pairs("---\ntext [d](d.md)\n") == [("d.md", 2)]
    # and only the first lines can be front matter
    assert pairs("Intro\n\n---\ntitle: x\n---\n[e](e.md)\n") == [("e.md", 6)]


def test_links_in_headings_tables_quotes_lists_and_footnotes() -> None:
    doc = """\
# Title [home](index.md)

| a | b |
|---|---|
| x | [cell](cell.md) |

> quoted [q](q.md)
lazily continued [lazy](lazy.md)

1. first
   - nested [n](n.md)

     > deep ![d](d.png)

Text[^1].

[^1]: The note, [noted](noted.md),
    continued [more](more.md).
"""
    assert pairs(doc) == [
        ("index.md", 1),
        ("cell.md", 5),
        ("q.md", 7),
        ("lazy.md", 8),
        ("n.md", 11),
        ("d.png", 13),
        ("noted.md", 17),
        ("more.md", 18),
    ]


def test_windows_line_endings_and_old_mac_ones_count_the_same() -> None:
    for newline in ("\r\n", "\r"):
        doc = "# T\n\nline [a\nb](a.md)\n\n<a href='h.html'>\nx</a>\n".replace("\n", newline)
        assert pairs(doc) == [("a.md", 4), ("h.html", 6)]


# -- heading anchors


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("Getting Started", "getting-started"),
        ("Ignore casing", "ignore-casing"),
        ("Fünf süße Äpfel", "fünf-süße-äpfel"),  # letters lowered as Unicode lowers them
        ("ΣΟΦΟΣ Σ", "σοφος-σ"),  # a final sigma where a word ends
        ("Ünïcödé Straße", "ünïcödé-straße"),
        ("日本語の見出し", "日本語の見出し"),
        ("Привет, мир!", "привет-мир"),
        ("What's new in 2.0?", "whats-new-in-20"),  # punctuation dropped
        ("C++ & Rust: a comparison", "c--rust-a-comparison"),  # each space a '-'
        ("a - b", "a---b"),  # '-' kept, other dashes not
        ("a – b — c", "a--b--c"),
        ("snake_case_name", "snake_case_name"),  # connector punctuation kept
        ("«Quoted» (paren) [bracket] {brace}", "quoted-paren-bracket-brace"),
        ("Price: $5 / €4 ± 1%", "price-5--4--1"),  # symbols dropped
        ("🚀 Launch", "-launch"),  # emoji dropped, the space stays
        ("👍🏽 thumbs", "-thumbs"),  # modifiers and joiners too
        ("tab\there, no\u00a0break", "tabhere-nobreak"),  # only ' ' becomes '-'
        ("  padded  ", "--padded--"),  # not trimmed
        ("Ⓐ circled, Ⅻ roman, ² superscript", "ⓐ-circled-ⅻ-roman--superscript"),
        ("Cafe\u0301 N\u0303", "cafe\u0301-n\u0303"),  # combining marks kept
    ],
)
def test_heading_slugs_follow_github(heading: str, slug: str) -> None:
    assert heading_slug(heading) == slug


@pytest.mark.parametrize(
    ("headings", "ids"),
    [
        (["Usage", "Usage", "Usage"], ["usage", "usage-1", "usage-2"]),
        (["Usage", "Usage-1", "Usage"], ["usage", "usage-1", "usage-2"]),  # taken: next
        (["Usage-1", "Usage", "Usage"], ["usage-1", "usage", "usage-2"]),
        (["Usage", "Usage", "Usage-1"], ["usage", "usage-1", "usage-1-1"]),
        (["A b", "a B", "A-B"], ["a-b", "a-b-1", "a-b-2"]),  # one after lowering
        (["🚀", "🎉"], ["", "-1"]),  # an empty id is no anchor; the next is '-1'
    ],
)
def test_repeated_heading_ids_are_numbered_in_document_order(
    headings: list[str], ids: list[str]
) -> None:
    page = extract_markdown("\n\n".join(f"## {h}" for h in headings).encode())
    assert page.heading_ids == set(ids) - {""}


def test_headings_get_anchors_from_their_rendered_text_and_repeats_are_numbered() -> None:
    doc = """\
## Use `--force` carefully
## See [the docs](docs.md) *now*
## HTML <b>bold</b> heading
## &amp; entities &copy;
## ![logo](logo.png) Title
## ~~Old~~ New
## <https://example.com/x>
##   Spaces   inside   ##
Setext over
two lines
---------
## Usage
## Usage
### Usage
## Usage-1
## Intro {#start .lead}
"""
    page = extract_markdown(doc.encode())
    assert page.heading_ids == {
        "use---force-carefully",
        "see-the-docs-now",
        "html-bold-heading",
        "-entities-",
        "-title",
        "old-new",
        "httpsexamplecomx",
        "spaces---inside",
        "setext-overtwo-lines",
        "usage",
        "usage-1",
        "usage-2",
        "usage-1-1",
        "intro-start-lead",
    }
    assert page.anchors == {"start"}  # an explicit id is found as written, not lower-cased
    assert page.title is None  # no level-1 heading


def test_the_title_is_the_first_level_one_heading() -> None:
    doc = "## Second level\n\nTitle *in* `code`\n===\n\n# Later\n"
    assert extract_markdown(doc.encode()).title == "Title in code"
    assert extract_markdown(b"Just text.\n").title is None


# -- bytes and limits


def test_encodings_from_bom_or_charset_and_undecodable_bytes_replaced() -> None:
    doc = "# Café\n\n[menu](menü.md)\n"
    page = extract_markdown(codecs.BOM_UTF16_LE + doc.encode("utf-16-le"))
    assert (page.encoding, page.title, pairs(codecs.BOM_UTF16_LE + doc.encode("utf-16-le"))) == (
        "utf-16-le",
        "Café",
        [("menü.md", 3)],
    )
    latin = doc.encode("latin-1")
    assert pairs(latin, "iso-8859-1") == [("menü.md", 3)]
    assert pairs(latin) == [("men\ufffd.md", 3)]
    assert pairs(b"[a](\xff\x00b.md)\n\x80[c](c.md)") == [("\ufffd\ufffdb.md", 1), ("c.md", 2)]


def test_deep_nesting_is_skipped_and_what_follows_still_found() -> None:
    for deep in (">" * 100_000, "- " * 100_000, "\n".join("  " * i + "- x" for i in range(2_000))):
        assert pairs(f"[before](a.md)\n\n{deep} [inside](x.md)\n\n[after](b.md)\n") == [
            ("a.md", 1),
            ("b.md", deep.count("\n") + 5),
        ]
    shallow = "".join("  " * i + f"- [level {i}](l{i}.md)\n" for i in range(8))
    assert pairs(shallow) == [(f"l{i}.md", i + 1) for i in range(8)]
    assert pairs("> " * 15 + "[quoted](q.md)") == [("q.md", 1)]


def test_a_paragraph_longer_than_the_parser_takes_at_once_keeps_every_link() -> None:
    lines = [f"Entry {i}: [entry {i}](e{i}.md) and https://e.example/{i} too" for i in range(3_000)]
    doc = "\n".join(lines)
    assert len(doc) > 2 * _PIECE
    expected = []
    for i in range(3_000):
        expected += [(f"e{i}.md", i + 1), (f"https://e.example/{i}", i + 1)]
    assert pairs(doc) == expected


def test_hostile_runs_of_markup_characters_give_a_page() -> None:
    for unit in ("[", "![", "[a](", "a:", "http:", "a@", "www.", "<", "*a", "`", "&#", "|", "$"):
        run = "x" + unit * ((2 * _PIECE + 5_000) // len(unit))  # "```" would start code
        page = extract_markdown(f"{run}\n\n[end](end.md)".encode())
        assert (page.links[-1].url, page.links[-1].line) == ("end.md", 3)
    # a '$$' that never closes, on every other line, and lines that only end with one
    for block in ("$$a\n# h\n", "- $$a\n", "> $$a\n> ---\n", "a $$\n"):
        run = block * 3_000
        page = extract_markdown(f"{run}\n$$\n\n[end](end.md)".encode())
        assert (page.links[-1].url, page.links[-1].line) == ("end.md", run.count("\n") + 4)


# -- properties

MARKDOWN_PIECES = [
    "[", "]", "(", ")", "![", "<", ">", "`", "```", "~~~", "    ", "\n", "\r", "\r\n", "\n\n",
    "# ", "> ", "- ", "1. ", "|", "|---|", "---", "*", "_", "\\", "&amp;", "&#0;", "\x00",
    "[a](b)", "[a]: /r", "[a]", "[^1]", "[^1]: n", "<a href=x>", "<div>", "</div>", "<!--",
    "-->", "https://x.example/", "www.x.example", "a@b.example", "mailto:", "{#id}", "é",
    "\ufeff", "\u2028", "\x85", "\x0c", "$", "$$", "\\$", "$$\n",
]  # fmt: skip
markdown_documents = st.one_of(
    st.binary(max_size=2000),
    st.lists(st.sampled_from(MARKDOWN_PIECES), max_size=80).map(
        lambda parts: "".join(parts).encode("utf-8")
    ),
    st.builds(
        lambda bom, rest: bom + rest,
        st.sampled_from([codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, b""]),
        st.binary(max_size=500),
    ),
)


def decoded_lines(body: bytes, encoding: str) -> int:
    text = body.decode(encoding, "replace")
    return text.replace("\r\n", "\n").replace("\r", "\n").count("\n") + 1


@FAST
@given(markdown_documents, st.sampled_from([None, "utf-8", "latin-1", "utf-16", "bogus"]))
def test_any_bytes_give_a_page_whose_lines_are_in_the_document(
    body: bytes, charset: str | None
) -> None:
    """No bytes make extract_markdown raise (a fault in reading a page does, and the page
    is then broken with its parse error): it gives the page its extraction gives."""
    page = extract_markdown(body, charset)
    assert _extract(body, page.encoding) == page
    codecs.lookup(page.encoding)
    lines = decoded_lines(body, page.encoding)
    for link in page.links:
        assert link.url and link.url == link.url.strip(" \t\n\r\f")
        assert 1 <= link.line <= lines, (link, lines)


@st.composite
def blocks(draw: st.DrawFn, number: int) -> tuple[list[str], list[tuple[str, int]]]:
    """(lines, [(url, line within the block)]) for one block holding links, or decoys."""
    url = f"/u{number}"
    kind = draw(st.integers(0, 13))
    if kind == 0:
        return [f"Text [a link]({url}) here."], [(url, 1)]
    if kind == 1:
        return ["Wrapped [a", "long link", f"text]({url} 'title') after."], [(url, 3)]
    if kind == 2:
        return [f"![an image]({url}.png)", f"and <https://auto.example{url}>"], [
            (f"{url}.png", 1),
            (f"https://auto.example{url}", 2),
        ]
    if kind == 3:
        return [f"see https://bare.example{url}.", f"or www.w{number}.example"], [
            (f"https://bare.example{url}", 1),
            (f"http://www.w{number}.example", 2),
        ]
    if kind == 4:
        return [f"[used][r{number}]", "", f"[r{number}]: {url}"], [(url, 1), (url, 3)]
    if kind == 5:
        return ["- item", f"  - nested [x]({url})"], [(url, 2)]
    if kind == 6:
        return ["> quoted", f"> - [x]({url})"], [(url, 2)]
    if kind == 7:
        return ["| a | b |", "|---|---|", f"| x | [t]({url}) |"], [(url, 3)]
    if kind == 8:
        return [f"## Heading [h]({url})"], [(url, 1)]
    if kind == 9:
        return ["<div>", f'<a href="{url}">x</a>', "</div>"], [(url, 2)]
    if kind == 10:
        return ["text <a", f'href="{url}">x</a>'], [(url, 1)]
    if kind == 11:
        return ["```", f"[no]({url}) https://no.example/", "```"], []
    if kind == 12:
        return ["`a multi-line", f"code span` then [x]({url})"], [(url, 2)]
    return [f"Plain text `[no]({url})` and more."], []


@st.composite
def documents_with_planted_links(draw: st.DrawFn) -> tuple[str, list[tuple[str, int]]]:
    lines: list[str] = []
    expected: list[tuple[str, int]] = []
    if draw(st.booleans()):
        lines += ["---", "title: x", "link: https://front.example/", "---"]
    for number in range(draw(st.integers(0, 12))):
        block, found = draw(blocks(number))
        expected += [(url, len(lines) + line) for url, line in found]
        lines += [*block, ""]
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return newline.join(lines), sorted(expected, key=lambda pair: pair[1])


@FAST
@given(documents_with_planted_links())
def test_planted_links_are_found_on_their_lines(planted: tuple[str, list[tuple[str, int]]]) -> None:
    doc, expected = planted
    assert pairs(doc) == expected
