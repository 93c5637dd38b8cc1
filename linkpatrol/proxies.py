"""Which proxy a request goes through: ``--proxy`` (the ``proxy`` key), else the
environment's, as curl reads it; never for a host ``no_proxy`` names.

The environment, as curl reads it: ``http_proxy`` for ``http://`` URLs (lower case only:
a CGI program gets a request's ``Proxy:`` header as ``HTTP_PROXY``), ``https_proxy`` or
``HTTPS_PROXY`` for ``https://`` ones, else ``all_proxy`` or ``ALL_PROXY``; the first
variable set is the one (set and empty: no proxy). ``no_proxy`` or ``NO_PROXY`` lists
hosts reached directly: ``*`` for all, names (each also for its subdomains; a leading
dot is the same), IP addresses and CIDR ranges, separated by commas. It applies to
``--proxy`` too; ``--proxy ''`` means no proxy at all, the environment's neither. A
``[[site]]`` table's proxy is for its prefix, whatever the rest says.

A proxy URL is ``scheme://[user[:password]@]host[:port]`` (``http``, ``https``,
``socks4``, ``socks4a``, ``socks5``, ``socks5h``; ``http`` when none is written; port
1080, or 443 for ``https``, as curl's). ``--proxy`` takes no password: one for a user it
names comes from ``LINKPATROL_PROXY_PASSWORD``, read when a crawl starts, as for a user
named in the environment's URL without one. Everything here is plain data over a
mapping of the environment; a password is kept out of every ``repr``.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, unquote, urlsplit

from linkpatrol.model import ConfigError

PASSWORD_VARIABLE = "LINKPATROL_PROXY_PASSWORD"
SCHEMES = ("http", "https", "socks4", "socks4a", "socks5", "socks5h")
DEFAULT_PORTS = {"https": 443}  # else 1080, as libcurl's
NO_PROXY_VARIABLES = ("no_proxy", "NO_PROXY")
# the variables naming the proxy of a scheme's URLs, in the order they are read
PROXY_VARIABLES = {
    "http": ("http_proxy", "all_proxy", "ALL_PROXY"),
    "https": ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"),
}


@dataclass(frozen=True, slots=True)
class Proxy:
    """A proxy as libcurl is told of it: its URL without credentials, and those apart."""

    url: str  # scheme://host:port
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def spelled(self) -> str:
        """The URL with its user name (never the password)."""
        if self.username is None:
            return self.url
        scheme, _, rest = self.url.partition("://")
        return f"{scheme}://{quote(self.username, safe='')}@{rest}"


def parse_proxy_url(text: str) -> Proxy:
    """A proxy URL taken apart, as curl reads it (ValueError with the reason, which
    quotes no password)."""
    given = text.strip()
    if "://" not in given:
        given = "http://" + given
    scheme, _, rest = given.partition("://")
    authority, slash, path = rest.partition("/")
    shown = f"{scheme}://{authority.rpartition('@')[2]}{slash}{path}"  # no credentials
    try:
        parts = urlsplit(given)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"not a proxy URL: {shown!r} ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise ValueError(f"not a proxy URL: {shown!r} (the scheme is one of {', '.join(SCHEMES)})")
    host = parts.hostname
    if not host:
        raise ValueError(f"not a proxy URL: {shown!r} (no host)")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"expected {scheme}://host:port, without a path, got {shown!r}")
    where = f"[{host}]" if ":" in host else host
    url = f"{scheme}://{where}:{port or DEFAULT_PORTS.get(scheme, 1080)}"
    username = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    return Proxy(url, username, password)


def proxy_option(value: object) -> str:
    """``--proxy`` and the ``proxy`` key: a proxy URL with a user name at most, or ``''``
    for no proxy at all."""
    if not isinstance(value, str):
        raise ValueError(f"expected a proxy URL, got {value!r}")
    if not value.strip():
        return ""
    parsed = parse_proxy_url(value)
    if parsed.password is not None:
        raise ValueError(
            f"a password in the proxy URL: give the user only ({parsed.spelled}) "
            f"and the password in {PASSWORD_VARIABLE}"
        )
    return parsed.spelled


def bypasses(host: str, no_proxy: str) -> bool:
    """Whether ``host`` (as a URL's ``hostname``: lower case, no brackets) is reached
    directly for ``no_proxy``, as libcurl matches it."""
    if not host or not no_proxy.strip():
        return False
    if no_proxy.strip() == "*":
        return True
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        address = None
    name = host.rstrip(".").lower()
    for token in no_proxy.replace(",", " ").split():
        if address is not None:
            try:
                if address in ipaddress.ip_network(token.strip("[]"), strict=False):
                    return True
            except ValueError:
                continue
            continue
        pattern = token.strip(".").lower()
        if pattern and (name == pattern or name.endswith("." + pattern)):
            return True
    return False


def _first(environ: Mapping[str, str], names: tuple[str, ...]) -> tuple[str, str] | None:
    """The first of the variables that is set, with its value."""
    for name in names:
        if name in environ:
            return name, environ[name]
    return None


def _with_password(parsed: Proxy, given: str, environ: Mapping[str, str]) -> Proxy:
    """The proxy with its password: the URL's, else the environment's for its user."""
    if parsed.username is None or parsed.password is not None:
        return parsed
    password = environ.get(PASSWORD_VARIABLE)
    if not password:
        raise ConfigError(
            f"{given}: the password of proxy user {parsed.username}: "
            f"environment variable {PASSWORD_VARIABLE} is not set or empty"
        )
    return dataclasses.replace(parsed, password=password)


class Proxies:
    """The proxies of one crawl: ``option`` is ``--proxy`` (None: not given), ``environ``
    the environment, read once here (ConfigError for a bad proxy or a missing password)."""

    def __init__(self, option: str | None, environ: Mapping[str, str]) -> None:
        found = _first(environ, NO_PROXY_VARIABLES)
        self.no_proxy = found[1] if found else ""
        self._by_scheme: dict[str, Proxy | None] = {}
        for scheme, names in PROXY_VARIABLES.items():
            if option is not None:
                given, text = "option --proxy", option
            else:
                found = _first(environ, names)
                if found is None:
                    self._by_scheme[scheme] = None
                    continue
                given, text = f"environment variable {found[0]}", found[1]
            if not text.strip():
                self._by_scheme[scheme] = None
                continue
            try:
                parsed = parse_proxy_url(text)
            except ValueError as exc:
                raise ConfigError(f"{given}: {exc}") from None
            self._by_scheme[scheme] = _with_password(parsed, given, environ)

    def for_url(self, url: str) -> Proxy | None:
        """The proxy a request to ``url`` goes through, if any."""
        proxy = self._by_scheme.get(url.partition("://")[0].lower())
        if proxy is None:
            return None
        if self.no_proxy and bypasses(urlsplit(url).hostname or "", self.no_proxy):
            return None
        return proxy


NO_PROXIES = Proxies("", {})

__all__ = [
    "NO_PROXIES",
    "PASSWORD_VARIABLE",
    "Proxies",
    "Proxy",
    "bypasses",
    "parse_proxy_url",
    "proxy_option",
]
