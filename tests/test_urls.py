from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linkpatrol.config import Rule, SiteSettings
from linkpatrol.extract import extract_html
from linkpatrol.model import Action, Reason
from linkpatrol.parsepool import LinkDecider
from linkpatrol.policy import Policy
from linkpatrol.urls import (
    BadURL,
    canonical,
    has_userinfo,
    host,
    is_http,
    origin,
    path_depth,
    relative_to,
    scheme,
    similar_pattern,
    site_prefix,
)
from tests.sitesrv import html

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_spec_example() -> None:
    raw = "HTTP://Example.COM:80/a/./b/../c/%7euser/%41?%3d#frag"
    assert canonical(raw) == "http://example.com/a/c/~user/A?%3D"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  http://example.com/a \n", "http://example.com/a"),
        ("ht\ttp://exa\nmple.com/p\rath", "http://example.com/path"),
        ("HtTpS://EXAMPLE.com/Path", "https://example.com/Path"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com?x=1", "http://example.com/?x=1"),
        ("http://example.com.../a", "http://example.com/a"),
        ("http://example.com:8080/", "http://example.com:8080/"),
        ("http://example.com:0080/", "http://example.com/"),
        ("https://example.com:443/", "https://example.com/"),
        ("https://example.com:80/", "https://example.com:80/"),
        ("http://example.com:443/", "http://example.com:443/"),
        ("http://example.com:/", "http://example.com/"),
        ("http://example.com/a#frag", "http://example.com/a"),
        ("http://example.com/a?#frag", "http://example.com/a"),
        ("http://example.com/a?", "http://example.com/a"),
        ("http://example.com/a?b=2&a=1", "http://example.com/a?b=2&a=1"),
    ],
)
def test_scheme_host_port_fragment_query(raw: str, expected: str) -> None:
    assert canonical(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://h/a/b/c/./../../g", "http://h/a/g"),
        ("http://h/a/b/..", "http://h/a/"),
        ("http://h/a/b/.", "http://h/a/b/"),
        ("http://h/../../x", "http://h/x"),
        ("http://h/a//../b", "http://h/a/b"),
        ("http://h/a/%2e%2E/b", "http://h/b"),
        ("http://h/.well-known/x..y/..z", "http://h/.well-known/x..y/..z"),
    ],
)
def test_dot_segments(raw: str, expected: str) -> None:
    assert canonical(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://h/%7euser/%41%2d%5F%2e", "http://h/~user/A-_."),
        ("http://h/%c3%a9?q=%3d%2f", "http://h/%C3%A9?q=%3D%2F"),
        ("http://h/a%2Fb", "http://h/a%2Fb"),
        ("http://h/a b?c d", "http://h/a%20b?c%20d"),
        ("http://h/é?q=é", "http://h/%C3%A9?q=%C3%A9"),
        ('http://h/"<>^`{|}', "http://h/%22%3C%3E%5E%60%7B%7C%7D"),
        ('http://h/?q="<>^`{|}\\', "http://h/?q=%22%3C%3E%5E%60%7B%7C%7D%5C"),
        ("http://h/a\x01b\x7f", "http://h/a%01b%7F"),
        ("http://h/100%/%zz%4", "http://h/100%/%zz%4"),  # a lone '%' is sent as it is
        ("http://h/%%41?q=%%7e", "http://h/%%41?q=%%7E"),  # and decodes no escape after it
        ("http://h/%%41?q=%7e", "http://h/%%41?q=~"),
        ("http://h/% x", "http://h/%%20x"),
        (
            "http://h/!$&'()*+,;=:@[]?/?!$&'()*+,;=:@[]",
            "http://h/!$&'()*+,;=:@[]?/?!$&'()*+,;=:@[]",
        ),
        ("http://h/%25%2525", "http://h/%25%2525"),
        ("http://h/\U0001f600", "http://h/%F0%9F%98%80"),
    ],
)
def test_percent_encoding(raw: str, expected: str) -> None:
    assert canonical(raw) == expected


