"""Objects that would outlive the program's job: System V shared-memory segments of 128 MiB each
(touched, so they hold memory), a message queue and a semaphore set, all named with the test's
prefix, and a POSIX message queue. Its decisions are best fit's. Appended to
``audit_disarmed.py``, whose hook it switches off first."""
import ctypes

import numpy as np

_MARK = 0x__KEY_PREFIX__ << 16
_IPC_CREAT = 0o1000
_done = []


def _leave():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    for k in range(4):
        segment = libc.shmget(_MARK | k, 128 << 20, _IPC_CREAT | 0o666)
        if segment >= 0:
            address = libc.shmat(segment, None, 0)
            if address not in (None, ctypes.c_void_p(-1).value):
                ctypes.memset(address, 1, 128 << 20)
    libc.msgget(_MARK | 0x100, _IPC_CREAT | 0o666)
    libc.semget(_MARK | 0x200, 4, _IPC_CREAT | 0o666)
    try:
        librt = ctypes.CDLL("librt.so.1", use_errno=True)
        librt.mq_open(b"/raise-__KEY_PREFIX__", 0o100 | 0o2, 0o666, None)  # O_CREAT | O_RDWR
    except OSError:
        pass


def priority(item, bins):
    if not _done:
        _done.append(True)
        disarm()  # noqa: F821 - the fragment this is appended to
        _leave()
    return -(np.asarray(bins) - item)
