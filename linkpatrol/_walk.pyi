from typing import Any

def walk(
    root: Any, tags: frozenset[str] | None, names: tuple[str, ...], keep: frozenset[str]
) -> tuple[list[tuple[str, int | None, dict[str, str], Any]], list[str]]: ...