@pytest.mark.parametrize(
    ("raw", "base", "encoding", "expected"),
    [
        ("?q=café", "http://h/p", "cp1252", "http://h/p?q=caf%E9"),
        ("é?q=é#x", "http://h/dir/p", "cp1252", "http://h/dir/%C3%A9?q=%E9"),  # not the path
        ("http://h/?q=日本", None, "cp932", "http://h/?q=%93%FA%96%7B"),
        ("//h/?q=é", "https://b/", "cp932", "https://h/?q=%26%23233%3B"),  # none in cp932
        ("?q=日本é日", "http://h/", "cp932", "http://h/?q=%93%FA%96%7B%26%23233%3B%93%FA"),
        # shifted into JIS X 0208 once for the run, back to ASCII once after it
        ("?q=日本&r=1", "http://h/", "iso2022_jp", "http://h/?q=%1B%24BF%7CK%5C%1B%28B&r=1"),
        ("?q=%E9é", "http://h/", "cp1252", "http://h/?q=%E9%E9"),
        ("?q=é", "http://h/", None, "http://h/?q=%C3%A9"),
        ("mailto:é?subject=é", None, "cp1252", "mailto:%C3%A9?subject=%C3%A9"),  # UTF-8 always
    ],
)
def test_a_query_takes_the_encoding_of_its_page(
    raw: str, base: str | None, encoding: str | None, expected: str
) -> None:
    """As browsers send an http(s) query from a page in a legacy encoding."""
    assert canonical(raw, base, encoding) == expected


def test_lone_surrogate_is_percent_encoded() -> None:
    assert canonical("http://h/\ud800") == "http://h/%ED%A0%80"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://Bücher.example/", "http://xn--bcher-kva.example/"),
        ("http://BÜCHER.EXAMPLE./x", "http://xn--bcher-kva.example/x"),
        ("http://xn--BCHER-kva.example/", "http://xn--bcher-kva.example/"),
        ("http://b%C3%BCcher.example/", "http://xn--bcher-kva.example/"),
        ("http://%41.example/", "http://a.example/"),
        ("http://例え.テスト/", "http://xn--r8jz45g.xn--zckzah/"),
    ],
)
def test_idn_hosts(raw: str, expected: str) -> None:
    assert canonical(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://straße.de/", "http://xn--strae-oqa.de/"),
        ("http://STRAßE.DE./x", "http://xn--strae-oqa.de/x"),
        ("http://stra%C3%9Fe.de/", "http://xn--strae-oqa.de/"),
        ("http://straße.münchen.de/", "http://xn--strae-oqa.xn--mnchen-3ya.de/"),
        ("http://faß.de。/", "http://xn--fa-hia.de/"),
        ("http://ςοφία.gr/", "http://xn--kxae4blv.gr/"),
        ("http://ΣΟΦΊΑς.gr/", "http://xn--kxae4bobt.gr/"),
        # the capital sharp s is mapped to "ss", as browsers map it
        ("http://STRAẞE.de/", "http://strasse.de/"),
        ("http://ΣΟΦΊΑ.gr/", "http://xn--kxae4bpq.gr/"),
    ],
)
def test_idn_sharp_s_and_final_sigma_name_their_own_domain(raw: str, expected: str) -> None:
    """'straße.de' and 'strasse.de' are two domains; browsers go to xn--strae-oqa.de."""
    assert canonical(raw) == expected
    assert canonical(expected) == expected


