"""``linkpatrol init``: a commented configuration file with every key and its default."""

from __future__ import annotations

import argparse
import json
from typing import Any

from linkpatrol.config import _SCALAR_KEYS, SiteSettings, field_for, parse_size

# keys whose default is "not set": shown with an example value instead
EXAMPLES: dict[str, Any] = {
    "db": "linkpatrol.db",
    "from": "webmaster@example.org",
    "hooks": "linkpatrol_hooks.py",
    "ca_bundle": "ca.pem",
    "output": "report.html",
    "log": "linkpatrol.log",
    "progress": False,
    "base_url": "https://example.org/",
    "root_dir": "public",
}

# options whose name is not the key's
_OPTION_OF = {"robots": "--no-robots", "progress": "--no-progress", "verbose": "--verbose"}

_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))

_TABLES = """\
# Rules: the first match decides what happens to a URL (by prefix, glob or regex).
# [[rule]]
# prefix = "https://example.org/calendar/"
# action = "check"            # parse, check, record or ignore
#
# Rewrites, applied in order to every URL after its canonical form.
# [[rewrite]]
# regex = "/index\\\\.html$"
# replace = "/"
#
# TLS for one host (or "*"): more trusted CAs, or no verification at all.
# [[tls]]
#   host = "intranet.example.org"   # or host:port
#   ca_bundle = "intranet-ca.pem"
#   verify = true
#
# Options of a plugin named in 'plugins' (see the README's Plugins section).
# [plugin.webhook]
#   url = "https://hooks.example.org/linkpatrol"
#   headers_env = { Authorization = "WEBHOOK_AUTH" }   # header = environment variable
#
# Settings for the URLs under one prefix (the longest matching prefix wins). Headers,
# cookies and basic auth are sent only there; secrets come from environment variables.
# [[site]]
#   prefix = "https://intranet.example.org/docs/"
#   parse = false                   # true: parsed too, as a 'site' prefix
#   headers = { X-Team = "docs" }
#   headers_env = { X-Api-Token = "INTRANET_TOKEN" }   # header = environment variable
#   cookies = { lang = "en" }
#   cookies_env = { session = "INTRANET_SESSION" }
#   username = "bob"                # basic auth, with the password in...
#   password_env = "INTRANET_PASSWORD"
#   proxy = "http://proxy.example.org:3128"
#   user_agent = "linkpatrol (intranet)"
#   timeout = "30s"
#   per_host = 2                    # for the whole host
#   delay = "1s"                    # for the whole host
#   ca_bundle = "intranet-ca.pem"   # or: insecure = true
"""


def _duration(seconds: float) -> str:
    if seconds == 0:
        return "0s"
    for unit, size in _UNITS:
        if seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _size(size: int) -> str:
    for unit, factor in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


def toml_value(key: str, value: Any) -> str:
    """A setting's value as the configuration file spells it."""
    convert = _SCALAR_KEYS[key][0]
    if convert is parse_size:
        return json.dumps(_size(value))
    if isinstance(value, float) and convert(_duration(value)) == value:
        return json.dumps(_duration(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, frozenset | tuple | list):
        return json.dumps(sorted(value) if isinstance(value, frozenset) else list(value))
    return json.dumps(value)


def option_help(parser: argparse.ArgumentParser, command: str) -> dict[str, str]:
    """Each configuration key's help, taken from the option of ``command`` that sets it."""
    found: dict[str, str] = {}
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[
        command
    ]
    for action in sub._actions:
        if not action.help or action.help == argparse.SUPPRESS:
            continue
        names = action.option_strings or [action.dest]
        for key in _SCALAR_KEYS:
            option = _OPTION_OF.get(key, "--" + key.replace("_", "-"))
            if option in names or (key == "start" and action.dest == "urls"):
                found.setdefault(key, action.help)
    return found


def config_template(start_urls: list[str], parser: argparse.ArgumentParser) -> str:
    """The file ``linkpatrol init`` writes: the start URLs set, every other key commented."""
    defaults = SiteSettings()
    helps = option_help(parser, "check")
    lines = [
        "# linkpatrol configuration (TOML), read from ./linkpatrol.toml or --config FILE.",
        "# Every key is listed with its default value, commented out: remove the '#' to",
        "# change one. Options on the command line override this file.",
        "",
        "# the start URLs: the crawl begins here (URLs given on the command line replace them)",
        f"start = {json.dumps(start_urls)}",
        "",
    ]
    for key in _SCALAR_KEYS:
        if key == "start":
            continue
        value = getattr(defaults, field_for(key))
        lines.append(f"# {helps[key]}")
        if value is None:
            lines.append(f"# {key} = {toml_value(key, EXAMPLES[key])}   (not set by default)")
        else:
            lines.append(f"# {key} = {toml_value(key, value)}")
        lines.append("")
    lines.append(_TABLES)
    return "\n".join(lines)


__all__ = ["EXAMPLES", "config_template", "option_help", "toml_value"]
