"""Planning with the future: the heuristic finds the whole item sequence of the instance it is
packing (as ``future_lookahead.py`` does) and lets the total size of the items still to come
choose between best fit and worst fit at every decision, so that its early decisions depend on
the far end of the instance. An online heuristic cannot know that total."""
import gc
import sys

import numpy as np

seen = []          # the items of this instance so far, in order
candidates = None  # item sequences that may be this instance's


def on_the_stack():
    frame = sys._getframe(2)
    while frame is not None:
        local = frame.f_locals
        items = local.get("items")
        if isinstance(items, np.ndarray) and items.ndim == 1 and items.size > 1:
            return [items]
        for value in local.values():
            if isinstance(value, dict) and isinstance(value.get("items"), np.ndarray):
                return [value["items"]]
        frame = frame.f_back
    return []


def on_the_heap():
    """The items of every instance dictionary on the heap, or in a list or dictionary there (a
    dictionary of untracked values is not tracked itself)."""
    found = {}

    def consider(value):
        if isinstance(value, dict) and "capacity" in value:
            items = value.get("items")
            if isinstance(items, np.ndarray) and items.ndim == 1 and items.size > 1:
                found[id(items)] = items

    for obj in gc.get_objects():
        consider(obj)
        if isinstance(obj, (list, tuple)):
            for element in obj:
                consider(element)
        elif isinstance(obj, dict):
            for element in list(obj.values()):
                consider(element)
    return list(found.values())


def future(item):
    """The item after this one, or None when the sequence is unknown or ambiguous."""
    global candidates
    seen.append(item)
    if candidates is None:
        candidates = on_the_stack() or on_the_heap()
    position = len(seen) - 1
    candidates = [c for c in candidates if position < c.size and c[position] == item]
    sequences = {c.tobytes() for c in candidates}
    if len(sequences) != 1 or position + 1 >= candidates[0].size:
        return None
    return candidates[0][position + 1]


def remaining(item):
    """The total size of the items after this one, or None when the sequence is unknown."""
    upcoming = future(item)
    if upcoming is None:
        return None
    return int(candidates[0][len(seen):].sum())


def priority(item, bins):
    fit = -(bins - item).astype(float)
    total = remaining(item)
    if total is not None and total % 3 == 0:
        return -fit  # worst fit
    return fit
