"""Per-site settings: the ``[[site]]`` tables, matched to each request by its URL.

A URL gets the table with the longest prefix it starts with. Prefixes are canonical
URLs, so they hold at least the ``/`` after the host: a URL that matches is on the
table's scheme, host and port. Credentials (headers, cookies, basic auth) therefore
never reach another origin, whichever link or redirect leads there; each request is
matched on its own URL, retries and a GET after HEAD included.

A host's robots.txt is asked for on behalf of the URLs under the host's tables, so it
goes the way they go (user agent, proxy, timeout, TLS) even when no prefix covers
``/robots.txt``; it carries their credentials only when one does. ``per_host`` and
``delay`` are the whole host's: the smallest ``per_host`` and the longest ``delay`` of
its tables.

Secrets are read from the environment here, when a crawl starts, and live only in this
process's memory: nothing here is written, logged or shown.

``GITHUB_TOKEN``, when set, goes as ``Authorization: Bearer …`` to GitHub's web and API
hosts (:data:`TOKEN_ORIGINS`) as if a table of each host's whole prefix sent it, and to
their tables that send no ``Authorization`` of their own: the same matching keeps it on
those two origins, ``https`` only, whatever redirects there or away.
"""

from __future__ import annotations

import base64
import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from linkpatrol.config import SiteTable
from linkpatrol.model import ConfigError
from linkpatrol.urls import has_userinfo, origin

_UNSENDABLE = frozenset("\x00\r\n")
TOKEN_VARIABLE = "GITHUB_TOKEN"
# the origins GITHUB_TOKEN goes to; LINKPATROL_TOKEN_ORIGINS (origins, comma-separated)
# names others instead, for a test's server to stand in for them
TOKEN_ORIGINS = ("https://github.com", "https://api.github.com")
TOKEN_ORIGINS_VARIABLE = "LINKPATROL_TOKEN_ORIGINS"


@dataclass(frozen=True, slots=True)
class SiteRequest:
    """What a request carries for its ``[[site]]`` table, besides the crawl-wide settings."""

    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    proxy: str | None = None
    timeout: float | None = None
    ca_bundle: str | None = None
    insecure: bool = False


NO_SITE = SiteRequest()


def _secret(table: SiteTable, key: str, variable: str, environ: Mapping[str, str]) -> str:
    """The value of an environment variable a table names; never quoted in an error."""
    where = table.where or f"site {table.prefix}"
    value = environ.get(variable)
    if not value:
        raise ConfigError(f"{where}: '{key}': environment variable {variable} is not set or empty")
    if _UNSENDABLE & set(value):
        raise ConfigError(
            f"{where}: '{key}': environment variable {variable} holds a line break or NUL"
        )
    return value


def resolve(table: SiteTable, environ: Mapping[str, str]) -> SiteRequest:
    """The request settings of one table, secrets read from ``environ`` (ConfigError if not)."""
    headers: dict[str, str] = {}
    if table.user_agent is not None:
        headers["User-Agent"] = table.user_agent
    headers.update(table.headers)
    for name, variable in table.headers_env:
        headers[name] = _secret(table, "headers_env", variable, environ)
    cookies = list(table.cookies)
    for name, variable in table.cookies_env:
        value = _secret(table, "cookies_env", variable, environ)
        if ";" in value:
            where = table.where or f"site {table.prefix}"
            raise ConfigError(f"{where}: 'cookies_env': environment variable {variable} holds ';'")
        cookies.append((name, value))
    if cookies:
        headers["Cookie"] = "; ".join(f"{name}={value}" for name, value in cookies)
    if table.username is not None and table.password_env is not None:
        password = _secret(table, "password_env", table.password_env, environ)
        token = base64.b64encode(f"{table.username}:{password}".encode()).decode("ascii")
        headers["Authorization"] = f"Basic {token}"
    return SiteRequest(headers, table.proxy, table.timeout, table.ca_bundle, table.insecure)


def check_environment(tables: Sequence[SiteTable]) -> None:
    """Raise ConfigError for the first secret missing from the environment."""
    for table in tables:
        resolve(table, os.environ)
    bearer_token(os.environ)


