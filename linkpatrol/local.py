"""Local inputs: a folder or files on disk checked as the site a static web server would make.

Files are named by ``file:`` URLs. One folder is the root: links are resolved as if the
root were served at a web address (``--base-url``, or a private stand-in), so root-relative
links (``/img/logo.png``) and links written as the production URL
(``https://example.org/about/``) both land on files under the root. Reading a file answers
as a static server would: a folder redirects to its ``/`` form and serves its
``index.html``, ``/about`` finds ``about.html``, ``?query`` is ignored, and
``Last-Modified``/``ETag`` come from the file, so unchanged files answer ``304``.
"""

from __future__ import annotations

import mimetypes
import os
import posixpath
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote, urlsplit

from linkpatrol.model import LINKING_TYPES, ConfigError, Reason
from linkpatrol.urls import BadURL, canonical

if TYPE_CHECKING:
    from linkpatrol.transport import Request, Response

# stands for the root when no --base-url says where the folder will be served;
# ".invalid" never resolves, so no request can ever leave for it
STAND_IN_BASE = "http://local.linkpatrol.invalid/"
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown", ".mkd")
MARKDOWN_TYPE = "text/markdown"
INDEX = "index.html"
PAGE_SUFFIXES = (".html", ".htm", ".xhtml", *MARKDOWN_SUFFIXES)
SKIPPED = frozenset({"node_modules"})
_URL_SCHEME = ("http://", "https://", "file:")
NO_MOUNT = "local files are read only when a local folder or file is checked"


@dataclass(frozen=True, slots=True)
class Mount:
    """The local root: ``root`` (a ``file:`` URL ending in ``/``) served at ``web``."""

    root: str
    web: str

    def to_web(self, url: str) -> str | None:
        """The web address of a file under the root, or None for any other URL."""
        if url.startswith(self.root):
            return self.web + url[len(self.root) :]
        return None

    def to_file(self, url: str) -> str:
        """A web address under the root becomes its file (without query; a folder's
        ``index.html`` as the folder); others stay."""
        if not url.startswith(self.web):
            return url
        rest = url[len(self.web) :].partition("?")[0]
        if rest == INDEX or rest.endswith("/" + INDEX):  # one file, one URL
            rest = rest[: -len(INDEX)]
        return self.root + rest

    def path_of(self, url: str) -> Path | None:
        """The file a ``file:`` URL names, if it lies under the root; None otherwise."""
        if not url.startswith(self.root):
            return None
        relative = unquote(url[len(self.root) :].partition("?")[0])
        if "\x00" in relative:
            return None
        cleaned = posixpath.normpath("/" + relative)
        if cleaned.startswith("//") or ".." in cleaned.split("/"):
            return None
        root = self.folder()
        return root / cleaned.lstrip("/") if cleaned != "/" else root

    def resolve(self, raw: str, base: str | None, query_encoding: str | None = None) -> str:
        """A link's canonical URL, resolved as on the web server that will serve the root:
        what lands under that server's address is the file it will serve."""
        web = self.to_web(base) if base is not None else None
        url = canonical(raw, web or base, query_encoding)
        if url.startswith("file:"):  # written as a file: URL; its dots resolved as well
            web = self.to_web(url)
            url = canonical(web) if web is not None else url
        return self.to_file(url)

    def folder(self) -> Path:
        """The root as a path on disk."""
        return Path(unquote(urlsplit(self.root).path))


def file_url(path: Path, folder: bool = False) -> str:
    """The canonical ``file:`` URL of an absolute path (a folder's ends with ``/``)."""
    text = quote(str(path), safe="/~!$&'()*+,;=:@-._")
    if folder and not text.endswith("/"):
        text += "/"
    return "file://" + text


def file_etag(stat: os.stat_result) -> str:
    """A file's validator: its modification time and size, as the memory keeps it (a
    file whose validator changed is read again, and ``fix`` leaves it alone)."""
    return f'"{stat.st_mtime_ns:x}-{stat.st_size:x}"'


def is_local_input(value: str) -> bool:
    """A start value that names a file or folder rather than a web URL."""
    if value.startswith("file:"):
        return True
    if value.lower().startswith(_URL_SCHEME):
        return False
    return "://" not in value


@dataclass(frozen=True, slots=True)
class Inputs:
    """Start URLs, local inputs turned into ``file:`` URLs, and the local root."""

    start_urls: tuple[str, ...]
    sites: tuple[str, ...]  # the local folders given: every file under them is parsed
    mount: Mount | None


def path_of_file_url(url: str) -> Path:
    """The path a ``file:`` URL names."""
    return Path(unquote(urlsplit(url).path))


def _path_of_input(value: str, cwd: Path) -> Path:
    path = path_of_file_url(value) if value.startswith("file:") else Path(value)
    path = path if path.is_absolute() else cwd / path
    path = Path(os.path.normpath(path))
    if not path.exists():
        hint = ""
        if "/" not in value and "." in value.strip("."):
            hint = f" (for a web site give its URL, e.g. https://{value}/)"
        raise ConfigError(f"{value}: no such file or folder{hint}")
    return path


