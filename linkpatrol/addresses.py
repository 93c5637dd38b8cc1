"""Where a request may connect: names that never resolve, and ``--no-private``.

Two rules, both applied to the address a connection would really use:

- Special-use names that never resolve (``.invalid``, RFC 6761; ``.onion``, RFC 7686)
  fail at once, without asking any DNS server.
- With ``--no-private``, only public addresses are connected to: a host that is, or
  resolves to, a private, loopback, link-local, unspecified, multicast or reserved
  address is refused. The site's own hosts (those of the start URLs, ``--site``
  prefixes and ``[[site]]`` prefixes and proxies, as written there) are exempt: they
  were named on purpose.

The fetcher applies them where names become addresses: it resolves a name the rules
apply to itself, hands libcurl only its public addresses, and checks again in the
callback that opens each socket. So a name that resolves to ``127.0.0.1`` is refused as
surely as ``127.0.0.1`` itself, and what is checked is what is connected to. IP literals
never reach a resolver; the fetcher asks
:meth:`AddressGuard.check_literal` before each request, redirects included.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import TYPE_CHECKING

from linkpatrol.urls import BadURL, canonical

if TYPE_CHECKING:
    from linkpatrol.config import SiteSettings

NEVER_RESOLVE = ("invalid", "onion")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class AddressRefused(OSError):
    """``--no-private`` refused a connection: the host is, or resolves to, no public address."""


def never_resolves(host: str) -> bool:
    """True for a name under a special-use domain that no DNS server may answer."""
    return host.rstrip(".").lower().rsplit(".", 1)[-1] in NEVER_RESOLVE


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for (mapped, 6to4, NAT64), if any."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in ipaddress.IPv6Network("64:ff9b::/96"):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public(address: IPAddress) -> bool:
    """True for a globally routable unicast address (the IPv4 inside an IPv6 one too)."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = _embedded_ipv4(address)
        if inner is not None:
            return is_public(inner)
    return address.is_global and not (
        address.is_multicast
        or address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_unspecified
        or address.is_reserved
    )


def site_hosts(settings: SiteSettings) -> frozenset[str]:
    """The hosts of the start URLs, ``--site`` prefixes, and ``[[site]]`` prefixes and
    proxies, as URLs spell them."""
    hosts = set()
    tables = settings.site_tables
    named = (*(t.prefix for t in tables), *(t.proxy for t in tables if t.proxy))
    for url in (*settings.start_urls, *settings.sites, *named):
        try:
            authority = canonical(url).split("/", 3)[2]
        except (BadURL, IndexError):
            continue
        host = authority.rpartition("@")[2]
        if host.startswith("["):
            hosts.add(host[1 : host.find("]")])
        else:
            hosts.add(host.partition(":")[0])
    return frozenset(hosts)


class AddressGuard:
    """The rules above for one crawl, for the engines to apply to names and IP literals."""

    def __init__(self, settings: SiteSettings) -> None:
        self.no_private = settings.no_private
        self.exempt = site_hosts(settings) if settings.no_private else frozenset()

    def refuses(self, host: str) -> bool:
        return self.no_private and host not in self.exempt

    def check_literal(self, host: str) -> None:
        """Raise AddressRefused for an IP literal host that may not be connected to."""
        if not self.refuses(host):
            return
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return
        if not is_public(address):
            raise AddressRefused(f"{host} is not a public address")

    def none_public(self, host: str, addresses: Iterable[str]) -> AddressRefused:
        """The refusal of a name that resolves to ``addresses`` and to no public one."""
        listed = ", ".join(dict.fromkeys(addresses))
        return AddressRefused(f"{host} resolves to {listed}, not a public address")


__all__ = ["AddressGuard", "AddressRefused", "is_public", "never_resolves"]
