"""The pure pieces of HTTP, without a network: heads, headers, Retry-After, libcurl's errors."""

from __future__ import annotations

import errno
import os
from datetime import UTC, datetime

import pycurl
import pytest

from linkpatrol import httpparts
from linkpatrol.httpparts import (
    CurlError,
    Failure,
    certificate_expires,
    describe_curl_error,
    merge_headers,
    one_line,
    parse_content_type,
    parse_head,
    parse_rate_remaining,
    parse_rate_reset,
    parse_retry_after,
    sniff_html,
)
from linkpatrol.model import Reason


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("text/html", ("text/html", None)),
        ("Text/Markdown;charset=latin1", ("text/markdown", "latin1")),
        ("text/html;\tcharset=utf-8 ", ("text/html", "utf-8")),
        ("text/html; charset=''", ("text/html", "''")),
        ('text/html; charset=""; charset=utf-8', ("text/html", "")),  # empty, but quoted
        ("text/html; charset=; charset=utf-8", ("text/html", "utf-8")),
        ("text/html; charset=a\x7fb", ("text/html", None)),  # a control character
        ("application/xhtml+xml", ("application/xhtml+xml", None)),
        ("", ("application/octet-stream", None)),
        ("text/(html)", ("application/octet-stream", None)),
    ],
)
def test_a_content_type_gives_its_media_type_and_first_good_charset(
    header: str, expected: tuple[str, str | None]
) -> None:
    assert parse_content_type(header) == expected


@pytest.mark.parametrize(
    ("layers", "expected"),
    [
        ([], {}),
        ([{"User-Agent": "a"}], {"User-Agent": "a"}),
        ([{"User-Agent": "a"}, {"user-agent": "b"}], {"user-agent": "b"}),
        ([{"A": "1", "B": "2"}, {"b": "3"}, {"C": ""}], {"A": "1", "b": "3", "C": ""}),
    ],
)
def test_later_header_layers_replace_earlier_ones_whatever_their_case(
    layers: list[dict[str, str]], expected: dict[str, str]
) -> None:
    assert merge_headers(*layers) == expected


NOW = 1_700_000_000.0  # Tue, 14 Nov 2023 22:13:20 GMT


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, None),
        ("", None),
        ("120", 120.0),
        (" 7 ", 7.0),
        ("-5", None),
        ("1.5", None),
        ("soon", None),
        ("Tue, 14 Nov 2023 22:13:50 GMT", 30.0),
        ("Tue, 14 Nov 2023 22:00:00 GMT", 0.0),  # already past: no wait
    ],
)
def test_retry_after_in_seconds_or_as_a_date(value: str | None, seconds: float | None) -> None:
    assert parse_retry_after(value, now=NOW) == seconds


@pytest.mark.parametrize(
    ("remaining", "reset", "left", "seconds"),
    [
        (None, None, None, None),
        ("", "", None, None),
        ("59", "1700000030", 59, 30.0),  # GitHub's: a moment in Unix seconds
        (" 0 ", "1699999990", 0, 0.0),  # already past: no wait
        ("0", "45", 0, 45.0),  # others': seconds from now
        ("0", "2.5", 0, 2.5),
        ("-1", "-3", None, None),
        ("many", "soon", None, None),
        ("1", "inf", 1, None),
        ("1", "nan", 1, None),
    ],
)
def test_rate_limit_headers(
    remaining: str | None, reset: str | None, left: int | None, seconds: float | None
) -> None:
    assert parse_rate_remaining(remaining) == left
    assert parse_rate_reset(reset, now=NOW) == seconds


@pytest.mark.parametrize(
    ("lines", "status", "headers"),
    [
        ([], None, {}),
        ([b"SSH-2.0-OpenSSH\r\n"], None, {}),
        (
            [b"HTTP/1.1 200 OK\r\n", b"Content-Type: text/html\r\n", b"X-Other: 1\r\n", b"\r\n"],
            200,
            {"content-type": "text/html"},
        ),
        # after a 1xx only the last head counts
        (
            [b"HTTP/1.1 100 Continue\r\n", b"ETag: a\r\n", b"\r\n", b"HTTP/1.1 404 No\r\n"],
            404,
            {},
        ),
        # the first of a name counts; a blank before the colon is part of no name
        (
            [b"HTTP/1.1 301 Moved\r\n", b"Location : /a\r\n", b"location: /b\r\n"],
            301,
            {"location": "/a"},
        ),
        # a value ends at a CR; bytes that are no UTF-8 survive
        (
            [b"HTTP/1.0 200 OK\n", b'ETag: "x"\rjunk\n', b"Last-Modified: \xff\n"],
            200,
            {"etag": '"x"', "last-modified": "\udcff"},
        ),
        ([b"HTTP/1.1 abc\r\n"], None, {}),
    ],
)
def test_a_head_gives_the_status_and_the_first_of_each_header_read(
    lines: list[bytes], status: int | None, headers: dict[str, str]
) -> None:
    assert parse_head(lines) == (status, headers)


