"""Links from PDF documents: the URI actions of their link annotations, by page.

A PDF has no lines; a link's page number (from 1) stands where a line would, so a report
names ``guide.pdf:3``. Only the page tree and the annotations are read, never the pages'
content, with pypdf in its forgiving mode. A hostile file is bounded like any document:
its bytes by the body limit, the streams pypdf decompresses by pypdf's own output limits,
the pages and links read by the limits below, and the time by the parse workers' hard
limit (a worker that passes it is killed).
"""

from __future__ import annotations

import io
import logging
import warnings
from typing import Any

from linkpatrol.extract import Link, Page

__all__ = ["extract_pdf"]

MAX_PAGES = 10_000
MAX_LINKS = 50_000

# pypdf tells of every oddity of a broken file on its logger and as warnings: a worker
# has no one to tell them to, and the page is judged by what is read
logging.getLogger("pypdf").addHandler(logging.NullHandler())
logging.getLogger("pypdf").propagate = False


def _uri(annotation: Any) -> str | None:
    """The URI of a link annotation's action, if it has one."""
    if annotation.get("/Subtype") != "/Link":
        return None
    action = annotation.get("/A")
    if action is None:
        return None
    action = action.get_object()
    if action.get("/S") != "/URI":
        return None
    uri = action.get("/URI")
    if isinstance(uri, bytes):
        uri = uri.decode("utf-8", "replace")
    return str(uri).strip() if uri is not None else None


def _read(body: bytes) -> Page:
    from pypdf import PdfReader  # only where PDFs are read: it is slow to import

    reader = PdfReader(io.BytesIO(body), strict=False)
    links: list[Link] = []
    for number, page in enumerate(reader.pages, 1):
        if number > MAX_PAGES:
            break
        annotations = page.get("/Annots")
        if annotations is None:
            continue
        for reference in annotations.get_object():
            uri = _uri(reference.get_object())
            if uri:
                links.append(Link(uri, number, "pdf", "uri"))
                if len(links) >= MAX_LINKS:
                    return _page(links)
    return _page(links)


def _page(links: list[Link]) -> Page:
    return Page(links=links, base_href=None, encoding="utf-8", anchors=frozenset(), title=None)


def extract_pdf(body: bytes) -> Page:
    """The web links of a PDF, each with its page number as its line; never raises,
    whatever the bytes (what was read before a fault is lost with it)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _read(body)
    except Exception:  # a recursion too deep for Python among them
        return _page([])
