"""``linkpatrol serve``: a small read-only web app over the memory.

It shows what the HTML report shows (rendered by :mod:`linkpatrol.report.html` from the
same report model), plus the live progress of a crawl writing the same memory from
another process, a search over every URL, and a page per URL with its changes of
verdict, the pages linking to it and the links it holds. It only reads: the memory is
opened as the ``report`` command opens it, and only GET and HEAD are answered.

Every response forbids what the pages do not need (a strict Content-Security-Policy: the
one script and style sheet come from the app itself, nothing is loaded from elsewhere,
no inline code runs), and all text from the crawled web is escaped.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any, TextIO, TypeVar
from urllib.parse import quote

from aiohttp import web

from linkpatrol.model import ExitCode, LinkpatrolError, State, line_label
from linkpatrol.report import build_report, moment
from linkpatrol.report.history import load_history
from linkpatrol.report.html import link, report_sections, script, stylesheet, text
from linkpatrol.report.status import PassStatus, pass_status, status_dict
from linkpatrol.report.text import status_line
from linkpatrol.store import ReadMemory, open_store

SEARCH_PAGE = 100  # URLs per page of search results

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}

T = TypeVar("T")


class Memory:
    """The store, read from worker threads one query at a time so pages never block the app."""

    def __init__(self, store: ReadMemory) -> None:
        self.store = store
        self._lock = threading.Lock()

    async def read(self, query: Callable[[ReadMemory], T]) -> T:
        def locked() -> T:
            with self._lock:
                return query(self.store)

        return await asyncio.to_thread(locked)


_MEMORY: web.AppKey[Memory] = web.AppKey("memory", Memory)


def url_page_link(url: str, label: str | None = None) -> str:
    """A link to the dashboard's own page about ``url``."""
    href = "/url?u=" + quote(url, safe="")
    return f'<a href="{text(href)}">{text(label if label is not None else url)}</a>'


def _page(
    title: str, body: str, status: PassStatus | None = None, http_status: int = 200
) -> web.Response:
    progress = _progress_panel(status) if status is not None else ""
    document = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{text(title)} · linkpatrol</title>
<link rel="stylesheet" href="/static/report.css">
<link rel="stylesheet" href="/static/dashboard.css">
<script src="/static/report.js" defer></script>
<script src="/static/dashboard.js" defer></script>
</head>
<body>
<header class="bar">
<a class="brand" href="/">linkpatrol</a>
<form action="/search" method="get" role="search">
<input type="search" name="q" placeholder="Search all URLs" aria-label="Search all URLs">
<button type="submit">Search</button>
</form>
</header>
{progress}
<main>
{body}
</main>
</body>
</html>
"""
    return web.Response(
        text=document, status=http_status, content_type="text/html", charset="utf-8"
    )


def _progress_panel(status: PassStatus) -> str:
    data = status_dict(status)
    percent = round(status.fraction * 100)
    verdicts = "".join(
        f'<li><span class="state-{state.value}">{state.value}</span> '
        f'<b data-verdict="{state.value}">{status.verdicts.get(state, 0)}</b></li>'
        for state in State
    )
    return f"""<section id="progress" class="progress" data-live="{int(not data["complete"])}">
<h2>Pass <span data-field="pass">{data["pass"]}</span>:
<span data-field="phase">{text(data["phase"])}</span></h2>
<progress max="100" value="{percent}" aria-label="share of known URLs done">{percent}%</progress>
<p><span data-field="done">{data["done"]}</span> of <span data-field="seen">{data["seen"]}</span>
URLs done, <span data-field="pending">{data["pending"]}</span> waiting;
<span data-field="requests">{data["requests"]}</span> requests,
<span data-field="elapsed">{data["elapsed"]:.1f}</span> s crawling.</p>
<ul class="verdicts">{verdicts}</ul>
<p class="note" id="progress-note" hidden>The pass is complete: reload for its report.</p>
</section>"""


async def index(request: web.Request) -> web.Response:
    memory = request.app[_MEMORY]

    def read(store: ReadMemory) -> tuple[PassStatus, str]:
        status = pass_status(store)
        return status, report_sections(build_report(store, status.info))

    status, sections = await memory.read(read)
    return _page("Report", sections, status)


async def api_status(request: web.Request) -> web.Response:
    status = await request.app[_MEMORY].read(pass_status)
    return web.json_response(status_dict(status))


async def search(request: web.Request) -> web.Response:
    wanted = request.query.get("q", "").strip()
    try:
        page = max(0, int(request.query.get("page", "0")))
    except ValueError:
        page = 0
    found = await request.app[_MEMORY].read(
        lambda store: store.find_urls(wanted, SEARCH_PAGE + 1, page * SEARCH_PAGE)
    )
    more = len(found) > SEARCH_PAGE
    rows = "".join(
        f'<tr><td class="url">{url_page_link(r.url)}</td>'
        f'<td><span class="state-{r.state.value}">{r.state.value}</span></td>'
        f"<td>{text(str(r.http_status or ''))}</td><td>{text(r.error or '')}</td></tr>"
        for r in found[:SEARCH_PAGE]
    )
    start = page * SEARCH_PAGE
    shown = f"{start + 1}–{start + min(len(found), SEARCH_PAGE)}" if found else "none"
    pager = ""
    if page:
        pager += f'<a href="/search?q={quote(wanted)}&amp;page={page - 1}">previous</a> '
    if more:
        pager += f'<a href="/search?q={quote(wanted)}&amp;page={page + 1}">next</a>'
    body = f"""<h1>URLs containing “{text(wanted)}”</h1>
