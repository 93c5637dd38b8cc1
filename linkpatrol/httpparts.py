"""The pure pieces of HTTP: what a response's head says, and libcurl's failures in words.

No sockets and no libcurl here, only functions over the strings and bytes a transport
hands over: the media type and charset of a Content-Type, request headers merged from
layers, a Retry-After in seconds, the last head of a response read line by line, and
the table that turns a libcurl error (its number, its message and what else was seen)
into the one-line reason a user reads. Each is tested without a network.
"""

from __future__ import annotations

import errno
import functools
import ipaddress
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple
from urllib.parse import urlsplit

from linkpatrol.model import HTTP_TOKEN_RE, Reason

# statuses that say "not now": the request is tried again later
TRANSIENT_STATUSES = frozenset({429, 502, 503, 504})
# what a response's head may hold: bounded, so no server can fill memory with headers
MAX_HEADERS = 128
MAX_HEADER_LINE = 8190
# an X-RateLimit-Reset at least this large is a moment in Unix seconds (2001 on), not a span
UNIX_SECONDS = 1e9
# an error quoting what a server sent is cut to this many characters
MAX_ERROR_TEXT = 160

# the headers a response is read for (the rest are only counted), by their names
# lower-cased; the first of each name counts
READ_HEADERS = frozenset(
    {
        b"content-type",
        b"content-length",
        b"content-encoding",
        b"location",
        b"etag",
        b"last-modified",
        b"retry-after",
        b"x-ratelimit-remaining",  # requests left in the host's window (GitHub's and others')
        b"x-ratelimit-reset",  # when the window starts again
        b"set-cookie",  # whether one came: libcurl's cookie engine keeps it
    }
)

_OCTET_STREAM = "application/octet-stream"
_HTTP_SPACE = " \t\r\n"
_QUOTED_TEXT_RE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")


# ---- what a response's head says ----------------------------------------------------------


def _quoted(text: str, pos: int) -> tuple[str, int]:
    """The value of the quoted string that starts at ``pos`` (a '"'), and where it ends;
    a backslash takes the next character as it is, an unclosed string runs to the end."""
    value: list[str] = []
    pos += 1
    size = len(text)
    while pos < size:
        char = text[pos]
        pos += 1
        if char == '"':
            break
        if char == "\\" and pos < size:
            char = text[pos]
            pos += 1
        value.append(char)
    return "".join(value), pos


def _charset(params: str) -> str | None:
    """The first well-formed charset among a MIME type's parameters (after its first ';')."""
    pos, size = 0, len(params)
    while pos < size:
        while pos < size and params[pos] in _HTTP_SPACE:
            pos += 1
        end = pos
        while end < size and params[end] not in ";=":
            end += 1
        name, pos = params[pos:end].lower(), end
        if pos >= size or params[pos] == ";":
            pos += 1
            continue
        pos += 1  # the '='
        quoted = pos < size and params[pos] == '"'
        value = ""
        if quoted:
            value, pos = _quoted(params, pos)  # what follows it, up to a ';', is dropped
        end = params.find(";", pos)
        end = size if end < 0 else end
        if not quoted:
            value = params[pos:end].rstrip(_HTTP_SPACE)
        pos = end + 1
        # an empty value counts only quoted
        if name == "charset" and (quoted or value) and _QUOTED_TEXT_RE.fullmatch(value):
            return value
    return None


@functools.lru_cache(maxsize=64)
def parse_content_type(raw: str) -> tuple[str, str | None]:
    """(media type, charset) of a Content-Type header, parsed as browsers parse a MIME
    type (WHATWG MIME Sniffing): one that does not parse is application/octet-stream, and
    of two charset parameters the first counts."""
    text = raw.strip(_HTTP_SPACE)
    kind, slash, rest = text.partition("/")
    subtype, _, params = rest.partition(";")
    subtype = subtype.rstrip(_HTTP_SPACE)
    if not slash or not HTTP_TOKEN_RE.fullmatch(kind) or not HTTP_TOKEN_RE.fullmatch(subtype):
        return _OCTET_STREAM, None
    return f"{kind}/{subtype}".lower(), _charset(params)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    # imported here, not with the module: a check seldom needs it, and the email package
    # takes 6 ms to import, which every run would pay before its first request
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def parse_rate_remaining(value: str | None) -> int | None:
    """Requests the host still allows in its window, from X-RateLimit-Remaining."""
    if not value:
        return None
    value = value.strip()
    return int(value) if value.isdigit() else None


