"""The build: the modules a crawl spends its time in, compiled to C with mypyc.

Compiled, a crawl takes about a tenth less CPU and time (bench/RESULTS.md: 4.43 s of CPU
against 4.94 s, 3.15 s against 3.46 s); the source is the same, typed Python.
Without a C compiler (or with ``LINKPATROL_PURE=1``, or in an editable install, whose
source must stay what runs) the package installs as plain Python and works the same.
"""

from __future__ import annotations

import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

# the crawl's hot path: the crawl loop and its requests, parsing and deciding links, the
# memory, the JSON report. A class that a library instantiates as one of its own (psycopg's
# dumpers) stays out of these. In them, an attribute that a call may change is read again
# through a method, not directly: the compiled code trusts the type checker's narrowing
# (which holds across calls) and fails at run time where the call changed it.
COMPILED = [
    "linkpatrol/crawl.py",
    "linkpatrol/curlfetch.py",
    "linkpatrol/downloader.py",
    "linkpatrol/extract.py",
    "linkpatrol/fetch.py",
    "linkpatrol/httpparts.py",
    "linkpatrol/parsepool.py",
    "linkpatrol/pipeline.py",
    "linkpatrol/policy.py",
    "linkpatrol/report/__init__.py",
    "linkpatrol/report/json.py",
    "linkpatrol/rules.py",
    "linkpatrol/scheduler.py",
    "linkpatrol/spider.py",
    "linkpatrol/store/crew.py",
    "linkpatrol/store/frontier.py",
    "linkpatrol/store/outcomes.py",
    "linkpatrol/store/postgres.py",
    "linkpatrol/store/queries.py",
    "linkpatrol/store/schema.py",
    "linkpatrol/store/sql.py",
    "linkpatrol/store/sqlite.py",
    "linkpatrol/transport.py",
    "linkpatrol/urls.py",
]


class OptionalBuildExt(build_ext):
    """A compiler missing or failing leaves the plain Python modules in place, all of them:
    a compiled module without the shared library it calls into would not import."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:
            for ext in self.extensions:
                path = self.get_ext_fullpath(ext.name)
                if os.path.exists(path):
                    os.remove(path)
            print(f"linkpatrol: not compiled ({exc}); installing plain Python", file=sys.stderr)


def extensions() -> list[object]:
    if os.environ.get("LINKPATROL_PURE") or "editable_wheel" in sys.argv:
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("linkpatrol: mypyc not found; installing plain Python", file=sys.stderr)
        return []
    try:
        return list(mypycify(COMPILED, opt_level="3"))
    except (Exception, SystemExit) as exc:  # mypyc could not translate them (it may exit)
        print(f"linkpatrol: not compiled ({exc}); installing plain Python", file=sys.stderr)
        return []


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
