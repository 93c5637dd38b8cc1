"""Shared fixtures: real servers on 127.0.0.1 and the real ``linkpatrol`` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sitesrv import Handler, Page, TestSite

COMMAND_TIMEOUT = 120


class Runner:
    """Runs the real command in a scratch folder, with its own memory database."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.db = str(cwd / "memory.db")

    def __call__(
        self, *args: str, timeout: float = COMMAND_TIMEOUT, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        full_env = {**os.environ, **(env or {})}
        full_env.pop("COLUMNS", None)
        return subprocess.run(
            [sys.executable, "-m", "linkpatrol", *args],
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=full_env,
            stdin=subprocess.DEVNULL,
        )

    def check(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        """``linkpatrol check`` against this runner's memory (unless --db is given)."""
        extra = [] if "--db" in args else ["--db", self.db]
        return self("check", *extra, *args, **kw)

    def check_json(self, *args: str, **kw: Any) -> tuple[int, dict[str, Any]]:
        proc = self.check("--format", "json", *args, **kw)
        assert proc.stdout, f"no report; stderr: {proc.stderr}"
        return proc.returncode, json.loads(proc.stdout)

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "linkpatrol", *args],
            cwd=self.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )


@pytest.fixture
def run(tmp_path: Path) -> Runner:
    return Runner(tmp_path)


@pytest.fixture
def serve() -> Iterator[Callable[[dict[str, Page | Handler]], TestSite]]:
    """Start any number of sites for the test; all are stopped at its end."""
    sites: list[TestSite] = []

    def start(pages: dict[str, Page | Handler]) -> TestSite:
        site = TestSite(pages)
        site.start()
        sites.append(site)
        return site

    yield start
    for site in sites:
        site.stop()


def by_url(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["url"]: entry for entry in report["urls"]}
