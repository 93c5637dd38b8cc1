"""Settings: defaults, the TOML configuration file, and the command line, merged in that order.

Every command-line option has a configuration key of the same name (``max-depth`` or
``max_depth``), both declared once in :mod:`linkpatrol.options`; the command line wins
over the file, the file over the defaults.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linkpatrol import __version__
from linkpatrol.local import Mount
from linkpatrol.model import (
    HTTP_TOKEN_RE,
    Action,
    AnchorMode,
    ConfigError,
    FailOn,
    RedirectMode,
    ReportFormat,
    ReportOptions,
    Soft404Mode,
)
from linkpatrol.options import (
    ARCHIVE_ENDPOINT,
    BY_KEY,
    DEFAULT_CONFIG,
    Converter,
    any_of,
    did_you_mean,
    parse_duration,
    parse_size,
    parse_status_list,
    remap_parts,
    seconds,
    string,
    true_or_false,
    whole,
)
from linkpatrol.proxies import parse_proxy_url
from linkpatrol.rules import RuleOptions
from linkpatrol.tls import check_ca_bundle, format_host, parse_host
from linkpatrol.urls import BadURL, canonical, has_userinfo, is_http


@dataclass(frozen=True, slots=True)
class Rule:
    """One ordered ``[[rule]]``: URLs matching it get its action."""

    kind: str  # "prefix" | "glob" | "regex" | "unless" (the regex does not match: --include)
    pattern: str
    action: Action
    except_for: str = ""  # a regex: the URLs it matches are not this rule's (--include)


@dataclass(frozen=True, slots=True)
class Rewrite:
    """One ordered ``[[rewrite]]``: ``re.sub(regex, replace, url)``."""

    regex: str
    replace: str


@dataclass(frozen=True, slots=True)
class TlsHost:
    """One ``[[tls]]`` entry: how to verify the certificates of one host (or ``*``)."""

    host: str  # "name", "name:port" or "*", as tls.format_host spells it
    ca_bundle: str | None = None
    verify: bool = True


@dataclass(frozen=True, slots=True)
class SiteTable:
    """One ``[[site]]`` table: what requests to URLs under ``prefix`` carry.

    Secrets are not here, only the names of the environment variables holding them
    (``headers_env``, ``cookies_env``, ``password_env``): they are read when a crawl
    starts (see :mod:`linkpatrol.sites`), so these settings can be copied and shown freely.
    """

    prefix: str  # canonical http(s) URL prefix
    where: str = ""  # "FILE: site #N", for messages
    parse: bool = False
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    headers_env: tuple[tuple[str, str], ...] = ()  # (header, environment variable)
    cookies: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    cookies_env: tuple[tuple[str, str], ...] = ()  # (cookie, environment variable)
    username: str | None = None
    password_env: str | None = None
    proxy: str | None = None
    user_agent: str | None = None
    timeout: float | None = None
    per_host: int | None = None
    delay: float | None = None
    ca_bundle: str | None = None
    insecure: bool = False
    robots: bool = True  # false: robots.txt does not speak for these URLs
    render: bool | None = None  # its pages loaded in the browser too (None: as --render says)


@dataclass(frozen=True, slots=True)
class SiteSettings:
    """Everything that decides what the crawl does; plain data, so worker processes get a copy."""

    start_urls: tuple[str, ...] = ()
    sites: tuple[str, ...] = ()
    db: str = "linkpatrol.db"
    db_wait: float = 60.0
    concurrency: int = 64
    per_host: int = 8
    delay: float = 0.0
    timeout: float = 15.0
    retries: int = 2
    second_look: float = 5.0  # pause before transient failures are asked again (0: never)
    max_size: int = 10 * 1024 * 1024
    max_depth: int = 20
    max_urls: int = 100_000
    max_similar: int = 3_000
    max_requests: int = 0
    max_time: float = 0.0
    redirects: RedirectMode = RedirectMode.FOLLOW
    robots: bool = True
    user_agent: str = f"linkpatrol/{__version__}"
    from_email: str | None = None
    recheck_good: float = 0.0
    follow_ghost: float = 7 * 86400.0
    report_after: float = 0.0
    damp_new: bool = False  # never-good URLs wait for --report-after too
    accept: frozenset[int] = frozenset()
    warn: frozenset[int] = frozenset()
    broken: frozenset[int] = frozenset()
    rules: tuple[Rule, ...] = ()
    rewrites: tuple[Rewrite, ...] = ()
    exclude: tuple[str, ...] = ()  # regexes of URLs ignored, ahead of the rules
    include: tuple[str, ...] = ()  # regexes: the URLs none matches are ignored
    remap: tuple[str, ...] = ()  # 'REGEX REPLACEMENT' rewrites, ahead of the others
    hooks: str | None = None
    plugins: tuple[str, ...] = ()  # the plugins enabled, by name
    plugin_options: dict[str, dict[str, Any]] = field(default_factory=dict)  # [plugin.NAME]
    format: ReportFormat = ReportFormat.TEXT
    output: str | None = None
    xref: bool = False
    fail_on: FailOn = FailOn.BROKEN
    baseline: str | None = None  # an earlier run's JSON report, what "new" is measured against
    only_new: bool = False
    graph_hosts: bool = False
    quiet: bool = False
    verbose: int = 0
    log: str | None = None
    progress: bool | None = None
    parse_workers: int = 0
    check_anchors: AnchorMode = AnchorMode.OFF
    ca_bundle: str | None = None
    insecure: tuple[str, ...] = ()
    tls: tuple[TlsHost, ...] = ()
    cert_expiry: int = 14  # days ahead a host's certificate ending is warned of (0: never)
    render: bool = False  # the site's pages loaded in the browser too, their DOM's links read
    render_pages: int = 2  # pages rendered at once
    render_timeout: float = 10.0  # for a page to settle in the browser
    browser: str | None = None  # the Chromium to drive (None: looked up on the PATH)
    soft_404: Soft404Mode = Soft404Mode.SITE  # whose good answers are compared with a probe's
    require_https: bool = False  # a good http: URL whose host serves https: is a warning
    site_tables: tuple[SiteTable, ...] = ()
    no_private: bool = False
    proxy: str | None = None  # None: the environment's; "": none
    base_url: str | None = None
    root_dir: str | None = None
    offline: bool = False
    recurse: bool = True  # False: the start values' links are checked, nothing else parsed
    sitemap: tuple[str, ...] = ()
    archived: bool = False  # broken links once good: their copy in the web archive
    archive_endpoint: str = ARCHIVE_ENDPOINT
    mount: Mount | None = None  # the local root, set from the start values
    # the start values as the user gave them, for reports to name ("./public", "1,234
    # URLs from stdin"), set with the start URLs they became
    inputs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """The modes as their enums, however a caller of the library spelled them."""
        for name, kind in _MODES:
            value = getattr(self, name)
            if not isinstance(value, kind):
                object.__setattr__(self, name, kind(value))

    @property
    def rule_book(self) -> tuple[Rule, ...]:
        """The rules in the order they are tried: ``--exclude`` and ``--include``, then the
        ``[[rule]]`` entries.

        As lychee has them: an include wins over the excludes; alone, the includes are the
        only URLs checked; beside excludes, they are the exceptions to them.
        """
        included = any_of(self.include) if self.include else ""
        excluded = tuple(Rule("regex", p, Action.IGNORE, included) for p in self.exclude)
        if included and not excluded:
            excluded = (Rule("unless", included, Action.IGNORE),)
        return (*excluded, *self.rules)

    @property
    def rewriting(self) -> tuple[Rewrite, ...]:
        """The rewrites in the order they are applied: ``--remap``, then ``[[rewrite]]``."""
        return (*(Rewrite(*remap_parts(remap)) for remap in self.remap), *self.rewrites)


_MODES: tuple[tuple[str, type[enum.StrEnum]], ...] = (
    ("check_anchors", AnchorMode),
    ("soft_404", Soft404Mode),
    ("redirects", RedirectMode),
    ("fail_on", FailOn),
    ("format", ReportFormat),
)


FORMATS = tuple(member.value for member in ReportFormat)  # the report formats' names
FAIL_ON = tuple(member.value for member in FailOn)

# key -> (converter, settings field), for the keys that hold one value or a list of them
_SCALAR_KEYS: dict[str, tuple[Converter, str]] = {
    key: (option.convert, option.field) for key, option in BY_KEY.items()
}

CONFIG_KEYS = (*sorted(_SCALAR_KEYS), "rule", "rewrite", "tls", "plugin")


def _check_regex(pattern: str, where: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"{where}: invalid regex {pattern!r}: {exc}") from None


def _tables(
    value: Any, where: str, name: str, keys: set[str], strings: bool = False
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each entry of an array of tables (``[[name]]``) with its place, unknown keys refused.

    With ``strings``, plain strings in the array are let through (not yielded).
    """
    if not isinstance(value, list):
        raise ConfigError(f"{where}: '{name}' must be an array of tables ([[{name}]])")
    for i, entry in enumerate(value, 1):
        here = f"{where}: {name} #{i}"
        if strings and isinstance(entry, str):
            continue
        if not isinstance(entry, dict):
            raise ConfigError(f"{here}: must be a table")
        unknown = sorted(set(entry) - keys)
        if unknown:
            hint = did_you_mean(unknown[0], keys)
            raise ConfigError(f"{here}: unknown key '{unknown[0]}'{hint}")
        yield here, entry


