"""A hostile test web: raw servers on 127.0.0.1 that each misbehave in one way.

A :class:`RawServer` listens on an ephemeral loopback port and runs its own event loop
in a thread. It answers ``/robots.txt`` properly (404, keep-alive), so linkpatrol goes on
to the page, and hands every other request to its *behaviour*: an async function that
writes whatever bytes it likes (a byte now and then, an endless body, half a body, a
garbage status line, a decompression bomb) and then ends the connection. Every
connection ends at the latest after :data:`CONNECTION_DEADLINE`, so no test can hang on
a server, whatever the client does.

Also here: the bombs (built by streaming zeros through the compressor), TLS
certificates that are expired, self-signed or for another host, HTTPS for
:class:`~tests.sitesrv.TestSite`, and the peak memory of a command run.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import os
import socket
import ssl
import struct
import subprocess
import sys
import threading
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import brotli
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.sitesrv import Handler, Page, TestSite

MB = 1024 * 1024
GB = 1024 * MB
CONNECTION_DEADLINE = 30.0  # no connection to a hostile server lives longer than this
SEND_BUFFER = 16 * 1024  # small kernel and transport buffers: "written" is close to "read"


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str


class Connection:
    """One accepted connection as a behaviour sees it: read what came, send bytes, count them."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.sent = 0

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()
        self.sent += len(data)

    async def until_closed(self) -> None:
        """Read and drop whatever the client sends until it hangs up."""
        while await self.reader.read(4096):
            pass


Behaviour = Callable[[Request, Connection], Awaitable[None]]


