"""``linkpatrol init``: a commented configuration file with every key and its default."""

from __future__ import annotations

import json
from typing import Any

from linkpatrol.config import SiteSettings
from linkpatrol.options import OPTIONS, Option, parse_size

# after a key with no default: the value shown is an example, uncommented it sets the key
NOT_SET = "# an example: not set by default"

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


def toml_value(option: Option, value: Any) -> str:
    """A setting's value as the configuration file spells it."""
    if option.convert is parse_size:
        return json.dumps(_size(value))
    if isinstance(value, float) and option.convert(_duration(value)) == value:
        return json.dumps(_duration(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, frozenset | tuple | list):
        return json.dumps(sorted(value) if isinstance(value, frozenset) else list(value))
    return json.dumps(value)


def config_template(start_urls: list[str]) -> str:
    """The file ``linkpatrol init`` writes: the start URLs set, every other key commented,
    under the help of the option that sets it."""
    defaults = SiteSettings()
    lines = [
        "# linkpatrol configuration (TOML), read from ./linkpatrol.toml or --config FILE.",
        "# Every key is listed with its default value, commented out: remove the '#' to",
        "# change one (a key with no default shows an example). Options on the command",
        "# line override this file.",
        "",
        "# where the crawl begins: URLs, folders or files (paths from the folder 'check' runs",
        "# in); start values given on the command line replace these",
        f"start = {json.dumps(start_urls)}",
        "",
    ]
    for option in OPTIONS:
        if not option.key or option.key == "start":
            continue
        value = getattr(defaults, option.field)
        lines.append(f"# {option.key_help or option.help}")
        if value is None:
            example = toml_value(option, option.example)
            lines.append(f"# {option.key} = {example}   {NOT_SET}")
        else:
            lines.append(f"# {option.key} = {toml_value(option, value)}")
        lines.append("")
    lines.append(_TABLES)
    return "\n".join(lines)


__all__ = ["NOT_SET", "config_template", "toml_value"]
