"""``bench/results.py`` keeps ``bench/RESULTS.md`` newest first: ``run.py`` replaces its
head (the old head kept as the newest section), every other benchmark adds a section
below the head, and nothing recorded earlier is lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import results

OLD = """# Benchmark: 2000-page generated site

| tool | wall s |
|---|---:|
| linkpatrol | 0.9 |


## An older section

### Its own subsection

text


## The oldest section

more
"""


def test_a_new_head_keeps_the_old_one_and_every_section_below_it() -> None:
    text = results.with_head(OLD, "# Benchmark: 2000-page generated site\n\nnew table\n")
    assert text == (
        "# Benchmark: 2000-page generated site\n\nnew table\n\n\n"
        "## An earlier run: Benchmark: 2000-page generated site\n\n"
        "| tool | wall s |\n|---|---:|\n| linkpatrol | 0.9 |\n\n\n"
        "## An older section\n\n### Its own subsection\n\ntext\n\n\n"
        "## The oldest section\n\nmore\n"
    )


@pytest.mark.parametrize(
    ("old", "expected"),
    [
        ("", "# New\n\nx\n"),  # no file yet: nothing to keep
        ("## Only a section\n", "# New\n\nx\n\n\n## Only a section\n"),  # no head
        ("figures\n", "# New\n\nx\n\n\n## An earlier run\n\nfigures\n"),  # no title
        ("# Head only\n", "# New\n\nx\n\n\n## An earlier run: Head only\n"),
    ],
)
def test_the_head_replaced_becomes_a_section(old: str, expected: str) -> None:
    assert results.with_head(old, "# New\n\nx\n") == expected


@pytest.mark.parametrize(
    ("old", "expected"),
    [
        ("", "## New\n\nx\n"),  # no file yet
        ("## Only a section\n", "## New\n\nx\n\n\n## Only a section\n"),  # no head
        ("# Head only\n", "# Head only\n\n\n## New\n\nx\n"),
    ],
)
def test_a_section_in_a_file_without_head_or_sections(old: str, expected: str) -> None:
    assert results.with_section(old, "## New\n\nx\n") == expected


def test_a_section_must_be_one() -> None:
    with pytest.raises(ValueError, match="'## ' heading"):
        results.with_section(OLD, "figures without a heading\n")


def test_recording_twice_reads_newest_first(tmp_path: Path) -> None:
    path = tmp_path / "RESULTS.md"
    results.record(path, "# Head\n\nfirst head\n", head=True)
    results.record(path, "## Monday\n\nm\n")
    results.record(path, "## Tuesday\n\nt\n")
    results.record(path, "# Head\n\nsecond head\n", head=True)
    assert path.read_text() == (
        "# Head\n\nsecond head\n\n\n## An earlier run: Head\n\nfirst head\n\n\n"
        "## Tuesday\n\nt\n\n\n## Monday\n\nm\n"
    )