@pytest.mark.parametrize(
    ("prefix", "html"),
    [
        (b"<!DOCTYPE html><title>x</title>", True),
        (b"\n  <HTML lang=en>", True),
        (b"<body>", True),
        (b"<?xml version='1.0'?><html>", True),
        (b"%PDF-1.7", False),
        (b"", False),
    ],
)
def test_a_body_without_a_type_is_html_when_it_starts_as_html(prefix: bytes, html: bool) -> None:
    assert sniff_html(prefix) is html


def test_a_quoted_error_is_one_short_line_without_pointer_lines() -> None:
    assert one_line("bad byte at 3:\n  GET /\n  ^\n") == "bad byte at 3: GET /"
    assert one_line("Weird server reply.") == "Weird server reply"
    long = one_line("x" * 500)
    assert len(long) == httpparts.MAX_ERROR_TEXT and long.endswith("…")


def test_the_codes_are_libcurls_own() -> None:
    for name in dir(httpparts):
        if name.startswith("E_") and hasattr(pycurl, name):
            assert getattr(httpparts, name) == getattr(pycurl, name), name


HOST = "example.org"


def _error(code: int, message: str = "", **facts: object) -> CurlError:
    return CurlError(code, message, facts.pop("host", HOST), 10.0, **facts)  # type: ignore[arg-type]


CURL_ERRORS: list[tuple[CurlError, tuple[str, bool, bool]]] = [
    (_error(pycurl.E_OPERATION_TIMEDOUT), ("timeout after 10s", True, True)),
    (
        _error(pycurl.E_COULDNT_CONNECT, refused="a resolves to 10.0.0.1, not public"),
        (
            "private address refused (--no-private): a resolves to 10.0.0.1, not public",
            False,
            False,
        ),
    ),
    (
        _error(pycurl.E_COULDNT_CONNECT, os_errno=errno.ECONNREFUSED),
        ("connection refused", False, False),
    ),
    (
        _error(pycurl.E_COULDNT_CONNECT, os_errno=errno.EHOSTUNREACH),
        ("host unreachable", False, False),
    ),
    (
        _error(pycurl.E_COULDNT_CONNECT, os_errno=errno.EACCES),
        (f"cannot connect: {os.strerror(errno.EACCES)}", True, False),
    ),
    (
        _error(pycurl.E_COULDNT_CONNECT, "Failed to connect", proxy="http://proxy.test:3128"),
        ("cannot connect to the proxy proxy.test:3128: Failed to connect", False, False),
    ),
    (
        _error(pycurl.E_RECV_ERROR, proxy="http://proxy.test:3128", proxy_status=407),
        ("the proxy wants a user name and password: HTTP 407", False, False),
    ),
    (
        _error(
            pycurl.E_RECV_ERROR,
            proxy="http://proxy.test:3128",
            proxy_status=407,
            proxy_login=True,
        ),
        ("the proxy refused the user name and password: HTTP 407", False, False),
    ),
    (
        _error(pycurl.E_RECV_ERROR, proxy="http://proxy.test:3128", proxy_status=503),
        ("the proxy refused: HTTP 503", True, False),
    ),
    (
        _error(pycurl.E_COULDNT_RESOLVE_PROXY, proxy="http://proxy.test:3128"),
        ("DNS failure: cannot resolve proxy.test", False, False),
    ),
    (
        _error(pycurl.E_COULDNT_RESOLVE_HOST, "Could not resolve host"),
        ("DNS failure: cannot resolve example.org", False, False),
    ),
    (
        _error(
            pycurl.E_PEER_FAILED_VERIFICATION,
            "SSL certificate OpenSSL verify result: certificate has expired (10)",
        ),
        ("TLS error: certificate verify failed: certificate has expired", False, False),
    ),
    (
        _error(
            pycurl.E_PEER_FAILED_VERIFICATION,
            "SSL: no alternative certificate subject name matches target host name",
            host="127.0.0.1",
        ),
        (
            "TLS error: certificate verify failed: IP address mismatch, "
            "certificate is not valid for '127.0.0.1'",
            False,
            False,
        ),
    ),
    (
        _error(pycurl.E_SSL_CONNECT_ERROR, "OpenSSL: wrong version number."),
        ("TLS error: OpenSSL: wrong version number", False, False),
    ),
    (
        _error(pycurl.E_GOT_NOTHING, "Empty reply from server"),
        ("server closed the connection without answering", True, True),
    ),
    (
        _error(pycurl.E_PARTIAL_FILE, content_length=100, received=40),
        (
            "incomplete response body: Not enough data to satisfy content length header "
            "(received 40 of 100 bytes)",
            True,
            True,
        ),
    ),
    (
        _error(pycurl.E_PARTIAL_FILE),
        (
            "incomplete response body: Not enough data to satisfy transfer length header",
            True,
            True,
        ),
    ),
    (
        _error(pycurl.E_BAD_CONTENT_ENCODING, "Error while processing", encoding="GZip"),
        ("undecodable response body: Can not decode content-encoding: gzip", False, True),
    ),
    (
        _error(pycurl.E_RECV_ERROR, "Recv failure", os_errno=errno.ECONNRESET),
        ("connection reset by peer", True, True),
    ),
    (
        _error(pycurl.E_SEND_ERROR, "Send failure", os_errno=errno.EPIPE),
        (f"network error: {os.strerror(errno.EPIPE)}", True, True),
    ),
    (
        _error(100, "Header too large"),
        (
            f"invalid HTTP response: a header line longer than {httpparts.MAX_HEADER_LINE} bytes",
            False,
            True,
        ),
    ),
    (
        _error(1, "Received HTTP/0.9 when not allowed"),
        ("invalid HTTP response: Bad status line: not an HTTP/1.x status line", False, True),
    ),
    (
        _error(8, "Weird server reply", status=200),
        ("invalid HTTP response: Weird server reply", False, True),
    ),
    (
        _error(pycurl.E_URL_MALFORMAT, "URL rejected: Bad hostname"),
        ("invalid URL: URL rejected: Bad hostname", False, False),
    ),
    (_error(99, status=200), ("HTTP error: libcurl error 99", False, True)),
]
# the kind of each failure above, in the same order
R = Reason
CURL_REASONS = [
    R.TIMEOUT, R.REFUSED, R.CONNECTION, R.CONNECTION, R.CONNECTION, R.CONNECTION,
    R.CONNECTION, R.CONNECTION, R.CONNECTION, R.DNS, R.DNS, R.TLS, R.TLS, R.TLS, R.CONNECTION,
    R.CONNECTION, R.CONNECTION, R.PROTOCOL, R.CONNECTION, R.CONNECTION, R.PROTOCOL,
    R.PROTOCOL, R.PROTOCOL, R.INVALID_URL, R.PROTOCOL,
]  # fmt: skip


