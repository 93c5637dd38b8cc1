"""Which URLs belong to the site and what to do with each: rewrites, rules, hooks, limits.

The decision order is: the user's hook, then the ordered ``[[rule]]`` entries, then the
defaults (inside the site: parse; other http/https: check; other schemes: record).
"""

from __future__ import annotations

import fnmatch
import importlib.util
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from urllib.parse import urlsplit

from linkpatrol.addresses import site_hosts
from linkpatrol.config import SiteSettings
from linkpatrol.model import Action, ConfigError
from linkpatrol.rules import Verdict, chosen_action, default_action, judge_host, trap
from linkpatrol.urls import (
    BadURL,
    canonical,
    has_userinfo,
    host,
    is_http,
    is_valid,
    path_depth,
    site_prefix,
)


def _bare_host(url: str) -> tuple[str, int | None]:
    """Host without a leading ``www.``, with the port when it is not the default."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return (host[4:] if host.startswith("www.") else host), parts.port


class HookError(ConfigError):
    """The user's hooks file failed: a configuration error, reported in one line."""


def load_hooks(path: str) -> ModuleType:
    """Import the hooks file; it is code, so it must not be writable by other users."""
    file = Path(path)
    try:
        mode = file.stat().st_mode
    except OSError as exc:
        raise HookError(f"{path}: cannot read hooks file: {exc.strerror}") from None
    if mode & (stat.S_IWGRP | stat.S_IWOTH) and os.name == "posix":
        raise HookError(f"{path}: hooks file is writable by other users; refusing to run it")
    spec = importlib.util.spec_from_file_location("linkpatrol_user_hooks", file)
    if spec is None or spec.loader is None:
        raise HookError(f"{path}: cannot load hooks file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise HookError(f"{path}: hooks file raised {type(exc).__name__}: {exc}") from None
    for name in ("action", "rewrite"):
        if hasattr(module, name) and not callable(getattr(module, name)):
            raise HookError(f"{path}: '{name}' must be a function")
    if not hasattr(module, "action") and not hasattr(module, "rewrite"):
        raise HookError(f"{path}: defines neither action(url) nor rewrite(url)")
    return module


@dataclass(frozen=True, slots=True)
class _CompiledRule:
    matches: Callable[[str], bool]
    action: Action


def _compile_rule(kind: str, pattern: str, action: Action, except_for: str = "") -> _CompiledRule:
    rule = _compile_match(kind, pattern, action)
    if not except_for:
        return rule
    exception = re.compile(except_for)
    matches = rule.matches
    return _CompiledRule(lambda url: matches(url) and exception.search(url) is None, action)


def _compile_match(kind: str, pattern: str, action: Action) -> _CompiledRule:
    if kind == "prefix":
        return _CompiledRule(lambda url: url.startswith(pattern), action)
    regex = re.compile(fnmatch.translate(pattern) if kind == "glob" else pattern)
    if kind == "glob":
        return _CompiledRule(lambda url: regex.match(url) is not None, action)
    if kind == "unless":
        return _CompiledRule(lambda url: regex.search(url) is None, action)
    return _CompiledRule(lambda url: regex.search(url) is not None, action)


class Policy:
    """Turns raw link text into a canonical URL and decides its action."""

    def __init__(self, settings: SiteSettings) -> None:
        self.settings = settings
        self._rewrites = [(re.compile(r.regex), r.replace) for r in settings.rewriting]
        self._rules = [
            _compile_rule(r.kind, r.pattern, r.action, r.except_for) for r in settings.rule_book
        ]
        self._hooks = load_hooks(settings.hooks) if settings.hooks else None
        self._hook_action = getattr(self._hooks, "action", None)
        self._hook_rewrite = getattr(self._hooks, "rewrite", None)
        self.mount = settings.mount
        prefixes: list[str] = []
        for start in self._starts(settings.start_urls):
            # a local file is parsed alone; the files it links to are only checked
            prefixes.append(start if start.startswith("file:") else site_prefix(start))
        for url in settings.sites:
            try:
                prefixes.append(canonical(url))
            except BadURL as exc:
                raise ConfigError(f"site prefix {url!r}: {exc}") from None
        self.site_prefixes: tuple[str, ...] = tuple(dict.fromkeys(prefixes))
        # --no-recurse: the pages parsed, exactly (the start URLs and where they redirect)
        self.only: frozenset[str] | None = None
        if not settings.recurse:
            self.only = frozenset(self._starts(settings.start_urls))
        self.grown: tuple[str, ...] = ()  # the prefixes the site grew by during the pass
        self.named_hosts = site_hosts(settings)  # the hosts the user wrote

    def _starts(self, values: Iterable[str]) -> list[str]:
        """The start URLs in their canonical form (a start value that is none is left to
        the engine to report)."""
        starts: list[str] = []
        for url in values:
            try:
                starts.append(self.normalize(url))
            except BadURL:
                continue
        return starts

    def normalize(
        self, raw: str, base: str | None = None, query_encoding: str | None = None
    ) -> str:
        """Canonical form, then the rewrites (--remap, the config's, then the hook's),
        canonical again.

        Under a local root, links resolve as on the web server that will serve it, and
        what lands under that server's address is the file it will serve. A link on a
        page that is not in UTF-8 has its query sent in the page's ``query_encoding``.
        """
        mount = self.mount
        if mount is None:
            url = canonical(raw, base, query_encoding)
        else:
            url = mount.resolve(raw, base, query_encoding)
        if not self._rewrites and self._hook_rewrite is None:
            return url
        rewritten = url
        for regex, replacement in self._rewrites:
            rewritten = regex.sub(replacement, rewritten)
        if self._hook_rewrite is not None:
            try:
                result = self._hook_rewrite(rewritten)
            except Exception as exc:
                raise HookError(
                    f"{self.settings.hooks}: rewrite({rewritten!r}) raised "
                    f"{type(exc).__name__}: {exc}"
                ) from None
            if result is not None:
                if not isinstance(result, str):
                    raise HookError(f"{self.settings.hooks}: rewrite() must return a string")
                rewritten = result
        return rewritten if rewritten == url else canonical(rewritten)

    def extend_site(self, start: str, target: str) -> bool:
        """A start URL redirected to ``target``: the target's folder joins the site.

        Only on the same host and port, or its ``www.`` twin (``example.org`` to
        ``www.example.org``, ``http`` to ``https``, ``/old/`` to ``/new/``); a redirect to
        another host, such as a login service, leaves the site as it was. With
        ``--no-recurse`` the page it lands on joins the pages parsed, on any host.
        """
        if not (is_http(start) and is_http(target)):
            return False
        if self.only is not None:  # the page a start URL lands on is parsed, wherever it is
            return start in self.only and self.add_sites((target,))
        if _bare_host(start) != _bare_host(target):
            return False
        if target.startswith(self.site_prefixes):
            return False
        return self.add_sites((site_prefix(target),))

    def add_sites(self, prefixes: Iterable[str]) -> bool:
        """The site grew by these prefixes (here, in an earlier run of the pass, or in
        another worker): whether any of them is new."""
        only = self.only
        known = self.site_prefixes if only is None else only
        new = tuple(p for p in dict.fromkeys(prefixes) if p not in known)
        if not new:
            return False
        if only is None:
            self.site_prefixes = (*self.site_prefixes, *new)
        else:  # --no-recurse: the site grows by single pages
            self.only = only.union(new)
        self.grown = (*self.grown, *new)
        return True

    def in_site(self, url: str) -> bool:
        return url.startswith(self.site_prefixes)

    def action(self, url: str, invalid: bool = False) -> Action:
        """The hook's answer, else the first matching ``[[rule]]``'s, else the default.

        A link that is no URL (``invalid``) is decided on its text as written, by the same
        hook and rules; by default it is checked, that is, reported as invalid."""
        chosen = self._chosen(url)
        if invalid:
            return Action.CHECK if chosen is None else chosen
        local = self._local(url)
        if chosen is None:
            return default_action(url, self.site_prefixes, local, self.settings.offline, self.only)
        return chosen_action(chosen, url, local)

    def remembered_action(self, url: str) -> Action:
        """The action of a link the memory holds: a URL, or an invalid link as written
        (which no default records)."""
        action = self.action(url)
        if action is Action.RECORD and not is_valid(url):
            return self.action(url, invalid=True)
        return action

    def _chosen(self, url: str) -> Action | None:
        """What the hooks file's action(), else the first matching ``[[rule]]``, says."""
        if self._hook_action is not None:
            try:
                answer = self._hook_action(url)
            except Exception as exc:
                raise HookError(
                    f"{self.settings.hooks}: action({url!r}) raised {type(exc).__name__}: {exc}"
                ) from None
            if answer is not None:
                try:
                    return Action(answer)
                except ValueError:
                    raise HookError(
                        f"{self.settings.hooks}: action({url!r}) returned {answer!r}, "
                        "not one of parse, check, record, ignore"
                    ) from None
        for rule in self._rules:
            if rule.matches(url):
                return rule.action
        return None

    def _local(self, url: str) -> bool:
        """A ``file:`` URL under the checked folder."""
        mount = self.mount
        return url.startswith("file:") and mount is not None and mount.path_of(url) is not None

    def host_verdict(self, url: str) -> Verdict | None:
        """What a web URL's host alone says of it, before any DNS query (see
        :func:`~linkpatrol.rules.judge_host`)."""
        return judge_host(host(url), self.named_hosts) if is_http(url) else None

    def limit_reason(self, url: str) -> str | None:
        """Why a URL is not requested although its action says so (a crawler-trap guard)."""
        web = self.mount.to_web(url) if self.mount is not None else None
        return trap(has_userinfo(url), path_depth(web or url), self.settings.max_depth)
