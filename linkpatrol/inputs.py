"""Where a check starts: URLs, local folders and files, a list on stdin, sitemaps.

Everything here runs before the crawl and turns the user's inputs into start URLs (and
the local root, when files are checked); the engine sees only URLs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import io
import re
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from lxml import etree

from linkpatrol.config import SiteSettings
from linkpatrol.local import is_local_input, resolve_inputs
from linkpatrol.model import ConfigError
from linkpatrol.urls import BadURL, canonical, site_prefix

STDIN = "-"
MAX_SITEMAPS = 1_000  # sitemaps read through sitemap indexes, in all
MAX_SITEMAP_BYTES = 50 * 1024 * 1024  # what the sitemap protocol allows, uncompressed
_SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


def read_url_list(stream: TextIO, where: str, limit: int) -> list[str]:
    """One URL (or path) per line; blank lines and ``#`` comments are skipped."""
    values: list[str] = []
    for number, line in enumerate(stream, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if len(values) >= limit:
            raise ConfigError(f"{where}: more than {limit} URLs (line {number}); see --max-urls")
        values.append(text)
    return values


def _decompressed(data: bytes, where: str) -> bytes:
    if not data.startswith(b"\x1f\x8b"):
        return data
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as unzipped:
            out = unzipped.read(MAX_SITEMAP_BYTES + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise ConfigError(f"sitemap {where}: bad gzip data: {exc}") from None
    if len(out) > MAX_SITEMAP_BYTES:
        raise ConfigError(f"sitemap {where}: larger than 50 MB uncompressed")
    return out


def parse_sitemap(data: bytes, where: str) -> tuple[list[str], list[str]]:
    """(page URLs, nested sitemap URLs) of a sitemap, a sitemap index or a text sitemap."""
    data = _decompressed(data, where)
    head = data.lstrip()[:200].lower()
    if not (head.startswith(b"<") or head.startswith(b"\xef\xbb\xbf<")):
        text = data.decode("utf-8", errors="replace")
        return [line.strip() for line in text.splitlines() if line.strip()], []
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, recover=False
    )
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise ConfigError(f"sitemap {where}: not valid XML: {exc}") from None
    kind = etree.QName(root).localname
    if kind not in ("urlset", "sitemapindex"):
        raise ConfigError(f"sitemap {where}: root element is <{kind}>, not <urlset>")
    locs = [
        (el.text or "").strip()
        for el in root.iter(f"{_SITEMAP_NS}loc", "loc")
        if (el.text or "").strip()
    ]
    return (locs, []) if kind == "urlset" else ([], locs)


def _read_file(source: str, cwd: Path) -> bytes:
    path = Path(source)
    path = path if path.is_absolute() else cwd / path
    try:
        return path.read_bytes()[: MAX_SITEMAP_BYTES + 1]
    except OSError as exc:
        raise ConfigError(f"sitemap {source}: cannot read: {exc.strerror}") from None


async def _sitemap_urls(sources: Iterable[str], settings: SiteSettings, cwd: Path) -> list[str]:
    from linkpatrol.curlfetch import make_fetcher
    from linkpatrol.fetch import Fetcher

    fetcher: Fetcher | None = None  # started at the first sitemap on the web, used for all
    pending = list(sources)
    seen: set[str] = set()
    found: dict[str, None] = {}
    try:
        while pending:
            source = pending.pop(0)
            if source in seen:
                continue
            seen.add(source)
            if len(seen) > MAX_SITEMAPS:
                raise ConfigError(
                    f"sitemap {source}: more than {MAX_SITEMAPS} sitemaps in the index"
                )
            if is_local_input(source):
                data = _read_file(source, cwd)
            else:
                if fetcher is None:
                    fetcher = make_fetcher(
                        dataclasses.replace(settings, max_size=MAX_SITEMAP_BYTES)
                    )
                response = await fetcher.fetch("GET", source, want_body=True, any_type=True)
                if response.status != 200 or response.body is None:
                    why = response.error or f"HTTP {response.status}"
                    raise ConfigError(f"sitemap {source}: cannot fetch: {why}")
                data = response.body
            pages, nested = parse_sitemap(data, source)
            for url in pages:
                if len(found) >= settings.max_urls:
                    raise ConfigError(f"sitemap {source}: more than {settings.max_urls} URLs")
                found[url] = None
            pending.extend(nested)
    finally:
        if fetcher is not None:
            await fetcher.close()
    return list(found)


def sitemap_urls(sources: Iterable[str], settings: SiteSettings, cwd: Path) -> list[str]:
    """Every page URL listed in the sitemaps, following sitemap indexes (bounded)."""
    return asyncio.run(_sitemap_urls(sources, settings, cwd))


CHECKABLE = ("http", "https", "file")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")  # two letters at least: C:\\ is a path


def check_start_value(value: str, cwd: Path) -> None:
    """Refuse a start value that cannot be checked: a scheme other than http:, https: and
    file:, or a web URL with no valid form. (A path that does not exist is refused where
    local inputs are read.)"""
    scheme = _SCHEME.match(value)
    if scheme is not None and scheme.group(1).lower() not in CHECKABLE:
        if "://" not in value and (cwd / value).exists():
            return  # a file whose name has a colon in it
        name = scheme.group(1).lower()
        import difflib  # only a misspelt scheme needs it

        close = difflib.get_close_matches(name, ("http", "https"), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}:?" if close else ""
        raise ConfigError(
            f"{value}: cannot check a start value with the scheme '{name}:' "
            f"(give an http:, https: or file: URL, or a file or folder){hint}"
        )
    if not is_local_input(value):
        try:
            canonical(value)
        except BadURL as exc:
            raise ConfigError(f"{value}: not a valid URL ({exc})") from None


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def prepare(settings: SiteSettings, stdin: TextIO, cwd: Path | None = None) -> SiteSettings:
    """The settings with every input turned into start URLs and the local root set, and
    the inputs as given kept for reports to name."""
    cwd = cwd or Path.cwd()
    values: list[str] = []
    given: list[str] = []
    for value in settings.start_urls:
        if value == STDIN:
            listed = read_url_list(stdin, "stdin", settings.max_urls)
            values.extend(listed)
            given.append(f"{_count(len(listed), 'URL')} from stdin")
        else:
            values.append(value)
            given.append(value)
    sites = list(settings.sites)
    if settings.sitemap:
        for source in settings.sitemap:
            if not is_local_input(source):  # a sitemap speaks for the folder it lies in
                try:
                    sites.append(site_prefix(canonical(source)))
                except BadURL as exc:
                    raise ConfigError(f"sitemap {source!r}: {exc}") from None
    for value in values:
        check_start_value(value, cwd)
    if settings.sitemap:
        listed = sitemap_urls(settings.sitemap, settings, cwd)
        values.extend(listed)
        maps = "the sitemap" if len(settings.sitemap) == 1 else "the sitemaps"
        given.append(f"{_count(len(listed), 'URL')} from {maps} {', '.join(settings.sitemap)}")
    inputs = resolve_inputs(values, settings.base_url, cwd, settings.max_urls, settings.root_dir)
    return dataclasses.replace(
        settings,
        start_urls=inputs.start_urls,
        sites=tuple(dict.fromkeys([*sites, *inputs.sites])),
        mount=inputs.mount,
        inputs=tuple(given),
    )


__all__ = ["STDIN", "parse_sitemap", "prepare", "read_url_list", "sitemap_urls"]
