"""Writes a run cannot afford to tear: lines appended to a journal and files replaced whole; and a
journal's lines read back, each a record, damaged, or torn by a kill (``journal_lines``).

A write that fails (no space left, a read-only or full quota, a file too large) leaves the file
as it was before the attempt, frees what the attempt took, and raises ``WriteFailed``: one
line naming the file and the error, which ends the run cleanly (``RobustMethod._fire``, the
LLM guard) instead of a loop that asks again for ever.
"""
from __future__ import annotations

import errno
import json
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .errors import UserError

__all__ = ["WriteFailed", "AppendLog", "JournalLine", "journal_lines", "replace_file", "write_failure", "unwritable"]

# what a full, read-only or over-quota disk answers
_DISK_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EIO}


class WriteFailed(UserError):
    """A record could not be written; the file is as it was before the attempt."""

    def __init__(self, path: str | os.PathLike | None, exc: OSError):
        self.path = None if path is None else Path(path)
        self.errno = exc.errno
        where = "a file of the run directory" if path is None else str(path)
        super().__init__(f"{where}: cannot write ({exc.strerror or exc}); nothing written before was lost: "
                         "once the cause is gone, `raise-ahd resume` continues the run")


def write_failure(exc: BaseException) -> WriteFailed | None:
    """``exc`` as a ``WriteFailed`` when it says the disk refused a write (a raw ``OSError`` from a
    write outside this module included), ``None`` when it is something else (a bug)."""
    if isinstance(exc, WriteFailed):
        return exc
    if isinstance(exc, OSError) and exc.errno in _DISK_ERRORS:
        return WriteFailed(exc.filename, exc)
    return None


def _cut_torn_tail(fd: int) -> None:
    """Cut a last line left without its newline by a kill, so appends start on a fresh line."""
    size = os.fstat(fd).st_size
    if size == 0:
        return
    tail = os.pread(fd, min(size, 1 << 16), max(0, size - (1 << 16)))
    if tail.endswith(b"\n"):
        return
    start = max(0, size - (1 << 16))
    while True:
        cut = tail.rfind(b"\n")
        if cut >= 0 or start == 0:
            os.ftruncate(fd, start + cut + 1)
            return
        start = max(0, start - (1 << 16))
        tail = os.pread(fd, min(1 << 16, size - start), start)


def unwritable(path: str | os.PathLike, *, folder: bool = False) -> str | None:
    """Why ``path`` cannot be written as a file (``folder``: as a folder), else None: a folder where a
    file is wanted (or the reverse), a place under a file or without write permission, or a folder
    that holds no file however permitted (/proc, a read-only mount). Missing folders on the way do
    not count: the writer makes them."""
    p = Path(path)
    try:
        p.exists()
    except OSError as exc:  # a name the file system cannot hold (too long) is no place at all
        why = exc.strerror or str(exc)
        return why[:1].lower() + why[1:]
    if p.exists() and p.is_dir() != folder:
        return "not a directory" if folder else "is a directory"
    parent = p if folder and p.exists() else p.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{parent} is not writable"
    if p.exists() and not folder and not os.access(p, os.W_OK):
        return f"{p} is not writable"
    try:  # a folder the permissions allow may still hold no file (/proc, a read-only mount): try one, unnamed
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        return f"{parent} cannot hold a file ({exc.strerror or exc})"
    return None


class AppendLog:
    """A JSONL file appended to line by line, each line whole or not at all.

    ``sync``: each line reaches the disk (``fsync``) before ``append`` returns; without it a
    line survives a kill of the process (the kernel holds it) but not of the machine.
    """

    def __init__(self, path: str | os.PathLike, *, sync: bool = True):
        self.path = Path(path)
        self.sync = sync
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            _cut_torn_tail(self._fd)
        except OSError as exc:
            raise WriteFailed(self.path, exc) from None

    def append(self, line: str) -> None:
        data = (line if line.endswith("\n") else line + "\n").encode()
        with self._lock:
            if self._fd is None:
                raise ValueError(f"{self.path} is closed")
            size = os.fstat(self._fd).st_size
            try:
                done = 0
                while done < len(data):
                    done += os.write(self._fd, data[done:])
                if self.sync:
                    os.fsync(self._fd)
            except OSError as exc:
                try:
                    os.ftruncate(self._fd, size)  # no part of the line stays behind
                except OSError:
                    pass
                raise WriteFailed(self.path, exc) from None

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


@dataclass(frozen=True)
class JournalLine:
    """One line of a JSONL journal read back (``journal_lines``): its ``number`` (from 1), the JSON
    value it holds (``record``), ``damaged`` when it holds none (bytes that are not UTF-8 text, or
    text that is not JSON: ``record`` is then ``None``), and ``torn`` when it is the last line and
    has no newline after it (a write cut short by a kill; ``AppendLog`` cuts it before appending)."""

    number: int
    record: Any
    damaged: bool = False
    torn: bool = False


def journal_lines(path: str | os.PathLike) -> list[JournalLine]:
    """The lines of the JSONL file ``path`` (none when there is no such file), split at newlines
    only (a raw U+2028 inside a JSON string does not end a line), blank ones passed over (each line
    keeps its number in the file); ``OSError`` when it cannot be read. Every reader of a run
    directory's journals reads them here, so that a damaged line is one line passed over or
    repaired, never an error about the whole file."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return []
    chunks = data.split(b"\n")
    torn = chunks[-1] != b""
    if not torn:
        chunks.pop()
    lines = []
    for number, raw in enumerate(chunks, 1):
        if not raw.strip():  # a blank line (a recording edited by hand) holds nothing to read
            continue
        last = torn and number == len(chunks)
        try:
            lines.append(JournalLine(number, json.loads(raw.decode("utf-8")), torn=last))
        except ValueError:  # json.JSONDecodeError and UnicodeDecodeError alike
            lines.append(JournalLine(number, None, damaged=True, torn=last))
    return lines


def replace_file(path: str | os.PathLike, write: Callable, *, suffix: str = ".tmp") -> None:
    """Replace ``path`` by what ``write(binary_file)`` writes, atomically: a kill or a failure
    leaves the old file (or none) in place, never a part of the new one, and a failure (the disk's:
    ``WriteFailed``; ``write``'s own, raised as it is) no temporary file beside it."""
    path = Path(path)
    tmp = path.with_name(path.name + suffix)
    try:
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            tmp.unlink()
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise WriteFailed(path, exc) from None
        raise
