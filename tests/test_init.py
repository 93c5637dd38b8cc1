"""`linkpatrol init` writes a configuration that documents every key; completion scripts work."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from linkpatrol.config import _SCALAR_KEYS, SiteSettings, build_settings, load_file
from linkpatrol.options import OPTIONS, Kind
from linkpatrol.template import NOT_SET
from tests.conftest import Runner, Serve
from tests.sitesrv import Page


def _uncommented(text: str) -> str:
    """The file with every commented key uncommented (the tables' examples stay comments)."""
    keys = "|".join(_SCALAR_KEYS)
    return re.sub(rf"^# ((?:{keys}) = )", r"\1", text, flags=re.M)


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
    # each key has its help above it: the option's, or the key's own where they differ
    assert "# most URLs in one pass (default 100000)\n# max_urls = 100000" in text
    assert "# obey robots.txt (false: ignore it, which is impolite)\n# robots = true" in text
    assert "one per core" in text.split("# parse_workers = 0")[0].rsplit("\n\n", 1)[1]
    for option in OPTIONS:
        if option.kind is Kind.NEGATED and option.key:
            assert f"# {option.help}\n# {option.key} =" not in text, option.key

    every = tomllib.loads(_uncommented(text))  # each line, uncommented, is TOML
    examples = {key for key in every if re.search(rf"^# {key} = .*{NOT_SET}$", text, re.M)}
    defaults = SiteSettings(start_urls=("https://example.org/docs/",))
    unset = {
        option.key
        for option in OPTIONS
        if option.key and option.field and getattr(defaults, option.field) is None
    }
    assert examples == unset
    uncommented = tmp_path / "every.toml"
    uncommented.write_text(
        "".join(
            line + "\n"
            for line in _uncommented(text).splitlines()
            if line.split(" =")[0] not in examples
        ),
        encoding="utf-8",
    )
    settings = build_settings(load_file(uncommented), {})
    for field in dataclasses.fields(SiteSettings):
        assert getattr(settings, field.name) == getattr(defaults, field.name), field.name


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
    assert bad.returncode == 2 and "not a valid URL" in bad.stderr
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


def test_init_takes_folders_and_files_and_the_check_reads_them(run: Runner, tmp_path: Path) -> None:
    (tmp_path / "public").mkdir()
    (tmp_path / "public" / "index.html").write_text('<a href="gone.html">x</a>', encoding="utf-8")
    (tmp_path / "README.md").write_text("[old](missing.md)\n", encoding="utf-8")

    assert run("init", "./public", "README.md").returncode == 0
    text = (tmp_path / "linkpatrol.toml").read_text(encoding="utf-8")
    code, report = run.check_json()

    assert 'start = ["./public", "README.md"]' in text
    assert code == 1
    broken = sorted(u["url"].rsplit("/", 1)[1] for u in report["urls"] if u["reportable"])
    assert broken == ["gone.html", "missing.md"]


def test_init_refuses_what_is_neither_a_url_nor_a_path_in_one_line(
    run: Runner, tmp_path: Path
) -> None:
    proc = run("init", "./pubilc")

    assert proc.returncode == 2
    assert proc.stderr == "linkpatrol: ./pubilc: neither a URL nor an existing file or folder\n"
    assert not (tmp_path / "linkpatrol.toml").exists()


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
            ["bash", "-c", program],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
            cwd=tmp_path,
        )
        return [word.rstrip("/") for word in done.stdout.split()]

    (tmp_path / "public").mkdir()
    (tmp_path / "public.txt").write_text("", encoding="utf-8")
    assert complete("linkpatrol", "ch") == ["check"]
    assert complete("linkpatrol", "check", "--root-dir", "pub") == ["public"]
    assert sorted(complete("linkpatrol", "check", "--config", "pub")) == ["public", "public.txt"]
    assert sorted(complete("linkpatrol", "check", "pub")) == ["public", "public.txt"]
    assert complete("linkpatrol", "check", "--user-agent", "pub") == []
    assert complete("linkpatrol", "check", "--max-d") == ["--max-depth"]
    assert "--format" in complete("linkpatrol", "report", "--f")


