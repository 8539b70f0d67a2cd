"""Workers started from a clean fork server: a fresh interpreter, run with the secrets removed
from its environment, that forks the sandboxed workers. A worker so started never held the
engine's memory (an LLM client, its API key) nor its environment.

The server is multiprocessing's fork server, started by this module rather than by
multiprocessing so that its environment can be cleaned; one per engine process, started at
the first worker and stopped with the process.
"""
from __future__ import annotations

import ctypes
import io
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from multiprocessing import connection, context, forkserver, popen_forkserver, resource_tracker, spawn, util

from ..limits import allowed_environment
from ..sandbox import ONE_THREAD
from .live import kill_live_workers

__all__ = ["clean_context", "clean_environment"]

# imported once by the server, so that a worker forked from it starts in milliseconds: what every command's
# workers run (the tasks, the engine, the adversary's searches); the jobs of the rarer commands (profile,
# rerank) import their modules in the worker that first runs one, rather than every command paying for
# scipy.stats when its server starts (0.5 s of its 1.2 s). A worker forks its spawner from what it holds, and
# the spawner a process for every program, so what is loaded here is copied at every program's start: a fork
# and exit of the spawner takes 2.8 ms with these (32 MB of anonymous memory), 2.4 ms with numpy, the task
# registry and the engine alone, and took 4.1 ms while OVRP's distances loaded scipy.spatial (docs/engine.md)
PRELOAD = ["numpy", "tasks", "tasks.obp", "tasks.ojsp", "tasks.ovrp", "raise_plugin.engine", "raise_plugin.adversary",
           "raise_plugin.adversary.sandboxed"]
# what multiprocessing would re-import in every worker: the engine's main script is the
# caller's, not a worker's business
_MAIN_KEYS = ("main_path", "init_main_from_name", "init_main_from_path")


def clean_environment(environ=None) -> dict[str, str]:
    """``environ`` (default: this process's) reduced to what ``limits.allowed_environment`` keeps."""
    return allowed_environment(os.environ if environ is None else environ)


class _CleanForkServer(forkserver.ForkServer):
    """multiprocessing's fork server, started with a cleaned environment and without the
    caller's ``__main__``."""

    def __init__(self):
        super().__init__()
        self._preload_modules = list(PRELOAD)
        self._process: subprocess.Popen | None = None

    def ensure_running(self):
        with self._lock:
            resource_tracker.ensure_running()
            if self._process is not None:
                if self._process.poll() is None:
                    return
                os.close(self._forkserver_alive_fd)  # it died: start another
                self._forkserver_address = self._forkserver_alive_fd = self._forkserver_pid = None
                self._process = None
            with socket.socket(socket.AF_UNIX) as listener:
                address = connection.arbitrary_address("AF_UNIX")
                listener.bind(address)
                if not util.is_abstract_socket_namespace(address):
                    os.chmod(address, 0o600)
                listener.listen()
                # every client holds the write end; when all are gone the server stops
                alive_r, alive_w = os.pipe()
                try:
                    # a subreaper that outlives a stop signal (below)
                    command = (f"import sys; sys.path[:0] = {sys.path!r}; "
                               f"from raise_plugin.engine.workers.cleanstart import _prepare_server; _prepare_server(); "
                               f"from multiprocessing.forkserver import main; "
                               f"main({listener.fileno()}, {alive_r}, {self._preload_modules!r})")
                    args = [spawn.get_executable()] + util._args_from_interpreter_flags() + ["-c", command]
                    self._process = subprocess.Popen(args, env={**clean_environment(), **ONE_THREAD}, close_fds=True,
                                                     pass_fds=(listener.fileno(), alive_r),
                                                     stdin=subprocess.DEVNULL)
                except BaseException:
                    os.close(alive_w)
                    raise
                finally:
                    os.close(alive_r)
                self._forkserver_address = address
                self._forkserver_alive_fd = alive_w
                self._forkserver_pid = self._process.pid
                # at exit, after multiprocessing has ended its children: stop and reap the server
                # and the resource tracker, so that the process leaves nothing behind, not even a
                # zombie for init to reap
                util.Finalize(None, self.stop, exitpriority=-100)

    def stop(self) -> None:
        """Kill the workers still alive (each holds the resource tracker's pipe); stop the
        server (it ends when its last client's "alive" pipe closes) and wait for it; then the
        resource tracker likewise, never more than a few seconds each. Safe to call more than once."""
        with self._lock:
            process, self._process = self._process, None
            if process is None:
                return
            kill_live_workers()
            if self._forkserver_alive_fd is not None:
                os.close(self._forkserver_alive_fd)
            self._forkserver_address = self._forkserver_alive_fd = self._forkserver_pid = None
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        _stop_tracker()


