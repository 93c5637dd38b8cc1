"""Running plugins in the crawl process: loading them by name, calling their events.

A plugin is enabled only by being named (``plugins`` in the configuration, ``--plugins``):
a plain name is looked up among the installed entry points of the group
``linkpatrol.plugins``, ``package.module:Class`` is imported. Installing a package never
turns a plugin on by itself.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from linkpatrol.model import ConfigError, Outcome
from linkpatrol.observer import CrawlStats, Observer
from linkpatrol.plugins import GROUP, Plugin, Verdict
from linkpatrol.report import Report
from linkpatrol.store import PassInfo, Store

MAX_FIELDS_BYTES = 1_000_000  # the JSON of one plugin's report fields
DISABLED = "disabled"  # the report field of a plugin that failed: what happened


def _one_line(text: str, limit: int = 300) -> str:
    words = " ".join(text.split())
    return words if len(words) <= limit else words[: limit - 1] + "…"


def _failure(exc: BaseException) -> str:
    return _one_line(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)


def installed() -> list[str]:
    """The names of the plugins installed as entry points."""
    from importlib.metadata import entry_points  # a crawl without plugins never reads them

    return sorted({ep.name for ep in entry_points(group=GROUP)})


def plugin_class(name: str) -> type[Plugin]:
    """The class a plugin name stands for (raises ConfigError, one line, saying why not)."""
    where = f"plugin {name!r}"
    if ":" in name:
        module_name, _, attribute = name.partition(":")
        if not module_name or not attribute:
            raise ConfigError(f"{where}: name an installed plugin or give package.module:Class")
        try:
            found: Any = importlib.import_module(module_name)
            for part in attribute.split("."):
                found = getattr(found, part)
        except Exception as exc:
            raise ConfigError(f"{where}: cannot load it: {_failure(exc)}") from None
    else:
        from importlib.metadata import entry_points

        points = entry_points(group=GROUP, name=name)
        if not points:
            known = ", ".join(installed()) or "none"
            raise ConfigError(
                f"{where}: no such plugin installed (installed: {known}); "
                "or give package.module:Class"
            )
        try:
            found = next(iter(points)).load()
        except Exception as exc:
            raise ConfigError(f"{where}: cannot load it: {_failure(exc)}") from None
    if not (isinstance(found, type) and issubclass(found, Plugin)):
        raise ConfigError(f"{where}: not a subclass of linkpatrol.plugins.Plugin")
    return found


def load_plugins(
    names: Sequence[str], options: Mapping[str, Mapping[str, Any]] | None = None
) -> list[Plugin]:
    """One instance of each named plugin, with its options, in the order named."""
    plugins = []
    for name in dict.fromkeys(names):
        cls = plugin_class(name)
        try:
            plugin = cls(dict((options or {}).get(name, {})))
        except ValueError as exc:  # the plugin's word on its options
            raise ConfigError(f"plugin {name!r}: {_one_line(str(exc))}") from None
        except Exception as exc:
            raise ConfigError(f"plugin {name!r}: cannot start: {_failure(exc)}") from None
        plugin.name = name
        plugins.append(plugin)
    return plugins


class PluginObserver(Observer):
    """Passes what the crawl does on to another observer and to the plugins.

    A plugin whose event raises is named once (a note), disabled, and its report fields
    become ``{"disabled": what happened}``; the other plugins and the crawl go on.
    """

    def __init__(self, inner: Observer, plugins: Sequence[Plugin]) -> None:
        self.inner = inner
        self.plugins = list(plugins)
        self.failed: dict[str, str] = {}
        self.crawling = True
        for plugin in self.plugins:
            plugin._say = self._speaker(plugin.name)

    def _speaker(self, name: str) -> Callable[[str], None]:
        return lambda message: self.inner.note(f"plugin {name}: {_one_line(message, 1000)}")

    def _each(self, event: str, call: Callable[[Plugin], object]) -> None:
        for plugin in self.plugins:
            if plugin.name in self.failed:
                continue
            try:
                call(plugin)
            except Exception as exc:
                self._disable(plugin, f"{event} raised {_failure(exc)}")

    def _disable(self, plugin: Plugin, what: str) -> None:
        self.failed[plugin.name] = what
        goes_on = ", the crawl goes on" if self.crawling else ""
        self.inner.note(f"plugin {plugin.name}: {what}; plugin disabled{goes_on}")

    # ---- the crawl's events --------------------------------------------------------------

    def pass_started(self, info: PassInfo) -> None:
        self.inner.pass_started(info)
        self._each("pass_started", lambda p: p.pass_started(info))

    def url_checked(self, url: str, outcome: Outcome) -> None:
        self.inner.url_checked(url, outcome)
        if outcome.dropped:
            return
        verdict = Verdict.of(outcome)
        self._each("url_checked", lambda p: p.url_checked(url, verdict))
        if outcome.parsed and outcome.links is not None:
            links = tuple(outcome.links)  # the plugins' own: the memory writes the list

            def discovered(plugin: Plugin) -> None:
                for link in links:
                    plugin.url_discovered(url, link)

            self._each("page_parsed", lambda p: p.page_parsed(url, links))
            self._each("url_discovered", discovered)

    def requesting(self, method: str, url: str, why: str) -> None:
        self.inner.requesting(method, url, why)

    def progress(self, stats: CrawlStats) -> None:
        self.inner.progress(stats)

    def note(self, message: str) -> None:
        self.inner.note(message)

    # ---- the end of the run --------------------------------------------------------------

    def finish(self, store: Store, info: PassInfo, report: Report) -> None:
        """Tell the plugins the run is over, keep their report fields with the pass in the
        memory, and show the report what the memory now holds."""
        self.crawling = False
        self._each("pass_finished", lambda p: p.pass_finished(info, report))
        fields: dict[str, Any] = {}
        for plugin in self.plugins:
            if plugin.name not in self.failed:
                try:
                    given = _checked_fields(plugin.report_fields())
                except Exception as exc:
                    self._disable(plugin, f"report_fields raised {_failure(exc)}")
                else:
                    if given:
                        fields[plugin.name] = given
            if plugin.name in self.failed:
                fields[plugin.name] = {DISABLED: self.failed[plugin.name]}
        if fields:
            store.save_plugin_fields(info.id, fields)
        report.plugins = store.plugin_fields(info.id)


def _checked_fields(given: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Report fields as the memory will hold them: JSON, keyed by text, of a bounded size."""
    if given is None:
        return None
    if not isinstance(given, Mapping) or not all(isinstance(k, str) for k in given):
        raise TypeError(f"expected a mapping with text keys, got {type(given).__name__}")
    text = json.dumps(dict(given), ensure_ascii=False, allow_nan=False)
    if len(text.encode("utf-8")) > MAX_FIELDS_BYTES:
        raise ValueError(f"report fields larger than {MAX_FIELDS_BYTES} bytes of JSON")
    fields: dict[str, Any] = json.loads(text)
    return fields


__all__ = ["PluginObserver", "installed", "load_plugins", "plugin_class"]