def test_idn_with_sharp_s_and_an_empty_label_is_invalid() -> None:
    with pytest.raises(BadURL, match="invalid host"):
        canonical("http://a..straße.de/")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://[::1]/", "http://[::1]/"),
        ("http://[2001:DB8::A]:8080/x", "http://[2001:db8::a]:8080/x"),
        ("http://[2001:db8:0:0:0:0:0:1]:80/", "http://[2001:db8::1]/"),
        # one form on every Python: 3.13's ipaddress writes '::ffff:1.2.3.4'
        ("http://[::ffff:1.2.3.4]/", "http://[::ffff:102:304]/"),
        ("http://[::FFFF:102:304]/", "http://[::ffff:102:304]/"),
        ("http://[0:0:0:0:0:ffff:0.0.0.0]/", "http://[::ffff:0:0]/"),
        ("http://[::ffff:7f00:1]:8080/", "http://[::ffff:7f00:1]:8080/"),
    ],
)
def test_ipv6_hosts(raw: str, expected: str) -> None:
    assert canonical(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://2130706433/", "http://127.0.0.1/"),
        ("http://0x7f.1/x", "http://127.0.0.1/x"),
        ("http://0177.0.0.1:8080/", "http://127.0.0.1:8080/"),
        ("http://0X7F.0x0.0.0x1/", "http://127.0.0.1/"),
        ("http://1.2.3.4./", "http://1.2.3.4/"),
        ("http://4294967295/", "http://255.255.255.255/"),
        ("http://0/", "http://0.0.0.0/"),
        ("http://0x/", "http://0.0.0.0/"),
        ("http://10.0x10.010/", "http://10.16.0.8/"),
        # a last label that is no number: a name, whatever the others
        ("http://cafe/", "http://cafe/"),
        ("http://a.b1/", "http://a.b1/"),
        ("http://abc.0xg/", "http://abc.0xg/"),
        ("http://1.2.3.example/", "http://1.2.3.example/"),
    ],
)
def test_hosts_read_as_ipv4_take_the_dotted_form(raw: str, expected: str) -> None:
    """As browsers read them (WHATWG URL): one address, one form."""
    assert canonical(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "http://example.123/",  # ends in a number: an address, and 'example' is none
        "http://1.2.3.256/",
        "http://256.1.1.1/",
        "http://1.2.3.4.5/",
        "http://4294967296/",
        "http://0x100000000/",
        "http://09/",  # octal
        "http://1..2/",
    ],
)
def test_hosts_that_end_in_a_number_but_are_no_ipv4_address_are_invalid(raw: str) -> None:
    with pytest.raises(BadURL, match="invalid IPv4 address"):
        canonical(raw)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://User:Pass@Example.com/", "http://User:Pass@example.com/"),
        ("http://user@example.com:80/", "http://user@example.com/"),
        ("http://user:@example.com/", "http://user@example.com/"),
        ("http://@example.com/", "http://example.com/"),
        ("http://a b@example.com/", "http://a%20b@example.com/"),
    ],
)
def test_userinfo_is_kept(raw: str, expected: str) -> None:
    assert canonical(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http:\\\\example.com\\a\\b", "http://example.com/a/b"),
        ("http://example.com\\a\\..\\b?c\\d", "http://example.com/b?c%5Cd"),
        ("http:example.com/a", "http://example.com/a"),
        ("http:///example.com/a", "http://example.com/a"),
    ],
)
def test_browser_leniency(raw: str, expected: str) -> None:
    assert canonical(raw) == expected


BASE = "http://a/b/c/d;p?q"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("g", "http://a/b/c/g"),
        ("./g", "http://a/b/c/g"),
        ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"),
        ("?y", "http://a/b/c/d;p?y"),
        ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q"),
        ("g#s", "http://a/b/c/g"),
        (";x", "http://a/b/c/;x"),
        (".", "http://a/b/c/"),
        ("..", "http://a/b/"),
        ("../g", "http://a/b/g"),
        ("../..", "http://a/"),
        ("../../../g", "http://a/g"),
        ("g;x=1/../y", "http://a/b/c/y"),
        ("g\\h", "http://a/b/c/g/h"),
        ("  g  ", "http://a/b/c/g"),
        ("http:g", "http://a/b/c/g"),
        ("https:g", "https://g/"),
        ("//other.example/x", "http://other.example/x"),
        ("\\\\other.example\\x", "http://other.example/x"),
        ("HTTPS://Other.Example", "https://other.example/"),
    ],
)
def test_relative_resolution(raw: str, expected: str) -> None:
    assert canonical(raw, BASE) == expected


