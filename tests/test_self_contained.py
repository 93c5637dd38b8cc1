"""The repository is all a clone needs: nothing in it points at a folder beside it.

The benchmarks once took their site generator, server and peer installers from a folder
next to the repository, so a fresh clone could not run them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# spelled in pieces, so that this file does not name them itself
OUTSIDE = ("shared" + "/bench", ".." + "/shared")


def repository_files() -> list[Path]:
    """Every file of the working tree that git tracks or would add (not .git, not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    return [ROOT / name for name in listed.decode().split("\0") if name]


def test_no_file_refers_to_a_folder_outside_the_repository() -> None:
    files = [file for file in repository_files() if file.is_file()]
    assert len(files) > 100 and ROOT / "bench" / "gen_site.py" in files
    naming = {
        str(file.relative_to(ROOT)): needle
        for file in files
        for needle in OUTSIDE
        if needle.encode() in file.read_bytes()
    }
    assert naming == {}
