"""What a page looks like, in a few numbers: enough to tell a server's "not found" page,
served with 200, from a real page built on the same template.

A page's look is its title, the length of its visible text and a 64-bit simhash of that
text (Charikar's: each run of three words votes for the bits of its hash; pages whose
texts share most runs get hashes a few bits apart). The name the page was asked by is
taken out of both first, as not-found pages often echo it ("/b/x.html was not found").
Written here, as no maintained package does this without more than it needs: it is a
few lines over the standard library's BLAKE2.
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import unquote, urlsplit

from lxml import etree

from linkpatrol.extract import gather_trailing, sniff_encoding
from linkpatrol.model import Look

HASH_BITS = 64
SHINGLE = 3  # words in a run
TEXT_LIMIT = 256 * 1024  # characters of visible text read: a page's start tells enough
_WORD = re.compile(r"\w+")
_HIDDEN = ("script", "style", "noscript", "template")


def asked_name(url: str) -> str:
    """The last segment of a URL's path, as people read it: what a page may echo."""
    return unquote(urlsplit(url).path.rsplit("/", 1)[-1])


def simhash(text: str) -> int:
    """The 64-bit simhash of a text's runs of words (its words, when fewer)."""
    words = _WORD.findall(text.lower())
    runs = [" ".join(words[i : i + SHINGLE]) for i in range(max(len(words) - SHINGLE + 1, 1))]
    votes = [0] * HASH_BITS
    for run in runs:
        if not run:
            continue
        value = int.from_bytes(hashlib.blake2b(run.encode(), digest_size=8).digest(), "big")
        for bit in range(HASH_BITS):
            votes[bit] += 1 if value >> bit & 1 else -1
    return sum(1 << bit for bit, vote in enumerate(votes) if vote > 0)


def look_of(body: bytes, charset: str | None, url: str) -> Look:
    """The look of an HTML page asked for as ``url`` (its name taken out of the text)."""
    text = body.decode(sniff_encoding(body, charset), "replace")
    title = words = ""
    if text.strip():
        root = etree.fromstring(text.encode("utf-8"), etree.HTMLParser(encoding="utf-8"))
        if root is not None:
            gather_trailing(root)
            for element in root.iter(*_HIDDEN):
                element.clear(keep_tail=True)
            found = root.find(".//title")
            title = "".join(found.itertext()) if found is not None else ""
            if found is not None:
                found.clear(keep_tail=True)
            words = " ".join("".join(root.itertext()).split())[:TEXT_LIMIT]
    name = asked_name(url)
    if name:
        title, words = title.replace(name, " "), words.replace(name, " ")
    title = " ".join(title.split())
    words = " ".join(words.split())
    return Look(title, len(words), simhash(words))