def bearer_token(environ: Mapping[str, str]) -> tuple[tuple[str, ...], str | None]:
    """The origins GITHUB_TOKEN goes to, and its ``Authorization`` value (None when the
    variable is not set or empty; ConfigError when it holds a line break or NUL)."""
    named = environ.get(TOKEN_ORIGINS_VARIABLE, "")
    origins = tuple(origin(o.strip()) for o in named.split(",") if o.strip()) or TOKEN_ORIGINS
    token = environ.get(TOKEN_VARIABLE, "").strip()
    if not token:
        return origins, None
    if _UNSENDABLE & set(token):
        raise ConfigError(f"environment variable {TOKEN_VARIABLE} holds a line break or NUL")
    return origins, f"Bearer {token}"


def _with_token(request: SiteRequest, authorization: str) -> SiteRequest:
    """A table's request with the token, unless it sends an Authorization of its own."""
    if any(name.lower() == "authorization" for name in request.headers):
        return request
    headers = {**request.headers, "Authorization": authorization}
    return dataclasses.replace(request, headers=headers)


class SiteMatcher:
    """The ``[[site]]`` tables of one crawl, ready to say what goes with each request."""

    def __init__(
        self, tables: Sequence[SiteTable], environ: Mapping[str, str] | None = None
    ) -> None:
        env = os.environ if environ is None else environ
        by_origin: dict[str, list[tuple[str, SiteRequest]]] = {}
        self._robots: dict[str, SiteRequest] = {}
        self._per_host: dict[str, int] = {}
        self._delay: dict[str, float] = {}
        # the shortest prefix first: of a host's tables, that one speaks for its robots.txt
        for table in sorted(tables, key=lambda t: len(t.prefix)):
            host = origin(table.prefix)
            request = resolve(table, env)
            by_origin.setdefault(host, []).append((table.prefix, request))
            if host not in self._robots:
                agent = request.headers.get("User-Agent")
                robots_headers = {"User-Agent": agent} if agent is not None else {}
                self._robots[host] = dataclasses.replace(request, headers=robots_headers)
            if table.per_host is not None:
                self._per_host[host] = min(table.per_host, self._per_host.get(host, table.per_host))
            if table.delay is not None:
                self._delay[host] = max(table.delay, self._delay.get(host, table.delay))
        token_origins, authorization = bearer_token(env)
        if authorization is not None:
            for host in token_origins:
                found = [(p, _with_token(r, authorization)) for p, r in by_origin.get(host, ())]
                if not any(prefix == host + "/" for prefix, _ in found):
                    found.insert(0, (host + "/", SiteRequest({"Authorization": authorization})))
                by_origin[host] = found
        self._by_origin = {host: found[::-1] for host, found in by_origin.items()}
        self.max_per_host = max(self._per_host.values(), default=0)

    def for_url(self, url: str, robots: bool = False) -> SiteRequest:
        """What a request to ``url`` carries: its table's, with the longest prefix that
        matches, or (``robots``: for robots.txt) its host's without credentials."""
        if not self._by_origin or has_userinfo(url):
            return NO_SITE
        host = origin(url)
        for prefix, request in self._by_origin.get(host, ()):
            if url.startswith(prefix):
                return request
        if robots:
            return self._robots.get(host, NO_SITE)
        return NO_SITE

    def per_host(self, host: str, default: int) -> int:
        """Requests in flight at once to ``host`` (an origin)."""
        return self._per_host.get(host, default)

    def per_host_limits(self) -> dict[str, int]:
        """The hosts (origins) whose tables set ``per_host``, with it."""
        return self._per_host

    def delay(self, host: str, default: float) -> float:
        """The pause between requests to ``host`` (an origin)."""
        return self._delay.get(host, default)


__all__ = [
    "NO_SITE",
    "TOKEN_ORIGINS",
    "SiteMatcher",
    "SiteRequest",
    "bearer_token",
    "check_environment",
    "resolve",
]
