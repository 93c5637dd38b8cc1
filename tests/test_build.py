"""The build: plain Python unless asked to compile, mypy fetched only then; the set-up the
README gives is the one CI runs, and the test tools install without building the package
again."""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
import types
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


class Mypyc:
    """Stands in for mypyc: records what the build would have it translate."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], dict[str, Any]]] = []

    def mypycify(self, paths: list[str], **options: Any) -> list[str]:
        self.calls.append((paths, options))
        return [f"extension of {path}" for path in paths]


@pytest.fixture
def mypyc(monkeypatch: pytest.MonkeyPatch) -> Mypyc:
    fake = Mypyc()
    module = types.ModuleType("mypyc.build")
    module.mypycify = fake.mypycify  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mypyc", types.ModuleType("mypyc"))
    monkeypatch.setitem(sys.modules, "mypyc.build", module)
    return fake


def load(name: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """setup.py or build_backend.py as a module: imported, setup.py builds nothing."""
    monkeypatch.syspath_prepend(str(ROOT))
    spec = importlib.util.spec_from_file_location(f"linkpatrol_{name}", ROOT / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("value", [None, "", "0"])
def test_the_default_build_is_plain_python(
    value: str | None, mypyc: Mypyc, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup = load("setup", monkeypatch)
    environ = {} if value is None else {"LINKPATROL_COMPILE": value}
    assert setup.extensions(["setup.py", "bdist_wheel"], environ) == []
    assert mypyc.calls == []


def test_asked_to_compile_the_build_translates_each_group(
    mypyc: Mypyc, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup = load("setup", monkeypatch)
    built = setup.extensions(["setup.py", "bdist_wheel"], {"LINKPATROL_COMPILE": "1"})
    [(paths, options)] = mypyc.calls
    grouped = [path for group in setup.GROUPS.values() for path in group]
    assert paths == grouped
    *translated, walker = built
    assert translated == [f"extension of {path}" for path in grouped]
    assert walker.name == "linkpatrol._walk"
    assert all((ROOT / source).is_file() for source in walker.sources)
    assert options["separate"] == [(group, name) for name, group in setup.GROUPS.items()]
    for path in grouped:
        assert (ROOT / path).is_file(), path


@pytest.mark.parametrize("command", ["egg_info", "dist_info", "editable_wheel"])
def test_metadata_and_editable_installs_translate_nothing(
    command: str, mypyc: Mypyc, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup = load("setup", monkeypatch)
    assert setup.extensions(["setup.py", command], {"LINKPATROL_COMPILE": "1"}) == []
    assert mypyc.calls == []


def test_mypy_is_fetched_only_for_a_build_that_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = load("build_backend", monkeypatch)
    monkeypatch.setattr(backend.build_meta, "get_requires_for_build_wheel", lambda _: ["wheel"])
    monkeypatch.delenv("LINKPATROL_COMPILE", raising=False)
    assert backend.get_requires_for_build_wheel() == ["wheel"]
    monkeypatch.setenv("LINKPATROL_COMPILE", "1")
    assert backend.get_requires_for_build_wheel() == ["wheel", backend.MYPY, backend.LXML]
    system = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    assert system["build-backend"] == "build_backend"
    assert not any(r.startswith("mypy") for r in system["requires"])


def readme_commands() -> list[str]:
    """The README's indented command lines under 'Set up', up to the next section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Set up\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^    (\S.*)$", section, re.MULTILINE)


def test_ci_runs_the_readme_test_command_after_a_compiled_install() -> None:
    """CI installs the package compiled, as the README says to opt in, then runs the
    README's test command exactly, which installs the test tools alone."""
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    commands = readme_commands()
    tests = [c for c in commands if c.endswith("python -m pytest")]
    assert len(tests) == 1, commands
    assert ci[-1] == tests[0]
    assert tests[0].startswith("pip install --group test && ")
    assert "LINKPATROL_COMPILE=1 pip install ." in commands
    assert "LINKPATROL_COMPILE=1 pip install ." in ci[:-1]


def test_the_test_group_and_the_test_extra_list_the_same_packages() -> None:
    """`pip install --group test` installs the test tools without building the package;
    `.[test]` still works, with the same list."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extra = project["project"]["optional-dependencies"]["test"]
    assert project["dependency-groups"]["test"] == extra
