"""Sandboxed worker processes: the worker's side (limits, audit hook, message loop) and the
parent's handle (start, send, wait with a deadline, kill the whole process group).

A worker is a long-lived process in its own session and process group. It keeps the
instance sets it was sent (``("set", id, version, instances)``) and answers jobs
(``("job", Job)``) and plain calls (``("call", fn, args, kwargs)``) one at a time.
"""
from __future__ import annotations

import collections
import io
import multiprocessing as mp
import operator
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from typing import Any

from .jobs import Job, execute_job, freeze_instances
from .limits import SandboxLimits, scrub_environment
from .results import EvalResult, FailureKind

__all__ = ["SandboxWorker", "WorkerDied", "CallTimeout"]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


class WorkerDied(RuntimeError):
    """The worker process died while running a call."""


class CallTimeout(TimeoutError):
    """A call ran past its deadline; the worker was killed."""


# -- the worker's side --------------------------------------------------------------------------

def _prctl(option: int, value: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _address_space_bytes() -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _set_limit(which: str, value: int) -> None:
    try:
        import resource
    except ImportError:  # not on this platform: no resource limits
        return
    res = getattr(resource, which, None)
    if res is None:
        return
    try:
        soft, hard = resource.getrlimit(res)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(res, (value, value))
    except (ValueError, OSError):
        pass


_PROCESS_EVENTS = {"os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                   "subprocess.Popen", "os.kill", "os.killpg", "signal.pthread_kill", "os.startfile",
                   "pty.spawn", "os.setuid", "os.setgid", "os.setresuid", "os.setresgid"}
_CTYPES_EVENTS = {"ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.call_function",
                  "ctypes.addressof", "ctypes.string_at", "ctypes.wstring_at"}
_PATH_EVENTS = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate",
                "os.link", "os.symlink", "os.utime", "os.chdir", "os.chroot", "os.setxattr",
                "os.removexattr", "shutil.rmtree", "shutil.copyfile", "shutil.copymode", "shutil.copystat",
                "shutil.move", "shutil.chown", "os.mkfifo", "os.mknod"}


def _audit_hook(workdir: str):
    """A hook refusing writes outside ``workdir``, new processes, signals, sockets and ctypes."""
    root = os.path.realpath(workdir)
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    realpath, fspath, isinstance_, str_ = os.path.realpath, os.fspath, isinstance, str

    def inside(path) -> bool:
        if isinstance_(path, int):
            return True  # an already open descriptor
        try:
            full = realpath(fspath(path) if not isinstance_(path, bytes) else os.fsdecode(path))
        except (TypeError, ValueError):
            return False
        return full == root or full.startswith(root + os.sep)

    def refuse(what: str):
        raise PermissionError(f"sandbox: {what} is not allowed")

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = args
            writing = (isinstance_(mode, str_) and any(c in mode for c in "wax+")) or (
                isinstance_(flags, int) and flags & write_flags)
            if writing and not inside(path):
                refuse(f"writing {path!r} outside the working directory")
        elif event in _PATH_EVENTS:
            for a in args:
                if isinstance_(a, (str_, bytes, os.PathLike)) and not inside(a):
                    refuse(f"{event} on {a!r} outside the working directory")
        elif event in _PROCESS_EVENTS:
            refuse(f"{event} (processes and signals)")
        elif event in _CTYPES_EVENTS:
            refuse(f"{event} (ctypes)")
        elif event.startswith("socket."):
            refuse(f"{event} (network)")

    return hook


class _CappedSink(io.TextIOBase):
    """``sys.stdout``/``sys.stderr`` of a worker: discards text, refuses it past the cap."""

    def __init__(self, cap_bytes: float | None):
        self.cap = cap_bytes
        self.count = 0

    def writable(self) -> bool:
        return True

    def write(self, text) -> int:
        self.count += len(text)
        if self.cap is not None and self.count > self.cap:
            raise OSError(f"sandbox: the program printed more than {self.cap / 2 ** 20:g} MB")
        return len(text)


_sinks: list[_CappedSink] = []


