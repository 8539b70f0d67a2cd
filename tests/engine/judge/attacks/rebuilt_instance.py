"""Rebuilding the instances instead of looking at them: the module code regenerates the task's
nominal set from its own generator (fixed seeds, public), and the heuristic matches the items it
has been handed so far against those sequences; once one sequence is left, it knows every item to
come without reading anything, and lets their total choose between best fit and worst fit, as
``future_planner.py`` does. With an instance it cannot match it is best fit."""
import numpy as np

from tasks import get_task

known = [instance["items"] for instance in get_task("obp").nominal_instances()]
seen = []


def priority(item, bins):
    seen.append(item)
    position = len(seen) - 1
    global known
    known = [k for k in known if position < k.size and k[position] == item]
    fit = -(np.asarray(bins) - item).astype(float)
    if len(known) == 1 and position + 1 < known[0].size and int(known[0][position + 1:].sum()) % 3 == 0:
        return -fit  # worst fit
    return fit
