# Keeps what it saw in numpy's module, which outlived an instance in its process: each instance met a
# fresh module of the program, but the same numpy, so the next instance of the job met a program
# that decides otherwise (here worst fit, after the first instance): a score depended on which
# instances shared a job, and a program could carry what it learnt of one instance to the next.
import numpy as np

_seen = getattr(np, "_instances_seen", 0)
np._instances_seen = _seen + 1


def priority(item, bins):
    if _seen:
        return bins - item
    return -(bins - item)