def _rules(value: Any, where: str) -> tuple[Rule, ...]:
    rules = []
    for here, entry in _tables(value, where, "rule", {"prefix", "glob", "regex", "action"}):
        kinds = [k for k in ("prefix", "glob", "regex") if k in entry]
        if len(kinds) != 1:
            raise ConfigError(f"{here}: needs exactly one of prefix, glob, regex")
        kind = kinds[0]
        pattern = entry[kind]
        if not isinstance(pattern, str) or not pattern:
            raise ConfigError(f"{here}: '{kind}' must be a non-empty string")
        if kind == "regex":
            _check_regex(pattern, here)
        action_name = entry.get("action")
        try:
            action = Action(str(action_name))
        except ValueError:
            names = ", ".join(a.value for a in Action)
            raise ConfigError(
                f"{here}: 'action' must be one of {names}, got {action_name!r}"
            ) from None
        rules.append(Rule(kind, pattern, action))
    return tuple(rules)


def _rewrites(value: Any, where: str) -> tuple[Rewrite, ...]:
    rewrites = []
    for here, entry in _tables(value, where, "rewrite", {"regex", "replace"}):
        regex, replace = entry.get("regex"), entry.get("replace")
        if not isinstance(regex, str) or not isinstance(replace, str):
            raise ConfigError(f"{here}: needs 'regex' and 'replace' strings")
        _check_regex(regex, here)
        try:
            re.compile(regex).sub(replace, "")
        except (re.error, IndexError) as exc:
            raise ConfigError(f"{here}: invalid replacement {replace!r}: {exc}") from None
        rewrites.append(Rewrite(regex, replace))
    return tuple(rewrites)


