"""Canonical URL forms, so that two spellings of one resource give one string.

The rules follow what browsers do (WHATWG URL) where it matters for link
checking, and RFC 3986 for dot segments and percent-encoding.
"""

from __future__ import annotations

import functools
import ipaddress
import os
import re
from dataclasses import dataclass
from encodings.idna import ToASCII, nameprep
from urllib.parse import unquote_to_bytes, urljoin

__all__ = [
    "BadURL",
    "canonical",
    "has_userinfo",
    "host",
    "is_http",
    "is_valid",
    "local_path",
    "origin",
    "path_depth",
    "relative_to",
    "remove_dot_segments",
    "scheme",
    "site_prefix",
]


class BadURL(ValueError):
    """A URL that cannot be parsed; str(e) is a short reason such as 'invalid port'."""


_DEFAULT_PORTS = {"http": "80", "https": "443"}
_FRAGMENT_DROPPED = frozenset({"ftp", "file", "ws", "wss"})
_C0_AND_SPACE = "".join(map(chr, range(0x21)))
_TWO_SLASHES = ("//", "\\\\", "/\\", "\\/")

_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_AUTHORITY_END_RE = re.compile(r"[/\\?]")
_BAD_HOST_RE = re.compile(r"[\x00-\x20\x7f\"#%/:<>?@\[\\\]^`{|}]")
_IPV6_CHARS = frozenset("0123456789abcdefABCDEF:.")
_NUMBER_ENDS = frozenset("0123456789abcdefx")  # what a host read as IPv4 may end in
_IDNA_DOTS = re.compile("[.\u3002\uff0e\uff61]")
_DEVIATIONS = re.compile("([\u00df\u03c2])")

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_RESERVED = "!$&'()*+,;=:@/?[]"
# One match is either an escape (%XX) or a single character that is not allowed
# literally. A lone '%' is neither: browsers send it as it is (and servers answer 400).
_ESCAPE_RE = re.compile(r"%[0-9A-Fa-f]{2}|[^A-Za-z0-9\-._~!$&'()*+,;=:@/?\[\]%]")
_LONE_PERCENT_RE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]+")
# what WHATWG URL percent-encodes in a URL of a scheme of its own (mailto:): in the path
# the C0 controls and all beyond ASCII, in the query also space " # < >, in the fragment
# space " < > `. Written as the printable ASCII left alone: a class that spans all of
# Unicode takes milliseconds to compile, at every start
_MAILTO_PATH = re.compile(r"[^\x20-\x7e]+")
_MAILTO_QUERY = re.compile(r"[^\x21\x24-\x3b\x3d\x3f-\x7e]+")  # not " # < >
_MAILTO_FRAGMENT = re.compile(r"[^\x21\x23-\x3b\x3d\x3f-\x5f\x61-\x7e]+")  # not " < > `


def _build_replacements() -> dict[str, str]:
    """Precompute the replacement of every ASCII token _ESCAPE_RE can match."""
    table: dict[str, str] = {}
    hexdigits = "0123456789abcdefABCDEF"
    for hi in hexdigits:
        for lo in hexdigits:
            char = chr(int(hi + lo, 16))
            table["%" + hi + lo] = char if char in _UNRESERVED else "%" + (hi + lo).upper()
    for code in range(0x80):
        char = chr(code)
        if char not in _UNRESERVED and char not in _RESERVED:
            table[char] = f"%{code:02X}"
    return table


_REPLACEMENTS = _build_replacements()


def _escaped(data: bytes) -> str:
    return "".join(f"%{byte:02X}" for byte in data)


def _replace_token(match: re.Match[str]) -> str:
    token = match.group()
    known = _REPLACEMENTS.get(token)
    if known is not None:
        return known
    return _escaped(token.encode("utf-8", "surrogatepass"))


def _keep_escape(match: re.Match[str]) -> str:
    token = match.group()
    return token.upper() if token[0] == "%" else _replace_token(match)


def _normalize_escapes(text: str) -> str:
    """Upper-case escapes, decode unreserved ones, escape what must be escaped.

    Where a lone '%' is, no escape is decoded: '%%41' would become '%A', which reads as
    another escape (browsers decode none, and send '%%41').
    """
    if "%" in text and _LONE_PERCENT_RE.search(text) is not None:
        return _ESCAPE_RE.sub(_keep_escape, text)
    return _ESCAPE_RE.sub(_replace_token, text)


