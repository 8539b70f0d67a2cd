"""Two classical OBP rules that need every bin's gap, not only the bins offered: Sum-of-Squares and Harmonic-k.

``bins`` holds only the bins that can take the item, so each rule keeps, for the instance it is
packing, the gap of every bin it has opened: it knows its own choices (the first argmax of what it
returns) and checks each call's ``bins`` against what it expects. The file imports numpy only, so
its text runs as a program in the engine too (where every instance meets a fresh module).
"""
from __future__ import annotations

import threading

import numpy as np

HARMONIC_CLASSES = 10  # k of Harmonic-k: items in (C/(i+1), C/i] form class i < k, the rest class k


class _Packing:
    """The gaps of an instance's bins, rebuilt from the bins offered and the rule's own choices.

    The simulator pre-allocates one bin per item, fills them in index order (a rule here always
    opens the first empty bin) and offers, in index order, the used bins with room for the item
    followed by every empty bin. So at an instance's first call every bin is offered, all equal to
    the capacity C, and an instance is ``len(bins)`` calls long.
    """

    def __init__(self, bins: np.ndarray):
        """The packing as ``bins`` shows it: at an instance's first call every bin, all empty. A
        rule asked first mid-instance knows only the bins offered: those below the largest are
        taken as the used bins, in their order, the rest as empty."""
        bins = np.asarray(bins, dtype=np.int64)
        self.capacity = int(bins.max())
        self.total = len(bins)               # bins of the instance (= its items = its calls)
        self.gaps = np.zeros(self.total, dtype=np.int64)  # gaps of the used bins, a prefix
        partial = bins[bins < self.capacity]
        self.used = partial.size
        self.gaps[:self.used] = partial
        self.calls = 0
        self.counts = np.bincount(partial[partial > 0], minlength=self.capacity + 1)  # N(h), 0 < h < C
        self.open = {}                      # Harmonic: class -> index of its open bin

    def offered(self, item, bins: np.ndarray):
        """The used bins that fit ``item`` (their indices) if ``bins`` is what this packing offers, else None."""
        fit = np.flatnonzero(self.gaps[:self.used] >= item)
        k = fit.size
        if len(bins) != k + self.total - self.used or not np.array_equal(bins[:k], self.gaps[fit]):
            return None
        if k < len(bins) and bins[k:].min() != self.capacity:
            return None
        return fit

    def place(self, item, fit: np.ndarray, choice: int) -> int:
        """Record that the item went to offered position ``choice``; the bin's index."""
        if choice < fit.size:
            target = int(fit[choice])
            before = int(self.gaps[target])
            self.counts[before] -= 1
        else:
            target = self.used
            self.used += 1
            before = self.capacity
        after = before - int(item)
        self.gaps[target] = after
        if after > 0:
            self.counts[after] += 1
        self.calls += 1
        return target


_local = threading.local()  # one packing per rule and thread: evaluations in threads do not mix


def _packing(rule: str, item, bins: np.ndarray):
    """The rule's packing of this instance and the offered used bins; a new packing when the
    previous one is finished (all its calls made) or ``bins`` is not what it would offer (the
    first call of an instance: every bin empty)."""
    packing = getattr(_local, rule, None)
    fit = None
    if packing is not None and packing.calls < packing.total:
        fit = packing.offered(item, bins)
    if fit is None:
        packing = _Packing(bins)
        setattr(_local, rule, packing)
        fit = packing.offered(item, bins)
    return packing, fit


def sum_of_squares(item: float, bins: np.ndarray) -> np.ndarray:
    """Sum-of-Squares (Csirik, Johnson, Kenyon, Orlin, Shor, Weber): the bin after which
    ``sum_h N(h)^2`` is smallest, ``N(h)`` the number of partly filled bins with gap ``h``
    (``0 < h < C``; full and empty bins do not count); ties to the first bin offered.

    Placing the item of size ``s`` into a bin of gap ``g`` moves one bin from ``N(g)`` to
    ``N(g - s)``; the sum changes by ``-(2 N(g) - 1)`` (a partly filled bin leaves level g) plus
    ``2 N(g - s) + 1`` (if the bin is not then full). The priority is minus that change.
    """
    packing, fit = _packing("sum_of_squares", item, bins)
    s, counts, capacity = int(item), packing.counts, packing.capacity
    gaps = packing.gaps[fit]
    after = gaps - s
    change = 1 - 2 * counts[gaps] + np.where(after > 0, 2 * counts[np.maximum(after, 0)] + 1, 0)
    scores = np.empty(len(bins), dtype=np.float64)
    scores[:fit.size] = -change
    scores[fit.size:] = -(2 * counts[capacity - s] + 1) if s < capacity else 0.0
    packing.place(item, fit, int(np.argmax(scores)))
    return scores


def harmonic(item: float, bins: np.ndarray) -> np.ndarray:
    """Harmonic-k (Lee and Lee), k = ``HARMONIC_CLASSES``: an item of size in ``(C/(i+1), C/i]``
    is of class ``i`` (``i < k``), smaller ones of class ``k``; each class packs Next-Fit into
    bins of its own: the item goes into its class's open bin if it fits there, else into a new
    bin, which becomes the class's open bin (a bin of class ``i < k`` so holds exactly ``i`` items)."""
    packing, fit = _packing("harmonic", item, bins)
    capacity = packing.capacity
    klass = min(HARMONIC_CLASSES, capacity // int(item)) if item > 0 else HARMONIC_CLASSES
    scores = np.full(len(bins), -1.0)
    scores[fit.size:] = 0.0  # a new bin: the first empty one
    target = packing.open.get(klass)
    if target is not None:
        where = np.searchsorted(fit, target)
        if where < fit.size and fit[where] == target:
            scores[where] = 1.0
    packing.open[klass] = packing.place(item, fit, int(np.argmax(scores)))
    return scores
