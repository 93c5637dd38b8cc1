"""Every kind of link a page can hold, end to end, each reported at the line of its tag."""

from __future__ import annotations

import json

from tests.conftest import Runner, Serve, by_url
from tests.sitesrv import Page, html

# (line, markup, paths it must yield); line numbers are checked against the list position
ALL_TAGS: list[tuple[str, list[str]]] = [
    ("<!doctype html>", []),
    ("<html><head><title>every link</title>", []),
    ('<link rel="stylesheet" href="/l/link.css">', ["/l/link.css"]),
    ('<meta http-equiv="refresh" content="300; url=/l/refresh.html">', ["/l/refresh.html"]),
    ("<style>", []),
    ("  body { color: black; }", []),
    ("  .hero { background: url('/l/style-block.png') }", ["/l/style-block.png"]),
    ("</style>", []),
    ("</head>", []),
    ('<body background="/l/body-bg.png">', ["/l/body-bg.png"]),
    ('<a href="/l/a.html">a</a>', ["/l/a.html"]),
    (
        '<map name="m"><area href="/l/area.html" shape="rect" coords="0,0,1,1"></map>',
        ["/l/area.html"],
    ),
    ('<img src="/l/img.png" alt="">', ["/l/img.png"]),
    ('<img srcset="/l/small.png 1x, /l/large.png 2x" alt="">', ["/l/small.png", "/l/large.png"]),
    ('<script src="/l/script.js"></script>', ["/l/script.js"]),
    ('<iframe src="/l/iframe.html"></iframe>', ["/l/iframe.html"]),
    ('<embed src="/l/embed.swf">', ["/l/embed.swf"]),
    ('<video src="/l/video.mp4" poster="/l/poster.jpg">', ["/l/video.mp4", "/l/poster.jpg"]),
    ('<track src="/l/track.vtt" kind="captions">', ["/l/track.vtt"]),
    ("</video>", []),
    ('<audio src="/l/audio.ogg"></audio>', ["/l/audio.ogg"]),
    ("<picture>", []),
    (
        '<source srcset="/l/wide.webp 800w, /l/narrow.webp 400w">',
        ["/l/wide.webp", "/l/narrow.webp"],
    ),
    ('<source src="/l/source.webm" type="video/webm">', ["/l/source.webm"]),
    ("</picture>", []),
    ('<object data="/l/object.svg"></object>', ["/l/object.svg"]),
    ('<blockquote cite="/l/blockquote.html">said</blockquote>', ["/l/blockquote.html"]),
    ('<p><q cite="/l/q.html">quoted</q></p>', ["/l/q.html"]),
    ('<del cite="/l/del.html">gone</del>', ["/l/del.html"]),
    ('<ins cite="/l/ins.html">new</ins>', ["/l/ins.html"]),
    (
        "<div style=\"background-image: url('/l/style-attr.png')\">styled</div>",
        ["/l/style-attr.png"],
    ),
    ('<!-- <a href="/l/comment.html">commented out</a> -->', []),
    ("<script>", []),
    ("  var s = '<a href=\"/l/script-body.html\">no</a>';", []),
    ("</script>", []),
    ('<template><a href="/l/template.html">inert</a></template>', []),
    ("<!--", []),
    ('<img src="/l/comment2.png">', []),
    ("-->", []),
    ("</body></html>", []),
    # what follows the end is in the body for a browser, and so for the check
    ('<a href="/l/after-html.html">after the end</a>', ["/l/after-html.html"]),
    ('<img src="/l/after-html.png"></body></html>', ["/l/after-html.png"]),
]
NOT_LINKS = [
    "/l/comment.html",
    "/l/script-body.html",
    "/l/template.html",
    "/l/comment2.png",
]
FRAMES = [
    "<!doctype html>",
    "<html><head><title>frames</title></head>",
    '<frameset cols="50%,50%">',
    '<frame src="/l/frame-left.html">',
    '<frame src="/l/frame-right.html">',
    "</frameset>",
    "</html>",
]


def test_every_tag_and_attribute_reported_at_its_line(run: Runner, serve: Serve) -> None:
    expected = {path: line for line, (_, paths) in enumerate(ALL_TAGS, 1) for path in paths}
    pages: dict[str, Page] = {path: Page("ok", content_type="text/plain") for path in expected}
    pages["/l/frame-left.html"] = Page("left")
    pages["/l/frame-right.html"] = Page("right")
    pages["/"] = Page(html(*(markup for markup, _ in ALL_TAGS)))
    pages["/frames.html"] = Page(html(*FRAMES))
    site = serve(pages)

    code, report = run.check_json(site.url("/"), "--site", site.url("/frames.html"))
    frames_code, frames = run.check_json(site.url("/frames.html"))

    assert code == 0, [e for e in report["urls"] if e["state"] != "ok"]
    urls = by_url(report)
    for path, line in expected.items():
        entry = urls.get(site.url(path))
        assert entry is not None, f"{path} (line {line}) not found"
        assert entry["referrers"] == [{"url": site.url("/"), "line": line}], path
        assert entry["state"] == "ok", entry
    found = {u[len(site.base) :] for u in urls if u.startswith(site.base)}
    assert found == {"/", *expected}, found ^ {"/", *expected}
    for path in NOT_LINKS:
        assert site.counts()[path] == 0
    left = by_url(frames)[site.url("/l/frame-left.html")]
    right = by_url(frames)[site.url("/l/frame-right.html")]
    assert left["referrers"] == [{"url": site.url("/frames.html"), "line": 4}]
    assert right["referrers"] == [{"url": site.url("/frames.html"), "line": 5}]
    assert frames_code == 0


