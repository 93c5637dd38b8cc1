"""Fuzz the URL parser: whatever the text and base, ``canonical`` returns a canonical URL
or raises ``BadURL``, and a link decision never fails.

    pip install atheris
    python fuzz/fuzz_urls.py -max_total_time=60 -dict=fuzz/urls.dict

See fuzz/README.md. Not part of the test suite: atheris is not a dependency.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["linkpatrol"]):
    from linkpatrol.config import Rewrite, SiteSettings
    from linkpatrol.parsepool import LinkDecider
    from linkpatrol.policy import Policy
    from linkpatrol.urls import (
        BadURL,
        canonical,
        has_userinfo,
        is_http,
        origin,
        path_depth,
        relative_to,
        scheme,
        similar_pattern,
    )

C0_AND_SPACE = "".join(map(chr, range(0x21)))
BASES = (
    None,
    "http://a.example/b/c/d;p?q",
    "https://[::1]:8443/x/",
    "HTTP://Bücher.Example:80/a/./b/../",
    "ftp://f.example/x/y",
    "mailto:m@x.example",
    "file:///tmp/x",
)
REWRITES = (
    Rewrite("^https?://(www\\.)?example\\.(net|com)/", "https://example.org/"),
    Rewrite("/index\\.html$", "/"),
    Rewrite("^https://example\\.org/go/(.*)$", "\\1"),
)
DECIDER = LinkDecider(Policy(SiteSettings(start_urls=("http://a.example/b/",), rewrites=REWRITES)))


def check_canonical(raw: str, base: str | None) -> None:
    try:
        url = canonical(raw, base)
    except BadURL:
        return
    again = canonical(url)
    if again != url:
        raise AssertionError(f"not a fixed point: {raw!r} -> {url!r} -> {again!r}")
    if canonical(url, "http://elsewhere.example/z") != url:
        raise AssertionError(f"absolute result depends on the base: {url!r}")
    if url != url.strip(C0_AND_SPACE) or any(c in url for c in "\t\n\r"):
        raise AssertionError(f"white space or control characters left in {url!r}")
    if is_http(url):
        if "#" in url or " " in url or not url.isascii():
            raise AssertionError(f"not in canonical form: {url!r}")
        if not origin(url) or path_depth(url) < 0:
            raise AssertionError(f"no origin: {url!r}")
    scheme(url)
    has_userinfo(url)
    similar_pattern(url)
    relative_to(url, base or "http://a.example/")


def test_one_input(data: bytes) -> None:
    provider = atheris.FuzzedDataProvider(data)
    choice = provider.ConsumeIntInRange(0, len(BASES))
    raw = provider.ConsumeUnicode(provider.remaining_bytes())
    if choice == len(BASES):  # a base from the input too
        base, _, raw = raw.partition("\x00")
        check_canonical(base, None)
        check_canonical(raw, base)
    else:
        check_canonical(raw, BASES[choice])
    answer = DECIDER.decide(raw, "http://a.example/b/c.html")
    if answer is not None and answer[2] is None and canonical(answer[0]) != answer[0]:
        raise AssertionError(f"decided URL not canonical: {answer!r}")


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
