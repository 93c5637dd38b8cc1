"""Fuzz the link extractor: any bytes, any declared charset, no exception, every link on a
line of the document, and every link text decided (a URL and action, or why it is invalid).

    pip install atheris
    python fuzz/fuzz_extract.py -max_total_time=60 -dict=fuzz/html.dict

See fuzz/README.md. Not part of the test suite: atheris is not a dependency.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["linkpatrol"]):
    from linkpatrol import extract
    from linkpatrol.config import SiteSettings
    from linkpatrol.parsepool import LinkDecider
    from linkpatrol.policy import Policy

CHARSETS = (
    None,
    "utf-8",
    "iso-8859-1",
    "windows-1251",
    "shift_jis",
    "utf-16",
    "utf-16le",
    "utf-32",
    "gb18030",
    "iso-2022-jp",
    "x-user-defined",
    "utf-7",
    "rot13",
    "no-such-charset",
    "",
)
PAGE_URL = "http://site.example/dir/page.html"
DECIDER = LinkDecider(Policy(SiteSettings(start_urls=("http://site.example/dir/",))))


def document_lines(body: bytes, encoding: str) -> int:
    text = body.decode(encoding, "replace")
    return text.replace("\r\n", "\n").replace("\r", "\n").count("\n") + 1


def test_one_input(data: bytes) -> None:
    provider = atheris.FuzzedDataProvider(data)
    choice = provider.ConsumeIntInRange(0, len(CHARSETS))
    if choice == len(CHARSETS):  # a charset label from the input too
        charset: str | None = provider.ConsumeUnicode(provider.ConsumeIntInRange(0, 16))
    else:
        charset = CHARSETS[choice]
    body = provider.ConsumeBytes(provider.remaining_bytes())

    encoding = extract.sniff_encoding(body, charset)
    # extract_html never raises: it returns an empty page instead, which would hide a bug
    # from the fuzzer; so the function that does the work is called directly
    page = extract._extract(body, encoding)
    if extract.extract_html(body, charset) != page:
        raise AssertionError("extract_html differs from the extraction it wraps")
    lines = document_lines(body, encoding)
    for link in page.links:
        if not link.url or link.url != link.url.strip(" \t\n\r\f"):
            raise AssertionError(f"empty or unstripped link: {link!r}")
        if not 1 <= link.line <= lines:
            raise AssertionError(f"{link!r} outside the document's {lines} lines")
    DECIDER.page(page, PAGE_URL)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
