"""The engine's handle on one sandboxed worker process (``worker``): start it, send it instance
sets, jobs and calls, wait for each with a deadline, and kill its whole process group."""
from __future__ import annotations

import collections
import multiprocessing as mp
import os
import signal
import tempfile
import threading
import time
from pathlib import Path

from tasks import registered_here

from ..jobs import Job
from ..limits import LONGEST_WAIT, SandboxLimits
from ..results import EvalResult, FailureKind
from ..sandbox import remove_tree
from .carried import carried_state
from .live import register_live_worker
from .worker import worker_main

try:
    from .cleanstart import clean_context
except ImportError:  # no fork server on this platform (Windows): its workers are spawned
    clean_context = None

__all__ = ["SandboxWorker", "WorkerDied", "CallTimeout", "start_method", "sweep_stale_workdirs", "WORKDIR_PREFIX"]

# how long a worker may take to read a call before it starts (unpickling the function may
# import its module; a dead worker is seen at once)
_READING_SECONDS = 120.0
# what the engine waits for a job beyond its time limit, which the worker enforces on the program's
# process itself: the worker's own work (scoring the decisions) is not the program's time
_GRACE_SECONDS = 30.0


class WorkerDied(RuntimeError):
    """The worker process died while running a call."""


class CallTimeout(TimeoutError):
    """A call ran past its deadline; the worker was killed."""