@pytest.mark.parametrize(
    ("error", "failure", "reason"),
    [(*case, reason) for case, reason in zip(CURL_ERRORS, CURL_REASONS, strict=True)],
)
def test_libcurl_errors_in_the_words_a_user_reads(
    error: CurlError, failure: tuple[str, bool, bool], reason: Reason
) -> None:
    assert describe_curl_error(error) == Failure(*failure, reason)


@pytest.mark.parametrize(
    ("said", "expires"),
    [
        ("Dec  3 12:00:00 2026 GMT", datetime(2026, 12, 3, 12, tzinfo=UTC)),  # OpenSSL
        ("Feb 28 23:59:59 2030 GMT", datetime(2030, 2, 28, 23, 59, 59, tzinfo=UTC)),
        ("2026-12-03 12:00:00 GMT", datetime(2026, 12, 3, 12, tzinfo=UTC)),  # GnuTLS
        ("2026-12-03 12:00:00", datetime(2026, 12, 3, 12, tzinfo=UTC)),
        ("Foo  3 12:00:00 2026 GMT", None),
        ("Feb 30 12:00:00 2026 GMT", None),
        ("next Tuesday", None),
        ("", None),
    ],
)
def test_the_end_of_the_server_certificate_as_libcurl_says_it(
    said: str, expires: datetime | None
) -> None:
    leaf = (("Subject", "CN = example.org"), ("Expire date", said))  # as pycurl gives it
    issuer = (("Subject", "CN = a CA"), ("Expire date", "Jan  1 00:00:00 2040 GMT"))
    want = expires.timestamp() if expires is not None else None
    assert certificate_expires([leaf, issuer]) == want


def test_no_certificate_says_no_end() -> None:
    assert certificate_expires([]) is None
    assert certificate_expires([[("Subject", "CN = example.org")]]) is None