def _enter_sandbox(limits: SandboxLimits, workdir: str, parent: int) -> None:
    """Isolate this process; called first thing in a new worker."""
    try:
        os.setsid()  # own session and process group: killpg reaches every descendant
    except (OSError, AttributeError):  # AttributeError: no sessions on this platform
        pass
    _prctl(_PR_SET_PDEATHSIG, getattr(signal, "SIGKILL", 9))  # die with the engine
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)  # orphaned grandchildren come back to us, to be found
    if limits.method != "forkserver" and os.getppid() != parent:  # the engine died meanwhile
        os._exit(0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the engine's business
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails with EFBIG instead
    scrub_environment(os.environ)
    os.environ["TMPDIR"] = workdir
    tempfile.tempdir = workdir
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    sys.stdin = open(os.devnull)
    cap = None if limits.output_mb is None else limits.output_mb * 2 ** 20
    _sinks[:] = [_CappedSink(cap), _CappedSink(cap)]
    sys.stdout = sys.__stdout__ = _sinks[0]
    sys.stderr = sys.__stderr__ = _sinks[1]
    os.chdir(workdir)
    if limits.memory_mb is not None:
        base = _address_space_bytes() or 0
        _set_limit("RLIMIT_AS", base + int(limits.memory_mb) * 1024 * 1024)
    if limits.max_processes is not None:
        _set_limit("RLIMIT_NPROC", int(limits.max_processes))
    if limits.file_mb is not None:
        _set_limit("RLIMIT_FSIZE", int(limits.file_mb) * 1024 * 1024)
    _set_limit("RLIMIT_CORE", 0)
    import tasks  # noqa: F401 - before the audit hook, so the import machinery is warm
    if limits.audit:
        sys.addaudithook(_audit_hook(workdir))


def _stray_children() -> int:
    """Reap and count child processes the program left behind (0 when there are none)."""
    count = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except (ChildProcessError, AttributeError):
            return count
        if pid == 0:
            return count + 1  # alive ones remain: the engine kills the process group
        count += 1


_WATCHED = ("numpy", "builtins", "math")
_WATCHED_PACKAGES = ("tasks", "raise_plugin")
_watch_list: list = [-1, []]


def _watched() -> list[tuple[str, dict]]:
    """(name, namespace) of the modules evaluation relies on; recomputed when imports happen."""
    if _watch_list[0] != len(sys.modules):
        found = []
        for name, module in list(sys.modules.items()):
            if module is not None and (name in _WATCHED or name.split(".", 1)[0] in _WATCHED_PACKAGES):
                namespace = getattr(module, "__dict__", None)
                if namespace is not None:
                    found.append((name, namespace))
        _watch_list[:] = [len(sys.modules), found]
    return _watch_list[1]


def _module_state() -> list[tuple[str, dict, list]]:
    """The attribute values of the watched modules (references, compared by identity)."""
    return [(name, namespace, list(namespace.values())) for name, namespace in _watched()]


def _changed_modules(before: list) -> list[str]:
    """Modules one of whose attributes was rebound or deleted since ``before`` (new ones are fine:
    a dict keeps insertion order, so old attributes stay a prefix of the values)."""
    changed = []
    for name, namespace, values in before:
        now = list(namespace.values())
        if len(now) < len(values) or not all(map(operator.is_, now[:len(values)], values)):
            changed.append(name)
    return changed


def worker_main(conn, limits: SandboxLimits, workdir: str, parent: int) -> None:
    """The worker's loop (the target of the worker process)."""
    _enter_sandbox(limits, workdir, parent)
    sets: collections.OrderedDict[str, tuple[int, list, list[int]]] = collections.OrderedDict()
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            os._exit(0)
        except BaseException as exc:  # noqa: BLE001 - e.g. a function this process cannot import
            conn.send(("raised", RuntimeError(f"the worker could not read the call: {exc}"), False))
            continue
        kind = message[0]
        if kind == "stop":
            os._exit(0)
        if kind == "set":
            _, set_id, version, instances = message
            sets[set_id] = (version, instances, freeze_instances(instances))
            sets.move_to_end(set_id)
            while len(sets) > limits.cache_sets:
                sets.popitem(last=False)
            continue
        before = _module_state()
        for sink in _sinks:
            sink.count = 0
        if kind == "job":
            job: Job = message[1]
            held = sets.get(job.set_id)
            if held is None or held[0] != job.version:
                conn.send(("need", job.set_id))
                continue
            sets.move_to_end(job.set_id)
            result = execute_job(job, held[1], held[2])
            reply: tuple[Any, ...] = ("result", result)
        else:  # "call"
            _, fn, args, kwargs = message
            try:
                reply = ("value", fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - returned to the caller
                reply = ("raised", exc)
        recycle = result_kind(reply) in (FailureKind.MEMORY, FailureKind.TAMPERED)
        strays = _stray_children()
        if strays:
            recycle = True
            reply = _mark(reply, FailureKind.PROCESSES, f"the program started {strays} child process(es)")
        changed = _changed_modules(before)
        if changed:
            recycle = True
            reply = _mark(reply, FailureKind.TAMPERED, f"the program modified module {changed[0]}")
        try:
            conn.send(reply + (recycle,))
        except Exception as exc:  # noqa: BLE001 - e.g. an unpicklable return value
            conn.send(("raised", RuntimeError(f"the result could not be sent back: {exc}"), recycle))
        if recycle:
            os._exit(0)


def result_kind(reply) -> str | None:
    return reply[1].kind if reply[0] == "result" else None


def _mark(reply, kind: str, reason: str):
    if reply[0] == "result":
        return ("result", EvalResult.failed(len(reply[1].metrics), kind, reason, reply[1].seconds))
    return ("raised", RuntimeError(reason))


# -- the parent's side --------------------------------------------------------------------------

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
        ctx = mp.get_context(self.limits.method)
        parent_conn, child_conn = ctx.Pipe(duplex=True)
        self.workdir = tempfile.mkdtemp(prefix="raise-sandbox-")
        self.process = ctx.Process(target=worker_main, args=(child_conn, self.limits, self.workdir, os.getpid()),
                                   daemon=True, name="raise-sandbox")
        self.process.start()
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
            self.process.join(5)
            try:
                self.process.close()
            except (ValueError, AttributeError):
                pass
            self.process = None
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
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

    def _wait(self, deadline: float | None):
        """The next reply, ``"timeout"`` or ``"died"``."""
        remaining = None if deadline is None else max(0.0, deadline - time.perf_counter())
        try:
            if not self.conn.poll(remaining):
                return "timeout"
            return self.conn.recv()
        except (EOFError, OSError):
            return "died"

    def run_job(self, job: Job, instance_set) -> EvalResult:
        """Run one job; the result is invalid (timeout, died, ...) rather than an exception."""
        count = len(job.indices)
        start = time.perf_counter()
        deadline = None if job.timeout is None else start + float(job.timeout)
        try:
            self.ensure()
            if self.sets.get(instance_set.id) != instance_set.version:
                self._send_set(instance_set)
            self.conn.send(("job", job))
            reply = self._wait(deadline)
            if isinstance(reply, tuple) and reply[0] == "need":
                self._send_set(instance_set)
                self.conn.send(("job", job))
                reply = self._wait(deadline)
        except (BrokenPipeError, EOFError, ConnectionError, OSError):
            reply = "died"
        seconds = time.perf_counter() - start
        pid = self.pid
        if reply == "timeout":
            self.kill()
            return EvalResult.failed(count, FailureKind.TIMEOUT, f"timed out after {job.timeout:g} s", seconds, pid)
        if reply == "died":
            self.process.join(1)
            reason = f"{self.exit_description()} during the evaluation"
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
        deadline = None if timeout is None else time.perf_counter() + float(timeout)
        try:
            self.ensure()
            self.conn.send(("call", fn, args, kwargs))
            reply = self._wait(deadline)
        except (BrokenPipeError, EOFError, ConnectionError):
            reply = "died"
        if reply == "timeout":
            self.kill()
            raise CallTimeout(f"the call timed out after {timeout:g} s")
        if reply == "died":
            self.process.join(1)
            reason = self.exit_description()
            self.kill()
            raise WorkerDied(f"{reason} during the call")
        kind, value, recycle = reply
        if recycle:
            self.kill()
        if kind == "raised":
            raise value
        return value
