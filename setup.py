"""The build: plain Python by default; with ``LINKPATROL_COMPILE=1``, the modules where a
crawl spends its own Python time compiled to C with mypyc.

Plain is the default because it installs in seconds: a fresh ``pip install .`` on 2 cores
took 13 to 24 s, dependencies included, where compiling all 24 modules of the crawl's path
at opt level 3, in one group, took 3 to 4 minutes. Compiled, a first crawl of the
2,000-page benchmark site takes up to a tenth less CPU (0.89x and 0.96x plain's, medians
of 7 and 9 pairs, on a machine loaded by other work; 0.90x in bench/RESULTS.md), and the
parse workers' part of it, parsing and deciding every page in one process, 0.88x (11
pairs, 0.79x to 0.93x): worth a minute more once, where crawls are many. These 7
modules, in two groups built side by side, keep the gain of the 24 (0.99x their CPU for
a crawl, 1.03x for the parsing, 9 and 11 pairs) for a third of the build's CPU (43 to
51 s against 138 s); the install took 65 to 153 s, as loaded as the machine was.

Without a C compiler, or in an editable install (whose source must stay what runs), a
build asked to compile installs plain Python all the same, and works the same.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from setuptools import setup
from setuptools.command.build_ext import build_ext

from build_backend import compiling

# Where a profile of a crawl finds Python's own time (not libcurl's, libxml2's or
# SQLite's), in two groups, one shared library each, compiled side by side: the parse
# workers' and the crawl process's. The other modules gain nothing measurable. In these,
# an attribute that a call may change is read again through a method, not directly: the
# compiled code trusts the type checker's narrowing (which holds across calls) and fails
# at run time where the call changed it.
GROUPS = {
    "linkpatrol_parse": ["linkpatrol/extract.py", "linkpatrol/parsepool.py", "linkpatrol/urls.py"],
    "linkpatrol_crawl": [
        "linkpatrol/crawl.py",
        "linkpatrol/curlfetch.py",
        "linkpatrol/downloader.py",
        "linkpatrol/httpparts.py",
    ],
}
OPT_LEVEL = "3"  # level 2 built in no less time (51 s of CPU against 50 s)
# the commands that build the extensions; the others (egg_info, dist_info) only read
# metadata, and need no translation
BUILDING = {"bdist_wheel", "build", "build_ext", "install"}


class OptionalBuildExt(build_ext):
    """Builds the groups in parallel, one per core. A compiler missing or failing leaves
    the plain Python modules in place, all of them: a compiled module without the shared
    library it calls into would not import."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:
            for ext in self.extensions:
                path = self.get_ext_fullpath(ext.name)
                if os.path.exists(path):
                    os.remove(path)
            print(f"linkpatrol: not compiled ({exc}); installing plain Python", file=sys.stderr)


def extensions(argv: Sequence[str], environ: Mapping[str, str]) -> list[object]:
    if not compiling(environ) or not BUILDING & set(argv):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("linkpatrol: mypyc not found; installing plain Python", file=sys.stderr)
        return []
    print("linkpatrol: compiling with mypyc (a minute or so)", file=sys.stderr)
    groups = [(paths, name) for name, paths in GROUPS.items()]
    every = [path for paths in GROUPS.values() for path in paths]
    try:
        compiled = list(mypycify(every, opt_level=OPT_LEVEL, separate=groups))
    except (Exception, SystemExit) as exc:  # mypyc could not translate them (it may exit)
        print(f"linkpatrol: not compiled ({exc}); installing plain Python", file=sys.stderr)
        return []
    return [*compiled, *walker()]


def walker() -> list[object]:
    """The walk of extraction in C (linkpatrol/_walk.c), built against the headers lxml
    ships: without it, extraction walks lxml's elements, to the same result."""
    try:
        import lxml
    except ImportError:
        print("linkpatrol: lxml's headers not found; the walk stays Python", file=sys.stderr)
        return []
    from setuptools import Extension

    return [Extension("linkpatrol._walk", ["linkpatrol/_walk.c"], include_dirs=lxml.get_include())]


if __name__ == "__main__":
    setup(
        ext_modules=extensions(sys.argv, os.environ),
        cmdclass={"build_ext": OptionalBuildExt},
    )
