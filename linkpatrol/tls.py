"""TLS: which certificates each host must present.

Certificates are verified against the system's trusted CAs, plus the ``--ca-bundle``
file for every host, plus a ``[[tls]]`` entry's own ``ca_bundle`` for its host.
``--insecure HOST``, or ``verify = false`` in a ``[[tls]]`` entry, turns verification
off for that host only (``*``: every host). A host is written ``name``, ``name:port``,
an IP address, or ``[IPv6]:port``; without a port it means every port of that host.
A ``[[site]]`` table's ``ca_bundle`` is trusted too, and its ``insecure = true`` turns
verification off, for the URLs under its prefix.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

from linkpatrol.urls import BadURL, canonical

if TYPE_CHECKING:
    from linkpatrol.config import SiteSettings

ANY_HOST = "*"

HostPattern = tuple[str, int | None]  # (host as in URLs, without brackets; port or None)


def parse_host(text: str) -> HostPattern:
    """``(host, port)`` from ``name``, ``name:port``, ``::1``, ``[::1]:port`` or ``*``.

    The host is put in the form URLs have after canonicalization (lower case, IDN in
    punycode), so it compares equal to the host of any URL spelled for it. Raises
    ValueError saying why.
    """
    spec = text.strip()
    if spec == ANY_HOST:
        return ANY_HOST, None
    if spec.startswith("["):
        host, _, port = spec[1:].partition("]")
        if port and not port.startswith(":"):
            raise _not_a_host(text)
        port = port[1:]
    elif spec.count(":") == 1:
        host, port = spec.split(":")
    else:
        host, port = spec, ""
    name = _canonical_host(host, text)
    if not port:
        return name, None
    if not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        raise _not_a_host(text)
    return name, int(port)


def _not_a_host(text: str) -> ValueError:
    return ValueError(f"not a host: {text!r} (write name, name:port, an IP address, or *)")


def _canonical_host(host: str, text: str) -> str:
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host).compressed
        except ValueError:
            raise _not_a_host(text) from None
    try:
        url = canonical(f"http://{host}/")
    except BadURL:
        raise _not_a_host(text) from None
    name = url[len("http://") : -1]
    if not name or any(c in name for c in "/@:?#"):
        raise _not_a_host(text)
    return name


def format_host(pattern: HostPattern) -> str:
    """The one spelling of a host pattern, as :func:`parse_host` reads it back."""
    host, port = pattern
    if port is None:
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def check_ca_bundle(path: str) -> None:
    """ValueError saying why the PEM file of CA certificates cannot be used, if it cannot."""
    import ssl  # here, not at the top: the commands that only read the memory never need it

    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cafile=path)
    except FileNotFoundError:
        raise ValueError(f"CA bundle not found: {path}") from None
    except ssl.SSLError:
        raise ValueError(f"CA bundle holds no PEM certificate: {path}") from None
    except OSError as exc:
        raise ValueError(f"cannot read CA bundle {path}: {exc.strerror or exc}") from None


def _matches(pattern: HostPattern, host: str, port: int | None) -> bool:
    want_host, want_port = pattern
    return want_host in (ANY_HOST, host) and want_port in (None, port)


class TlsPolicy:
    """What to verify for each host: the CA bundles trusted besides the system's, or
    None for "do not verify". Every bundle is read once at the start, so one that cannot
    be used fails at once, with its path."""

    def __init__(self, settings: SiteSettings) -> None:
        extra = (settings.ca_bundle,) if settings.ca_bundle else ()
        self._extra = extra
        # the CA bundles trusted for each host pattern; None: not verified
        self._hosts: list[tuple[HostPattern, tuple[str, ...] | None]] = [
            (parse_host(host), None) for host in settings.insecure
        ]
        named = list(extra)
        for entry in settings.tls:
            bundles = None
            if entry.verify:
                bundles = (*extra, entry.ca_bundle) if entry.ca_bundle else extra
                named.extend(bundles)
            self._hosts.append((parse_host(entry.host), bundles))
        named.extend(table.ca_bundle for table in settings.site_tables if table.ca_bundle)
        for path in dict.fromkeys(named):
            check_ca_bundle(path)

    def for_host(
        self, host: str, port: int | None, also_trust: str | None = None, verify: bool = True
    ) -> tuple[str, ...] | None:
        """The first ``--insecure`` host, then the first ``[[tls]]`` entry, that matches;
        ``also_trust`` and ``verify`` are a ``[[site]]`` table's ``ca_bundle`` and
        ``insecure``."""
        if not verify:
            return None
        bundles: tuple[str, ...] | None = self._extra
        for pattern, found in self._hosts:
            if _matches(pattern, host, port):
                bundles = found
                break
        if bundles is None:
            return None
        if also_trust and also_trust not in bundles:
            bundles = (*bundles, also_trust)
        return bundles


__all__ = ["ANY_HOST", "TlsPolicy", "check_ca_bundle", "format_host", "parse_host"]
