"""Sandboxed worker processes: the worker's side (limits, audit hook, message loop) and the
parent's handle (start, send, wait with a deadline, kill the whole process group).

A worker is a long-lived process in its own session and process group. It keeps the
instance sets it was sent (``("set", id, version, instances)``) and answers jobs
(``("job", Job)``) and plain calls (``("call", fn, args, kwargs)``) one at a time.
"""
from __future__ import annotations

import collections
import importlib.abc
import importlib.machinery
import importlib.util
import io
import multiprocessing as mp
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import weakref
import time
from pathlib import Path
from typing import Any

from .confine import confine
from .jobs import Job, freeze_instances
from .judge import Judge, set_judge
from .limits import SandboxLimits, keep_environment
from .results import EvalResult, FailureKind

__all__ = ["SandboxWorker", "WorkerDied", "CallTimeout"]

# how long a worker may take to read a call before it starts (unpickling the function may
# import its module; a dead worker is seen at once)
_READING_SECONDS = 120.0
# what the engine waits for a job beyond its time limit, which the worker enforces on the program's
# process itself: the worker's own work (scoring the decisions) is not the program's time
_GRACE_SECONDS = 30.0
PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


class WorkerDied(RuntimeError):
    """The worker process died while running a call."""


class CallTimeout(TimeoutError):
    """A call ran past its deadline; the worker was killed."""


# -- the worker's side --------------------------------------------------------------------------

def prctl(option: int, value: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        from .confine import _libc
        _libc()[1].prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def address_space_bytes() -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def cap_memory(memory_mb: float | None) -> None:
    """Let this process grow by at most ``memory_mb`` MiB of address space from its size now
    (RLIMIT_AS); past it an allocation fails with ``MemoryError``, not the machine."""
    if memory_mb is not None:
        set_limit("RLIMIT_AS", (address_space_bytes() or 0) + int(memory_mb) * 1024 * 1024)


def set_limit(which: str, value: int) -> None:
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
_OPENING_EVENTS = {"sqlite3.connect": 0, "shelve.open": 0, "dbm.open": 0}  # event: the index of its path
_PATH_EVENTS = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate",
                "os.link", "os.symlink", "os.utime", "os.chdir", "os.chroot", "os.setxattr",
                "os.removexattr", "shutil.rmtree", "shutil.copyfile", "shutil.copymode", "shutil.copystat",
                "shutil.move", "shutil.chown", "os.mkfifo", "os.mknod"}


def audit_hook(workdir: str, compiler_dirs: tuple[str, ...] = ()):
    """A hook refusing writes outside ``workdir``, new processes, signals, sockets and ctypes
    (except the ctypes calls made by the code of the packages in ``compiler_dirs``: the
    compiled path's numba and llvmlite, which call LLVM through ctypes)."""
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

    getframe = sys._getframe
    ctypes_dir = os.path.join(os.path.dirname(os.__file__), "ctypes") + os.sep

    def from_compiler() -> bool:
        """Whether the first caller outside ctypes itself is the compiler's own code."""
        frame = getframe(2)
        while frame is not None and frame.f_code.co_filename.startswith(ctypes_dir):
            frame = frame.f_back
        return frame is not None and frame.f_code.co_filename.startswith(compiler_dirs)

    def refuse(what: str):
        raise PermissionError(f"sandbox: {what} is not allowed")

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = args
            writing = (isinstance_(mode, str_) and any(c in mode for c in "wax+")) or (
                isinstance_(flags, int) and flags & write_flags)
            if writing and not inside(path):
                refuse(f"writing {path!r} outside the working directory")
        elif event in _OPENING_EVENTS:
            path = args[_OPENING_EVENTS[event]] if args else None
            if isinstance_(path, (str_, bytes, os.PathLike)) and not inside(path) and str_(path) != ":memory:":
                refuse(f"{event} on {path!r} outside the working directory")
        elif event in _PATH_EVENTS:
            for a in args:
                if isinstance_(a, (str_, bytes, os.PathLike)) and not inside(a):
                    refuse(f"{event} on {a!r} outside the working directory")
        elif event in _PROCESS_EVENTS:
            refuse(f"{event} (processes and signals)")
        elif event in _CTYPES_EVENTS:
            if not (compiler_dirs and event != "ctypes.dlopen" and from_compiler()):
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


