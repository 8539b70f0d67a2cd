"""What the operating system holds a sandboxed process to: resource limits (memory, file size,
processes, core dumps), the ``prctl`` settings of its lineage, and the descriptors it keeps."""
from __future__ import annotations

import mmap
import os
import sys

from .confine import c_library

try:
    import resource
except ImportError:  # not on this platform: no resource limits
    resource = None

__all__ = ["PR_SET_PDEATHSIG", "PR_SET_CHILD_SUBREAPER", "prctl", "address_space_bytes", "data_bytes", "held_against",
           "cap_memory", "set_limit", "close_other_descriptors"]

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def prctl(option: int, value: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        c_library().prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _status_bytes(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def address_space_bytes() -> int | None:
    """This process's address space (VmSize): what it maps, reserved or used."""
    return _status_bytes("VmSize") or held_against("RLIMIT_AS")


def data_bytes() -> int | None:
    """This process's private writable memory (VmData: its heap, arrays, anonymous mappings)."""
    return _status_bytes("VmData") or held_against("RLIMIT_DATA")


def held_against(which: str) -> int | None:
    """What this process holds against the limit ``which`` (``RLIMIT_DATA``: its private writable
    memory; ``RLIMIT_AS``: its address space), in bytes, measured against the limit itself: a
    process confined by Landlock cannot read ``/proc/self/status``. The kernel refuses a mapping
    that would take the process past the limit, so the lowest soft limit under which one more page
    can be mapped is what it holds plus that page; found by bisection (a few dozen ``setrlimit`` and
    ``mmap`` calls, under a millisecond), the soft limit then restored. ``None`` where there is no
    such limit, or a page cannot be mapped even at the hard limit. Call it while this process runs
    one thread: while the soft limit is low, another thread's allocation would fail."""
    res = getattr(resource, which, None) if resource is not None else None
    if res is None:
        return None
    soft, hard = resource.getrlimit(res)
    page = mmap.PAGESIZE
    low, high = 0, (1 << 47) if hard == resource.RLIM_INFINITY else hard // page * page
    try:
        if not _maps_a_page(res, high, hard):
            return None
        while high - low > page:  # a page cannot be mapped under ``low``, can under ``high``
            middle = (low + high) // 2 // page * page
            if _maps_a_page(res, middle, hard):
                high = middle
            else:
                low = middle
    finally:
        resource.setrlimit(res, (soft, hard))
    return high - page


def _maps_a_page(res: int, limit: int, hard: int) -> bool:
    """Whether one private writable page can be mapped with the soft limit ``res`` at ``limit``."""
    try:
        resource.setrlimit(res, (limit, hard))
        mmap.mmap(-1, mmap.PAGESIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                  prot=mmap.PROT_READ | mmap.PROT_WRITE).close()
    except (OSError, MemoryError, ValueError):  # refused (ENOMEM); a Python object that could not be made counts so
        return False
    return True


def reservable_bytes() -> int:
    """Address space a process may reserve beyond its budget before the backstop holds it: what
    glibc's malloc arenas can reserve on this machine at the most (eight per core, 64 MiB each),
    and at least 16 GiB for what else libraries map without writing it."""
    return max(16 << 30, 8 * (64 << 20) * (os.cpu_count() or 1))


def cap_memory(memory_mb: float | None) -> None:
    """Let this process allocate at most ``memory_mb`` MiB more than it holds now; past it an
    allocation fails with ``MemoryError``, not the machine.

    The cap is on what the process writes, not on what it reserves: RLIMIT_DATA (private writable
    memory, the heap and every array included) = its data now + the budget. Address space reserved
    and never written (malloc's arenas, 64 MiB each, eight per core for the threads that allocate;
    thread pools' stacks) is not counted, so it cannot fail an honest program on a machine with many
    cores, as RLIMIT_AS = size + budget did. RLIMIT_AS stays as a backstop at the size now plus the
    budget plus ``reservable_bytes()`` (memory shared without a file, which RLIMIT_DATA does not
    count, is refused to a program's process by seccomp)."""
    if memory_mb is None:
        return
    budget = int(memory_mb) * 1024 * 1024
    data = data_bytes()
    if data is not None:
        set_limit("RLIMIT_DATA", data + budget)
    set_limit("RLIMIT_AS", (address_space_bytes() or 0) + budget + reservable_bytes())


def set_limit(which: str, value: int) -> None:
    if resource is None:
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


def close_other_descriptors(keep: tuple[int, ...]) -> None:
    """Close every descriptor of this process but 0, 1, 2 and ``keep``."""
    keep = tuple(sorted({0, 1, 2, *keep}))
    low = 0
    for fd in keep:
        if fd > low:
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 16)
