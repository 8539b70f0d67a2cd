"""Where a staged look-ahead check stops to reveal the instance, for a task whose instance is a
sequence of units (items, jobs in release order, customers in arrival order) of which each
decision knows a prefix: decision k knows the first ``known[k]`` units, ``known`` growing with k.

A stage ends before each decision that knows a unit more than the one before it, so every
decision is made with the units after its own known ones unknown (replaced), the next one
included: a program that decides from the past alone decides as it did, one that looks even one
unit ahead meets a copy of the future that is not the instance's. ``Task.future_stages`` turns
the plan into the copy and its patches."""
from __future__ import annotations

import numpy as np

__all__ = ["unit_stages", "unit_patches", "MOST_STAGES"]

MOST_STAGES = 64  # beyond it, that many ends drawn at random: each end restarts the copy's run


def unit_stages(known, rng: np.random.Generator, most: int = MOST_STAGES):
    """``(ends, revealed)`` for decisions knowing ``known[k]`` units each, or ``None`` when no
    decision knows more than the first (there is no future to hide). ``ends``: the decisions
    (``0 < e < len(known)``) before which the copy stops to be revealed more, at most ``most``
    of them (drawn by ``rng`` when there are more); ``revealed[i]``: how many units the copy
    holds true from the start (``i = 0``) and after the i-th end: those the last decision
    before the next end knows."""
    known = np.asarray(known, dtype=np.int64)
    if known.ndim != 1 or known.size < 2:
        return None
    ends = np.flatnonzero(known[1:] > known[:-1]) + 1
    if ends.size == 0:
        return None
    if ends.size > most:
        ends = np.sort(rng.choice(ends, size=most, replace=False))
    revealed = known[np.append(ends, known.size) - 1]
    return ends.tolist(), revealed.tolist()


def unit_patches(instance: dict, keys, units: np.ndarray, ends, revealed) -> list:
    """The stages of a ``unit_stages`` plan (``ends``, ``revealed``) for ``Task.future_stages``:
    at each end, the rows of ``instance[key]`` (each of ``keys``) of the units it reveals,
    ``units`` listing the rows in the order the decisions come to know them."""
    return [(end, {key: (units[low:high], np.asarray(instance[key])[units[low:high]]) for key in keys})
            for end, low, high in zip(ends, revealed[:-1], revealed[1:])]