class RawServer:
    """A server on a loopback address whose every request but robots.txt gets ``behaviour``
    (robots.txt gets ``robots``, or a plain 404).

    ``requests`` lists the requests as they arrived; ``sent`` the bytes each misbehaving
    connection managed to write before it ended.
    """

    def __init__(
        self, behaviour: Behaviour, *, host: str = "127.0.0.1", robots: Behaviour | None = None
    ) -> None:
        self.behaviour = behaviour
        self.robots = robots  # robots.txt's own misbehaviour, if any
        self.host = host
        self.requests: list[Request] = []
        self.sent: list[int] = []
        self.port = 0
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, path: str) -> str:
        return self.base + path

    def __enter__(self) -> RawServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._open(), self._loop).result(timeout=10)

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()

    def paths(self) -> list[str]:
        with self._lock:
            return [r.path for r in self.requests if r.path != "/robots.txt"]

    async def _open(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        writer.transport.set_write_buffer_limits(high=SEND_BUFFER)
        connection = Connection(reader, writer)
        try:
            async with asyncio.timeout(CONNECTION_DEADLINE):
                while (request := await _read_request(reader)) is not None:
                    with self._lock:
                        self.requests.append(request)
                    behaviour = self.behaviour
                    if request.path == "/robots.txt":
                        if self.robots is None:
                            await connection.send(head(404, {"Content-Length": "0"}))
                            continue
                        behaviour = self.robots
                    try:
                        await behaviour(request, connection)
                    finally:
                        with self._lock:
                            self.sent.append(connection.sent)
                    break
        except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:  # the server is stopping: end quietly
            pass
        finally:
            writer.transport.abort()
            self._tasks.discard(task)


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    """The next request's method and path (its headers are read and dropped); None at EOF."""
    try:
        data = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    method, _, rest = data.split(b"\r\n", 1)[0].decode("latin-1").partition(" ")
    return Request(method, rest.partition(" ")[0])


def head(status: int = 200, headers: dict[str, str] | None = None) -> bytes:
    """A status line and headers, up to and including the blank line."""
    lines = [f"HTTP/1.1 {status} Whatever"]
    lines += [f"{key}: {value}" for key, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


# ---- behaviours: each misbehaves in one way -----------------------------------------------


def drip(prefix: bytes, pattern: bytes, every: float) -> Behaviour:
    """Sends ``prefix``, then ``pattern`` one byte at a time, one byte every ``every`` seconds,
    round and round: always just in time for a read timeout, never done."""

    async def behave(request: Request, conn: Connection) -> None:
        await conn.send(prefix)
        i = 0
        while True:
            await asyncio.sleep(every)
            await conn.send(pattern[i % len(pattern) : i % len(pattern) + 1])
            i += 1

    return behave


def endless(prefix: bytes, piece: bytes) -> Behaviour:
    """Sends ``prefix``, then ``piece`` again and again, as fast as the client reads."""

    async def behave(request: Request, conn: Connection) -> None:
        await conn.send(prefix)
        while True:
            await conn.send(piece)

    return behave


def chunked(piece: bytes) -> bytes:
    """``piece`` as one chunk of a ``Transfer-Encoding: chunked`` body."""
    return b"%x\r\n%s\r\n" % (len(piece), piece)


def sends(data: bytes, then_wait: bool = False) -> Behaviour:
    """Sends ``data`` and hangs up (or, ``then_wait``, waits for the client to)."""

    async def behave(request: Request, conn: Connection) -> None:
        await conn.send(data)
        if then_wait:
            await conn.until_closed()

    return behave


# ---- bombs: a small body that decodes to gigabytes -------------------------------------------


@dataclass(frozen=True, slots=True)
class Bomb:
    encoding: str  # the Content-Encoding
    body: bytes
    decoded_size: int


def gzip_bomb(prefix: bytes, gigabytes: int) -> Bomb:
    """``prefix`` then zeros, gzip-compressed: about 1 KB per MB, the best gzip can do.

    The zeros are streamed through the compressor a megabyte at a time with a full flush
    after each, so every megabyte after the first compresses to the same bytes: one is
    computed, and repeated.
    """
    zeros = bytes(MB)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    first = compressor.compress(prefix + zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    repeat = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    again = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    assert again == repeat
    final_block = compressor.flush()[:-8]  # the trailer is written below, for the whole body
    megabytes = gigabytes * 1024
    crc = zlib.crc32(prefix)
    for _ in range(megabytes):
        crc = zlib.crc32(zeros, crc)
    size = len(prefix) + megabytes * MB
    trailer = struct.pack("<II", crc, size & 0xFFFFFFFF)
    body = first + repeat * (megabytes - 1) + final_block + trailer
    return Bomb("gzip", body, size)


def brotli_bomb(prefix: bytes, gigabytes: int) -> Bomb:
    """``prefix`` then zeros, brotli-compressed: a few KB for gigabytes."""
    zeros = bytes(MB)
    compressor = brotli.Compressor(quality=3, lgwin=24)
    parts = [compressor.process(prefix)]
    parts += [compressor.process(zeros) for _ in range(gigabytes * 1024)]
    parts.append(compressor.finish())
    return Bomb("br", b"".join(parts), len(prefix) + gigabytes * GB)


def serves_bomb(bomb: Bomb, content_type: str) -> Behaviour:
    return sends(
        head(
            200,
            {
                "Content-Type": content_type,
                "Content-Encoding": bomb.encoding,
                "Content-Length": str(len(bomb.body)),
            },
        )
        + bomb.body,
        then_wait=True,
    )


# ---- TLS ------------------------------------------------------------------------------------

YESTERDAY = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=1)


def self_signed(host: str) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) of a certificate for ``host`` signed by its own key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    try:
        alt: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        alt = x509.DNSName(host)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([alt]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def server_context(cert: trustme.LeafCert | tuple[bytes, bytes], folder: Path) -> ssl.SSLContext:
    """A server-side context presenting ``cert`` (a trustme leaf, or PEM certificate and key)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    if isinstance(cert, trustme.LeafCert):
        cert.configure_cert(context)
        return context
    cert_pem, key_pem = cert
    stem = os.urandom(4).hex()
    cert_file, key_file = folder / f"{stem}-cert.pem", folder / f"{stem}-key.pem"
    cert_file.write_bytes(cert_pem)
    key_file.write_bytes(key_pem)
    context.load_cert_chain(cert_file, key_file)
    return context


def https_site(
    pages: dict[str, Page | Handler], context: ssl.SSLContext, host: str = "127.0.0.1"
) -> TestSite:
    """A :class:`TestSite` served over HTTPS; the handshake happens in the handler's thread,
    so a client that refuses the certificate never stalls the server."""
    site = TestSite(pages, host)
    site._server.socket = context.wrap_socket(
        site._server.socket, server_side=True, do_handshake_on_connect=False
    )
    site.base = site.base.replace("http://", "https://")
    return site


# ---- memory ------------------------------------------------------------------------------------

_MEASURE = """
import resource, subprocess, sys
code = subprocess.run(sys.argv[2:]).returncode
with open(sys.argv[1], "w") as out:
    out.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code)
"""


def run_measured(
    cwd: Path, *args: str, timeout: float = 120
) -> tuple[subprocess.CompletedProcess[str], int]:
    """``python -m linkpatrol ARGS`` and the peak resident memory, in bytes, of the largest of
    its processes (the crawler, or a parse worker): measured by a parent of its own, so no
    other test's processes count."""
    peak_file = cwd / f"peak-rss-{os.urandom(4).hex()}"
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(peak_file), sys.executable, "-m", "linkpatrol", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    return proc, int(peak_file.read_text()) * 1024