<p class="count">Matches {shown}</p>
<table class="urls"><thead><tr><th>URL</th><th>Verdict</th><th>Status</th><th>Error</th></tr>
</thead><tbody>{rows}</tbody></table>
<nav class="pager">{pager}</nav>"""
    return _page(f"Search: {wanted}", body)


async def url_page(request: web.Request) -> web.Response:
    url = request.query.get("u", "")
    try:
        history = await request.app[_MEMORY].read(lambda store: load_history(store, url))
    except LinkpatrolError as exc:
        body = f"<h1>Not in the memory</h1><p>{text(str(exc))}</p>"
        return _page("Not found", body, http_status=404)
    r = history.record
    entry = history.entry
    changes = "".join(
        f"<tr><td>{text(moment(c.at))}</td><td>{c.pass_id or ''}</td>"
        f'<td><span class="state-{c.state.value}">{c.state.value}</span></td>'
        f"<td>{text(str(c.http_status or ''))}</td><td>{text(c.error or '')}</td></tr>"
        for c in reversed(history.changes)
    )
    referrers = "".join(
        f"<li>{url_page_link(page)} "
        + (f"line {line_label(line)}" if line is not None else "(redirect)")
        + f" · {link(page, 'open')}</li>"
        for page, line in r.referrers
    )
    links = "".join(
        f"<li>{url_page_link(link.url)}"
        + (f" line {line_label(link.line)}" if link.line is not None else "")
        + "</li>"
        for link in history.links
    )
    facts = [
        ("Verdict", f'<span class="state-{r.state.value}">{text(status_line(entry))}</span>'),
        ("Action", text(r.action.value)),
        ("Content type", text(r.content_type or "")),
        ("Redirects to", url_page_link(r.redirect_to) if r.redirect_to else ""),
        ("First seen", text(moment(r.first_seen))),
        ("Last checked", text(moment(r.last_checked))),
        ("Last good", text(moment(r.last_good))),
        ("Response time", f"{r.response_ms:.0f} ms" if r.response_ms is not None else ""),
    ]
    rows = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in facts if v)
    body = f"""<h1 class="url">{link(r.url)}</h1>
<table class="facts">{rows}</table>
<h2>Changes of verdict ({len(history.changes)})</h2>
<table class="changes"><thead><tr><th>When (UTC)</th><th>Pass</th><th>Verdict</th>
<th>Status</th><th>Error</th></tr></thead><tbody>{changes}</tbody></table>
<h2>Linked from ({len(r.referrers)})</h2>
<ul class="refs">{referrers or "<li>no page of its last pass links to it</li>"}</ul>
<h2>Links it holds ({len(history.links)})</h2>
<ul class="refs">{links or "<li>none (not a page, or not parsed)</li>"}</ul>"""
    return _page(r.url, body)


def _static(data: bytes, content_type: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=data, content_type=content_type, charset="utf-8")

    return handler


@web.middleware
async def _security_headers(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        response = exc
    except LinkpatrolError as exc:
        response = web.Response(text=f"linkpatrol: {exc}\n", status=503)
    except Exception as exc:  # a bug: answered plainly, with the same headers
        response = web.Response(text=f"internal error: {type(exc).__name__}\n", status=500)
    response.headers.update(_HEADERS)
    return response


def make_app(store: ReadMemory) -> web.Application:
    app = web.Application(middlewares=[_security_headers])
    app[_MEMORY] = Memory(store)
    app.router.add_get("/", index)
    app.router.add_get("/search", search)
    app.router.add_get("/url", url_page)
    app.router.add_get("/api/status", api_status)
    own = resources.files("linkpatrol").joinpath("static")
    for path, data, kind in (
        ("/static/report.js", script().encode(), "text/javascript"),
        ("/static/report.css", stylesheet().encode(), "text/css"),
        ("/static/dashboard.js", own.joinpath("dashboard.js").read_bytes(), "text/javascript"),
        ("/static/dashboard.css", own.joinpath("dashboard.css").read_bytes(), "text/css"),
    ):
        app.router.add_get(path, _static(data, kind))
    return app


async def serve(store: ReadMemory, host: str, port: int, ready: Callable[[str], Any]) -> None:
    """Serve until cancelled; ``ready`` gets the address once the app listens."""
    runner = web.AppRunner(make_app(store), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as exc:
            raise LinkpatrolError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        bound = sockets[0].getsockname()[1] if sockets else port
        shown = f"[{host}]" if ":" in host else host
        ready(f"http://{shown}:{bound}/")
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def run_dashboard(db: str, host: str, port: int, err: TextIO) -> int:
    """The ``serve`` command: until Ctrl-C or SIGTERM; its exit code."""
    store = open_store(db, crawl=False)

    def ready(address: str) -> None:
        err.write(f"linkpatrol: dashboard of {db} at {address} (Ctrl-C to stop)\n")
        err.flush()

    try:
        asyncio.run(_until_signal(serve(store, host, port, ready)))
    finally:
        store.close()
    return ExitCode.CLEAN


async def _until_signal(task: Awaitable[None]) -> None:
    loop = asyncio.get_running_loop()
    running = asyncio.ensure_future(task)
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, running.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await running
