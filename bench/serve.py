#!/usr/bin/env python3
"""Serve a generated site with nginx on loopback: one master, two server blocks.

    python bench/serve.py start [SITE_DIR]   (default /tmp/bench-site/2000)
    python bench/serve.py stop
    python bench/serve.py status

The site under test (``SITE_DIR/site``) on 127.0.0.1:18081, the "far" site
(``SITE_DIR/ext``) on 127.0.0.1:18082; nothing listens on 18083, on purpose. The ports
come from ``$SITE_PORT``, ``$EXT_PORT`` and ``$DEAD_PORT`` (``bench/run.py`` generates its
site for them, so that two benchmarks can run on one machine), nginx's files
(configuration, pid, logs) go to ``$NGINX_RUN`` (default /tmp/bench-nginx). Every
response carries a ``LinkChecker`` header: LinkChecker's documented switch that lets it
exceed its default 10 requests a second to one host (harmless to the others). The access
log (port, method, status, URI) lets the benchmarks count the requests the server saw.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

SITE_PORT = int(os.environ.get("SITE_PORT", "18081"))
EXT_PORT = int(os.environ.get("EXT_PORT", "18082"))
DEAD_PORT = int(os.environ.get("DEAD_PORT", "18083"))
RUN = Path(os.environ.get("NGINX_RUN", "/tmp/bench-nginx"))
PIDFILE = RUN / "nginx.pid"
ACCESS_LOG = RUN / "access.log"
ERROR_LOG = RUN / "error.log"
CONF = RUN / "nginx.conf"
WAIT_STEPS = 100  # tenths of a second to wait for nginx to start or stop

CONFIG = """\
worker_processes 1;
worker_rlimit_nofile 100000;
pid {run}/nginx.pid;
error_log {run}/error.log warn;
events {{ worker_connections 60000; }}
http {{
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_timeout 65; keepalive_requests 1000000;
  open_file_cache max=10000 inactive=60s; open_file_cache_errors on;
  log_not_found off;
  log_format bench '$server_port $request_method $status $request_uri $msec';
  access_log {run}/access.log bench buffer=256k flush=1s;
  client_body_temp_path {run}/tmp_body; proxy_temp_path {run}/tmp_proxy;
  fastcgi_temp_path {run}/tmp_fcgi; uwsgi_temp_path {run}/tmp_uwsgi; scgi_temp_path {run}/tmp_scgi;
  add_header LinkChecker "bench" always;
{servers}}}
"""
SERVER = (
    "  server {{ listen 127.0.0.1:{port}; server_name {name}; root {root}; index index.html; }}\n"
)


class ServeError(Exception):
    """Why nginx could not be started, with the exit code ``serve.py`` leaves with."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def running_pid() -> int | None:
    try:
        pid = int(PIDFILE.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def port_taken(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def nginx_binary() -> str:
    found = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").is_file() else None
    )
    if found is None:
        raise ServeError("serve: nginx is not installed (python bench/install_peers.py)", 5)
    return found


def served_root() -> Path | None:
    """The site folder the running nginx serves, if one runs."""
    if running_pid() is None or not CONF.is_file():
        return None
    for line in CONF.read_text().splitlines():
        if "server_name site;" in line:
            root = line.split(" root ", 1)[1].split(";", 1)[0]
            return Path(root).parent
    return None


def start(out: Path) -> int:
    """Serve ``out`` (a folder made by gen_site.py); nginx's pid."""
    out = out.resolve()
    if not (out / "site").is_dir() or not (out / "ext").is_dir():
        raise ServeError(f"serve: {out} has no site/ and ext/ (run bench/gen_site.py)", 2)
    return start_folders([(SITE_PORT, "site", out / "site"), (EXT_PORT, "far", out / "ext")])


def start_folders(folders: list[tuple[int, str, Path]]) -> int:
    """Serve each (port, name, folder) on 127.0.0.1 from one nginx; its pid."""
    pid = running_pid()
    if pid is not None:
        raise ServeError(f"serve: already running (pid {pid}); stop it first", 3)
    for port, _, _ in folders:
        if port_taken(port):
            raise ServeError(f"serve: port {port} already in use", 4)
    binary = nginx_binary()
    RUN.mkdir(parents=True, exist_ok=True)
    servers = "".join(
        SERVER.format(port=port, name=name, root=root) for port, name, root in folders
    )
    CONF.write_text(CONFIG.format(run=RUN, servers=servers))
    subprocess.run([binary, "-p", str(RUN), "-c", str(CONF)], check=True)
    for _ in range(WAIT_STEPS):
        pid = running_pid()
        if pid is not None:
            return pid
        time.sleep(0.1)
    raise ServeError(f"serve: nginx did not start (see {ERROR_LOG})", 6)


def stop() -> int | None:
    """Stop the nginx this serves with, gracefully, then firmly; its pid, if one ran."""
    pid = running_pid()
    if pid is None:
        PIDFILE.unlink(missing_ok=True)
        return None
    os.kill(pid, signal.SIGQUIT)
    for _ in range(WAIT_STEPS):
        try:
            os.kill(pid, 0)
        except OSError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGTERM)
    PIDFILE.unlink(missing_ok=True)
    return pid


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("action", choices=("start", "stop", "status"))
    ap.add_argument("site", nargs="?", type=Path, default=Path("/tmp/bench-site/2000"))
    args = ap.parse_args()
    if args.action == "start":
        try:
            pid = start(args.site)
        except ServeError as error:
            print(error, file=sys.stderr)
            return error.code
        print(
            f"nginx pid {pid} serving {args.site.resolve()} on 127.0.0.1:{SITE_PORT} (site) "
            f"and :{EXT_PORT} (far)"
        )
    elif args.action == "stop":
        stopped = stop()
        print(f"nginx pid {stopped} stopped" if stopped else "serve: not running")
    else:
        serving = running_pid()
        print(f"running pid {serving}" if serving else "not running")
        return 0 if serving else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
