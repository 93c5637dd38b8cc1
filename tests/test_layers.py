"""The fetch modules import one way: the pure HTTP pieces, the transport's types, the
transports, the fetcher, libcurl's; none reaches back, lazily or not."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import linkpatrol

PACKAGE = Path(linkpatrol.__file__).parent
# each may import only those before it (and modules outside this list)
FETCH_LAYERS = [
    "linkpatrol.httpparts",
    "linkpatrol.transport",
    "linkpatrol.local",
    "linkpatrol.fetch",
    "linkpatrol.curlfetch",
]


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The linkpatrol modules a module imports when it runs (at its top or in a function;
    not those only for the type checker)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("linkpatrol."):
                found.add(node.module)
            elif node.module == "linkpatrol":
                found.update(f"linkpatrol.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("linkpatrol."))
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: _imports(path) & modules.keys() for name, path in modules.items()}


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        name = todo.pop()
        if name == goal:
            return True
        if name not in seen:
            seen.add(name)
            todo.extend(graph.get(name, ()))
    return False


def test_no_fetch_module_imports_a_module_that_imports_it_back() -> None:
    graph = _graph()
    cycles = [name for name in FETCH_LAYERS if _reaches(graph, name, name)]
    assert cycles == []


def test_each_fetch_module_imports_only_the_layers_below_it() -> None:
    graph = _graph()
    for at, name in enumerate(FETCH_LAYERS):
        above = set(FETCH_LAYERS[at + 1 :])
        assert not graph[name] & above, (name, graph[name] & above)
    assert graph["linkpatrol.httpparts"] <= {"linkpatrol.model"}  # pure: no I/O of the package


@pytest.mark.parametrize("module", FETCH_LAYERS)
def test_each_fetch_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent)}
    proc = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