def _dots(segment: str) -> str:
    """The segment, with its escaped dots read as dots (browsers read '%2e' as '.')."""
    if "%" in segment and len(segment) <= 6:
        return segment.lower().replace("%2e", ".")
    return segment


def remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4 for a path that starts with '/'."""
    segments = path.split("/")
    out: list[str] = []
    for segment in segments[1:]:
        dots = _dots(segment)
        if dots == "..":
            if out:
                out.pop()
        elif dots != ".":
            out.append(segment)
    if _dots(segments[-1]) in (".", ".."):
        out.append("")
    return "/" + "/".join(out)


def _normalize_path(path: str) -> str:
    if "\\" in path:
        path = path.replace("\\", "/")
    if not path.startswith("/"):
        path = "/" + path
    # the dots first: a lone '%' in a segment that '..' removes must not keep the rest
    # of the path from being decoded
    if "/." in path or "%2" in path:
        path = remove_dot_segments(path)
    return _normalize_escapes(path)


def _encode_run(run: re.Match[str], encoding: str) -> str:
    return _escaped(run.group().encode(encoding, "xmlcharrefreplace"))


def _encode_query(query: str, encoding: str) -> str:
    """A query's characters beyond ASCII as a browser sends them from a page in this
    encoding: its bytes percent-encoded, and one it cannot encode as ``&#N;``, encoded.

    Each run of them is encoded at once, as a browser encodes the query: an encoding with
    states (ISO-2022-JP) shifts once into a run and once out of it, not around each
    character.
    """
    return _NON_ASCII_RE.sub(functools.partial(_encode_run, encoding=encoding), query)


def _normalize_query(query: str | None, encoding: str | None = None) -> str:
    """'' for no query or an empty one, since 'x?' and 'x' name one resource."""
    if not query:
        return ""
    if encoding is not None and not query.isascii():
        query = _encode_query(query, encoding)
    return "?" + _normalize_escapes(query)


def _normalize_userinfo(userinfo: str) -> str:
    user, _, password = userinfo.partition(":")
    user = _normalize_escapes(user)
    password = _normalize_escapes(password)
    if not user and not password:
        return ""
    return user + (":" + password if password else "") + "@"


def _normalize_ipv6(host: str) -> str:
    inner = host[1:-1]
    if not inner or not _IPV6_CHARS.issuperset(inner):
        raise BadURL("invalid IPv6 address")
    try:
        address = ipaddress.IPv6Address(inner)
    except ValueError:
        raise BadURL("invalid IPv6 address") from None
    if address.ipv4_mapped is not None:
        # in hex, as browsers write it; Python 3.13 writes '::ffff:1.2.3.4'
        low = int(address) & 0xFFFFFFFF
        return f"[::ffff:{low >> 16:x}:{low & 0xFFFF:x}]"
    return f"[{address.compressed}]"


def _idna_label(label: str) -> str:
    if _DEVIATIONS.search(label) is None:
        return ToASCII(label).decode("ascii") if label else ""
    parts = _DEVIATIONS.split(label)  # the letters kept are at the odd places
    parts[::2] = [nameprep(part) for part in parts[::2]]
    ascii_label = "xn--" + "".join(parts).encode("punycode").decode("ascii")
    if len(ascii_label) > 63:
        raise UnicodeError("label too long")
    return ascii_label


def _idna(host: str) -> str:
    """Punycode of a non-ASCII host name, keeping 'ß' and 'ς' as browsers do.

    IDNA 2003 (Python's codec) maps them to 'ss' and 'σ', so 'straße.de' would name
    'strasse.de', another domain; UTS #46 non-transitional processing, which browsers
    follow, encodes them.
    """
    if _DEVIATIONS.search(host) is None:
        return host.encode("idna").decode("ascii")
    labels = _IDNA_DOTS.split(host)
    if "" in labels[:-1]:
        raise UnicodeError("empty label")
    return ".".join(map(_idna_label, labels))


@functools.lru_cache(maxsize=1024)
def _normalize_host(host: str) -> str:
    """A site's links name few hosts, each many times: their forms are remembered (a name
    that ends in a hex digit, as 'example.de', is read as an IPv4 address first)."""
    if host.startswith("["):
        return _normalize_ipv6(host)
    if "%" in host:
        try:
            host = unquote_to_bytes(host).decode("utf-8")
        except UnicodeError:
            raise BadURL("invalid host") from None
    host = host.rstrip(".")
    if not host:
        raise BadURL("empty host")
    if not host.isascii():
        try:
            host = _idna(host)
        except UnicodeError:
            raise BadURL("invalid host") from None
        host = host.rstrip(".")
    host = host.lower()
    if not host:
        raise BadURL("empty host")
    if _BAD_HOST_RE.search(host):
        raise BadURL("invalid host")
    if host[-1] in _NUMBER_ENDS and (address := _ipv4(host)) is not None:
        return address
    return host


def _ipv4_number(part: str) -> int | None:
    """A label of an IPv4 address, as browsers read it: 0x hexadecimal, 0 octal, else
    decimal; None if it is none of them."""
    radix = 10
    if part[:2] in ("0x", "0X"):
        part, radix = part[2:], 16
    elif len(part) > 1 and part[0] == "0":
        part, radix = part[1:], 8
    if not part:
        return 0 if radix != 10 else None
    if not (part.isascii() and part.isalnum()):
        return None
    try:
        return int(part, radix)
    except ValueError:
        return None


def _ipv4(host: str) -> str | None:
    """The dotted form of a host browsers read as an IPv4 address (WHATWG URL): 0x7f.1,
    2130706433 and 0177.0.0.1 are all 127.0.0.1. None for a name: its last label is no
    number. A last label that is one makes the host an address or nothing (example.123)."""
    *rest, final = host.split(".")
    last = _ipv4_number(final)
    if last is None and not final.isdigit():
        return None
    if last is None or len(rest) > 3 or last >= 256 ** (4 - len(rest)):
        raise BadURL("invalid IPv4 address")
    address = last
    for i, label in enumerate(rest):
        number = _ipv4_number(label)
        if number is None or number > 255:
            raise BadURL("invalid IPv4 address")
        address += number << (8 * (3 - i))
    return ".".join(str(address >> shift & 255) for shift in (24, 16, 8, 0))


def _normalize_port(port: str | None, scheme_name: str) -> str:
    if not port:
        return ""
    if not (port.isascii() and port.isdigit()):
        raise BadURL("invalid port")
    port = port.lstrip("0") or "0"
    if len(port) > 5 or int(port) > 65535:
        raise BadURL("invalid port")
    if port == _DEFAULT_PORTS[scheme_name]:
        return ""
    return ":" + port


def _split_host_port(hostport: str) -> tuple[str, str | None]:
    if hostport.startswith("["):
        close = hostport.find("]")
        if close < 0:
            raise BadURL("invalid IPv6 address")
        after = hostport[close + 1 :]
        if after and not after.startswith(":"):
            raise BadURL("invalid host")
        return hostport[: close + 1], after[1:] if after else None
    host, colon, port = hostport.partition(":")
    return host, port if colon else None


def _absolute_http(scheme_name: str, rest: str, encoding: str | None = None) -> str:
    """Canonical form of 'scheme:rest' for http(s); rest may lack its slashes, as browsers
    allow. The query's characters beyond ASCII are sent in ``encoding`` (else UTF-8)."""
    hash_at = rest.find("#")
    if hash_at >= 0:
        rest = rest[:hash_at]
    rest = rest.lstrip("/\\")
    end = _AUTHORITY_END_RE.search(rest)
    if end is None:
        authority, tail = rest, ""
    else:
        authority, tail = rest[: end.start()], rest[end.start() :]
    at = authority.rfind("@")
    userinfo = _normalize_userinfo(authority[:at]) if at >= 0 else ""
    host, port = _split_host_port(authority[at + 1 :])
    host = _normalize_host(host)
    port = _normalize_port(port, scheme_name)
    path, question, query = tail.partition("?")
    return (
        f"{scheme_name}://{userinfo}{host}{port}"
        f"{_normalize_path(path)}{_normalize_query(query if question else None, encoding)}"
    )