def _tls_hosts(value: Any, where: str, base_dir: Path) -> tuple[TlsHost, ...]:
    entries = []
    for here, entry in _tables(value, where, "tls", {"host", "ca_bundle", "verify"}):
        host, bundle, verify = entry.get("host"), entry.get("ca_bundle"), entry.get("verify", True)
        if not isinstance(host, str):
            raise ConfigError(f"{here}: needs 'host', a host name, host:port or \"*\"")
        try:
            host = format_host(parse_host(host))
        except ValueError as exc:
            raise ConfigError(f"{here}: 'host': {exc}") from None
        if bundle is not None and not isinstance(bundle, str):
            raise ConfigError(f"{here}: 'ca_bundle' must be a file name, got {bundle!r}")
        if not isinstance(verify, bool):
            raise ConfigError(f"{here}: 'verify' must be true or false, got {verify!r}")
        if bundle is not None:
            bundle = _check_ca_bundle(str(base_dir / bundle), f"{here}: 'ca_bundle'")
        entries.append(TlsHost(host, bundle, verify))
    return tuple(entries)


_SITE_KEYS = frozenset(
    {
        "prefix",
        "parse",
        "headers",
        "headers_env",
        "cookies",
        "cookies_env",
        "username",
        "password_env",
        "proxy",
        "user_agent",
        "timeout",
        "per_host",
        "delay",
        "ca_bundle",
        "insecure",
        "robots",
        "render",
    }
)
_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_UNSENDABLE_RE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # what no header value may hold