def parse_rate_reset(value: str | None, now: float | None = None) -> float | None:
    """Seconds until the host's window starts again, from X-RateLimit-Reset: a moment in
    Unix seconds, as GitHub sends it, or (a smaller number) seconds from now, as others do."""
    if not value:
        return None
    value = value.strip()
    try:
        number = float(value)
    except ValueError:
        return None
    if not 0 <= number < 1e12:  # nan and inf fail this too
        return None
    if number < UNIX_SECONDS:
        return number
    return max(0.0, number - (time.time() if now is None else now))


# a certificate's end as libcurl's certificate info shows it: OpenSSL's "Dec  3 12:00:00
# 2026 GMT", or "2026-12-03 12:00:00" (GnuTLS, among others)
_OPENSSL_DATE = re.compile(r"([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})(?: GMT)?")
_ISO_DATE = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?: ?(?:GMT|UTC|Z))?")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def certificate_expires(chain: Sequence[Sequence[tuple[str, str]]]) -> float | None:
    """When the server's certificate (the first of the ``chain`` libcurl's certificate info
    gives: pycurl makes each certificate a tuple of its fields, the chain a list) ends, as
    POSIX time; None when it does not say (in words this reads)."""
    if not chain:
        return None
    when = next((value.strip() for key, value in chain[0] if key == "Expire date"), "")
    if (found := _OPENSSL_DATE.fullmatch(when)) is not None:
        month_name, day, hour, minute, second, year = found.groups()
        if month_name not in _MONTHS:
            return None
        month = _MONTHS.index(month_name) + 1
    elif (found := _ISO_DATE.fullmatch(when)) is not None:
        year, month_text, day, hour, minute, second = found.groups()
        month = int(month_text)
    else:
        return None
    try:
        moment = datetime(
            int(year), month, int(day), int(hour), int(minute), int(second), tzinfo=UTC
        )
    except ValueError:
        return None
    return moment.timestamp()


def last_head(lines: list[bytes]) -> int:
    """Where the last response's head begins among a head's lines (0 also when none
    does): after a 1xx, or a proxy's answer to CONNECT, only the last one counts."""
    for at in range(len(lines) - 1, -1, -1):
        if lines[at].startswith(b"HTTP/"):
            return at
    return 0


