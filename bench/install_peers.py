#!/usr/bin/env python3
"""Install the peer link checkers, nginx and the measuring tools, each only if missing.

    python bench/install_peers.py [--tools linklint,linkinator,...] [--capacity]

From Debian (apt): nginx, GNU time, and per tool w3c-linkchecker (checklink), wget2,
linklint, npm itself where it is missing (and wrk with ``--capacity``); from PyPI:
LinkChecker, in a venv of its own under ``$PEERS`` (default /tmp/peers); from npm:
linkinator and broken-link-checker (blc), under ``$PEERS/npm``. Also writes the small
configurations the runs use:

- LinkChecker waits 0.1-0.6 s between two requests to one host unless the server sends a
  ``LinkChecker`` header (``bench/serve.py`` adds it) and ``maxrequestspersecond`` is
  above 10: ``$PEERS/linkcheckerrc`` lifts it.
- Debian's ``/etc/w3c/checklink.conf`` sets ``Allow_Private_IPs = 0``, which refuses
  127.0.0.1 outright, and ``checklink --sleep`` has a hard-coded minimum of 1 s a server:
  ``$PEERS/checklink.conf`` allows loopback, ``$PEERS/checklink-nosleep`` is a copy of
  ``/usr/bin/checklink`` without the minimum.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

PEERS = Path(os.environ.get("PEERS", "/tmp/peers"))
NPM_BIN = PEERS / "npm" / "node_modules" / ".bin"
ALL_TOOLS = ("linkchecker", "linkinator", "blc", "checklink", "wget2", "linklint")

# Debian package and the command it brings, per tool (and for every run)
APT = {
    "checklink": ("w3c-linkchecker", "checklink"),
    "wget2": ("wget2", "wget2"),
    "linklint": ("linklint", "linklint"),
    "capacity": ("wrk", "wrk"),
}
ALWAYS = (("nginx", "nginx"), ("time", "/usr/bin/time"))

LINKCHECKERRC = """\
[checking]
threads=16
maxrequestspersecond=100000
[filtering]
checkextern=1
"""
SLEEP_CHECK = "if (($Opts{Sleep_Time} || 0) < 1) {"


def base_tool(tool: str) -> str:
    """``linkchecker-stock`` needs what ``linkchecker`` needs."""
    return tool.removesuffix("-stock")


def has(command: str) -> bool:
    return Path(command).is_file() if command.startswith("/") else bool(shutil.which(command))


def run(*cmd: str | Path, cwd: Path | None = None) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, cwd=cwd)


def apt_install(packages: list[str]) -> None:
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    os.environ.setdefault("DEBIAN_FRONTEND", "noninteractive")
    run(*sudo, "apt-get", "update", "-qq")
    run(*sudo, "apt-get", "install", "-y", "-q", "--no-install-recommends", *packages)


def install_linkchecker() -> None:
    venv = PEERS / "venv"
    if not (venv / "bin" / "linkchecker").is_file():
        run(sys.executable, "-m", "venv", venv)
        run(venv / "bin" / "pip", "install", "-q", "linkchecker")
    rc = PEERS / "linkcheckerrc"
    rc.write_text(LINKCHECKERRC)
    rc.chmod(0o644)  # LinkChecker run as root drops to nobody


def install_npm(packages: list[str]) -> None:
    folder = PEERS / "npm"
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "package.json").is_file():
        run("npm", "init", "-y", cwd=folder)
    run("npm", "install", "--no-audit", "--no-fund", *packages, cwd=folder)


def configure_checklink() -> None:
    conf = Path("/etc/w3c/checklink.conf").read_text().splitlines()
    kept = [line for line in conf if not line.startswith("Allow_Private_IPs")]
    (PEERS / "checklink.conf").write_text("\n".join([*kept, "Allow_Private_IPs = 1"]) + "\n")
    original = Path("/usr/bin/checklink").read_text()
    if SLEEP_CHECK not in original:
        raise SystemExit("install_peers: checklink's sleep check not found; not patched")
    patched = PEERS / "checklink-nosleep"
    patched.write_text(original.replace(SLEEP_CHECK, SLEEP_CHECK.replace("< 1", "< 0"), 1))
    patched.chmod(0o755)


def install(tools: list[str], capacity: bool = False) -> None:
    """Everything the runs of ``tools`` need, installed where it is missing."""
    wanted = {base_tool(t) for t in tools}
    unknown = wanted - set(ALL_TOOLS) - {"linkpatrol"}
    if unknown:
        raise SystemExit(f"install_peers: unknown tool {', '.join(sorted(unknown))}")
    PEERS.mkdir(parents=True, exist_ok=True)
    needed = list(ALWAYS) + [APT[t] for t in sorted(wanted) if t in APT]
    if capacity:
        needed.append(APT["capacity"])
    if wanted & {"linkinator", "blc"}:
        needed.append(("npm", "npm"))
    missing = [package for package, command in needed if not has(command)]
    if missing:
        apt_install(missing)
    if "linkchecker" in wanted:
        install_linkchecker()
    npm = [
        name
        for tool, name in (("linkinator", "linkinator"), ("blc", "broken-link-checker"))
        if tool in wanted and not (NPM_BIN / tool).is_file()
    ]
    if npm:
        install_npm(npm)
    if "checklink" in wanted:
        configure_checklink()


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--tools", default=",".join(ALL_TOOLS), help="comma-separated")
    ap.add_argument("--capacity", action="store_true", help="wrk too, for run_peers capacity")
    args = ap.parse_args()
    install(args.tools.split(","), args.capacity)
    return 0


if __name__ == "__main__":
    sys.exit(main())