def _group_runs(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs. A killed process whose parent has not
    reaped it yet (a zombie: an orphan adopted by an init that reaps slowly, as in many
    containers) still answers ``killpg(pgid, 0)`` but runs nothing, so on Linux it does not count."""
    try:
        os.killpg(pgid, 0)
    except OSError:  # none left
        return False
    try:
        entries = os.scandir("/proc")
    except OSError:  # no /proc: any process of the group counts
        return True
    group = str(pgid)
    with entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(os.path.join(entry.path, "stat")) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):  # gone meanwhile
                continue
            if len(fields) > 2 and fields[2] == group and fields[0] not in ("Z", "X"):
                return True
    return False


def _wait_for_group(pgid: int | None, seconds: float = 1.0) -> None:
    """Wait (a little) until no process of group ``pgid`` runs: killed processes take a
    moment to exit, and the next job should not share the machine with them."""
    if pgid is None or not hasattr(os, "killpg"):
        return
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        if not _group_runs(pgid):
            return
        time.sleep(0.01)


def start_method(limits: SandboxLimits) -> str:
    """How a worker starts: ``limits.method``, except that a task registered in this process
    (``tasks.register_task``) exists only here, so its workers are forked from this process."""
    method = limits.method
    if method == "server" and registered_here():
        return "fork"
    return method


WORKDIR_PREFIX = "raise-sandbox-"  # + the engine's pid: a folder outlives its engine only on kill -9
_swept: list[bool] = []


def sweep_stale_workdirs() -> None:
    """Remove (once per process) the workers' folders that engines killed with SIGKILL left in
    the temporary directory: those whose engine process is gone."""
    if _swept:
        return
    _swept.append(True)
    for path in Path(tempfile.gettempdir()).glob(f"{WORKDIR_PREFIX}*-*"):
        pid = path.name[len(WORKDIR_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # its engine runs
        except ProcessLookupError:
            remove_tree(str(path))
        except OSError:  # another user's engine (EPERM): alive, not ours to remove
            continue


class SandboxWorker:
    """The parent's handle on one worker process. Not thread-safe: one owner at a time."""

    def __init__(self, limits: SandboxLimits):
        self.limits = limits
        self.process = None
        self.conn = None
        self.workdir = None
        self.sets: collections.OrderedDict[str, int] = collections.OrderedDict()
        self.started = 0
        self.sets_sent = 0
        self._kill_lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def alive(self) -> bool:
        return self.process is not None and self.process.is_alive()

    def start(self) -> None:
        method = start_method(self.limits)
        if method == "server":
            ctx = clean_context()
        else:
            ctx = mp.get_context(method)
        parent_conn, child_conn = ctx.Pipe(duplex=True)
        sweep_stale_workdirs()
        self.workdir = tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-")
        carried = None if method == "fork" else carried_state()
        self.process = ctx.Process(target=worker_main, daemon=True, name="raise-sandbox",
                                   args=(child_conn, self.limits, self.workdir, os.getpid(), method, carried))
        self.process.start()
        register_live_worker(self)
        child_conn.close()
        self.conn = parent_conn
        self.sets.clear()
        self.started += 1

    def ensure(self) -> None:
        if not self.alive():
            self.kill()
            self.start()

    def kill(self) -> None:
        """Kill the worker and everything in its process group; remove its directory."""
        with self._kill_lock:  # the owner thread and an exit-time finalizer may both get here
            self._kill()

    def _kill(self) -> None:
        if self.process is not None:
            pid = self.process.pid
            if hasattr(os, "killpg") and pid is not None:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:  # already gone
                    pass
            try:
                self.process.kill()
            except (OSError, ValueError, AttributeError):
                pass
            if pid is not None:  # a process whose start failed has nothing to join
                self.process.join(5)
                _wait_for_group(pid)
            try:
                self.process.close()
            except (ValueError, AttributeError):
                pass
            self.process = None
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        if self.workdir is not None:
            remove_tree(self.workdir)
            self.workdir = None
        self.sets.clear()

    def stop(self) -> None:
        if self.conn is not None and self.alive():
            try:
                self.conn.send(("stop",))
                self.process.join(1)
            except (OSError, ValueError):
                pass
        self.kill()

    def _reap(self) -> None:
        """Wait a moment for a worker that died (or never started) to be gone."""
        if self.process is not None and self.process.pid is not None:
            self.process.join(1)

    def exit_description(self) -> str:
        code = self.process.exitcode if self.process is not None else None
        if code is None:
            return "the worker process died"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"the worker process was killed by {name}"
        return f"the worker process exited with status {code}"

    def _send_set(self, instance_set) -> None:
        self.sets_sent += 1
        self.conn.send(("set", instance_set.id, instance_set.version, instance_set.instances))
        self.sets[instance_set.id] = instance_set.version
        self.sets.move_to_end(instance_set.id)
        while len(self.sets) > self.limits.cache_sets:
            self.sets.popitem(last=False)

    def _started(self):
        """Wait for the worker to say it read the call (its time limit starts then: reading may
        import the modules of a function sent to it); the reply instead of that, if any."""
        reply = self._wait(time.perf_counter() + _READING_SECONDS)
        return None if reply == ("started",) else reply

    def _wait(self, deadline: float | None):
        """The next reply, ``"timeout"`` or ``"died"``."""
        try:
            while True:  # in waits of at most LONGEST_WAIT, which poll takes whatever the deadline
                remaining = None if deadline is None else max(0.0, deadline - time.perf_counter())
                if self.conn.poll(None if remaining is None else min(remaining, LONGEST_WAIT)):
                    return self.conn.recv()
                if remaining <= LONGEST_WAIT:
                    return "timeout"
        except (EOFError, OSError):
            return "died"

    def run_job(self, job: Job, instance_set) -> EvalResult:
        """Run one job; the result is invalid (timeout, died, ...) rather than an exception."""
        count = len(job.indices)
        start, broken = time.perf_counter(), None
        try:
            self.ensure()
            if self.sets.get(instance_set.id) != instance_set.version:
                self._send_set(instance_set)
            self.conn.send(("job", job))
            reply = self._started()
            if isinstance(reply, tuple) and reply[0] == "need":
                self._send_set(instance_set)
                self.conn.send(("job", job))
                reply = self._started()
            if reply is None:
                reply = self._wait(None if job.timeout is None
                                   else time.perf_counter() + float(job.timeout) + _GRACE_SECONDS)
        except (BrokenPipeError, EOFError, ConnectionError, OSError) as exc:
            reply, broken = "died", exc
        seconds = time.perf_counter() - start
        pid = self.pid
        if reply == "timeout":
            self.kill()
            return EvalResult.failed(count, FailureKind.TIMEOUT, f"timed out after {job.timeout:g} s", seconds, pid)
        if reply == "died":
            self._reap()
            reason = (f"{self.exit_description()} during the evaluation" if self.pid is not None or broken is None
                      else f"the worker process could not start ({type(broken).__name__}: {broken})")
            self.kill()
            return EvalResult.failed(count, FailureKind.WORKER_DIED, reason, seconds, pid)
        kind, result, recycle = reply
        if recycle:
            self.kill()
        if kind != "result":
            return EvalResult.failed(count, FailureKind.ERROR, str(result), seconds, pid)
        return result.with_seconds(seconds, pid)

    def call(self, fn, args: tuple, kwargs: dict, timeout: float | None):
        """``fn(*args, **kwargs)`` in the worker; raises what it raised, ``CallTimeout`` or ``WorkerDied``."""
        try:
            self.ensure()
            self.conn.send(("call", fn, args, kwargs))
            reply = self._started()
            if reply is None:
                reply = self._wait(None if timeout is None else time.perf_counter() + float(timeout))
        except (BrokenPipeError, EOFError, ConnectionError):
            reply = "died"
        if reply == "timeout":
            self.kill()
            raise CallTimeout(f"the call timed out after {timeout:g} s")
        if reply == "died":
            self._reap()
            reason = self.exit_description()
            self.kill()
            raise WorkerDied(f"{reason} during the call")
        kind, value, recycle = reply
        if recycle:
            self.kill()
        if kind == "raised":
            raise value
        return value
