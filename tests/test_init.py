"""`linkpatrol init` writes a configuration that documents every key; completion scripts work."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from linkpatrol.config import _SCALAR_KEYS, SiteSettings, build_settings, load_file
from tests.conftest import Runner, Serve
from tests.sitesrv import Page


def _uncommented(text: str) -> str:
    """Every commented key set to the default shown (those with no default stay commented)."""
    out = []
    for line in text.splitlines():
        m = re.fullmatch(r"# (\w+ = .*)", line)
        key = m.group(1).split(" =")[0] if m else ""
        if key in _SCALAR_KEYS and not line.endswith("(not set by default)"):
            out.append(line[2:])
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def test_init_lists_every_key_with_a_default_that_reads_back_as_the_default(
    run: Runner, tmp_path: Path
) -> None:
    proc = run("init", "HTTPS://Example.org/docs/")

    assert proc.returncode == 0, proc.stderr
    written = tmp_path / "linkpatrol.toml"
    text = written.read_text(encoding="utf-8")
    assert 'start = ["https://example.org/docs/"]' in text
    for key in _SCALAR_KEYS:
        assert re.search(rf"^(# )?{key} = ", text, re.M), key
    assert "# [[rule]]" in text and "# [[rewrite]]" in text
    # each key has its option's help above it
    assert "# most URLs in one pass (default 100000)\n# max_urls = 100000" in text

    every = tmp_path / "every.toml"
    every.write_text(_uncommented(text), encoding="utf-8")
    settings = build_settings(load_file(every), {})
    assert settings == SiteSettings(start_urls=("https://example.org/docs/",))


def test_init_refuses_to_overwrite_without_force_and_checks_its_urls(
    run: Runner, tmp_path: Path
) -> None:
    target = tmp_path / "site.toml"
    target.write_text("# mine\n", encoding="utf-8")

    refused = run("init", "https://example.org/", "--config", str(target))
    bad = run("init", "http://[::1", "--config", str(tmp_path / "other.toml"))

    assert refused.returncode == 2
    assert refused.stderr == f"linkpatrol: {target}: already exists (--force replaces it)\n"
    assert target.read_text(encoding="utf-8") == "# mine\n"
    assert bad.returncode == 2 and "not a URL" in bad.stderr
    assert not (tmp_path / "other.toml").exists()

    forced = run("init", "https://example.org/", "--config", str(target), "--force")
    assert forced.returncode == 0
    assert 'start = ["https://example.org/"]' in target.read_text(encoding="utf-8")


def test_a_check_runs_from_the_written_configuration(run: Runner, serve: Serve) -> None:
    site = serve({"/": Page('<a href="/gone">gone</a>')})
    assert run("init", site.url("/")).returncode == 0

    code, report = run.check_json()

    assert code == 1 and report["start_urls"] == [site.url("/")]
    assert [u["url"] for u in report["urls"] if u["reportable"]] == [site.url("/gone")]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completion_completes_commands_and_options(run: Runner, tmp_path: Path) -> None:
    script = tmp_path / "linkpatrol.bash"
    script.write_text(run("completion", "bash").stdout, encoding="utf-8")

    def complete(*words: str) -> list[str]:
        line = " ".join(words)
        program = (
            f"source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; "
            f'COMP_LINE="{line}"; COMP_POINT=${{#COMP_LINE}}; '
            f"_shtab_linkpatrol linkpatrol {words[-1]} {words[-2]}; "
            'printf "%s\\n" "${COMPREPLY[@]}"'
        )
        done = subprocess.run(
            ["bash", "-c", program], capture_output=True, text=True, timeout=30, check=True
        )
        return done.stdout.split()

    assert complete("linkpatrol", "ch") == ["check"]
    assert complete("linkpatrol", "check", "--max-d") == ["--max-depth"]
    assert "--format" in complete("linkpatrol", "report", "--f")
