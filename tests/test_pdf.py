"""PDF documents of the site: their web links checked, each at its page number."""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

import pytest
from pypdf import PdfWriter
from pypdf.annotations import Link as LinkAnnotation

from linkpatrol.pdf import extract_pdf
from tests.conftest import Runner, Serve
from tests.sitesrv import Page, html


def pdf(pages: list[list[str]], internal_link_on: int | None = None) -> bytes:
    """A PDF with one page per list, each holding a link annotation per URL."""
    writer = PdfWriter()
    for _ in pages:
        writer.add_blank_page(200, 200)
    for index, urls in enumerate(pages):
        for url in urls:
            writer.add_annotation(index, LinkAnnotation(rect=(10, 10, 50, 50), url=url))
    if internal_link_on is not None:  # a link to a page of the document: no URL
        link = LinkAnnotation(rect=(10, 60, 50, 90), target_page_index=0)
        writer.add_annotation(internal_link_on - 1, link)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_links_by_page_number() -> None:
    body = pdf([["https://example.com/a"], [], ["/b.html", "c/d.png"]], internal_link_on=2)
    page = extract_pdf(body)
    assert [(link.url, link.line) for link in page.links] == [
        ("https://example.com/a", 1),
        ("/b.html", 3),
        ("c/d.png", 3),
    ]
    assert page.anchors == frozenset()


def _cyclic_page_tree() -> bytes:
    """A hand-made PDF whose page tree holds itself as its own kid."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 10 10] /Annots [4 0 R 4 0 R] >>",
        b"<< /Subtype /Link /Rect [0 0 1 1] /A << /S /URI /URI (https://x.example/) >> >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return out


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"%PDF-1.7\n" + b"\x00\xff" * 100_000,
        pdf([["https://example.com/a"]])[:300],
        b"%PDF-1.4\n" + b"[" * 200_000,
        _cyclic_page_tree(),
    ],
    ids=["empty", "garbage", "cut short", "deeply nested", "cyclic page tree"],
)
def test_hostile_pdfs_are_read_quickly_and_never_raise(body: bytes) -> None:
    started = time.monotonic()
    page = extract_pdf(body)
    assert time.monotonic() - started < 10
    assert all(link.url == "https://x.example/" for link in page.links)


def _broken(report: dict[str, Any], base: str) -> dict[str, list[tuple[str, int]]]:
    return {
        e["url"][len(base) :]: [(r["url"][len(base) :], r["line"]) for r in e["referrers"]]
        for e in report["urls"]
        if e["reportable"]
    }


def test_a_sites_pdf_is_checked_at_its_page_numbers(run: Runner, serve: Serve) -> None:
    site = serve(
        {
            "/": Page(html('<a href="/guide.pdf">the guide</a>')),
            "/guide.pdf": Page(
                pdf([["/present.html"], [], ["/missing.html"]]), content_type="application/pdf"
            ),
            "/present.html": Page(html("<p>here</p>")),
        }
    )

    code, report = run.check_json(site.url("/"))

    assert code == 1
    assert _broken(report, site.base) == {"/missing.html": [("/guide.pdf", 3)]}
    assert site.counts()["/present.html"] == 1


def test_a_pdf_in_a_local_folder(tmp_path: Path) -> None:
    public = tmp_path / "public"
    public.mkdir()
    (public / "index.html").write_text(html('<a href="docs.pdf">docs</a>'))
    (public / "docs.pdf").write_bytes(pdf([[], ["/gone.html", "index.html"]]))
    root = public.as_uri() + "/"

    code, report = Runner(tmp_path).check_json("public", "--offline")

    assert code == 1
    assert _broken(report, root) == {"gone.html": [("docs.pdf", 2)]}
