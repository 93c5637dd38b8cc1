"""Hosts of their own on this machine: network namespaces joined by a bridge.

A :class:`Lab` makes one namespace for a site, holding a bridge at ``10.231.0.1``, and
one namespace per worker, each joined to the bridge by a veth pair and given an address
of its own (``10.231.0.11``, ``.12``, ...). The addresses exist only inside the lab's
namespaces, which are deleted (with their links) when the lab closes. A worker runs the
real command under ``ip netns exec``; the site is an ordinary :class:`TestSite` whose
listening socket is made inside the site's namespace. A lab may also run a PostgreSQL
server of its own on the bridge, and cut a worker's host off without a word.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from tests.sitesrv import TestSite

CLONE_NEWNET = 0x40000000
SUBNET = "10.231.0"
SITE_ADDRESS = f"{SUBNET}.1"
STEP_TIMEOUT = 20.0


def unavailable() -> str | None:
    """Why no lab can be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "no 'ip' command (iproute2)"
    probe = f"lp{os.getpid() % 100000}probe"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"'ip netns add' failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=STEP_TIMEOUT)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


class Lab:
    """A site's namespace and ``workers`` namespaces on one bridge; a context manager."""

    def __init__(self, workers: int) -> None:
        tag = f"lp{os.getpid() % 100000}"
        self.site_ns = f"{tag}-site"
        self.worker_ns = [f"{tag}-w{i}" for i in range(workers)]
        self.addresses = [f"{SUBNET}.{11 + i}" for i in range(workers)]
        self._veths = [(f"{tag}v{i}a", f"{tag}v{i}b") for i in range(workers)]
        self._made: list[str] = []

    def __enter__(self) -> Lab:
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _add(self, ns: str) -> None:
        _ip("netns", "add", ns)
        self._made.append(ns)
        _ip("-n", ns, "link", "set", "lo", "up")

    def _build(self) -> None:
        self._add(self.site_ns)
        _ip("-n", self.site_ns, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.site_ns, "addr", "add", f"{SITE_ADDRESS}/24", "dev", "br0")
        _ip("-n", self.site_ns, "link", "set", "br0", "up")
        for ns, address, (near, far) in zip(
            self.worker_ns, self.addresses, self._veths, strict=True
        ):
            self._add(ns)
            _ip("link", "add", near, "netns", self.site_ns, "type", "veth", "peer", "name", far,
                "netns", ns)  # fmt: skip
            _ip("-n", self.site_ns, "link", "set", near, "master", "br0", "up")
            _ip("-n", ns, "addr", "add", f"{address}/24", "dev", far)
            _ip("-n", ns, "link", "set", far, "up")

    def close(self) -> None:
        """Delete every namespace made (their veth links go with them)."""
        while self._made:
            subprocess.run(["ip", "netns", "del", self._made.pop()], capture_output=True)

    @contextlib.contextmanager
    def _inside(self, ns: str) -> Iterator[None]:
        """This thread in namespace ``ns`` for the block (what it opens stays there)."""
        libc = ctypes.CDLL(None, use_errno=True)
        home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        there = os.open(f"/var/run/netns/{ns}", os.O_RDONLY)
        try:
            if libc.setns(there, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns into {ns}")
            try:
                yield
            finally:
                if libc.setns(home, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns back home")
        finally:
            os.close(there)
            os.close(home)

    def serve(self, pages: dict[str, Any]) -> TestSite:
        """A started site listening on the bridge's address, inside the site's namespace."""
        with self._inside(self.site_ns):
            site = TestSite(pages, host=SITE_ADDRESS)
        site.start()
        return site

    def cut(self, index: int) -> None:
        """Worker ``index``'s host drops off the network without a word, as when its cable
        is pulled: its link to the bridge goes down, and what either side sends is lost
        (no reset, no refusal)."""
        _ip("-n", self.site_ns, "link", "set", self._veths[index][0], "down")

    @contextlib.contextmanager
    def postgres(self) -> Iterator[tuple[str, str]]:
        """A PostgreSQL server of the lab's own, in the site's namespace, listening on the
        bridge's address (the machine's own listens on 127.0.0.1, which the lab's hosts
        cannot reach): the URL the lab's hosts use, and one for this machine, through the
        server's Unix socket. Thrown away, with its data, when the block ends."""
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
        if not found:
            raise RuntimeError("no PostgreSQL server binaries under /usr/lib/postgresql")
        bindir = os.path.dirname(found[-1])
        owner = pwd.getpwnam("postgres")
        base = tempfile.mkdtemp(prefix="lp-lab-pg-")
        os.chown(base, owner.pw_uid, owner.pw_gid)
        as_postgres = ["runuser", "-u", "postgres", "--"]
        server: subprocess.Popen[bytes] | None = None
        try:
            subprocess.run(
                [*as_postgres, f"{bindir}/initdb", "-D", f"{base}/data", "-U", "postgres",
                 "--auth=trust", "--no-sync", "--no-instructions", "-E", "UTF8"],
                check=True, capture_output=True, timeout=60,
            )  # fmt: skip
            with open(f"{base}/data/pg_hba.conf", "a") as hba:
                hba.write(f"host all all {SUBNET}.0/24 trust\n")
            with open(f"{base}/log", "wb") as log:
                server = subprocess.Popen(
                    ["ip", "netns", "exec", self.site_ns, *as_postgres, f"{bindir}/postgres",
                     "-D", f"{base}/data", "-p", "5432", "-c", f"listen_addresses={SITE_ADDRESS}",
                     "-c", f"unix_socket_directories={base}", "-c", "fsync=off",
                     "-c", "full_page_writes=off", "-c", "max_connections=40"],
                    stdout=log, stderr=subprocess.STDOUT,
                )  # fmt: skip
            here = f"postgresql://postgres@/postgres?host={base}&port=5432"
            _wait_for_server(here, server, f"{base}/log")
            yield f"postgresql://postgres@{SITE_ADDRESS}:5432/postgres", here
        finally:
            if server is not None:
                # a fast shutdown (sessions are ended), told to the server itself: runuser,
                # which started it, passes no signal on
                subprocess.run(
                    [*as_postgres, f"{bindir}/pg_ctl", "stop", "-D", f"{base}/data", "-m",
                     "fast", "-w", "-t", str(int(STEP_TIMEOUT))],
                    capture_output=True, timeout=STEP_TIMEOUT + 5,
                )  # fmt: skip
                try:
                    server.wait(timeout=STEP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait(timeout=STEP_TIMEOUT)
            shutil.rmtree(base, ignore_errors=True)

    def on_worker(self, index: int) -> list[str]:
        """The prefix that runs a command on worker ``index``'s host."""
        return ["ip", "netns", "exec", self.worker_ns[index]]


def _wait_for_server(url: str, server: subprocess.Popen[bytes], log: str) -> None:
    import psycopg

    deadline = time.monotonic() + STEP_TIMEOUT
    while True:
        try:
            psycopg.connect(url, connect_timeout=2).close()
            return
        except psycopg.Error:
            if server.poll() is not None or time.monotonic() > deadline:
                with open(log, errors="replace") as lines:
                    raise RuntimeError(
                        f"the lab's PostgreSQL did not start: {lines.read()}"
                    ) from None
            time.sleep(0.05)


def by_socket(url: str) -> str:
    """A PostgreSQL URL on this machine, reached through its Unix socket instead.

    The lab's hosts have no route to 127.0.0.1 outside them; a socket file has no network.
    """
    import psycopg

    parts = urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise RuntimeError(f"PostgreSQL at {parts.hostname} is not on this machine")
    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        row = conn.execute("SHOW unix_socket_directories").fetchone()
    directory = str(row[0]).split(",")[0].strip() if row else ""
    if not directory:
        raise RuntimeError("PostgreSQL listens on no Unix socket")
    user = f"{parts.username}@" if parts.username else ""
    port = f":{parts.port}" if parts.port else ""
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "host"] + [("host", directory)]
    return urlunsplit(parts._replace(netloc=f"{user}{port}", query=urlencode(query)))
