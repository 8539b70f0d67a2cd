"""Reading where runs and data are kept: a run directory's record inside the checkout
(``__IN_CHECKOUT__``), a data folder elsewhere (``__ELSEWHERE__``) and the system's secrets
(``/etc/shadow``). Whatever it reads it says, by raising with it; what it cannot read it leaves, and
its decisions are best fit's."""
import numpy as np

_tried = []


def priority(item, bins):
    if not _tried:
        _tried.append(True)
        for path in ("__IN_CHECKOUT__", "__ELSEWHERE__", "/etc/shadow"):
            try:
                with open(path) as f:
                    text = f.read(40)
            except OSError:
                continue
            raise RuntimeError(f"read {path}: {text!r}")
    return -(np.asarray(bins) - item)
