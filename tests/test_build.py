"""The set-up the README gives is the one CI runs, and the test tools install without
building the package again."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    """The README's indented command lines under 'Set up', up to the next section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Set up\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^    (\S.*)$", section, re.MULTILINE)


def test_ci_runs_the_readme_test_command() -> None:
    """CI installs the package, then runs the README's test command exactly, which
    installs the test tools alone."""
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    commands = readme_commands()
    tests = [c for c in commands if c.endswith("python -m pytest")]
    assert len(tests) == 1, commands
    assert ci[-1] == tests[0]
    assert tests[0].startswith("pip install --group test && ")
    assert "pip install ." in ci[:-1]


def test_the_test_group_and_the_test_extra_list_the_same_packages() -> None:
    """`pip install --group test` installs the test tools without building the package;
    `.[test]` still works, with the same list."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extra = project["project"]["optional-dependencies"]["test"]
    assert project["dependency-groups"]["test"] == extra
