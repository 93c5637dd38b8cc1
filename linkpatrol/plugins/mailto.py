"""The ``mailto`` plugin: the e-mail addresses the site's pages link to, and where.

Every ``mailto:`` link of the pass counts, the ``to``, ``cc`` and ``bcc`` of its query
too. An address is percent-decoded, its domain lower-cased (an ``xn--`` label shown as
the name it encodes), and listed once with the pages and lines linking to it.

It reads the addresses from the report at the end of the run, not from the pages as they
are parsed: a page unchanged since the last pass is not parsed again, and the report holds
its links from the memory, as well as those of every earlier run of a resumed pass.

Options (``[plugin.mailto]``): ``max_addresses`` (default 1000) and ``max_pages``, the
places listed per address (default 20); the report counts what they leave out.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from linkpatrol.model import line_field
from linkpatrol.plugins import Plugin
from linkpatrol.report import Report
from linkpatrol.store import PassInfo

MAX_ADDRESSES = 1000
MAX_PAGES = 20
_LONGEST = 320  # characters in an address (64 before the @, 255 after)
_NOT_IN_ADDRESS = re.compile(r"[\s<>()\[\]\\,;:\"\x00-\x1f\x7f]")


def _domain(domain: str) -> str:
    labels = []
    for label in domain.lower().split("."):
        if label.startswith("xn--"):
            with contextlib.suppress(UnicodeError):
                label = label.encode("ascii").decode("idna")
        labels.append(label)
    return ".".join(labels)


def address_of(text: str) -> str | None:
    """One address as written in a mailto: link (percent-encoded), or None if it is none."""
    text = unquote(text).strip()
    if "<" in text and text.endswith(">"):  # "Name <someone@example.org>"
        text = text[text.rindex("<") + 1 : -1].strip()
    local, at, domain = text.rpartition("@")
    if not at or not local or not domain or len(text) > _LONGEST:
        return None
    if _NOT_IN_ADDRESS.search(domain) or re.search(r"[\s<>\x00-\x1f\x7f]", local):
        return None
    return f"{local}@{_domain(domain)}"


def mailto_addresses(url: str) -> Iterator[str]:
    """The addresses of a ``mailto:`` URL (RFC 6068): before the ``?``, and to, cc, bcc."""
    scheme, colon, rest = url.partition(":")
    if not colon or scheme.lower() != "mailto":
        return
    to, _, query = rest.partition("?")
    written = to.split(",")
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        if unquote(key).lower() in ("to", "cc", "bcc"):
            written += value.split(",")
    seen: set[str] = set()
    for text in written:
        address = address_of(text)
        if address is not None and address not in seen:
            seen.add(address)
            yield address


@dataclass(slots=True)
class _Found:
    pages: list[tuple[str, int | None]] = field(default_factory=list)
    more: int = 0  # places beyond max_pages


def _whole(options: Mapping[str, Any], key: str, default: int) -> int:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"'{key}' must be a whole number of at least 1, got {value!r}")
    return value


class MailtoPlugin(Plugin):
    """Collects the e-mail addresses linked from the site, with their pages and lines."""

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        super().__init__(options)
        unknown = set(self.options) - {"max_addresses", "max_pages"}
        if unknown:
            raise ValueError(f"unknown option '{sorted(unknown)[0]}'")
        self.max_addresses = _whole(self.options, "max_addresses", MAX_ADDRESSES)
        self.max_pages = _whole(self.options, "max_pages", MAX_PAGES)
        self._found: dict[str, _Found] = {}
        self._left_out: set[str] = set()

    def pass_finished(self, info: PassInfo, report: Report) -> None:
        self._found.clear()
        self._left_out.clear()
        for entry in report.entries:
            if entry.url[:7].lower() != "mailto:":
                continue
            for address in mailto_addresses(entry.url):
                found = self._found.get(address)
                if found is None:
                    if len(self._found) >= self.max_addresses:
                        self._left_out.add(address)
                        continue
                    found = self._found[address] = _Found()
                for ref in entry.referrers:
                    place = (ref.url, ref.line)
                    if place in found.pages:
                        continue
                    if len(found.pages) < self.max_pages:
                        found.pages.append(place)
                    else:
                        found.more += 1

    def report_fields(self) -> dict[str, Any]:
        addresses = []
        for address in sorted(self._found):
            found = self._found[address]
            item: dict[str, Any] = {
                "address": address,
                "pages": [
                    {"url": url, **line_field(line)}
                    for url, line in sorted(found.pages, key=_by_page)
                ],
            }
            if found.more:
                item["more_pages"] = found.more
            addresses.append(item)
        left_out = len(self._left_out)
        return {"count": len(addresses) + left_out, "left_out": left_out, "addresses": addresses}


def _by_page(place: tuple[str, int | None]) -> tuple[str, int]:
    return place[0], place[1] or 0


__all__ = ["MailtoPlugin", "address_of", "mailto_addresses"]