def resolve_inputs(
    values: Iterable[str],
    base_url: str | None,
    cwd: Path,
    limit: int = 100_000,
    root_dir: str | None = None,
) -> Inputs:
    """Turn local paths among the start values into ``file:`` URLs under one root.

    The root is ``root_dir`` when given. A folder given alone is the root when it is a
    site to be served: it has an ``index.html``, or ``base_url`` says where it goes.
    Otherwise the root is the current folder when every local input lies under it (so
    that, in a repository, ``/docs/x.md`` means what it means on the forge), else the
    inputs' common parent. A folder input is a site:
    every page in it is a start and is parsed. A file input is parsed alone, and the
    files it links to are checked to exist.
    """
    values = list(values)
    locals_ = [(v, _path_of_input(v, cwd)) for v in values if is_local_input(v)]
    if not locals_:
        if base_url is not None:
            _web_base(base_url)
        if root_dir is not None:
            raise ConfigError(f"--root-dir {root_dir}: no local folder or file to check")
        return Inputs(tuple(values), (), None)
    paths = [p for _, p in locals_]
    if root_dir is not None:
        root = _path_of_input(root_dir, cwd)
        if not root.is_dir():
            raise ConfigError(f"--root-dir {root_dir}: not a folder")
    elif len(paths) == 1 and paths[0].is_dir() and (base_url or (paths[0] / INDEX).is_file()):
        root = paths[0]
    elif all(p == cwd or cwd in p.parents for p in paths):
        root = cwd
    else:
        root = Path(os.path.commonpath([p if p.is_dir() else p.parent for p in paths]))
    mount = Mount(file_url(root, folder=True), _web_base(base_url) if base_url else STAND_IN_BASE)
    local = dict(locals_)
    starts: list[str] = []
    sites: list[str] = []
    for value in values:
        path = local.get(value)
        if path is None:
            starts.append(value)
        elif path.is_dir():
            sites.append(file_url(path, folder=True))
            starts.extend(file_url(page) for page in pages_in(path, limit))
        else:
            starts.append(file_url(path))
    return Inputs(tuple(dict.fromkeys(starts)), tuple(dict.fromkeys(sites)), mount)


def pages_in(folder: Path, limit: int) -> list[Path]:
    """The HTML and Markdown files of a folder, all of them, so that none is missed for
    want of a link to it; hidden files and folders, and ``node_modules``, are left out."""
    found: list[Path] = []
    for here, folders, files in os.walk(folder):
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f not in SKIPPED)
        for name in sorted(files):
            if name.startswith(".") or not name.lower().endswith(PAGE_SUFFIXES):
                continue
            if len(found) >= limit:
                raise ConfigError(f"{folder}: more than {limit} pages; see --max-urls")
            found.append(Path(here) / name)
    return found


def _web_base(base_url: str) -> str:
    try:
        url = canonical(base_url)
    except BadURL as exc:
        raise ConfigError(f"--base-url {base_url!r}: {exc}") from None
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"--base-url {base_url!r}: must be an http or https URL")
    url = url.partition("?")[0]
    return url if url.endswith("/") else url + "/"


def content_type_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        return MARKDOWN_TYPE
    if suffix in (".html", ".htm"):
        return "text/html"
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "application/octet-stream"


def _shown(path: Path, mount: Mount) -> str:
    try:
        return str(path.relative_to(mount.folder())) or "."
    except ValueError:
        return str(path)


def _serve(mount: Mount, request: Request) -> Response:
    from email.utils import formatdate  # only for files: the email package is slow to import

    from linkpatrol.transport import Response  # only for a crawl, as asyncio below

    method = "GET" if request.want_body else "HEAD"
    url = request.url
    path = mount.path_of(url)
    if path is None:
        return Response(method, error="not a file under the checked folder", reason=Reason.FILE)
    try:
        if path.is_dir():
            if not url.partition("?")[0].endswith("/"):
                return Response(method, 301, location=url.partition("?")[0] + "/")
            index = path / INDEX
            if not index.is_file():
                return Response(
                    method,
                    error=f"folder without {INDEX}: {_shown(path, mount)}/",
                    reason=Reason.FILE,
                )
            path = index
        elif not path.is_file():
            page = path.with_name(path.name + ".html")
            if path.suffix or not page.is_file():
                return Response(
                    method, error=f"file not found: {_shown(path, mount)}", reason=Reason.FILE
                )
            path = page
        stat = path.stat()
        etag = file_etag(stat)
        modified = formatdate(stat.st_mtime, usegmt=True)
        kind = content_type_of(path)
        if request.headers.get("If-None-Match") == etag:
            return Response(method, 304, content_type=kind, etag=etag, last_modified=modified)
        body = None
        truncated = False
        if request.want_body and (request.any_type or kind in LINKING_TYPES):
            with path.open("rb") as handle:
                body = handle.read(request.limit + 1)
            truncated = len(body) > request.limit
            body = body[: request.limit]
        return Response(
            method,
            200,
            content_type=kind,
            etag=etag,
            last_modified=modified,
            body=body,
            truncated=truncated,
        )
    except OSError as exc:
        error = f"cannot read {_shown(path, mount)}: {exc.strerror}"
        return Response(method, error=error, reason=Reason.FILE)


class FileTransport:
    """``file:`` URLs under the local root, answered as a static web server would, each
    file read off the event loop (a body only for pages and stylesheets, unless
    ``any_type``)."""

    def __init__(self, mount: Mount | None) -> None:
        self.mount = mount

    async def send(self, request: Request) -> Response:
        import asyncio  # here: the commands that only read the memory never load it

        from linkpatrol.transport import Response

        started = time.monotonic()
        if self.mount is None:
            method = "GET" if request.want_body else "HEAD"
            return Response(method, error=NO_MOUNT, reason=Reason.FILE)
        response = await asyncio.to_thread(_serve, self.mount, request)
        response.elapsed = time.monotonic() - started
        return response

    async def close(self) -> None:
        pass


__all__ = [
    "MARKDOWN_TYPE",
    "STAND_IN_BASE",
    "FileTransport",
    "Inputs",
    "Mount",
    "content_type_of",
    "file_etag",
    "file_url",
    "is_local_input",
    "path_of_file_url",
    "resolve_inputs",
]
