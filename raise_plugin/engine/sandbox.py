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
import operator
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import weakref
import time
from typing import Any

from .confine import confine
from .jobs import Job, execute_job, freeze_instances
from .limits import SandboxLimits, scrub_environment
from .results import EvalResult, FailureKind

__all__ = ["SandboxWorker", "WorkerDied", "CallTimeout"]

# how long a worker may take to read a call before it starts (unpickling the function may
# import its module; a dead worker is seen at once)
_READING_SECONDS = 120.0
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
_OPENING_EVENTS = {"sqlite3.connect": 0, "shelve.open": 0, "dbm.open": 0}  # event: the index of its path
_PATH_EVENTS = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate",
                "os.link", "os.symlink", "os.utime", "os.chdir", "os.chroot", "os.setxattr",
                "os.removexattr", "shutil.rmtree", "shutil.copyfile", "shutil.copymode", "shutil.copystat",
                "shutil.move", "shutil.chown", "os.mkfifo", "os.mknod"}


def _audit_hook(workdir: str, compiler_dirs: tuple[str, ...] = ()):
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
    """Isolate this process; called first thing in a new worker."""
    try:
        os.setsid()  # own session and process group: killpg reaches every descendant
    except (OSError, AttributeError):  # AttributeError: no sessions on this platform
        pass
    _prctl(_PR_SET_PDEATHSIG, getattr(signal, "SIGKILL", 9))  # die with the process that started us
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)  # orphaned grandchildren come back to us, to be found
    if method == "fork" and os.getppid() != parent:  # the engine died meanwhile
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
    compiler_dirs = _load_compiler() if limits.jit else ()  # before the memory cap: not the program's budget
    if limits.memory_mb is not None:
        base = _address_space_bytes() or 0
        _set_limit("RLIMIT_AS", base + int(limits.memory_mb) * 1024 * 1024)
    if limits.file_mb is not None:
        _set_limit("RLIMIT_FSIZE", int(limits.file_mb) * 1024 * 1024)
    _set_limit("RLIMIT_CORE", 0)
    import tasks  # noqa: F401 - before the audit hook, so the import machinery is warm
    _take_over(carried)
    if limits.confine:
        confinement[:] = confine(workdir)
        _prctl(_PR_SET_PDEATHSIG, getattr(signal, "SIGKILL", 9))  # a change of user cleared it
    if limits.max_processes is not None:  # after the change of user: the limit counts the new user's
        _set_limit("RLIMIT_NPROC", int(limits.max_processes))
    if limits.audit:
        sys.addaudithook(_audit_hook(workdir, compiler_dirs))


def _load_compiler() -> tuple[str, ...]:
    """Import numba (it loads LLVM's library, which the audit hook would refuse later); the
    directories of numba and llvmlite, or none when numba is not installed."""
    try:
        import llvmlite
        import numba
    except Exception:  # noqa: BLE001 - not installed or broken: every program runs in Python
        return ()
    return tuple(os.path.dirname(m.__file__) + os.sep for m in (numba, llvmlite))


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


def _task_classes() -> list[type]:
    """Every ``tasks.Task`` subclass loaded, with their bases."""
    from tasks.common import Task
    subclasses: dict[type, None] = {}
    todo = [Task]
    while todo:
        cls = todo.pop()
        if cls not in subclasses:
            subclasses[cls] = None
            todo.extend(cls.__subclasses__())
    return list(dict.fromkeys(base for cls in subclasses for base in cls.__mro__[:-1]))


def _task_state() -> list[tuple[Any, list]]:
    """The shared task objects (``tasks.get_task``'s) and every task class, with their
    attributes (references, compared by identity): a program that replaces a task, or one of
    its methods, changes what later evaluations are scored by."""
    import tasks
    state: list[tuple[Any, list]] = []
    for registry in _registries(tasks):
        state.append((registry, list(registry.items())))
        for task in registry.values():
            state.append((task, list(getattr(task, "__dict__", {}).items())))
    for cls in _task_classes():
        state.append((cls, list(cls.__dict__.items())))
    return state


def _registries(tasks) -> list[dict]:
    return [r for r in (getattr(tasks, "_cache", None), getattr(tasks, "_registered", None)) if isinstance(r, dict)]


def _hidden_method(task) -> str | None:
    """An attribute of ``task`` itself that hides a method or property of its class (a cache
    written by ``functools.cached_property`` is its own business)."""
    import functools
    import inspect
    cls = type(task)
    for name in getattr(task, "__dict__", {}):
        if hasattr(cls, name) and not isinstance(inspect.getattr_static(cls, name), functools.cached_property):
            return name
    return None


