"""``linkpatrol mcp``: the real server over stdio, asked by the SDK's own client."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import Serve
from tests.sitesrv import Held, Page, html

CALL_TIMEOUT = 60.0  # seconds for one test's whole conversation with the server
INSTALL_HINT = "pip install 'linkpatrol[mcp]'"


def _site(serve: Serve) -> Any:
    return serve(
        {
            "/": Page(
                html(
                    "<h1>home</h1>",
                    '<a href="/ok">fine</a>',
                    '<a href="/gone">gone</a>',
                    '<a href="/private">private</a>',
                )
            ),
            "/ok": Page("<p>here</p>"),
            "/gone": Page("<h1>gone</h1>", status=404),
            "/private": Page("", status=401),
        }
    )


@contextlib.asynccontextmanager
async def _session(cwd: Path, *args: str) -> AsyncIterator[ClientSession]:
    """A client session with ``linkpatrol mcp ARGS`` started in ``cwd``."""
    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "linkpatrol", "mcp", *args], env=env, cwd=cwd
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _talk(cwd: Path, args: list[str], talk: Callable[[ClientSession], Awaitable[None]]) -> None:
    async def main() -> None:
        with anyio.fail_after(CALL_TIMEOUT):
            async with _session(cwd, *args) as session:
                await talk(session)

    anyio.run(main)


async def _answer(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    said = " ".join(getattr(part, "text", "") for part in result.content)
    assert not result.is_error, said
    assert result.structured_content is not None
    return result.structured_content


async def _refusal(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error
    return " ".join(getattr(part, "text", "") for part in result.content)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_client_checks_a_site_then_reads_its_report_and_a_urls_history(
    tmp_path: Path, serve: Serve
) -> None:
    site = _site(serve)
    home, gone, private = site.url("/"), site.url("/gone"), site.url("/private")
    db = tmp_path / "memory.db"
    seen: dict[str, Any] = {}

    async def talk(session: ClientSession) -> None:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert {"check", "report", "history", "status"} <= set(listed)
        limits = listed["check"].input_schema["properties"]
        assert limits["max_seconds"]["maximum"] == 600
        assert limits["max_requests"]["maximum"] == 100_000
        assert listed["report"].annotations is not None
        assert listed["report"].annotations.read_only_hint is True
        assert listed["check"].annotations is not None
        assert listed["check"].annotations.read_only_hint is False

        seen["check"] = await _answer(session, "check", target=home, max_seconds=30)
        written = _digest(db)
        seen["report"] = await _answer(session, "report")
        seen["warnings"] = await _answer(session, "report", show="warnings")
        seen["filtered"] = await _answer(session, "report", contains="/nowhere")
        seen["history"] = await _answer(session, "history", url=gone.replace("http:", "HTTP:"))
        seen["status"] = await _answer(session, "status", memory="./memory.db")
        assert _digest(db) == written  # the reading tools left the memory as it was
        seen["unknown"] = await _refusal(session, "history", url=site.url("/never-linked"))

    _talk(tmp_path, ["--db", "memory.db"], talk)

    checked = seen["check"]
    assert checked["complete"] is True and checked["exit_code"] == 1
    assert checked["found"] == "1 broken link, 1 warning"
    assert [e["url"] for e in checked["broken"]] == [gone]
    assert checked["broken"][0]["http_status"] == 404
    assert checked["broken"][0]["referrers"] == [{"url": home, "line": 3}]
    assert [(e["url"], e["referrers"]) for e in checked["warnings"]] == [
        (private, [{"url": home, "line": 4}])
    ]
    report = seen["report"]
    assert report["pass"] == checked["pass"]
    assert report["broken"] == checked["broken"] and report["warnings"] == checked["warnings"]
    assert seen["warnings"]["broken"] == [] and len(seen["warnings"]["warnings"]) == 1
    assert seen["filtered"]["broken"] == seen["filtered"]["warnings"] == []

    history = seen["history"]
    assert history["url"] == gone and history["state"] == "broken"
    assert [(c["state"], c["http_status"], c["pass"]) for c in history["changes"]] == [
        ("broken", 404, checked["pass"])
    ]
    assert history["referrers"] == [{"url": home, "line": 3}]
    assert seen["status"]["complete"] is True
    assert "is not in the memory" in seen["unknown"]


def test_a_local_folder_is_checked_with_its_files_and_lines(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Docs\n\nSee [the guide](guide.md).\n\n[Old](old.md)\n")
    (docs / "guide.md").write_text("# Guide\n")
    seen: dict[str, Any] = {}

    async def talk(session: ClientSession) -> None:
        seen["check"] = await _answer(session, "check", target="docs", max_seconds=30)

    _talk(tmp_path, ["--db", "memory.db"], talk)

    broken = seen["check"]["broken"]
    assert [Path(e["path"]).name for e in broken] == ["old.md"]
    (page,) = broken[0]["referrers"]
    assert page["path"] == "docs/index.md" and page["line"] == 5


def test_the_fix_diff_of_a_checked_folder_applies_and_changes_nothing_itself(
    tmp_path: Path, serve: Serve
) -> None:
    site = serve(
        {
            "/robots.txt": Page("", status=404),
            "/old": Page("", status=301, headers={"Location": "/new"}, etag=False),
            "/new": Page("<p>new</p>"),
        }
    )
    docs = tmp_path / "docs"
    docs.mkdir()
    page = docs / "index.md"
    page.write_text(f"# Docs\n\nSee [the page]({site.url('/old')}).\n\n`{site.url('/old')}`\n")
    before = page.read_text()
    seen: dict[str, Any] = {}

    async def talk(session: ClientSession) -> None:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert listed["fix_diff"].annotations is not None
        assert listed["fix_diff"].annotations.read_only_hint is True
        await _answer(session, "check", target="docs", max_seconds=30)
        seen["fix"] = await _answer(session, "fix_diff", target="docs")
        seen["web"] = await _refusal(session, "fix_diff", target=site.url("/"))

    _talk(tmp_path, ["--db", "memory.db"], talk)

    fix = seen["fix"]
    assert (fix["files"], fix["links"], fix["left_alone"]) == (1, 1, [])
    assert page.read_text() == before  # nothing written
    patch = tmp_path / "fix.patch"
    patch.write_text(fix["diff"])
    applied = subprocess.run(
        ["git", "apply", str(patch)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert applied.returncode == 0, applied.stderr
    assert page.read_text() == before.replace(f"]({site.url('/old')})", f"]({site.url('/new')})")
    assert "fix rewrites local files only" in seen["web"]


def test_the_server_answers_for_its_own_memory_alone_and_never_makes_one(
    tmp_path: Path,
) -> None:
    other = tmp_path / "other.db"
    other.write_bytes(b"")
    said: dict[str, str] = {}

    async def talk(session: ClientSession) -> None:
        said["other"] = await _refusal(session, "report", memory=str(other))
        said["report"] = await _refusal(session, "report")
        said["history"] = await _refusal(session, "history", url="http://127.0.0.1:9/")
        said["status"] = await _refusal(session, "status")

    _talk(tmp_path, ["--db", "missing.db"], talk)

    assert "other.db: not this server's memory; it answers for missing.db only" in said["other"]
    for tool in ("report", "history", "status"):
        assert "missing.db: no such database" in said[tool], tool
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]
    assert other.read_bytes() == b""


def test_a_check_cannot_write_on_the_protocols_channel(tmp_path: Path) -> None:
    """Whatever a check prints (here its hooks, to sys.stdout and to descriptor 1) goes to
    stderr: every line the client reads is a protocol message."""
    (tmp_path / "page.html").write_text('<a href="gone.html">gone</a>\n')
    hooks = tmp_path / "hooks.py"
    hooks.write_text(
        "import os, sys\n"
        "def action(url):\n"
        "    print('stray words', url)\n"
        "    os.write(1, b'stray bytes\\n')\n"
        "    return None\n"
    )
    hooks.chmod(0o644)
    (tmp_path / "linkpatrol.toml").write_text('hooks = "hooks.py"\n')
    messages: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "check", "arguments": {"target": "page.html"}},
        },
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "linkpatrol", "mcp", "--db", "memory.db"],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines = []
    try:
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" not in message:
                continue
            deadline = time.monotonic() + CALL_TIMEOUT
            while time.monotonic() < deadline:
                line = proc.stdout.readline()
                assert line, "the server closed its output"
                lines.append(line)
                if json.loads(line).get("id") == message["id"]:
                    break
        proc.stdin.close()
        err = proc.stderr.read() if proc.stderr else ""
        assert proc.wait(timeout=CALL_TIMEOUT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    answers = [json.loads(line) for line in lines]  # each line whole JSON, nothing else
    assert all(answer["jsonrpc"] == "2.0" for answer in answers)
    result = answers[-1]["result"]
    assert result["isError"] is False
    assert [Path(e["path"]).name for e in result["structuredContent"]["broken"]] == ["gone.html"]
    assert "stray words" in err and "stray bytes" in err


def test_without_the_sdk_the_command_says_how_to_install_it(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['mcp'] = None; sys.argv[1:] = ['mcp'];"
            "from linkpatrol.cli import run; run()",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=CALL_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and INSTALL_HINT in proc.stderr, proc.stderr


@pytest.mark.parametrize("seconds", [0, 601])
def test_a_check_beyond_its_bounds_is_refused_before_it_starts(
    tmp_path: Path, seconds: int
) -> None:
    said: list[str] = []

    async def talk(session: ClientSession) -> None:
        said.append(
            await _refusal(session, "check", target="http://127.0.0.1:9/", max_seconds=seconds)
        )

    _talk(tmp_path, ["--db", "memory.db"], talk)

    assert "max_seconds" in said[0]
    assert not (tmp_path / "memory.db").exists()


def test_a_check_stops_at_its_request_limit_and_the_next_one_goes_on(
    tmp_path: Path, serve: Serve
) -> None:
    pages = {f"/p{i}": Page(f"<p>page {i}</p>") for i in range(6)}
    site = serve({"/": Page("".join(f'<a href="{path}">x</a>\n' for path in pages)), **pages})
    seen: list[dict[str, Any]] = []

    async def talk(session: ClientSession) -> None:
        for _ in range(4):  # 8 requests, with robots.txt's: three checks
            seen.append(await _answer(session, "check", target=site.url("/"), max_requests=3))
            if seen[-1]["complete"]:
                break

    _talk(tmp_path, ["--db", "memory.db"], talk)

    assert [(a["pass"], a["complete"], a["exit_code"]) for a in seen] == [
        (1, False, 3),
        (1, False, 3),
        (1, True, 0),
    ]
    assert "max-requests" in seen[0]["stop_reason"] and "call check again" in seen[0]["resume"]
    assert len(site.requests(probes=False)) == 8  # and one folder's probe for soft 404s


def test_one_check_at_a_time_while_the_reading_tools_keep_answering(
    tmp_path: Path, serve: Serve
) -> None:
    held = Held("<p>at last</p>", CALL_TIMEOUT)
    site = serve({"/": Page('<a href="/held">held</a>\n'), "/held": held})
    seen: dict[str, Any] = {}

    async def talk(session: ClientSession) -> None:
        async def first() -> None:
            seen["first"] = await _answer(session, "check", target=site.url("/"))

        async with anyio.create_task_group() as calls:
            calls.start_soon(first)
            await anyio.to_thread.run_sync(held.started.wait, CALL_TIMEOUT)
            seen["second"] = await _refusal(session, "check", target=site.url("/"))
            seen["status"] = await _answer(session, "status")
            held.release.set()

    try:
        _talk(tmp_path, ["--db", "memory.db"], talk)
    finally:
        held.release.set()

    assert "memory.db: a check is already running" in seen["second"]
    assert seen["status"]["complete"] is False
    assert seen["first"]["complete"] is True and seen["first"]["exit_code"] == 0


def test_a_check_the_client_cancels_stops_and_the_next_one_goes_on(
    tmp_path: Path, serve: Serve
) -> None:
    held = Held('<a href="/gone">gone</a>\n', CALL_TIMEOUT)
    site = serve({"/": held})
    seen: dict[str, Any] = {}

    async def talk(session: ClientSession) -> None:
        with anyio.move_on_after(CALL_TIMEOUT) as waited:
            async with anyio.create_task_group() as calls:
                calls.start_soon(session.call_tool, "check", {"target": site.url("/")})
                await anyio.to_thread.run_sync(held.started.wait, CALL_TIMEOUT)
                calls.cancel_scope.cancel()  # the client gives up on its call
        assert not waited.cancelled_caught
        held.release.set()
        for _ in range(100):  # until the stopped check is over
            seen["status"] = await _answer(session, "status")
            if not seen["status"]["workers"]:
                break
            await anyio.sleep(0.1)
        for _ in range(100):  # and has let go of the memory
            result = await session.call_tool("check", {"target": site.url("/")})
            if not result.is_error:
                seen["next"] = result.structured_content
                break
            await anyio.sleep(0.1)

    try:
        _talk(tmp_path, ["--db", "memory.db"], talk)
    finally:
        held.release.set()

    assert seen["status"]["phase"] == "stopped by client cancel"
    assert seen["status"]["verdicts"]["broken"] == 0  # the start page's link was not followed
    answer = seen["next"]
    assert answer["pass"] == 1 and answer["complete"] is True, answer
    assert [e["url"] for e in answer["broken"]] == [site.url("/gone")]
