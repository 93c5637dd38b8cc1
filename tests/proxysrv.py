"""An HTTP forward proxy on 127.0.0.1, logging what it carries.

asyncio on a thread of its own: a request in absolute form (``GET http://host:port/path``,
``HEAD`` too) is relayed to its host, one per connection; ``CONNECT host:port`` opens a
tunnel. With a ``login`` (``user:password``) it asks for it as ``Proxy-Authorization``
and answers 407 to anything else.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import threading
from urllib.parse import urlsplit

HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authorization", "proxy-connection"})


class ForwardProxy:
    """``seen``: (method, target) of what it carried; ``refused``: of what it answered 407."""

    def __init__(self, login: str | None = None) -> None:
        self.login = login
        self.seen: list[tuple[str, str]] = []
        self.refused: list[tuple[str, str]] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        started = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        self._server = started.result(timeout=10)
        self.port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"

    async def _start(self) -> asyncio.Server:
        return await asyncio.start_server(self._serve, "127.0.0.1", 0)

    def stop(self) -> None:
        async def close() -> None:
            self._server.close()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def __enter__(self) -> ForwardProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _authorized(self, headers: dict[str, str]) -> bool:
        if self.login is None:
            return True
        expected = "Basic " + base64.b64encode(self.login.encode()).decode()
        return headers.get("proxy-authorization") == expected

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *lines = head.decode("latin-1").split("\r\n")
            method, target, _ = request_line.split(" ", 2)
            headers: dict[str, str] = {}
            for line in lines:
                name, colon, value = line.partition(":")
                if colon:
                    headers[name.strip().lower()] = value.strip()
            if not self._authorized(headers):
                self.refused.append((method, target))
                writer.write(
                    b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                    b'Proxy-Authenticate: Basic realm="test"\r\n'
                    b"Content-Length: 0\r\nConnection: close\r\n\r\n"
                )
                await writer.drain()
                return
            self.seen.append((method, target))
            if method == "CONNECT":
                await self._tunnel(target, reader, writer)
            else:
                await self._relay(method, target, lines, reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            with contextlib.suppress(ConnectionError):
                writer.close()

    async def _relay(
        self,
        method: str,
        target: str,
        lines: list[str],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        url = urlsplit(target)
        up_reader, up_writer = await asyncio.open_connection(url.hostname, url.port or 80)
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        kept = [line for line in lines if line and line.partition(":")[0].lower() not in HOP_BY_HOP]
        sent = [f"{method} {path} HTTP/1.1", *kept, "Connection: close", "", ""]
        up_writer.write("\r\n".join(sent).encode("latin-1"))
        await up_writer.drain()
        answer = await up_reader.readuntil(b"\r\n\r\n")
        status_line, *answer_lines = answer.decode("latin-1").split("\r\n")
        answer_kept = [
            line
            for line in answer_lines
            if line and line.partition(":")[0].lower() not in HOP_BY_HOP
        ]
        writer.write("\r\n".join([status_line, *answer_kept, "Connection: close", "", ""]).encode())
        while data := await up_reader.read(65536):
            writer.write(data)
        await writer.drain()
        up_writer.close()

    async def _tunnel(
        self, target: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        host, _, port = target.rpartition(":")
        up_reader, up_writer = await asyncio.open_connection(host.strip("[]"), int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            with contextlib.suppress(OSError):
                sink.write_eof()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        up_writer.close()