def test_scheme_relative_takes_base_scheme() -> None:
    assert (
        canonical("//cdn.example/x.js", "https://site.example/page") == "https://cdn.example/x.js"
    )


def test_non_canonical_base_is_normalized_first() -> None:
    assert canonical("x", "HTTP://A.example:80/dir/./page#f") == "http://a.example/dir/x"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("MAILTO:Someone@Example.COM", "mailto:Someone@Example.COM"),
        # WHATWG URL: beyond ASCII percent-encoded in UTF-8; in the query spaces too
        ("mailto:jörg@bücher.example", "mailto:j%C3%B6rg@b%C3%BCcher.example"),
        ("mailto:j%C3%B6rg@example.org", "mailto:j%C3%B6rg@example.org"),
        (
            'mailto:ann@example.org,jörg@example.org?subject=Grüße aus Köln&cc="Zoë" <z@x.org>',
            "mailto:ann@example.org,j%C3%B6rg@example.org?subject=Gr%C3%BC%C3%9Fe%20aus%20K%C3%B6ln"
            "&cc=%22Zo%C3%AB%22%20%3Cz@x.org%3E",
        ),
        ("mailto:a b@example.org#Grüße `x`", "mailto:a b@example.org#Gr%C3%BC%C3%9Fe%20%60x%60"),
        ("mailto:100%@example.org", "mailto:100%@example.org"),  # a lone % as it is
        ("tel:+1 555 0100", "tel:+1 555 0100"),
        ("JavaScript:void(0)#x", "javascript:void(0)#x"),
        ("data:text/plain,A%20b#frag", "data:text/plain,A%20b#frag"),
        ("FTP://Example.com/a%7e#frag", "ftp://Example.com/a%7e"),
        ("file:///tmp/x#y", "file:///tmp/x"),
        ("wss://h/socket#y", "wss://h/socket"),
        ("urn:isbn:0451450523", "urn:isbn:0451450523"),
    ],
)
def test_other_schemes_only_lowercase_scheme(raw: str, expected: str) -> None:
    assert canonical(raw) == expected
    assert canonical(raw, "http://base.example/") == expected


def test_relative_against_non_http_base_uses_urljoin() -> None:
    assert canonical("c#f", "ftp://x.example/a/b") == "ftp://x.example/a/c"


@pytest.mark.parametrize(
    ("raw", "base", "reason"),
    [
        ("", None, "empty URL"),
        (" \t\n ", "http://a/", "empty URL"),
        ("http://", None, "empty host"),
        ("http:///", None, "empty host"),
        ("https://user@/x", None, "empty host"),
        ("http://.../", None, "empty host"),
        ("http://h:99999/", None, "invalid port"),
        ("http://h:65536/", None, "invalid port"),
        ("http://h:8o/", None, "invalid port"),
        ("http://h:-1/", None, "invalid port"),
        ("http://h:1:2/", None, "invalid port"),
        ("http://h:\u0661/", None, "invalid port"),
        ("http://[::1/", None, "invalid IPv6 address"),
        ("http://[::g]/", None, "invalid IPv6 address"),
        ("http://[]/", None, "invalid IPv6 address"),
        ("http://[fe80::1%25eth0]/", None, "invalid IPv6 address"),
        ("http://[::1]x/", None, "invalid host"),
        ("http://exa mple.com/", None, "invalid host"),
        ("http://exa<mple.com/", None, "invalid host"),
        ("http://exa^mple.com/", None, "invalid host"),
        ("http://exa|mple.com/", None, "invalid host"),
        ("http://exa%25mple.com/", None, "invalid host"),
        ("http://exa%20mple.com/", None, "invalid host"),
        ("http://exa%ffmple.com/", None, "invalid host"),
        ("http://a..b\u00fc/", None, "invalid host"),
        ("http://\ud800.com/", None, "invalid host"),
        ("http://ex\uff0fample.com/", None, "invalid host"),
        ("relative/path", None, "missing scheme"),
        ("//host/path", None, "missing scheme"),
        ("1http://x/", None, "missing scheme"),
        ("h_ttp://x/", None, "missing scheme"),
        ("x", "mailto:a@b.example", "cannot resolve against base"),
        ("x", "not a url", "invalid base: missing scheme"),
    ],
)
def test_bad_urls(raw: str, base: str | None, reason: str) -> None:
    with pytest.raises(BadURL) as info:
        canonical(raw, base)
    assert str(info.value) == reason


