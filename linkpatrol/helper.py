"""A second process for the command's last piece of work: half of a big report.

The crawl keeps both cores busy; once it is over, the report is read and written on one.
A :class:`Helper` is forked while the command still has a single thread (a fork taken
while other threads hold locks could leave the child waiting on them for ever) and waits
on a pipe for a job: a function that yields what it makes, sent back item by item. The
parent reads the items as they come, and does the rest of the work itself if the helper
fails or dies.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import pickle
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import Connection
from typing import Any, TypeVar

T = TypeVar("T")

_ITEM, _DONE, _FAILED = "item", "done", "failed"


class HelperFailed(Exception):
    """The helper could not finish its job (it raised, or its process ended)."""


def _serve(conn: Connection, inherited: list[Connection]) -> None:
    """The helper's life: run the one job sent, send back what it yields, and end (also
    when the pipe closes first).

    Terminal signals go to the whole process group; the command decides what they mean,
    so the helper ignores them and ends when its pipe closes.
    """
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    for other in inherited:
        other.close()
    try:
        job = conn.recv_bytes()
    except (EOFError, OSError):
        return
    try:
        module, name, args = pickle.loads(job)
        fn = getattr(importlib.import_module(module), name)
        for item in fn(*args):
            conn.send_bytes(pickle.dumps((_ITEM, item), protocol=pickle.HIGHEST_PROTOCOL))
        answer: tuple[str, Any] = (_DONE, None)
    except (BrokenPipeError, ConnectionResetError):
        return  # the command stopped listening
    except Exception as exc:
        answer = (_FAILED, f"{type(exc).__name__}: {exc}")
    with contextlib.suppress(OSError):
        conn.send_bytes(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))


class Helper:
    """A forked process for one job; see the module's docstring."""

    def __init__(self, process: Any, conn: Connection) -> None:
        self._process = process
        self._conn = conn
        self._used = False

    @classmethod
    def start(cls, *, among_threads: bool = False) -> Helper | None:
        """A helper, or None where it cannot be had safely: other threads running (unless
        ``among_threads``: the caller knows none of them holds a lock the job needs), or no
        fork on this system."""
        if threading.active_count() != 1 and not among_threads:
            return None
        try:
            context = multiprocessing.get_context("fork")
        except ValueError:
            return None
        parent, child = context.Pipe()
        process = context.Process(
            target=_serve, args=(child, [parent]), daemon=True, name="linkpatrol-helper"
        )
        try:
            process.start()
        except OSError:
            parent.close()
            child.close()
            return None
        child.close()
        return cls(process, parent)

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def run(self, fn: Callable[..., Iterable[T]], *args: Any) -> Iterator[T]:
        """Send the job ``fn(*args)`` now; what it yields in the helper comes item by item
        from the iterator returned. HelperFailed (here or from the iterator) if the helper
        cannot finish; what came before is good. ``fn`` is a module's function, named to
        the helper (which has the same modules); a job left unfinished ends the helper."""
        if self._used:
            raise HelperFailed("the helper has had its job")
        self._used = True
        job = (fn.__module__, fn.__name__, args)
        try:
            self._conn.send_bytes(pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError as exc:
            self.close()
            raise HelperFailed(f"cannot reach the helper: {exc}") from None
        return self._results()

    def _results(self) -> Iterator[Any]:
        finished = False
        try:
            while True:
                try:
                    kind, payload = pickle.loads(self._conn.recv_bytes())
                except (EOFError, OSError):
                    raise HelperFailed(
                        f"the helper ended (exit code {self._exit_code()})"
                    ) from None
                if kind == _ITEM:
                    yield payload
                elif kind == _DONE:
                    finished = True
                    self._conn.close()  # its one job done, it ends while the command goes on
                    return
                else:
                    raise HelperFailed(str(payload))
        finally:
            if not finished:
                self.close()

    def _exit_code(self) -> int | None:
        self._process.join(timeout=1)
        return self._process.exitcode

    def close(self) -> None:
        """End the helper: its pipe closes, and it is killed if it does not end at once."""
        with contextlib.suppress(OSError):
            self._conn.close()
        self._process.join(timeout=2)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(timeout=2)
