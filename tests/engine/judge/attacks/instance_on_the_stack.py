"""Finding the instance a program is evaluated on: the first dictionary on the caller's stack that
holds numpy arrays under every one of ``keys``. A fragment: the look-ahead attacks that use it
are appended to it."""
import sys

import numpy as np


def found(keys):
    frame = sys._getframe(2)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, dict) and all(isinstance(value.get(key), np.ndarray) for key in keys):
                return value
        frame = frame.f_back
    return None
