"""The build backend: setuptools, which fetches mypy only for a build that compiles.

The default build is plain Python and needs setuptools alone; ``LINKPATROL_COMPILE=1``
asks for the compiled one (setup.py), and only then are mypy, whose mypyc does the
compiling, and lxml, whose headers the walk in C is built against, worth their download.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from setuptools import build_meta
from setuptools.build_meta import (
    build_editable,
    build_sdist,
    build_wheel,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

COMPILE_VARIABLE = "LINKPATROL_COMPILE"
MYPY = "mypy>=1.10"
LXML = "lxml>=6.0.2"  # the headers of its C API, for the walk of extraction in C


def compiling(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the build is asked to compile: the variable set to anything but 0 or empty."""
    return environ.get(COMPILE_VARIABLE, "").strip() not in ("", "0")


def get_requires_for_build_wheel(config_settings: object = None) -> list[str]:
    requires: list[str] = build_meta.get_requires_for_build_wheel(config_settings)
    return [*requires, MYPY, LXML] if compiling() else requires
