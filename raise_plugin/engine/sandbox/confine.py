"""What the kernel enforces on a worker (Linux): an unprivileged user when the engine runs as
root (or, when the code it imports is not readable by other users, root without any
capability), no new privileges, not dumpable, and a Landlock domain (writes only in the
worker's directory, no other process's /proc, no TCP, no signals or abstract sockets outside).

Each step is applied where the kernel and the user allow it and skipped otherwise;
``confine`` returns the names of the steps applied.
"""
from __future__ import annotations

import ctypes
import functools
import json
import os
import stat
import sys
import sysconfig
import tempfile

import numpy

import tasks

try:
    import pwd
except ImportError:  # no user database on this platform
    pwd = None

__all__ = ["confine", "layer", "landlock_abi", "unprivileged_ids", "c_library", "weakened"]

_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAPABILITY_VERSION_3 = 0x20080522
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

# filesystem rights, by the ABI version that introduced them
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_ABI1_FS = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV  # what a rule on a file may grant
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6
_READ = _EXECUTE | _READ_FILE | _READ_DIR
# /proc entries a worker may read besides its own: nothing there names another process
_PROC_READABLE = ("cpuinfo", "meminfo", "stat", "sys", "self", "thread-self")
# what a worker and its programs read besides the code's own places: the system's programs and
# libraries (a library loaded late, the time zones), nothing else. Not the homes (keys and tokens
# live there), not /etc (root's secrets; a worker that could not become 'nobody' is user 0), not
# the folders where runs and data are kept (/work, /srv, /var, a checkout's runs/): a program that
# reads a run's directory reads its instances, its seeds, its results
_READABLE_ROOTS = ("bin", "lib", "lib32", "lib64", "libx32", "sbin", "usr", "sys")
_READABLE_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/dev/urandom", "/dev/zero")
# module files the engine had loaded by path (a test module, a script's helpers), read by the worker
_FILES: list[str] = []
# a module or package of a checkout's top folder, which imports read
_IMPORTABLE = (".py", ".so", ".pyd", ".pth")


@functools.lru_cache(maxsize=1)
def c_library() -> ctypes.CDLL:
    """This process's C library (``errno`` kept), loaded once."""
    return ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int) -> bool:
    try:
        libc = c_library()
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


@functools.lru_cache(maxsize=1)
def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0: not available)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        libc = c_library()
        version = libc.syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))


def unprivileged_ids() -> tuple[int, int] | None:
    """(uid, gid) of ``nobody`` when this process runs as root, else None."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam("nobody")
        return entry.pw_uid, entry.pw_gid
    except (AttributeError, KeyError):  # no user database (pwd is None), or no such user
        return 65534, 65534


def _closed_to_others(path: str) -> str | None:
    """Where a user with no relation to ``path``'s owner is first stopped on the way to reading it: a
    folder above it they cannot pass, ``path`` itself (not readable), or ``None`` where they can read it."""
    try:
        full = os.path.realpath(path)
        parents = []
        parent = os.path.dirname(full)
        while parent not in parents:
            parents.append(parent)
            parent = os.path.dirname(parent)
        closed = next((p for p in reversed(parents) if not os.stat(p).st_mode & stat.S_IXOTH), None)
        if closed is not None:
            return closed
        mode = os.stat(full).st_mode
        return full if not mode & stat.S_IROTH or (stat.S_ISDIR(mode) and not mode & stat.S_IXOTH) else None
    except OSError:
        return path


def _others_can_read(path: str) -> bool:
    """Whether a user with no relation to ``path``'s owner can reach and read it."""
    return _closed_to_others(path) is None


def _code_readable_by_others() -> bool:
    """Whether the code a worker may still import (the plugin, the tasks, numpy, the
    standard library) stays readable once the worker is no longer root."""
    return _unreadable_code() is None


def _unreadable_code() -> str | None:
    """The first place of the code a worker may still import that other users cannot read."""
    places = [os.path.dirname(m.__file__) for m in (sys.modules["raise_plugin"], tasks, numpy)]
    places.append(sysconfig.get_paths()["stdlib"])
    return next((p for p in places if not _others_can_read(p)), None)


@functools.lru_cache(maxsize=1)
def weakened() -> str | None:
    """One line, where the engine runs as root but its workers cannot become ``nobody`` (the
    code they import is where that user cannot read it, as under ``/root/.pyenv``): they keep user
    0 without any capability, so a program can read root's own files; and the fix. ``None``
    where the workers run as an unprivileged user. Found once in a process: the user and where
    the code lives do not change while it runs."""
    if not sys.platform.startswith("linux") or unprivileged_ids() is None:
        return None
    place = _unreadable_code()
    if place is None:
        return None
    closed = _closed_to_others(place) or place
    fix = (f"make it readable to them: chmod o+rX {closed}" if closed == os.path.realpath(place) else
           f"let them through {closed}, a folder on the way they cannot pass: chmod o+x {closed}")
    return (f"programs run as user 0 without capabilities, not as 'nobody', since {place} is not readable by "
            "other users: they can read files only root may read (outside the homes, which Landlock keeps from "
            f"them). Install Python and the plugin where every user can read them (or {fix}), or run as an "
            "unprivileged user")