def parse_head(lines: list[bytes]) -> tuple[int | None, dict[str, str]]:
    """The status and the headers read (READ_HEADERS, the first of each name) of the last
    response among a head's lines, each line as received, up to its LF; no status for a
    head without an HTTP/1.x status line."""
    headers: dict[str, str] = {}
    start = last_head(lines)
    if not lines or not lines[start].startswith(b"HTTP/"):
        return None, headers
    parts = lines[start].split(None, 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    for line in lines[start + 1 :]:
        name, colon, rest = line.partition(b":")
        if not colon:
            continue
        key = name.rstrip(b" \t").lower()  # the name, then blanks, then its colon
        if key in READ_HEADERS:
            text = key.decode()
            if text not in headers:  # the value ends where the line does, or at a CR
                value = rest.split(b"\r", 1)[0].split(b"\n", 1)[0].strip(b" \t")
                headers[text] = value.decode("utf-8", "surrogateescape")
    return status, headers


def sniff_html(prefix: bytes) -> bool:
    """Whether a body without a Content-Type starts as an HTML document does."""
    head = prefix[:512].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html", b"<head", b"<body")) or b"<html" in head


# ---- what a request sends -------------------------------------------------------------------


def merge_headers(*layers: Mapping[str, str]) -> dict[str, str]:
    """Request headers from layers, later ones replacing earlier ones of the same name."""
    merged: dict[str, tuple[str, str]] = {}
    for layer in layers:
        for name, value in layer.items():
            merged[name.lower()] = (name, value)
    return dict(merged.values())


# ---- failures in words ----------------------------------------------------------------------


class Failure(NamedTuple):
    """Why a request has no answer: in words, and as what the crawl may make of it."""

    error: str
    transient: bool  # worth trying again
    reachable: bool  # the host answered something
    reason: Reason


LINE_TOO_LONG = Failure(
    f"invalid HTTP response: a header line longer than {MAX_HEADER_LINE} bytes",
    False,
    True,
    Reason.PROTOCOL,
)
TOO_MANY_HEADERS = Failure(
    f"invalid HTTP response: more than {MAX_HEADERS} headers", False, True, Reason.PROTOCOL
)
NOT_HTTP = Failure(
    "invalid HTTP response: Bad status line: not an HTTP/1.x status line",
    False,
    True,
    Reason.PROTOCOL,
)
CLOSED = Failure("HTTP error: the fetcher was closed", False, True, Reason.CONNECTION)


def one_line(text: str) -> str:
    """An error quoting a server's bytes, maybe over several lines (a parser points at the
    bad byte), as one short line: no pointer lines, at most MAX_ERROR_TEXT characters."""
    words = " ".join(
        line.strip() for line in text.splitlines() if line.strip() and set(line.strip()) != {"^"}
    )
    words = words.rstrip(".")
    if len(words) > MAX_ERROR_TEXT:
        words = words[: MAX_ERROR_TEXT - 1] + "…"
    return words


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


# libcurl's error codes (CURLcode), by their numbers: they are part of libcurl's ABI, and
# pycurl names some under older names (FTP_WEIRD_...), or not at all
E_UNSUPPORTED_PROTOCOL = 1
E_URL_MALFORMAT = 3
E_COULDNT_RESOLVE_PROXY = 5
E_COULDNT_RESOLVE_HOST = 6
E_COULDNT_CONNECT = 7
E_WEIRD_SERVER_REPLY = 8
E_PARTIAL_FILE = 18
E_WRITE_ERROR = 23
E_OPERATION_TIMEDOUT = 28
E_SSL_CONNECT_ERROR = 35
E_GOT_NOTHING = 52
E_SSL_ENGINE_NOTFOUND = 53
E_SSL_ENGINE_SETFAILED = 54
E_SEND_ERROR = 55
E_RECV_ERROR = 56
E_SSL_CERTPROBLEM = 58
E_SSL_CIPHER = 59
E_PEER_FAILED_VERIFICATION = 60
E_BAD_CONTENT_ENCODING = 61
E_USE_SSL_FAILED = 64
E_SSL_ENGINE_INITFAILED = 66
E_SSL_CACERT_BADFILE = 77
E_SSL_SHUTDOWN_FAILED = 80
E_SSL_CRL_BADFILE = 82
E_SSL_ISSUER_ERROR = 83
E_SSL_PINNEDPUBKEYNOTMATCH = 90
E_SSL_INVALIDCERTSTATUS = 91
E_TOO_LARGE = 100
TLS_ERRORS = frozenset(
    {
        E_SSL_CONNECT_ERROR,
        E_SSL_ENGINE_NOTFOUND,
        E_SSL_ENGINE_SETFAILED,
        E_SSL_CERTPROBLEM,
        E_SSL_CIPHER,
        E_USE_SSL_FAILED,
        E_SSL_ENGINE_INITFAILED,
        E_SSL_CACERT_BADFILE,
        E_SSL_SHUTDOWN_FAILED,
        E_SSL_CRL_BADFILE,
        E_SSL_ISSUER_ERROR,
        E_SSL_PINNEDPUBKEYNOTMATCH,
        E_SSL_INVALIDCERTSTATUS,
    }
)

# "SSL certificate problem: <reason>" (older libcurl), "SSL certificate OpenSSL verify
# result: <reason> (<code>)" (newer)
CERTIFICATE_PROBLEM = re.compile(r"(?:problem|verify result): (.*?)(?: \(\d+\))?$")


def certificate_reason(message: str, host: str) -> str:
    """OpenSSL's reason, as libcurl quotes it; its own name check in Python's words."""
    quoted = CERTIFICATE_PROBLEM.search(message)
    if quoted:
        return quoted.group(1)
    if "subject name" in message:
        kind = "IP address" if is_ip(host) else "Hostname"
        return f"{kind} mismatch, certificate is not valid for '{host}'"
    return message


@dataclass(frozen=True, slots=True)
class CurlError:
    """A failed transfer as libcurl left it: its code and message, and what else was seen."""

    code: int
    message: str
    host: str
    timeout: float
    os_errno: int = 0  # the system's error of the last connect, send or receive
    proxy: str | None = None
    proxy_status: int = 0  # the proxy's answer to CONNECT, 0 if none
    proxy_login: bool = False  # a user name and password were given to the proxy
    refused: str | None = None  # the addresses --no-private kept us from, as the guard says
    status: int | None = None  # the status line read, if one was
    content_length: int | None = None
    received: int = 0  # bytes of body received
    encoding: str = ""  # the Content-Encoding, as sent


PROXY_AUTHENTICATION_REQUIRED = 407


def proxy_refused(status: int, login: bool) -> Failure:
    """A proxy's refusal to carry a request (its answer to CONNECT, or to the request
    itself), ``login``: with a user name and password."""
    if status == PROXY_AUTHENTICATION_REQUIRED:
        if login:
            words = f"the proxy refused the user name and password: HTTP {status}"
        else:
            words = f"the proxy wants a user name and password: HTTP {status}"
        return Failure(words, False, False, Reason.CONNECTION)
    transient = status in TRANSIENT_STATUSES
    return Failure(f"the proxy refused: HTTP {status}", transient, False, Reason.CONNECTION)


def describe_curl_error(error: CurlError) -> Failure:
    """Why a transfer failed: the words a user reads, the same whichever libcurl made the
    request, with what may be made of it (tried again? did the host answer? what kind?)."""
    code, message, host = error.code, error.message, error.host
    if code == E_OPERATION_TIMEDOUT:
        return Failure(f"timeout after {error.timeout:g}s", True, True, Reason.TIMEOUT)
    if code == E_COULDNT_CONNECT and error.refused:
        refused = f"private address refused (--no-private): {error.refused}"
        return Failure(refused, False, False, Reason.REFUSED)
    proxy = error.proxy
    if proxy:
        status = error.proxy_status
        if status and not 200 <= status < 300:
            return proxy_refused(status, error.proxy_login)
        if code == E_COULDNT_RESOLVE_PROXY:
            unknown = f"DNS failure: cannot resolve {urlsplit(proxy).hostname}"
            return Failure(unknown, False, False, Reason.DNS)
    if code == E_COULDNT_RESOLVE_HOST:
        return Failure(f"DNS failure: cannot resolve {host}", False, False, Reason.DNS)
    if code == E_PEER_FAILED_VERIFICATION:
        reason = certificate_reason(message, host)
        words = one_line(f"TLS error: certificate verify failed: {reason}")
        return Failure(words, False, False, Reason.TLS)
    if code in TLS_ERRORS:
        return Failure(one_line(f"TLS error: {message}"), False, False, Reason.TLS)
    os_error = error.os_errno
    reason = os.strerror(os_error) if os_error else message
    if code == E_COULDNT_CONNECT:
        if proxy:
            where = urlsplit(proxy)
            words = f"cannot connect to the proxy {where.hostname}:{where.port}: {reason}"
            return Failure(words, False, False, Reason.CONNECTION)
        if os_error == errno.ECONNREFUSED:
            return Failure("connection refused", False, False, Reason.CONNECTION)
        if os_error in (errno.ENETUNREACH, errno.EHOSTUNREACH):
            return Failure("host unreachable", False, False, Reason.CONNECTION)
        return Failure(f"cannot connect: {reason}", True, False, Reason.CONNECTION)
    if code == E_GOT_NOTHING:
        words = "server closed the connection without answering"
        return Failure(words, True, True, Reason.CONNECTION)
    if code == E_PARTIAL_FILE:
        length = error.content_length
        if length is None:
            missing = "Not enough data to satisfy transfer length header"
        else:
            missing = (
                "Not enough data to satisfy content length header "
                f"(received {error.received} of {length} bytes)"
            )
        words = one_line(f"incomplete response body: {missing}")
        return Failure(words, True, True, Reason.CONNECTION)
    if code == E_BAD_CONTENT_ENCODING:
        encoding = error.encoding.lower()
        words = f"undecodable response body: Can not decode content-encoding: {encoding}"
        return Failure(words, False, True, Reason.PROTOCOL)
    if code in (E_RECV_ERROR, E_SEND_ERROR):
        if os_error == errno.ECONNRESET:
            return Failure("connection reset by peer", True, True, Reason.CONNECTION)
        return Failure(one_line(f"network error: {reason}"), True, True, Reason.CONNECTION)
    if code == E_TOO_LARGE and "header" in message.lower():
        return LINE_TOO_LONG
    if error.status is None and (
        "status line" in message or "HTTP/0.9" in message
    ):  # the first line was no HTTP/1.x status line
        return NOT_HTTP
    if code in (E_WEIRD_SERVER_REPLY, E_UNSUPPORTED_PROTOCOL):
        words = one_line(f"invalid HTTP response: {message}")
        return Failure(words, False, True, Reason.PROTOCOL)
    if code == E_URL_MALFORMAT:
        return Failure(one_line(f"invalid URL: {message}"), False, False, Reason.INVALID_URL)
    words = one_line(f"HTTP error: {message or f'libcurl error {code}'}")
    return Failure(words, False, True, Reason.PROTOCOL)


__all__ = [
    "TRANSIENT_STATUSES",
    "CurlError",
    "Failure",
    "describe_curl_error",
    "merge_headers",
    "one_line",
    "parse_content_type",
    "parse_head",
    "parse_rate_remaining",
    "parse_rate_reset",
    "parse_retry_after",
    "proxy_refused",
    "sniff_html",
]
