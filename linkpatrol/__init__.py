"""linkpatrol: a website link checker with a memory."""

from __future__ import annotations

import importlib.util

__version__ = "0.1.0"

__all__ = ["__version__", "build"]


def build() -> str:
    """How this install was built: "compiled" (its hot modules by mypyc) or "plain Python"."""
    spec = importlib.util.find_spec("linkpatrol.extract")
    origin = spec.origin if spec is not None else None
    return "compiled" if origin and origin.endswith((".so", ".pyd")) else "plain Python"
