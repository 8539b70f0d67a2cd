"""Threads past any reasonable number: the module code starts 1500 threads that sleep, with small
stacks (root is not held by RLIMIT_NPROC). Its decisions are best fit's. Appended to
``audit_disarmed.py``, whose hook it switches off first."""
import threading
import time

import numpy as np

disarm()  # noqa: F821 - the fragment this is appended to
threading.stack_size(64 << 10)
for _ in range(1500):
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()


def priority(item, bins):
    return -(np.asarray(bins) - item)
