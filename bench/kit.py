"""The generated benchmark site, served by nginx on 127.0.0.1, for the scripts here that
crawl it themselves (``bench/memory.py``, ``bench/breakdown.py``)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import gen_site, serve


@contextlib.contextmanager
def served_site(pages: int, site: Path | None = None) -> Iterator[dict[str, Any]]:
    """The site of ``pages`` pages (``bench/gen_site.py``, generated once and kept in
    ``site``, by default in /tmp/bench-site, for the ports ``bench/serve.py`` serves on),
    served by ``bench/serve.py`` until the block ends; yields the site's ``truth.json``."""
    site = site or gen_site.default_out(pages, serve.SITE_PORT)
    if not (site / "truth.json").is_file():
        ports = (serve.SITE_PORT, serve.EXT_PORT, serve.DEAD_PORT)
        gen_site.generate(site, pages, site_port=ports[0], ext_port=ports[1], dead_port=ports[2])
    serve.stop()
    try:
        serve.start(site)
    except serve.ServeError as error:
        raise SystemExit(str(error)) from None
    try:
        yield json.loads((site / "truth.json").read_text(encoding="utf-8"))
    finally:
        serve.stop()