def _has_tables(value: Any) -> bool:
    """True when ``site`` holds ``[[site]]`` tables, not only prefixes."""
    return isinstance(value, list) and any(isinstance(v, dict) for v in value)


def _site_tables(
    value: Any, where: str, base_dir: Path
) -> tuple[tuple[str, ...], tuple[SiteTable, ...]]:
    """``site``: prefixes to parse (strings, as ``--site``) and ``[[site]]`` tables."""
    prefixes = [v for v in value if isinstance(v, str)]
    tables: list[SiteTable] = []
    seen: dict[str, str] = {}
    spelled = _SITE_KEYS | {key.replace("_", "-") for key in _SITE_KEYS}
    for here, raw in _tables(value, where, "site", set(spelled), strings=True):
        entry = {key.replace("-", "_"): v for key, v in raw.items()}
        if len(entry) < len(raw):
            raise ConfigError(f"{here}: a key given twice (with '-' and with '_')")
        table = _site_table(entry, here, base_dir)
        if table.prefix in seen:
            raise ConfigError(f"{here}: the same prefix as {seen[table.prefix]}: {table.prefix}")
        seen[table.prefix] = here.rpartition(": ")[2]
        tables.append(table)
        if table.parse:
            prefixes.append(table.prefix)
    return tuple(prefixes), tuple(tables)


def _site_table(entry: dict[str, Any], here: str, base_dir: Path) -> SiteTable:
    def get(key: str, convert: Any) -> Any:
        if key not in entry:
            return None
        try:
            return convert(entry[key])
        except ValueError as exc:
            raise ConfigError(f"{here}: '{key}': {exc}") from None

    prefix = get("prefix", _site_prefix)
    if prefix is None:
        raise ConfigError(f"{here}: needs 'prefix', an http:// or https:// URL prefix")
    headers = get("headers", _header_table) or ()
    headers_env = get("headers_env", _env_table(_header_name)) or ()
    cookies = get("cookies", _cookie_table) or ()
    cookies_env = get("cookies_env", _env_table(_cookie_name)) or ()
    username = get("username", _username)
    password_env = get("password_env", _env_name)
    user_agent = get("user_agent", _header_value)
    if (username is None) != (password_env is None):
        raise ConfigError(f"{here}: basic auth needs both 'username' and 'password_env'")
    sent = [name for name, _ in (*headers, *headers_env)]
    if user_agent is not None:
        sent.append("User-Agent")
    if cookies or cookies_env:
        sent.append("Cookie")
    if username is not None:
        sent.append("Authorization")
    twice = _first_repeated([name.lower() for name in sent])
    if twice is not None:
        raise ConfigError(f"{here}: header '{twice}' given twice (headers, cookies, auth or UA)")
    repeated = _first_repeated([name for name, _ in (*cookies, *cookies_env)])
    if repeated is not None:
        raise ConfigError(f"{here}: cookie '{repeated}' given twice")
    bundle = get("ca_bundle", string)
    insecure = bool(get("insecure", true_or_false))
    if bundle is not None and insecure:
        raise ConfigError(f"{here}: 'ca_bundle' and 'insecure = true' contradict each other")
    if bundle is not None:
        bundle = _check_ca_bundle(str(base_dir / bundle), f"{here}: 'ca_bundle'")
    timeout = get("timeout", seconds)
    if timeout == 0:
        raise ConfigError(f"{here}: 'timeout': must be more than 0")
    return SiteTable(
        prefix=prefix,
        where=here,
        parse=bool(get("parse", true_or_false)),
        headers=headers,
        headers_env=headers_env,
        cookies=cookies,
        cookies_env=cookies_env,
        username=username,
        password_env=password_env,
        proxy=get("proxy", _proxy),
        user_agent=user_agent,
        timeout=timeout,
        per_host=get("per_host", whole(1, 1_000)),
        delay=get("delay", seconds),
        ca_bundle=bundle,
        insecure=insecure,
        robots=get("robots", true_or_false) is not False,
        render=get("render", true_or_false),
    )


