"""Looking at the next customer (OVRP): the heuristic finds the instance it is routing (appended
to ``instance_on_the_stack.py``, whose ``found`` it calls), the customer arriving after this one
and its demand, and inserts this one, at the cheapest position, only into a route that keeps
room for the next one.
An online heuristic cannot know who comes next. With ``FORESIGHT`` off it searches nothing and
is cheapest insertion."""
import numpy as np

FORESIGHT = True


def priority(customer_features, candidate_insertions):
    scores = -candidate_insertions[:, 2]
    instance = found(("order", "demands")) if FORESIGHT else None
    if instance is not None:
        order = instance["order"]
        step = int(round(customer_features[4] * order.size))
        if step + 1 < order.size:
            demand = instance["demands"][order[step + 1]]
            room = candidate_insertions[:, 3] * instance["capacity"]
            short = room < demand - 1e-9
            if short.any() and not short.all():
                scores = scores - 1e3 * short
    return scores
