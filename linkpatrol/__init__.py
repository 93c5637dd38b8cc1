"""linkpatrol: a website link checker with a memory."""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.util
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from linkpatrol.checker import Check, CheckResult, check

__version__ = "0.1.0"

__all__ = ["Check", "CheckResult", "__version__", "build", "check"]

_FROM_CHECKER = frozenset(("Check", "CheckResult", "check"))


def __getattr__(name: str) -> Any:
    """The library's entry point, imported when first asked for: the command's start
    does not pay for the engine it may not need."""
    if name in _FROM_CHECKER:
        return getattr(importlib.import_module("linkpatrol.checker"), name)
    raise AttributeError(f"module 'linkpatrol' has no attribute {name!r}")


def build() -> str:
    """How this install was built: "compiled" (its hot modules by mypyc) or "plain Python"."""
    spec = importlib.util.find_spec("linkpatrol.extract")
    origin = spec.origin if spec is not None else None
    return "compiled" if origin and origin.endswith((".so", ".pyd")) else "plain Python"


@contextlib.contextmanager
def _uncollected() -> Iterator[None]:
    """No garbage collection while the command's modules load: they make tens of thousands
    of objects that live as long as the command, and the thirty or so collections their
    number sets off before the command reads its arguments (as many again for the crawl's
    modules) free nothing. The collector is as it was afterwards."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
