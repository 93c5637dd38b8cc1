"""The shared benchmark kit's generated site, served by nginx on 127.0.0.1, for the scripts
here that crawl it themselves (``bench/memory.py``, ``bench/breakdown.py``)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def served_site(kit: Path, pages: int) -> Iterator[dict[str, Any]]:
    """The kit's site of ``pages`` pages (generated once, kept in /tmp/bench-site), served
    by its ``serve.sh`` until the block ends; yields the site's ``truth.json``."""
    site = Path(f"/tmp/bench-site/{pages}")
    if not (site / "truth.json").is_file():
        subprocess.run(
            [sys.executable, kit / "gen_site.py", "--pages", str(pages), "--out", site],
            check=True,
        )
    subprocess.run(["bash", kit / "serve.sh", "stop"], capture_output=True, check=False)
    subprocess.run(["bash", kit / "serve.sh", "start", site], check=True, capture_output=True)
    try:
        yield json.loads((site / "truth.json").read_text(encoding="utf-8"))
    finally:
        subprocess.run(["bash", kit / "serve.sh", "stop"], capture_output=True, check=False)