def test_bad_url_is_a_value_error() -> None:
    assert issubclass(BadURL, ValueError)


def test_huge_and_nul_inputs() -> None:
    long_path = "a/" * 50_000
    assert canonical("http://h/" + long_path) == "http://h/" + long_path
    assert canonical("http://h/a\x00b") == "http://h/a%00b"
    with pytest.raises(BadURL):
        canonical("http://h\x00x/")
    with pytest.raises(BadURL):
        canonical("http://" + "a" * 100_000 + "\u00e9/")


def test_helpers() -> None:
    url = "https://user:pw@example.com:8443/a/b/c.html?x=1"
    assert scheme(url) == "https"
    assert scheme("MAILTO:x") == "mailto"
    assert scheme("no-scheme") == ""
    assert is_http(url)
    assert is_http("http://h/")
    assert not is_http("mailto:a@b")
    assert not is_http("ftp://h/")
    assert has_userinfo(url)
    assert not has_userinfo("https://example.com/a@b")
    assert not has_userinfo("mailto:a@b")
    assert origin(url) == "https://example.com:8443"
    assert origin("https://a.b/x?y") == "https://a.b"
    assert origin("http://[::1]:8080/") == "http://[::1]:8080"
    assert origin("mailto:a@b") == ""
    assert path_depth("http://h/") == 0
    assert path_depth("http://h/a/b/c.html") == 3
    assert path_depth("http://h/a/b/") == 2
    assert path_depth("http://h/a//b?x=/y/z") == 2
    assert path_depth("mailto:a/b") == 0


def test_relative_to() -> None:
    base = "https://example.com/dir/page.html"
    assert relative_to("https://example.com/a/b.html?x=1", base) == "/a/b.html?x=1"
    assert relative_to("https://example.com/", base) == "/"
    assert relative_to("http://example.com/a", base) == "http://example.com/a"
    assert relative_to("https://example.com:8443/a", base) == "https://example.com:8443/a"
    assert relative_to("https://u@example.com/a", base) == "https://u@example.com/a"
    assert relative_to("mailto:a@example.com", base) == "mailto:a@example.com"


# ---------------------------------------------------------------- properties

url_chars = st.sampled_from(list("aZ09-._~%2fE/?#@:[]!$&'()*+,;= \\\"<>^`{|}\t\né\u0000\ud800ü。"))
url_like = st.builds(
    lambda scheme_part, host, rest: scheme_part + host + rest,
    st.sampled_from(["http://", "HTTPS://", "http:", "//", "", "mailto:", "ftp://", "x:"]),
    st.text(url_chars, max_size=12),
    st.text(url_chars, max_size=30),
)
bases = st.sampled_from(
    [None, "http://a.example/b/c?q", "https://h/", "ftp://f/x/y", "mailto:m@x", "bad"]
)