def _first_repeated(names: list[str]) -> str | None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def _site_prefix(value: Any) -> str:
    text = string(value)
    try:
        prefix = canonical(text)
    except BadURL as exc:
        raise ValueError(f"not a URL prefix: {text!r} ({exc})") from None
    if not is_http(prefix):
        raise ValueError(f"expected an http:// or https:// URL prefix, got {text!r}")
    if has_userinfo(prefix):
        raise ValueError("a user name or password in the prefix: use 'username', 'password_env'")
    return prefix


def _proxy(value: Any) -> str:
    """A ``[[site]]`` table's proxy: read as ``--proxy`` is, an http:// one without a login."""
    text = string(value)
    proxy = parse_proxy_url(text)
    if not proxy.url.startswith("http://"):
        raise ValueError(f"expected an http:// proxy URL (http://host:port), got {text!r}")
    if proxy.username is not None:
        raise ValueError("a proxy that needs a user name or password is not supported")
    return proxy.url


def _mapping(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"expected a table of names and values, got {value!r}")
    return value


def _header_name(name: str) -> str:
    if not HTTP_TOKEN_RE.fullmatch(name):
        raise ValueError(f"not a header name: {name!r}")
    return name


def _cookie_name(name: str) -> str:
    if not HTTP_TOKEN_RE.fullmatch(name):
        raise ValueError(f"not a cookie name: {name!r}")
    return name


