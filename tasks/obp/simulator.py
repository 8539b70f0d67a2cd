"""Online bin packing with the host's semantics, without the host's per-item scans.

The host pre-allocates ``n`` bins of capacity C and, for every item, hands the
heuristic the residual capacities of every bin that fits the item (used and
still-empty ones alike) in bin-index order; the item goes to the first argmax.
While the used bins form a contiguous prefix ``[0, used)`` that array is "the
fitting used bins, then ``n - used`` copies of C", so it is built from the
prefix alone. A heuristic that opens an empty bin other than the first breaks
the prefix; from then on the general (host) path runs. Either way the heuristic
sees the same array, with the same dtype, as a fresh copy. The loop exists in C too
(``_fastpack.c``, built where a compiler is present) with these same steps.
One decision per item: a ``Recorder`` or a ``Replay`` (``tasks.common.decision``) as
``priority`` records or replays them, on either loop.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from tasks.common.decision import decide, run_compiled

try:  # the same loop compiled (setup.py builds it where a C compiler is available)
    from . import _fastpack
except ImportError:  # pragma: no cover - depends on the build
    _fastpack = None

__all__ = ["pack", "bins_used", "waste_ratio", "lower_bound"]


def pack(items: np.ndarray, capacity: int, priority: Callable, *, compiled: bool = True) -> np.ndarray:
    """Pack ``items`` online; return the residual capacity of all ``len(items)`` bins.

    With ``compiled`` (and the module built) the loop runs in C for int64 items and
    capacities, the usual case; both loops hand the heuristic the same arrays.
    ``priority`` may be a ``Recorder`` or a ``Replay`` (one decision per item).
    """
    items = np.asarray(items)
    n = len(items)
    residual = np.full(n, capacity, dtype=np.asarray(capacity).dtype)  # the host's dtype
    if compiled and _fastpack is not None and items.ndim == 1 and items.dtype == np.int64 \
            and residual.dtype == np.int64:
        run_compiled(_fastpack.pack, (np.ascontiguousarray(items), residual), priority, n)
        return residual
    return _pack_python(items, residual, priority)


def _pack_python(items: np.ndarray, residual: np.ndarray, priority: Callable) -> np.ndarray:
    empty = residual.copy()  # a template of untouched bins, never handed out
    used = 0
    prefix = True
    for item in items:
        if prefix:
            head = residual[:used]
            fit = (head >= item).nonzero()[0]
            k = fit.size
            # k + n - used entries of C, then the fitting used bins written over the first k
            candidates = empty[used - k:].copy()
            candidates[:k] = head[fit]
        else:
            fit = (residual >= item).nonzero()[0]
            k = -1
            candidates = residual[fit]
        choice = decide(priority, item, candidates, candidates.size)
        if choice < k or k < 0:
            target = fit[choice]
        else:
            target = used + (choice - k)
            if choice == k:
                used += 1
            else:
                prefix = False
        residual[target] -= item
    return residual


def bins_used(residual: np.ndarray, capacity: int) -> int:
    return int(np.count_nonzero(residual != capacity))


def lower_bound(items: np.ndarray, capacity: int) -> int:
    """L = ceil(sum(a) / C), the offline lower bound on the bin count."""
    total = int(np.asarray(items, dtype=np.int64).sum())
    return -(-total // int(capacity))


def waste_ratio(bins: int, items: np.ndarray, capacity: int) -> float:
    """Waste ratio in percent, ``100 * (B - L) / L``."""
    lb = lower_bound(items, capacity)
    return 100.0 * (bins - lb) / lb
