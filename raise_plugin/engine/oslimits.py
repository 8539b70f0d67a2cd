"""What the operating system holds a sandboxed process to: resource limits (memory, file size,
processes, core dumps), the ``prctl`` settings of its lineage, and the descriptors it keeps."""
from __future__ import annotations

import os
import sys

from .confine import c_library

try:
    import resource
except ImportError:  # not on this platform: no resource limits
    resource = None

__all__ = ["PR_SET_PDEATHSIG", "PR_SET_CHILD_SUBREAPER", "prctl", "address_space_bytes", "cap_memory", "set_limit",
           "close_other_descriptors"]

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def prctl(option: int, value: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        c_library().prctl(option, value, 0, 0, 0)
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