def sinks() -> list[_CappedSink]:
    """This process's ``sys.stdout`` and ``sys.stderr`` sinks (their counts are reset per job)."""
    return _sinks


class _EngineModules(importlib.abc.MetaPathFinder):
    """Finds, by their files, modules the engine had loaded that a fresh interpreter cannot
    import by name (a test module imported by path, a script's own helpers), so that functions
    from them can be sent to a worker. Consulted after every other finder."""

    def __init__(self, files: dict[str, str]):
        self.files = files
        self.packages = {name.rsplit(".", i)[0] for name in files for i in range(1, name.count(".") + 1)}

    def find_spec(self, name, path=None, target=None):
        file = self.files.get(name)
        if file is not None:
            return importlib.util.spec_from_file_location(name, file)
        if name in self.packages:  # a parent package that exists only as a name
            spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
            spec.submodule_search_locations = []
            return spec
        return None


def carried_state() -> dict:
    """What a worker started from a clean interpreter takes over from the engine (a forked one
    has it already): the global random states, so that programs drawing from them see what
    they would in a forked worker, and the files of modules it cannot import by name."""
    import numpy as np
    roots = tuple(os.path.realpath(p) + os.sep for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})
    files = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if (name != "__main__" and isinstance(file, str) and file.endswith(".py")
                and not os.path.realpath(file).startswith(roots)):
            files[name] = file
    return {"random": (random.getstate(), np.random.get_state()), "modules": files}


def _take_over(carried: dict | None) -> None:
    if not carried:
        return
    import numpy as np
    state, numpy_state = carried["random"]
    random.setstate(state)
    np.random.set_state(numpy_state)
    sys.meta_path.append(_EngineModules(carried["modules"]))


confinement: list[str] = []  # the kernel's part of this worker's sandbox (``confine.confine``)