@functools.lru_cache(maxsize=1)
def _code_places() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Where the worker's code lives, found once while everything can be read: ``(read, listed)``.
    Read whole: the interpreter's and the installed packages' folders (``sys.path`` entries under
    the interpreter's prefixes or named ``site-packages``), the folders of tasks given by reference.
    A checkout on ``sys.path`` (an editable install, a script's folder) is only listed, and its
    packages and modules read: its runs, data and results stay unread. Less any place that holds
    the temporary directory (other workers' directories are there)."""
    temp = os.path.realpath(tempfile.gettempdir())
    libraries = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    read, listed = [], []
    checkouts = [p or os.getcwd() for p in sys.path]
    for name in ("raise_plugin", "tasks"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            checkouts.append(os.path.dirname(os.path.dirname(module.__file__)))
    try:
        sources = json.loads(os.environ.get("RAISE_PLUGIN_TASK_SOURCES", "{}"))
    except ValueError:
        sources = {}
    for value in (sources.values() if isinstance(sources, dict) else ()):
        for reference in (value if isinstance(value, list) else [value]):
            path = str(reference).rpartition(":")[0]
            if path.endswith(".py"):
                read.append(os.path.dirname(os.path.abspath(path)))
    for place in checkouts:
        full = os.path.realpath(place)
        if any(full == root or full.startswith(root.rstrip("/") + "/") for root in libraries) or \
                os.path.basename(full) in ("site-packages", "dist-packages"):
            read.append(full)
        elif os.path.isdir(full):
            listed.append(full)
            read += [entry.path for entry in os.scandir(full) if _importable(entry)]

    def usable(places):
        found = []
        for place in places:
            full = os.path.realpath(place)
            if os.path.exists(full) and temp != full and not temp.startswith(full.rstrip("/") + "/") \
                    and full not in found:
                found.append(full)
        return tuple(found)

    return usable(read), usable(listed)


def _importable(entry: os.DirEntry) -> bool:
    """Whether ``entry`` of a checkout's top folder is a module or a package an import reads."""
    try:
        if entry.is_dir():
            return os.path.exists(os.path.join(entry.path, "__init__.py")) or entry.name.endswith((".egg-info",
                                                                                                  ".dist-info"))
        return entry.name.endswith(_IMPORTABLE)
    except OSError:
        return False


def _drop_privileges(workdir: str) -> bool:
    ids = unprivileged_ids()
    if ids is None or not _code_readable_by_others():
        return False
    uid, gid = ids
    try:
        os.chown(workdir, uid, gid)
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    except (OSError, AttributeError):
        return False
    return True


def _drop_capabilities() -> bool:
    """Keep user 0 but give up every capability (bounding, ambient, effective, permitted,
    inheritable): no reading other users' processes, no signals to them, no module loading."""
    if unprivileged_ids() is None:
        return False
    libc = c_library()
    cap = 0
    while cap < 64 and libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) == 0:
        cap += 1
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # two sets of (effective, permitted, inheritable), all empty
    return libc.capset(ctypes.byref(header), ctypes.byref(data)) == 0


@functools.lru_cache(maxsize=1)
def _root_entries() -> tuple[str, ...]:
    """The entries of ``/``, read once: a program's process, under its worker's Landlock domain,
    may no longer list ``/`` when it adds a layer of its own."""
    return tuple(os.listdir("/"))


def _landlock(workdir: str, abi: int) -> bool:
    libc = c_library()

    class RulesetAttr(ctypes.Structure):
        _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                    ("scoped", ctypes.c_uint64)]

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    fs = _ABI1_FS | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0) | (_IOCTL_DEV if abi >= 5 else 0)
    attr = RulesetAttr(fs, (_NET_BIND_TCP | _NET_CONNECT_TCP) if abi >= 4 else 0,
                       (_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if abi >= 6 else 0)
    size = ctypes.sizeof(RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        return False
    try:
        def allow(path: str, rights: int) -> None:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                return
            try:
                if not stat.S_ISDIR(os.fstat(fd).st_mode):
                    rights &= _FILE_RIGHTS
                rule = PathBeneath(rights & fs, fd)
                libc.syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0)
            finally:
                os.close(fd)

        for entry in _root_entries():
            if entry in _READABLE_ROOTS:
                allow("/" + entry, _READ)
        for path in _READABLE_FILES:
            allow(path, _READ_FILE)
        read, listed = _code_places()
        for path in _FILES:
            allow(path, _READ_FILE)
        for place in read:  # a checkout's packages, or a task file under /tmp, stay importable
            allow(place, _READ)
        for place in listed:
            allow(place, _READ_DIR)
        for entry in _PROC_READABLE:
            allow("/proc/" + entry, _READ)
        allow("/dev/null", _READ_FILE | _WRITE_FILE)
        allow(workdir, fs)
        return libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0) == 0
    finally:
        os.close(ruleset)


def layer(workdir: str) -> list[str]:
    """A Landlock layer of a program's process's own, on top of its worker's (``confine``, which
    has found, and kept, what the layer needs: the ABI, the places of the code): writes only
    beneath ``workdir``; not dumpable, no new privileges. The steps applied."""
    if not sys.platform.startswith("linux"):
        return []
    applied = []
    if _prctl(_PR_SET_DUMPABLE, 0):
        applied.append("not dumpable")
    if _prctl(_PR_SET_NO_NEW_PRIVS, 1):
        applied.append("no new privileges")
        abi = landlock_abi()
        if abi and _landlock(workdir, abi):
            applied.append(f"landlock {abi}")
    return applied


def confine(workdir: str, files: tuple[str, ...] = ()) -> list[str]:
    """Apply to this process what the kernel offers; the steps applied, in order. ``files``: module
    files besides the code's places that stay readable (those the engine had loaded by path, which
    the worker imports by their files: ``carried``)."""
    if not sys.platform.startswith("linux"):
        return []
    _FILES[:] = [os.path.realpath(f) for f in files if os.path.isfile(f)]
    applied = []
    if _drop_privileges(workdir):
        applied.append("nobody")
    elif _drop_capabilities():
        applied.append("no capabilities")
    _code_places()  # found now, while everything can be read; kept for the layers of program processes
    return applied + layer(workdir)
