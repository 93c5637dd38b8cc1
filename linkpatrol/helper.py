"""A second process for the command's last piece of work: half of a big report.

The crawl keeps both cores busy; once it is over, the report is read and written on one.
A :class:`Helper` is started then, and only for a report big enough to be worth it: a
fresh interpreter (no fork: the command has threads by then, and a process forked at
the start would sit through the whole crawl holding memory). While it starts up, the
command reads the report's first parts. It waits on a pipe for a job: a function that
yields what it makes, sent back item by item. The parent reads the items as they come,
and does the rest of the work itself if the helper fails or dies.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import pickle
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from multiprocessing.connection import Connection
from typing import Any, TypeVar

T = TypeVar("T")

_ITEM, _DONE, _FAILED = "item", "done", "failed"

# The helper's interpreter is told the end of its pipe (argv[1]), the modules to import
# while it waits for its job (argv[2], comma-separated) and the command's module path
# (argv[3:]), so that it imports the same linkpatrol.
_BOOT = (
    "import sys; sys.path[:] = sys.argv[3:]; "
    "from linkpatrol.helper import serve; serve(int(sys.argv[1]), sys.argv[2])"
)


class HelperFailed(Exception):
    """The helper could not finish its job (it raised, or its process ended)."""


def serve(fd: int, preload: str = "") -> None:
    """The helper's life: import the modules named in ``preload`` (comma-separated), run
    the one job sent over the pipe ``fd``, send back what it yields, and end (also when
    the pipe closes first).

    Terminal signals go to the whole process group; the command decides what they mean,
    so the helper ignores them and ends when its pipe closes.
    """
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    conn = Connection(fd)
    for module in filter(None, preload.split(",")):
        with contextlib.suppress(ImportError):  # the job names its module again
            importlib.import_module(module)
    # what is loaded by now lives as long as the helper: its collections leave it out, as
    # the crawl's leave out what it started with
    gc.freeze()
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
    """A process started for one job; see the module's docstring."""

    def __init__(self, process: subprocess.Popen[bytes], conn: Connection) -> None:
        self._process = process
        self._conn = conn
        self._used = False

    @classmethod
    def start(cls, preload: Sequence[str] = ()) -> Helper | None:
        """A helper, starting up, importing the modules ``preload`` names while the
        command has yet to send its job; None where none can be started (no interpreter
        to run, as in a frozen build, no pipe, no process)."""
        if not sys.executable or getattr(sys, "frozen", False):
            return None
        try:
            parent, child = socket.socketpair()
        except OSError:
            return None
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(child.fileno()), ",".join(preload), *sys.path],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,  # a failure is told by the command, in one line
                pass_fds=(child.fileno(),),
            )
        except (OSError, ValueError, subprocess.SubprocessError):
            parent.close()
            return None
        finally:
            child.close()
        return cls(process, Connection(parent.detach()))

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
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=1)
        return self._process.returncode

    def close(self) -> None:
        """End the helper: its pipe closes, and it is killed if it does not end at once."""
        with contextlib.suppress(OSError):
            self._conn.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=2)
            return
        with contextlib.suppress(OSError):
            self._process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=2)
