"""What a program's process and its judge say to each other over their two pipes: the judge's
requests (pickled: the judge's own messages) and the program's answers (a fixed header, raw
integers and two texts, never unpickled)."""
from __future__ import annotations

import math
import os
import pickle
import select
import struct
import time
from dataclasses import dataclass

import numpy as np

from tasks.common.errors import printable

from ..limits import LONGEST_WAIT
from ..results import FailureKind

__all__ = ["DONE", "STOPPED", "HEURISTIC", "PROGRAM", "MEMORY", "ERROR", "STAGE", "KINDS", "Record", "Malformed",
           "AS_THE_JOB", "PYTHON", "COMPILED", "send_answer", "receive_request", "send_request", "receive_answer"]

# One answer of a program's process: status, compiled (0 no, 1 yes, 2 not asked), the number of
# decisions, the lengths of the reason and of the compiled path's note, Python seconds, and the
# metric (read only for tasks the judge cannot replay); then the decisions (int64, little-endian)
# and the two texts (UTF-8).
_HEADER = struct.Struct("<BBxxIHHdd")
DONE, STOPPED, HEURISTIC, PROGRAM, MEMORY, ERROR = range(6)
STAGE = 6  # a staged look-ahead check's copy reached a stage's end: its decisions since the last
KINDS = {HEURISTIC: FailureKind.HEURISTIC, PROGRAM: FailureKind.PROGRAM, MEMORY: FailureKind.MEMORY,
         ERROR: FailureKind.ERROR}
_TEXT_BYTES = 2000       # what one text of an answer may hold

# The path a ("program", task, spec, PATH) request runs the program on: as the job asks (compiled
# once its Python has taken long enough, where the compiled path is on), or a look-ahead check's
# copy, in Python or compiled at once (as the instance checked ran)
AS_THE_JOB, PYTHON, COMPILED = "job", "python", "compiled"


def _wait_for(fd: int, deadline: float, writing: bool) -> None:
    """Until ``fd`` can be read (``writing``: written), in waits of at most ``LONGEST_WAIT`` (which
    select takes whatever the deadline); ``TimeoutError`` past ``deadline``."""
    while True:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            raise TimeoutError
        wait = min(remaining, LONGEST_WAIT)
        if (select.select([], [fd], [], wait)[1] if writing else select.select([fd], [], [], wait)[0]):
            return


# The program's side runs in its process, where what runs between two of the program's calls (a
# collection's callback, a finalizer, a signal's handler) may replace a builtin: the builtins these
# steps use are bound here, before any program ran, so that its answer still reaches its judge, which
# hears from the next check (``sandbox.HeldModules``) what it replaced.

def _read_exact(fd: int, n: int, deadline: float | None, _len=len, _min=min) -> bytes | None:
    """``n`` bytes from ``fd`` by ``deadline``; ``None`` at end of file; ``TimeoutError`` past it."""
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            _wait_for(fd, deadline, writing=False)
        chunk = os.read(fd, _min(n - got, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        got += _len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data, deadline: float | None = None, _memoryview=memoryview) -> None:
    view = _memoryview(data)
    while view:
        if deadline is not None:
            _wait_for(fd, deadline, writing=True)
        written = os.write(fd, view[: 1 << 16])
        view = view[written:]


# -- the program's side ----------------------------------------------------------------------

def send_answer(fd: int, status: int, decisions=None, reason: str = "", note: str = "", seconds: float = 0.0,
                metric: float = math.nan, compiled: bool | None = None, _len=len) -> None:
    raw = b"" if decisions is None else np.ascontiguousarray(decisions, dtype="<i8").tobytes()
    why = reason.encode("utf-8", "replace")[:_TEXT_BYTES]
    said = note.encode("utf-8", "replace")[:_TEXT_BYTES]
    flag = 2 if compiled is None else 1 if compiled else 0
    head = _HEADER.pack(status, flag, _len(raw) // 8, _len(why), _len(said), seconds, metric)
    _write_all(fd, head + raw + why + said)


def receive_request(fd: int):
    head = _read_exact(fd, 8, None)
    if head is None:
        return None
    body = _read_exact(fd, struct.unpack("<Q", head)[0], None)
    return None if body is None else pickle.loads(body)  # the judge's own message


# -- the judge's side ------------------------------------------------------------------------

@dataclass
class Record:
    """What a program's process answered for one instance."""

    status: int
    decisions: np.ndarray
    reason: str
    note: str
    seconds: float
    metric: float
    compiled: bool | None


class Malformed(Exception):
    """A program's process sent something that is not an answer."""


def send_request(fd: int, message, deadline: float | None = None) -> None:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    _write_all(fd, struct.pack("<Q", len(body)) + body, deadline)


def receive_answer(fd: int, deadline: float | None, bound: int) -> Record | None:
    """The next answer; ``None`` when the process is gone; ``TimeoutError`` past ``deadline``;
    ``Malformed`` for anything that is not an answer of at most ``bound`` decisions."""
    head = _read_exact(fd, _HEADER.size, deadline)
    if head is None:
        return None
    status, flag, count, why, said, seconds, metric = _HEADER.unpack(head)
    if status > STAGE or flag > 2 or count > bound or why > _TEXT_BYTES or said > _TEXT_BYTES:
        raise Malformed(f"status {status}, {count} decisions, texts of {why} and {said} bytes")
    body = _read_exact(fd, 8 * count + why + said, deadline)
    if body is None:
        return None
    decisions = np.frombuffer(body, dtype="<i8", count=count).astype(np.int64)
    reason = printable(body[8 * count: 8 * count + why].decode("utf-8", "replace"))
    note = printable(body[8 * count + why:].decode("utf-8", "replace"))
    return Record(status, decisions, reason, note, float(seconds), float(metric),
                  None if flag == 2 else bool(flag))
