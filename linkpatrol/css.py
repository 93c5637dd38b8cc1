"""Links with their source line numbers from CSS: stylesheets, style blocks, style attributes.

tinycss2 tokenizes the text as CSS Syntax Level 3 has browsers tokenize it, so comments,
strings and broken ``url(`` tokens end where a browser ends them. What it makes is gone
through without recursion, so no nesting is too deep; its time grows with the text's
length, which the body limit (``--max-size``) bounds, and text with nothing that can
make a link is not tokenized at all.
"""

from __future__ import annotations

from typing import Any

import tinycss2
from tinycss2.bytes import decode_stylesheet_bytes

__all__ = ["STYLESHEET_TAG", "css_links", "css_urls", "decode_stylesheet"]

STYLESHEET_TAG = "css"  # what stands for the element a link is in, for a stylesheet's links
_SPACE = " \t\n\r\f"
# what a link in CSS starts with; text holding none of these has no link
_OPENINGS = ("url(", "@import", "image-set(")
_IMAGE_SETS = frozenset({"image-set", "-webkit-image-set"})
_BLOCKS = frozenset({"() block", "[] block", "{} block"})


def _has_opening(text: str) -> bool:
    lowered = text.lower()
    return any(opening in lowered for opening in _OPENINGS)


def _first_string(tokens: list[Any]) -> Any:
    """The first token that is not white space, if it is a string; else None."""
    for token in tokens:
        if token.type == "whitespace":
            continue
        return token if token.type == "string" else None
    return None


def css_links(text: str) -> list[tuple[int, int, str, str]]:
    """(line, column, url, how it is written: ``url`` or ``import``) of each link in CSS
    text, in document order: ``url(…)`` quoted or not, ``@import "…"`` and the strings
    given straight to ``image-set()`` (not those of ``type()`` within it). Comments, other
    strings, empty URLs and ``data:`` URLs (which name nothing to check) are left out."""
    if not _has_opening(text):
        return []
    found: list[tuple[int, int, str, str]] = []

    def add(token: Any, url: str, kind: str) -> None:
        url = url.strip(_SPACE)
        if url and url[:5].lower() != "data:":
            found.append((token.source_line, token.source_column, url, kind))

    pending: list[list[Any]] = [tinycss2.parse_component_value_list(text, skip_comments=True)]
    while pending:
        tokens = pending.pop()
        importing = False
        for token in tokens:
            kind = token.type
            if importing and kind != "whitespace":
                importing = False
                if kind == "string":
                    add(token, token.value, "import")
            if kind == "url":
                add(token, token.value, "url")
            elif kind == "at-keyword":
                importing = token.lower_value == "import"
            elif kind == "function":
                name = token.lower_name
                if name == "url":
                    string = _first_string(token.arguments)
                    if string is not None:
                        add(string, string.value, "url")
                    continue
                if name in _IMAGE_SETS:
                    for argument in token.arguments:
                        if argument.type == "string":
                            add(argument, argument.value, "url")
                pending.append(token.arguments)
            elif kind in _BLOCKS:
                pending.append(token.content)
    found.sort()
    return found


def css_urls(text: str, first_line: int = 1) -> list[tuple[str, int]]:
    """The URLs of CSS text (see :func:`css_links`), each with its line; text starts on
    first_line."""
    return [(url, first_line + line - 1) for line, _, url, _ in css_links(text)]


def decode_stylesheet(body: bytes, header_charset: str | None) -> tuple[str, str]:
    """(text, encoding name) of a stylesheet, as CSS Syntax has it: its byte order mark,
    else the HTTP charset, else its ``@charset`` rule, else UTF-8."""
    text, encoding = decode_stylesheet_bytes(body, protocol_encoding=header_charset)
    return text, str(encoding.name)
