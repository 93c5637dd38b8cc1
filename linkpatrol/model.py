"""The small vocabulary every part shares: actions, states, exit codes, errors."""

from __future__ import annotations

import enum

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
MARKDOWN_TYPES = frozenset({"text/markdown", "text/x-markdown"})
PAGE_TYPES = HTML_TYPES | MARKDOWN_TYPES  # documents whose links and anchors are read


class Action(enum.StrEnum):
    """What to do with a URL, decided before it is ever requested."""

    PARSE = "parse"
    CHECK = "check"
    RECORD = "record"
    IGNORE = "ignore"


class State(enum.StrEnum):
    """A URL's verdict in one pass."""

    OK = "ok"
    BROKEN = "broken"
    WARNING = "warning"
    REDIRECT = "redirect"
    DISALLOWED = "disallowed"
    UNCHECKED = "unchecked"


# members by value, for reading the memory's rows: a dictionary look-up, where calling the
# enum (Action("check")) runs Python code for each of a big report's rows
ACTIONS: dict[str, Action] = {a.value: a for a in Action}
STATES: dict[str, State] = {s.value: s for s in State}


class ExitCode(enum.IntEnum):
    CLEAN = 0
    BROKEN = 1
    USAGE = 2
    STOPPED = 3


class LinkpatrolError(Exception):
    """An error the user can act on: printed as one line, never as a traceback."""

    exit_code: ExitCode = ExitCode.USAGE


class ConfigError(LinkpatrolError):
    """Bad options or configuration file."""


class StoreError(LinkpatrolError):
    """The memory database cannot be used as asked."""
