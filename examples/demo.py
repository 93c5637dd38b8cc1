"""Serve the example site on 127.0.0.1 and check it with linkpatrol.

    python examples/demo.py [extra linkpatrol options]

The site holds a few broken links on purpose; the report names each with the
pages and lines that hold it, and the exit code is 1.
"""

from __future__ import annotations

import functools
import http.server
import sys
import tempfile
import threading
from pathlib import Path

from linkpatrol.cli import main


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(root: Path) -> http.server.ThreadingHTTPServer:
    handler = functools.partial(QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run() -> int:
    server = serve(Path(__file__).resolve().parent / "site")
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    with tempfile.TemporaryDirectory() as scratch:
        db = str(Path(scratch) / "demo.db")
        try:
            return main(["check", url, "--db", db, *sys.argv[1:]])
        finally:
            server.shutdown()


if __name__ == "__main__":
    raise SystemExit(run())