def _header_value(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or _UNSENDABLE_RE.search(value):
        raise ValueError("expected a non-empty string on one line")
    return value


def _cookie_value(value: Any) -> str:
    if not isinstance(value, str) or ";" in value or _UNSENDABLE_RE.search(value):
        raise ValueError("expected a string on one line, without ';'")
    return value


def _username(value: Any) -> str:
    name = _header_value(value)
    if ":" in name:
        raise ValueError("a user name cannot hold ':'")
    return name


def _env_name(value: Any) -> str:
    if not isinstance(value, str) or not _ENV_NAME_RE.fullmatch(value):
        raise ValueError(f"expected the name of an environment variable, got {value!r}")
    return value


def _header_table(value: Any) -> tuple[tuple[str, str], ...]:
    pairs = []
    for name, text in _mapping(value).items():
        try:
            pairs.append((_header_name(name), _header_value(text)))
        except ValueError as exc:
            raise ValueError(f"{name!r}: {exc}") from None
    return tuple(pairs)


def _cookie_table(value: Any) -> tuple[tuple[str, str], ...]:
    pairs = []
    for name, text in _mapping(value).items():
        try:
            pairs.append((_cookie_name(name), _cookie_value(text)))
        except ValueError as exc:
            raise ValueError(f"{name!r}: {exc}") from None
    return tuple(pairs)


def _env_table(check_name: Any) -> Any:
    """A table of names (headers or cookies) and the environment variables of their values."""

    def convert(value: Any) -> tuple[tuple[str, str], ...]:
        pairs = []
        for name, variable in _mapping(value).items():
            try:
                pairs.append((check_name(name), _env_name(variable)))
            except ValueError as exc:
                raise ValueError(f"{name!r}: {exc}") from None
        return tuple(pairs)

    return convert


def _check_ca_bundle(path: str, where: str) -> str:
    """A CA bundle that can be used, or a ConfigError naming where it was given."""
    try:
        check_ca_bundle(path)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return path


def _plugin_options(value: Any, where: str) -> dict[str, dict[str, Any]]:
    """``[plugin.NAME]`` tables: each plugin's options, which the plugin itself checks."""
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ConfigError(f"{where}: 'plugin' must hold one table per plugin ([plugin.NAME])")
    return {name: dict(options) for name, options in value.items()}


def load_file(path: Path) -> dict[str, Any]:
    """Read and validate a TOML configuration file into settings-field values."""
    import tomllib  # only a run with a configuration file reads TOML

    where = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{where}: configuration file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: invalid TOML: {exc}") from None
    return values_from_mapping(data, where, base_dir=path.parent)


def values_from_mapping(data: dict[str, Any], where: str, base_dir: Path) -> dict[str, Any]:
    values: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for raw_key, value in data.items():
        key = raw_key.replace("-", "_")
        if key in spelled:
            raise ConfigError(f"{where}: key '{raw_key}' given twice (also as '{spelled[key]}')")
        spelled[key] = raw_key
        if key == "rule":
            values["rules"] = _rules(value, where)
        elif key == "rewrite":
            values["rewrites"] = _rewrites(value, where)
        elif key == "tls":
            values["tls"] = _tls_hosts(value, where, base_dir)
        elif key == "plugin":
            values["plugin_options"] = _plugin_options(value, where)
        elif key == "site" and _has_tables(value):
            prefixes, values["site_tables"] = _site_tables(value, where, base_dir)
            if prefixes:
                values["sites"] = prefixes
        elif key in _SCALAR_KEYS:
            convert, name = _SCALAR_KEYS[key]
            try:
                values[name] = convert(value)
            except ValueError as exc:
                raise ConfigError(f"{where}: key '{raw_key}': {exc}") from None
        else:
            raise ConfigError(f"{where}: unknown key '{raw_key}'{_key_hint(raw_key)}")
    if "hooks" in values:
        hooks = Path(values["hooks"])
        if not hooks.is_absolute():
            hooks = base_dir / hooks
        if not hooks.is_file():
            raise ConfigError(f"{where}: key 'hooks': hooks file not found: {hooks}")
        values["hooks"] = str(hooks)
    if "ca_bundle" in values:
        where_key = f"{where}: key '{spelled['ca_bundle']}'"
        values["ca_bundle"] = _check_ca_bundle(str(base_dir / values["ca_bundle"]), where_key)
    return values


def _key_hint(raw_key: str) -> str:
    """A close key, spelled with '-' or '_' as the user spelled theirs."""
    known = [k.replace("_", "-") for k in CONFIG_KEYS] if "-" in raw_key else CONFIG_KEYS
    return did_you_mean(raw_key, known)


# the options of a report that a ``report`` (or a dashboard) may set apart from the pass's
REPORT_FIELDS = (
    "check_anchors",
    "report_after",
    "damp_new",
    "fail_on",
    "only_new",
    "redirects",
    "xref",
    "graph_hosts",
)


def _rule_as_kept(rule: Rule) -> tuple[str, str, str]:
    """A rule as a report shows what the URLs were judged by."""
    pattern = f"{rule.pattern} (except {rule.except_for})" if rule.except_for else rule.pattern
    return rule.kind, pattern, rule.action.value


def report_options(settings: SiteSettings) -> ReportOptions:
    """What shapes the report of a pass checked with these settings."""
    return ReportOptions(
        check_anchors=settings.check_anchors,
        report_after=settings.report_after,
        damp_new=settings.damp_new,
        fail_on=settings.fail_on,
        only_new=settings.only_new,
        redirects=settings.redirects,
        xref=settings.xref,
        graph_hosts=settings.graph_hosts,
        accept=tuple(sorted(settings.accept)),
        warn=tuple(sorted(settings.warn)),
        broken=tuple(sorted(settings.broken)),
        rules=tuple(_rule_as_kept(r) for r in settings.rule_book),
    )


def rule_options(settings: SiteSettings) -> RuleOptions:
    """What the rule book reads of the settings."""
    return RuleOptions(
        accept=settings.accept,
        warn=settings.warn,
        broken=settings.broken,
        recheck_good=settings.recheck_good,
        follow_ghost=settings.follow_ghost,
        max_size=settings.max_size,
        check_anchors=settings.check_anchors,
        robots=settings.robots,
        robots_off=tuple(t.prefix for t in settings.site_tables if not t.robots),
        cert_expiry=settings.cert_expiry,
        soft_404=settings.soft_404,
        require_https=settings.require_https,
    )


def as_checked(
    kept: ReportOptions | None, settings: SiteSettings, given: Collection[str]
) -> ReportOptions:
    """A pass's report options as it was checked, but for those ``given`` on the command
    line (fields of the settings); a pass that kept none takes the settings'."""
    mine = report_options(settings)
    if kept is None:
        return mine
    changed = {name: getattr(mine, name) for name in REPORT_FIELDS if name in given}
    return dataclasses.replace(kept, **changed) if changed else kept


# an output file's extension -> the report format it is written in, unless one is given
FORMAT_BY_EXTENSION: dict[str, ReportFormat] = {
    ".html": ReportFormat.HTML,
    ".htm": ReportFormat.HTML,
    ".json": ReportFormat.JSON,
    ".csv": ReportFormat.CSV,
    ".md": ReportFormat.MARKDOWN,
    ".markdown": ReportFormat.MARKDOWN,
    ".xml": ReportFormat.JUNIT,
    ".sarif": ReportFormat.SARIF,
    ".dot": ReportFormat.DOT,
}


def format_for_output(output: str) -> ReportFormat:
    """The report format an output file's name asks for: text unless its extension names one."""
    return FORMAT_BY_EXTENSION.get(Path(output).suffix.lower(), ReportFormat.TEXT)


def build_settings(file_values: dict[str, Any], cli_values: dict[str, Any]) -> SiteSettings:
    """Defaults, then the file, then the command line; a report format not given is the
    one the output file's extension names."""
    merged = {**file_values, **cli_values}
    if "format" not in merged and merged.get("output"):
        merged["format"] = format_for_output(merged["output"])
    settings = SiteSettings(**merged)
    if settings.hooks is not None and not Path(settings.hooks).is_file():
        where = "option --hooks" if "hooks" in cli_values else "key 'hooks'"
        raise ConfigError(f"{where}: hooks file not found: {settings.hooks}")
    if "ca_bundle" in cli_values and settings.ca_bundle is not None:
        _check_ca_bundle(settings.ca_bundle, "option --ca-bundle")
    return settings


def wants_rendering(settings: SiteSettings) -> bool:
    """Whether any page may be rendered in this check (the browser is then looked for)."""
    return settings.render or any(t.render for t in settings.site_tables)


__all__ = [
    "CONFIG_KEYS",
    "DEFAULT_CONFIG",
    "FAIL_ON",
    "FORMATS",
    "FORMAT_BY_EXTENSION",
    "HTTP_TOKEN_RE",
    "REPORT_FIELDS",
    "Rewrite",
    "Rule",
    "SiteSettings",
    "SiteTable",
    "TlsHost",
    "as_checked",
    "build_settings",
    "format_for_output",
    "load_file",
    "parse_duration",
    "parse_size",
    "parse_status_list",
    "report_options",
    "rule_options",
    "wants_rendering",
]
