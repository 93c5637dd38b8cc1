"""Shared fixtures: real servers on 127.0.0.1, the real ``linkpatrol`` command, a memory.

Tests marked ``backends`` (a whole module with ``pytestmark = pytest.mark.backends``) run
once per memory backend: their ``db`` fixture, and so ``run.db``, is a SQLite file or the
URL of a fresh schema of its own in the PostgreSQL database named by
``LINKPATROL_TEST_POSTGRES`` (default ``postgresql://postgres@127.0.0.1:5432/test``).
Where that server cannot be reached the PostgreSQL runs are skipped, saying why, unless
``CI=true``: then they fail. ``--backend sqlite`` or ``--backend postgres`` runs only one.
"""

from __future__ import annotations

import compileall
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest
import trustme

from tests.sitesrv import Handler, Page, TestSite

COMMAND_TIMEOUT = 120
POSTGRES_ENV = "LINKPATROL_TEST_POSTGRES"
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
BACKENDS = ("sqlite", "postgres")
SCHEMA_PREFIX = "lp_test_"
STALE_SCHEMA_AGE = 3600.0  # seconds after which a test schema nobody uses is left over
T = TypeVar("T")
# the ``serve`` fixture: starts a site of the given pages, stopped when the test ends
Serve = Callable[[Mapping[str, Page | Handler]], TestSite]

# the tests' servers are on loopback, reached directly: a proxy of the environment (a CI
# runner's) is for none of them, in this process or in the commands it starts; the tests
# of proxies set their own
for _variable in (
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
    "LINKPATROL_PROXY_PASSWORD",
):
    os.environ.pop(_variable, None)


# the signals the command takes over; a test's process that kept its handlers or its mask
# would pass them on to every command it starts after (a blocked SIGTERM never arrives)
_COMMAND_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@pytest.fixture(autouse=True)
def _signals_left_as_found() -> Iterator[None]:
    """Each test leaves the signals of its process as it found them."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    handlers = {signum: signal.getsignal(signum) for signum in _COMMAND_SIGNALS}
    yield
    left_mask = signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    changed = [
        signal.Signals(signum).name
        for signum, handler in handlers.items()
        if signal.getsignal(signum) is not handler
    ]
    for signum, handler in handlers.items():
        signal.signal(signum, handler)
    assert left_mask == mask, f"the test left signals blocked: {sorted(left_mask - mask)}"
    assert not changed, f"the test left its own handlers of {', '.join(changed)}"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        choices=("all", *BACKENDS),
        default="all",
        help="memory backends for the tests marked 'backends' (default: all)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "backends(*names): run once per memory backend (default: sqlite, postgres) via 'db'",
    )
    # the commands the tests start read compiled modules, as from an installed package;
    # where the environment forbids writing them (PYTHONDONTWRITEBYTECODE), every start
    # would compile each module again
    compileall.compile_dir(Path(__file__).resolve().parent.parent / "linkpatrol", quiet=1)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("backends")
    if "db" in metafunc.fixturenames and marker is not None:
        chosen = metafunc.config.getoption("backend")
        backends = [b for b in marker.args or BACKENDS if chosen in ("all", b)]
        metafunc.parametrize("db", backends, indirect=True)


def is_postgres(db: str) -> bool:
    return db.startswith(("postgresql://", "postgres://"))


def in_schema(url: str, schema: str) -> str:
    """The URL of one schema of a database; its connections are named after it too."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k not in ("options", "application_name")]
    query += [("options", f"-csearch_path={schema}"), ("application_name", schema)]
    return urlunsplit(parts._replace(query=urlencode(query)))


def _admin(url: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        conn.execute("SET lock_timeout = '20s'")
        for statement in statements:
            conn.execute(statement)


def _drop_schema(url: str, schema: str) -> None:
    """Drop a test's schema, ending first any session a killed crawler left behind."""
    _admin(
        url,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        f"WHERE application_name = '{schema}' AND pid <> pg_backend_pid()",
        f'DROP SCHEMA IF EXISTS "{schema}" CASCADE',
    )


def _schema_age(schema: str) -> float:
    """Seconds since a test schema was made (its name says when); old names count as old."""
    stamp = schema.removeprefix(SCHEMA_PREFIX).partition("_")[0]
    return time.time() - int(stamp) if stamp.isdigit() and len(stamp) == 10 else float("inf")


@pytest.fixture(scope="session")
def postgres_server(pytestconfig: pytest.Config) -> str:
    """The test server's URL, once it has answered; else skip (or, in CI, fail) saying why."""
    if pytestconfig.getoption("backend") == "sqlite":
        pytest.skip("PostgreSQL left out by --backend sqlite")
    url = os.environ.get(POSTGRES_ENV) or DEFAULT_POSTGRES
    problem = None
    try:
        import psycopg

        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            stale = conn.execute(
                "SELECT nspname FROM pg_namespace n WHERE starts_with(nspname, %s) AND NOT "
                "EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.application_name = n.nspname)",
                (SCHEMA_PREFIX,),
            ).fetchall()
    except Exception as exc:
        problem = " ".join(str(exc).split()) or type(exc).__name__
    if problem is not None:
        reason = f"no PostgreSQL at {url} ({problem}); set {POSTGRES_ENV}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI=true, so this is a failure, not a skip", pytrace=False)
        pytest.skip(reason)
    for (schema,) in stale:  # left by an interrupted run, not made by one still going
        if _schema_age(schema) > STALE_SCHEMA_AGE:
            _drop_schema(url, schema)
    return url


