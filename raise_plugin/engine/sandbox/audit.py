"""The audit hook of a program's process: Python refuses, at the event, writes outside its
directory, new processes, signals, sockets and ctypes (numba's and llvmlite's own ctypes calls
excepted on the compiled path)."""
from __future__ import annotations

import os
import sys

__all__ = ["audit_hook"]

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
