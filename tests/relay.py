"""A TCP relay on 127.0.0.1 in front of a real server, which can cut its clients off.

``cut(seconds)`` closes every connection through it and refuses new ones (nothing
listens on its port) for that long, as a database server that restarts does to its
clients; then it listens on the same port again. ``lose_commit_answers(n)`` lets the next
``n`` transactions commit but drops their connections before the answer comes back: the
client cannot tell whether its commit was made.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from collections.abc import Iterator

BUFFER = 65536
COMMIT = b"COMMIT\x00"  # a COMMIT statement, in the protocol's messages


class Relay:
    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        listener = self._listen(0)
        self.port: int = listener.getsockname()[1]
        self._listener: socket.socket | None = listener
        self._stopped = threading.Event()
        self._commits_to_lose = 0
        self.commits_lost = 0
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _listen(self, port: int) -> socket.socket:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
        listener.settimeout(0.05)
        return listener

    def _accept(self) -> None:
        while not self._stopped.is_set():
            with self._lock:
                listener = self._listener
            if listener is None:
                time.sleep(0.02)
                continue
            try:
                client, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                cut = self._listener is not listener  # a cut came as it was accepted
                if not cut:
                    self._sockets.update((client, server))
            if cut:  # it is dropped with the others
                self._drop(client, server)
                continue
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, client: socket.socket, server: socket.socket) -> None:
        """Copy bytes both ways until either side closes (or the relay cuts them)."""
        peer = {client: server, server: client}
        with selectors.DefaultSelector() as selector:
            for sock in peer:
                sock.setblocking(True)
                selector.register(sock, selectors.EVENT_READ)
            try:
                while not self._stopped.is_set():
                    for key, _ in selector.select(timeout=0.2):
                        data = key.fileobj.recv(BUFFER)  # type: ignore[union-attr]
                        if not data:
                            return
                        peer[key.fileobj].sendall(data)  # type: ignore[index]
                        if key.fileobj is client and COMMIT in data and self._lose_this():
                            time.sleep(0.3)  # the server commits; its answer is not passed on
                            return
            except (OSError, ValueError):
                return
            finally:
                self._drop(client, server)

    def _drop(self, *socks: socket.socket) -> None:
        with self._lock:
            for sock in socks:
                self._sockets.discard(sock)
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def _shut(self) -> None:
        """Stop listening, and drop every connection."""
        with self._lock:
            listener, self._listener = self._listener, None
            socks = list(self._sockets)
        if listener is not None:
            listener.close()
        self._drop(*socks)

    def cut(self, seconds: float) -> None:
        """Drop every connection and refuse new ones for ``seconds``, then listen again."""
        self._shut()
        if self._stopped.wait(seconds):
            return
        with self._lock:
            self._listener = self._listen(self.port)

    def lose_commit_answers(self, count: int) -> None:
        """Drop the connection of each of the next ``count`` commits once it is sent."""
        with self._lock:
            self._commits_to_lose = count

    def _lose_this(self) -> bool:
        with self._lock:
            if self._commits_to_lose <= 0:
                return False
            self._commits_to_lose -= 1
            self.commits_lost += 1
            return True

    def close(self) -> None:
        self._stopped.set()
        self._accepting.join(timeout=5)
        self._shut()


@contextlib.contextmanager
def relay(target: tuple[str, int]) -> Iterator[Relay]:
    running = Relay(target)
    try:
        yield running
    finally:
        running.close()