def _changed_tasks(before: list) -> str | None:
    """What of ``_task_state``'s was rebound or deleted since ``before``. New entries are fine in
    the registry (a task loaded for the first time) and in a task's attributes (caches), unless
    they hide one of the class's methods."""
    import tasks
    for owner, items in before:
        if isinstance(owner, type):
            now, may_grow = list(owner.__dict__.items()), False
        elif isinstance(owner, dict):
            now, may_grow = list(owner.items()), True
        else:
            now, may_grow = list(getattr(owner, "__dict__", {}).items()), True
        same = len(now) == len(items) or (may_grow and len(now) > len(items))
        if not same or not all(a[0] == b[0] and a[1] is b[1] for a, b in zip(now, items)):
            if isinstance(owner, type):
                return f"class {owner.__name__}"
            return "the task registry" if isinstance(owner, dict) else f"the task {owner!r}"
    for registry in _registries(tasks):
        for task in registry.values():
            hidden = _hidden_method(task)
            if hidden:
                return f"the task's {hidden!r}"
    return None


def _settings() -> tuple:
    import numpy as np
    return sys.getrecursionlimit(), np.geterr()


def _restore(settings: tuple, workdir: str) -> None:
    """Undo what a program may change in the process without rebinding anything: interpreter
    and numpy settings, files left in the working directory (the next program must not read them)."""
    import numpy as np
    limit, errors = settings
    if sys.getrecursionlimit() != limit:
        sys.setrecursionlimit(limit)
    if np.geterr() != errors:
        np.seterr(**errors)
    try:
        leftovers = os.listdir(workdir)
    except OSError:
        return
    for name in leftovers:
        path = os.path.join(workdir, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.remove(path)
            except OSError:
                pass


def _load_task(name: str) -> None:
    try:
        from tasks import get_task
        get_task(name)
    except Exception:  # noqa: BLE001 - the job reports it
        pass


def worker_main(conn, limits: SandboxLimits, workdir: str, parent: int, method: str = "fork",
                carried: dict | None = None) -> None:
    """The worker's loop (the target of the worker process)."""
    _enter_sandbox(limits, workdir, parent, method, carried)
    settings = _settings()
    compiler = None
    if limits.jit:
        from .compiled import Compiler
        compiler = Compiler(after=limits.jit_after)
    grown_at = _compiled_code_cap(limits)
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
        tasks_before = _task_state()
        for sink in _sinks:
            sink.count = 0
        if kind == "job":
            job: Job = message[1]
            _load_task(job.task)  # before the state is taken: the job's task is then watched too
            tasks_before = _task_state()
            held = sets.get(job.set_id)
            if held is None or held[0] != job.version:
                conn.send(("need", job.set_id))
                continue
            conn.send(("started",))
            sets.move_to_end(job.set_id)
            result = execute_job(job, held[1], held[2], compiler)
            reply: tuple[Any, ...] = ("result", result)
        else:  # "call"
            _, fn, args, kwargs = message
            conn.send(("started",))
            try:
                reply = ("value", fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - returned to the caller
                reply = ("raised", exc)
        recycle = result_kind(reply) in (FailureKind.MEMORY, FailureKind.TAMPERED)
        if compiler is not None and grown_at is not None and (_address_space_bytes() or 0) > grown_at:
            recycle = True  # compiled code is never unloaded: a fresh worker before it eats the budget
        strays = _stray_children()
        if strays:
            recycle = True
            reply = _mark(reply, FailureKind.PROCESSES, f"the program started {strays} child process(es)")
        changed = _changed_modules(before)
        if changed:
            recycle = True
            reply = _mark(reply, FailureKind.TAMPERED, f"the program modified module {changed[0]}")
        task_changed = _changed_tasks(tasks_before)
        if task_changed:
            recycle = True
            reply = _mark(reply, FailureKind.TAMPERED, f"the program modified {task_changed}")
        _restore(settings, workdir)
        try:
            conn.send(reply + (recycle,))
        except Exception as exc:  # noqa: BLE001 - e.g. an unpicklable return value
            conn.send(("raised", RuntimeError(f"the result could not be sent back: {exc}"), recycle))
        if recycle:
            os._exit(0)


def _compiled_code_cap(limits: SandboxLimits) -> int | None:
    """The address space past which a worker on the compiled path is replaced: its size now
    plus a quarter of the program's budget."""
    if not limits.jit or limits.memory_mb is None:
        return None
    return (_address_space_bytes() or 0) + int(limits.memory_mb) * 1024 * 1024 // 4


def result_kind(reply) -> str | None:
    return reply[1].kind if reply[0] == "result" else None


def _mark(reply, kind: str, reason: str):
    if reply[0] == "result":
        return ("result", EvalResult.failed(len(reply[1].metrics), kind, reason, reply[1].seconds))
    return ("raised", RuntimeError(reason))


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
        self.workdir = tempfile.mkdtemp(prefix="raise-sandbox-")
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
                reply = self._wait(None if job.timeout is None else time.perf_counter() + float(job.timeout))
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
