"""The sitemap (sitemaps.org protocol 0.9) of the site's good HTML pages, from the memory.

A page is listed when the pass parsed it, found it ok, and it was served as HTML. Its
``<lastmod>`` is the server's Last-Modified when it sent one, else when it was last checked.
The protocol allows 50,000 URLs of at most 2,048 characters in one file: longer URLs are
left out, and so are pages past the 50,000th (an XML comment says how many).
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from lxml import etree

from linkpatrol.model import Action, State
from linkpatrol.report import Entry, Report
from linkpatrol.report.junit import xml_text
from linkpatrol.urls import is_http

NAMESPACE = "http://www.sitemaps.org/schemas/sitemap/0.9"
MAX_URLS = 50_000
MAX_URL_LENGTH = 2_048


def lastmod(entry: Entry) -> str | None:
    """W3C datetime of the page's last change as far as the memory knows."""
    if entry.last_modified:
        try:
            changed = parsedate_to_datetime(entry.last_modified)
        except (TypeError, ValueError):
            changed = None
        if changed is not None:
            if changed.tzinfo is None:
                changed = changed.replace(tzinfo=UTC)
            return changed.astimezone(UTC).isoformat(timespec="seconds")
    if entry.last_checked is None:
        return None
    return datetime.fromtimestamp(entry.last_checked, UTC).isoformat(timespec="seconds")


def sitemap_pages(report: Report) -> list[Entry]:
    return [
        entry
        for entry in report.entries
        if entry.action is Action.PARSE
        and entry.state is State.OK
        and entry.is_html
        and is_http(entry.url)
        and len(entry.url) <= MAX_URL_LENGTH
    ]


def render_sitemap(report: Report) -> str:
    pages = sitemap_pages(report)
    root = etree.Element("urlset", nsmap={None: NAMESPACE})
    for entry in pages[:MAX_URLS]:
        url = etree.SubElement(root, "url")
        etree.SubElement(url, "loc").text = xml_text(entry.url)
        changed = lastmod(entry)
        if changed:
            etree.SubElement(url, "lastmod").text = changed
    if len(pages) > MAX_URLS:
        left_out = len(pages) - MAX_URLS
        root.append(etree.Comment(f" {left_out} more pages left out (50,000 at most) "))
    xml: bytes = etree.tostring(root, encoding="UTF-8", xml_declaration=True, pretty_print=True)
    return xml.decode("utf-8")