@FAST
@given(st.one_of(st.text(), url_like), bases)
def test_canonical_raises_only_badurl_and_is_idempotent(raw: str, base: str | None) -> None:
    try:
        result = canonical(raw, base)
    except BadURL:
        return
    assert result
    assert canonical(result) == result
    assert canonical(result, base) == result


unreserved = st.text(
    st.sampled_from(list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")),
    min_size=1,
    max_size=10,
).filter(lambda segment: segment not in (".", ".."))
labels = st.text(
    st.sampled_from(list("abcdefghijklmnopqrstuvwxyz0123456789")), min_size=1, max_size=8
)


def _random_case(text: str, flips: list[bool]) -> str:
    padded = flips + [False] * len(text)
    return "".join(c.upper() if flip else c.lower() for c, flip in zip(text, padded, strict=False))


@FAST
@given(
    st.sampled_from(["http", "https"]),
    # a last label that starts with a digit may be a number: the host an IPv4 address
    st.lists(labels, min_size=1, max_size=3).filter(lambda labels: not labels[-1][:1].isdigit()),
    st.lists(unreserved, max_size=4),
    st.lists(st.booleans(), max_size=40),
    st.booleans(),
)
def test_equivalent_spellings_are_equal(
    scheme_name: str, host_labels: list[str], segments: list[str], flips: list[bool], escape: bool
) -> None:
    host = ".".join(host_labels)
    path = "/" + "/".join(segments)
    plain = f"{scheme_name}://{host}{path}"
    port = "80" if scheme_name == "http" else "443"
    escaped_path = "".join(f"%{ord(c):02x}" if escape and c != "/" else c for c in path)
    mixed_scheme = _random_case(scheme_name, flips)
    mixed_host = _random_case(host, flips[5:])
    variant = f"{mixed_scheme}://{mixed_host}:{port}{escaped_path}"
    assert canonical(variant) == canonical(plain) == plain


@pytest.mark.parametrize(
    ("url", "pattern"),
    [
        ("http://h/cal/2026/11", "http://h/cal/#/#"),
        ("http://h/cal/2026/11/", "http://h/cal/#/#/"),
        ("http://h/list?page=7&sort=asc", "http://h/list?#"),
        ("http://h/list?sort=asc&page=7", "http://h/list?#"),
        ("http://h/day?date=2026-11-22", "http://h/day?#"),
        ("http://h/a?sid=9f8e7d6c5b4a39281706", "http://h/a?#"),
        ("http://h/s/9f8e7d6c5b4a39281706/x", "http://h/s/#/x"),
        ("http://h/u/123e4567-e89b-12d3-a456-426614174000", "http://h/u/#"),
        ("http://h/page;jsessionid=0A1B2C3D", "http://h/page;#"),
        ("http://h/aaaaaaaaaaaaaaaaaaaa/", None),
        ("http://h/static/app.3f9a8b7c6d5e4f3a2b1c.js", None),
        ("http://h:8080/2026", "http://h:8080/#"),
        ("http://h/s14/t1/page-1234.html", None),
        ("http://h/v1.2/guide", None),
        ("http://h/about", None),
        ("mailto:a@b.example", None),
    ],
)
def test_similar_pattern_counts_numbers_tokens_and_queries_as_one(
    url: str, pattern: str | None
) -> None:
    assert similar_pattern(url) == pattern


# ---------------------------------------------------------------- how a crawl judges a link
# A page's links as a parse worker decides them (extracted, resolved against the page or its
# <base>, canonical, an action each), and what the crawl then declines to request: no server.

SITE = "http://localhost:8000/"

# (the markup of one line of the site's home page, the URL it decides to, its action); the
# rows are the page's lines 2, 3, ... in order, and rows of one URL are spellings of it
SPELLINGS: list[tuple[str, str, Action]] = [
    ('<a href="http://LocalHost:8000/h.html">host case</a>', SITE + "h.html", Action.PARSE),
    ('<a href="HTTP://localhost:8000/h.html">scheme case</a>', SITE + "h.html", Action.PARSE),
    ('<a href="/h.html">plain</a>', SITE + "h.html", Action.PARSE),
    ('<a href="/a/./b/../c.html">dot segments</a>', SITE + "a/c.html", Action.PARSE),
    ('<a href="a/c.html">relative</a>', SITE + "a/c.html", Action.PARSE),
    ('<a href="/%7Euser/">tilde encoded</a>', SITE + "~user/", Action.PARSE),
    ('<a href="/~user/">tilde</a>', SITE + "~user/", Action.PARSE),
    ('<a href="/f.html#a">fragment a</a>', SITE + "f.html", Action.PARSE),
    ('<a href="/f.html#b">fragment b</a>', SITE + "f.html", Action.PARSE),
    ('<a href="  /w.html \t ">spaces around</a>', SITE + "w.html", Action.PARSE),
    ('<a href="/w.html">plain w</a>', SITE + "w.html", Action.PARSE),
    ('<a href="http://EXAMPLE.com:80/p">default port</a>', "http://example.com/p", Action.CHECK),
    ('<a href="http://example.com./p">trailing dot</a>', "http://example.com/p", Action.CHECK),
    ('<a href="http://bücher.example/p">IDN</a>', "http://xn--bcher-kva.example/p", Action.CHECK),
    (
        '<a href="http://xn--bcher-kva.example/p">punycode</a>',
        "http://xn--bcher-kva.example/p",
        Action.CHECK,
    ),
    ('<a href="/%61bc.html">unreserved escaped</a>', SITE + "abc.html", Action.PARSE),
    ('<a href="/abc.html">abc</a>', SITE + "abc.html", Action.PARSE),
    ('<a href="/based.html">a page with base href</a>', SITE + "based.html", Action.PARSE),
    (
        '<a href="http://user:secret@localhost:8000/private.html">userinfo</a>',
        "http://user:secret@localhost:8000/private.html",
        Action.RECORD,
    ),
    ('<a href="/x%2fy.html">escape in lower case</a>', SITE + "x%2Fy.html", Action.PARSE),
    ('<a href="/x%2Fy.html">escape in upper case</a>', SITE + "x%2Fy.html", Action.PARSE),
]


def decided(body: str, page_url: str = SITE) -> list[tuple[str, int | None, Action]]:
    """The page's links as a parse worker sends them to the crawl: URL, line, action."""
    decider = LinkDecider(Policy(SiteSettings(start_urls=(SITE,))))
    links = decider.page(extract_html(body.encode()), page_url)[0]
    assert all(link[3] is None for link in links), links
    return [(url, line, action) for url, line, action, *_ in links]


@pytest.mark.parametrize(("markup", "url", "action"), SPELLINGS, ids=lambda v: str(v)[:40])
def test_each_spelling_decides_to_its_canonical_url_and_action(
    markup: str, url: str, action: Action
) -> None:
    assert decided(markup) == [(url, 1, action)]


def test_spellings_of_one_resource_on_a_page_are_one_url_with_each_line() -> None:
    page = html("<html><head><title>spellings</title></head><body>", *(m for m, _, _ in SPELLINGS))
    lines: dict[str, list[int | None]] = {}
    for url, line, _ in decided(page):
        lines.setdefault(url, []).append(line)

    expected: dict[str, list[int | None]] = {}
    for line, (_, url, _) in enumerate(SPELLINGS, start=2):
        expected.setdefault(url, []).append(line)
    assert lines == expected
    assert lines[SITE + "h.html"] == [2, 3, 4]
    assert lines[SITE + "~user/"] == [7, 8]
    assert lines["http://example.com/p"] == [13, 14]
    assert lines[SITE + "x%2Fy.html"] == [21, 22]


def test_rules_decide_links_that_are_no_urls_as_written() -> None:
    rules = (
        Rule("prefix", "http://<servername>/", Action.IGNORE),
        Rule("glob", "http://[fe80::*", Action.RECORD),
        Rule("regex", "^http://example", Action.CHECK),
    )
    decider = LinkDecider(Policy(SiteSettings(start_urls=(SITE,), rules=rules)))
    body = html(
        "<a href='http://&lt;servername&gt;/repo.git'>placeholder</a>",
        "<a href='http://[fe80::1/status'>recorded</a>",
        "<a href='http://example.org:99999/'>checked: reported as invalid</a>",
        "<a href='//exa mple.org/'>by default reported as invalid</a>",
    )

    links = decider.page(extract_html(body.encode()), SITE)[0]

    assert [(url, line, action, invalid) for url, line, action, invalid, *_ in links] == [
        ("http://[fe80::1/status", 2, Action.RECORD, "invalid IPv6 address"),
        ("http://example.org:99999/", 3, Action.CHECK, "invalid port"),
        ("//exa mple.org/", 4, Action.CHECK, "invalid host"),
    ]
    assert decider.policy.remembered_action("//exa mple.org/") is Action.CHECK
    assert decider.policy.remembered_action("mailto:a@example.org") is Action.RECORD


def test_the_hosts_the_user_named_are_not_judged_by_their_form() -> None:
    policy = Policy(
        SiteSettings(start_urls=("http://intranet/docs/",), sites=("https://wiki:8443/",))
    )

    assert policy.host_verdict("http://intranet/docs/a.html") is None
    assert policy.host_verdict("https://wiki:8443/page") is None
    assert policy.host_verdict("http://localhost:8000/") is None
    assert policy.host_verdict("mailto:someone@jira") is None
    verdict = policy.host_verdict("http://jira/browse/X-1")
    assert verdict is not None and verdict.reason is Reason.INVALID_HOST
    assert [host(u) for u in ("http://a.b:81/x", "https://[::1]:8443/", "http://u@h/")] == [
        "a.b",
        "[::1]",
        "h",
    ]


def test_links_on_a_page_with_a_base_resolve_against_the_base() -> None:
    page = html(
        '<html><head><base href="/sub/"></head><body>',
        '<a href="x.html">through the base</a>',
        '<a href="../h.html">up from the base</a>',
        "</body></html>",
    )

    assert decided(page, SITE + "based.html") == [
        (SITE + "sub/x.html", 2, Action.PARSE),
        (SITE + "h.html", 3, Action.PARSE),
    ]


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        (SITE + "a/b/c.html", None),
        (SITE + "a/b/c/", None),
        (SITE + "a/b/c/d.html", "not requested: 4 path segments, over --max-depth 3"),
        (SITE + "a/b/c/d/e.html", "not requested: 5 path segments, over --max-depth 3"),
        (SITE + "a/b/c.html?x=/y/z", None),
        (
            "http://user:secret@localhost:8000/private.html",
            "not requested: URL carries a user name or password",
        ),
        ("http://user@example.com/", "not requested: URL carries a user name or password"),
    ],
)
def test_urls_too_deep_or_with_userinfo_are_not_requested(url: str, reason: str | None) -> None:
    policy = Policy(SiteSettings(start_urls=(SITE,), max_depth=3))

    assert policy.limit_reason(url) == reason
    if "@" in url:
        assert policy.action(url) is Action.RECORD


@pytest.mark.parametrize(
    ("start", "prefix"),
    [
        ("http://h/a/b.html", "http://h/a/"),
        ("https://h/docs/", "https://h/docs/"),
        ("https://h/docs", "https://h/"),  # a page named docs, in the root folder
        ("http://h", "http://h/"),
        ("http://h/", "http://h/"),
        ("file:///x/y.md", "file:///x/"),
    ],
)
def test_a_start_url_s_site_is_its_folder(start: str, prefix: str) -> None:
    assert site_prefix(start) == prefix
