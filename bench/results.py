"""``bench/RESULTS.md``, newest figures first.

Its head, up to the first ``## `` heading, is the generated site's comparison, which
each run of ``run.py`` replaces; the head it replaces becomes the newest section, its
title an "earlier run". Every other benchmark that records its figures adds a section of
its own (a ``## `` heading and what follows) just below the head, above the sections
recorded before: nothing recorded earlier is lost.
"""

from __future__ import annotations

from pathlib import Path

FILE = Path(__file__).resolve().parent / "RESULTS.md"


def _split(text: str) -> tuple[str, str]:
    """The head, and the sections below it (from the first ``## `` heading on)."""
    if text.startswith("## "):
        return "", text
    at = text.find("\n## ")
    if at < 0:
        return text, ""
    return text[: at + 1], text[at + 1 :]


def _joined(*parts: str) -> str:
    kept = [part.strip("\n") for part in parts if part.strip()]
    return "\n\n\n".join(kept) + "\n" if kept else ""


def as_section(head: str) -> str:
    """A head replaced, as the newest of the sections: its ``# `` title made a ``## ``
    one that says it is an earlier run."""
    title, _, rest = head.strip("\n").partition("\n")
    if title.startswith("# "):
        return f"## An earlier run: {title[2:]}\n{rest}"
    return "## An earlier run\n\n" + head.strip("\n")


def with_head(text: str, head: str) -> str:
    """``text`` with ``head`` as its head; the head it had, and every section, kept below."""
    old, sections = _split(text)
    return _joined(head, as_section(old) if old.strip() else "", sections)


def with_section(text: str, section: str) -> str:
    """``text`` with ``section`` (starting with a ``## `` heading) added below its head,
    above the sections already there."""
    if not section.startswith("## "):
        raise ValueError("a section starts with a '## ' heading")
    head, sections = _split(text)
    return _joined(head, section, sections)


def record(path: Path, text: str, *, head: bool = False) -> None:
    """Write ``text`` into the results file at ``path``: as its head, or as its newest
    section. A missing file is made."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    new = with_head(old, text) if head else with_section(old, text)
    path.write_text(new, encoding="utf-8")