def test_link_on_line_57_is_reported_at_57(run: Runner, serve: Serve) -> None:
    filler = [f"<p>paragraph {n}</p>" for n in range(3, 57)]
    body = html(
        "<!doctype html>",
        "<html><body>",
        *filler,
        '<p>a <a href="/missing.html">broken link</a> on line 57</p>',
        "<p>and a second one,",
        "spread <a",
        '  href="/missing.html">over two lines</a></p>',
        "</body></html>",
    )
    assert body.splitlines()[56].startswith("<p>a <a")
    assert body.splitlines()[58].startswith("spread <a")  # the tag starts on 59, href on 60
    site = serve({"/": Page(body)})

    proc = run.check(site.url("/"), "--format", "json")
    text = run("report", "--db", run.db)

    missing = by_url(json.loads(proc.stdout))[site.url("/missing.html")]
    assert [r["line"] for r in missing["referrers"]] == [57, 59]
    assert proc.returncode == 1
    assert "/: lines 57, 59" in text.stdout


def test_latin1_page_declared_by_header(run: Runner, serve: Serve) -> None:
    body = html(
        "<html><body>",
        '<a href="/caf\xe9.html">caf\xe9</a>',
        '<a href="/na\xefve/">na\xefve</a>',
        "</body></html>",
    ).encode("latin-1")
    site = serve(
        {
            "/": Page(body, content_type="text/html; charset=ISO-8859-1"),
            "/caf%C3%A9.html": Page("ok"),
            "/na%C3%AFve/": Page("ok"),
        }
    )

    code, report = run.check_json(site.url("/"))

    urls = by_url(report)
    assert urls[site.url("/caf%C3%A9.html")]["state"] == "ok"
    assert urls[site.url("/na%C3%AFve/")]["referrers"] == [{"url": site.url("/"), "line": 3}]
    assert code == 0


def test_latin1_page_declared_by_meta_charset(run: Runner, serve: Serve) -> None:
    body = html(
        '<html><head><meta charset="iso-8859-1"><title>m\xe9ta</title></head><body>',
        '<a href="/r\xe9sum\xe9.html">r\xe9sum\xe9</a>',
        "</body></html>",
    ).encode("latin-1")
    site = serve(
        {
            "/": Page(body, content_type="text/html"),
            "/r%C3%A9sum%C3%A9.html": Page("ok"),
        }
    )

    code, report = run.check_json(site.url("/"))

    entry = by_url(report)[site.url("/r%C3%A9sum%C3%A9.html")]
    assert (entry["state"], entry["referrers"][0]["line"]) == ("ok", 2)
    assert code == 0


def test_utf8_bom_wins_over_a_wrong_header(run: Runner, serve: Serve) -> None:
    body = b"\xef\xbb\xbf" + html("<html><body>", '<a href="/\xfcber.html">\xfcber</a>').encode()
    site = serve(
        {
            "/": Page(body, content_type="text/html; charset=iso-8859-1"),
            "/%C3%BCber.html": Page("ok"),
        }
    )

    code, report = run.check_json(site.url("/"))

    assert by_url(report)[site.url("/%C3%BCber.html")]["referrers"][0]["line"] == 2
    assert code == 0


def test_broken_html_still_yields_its_links(run: Runner, serve: Serve) -> None:
    body = html(
        "<html><head><title>broken</title><meta charset=utf-8>",
        "</head><body><div><p>text <b>bold <i>both</b> italic?",
        "<table><tr><td><a href=/b1.html>no quotes</td>",
        '<a href="/b2.html"<a href="/b3.html">glued</a>',
        "<ul><li><a href='/b4.html'>item<li><a href=\"/b5.html\">item</ul>",
        '</div></div></span><img src="/b6.png" <p>',
        '<a href="/b7.html">last, unclosed',
    )
    targets = ["/b1.html", "/b4.html", "/b5.html", "/b7.html"]
    site = serve({"/": Page(body), **{p: Page("ok") for p in [*targets, "/b2.html", "/b6.png"]}})

    code, report = run.check_json(site.url("/"))

    urls = by_url(report)
    for path, line in zip(targets, [3, 5, 5, 7], strict=True):
        assert {"url": site.url("/"), "line": line} in urls[site.url(path)]["referrers"], path
    assert code in (0, 1)