def _stop_tracker(seconds: float = 5.0) -> None:
    """Stop multiprocessing's resource tracker as its own ``_stop`` does (close the pipe it
    reads, reap it), but wait no longer than ``seconds``: a process that still holds the pipe
    would keep it alive for ever, so past that it is killed, then reaped."""
    tracker = resource_tracker._resource_tracker
    lock = getattr(tracker, "_lock", None)
    if lock is None:
        return
    with lock:
        fd, pid = getattr(tracker, "_fd", None), getattr(tracker, "_pid", None)
        if fd is None or pid is None:
            return
        tracker._fd = tracker._pid = None
    try:
        os.close(fd)
    except OSError:
        pass
    deadline = time.monotonic() + seconds
    try:
        while os.waitpid(pid, os.WNOHANG)[0] == 0:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return
            time.sleep(0.01)
    except (ChildProcessError, ProcessLookupError):  # not ours to reap, or already gone
        pass


def _prepare_server() -> None:
    """The server, before multiprocessing's loop: it ignores SIGTERM, as that loop has it ignore
    SIGINT. Both stop a run by the engine's process (``commands.run.stop_on_signals``), and a shell,
    ``timeout``, systemd or a batch scheduler sends them to the whole process group, the server
    included; a server killed so took its workers with it (they die with it), and the inner search
    under way was lost as a dead worker's, not redone by ``resume``. It stops when its last client
    does (its alive pipe), and is a subreaper: it reaps what a killed worker's children leave."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # the server reaps the orphans it adopts; multiprocessing warns about every one
    warnings.filterwarnings("ignore", message="forkserver: waitpid returned")
    try:
        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


_server: list = [None, None]  # [the server, the pid of the process that started it]
_server_lock = threading.Lock()


def _the_server() -> _CleanForkServer:
    with _server_lock:
        if _server[0] is None or _server[1] != os.getpid():  # a forked copy of the engine gets its own
            _server[:] = [_CleanForkServer(), os.getpid()]
        return _server[0]


class _Popen(popen_forkserver.Popen):
    """multiprocessing's fork-server Popen, through the clean server."""

    def _launch(self, process_obj):
        prep_data = spawn.get_preparation_data(process_obj._name)
        for key in _MAIN_KEYS:
            prep_data.pop(key, None)
        buf = io.BytesIO()
        context.set_spawning_popen(self)
        try:
            context.reduction.dump(prep_data, buf)
            context.reduction.dump(process_obj, buf)
        finally:
            context.set_spawning_popen(None)
        self.sentinel, w = _the_server().connect_to_new_process(self._fds)
        _parent_w = os.dup(w)  # the child watches it to learn that this process went away
        self.finalizer = util.Finalize(self, util.close_fds, (_parent_w, self.sentinel))
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


class _CleanProcess(context.ForkServerProcess):
    _start_method = "forkserver"

    @staticmethod
    def _Popen(process_obj):
        return _Popen(process_obj)


class _CleanContext(context.ForkServerContext):
    _name = "forkserver"
    Process = _CleanProcess


_context = _CleanContext()


def clean_context() -> _CleanContext:
    """A multiprocessing context whose processes are forked by the clean server."""
    return _context
