"""The table of options, the parser, the configuration keys and ``linkpatrol init`` agree."""

from __future__ import annotations

import argparse
import itertools
import re
import tomllib
from typing import Any

import pytest

from linkpatrol.cli import _command_line, _spelled_out, build_parser
from linkpatrol.config import _SCALAR_KEYS, CONFIG_KEYS, SiteSettings
from linkpatrol.model import AnchorMode, FailOn, RedirectMode, ReportFormat
from linkpatrol.options import BY_KEY, COMMANDS, OPTIONS, Kind, options_of
from linkpatrol.template import NOT_SET, config_template

DEFAULTS = SiteSettings()
IN_WORDS = {"parse_workers", "root_dir"}  # help that says the default in words: one per core


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _template_defaults() -> dict[str, tuple[str, Any]]:
    """Each key of the template that ``init`` writes: the help above it, and its value."""
    lines = config_template(["https://example.org/"]).splitlines()
    found = {}
    for above, line in itertools.pairwise(lines):
        m = re.fullmatch(rf"# (\w+) = (.*?)(   {NOT_SET})?", line)
        if m and above.startswith("# ") and m.group(1) in _SCALAR_KEYS:
            value = tomllib.loads(f"v = {m.group(2)}")["v"]
            found[m.group(1)] = (above[2:], None if m.group(3) else value)
    return found


def test_every_config_key_has_exactly_one_option() -> None:
    keys = [option.key for option in OPTIONS if option.key]

    assert sorted(keys) == sorted(set(keys)) == sorted(_SCALAR_KEYS)
    assert set(CONFIG_KEYS) == set(keys) | {"rule", "rewrite", "tls", "plugin"}
    for option in OPTIONS:
        assert bool(option.key) == bool(option.field), option.flags
        if option.field:
            assert hasattr(DEFAULTS, option.field), option.field
            assert _SCALAR_KEYS[option.key] == (option.convert, option.field)


def test_every_option_is_in_its_commands_parser_with_its_help() -> None:
    commands = _commands()

    assert list(commands) == [name for name, _ in COMMANDS]
    for name, parser in commands.items():
        shown = {
            tuple(a.option_strings) or (a.dest,): a.help
            for a in parser._actions
            if a.help != argparse.SUPPRESS and a.dest != "help"
        }
        expected = {option.flags: option.help_for(name) or None for option in options_of(name)}
        assert shown == expected, name


def test_every_option_of_check_is_in_the_template_with_its_help_and_default() -> None:
    written = _template_defaults()

    for option in options_of("check"):
        if not option.key or option.key == "start":
            continue
        help_, value = written[option.key]
        assert help_ == (option.key_help or option.help), option.key
        default = getattr(DEFAULTS, option.field)
        if value is None:  # not set by default: an example that reads
            assert default is None and option.example is not None, option.key
            option.convert(option.example)
        else:
            assert option.convert(value) == default, option.key
    assert set(written) == set(BY_KEY) - {"start"}


def test_a_default_a_help_text_names_is_the_settings_default() -> None:
    for option in OPTIONS:
        m = re.search(r"\(default:? ([^)]+)\)", option.help)
        if not option.field or m is None or option.key in IN_WORDS:
            continue
        spelled = m.group(1).removeprefix("./")
        assert option.convert(spelled) == getattr(DEFAULTS, option.field), option.flags


@pytest.mark.parametrize(
    ("argv", "given"),
    [
        (["--check-anchors"], {"check_anchors": AnchorMode.SITE}),
        (["--check-anchors=all"], {"check_anchors": AnchorMode.ALL}),
        (["--fail-on", "warning"], {"fail_on": FailOn.WARNING}),
        (["--redirects", "report"], {"redirects": RedirectMode.REPORT}),
        (["--format", "sarif"], {"format": ReportFormat.SARIF}),
        (["--no-robots", "--no-progress"], {"robots": False, "progress": False}),
        (["-vvv", "-q"], {"verbose": 2, "quiet": True}),
        (["--site", "a", "--site", "b"], {"sites": ("a", "b")}),
        (["--insecure", "Example.org:443"], {"insecure": ("example.org:443",)}),
        (["--from", "me@example.org"], {"from_email": "me@example.org"}),
        (["--max-size", "1k", "--delay", "2m"], {"max_size": 1024, "delay": 120.0}),
    ],
)
def test_the_command_line_sets_the_fields_the_table_names(
    argv: list[str], given: dict[str, Any]
) -> None:
    args = build_parser().parse_args(_spelled_out(["check", "https://example.org/", *argv]))

    assert _command_line(args) == {"start_urls": ("https://example.org/",), **given}
    for field, value in given.items():
        assert type(value) is type(_command_line(args)[field]), field


def test_modes_are_enum_members_from_the_file_and_the_defaults() -> None:
    assert DEFAULTS.check_anchors is AnchorMode.OFF
    assert DEFAULTS.format is ReportFormat.TEXT
    assert BY_KEY["check_anchors"].convert(True) is AnchorMode.SITE
    assert BY_KEY["redirects"].convert("report") is RedirectMode.REPORT
    assert [option.kind for option in OPTIONS if option.bare] == [Kind.CHOICE]