@contextlib.contextmanager
def scratch_schema(server: str, prefix: str = SCHEMA_PREFIX) -> Iterator[str]:
    """The URL of a new, empty schema on ``server``, dropped when the block ends.

    Its name says when it was made, so that another test session leaves it alone.
    """
    schema = f"{prefix}{int(time.time())}_{uuid.uuid4().hex[:8]}"
    _admin(server, f'CREATE SCHEMA "{schema}"')
    try:
        yield in_schema(server, schema)
    finally:
        _drop_schema(server, schema)


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh, empty schema for this test alone, dropped at its end."""
    with scratch_schema(postgres_server) as url:
        yield url


@pytest.fixture
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The test's memory: a SQLite file, or a PostgreSQL URL for ``[postgres]`` runs."""
    if getattr(request, "param", "sqlite") == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return str(tmp_path / "memory.db")


def memory_rows(db: str, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """The rows of a query (``?`` placeholders) on a memory, whichever its backend."""
    return _on_memory(db, sql, params)[0]


def memory_write(db: str, sql: str, params: Sequence[Any] = ()) -> int:
    """Change a memory behind linkpatrol's back; the number of rows changed."""
    return _on_memory(db, sql, params)[1]


@contextlib.contextmanager
def sqlite_statements(store: Any) -> Iterator[list[str]]:
    """The statements a SQLite memory runs while the block lasts, in order."""
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    try:
        yield statements
    finally:
        store._db.set_trace_callback(None)


@contextlib.contextmanager
def store_statements(store: Any) -> Iterator[list[str]]:
    """The statements a memory of either backend runs while the block lasts, in order: on
    SQLite with their values written in, on PostgreSQL followed by their parameters."""
    if hasattr(store, "_db"):
        with sqlite_statements(store) as statements:
            yield statements
        return
    from linkpatrol.store import postgres

    statements = []
    execute = postgres._PgSession.execute

    def traced(self: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        statements.append(f"{sql} {params!r}")
        return execute(self, sql, params)

    postgres._PgSession.execute = traced  # type: ignore[method-assign]
    try:
        yield statements
    finally:
        postgres._PgSession.execute = execute  # type: ignore[method-assign]


def sqlite_plan(db: str, query: str) -> list[str]:
    """SQLite's plan of a statement (as traced: its values written in), step by step."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {query}")]


def _on_memory(db: str, sql: str, params: Sequence[Any]) -> tuple[list[tuple[Any, ...]], int]:
    if is_postgres(db):
        import psycopg

        with psycopg.connect(db, autocommit=True, connect_timeout=10) as conn:
            cursor = conn.execute(sql.replace("%", "%%").replace("?", "%s"), params)
            return (cursor.fetchall() if cursor.description else []), cursor.rowcount
    lite = sqlite3.connect(db)
    try:
        with lite:
            found = lite.execute(sql, params)
            return found.fetchall(), found.rowcount
    finally:
        lite.close()


_DANGLING = {
    "frontier": "SELECT count(*) FROM frontier WHERE url_id NOT IN (SELECT id FROM urls)",
    "links": "SELECT count(*) FROM links WHERE src NOT IN (SELECT id FROM urls) "
    "OR dst NOT IN (SELECT id FROM urls)",
    "history": "SELECT count(*) FROM history WHERE url_id NOT IN (SELECT id FROM urls)",
    "passes": "SELECT count(*) FROM seen WHERE pass_id NOT IN (SELECT id FROM passes)",
    "seen": "SELECT count(*) FROM seen WHERE url_id NOT IN (SELECT id FROM urls)",
}


def assert_memory_intact(db: str) -> None:
    """The database is sound, and nothing in the memory points at what is not there."""
    if not is_postgres(db):
        assert memory_rows(db, "PRAGMA integrity_check") == [("ok",)]
    dangling = {name: memory_rows(db, sql)[0][0] for name, sql in _DANGLING.items()}
    assert not any(dangling.values()), dangling


def memory_done(db: str, start: str) -> tuple[bool, list[int], bool, set[str]]:
    """Whether the memory has its tables yet, its passes, whether the last is complete,
    and the site paths whose outcome in the last the memory has (robots.txt: the site's
    record). On PostgreSQL, what is committed: a crawler may still be writing."""
    if not is_postgres(db) and not Path(db).exists():
        return False, [], False, set()
    import psycopg

    try:
        passes = memory_rows(db, "SELECT id, complete FROM passes ORDER BY id")
    except (sqlite3.Error, psycopg.Error):  # cut before it made its tables
        return False, [], False, set()
    if not passes:
        return True, [], False, set()
    base = start.rstrip("/")
    urls = memory_rows(
        db,
        "SELECT u.url FROM seen m JOIN urls u ON u.id = m.url_id WHERE m.pass_id = ? "
        "AND m.stage > 0 AND u.id NOT IN (SELECT url_id FROM frontier)",
        (passes[-1][0],),
    )
    done = {url[len(base) :] for (url,) in urls if url.startswith(base + "/")}
    if memory_rows(db, "SELECT count(*) FROM sites")[0][0]:
        done.add("/robots.txt")
    return True, [p[0] for p in passes], bool(passes[-1][1]), done


def wait_until(
    condition: Callable[[], T | None], timeout: float, what: str, every: float = 0.02
) -> T:
    """Poll ``condition`` until it holds, and return what it gave; after ``timeout``
    seconds, fail saying ``what`` was awaited. A condition may raise to fail at once (a
    process that ended before what it was awaited for)."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}")
        time.sleep(every)


def running(proc: subprocess.Popen[str]) -> None:
    """Fail at once if ``proc`` has ended (a condition of :func:`wait_until` calls it)."""
    if proc.poll() is not None:
        out, err = proc.communicate()
        said = f"{(out or '')[-500:]} {err or ''}".strip()
        raise AssertionError(f"the run ended early, exit {proc.returncode}: {said}")


class Runner:
    """Runs the real command in a scratch folder, with its own memory database."""

    def __init__(self, cwd: Path, db: str | None = None) -> None:
        self.cwd = cwd
        self.db = db or str(cwd / "memory.db")

    def __call__(
        self,
        *args: str,
        timeout: float = COMMAND_TIMEOUT,
        env: dict[str, str] | None = None,
        input: str | None = None,
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
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
        )

    def check(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        """``linkpatrol check`` against this runner's memory (unless --db is given)."""
        extra = [] if "--db" in args else ["--db", self.db]
        return self("check", *extra, *args, **kw)

    def check_json(self, *args: str, **kw: Any) -> tuple[int, dict[str, Any]]:
        proc = self.check("--format", "json", *args, **kw)
        assert proc.stdout, f"no report; stderr: {proc.stderr}"
        return proc.returncode, json.loads(proc.stdout)

    def popen(
        self, *args: str, prefix: Sequence[str] = (), new_session: bool = False
    ) -> subprocess.Popen[str]:
        """The command started in the background (``prefix`` before it, as ``ip netns exec``);
        ``new_session``: in a process group of its own, for a Ctrl-C to reach as a whole."""
        return subprocess.Popen(
            [*prefix, sys.executable, "-m", "linkpatrol", *args],
            cwd=self.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=new_session,
        )


@pytest.fixture
def run(tmp_path: Path, db: str) -> Runner:
    return Runner(tmp_path, db)


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    """A throw-away certificate authority for the loopback HTTPS sites of a module."""
    return trustme.CA()


@pytest.fixture
def trusting(ca: trustme.CA, tmp_path: Path) -> dict[str, str]:
    """The environment of a check that trusts the CA."""
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    return {"SSL_CERT_FILE": str(bundle)}


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Start any number of sites for the test; all are stopped at its end."""
    sites: list[TestSite] = []

    def start(pages: Mapping[str, Page | Handler]) -> TestSite:
        site = TestSite(pages)
        site.start()
        sites.append(site)
        return site

    yield start
    for site in sites:
        site.stop()


def by_url(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["url"]: entry for entry in report["urls"]}


def comparable(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What must not depend on how a pass was interrupted or repeated: verdicts and referrers."""
    return sorted(
        (
            e["url"],
            e["action"],
            e["state"],
            e["http_status"],
            e["error"],
            e["reportable"],
            tuple(sorted((r["url"], r["line"] or 0) for r in e["referrers"])),
        )
        for e in report["urls"]
    )
