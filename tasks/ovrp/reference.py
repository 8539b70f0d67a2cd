"""Route geometry and the offline Clarke-Wright savings reference the OVRP metric divides by."""
from __future__ import annotations

import numpy as np

__all__ = ["distance_matrix", "routes_length", "clarke_wright", "clarke_wright_length", "out_and_back_length"]


def distance_matrix(depot: np.ndarray, coords: np.ndarray) -> np.ndarray:
    """Euclidean distances between nodes; node 0 is the depot, node ``c + 1`` is customer ``c``."""
    points = np.vstack([np.asarray(depot, dtype=float)[None, :], np.asarray(coords, dtype=float)])
    delta = points[:, None, :] - points[None, :, :]
    # bit for bit scipy's cdist (the square root of the sum of squares, in the same order), without
    # loading scipy in every program process: its linear algebra doubled what a fork of one copies
    return np.sqrt((delta * delta).sum(axis=-1))


def routes_length(depot: np.ndarray, coords: np.ndarray, routes) -> float:
    """Total length of depot-to-depot tours, each a sequence of customer indices."""
    depot = np.asarray(depot, dtype=float)
    coords = np.asarray(coords, dtype=float)
    total = 0.0
    for route in routes:
        if len(route) == 0:
            continue
        path = np.vstack([depot, coords[np.asarray(route, dtype=np.int64)], depot])
        total += float(np.sqrt((np.diff(path, axis=0) ** 2).sum(axis=1)).sum())
    return total


def out_and_back_length(depot: np.ndarray, coords: np.ndarray) -> float:
    """The trivial solution: one vehicle per customer, depot -> customer -> depot."""
    d = np.asarray(coords, dtype=float) - np.asarray(depot, dtype=float)
    return float(2.0 * np.sqrt((d * d).sum(axis=1)).sum())


def clarke_wright(depot: np.ndarray, coords: np.ndarray, demands: np.ndarray, capacity: int) -> list[list[int]]:
    """Routes of the parallel Clarke-Wright savings algorithm (capacity Q, unlimited vehicles).

    Start from one out-and-back tour per customer; visit the savings
    ``s_ij = d(0, i) + d(0, j) - d(i, j)`` in decreasing order (ties by pair index)
    and join the tours of i and j end to end when both are tour ends, the tours
    differ, the joined load is at most Q and ``s_ij > 0``. Every join shortens the
    total, so the result is never longer than the out-and-back solution.
    """
    demands = np.asarray(demands, dtype=np.int64)
    n = int(demands.size)
    dist = distance_matrix(depot, coords)
    d0 = dist[0, 1:]
    iu, ju = np.triu_indices(n, 1)
    savings = d0[iu] + d0[ju] - dist[iu + 1, ju + 1]
    order = np.argsort(-savings, kind="stable")
    route_of = list(range(n))
    routes: dict[int, list[int]] = {c: [c] for c in range(n)}
    load = {c: int(demands[c]) for c in range(n)}
    for k in order.tolist():
        if savings[k] <= 0:
            break
        i, j = int(iu[k]), int(ju[k])
        ri, rj = route_of[i], route_of[j]
        if ri == rj or load[ri] + load[rj] > capacity:
            continue
        a, b = routes[ri], routes[rj]
        if a[-1] == i and b[0] == j:
            merged = a + b
        elif a[0] == i and b[-1] == j:
            merged = b + a
        elif a[-1] == i and b[-1] == j:
            merged = a + b[::-1]
        elif a[0] == i and b[0] == j:
            merged = a[::-1] + b
        else:  # i or j is interior to its tour
            continue
        routes[ri] = merged
        load[ri] += load.pop(rj)
        for c in routes.pop(rj):
            route_of[c] = ri
    return [routes[r] for r in sorted(routes)]


def clarke_wright_length(depot: np.ndarray, coords: np.ndarray, demands: np.ndarray, capacity: int) -> float:
    """Total length of the Clarke-Wright savings solution."""
    return routes_length(depot, coords, clarke_wright(depot, coords, demands, capacity))
