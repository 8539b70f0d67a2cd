"""Independent check of a routing result: coverage, capacity, the overflow rule and the reported length."""
from __future__ import annotations

import numpy as np

from .reference import routes_length
from .simulator import RoutingResult

__all__ = ["violations"]


def violations(instance: dict, result: RoutingResult, rel_tol: float = 1e-9) -> list[str]:
    """Everything wrong with ``result`` on ``instance`` (empty when it is feasible).

    Checks: every customer on exactly one route; V fleet routes plus
    ``overflow_routes`` extra ones; no route loaded above Q; every overflow route was
    opened by a customer that fitted in no existing route at its arrival; the total
    length recomputed from the coordinates equals the reported one.
    """
    problems: list[str] = []
    demands = np.asarray(instance["demands"], dtype=np.int64)
    n, capacity, vehicles = int(demands.size), int(instance["capacity"]), int(instance["vehicles"])
    routes = [list(map(int, r)) for r in result.routes]

    if result.vehicles != vehicles:
        problems.append(f"result is for {result.vehicles} vehicles, instance has {vehicles}")
    if len(routes) != vehicles + result.overflow_routes:
        problems.append(f"{len(routes)} routes, expected V + overflow = {vehicles + result.overflow_routes}")
    visits = np.zeros(n, dtype=np.int64)
    for r, route in enumerate(routes):
        if any(c < 0 or c >= n for c in route):
            problems.append(f"route {r} visits an unknown customer")
            continue
        visits[route] += 1
        load = int(demands[route].sum()) if route else 0
        if load > capacity:
            problems.append(f"route {r} carries {load} > Q = {capacity}")
        if r >= vehicles and not route:
            problems.append(f"overflow route {r} is empty")
    if np.any(visits != 1):
        missing, repeated = np.flatnonzero(visits == 0), np.flatnonzero(visits > 1)
        problems.append(f"customers served other than once: missing {missing.tolist()}, repeated {repeated.tolist()}")
        return problems

    # replay the arrivals: an overflow route must open for a customer no open route could take
    arrival = np.empty(n, dtype=np.int64)
    arrival[np.asarray(instance["order"], dtype=np.int64)] = np.arange(n)
    route_of = np.empty(n, dtype=np.int64)
    for r, route in enumerate(routes):
        route_of[route] = r
    openers = {r: min(route, key=lambda c: arrival[c]) for r, route in enumerate(routes) if r >= vehicles}
    loads = np.zeros(len(routes), dtype=np.int64)
    opened = vehicles
    for c in np.asarray(instance["order"], dtype=np.int64).tolist():
        r = int(route_of[c])
        if r >= vehicles and openers[r] == c:
            if r != opened:
                problems.append(f"overflow route {r} opened out of order")
            if np.any(loads[:opened] + demands[c] <= capacity):
                problems.append(f"overflow route {r} opened for customer {c} although a route had room")
            opened = max(opened, r + 1)
        elif r >= opened:
            problems.append(f"customer {c} joined route {r} before it was opened")
        loads[r] += demands[c]

    length = routes_length(instance["depot"], instance["coords"], routes)
    if not np.isclose(length, result.total_length, rtol=rel_tol, atol=0.0):
        problems.append(f"reported length {result.total_length!r} != recomputed {length!r}")
    return problems