def test_completion_scripts_complete_paths_where_an_option_takes_one(run: Runner) -> None:
    bash = run("completion", "bash").stdout
    zsh = run("completion", "zsh").stdout

    for name in ("output", "config", "db", "log", "hooks", "ca_bundle", "sitemap"):
        assert f"_shtab_linkpatrol_check___{name}_COMPGEN=_shtab_compgen_files" in bash, name
    assert "_shtab_linkpatrol_check_pos_0_COMPGEN=_shtab_compgen_files" in bash
    assert "_shtab_linkpatrol_init___config_COMPGEN=_shtab_compgen_files" in bash
    assert "_shtab_linkpatrol_check___root_dir_COMPGEN=_shtab_compgen_dirs" in bash
    assert "_shtab_linkpatrol_check___user_agent_COMPGEN" not in bash
    zsh_options = dict(re.findall(r'"\*?(--[\w-]+)\[[^\n]*\]:[^:\n]*:([^"\n]*)"', zsh))
    for flag in ("--config", "--db", "--log", "--hooks", "--ca-bundle", "--sitemap"):
        assert zsh_options[flag] == "_files", flag
    assert zsh_options["--root-dir"] == "_files -/"
    assert zsh_options["--user-agent"] == ""
    assert "(*)::start URLs, local folders or files" in zsh and "on stdin (or" in zsh


# the manual's page that says how to install the completion scripts
COMPLETION_DOCS = Path(__file__).parent.parent / "docs" / "configuration.md"


def _readme_install(shell: str) -> str:
    """The manual's commands that install ``shell``'s completion: the line that writes the
    script, and the one before it (which makes its folder)."""
    lines = [line.strip() for line in COMPLETION_DOCS.read_text(encoding="utf-8").splitlines()]
    at = lines.index(
        next(line for line in lines if line.startswith(f"linkpatrol completion {shell} >"))
    )
    return "\n".join(lines[at - 1 : at + 1])


def _fresh_account(tmp_path: Path) -> dict[str, str]:
    """The environment of an account with an empty home, with this ``linkpatrol`` on PATH."""
    home, bin_ = tmp_path / "home", tmp_path / "bin"
    home.mkdir()
    bin_.mkdir()
    command = bin_ / "linkpatrol"
    command.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m linkpatrol "$@"\n', encoding="utf-8")
    command.chmod(0o755)
    path = f"{bin_}{os.pathsep}{os.environ['PATH']}"
    return {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "PATH": path}


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_readme_installs_bash_completion_on_a_fresh_account(tmp_path: Path) -> None:
    program = (
        _readme_install("bash")
        + "\nsource ~/.local/share/bash-completion/completions/linkpatrol && complete -p linkpatrol"
    )
    done = subprocess.run(
        ["bash", "-c", program],
        capture_output=True,
        text=True,
        timeout=60,
        env=_fresh_account(tmp_path),
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("complete ") and done.stdout.split()[-1] == "linkpatrol"


@pytest.mark.skipif(shutil.which("fish") is None, reason="needs fish")
def test_the_readme_installs_fish_completion_on_a_fresh_account(tmp_path: Path) -> None:
    env = _fresh_account(tmp_path)
    installed = subprocess.run(
        ["bash", "-c", _readme_install("fish")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    (tmp_path / "public").mkdir()

    def complete(line: str) -> list[str]:
        done = subprocess.run(
            ["fish", "-c", f"complete -C '{line}'"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            cwd=tmp_path,
            check=True,
        )
        return [row.split("\t")[0].rstrip("/") for row in done.stdout.splitlines()]

    assert installed.returncode == 0, installed.stderr
    assert complete("linkpatrol ch") == ["check"]
    assert complete("linkpatrol check --root-dir pu") == ["public"]
