"""One writer per run directory (and per compare's folder): the advisory lock (``fcntl.flock``) on
``RUN_DIR/lock`` (``OUT/.compare-lock``) and who holds it."""
from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

from ..credentials import shown_command
from ..errors import UserError

__all__ = ["LOCK_NAME", "COMPARE_LOCK", "RunLock", "RunDirectoryBusy", "lock_holder"]

LOCK_NAME = "lock"
COMPARE_LOCK = ".compare-lock"  # a compare's folder: one compare writes it at a time


class RunDirectoryBusy(UserError):
    """Another process is writing the run directory. Not the settings' doing: once that process has
    ended, the same command succeeds (a compare's job failed on it says a retry may help)."""

    retry_helps = True


_held: dict[str, int] = {}  # realpath of a lock file -> the descriptor this process holds its lock by
_held_lock = threading.Lock()


def _forget_locks_in_child() -> None:
    # A forked child (a sandbox worker, the inner search) must not keep a run directory
    # locked after its parent died; closing its copy leaves the parent's lock in place.
    for fd in _held.values():
        try:
            os.close(fd)
        except OSError:
            pass
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_locks_in_child)


class RunLock:
    """The advisory lock that makes one process the writer of a run directory.

    ``acquire()`` takes an exclusive ``fcntl.flock`` on ``RUN_DIR/lock`` without waiting and
    writes the holder (pid, host, command, start time) into it; when another process holds
    it, ``RunDirectoryBusy`` names that process. The kernel drops the lock when the holder
    exits, crashes or is killed, so a lock file left by a dead process is simply taken
    over. Within one process it is held once too: a second run object on the directory (a notebook's
    cell run again) is refused until the first has run to its end or is closed.

    ``name`` is the lock file's (a compare's folder has one of its own, ``COMPARE_LOCK``), ``after``
    what the refusal asks the user to wait for before doing.
    """

    def __init__(self, path: str | os.PathLike, name: str = LOCK_NAME, after: str = "running or resuming here"):
        self.directory = Path(path)
        self.file = self.directory / name
        self.after = after
        self._key: str | None = None
        self._before = b""  # the record this process found, the last writer's

    def acquire(self) -> "RunLock":
        if self._key is not None:
            return self
        self.directory.mkdir(parents=True, exist_ok=True)
        key = os.path.realpath(self.file)
        with _held_lock:
            if key in _held and self.file.name != LOCK_NAME:  # a compare of this process writes there (a thread's)
                raise RunDirectoryBusy(f"{self.directory} is in use by a compare of this process; wait for it to "
                                       f"end before {self.after}")
            if key in _held:  # a run object of this process writes there (one not yet run, or under way)
                raise RunDirectoryBusy(f"{self.directory} is in use by a run of this process, started or resumed and "
                                       "not run to its end: run it, or let it go with its close()")
            fd = os.open(self.file, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise RunDirectoryBusy(f"{self.directory} is in use by {holder}; wait for it to end or stop it "
                                       f"before {self.after}") from None
            except OSError as exc:
                os.close(fd)
                raise RunDirectoryBusy(f"{self.directory}: cannot lock {self.file.name} "
                                       f"({exc.strerror or exc})") from None
            record = json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "command": shown_command([os.path.basename(sys.argv[0] or "python")] + sys.argv[1:]),
                                 "since": time.strftime("%Y-%m-%d %H:%M:%S")}) + "\n"
            self._before = os.pread(fd, 4096, 0)
            _write_record(fd, record.encode())
            _held[key] = fd
            self._key = key
        return self

    def release(self, *, refused: bool = False) -> None:
        """Let the directory go; ``refused``: this process wrote nothing there (its command was
        refused), so the lock file names again the process that last wrote the run."""
        if self._key is None:
            return
        with _held_lock:
            fd = _held.pop(self._key, None)
            if fd is not None:
                if refused:
                    try:
                        _write_record(fd, self._before)
                    except OSError:  # a record that cannot be put back: the flock is released all the same
                        pass
                os.close(fd)  # closing the only descriptor releases the flock
            self._key = None

    @property
    def held(self) -> bool:
        return self._key is not None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


def lock_holder(path: str | os.PathLike) -> str | None:
    """Who writes the run directory ``path`` ('process PID ...', as ``RunDirectoryBusy`` names it),
    or ``None`` when no process holds its lock. Only looks: the lock is tried shared on a descriptor
    of its own and let go at once, and its file is neither made nor written."""
    with _held_lock:
        if os.path.realpath(Path(path) / LOCK_NAME) in _held:
            return "a run of this process"
    try:
        fd = os.open(Path(path) / LOCK_NAME, os.O_RDONLY)
    except OSError:  # no lock file: no process has written there
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _read_holder(fd)
    except OSError:
        return None
    finally:
        os.close(fd)  # closing the only descriptor lets a shared lock taken here go
    return None


def _write_record(fd: int, record: bytes) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, record, 0)
    os.fsync(fd)


def _read_holder(fd: int) -> str:
    """'process PID on HOST (COMMAND, since TIME)' from a lock file, as far as it says."""
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
    except (OSError, ValueError):
        info = {}
    if not isinstance(info, dict) or "pid" not in info:
        return "another process"
    where = f" on {info['host']}" if info.get("host") and info.get("host") != socket.gethostname() else ""
    details = ", ".join(x for x in (f"`{info['command']}`" if info.get("command") else "",
                                    f"since {info['since']}" if info.get("since") else "") if x)
    return f"process {info['pid']}{where}" + (f" ({details})" if details else "")