@dataclass(frozen=True, slots=True)
class _Base:
    url: str
    scheme: str
    prefix: str
    path: str
    query: str | None


@functools.lru_cache(maxsize=1024)
def _parse_base(base: str) -> _Base:
    """Base URLs repeat for every link of a page, so their parsing is cached."""
    try:
        url = _canonical(base, None)
    except BadURL as exc:
        raise BadURL(f"invalid base: {exc}") from None
    name = url[: url.find(":")]
    if name not in _DEFAULT_PORTS:
        return _Base(url, name, "", "", None)
    path_at = url.find("/", len(name) + 3)
    prefix, rest = url[:path_at], url[path_at:]
    path, question, query = rest.partition("?")
    return _Base(url, name, prefix, path, query if question else None)


def _resolve_http(base: _Base, ref: str, encoding: str | None = None) -> str:
    """RFC 3986 section 5.2.2 for a reference without scheme or authority."""
    hash_at = ref.find("#")
    if hash_at >= 0:
        ref = ref[:hash_at]
    path, question, query_part = ref.partition("?")
    query = query_part if question else None
    if not path:
        path = base.path
        if query is None:
            query = base.query
    else:
        path = path.replace("\\", "/")
        if not path.startswith("/"):
            path = base.path[: base.path.rfind("/") + 1] + path
    return base.prefix + _normalize_path(path) + _normalize_query(query, encoding)


