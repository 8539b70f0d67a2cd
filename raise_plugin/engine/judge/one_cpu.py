"""The look-ahead check's two processes on one CPU. At each of a staged check's stage ends
(``stages``: hundreds on an OBP instance) the program's process waits for the judge, which
compares its decisions and sends the next part of the copy, and the program goes on while the
judge waits. Where the kernel runs the two on different CPUs, every turn wakes a process on the
other CPU, which on a virtual machine costs more than the turn's own work (a pipe's round trip
between two processes: 64 us across this machine's two CPUs, 9 us on one). For the check's
length they are held on the CPU the worker was running on, chosen by the kernel from its load;
the worker is let go after it."""
from __future__ import annotations

import os
from contextlib import contextmanager

__all__ = ["current_cpu", "on_one_cpu", "hold"]


def current_cpu() -> int | None:
    """The CPU the calling thread runs on (``/proc``'s ``processor`` field), or ``None``."""
    try:
        with open("/proc/thread-self/stat", "rb") as f:
            after_name = f.read().rpartition(b")")[2].split()
        return int(after_name[36])  # field 39 of the line; the name, field 2, may hold spaces
    except (OSError, ValueError, IndexError):
        return None


def hold(pid: int, cpu: int | None) -> None:
    """Process ``pid`` on ``cpu`` alone (``None``: nothing); where it cannot be, it runs where it was."""
    if cpu is None:
        return
    try:
        os.sched_setaffinity(pid, {cpu})
    except OSError:  # gone already, or not ours to move
        pass


@contextmanager
def on_one_cpu(processes):
    """The calling thread held on the CPU it runs on, and each program process ``processes``
    starts meanwhile (``processes.cpu``); the thread's CPUs given back at the end. Nothing where
    only one CPU is allowed or the CPU cannot be read."""
    allowed = os.sched_getaffinity(0)
    cpu = current_cpu() if len(allowed) > 1 else None
    if cpu is None or cpu not in allowed:
        yield
        return
    try:
        os.sched_setaffinity(0, {cpu})
    except OSError:
        yield
        return
    processes.cpu = cpu
    try:
        yield
    finally:
        processes.cpu = None
        try:
            os.sched_setaffinity(0, allowed)
        except OSError:  # a CPU taken away meanwhile: the kernel's choice of the others
            pass