def _enter_sandbox(limits: SandboxLimits, workdir: str, parent: int, method: str = "fork",
                   carried: dict | None = None) -> None:
    """Isolate this process; called first thing in a new worker. The worker runs no program (its
    program processes do, see ``judge``), so the limits meant for a program (processes, file
    size, the audit hook, seccomp) are applied there; the worker keeps the kernel's part and,
    once its spawner is forked, a memory cap of its own (an inner search that balloons fails
    with ``MemoryError``)."""
    try:
        os.setsid()  # own session and process group: killpg reaches every descendant
    except (OSError, AttributeError):  # AttributeError: no sessions on this platform
        pass
    prctl(PR_SET_PDEATHSIG, getattr(signal, "SIGKILL", 9))  # die with the process that started us
    prctl(_PR_SET_CHILD_SUBREAPER, 1)  # orphaned grandchildren come back to us
    if method == "fork" and os.getppid() != parent:  # the engine died meanwhile
        os._exit(0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the engine's business
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails with EFBIG instead
    keep_environment(os.environ)
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
    import tasks  # noqa: F401,I001 - loaded once, for every program process forked later
    if limits.jit:
        warm_compiler()  # once, here: every program process forked later has it loaded and started
    _take_over(carried)
    if limits.confine:
        confinement[:] = confine(workdir)
        prctl(PR_SET_PDEATHSIG, getattr(signal, "SIGKILL", 9))  # a change of user cleared it


def warm_compiler() -> None:
    """Load numba and compile one small function, so that LLVM's start-up is paid once in the
    worker, not again in every program process it forks."""
    if not load_compiler():
        return
    try:
        import numpy as np
        from numba import njit
        njit(cache=False)(lambda a, x: np.exp(a - x).argmax())(np.arange(3.0), 1.0)
    except Exception:  # noqa: BLE001 - the program processes compile as they can
        pass


def load_compiler() -> tuple[str, ...]:
    """Import numba (it loads LLVM's library, which the audit hook would refuse later); the
    directories of numba and llvmlite, or none when numba is not installed."""
    try:
        import llvmlite
        import numba
    except Exception:  # noqa: BLE001 - not installed or broken: every program runs in Python
        return ()
    return tuple(os.path.dirname(m.__file__) + os.sep for m in (numba, llvmlite))


def worker_main(conn, limits: SandboxLimits, workdir: str, parent: int, method: str = "fork",
                carried: dict | None = None) -> None:
    """The worker's loop (the target of the worker process). The worker is its jobs' judge: it
    never runs a program's code, it hands the program to a program process and scores the
    decisions that come back (``judge``); the calls it runs are the engine's own functions, whose
    evaluations of programs go through the judge too."""
    _enter_sandbox(limits, workdir, parent, method, carried)
    judge = Judge(limits, workdir)  # its spawner is forked now, before this process holds any instance
    cap_memory(limits.memory_mb)  # after the spawner: each program process takes its own budget
    set_judge(judge)
    sets: collections.OrderedDict[str, tuple[int, list]] = collections.OrderedDict()
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
            freeze_instances(instances)
            sets[set_id] = (version, instances)
            sets.move_to_end(set_id)
            while len(sets) > limits.cache_sets:
                sets.popitem(last=False)
            continue
        for sink in _sinks:
            sink.count = 0
        if kind == "job":
            job: Job = message[1]
            held = sets.get(job.set_id)
            if held is None or held[0] != job.version:
                conn.send(("need", job.set_id))
                continue
            conn.send(("started",))
            sets.move_to_end(job.set_id)
            reply: tuple[Any, ...] = ("result", judge.run_job(job, held[1]))
        else:  # "call"
            _, fn, args, kwargs = message
            conn.send(("started",))
            try:
                reply = ("value", fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - returned to the caller
                reply = ("raised", exc)
        try:
            conn.send(reply + (False,))
        except Exception as exc:  # noqa: BLE001 - e.g. an unpicklable return value
            conn.send(("raised", RuntimeError(f"the result could not be sent back: {exc}"), False))


# -- the parent's side --------------------------------------------------------------------------

def _wait_for_group(pgid: int | None, seconds: float = 1.0) -> None:
    """Wait (a little) until every process of group ``pgid`` is gone: killed processes take a
    moment to exit, and the next job should not share the machine with them."""
    if pgid is None or not hasattr(os, "killpg"):
        return
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        try:
            os.killpg(pgid, 0)
        except OSError:  # none left
            return
        time.sleep(0.01)


def start_method(limits: SandboxLimits) -> str:
    """How a worker starts: ``limits.method``, except that a task registered in this process
    (``tasks.register_task``) exists only here, so its workers are forked from this process."""
    method = limits.method
    if method == "server":
        import tasks
        if getattr(tasks, "_registered", None):
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
            shutil.rmtree(path, ignore_errors=True)
        except OSError:  # another user's engine (EPERM): alive, not ours to remove
            continue


_LIVE: "weakref.WeakSet[SandboxWorker]" = weakref.WeakSet()  # every handle that started a worker


def kill_live_workers() -> None:
    """Kill every worker this process started that is still alive (at exit, before the clean
    fork server and the resource tracker are stopped: a live worker holds the tracker's pipe)."""
    for worker in list(_LIVE):
        try:
            worker.kill()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


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
            from .cleanstart import clean_context
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
        _LIVE.add(self)
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

    def _started(self):
        """Wait for the worker to say it read the call (its time limit starts then: reading may
        import the modules of a function sent to it); the reply instead of that, if any."""
        reply = self._wait(time.perf_counter() + _READING_SECONDS)
        return None if reply == ("started",) else reply

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