def _encode_runs(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(lambda run: _escaped(run.group().encode("utf-8", "surrogatepass")), text)


def _mailto(rest: str) -> str:
    """A ``mailto:`` URL's characters beyond ASCII (and controls, and in its query and
    fragment the characters WHATWG URL escapes there) percent-encoded in UTF-8, on a page
    in any encoding, as browsers do: ``mailto:jörg@…`` and ``mailto:j%C3%B6rg@…`` are one
    URL, and the ``mailto`` plugin decodes each of its addresses again."""
    rest, hashed, fragment = rest.partition("#")
    to, question, query = rest.partition("?")
    out = _encode_runs(_MAILTO_PATH, to)
    if question:
        out += "?" + _encode_runs(_MAILTO_QUERY, query)
    if hashed:
        out += "#" + _encode_runs(_MAILTO_FRAGMENT, fragment)
    return out


def _other_scheme(scheme_name: str, rest: str) -> str:
    if scheme_name == "mailto":
        return "mailto:" + _mailto(rest)
    if scheme_name in _FRAGMENT_DROPPED:
        hash_at = rest.find("#")
        if hash_at >= 0:
            rest = rest[:hash_at].rstrip(_C0_AND_SPACE)
    return scheme_name + ":" + rest


def _canonical(raw: str, base: str | None, encoding: str | None = None) -> str:
    text = raw.strip(_C0_AND_SPACE)
    if "\t" in text or "\n" in text or "\r" in text:
        text = text.replace("\t", "").replace("\n", "").replace("\r", "")
    if not text:
        raise BadURL("empty URL")
    match = _SCHEME_RE.match(text)
    if match is not None:
        scheme_name = match.group()[:-1].lower()
        rest = text[match.end() :]
        if scheme_name not in _DEFAULT_PORTS:
            return _other_scheme(scheme_name, rest)
        if base is not None and not rest.startswith(_TWO_SLASHES):
            parsed = _parse_base(base)
            if parsed.scheme == scheme_name:
                return _resolve_http(parsed, rest, encoding)
        return _absolute_http(scheme_name, rest, encoding)
    if base is None:
        raise BadURL("missing scheme")
    parsed = _parse_base(base)
    if parsed.scheme in _DEFAULT_PORTS:
        if text.startswith(_TWO_SLASHES):
            return _absolute_http(parsed.scheme, text, encoding)
        return _resolve_http(parsed, text, encoding)
    joined = urljoin(parsed.url, text)
    if _SCHEME_RE.match(joined) is None:
        raise BadURL("cannot resolve against base")
    return _canonical(joined, None)


def canonical(raw: str, base: str | None = None, query_encoding: str | None = None) -> str:
    """Resolve raw against base and return the one canonical absolute spelling.

    ``query_encoding`` is the encoding of the page the link is on, where it is not UTF-8:
    browsers send an http(s) query's characters beyond ASCII in it. Raises BadURL, and
    nothing else, when no such form exists.
    """
    try:
        return _canonical(raw, base, query_encoding)
    except BadURL:
        raise
    except ValueError as exc:
        raise BadURL("invalid URL") from exc


def is_valid(url: str) -> bool:
    """Whether ``url`` (absolute) has a canonical form: False for a link that is no URL."""
    try:
        _canonical(url, None)
    except ValueError:
        return False
    return True


def _split(url: str) -> tuple[str, str, str]:
    """(scheme://authority, path, query) of a canonical URL; ('', '', '') without an authority."""
    start = url.find("://")
    if start < 0:
        return "", "", ""
    path_at = url.find("/", start + 3)
    query_at = url.find("?", start + 3)
    if query_at >= 0 and (path_at < 0 or query_at < path_at):
        path_at = query_at
    if path_at < 0:
        return url, "", ""
    path, _, query = url[path_at:].partition("?")
    return url[:path_at], path, query


def scheme(url: str) -> str:
    """Lower-case scheme of a canonical URL, '' if it has none."""
    colon = url.find(":")
    return url[:colon].lower() if colon > 0 else ""


def is_http(url: str) -> bool:
    """True for the schemes the checker can request."""
    return scheme(url) in _DEFAULT_PORTS


def has_userinfo(url: str) -> bool:
    """True for an http(s) URL with user:pass@, which is recorded rather than requested."""
    if "@" not in url or not is_http(url):
        return False
    prefix = _split(url)[0]
    return "@" in prefix


def origin(url: str) -> str:
    """'scheme://host[:port]' of a canonical URL, without userinfo; '' if it has no authority."""
    prefix = _split(url)[0]
    if not prefix:
        return ""
    slashes = prefix.find("://") + 3
    at = prefix.rfind("@")
    if at >= slashes:
        return prefix[:slashes] + prefix[at + 1 :]
    return prefix


def host(url: str) -> str:
    """The host of a canonical URL ('' without one); an IPv6 literal in its brackets."""
    authority = origin(url)[len(scheme(url)) + 3 :]
    if authority.startswith("["):
        return authority[: authority.find("]") + 1]
    return authority.partition(":")[0]


def folder_and_name(url: str) -> tuple[str, str]:
    """The path of a canonical URL's folder (to its last '/') and the name after it."""
    folder, _, name = _split(url)[1].rpartition("/")
    return folder + "/", name


def path_depth(url: str) -> int:
    """Number of non-empty path segments, for limiting how deep a crawl goes."""
    path = _split(url)[1]
    return sum(1 for segment in path.split("/") if segment)


def site_prefix(start_url: str) -> str:
    """The part of a start URL that defines the site: everything up to its last '/'."""
    scheme_end = start_url.find("://")
    slash = start_url.rfind("/")
    if scheme_end < 0 or slash < scheme_end + 3:
        return start_url.rstrip("/") + "/"
    return start_url[: slash + 1]


def local_path(url: str) -> str:
    """A ``file:`` URL as the path a person types: relative to the current folder when
    under it; a folder as its ``index.html``, the file whose lines a report names."""
    path = unquote_to_bytes(url[len("file://") :].partition("?")[0]).decode("utf-8", "replace")
    if path.endswith("/"):
        path += "index.html"
    cwd = os.getcwd().rstrip("/") + "/"
    return path[len(cwd) :] if path.startswith(cwd) else path


def as_shown(url: str) -> str:
    """A URL as reports show it: a local file by its path (see :func:`local_path`)."""
    return local_path(url) if url.startswith("file://") else url


def relative_to(url: str, base: str) -> str:
    """Short form for reports: path and query when url shares base's scheme and authority;
    a local file's path."""
    if url.startswith("file://"):
        return local_path(url)
    if not is_http(url):
        return url
    prefix, path, query = _split(url)
    if prefix != _split(base)[0]:
        return url
    return (path or "/") + ("?" + query if query else "")


# a path segment made of numbers alone: 2026, 11, 2026-11-22, 1.5
_NUMBER_ONLY = re.compile(r"(?<=/)[0-9]+(?:[-._:][0-9]+)*(?=/|$)")
# a path segment that looks generated: 16 or more letters and digits, both present
# (session IDs, hashes, UUIDs)
_TOKEN = re.compile(r"(?<=/)(?=[\w-]*[0-9])(?=[\w-]*[A-Za-z])[\w-]{16,}(?=/|$)", re.ASCII)
# path parameters: /page;jsessionid=0A1B2C
_PATH_PARAMS = re.compile(r";[^/]*")


def similar_pattern(url: str) -> str | None:
    """The URL as a pattern of similar URLs; None if it stands for itself alone.

    In the path, number-only segments, generated-looking tokens and path parameters
    become ``#``; a query string, whatever it holds, becomes ``?#``. Calendars
    (``/cal/2026/11``), paginations (``?page=7``), session IDs (``?sid=9f8e…``,
    ``;jsessionid=…``) and query permutations (``?b=2&a=1``) make endless URLs that differ
    only there; counting URLs per pattern is how a crawl notices one. Numbers inside
    names (``page-12.html``) do not count: a site may well have thousands of those.
    """
    start = url.find("/", url.find("//") + 2) if "//" in url else -1
    if start < 0:
        return None
    tail = url[start:]
    path, mark, _ = tail.partition("?")
    pattern = _TOKEN.sub("#", _NUMBER_ONLY.sub("#", _PATH_PARAMS.sub(";#", path)))
    if mark:
        pattern += "?#"
    return None if pattern == tail else url[:start] + pattern
