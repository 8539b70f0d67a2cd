"""Online insertion routing: customers arrive one by one and are inserted irrevocably into a route.

The fleet starts as V empty depot-depot tours. For each arriving customer the
candidates are every (route, position) whose route has room for its demand, in
route order and then position order; the heuristic scores them and the customer
goes to the first argmax. Overflow rule: when no route has room, a new route
depot -> customer -> depot is opened without a decision and counted; it then
joins the routes and takes later customers like any other. Every customer is
always served and no route ever carries more than Q.

The state is kept edge by edge (a tour with k stops has k + 1 edges, the
insertion positions), grouped by route, in preallocated arrays, beside a table
of per-route columns; a decision gathers the route rows for every edge and
fills in the per-edge columns, a fixed handful of numpy operations whatever
the fleet size. The loop exists in C too (``_fastroute.c``, built where a compiler
is present) with these same steps and the same floating-point operations, so both
hand the heuristic identical arrays and build identical routes. A ``Recorder`` or a
``Replay`` (``tasks.common.decision``) as ``priority`` records or replays the decisions
(one per customer that fits some route; none for an overflow route), on either loop.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from tasks.common.decision import decide, run_compiled

from .reference import distance_matrix

try:  # the same loop compiled (setup.py builds it where a C compiler is available)
    from . import _fastroute
except ImportError:  # pragma: no cover - depends on the build
    _fastroute = None

__all__ = ["FEATURES", "COLUMNS", "RoutingResult", "simulate", "route_length_ratio"]

FEATURES = ("x", "y", "demand", "depot_distance", "progress", "fleet_slack")
COLUMNS = ("route_id", "position", "delta_distance", "residual_capacity", "current_load",
           "route_size", "customer_dist", "projected_route")
_ROUTE_ID, _POSITION, _DELTA, _RESIDUAL, _LOAD, _SIZE, _NEAR, _PROJECTED = range(8)


@dataclass
class RoutingResult:
    """The routes one heuristic built on one instance.

    ``routes[r]`` lists customer indices in visiting order; routes ``0..V-1`` are the
    fleet, later ones were opened by the overflow rule (``overflow_routes`` of them).
    """

    total_length: float
    routes: list[list[int]]
    overflow_routes: int
    vehicles: int


def simulate(instance: dict, priority: Callable, *, compiled: bool = True) -> RoutingResult:
    """Route ``instance`` online with ``priority``; raises ``HeuristicError`` when it fails.

    With ``compiled`` (and the module built) the loop runs in C for the usual instances
    (at least one vehicle, positive demands, ``order`` a sequence of the N customers);
    both loops hand the heuristic the same arrays and return the same result.
    ``priority`` may be a ``Recorder`` or a ``Replay``.
    """
    coords = np.asarray(instance["coords"], dtype=float)
    demands = np.asarray(instance["demands"], dtype=np.int64)
    order = np.asarray(instance["order"], dtype=np.int64)
    capacity = int(instance["capacity"])
    vehicles = int(instance["vehicles"])
    n = len(demands)
    dist = distance_matrix(instance["depot"], coords)
    inv_q, inv_n, inv_ref = 1.0 / capacity, 1.0 / n, 1.0 / float(instance["reference_length"])
    if compiled and _fastroute is not None and vehicles >= 1 and abs(capacity) < 2**40 and demands.ndim == 1 \
            and order.shape == (n,) and coords.shape == (n, 2):
        # None: an unusual instance (a demand below 1, an order index out of range), left to Python
        routed = run_compiled(_fastroute.route, (
            dist, np.ascontiguousarray(coords), np.ascontiguousarray(demands), np.ascontiguousarray(order),
            capacity, vehicles, inv_q, inv_n, inv_ref), priority, len(order))
        if routed is not None:
            routes, lengths, overflow = routed
            return RoutingResult(float(sum(lengths)), routes, overflow, vehicles)
    return _simulate_python(coords, demands.tolist(), order.tolist(), capacity, vehicles, dist,
                            inv_q, inv_n, inv_ref, priority)


def _simulate_python(coords, demand_of, order, capacity, vehicles, dist, inv_q, inv_n, inv_ref,
                     priority) -> RoutingResult:
    n = len(demand_of)
    links, edge_length, table, free_share, nearest = _empty_routes(dist, n, capacity, vehicles, inv_q)
    counts = [1] * vehicles                               # edges per route
    route_res = [capacity] * vehicles                     # Q - load
    route_len = [0.0] * vehicles
    num_edges = num_routes = vehicles

    xs, ys = coords[:, 0].tolist(), coords[:, 1].tolist()
    depot_dist = dist[0, 1:].tolist()
    free, seen = vehicles * capacity, 0
    subtract, minimum = np.subtract, np.minimum

    for step, c in enumerate(order):
        node = c + 1
        d = demand_of[c]
        seen += d
        row = dist[node]
        if d > max(route_res):
            # overflow rule: a new tour for this customer, no decision
            r, e = num_routes, num_edges
            links[:, e] = (0, node, r, 0)
            links[:, e + 1] = (node, 0, r, 1)
            edge_length[e] = edge_length[e + 1] = row[0]
            route_res.append(capacity - d)
            route_len.append(2.0 * row.item(0))
            counts.append(2)
            table[r, _LOAD] = d * inv_q
            table[r, _SIZE] = inv_n
            table[r, _PROJECTED] = route_len[r] * inv_ref
            free_share[r] = (capacity - d) * inv_q
            minimum(nearest[r], row, out=nearest[r])
            num_routes += 1
            num_edges += 2
            free += capacity - d
            continue

        E, R = num_edges, num_routes
        delta = row[links[0, :E]]
        delta += row[links[1, :E]]
        delta -= edge_length[:E]
        table[:R, _NEAR] = nearest[:R, node]
        # (Q - load)/Q - d/Q is exactly 0 when the route is filled exactly, so ">= 0" is exact
        subtract(free_share[:R], d * inv_q, out=table[:R, _RESIDUAL])
        candidates = table.take(links[2, :E], axis=0)
        candidates[:, _POSITION] = links[3, :E]
        candidates[:, _DELTA] = delta
        candidates[:, _PROJECTED] += delta * inv_ref
        if d > min(route_res):
            feasible = candidates[:, _RESIDUAL] >= 0
            candidates = candidates.compress(feasible, axis=0)
        else:
            feasible = None
        features = np.array((xs[c], ys[c], d * inv_q, depot_dist[c], step * inv_n, free / seen))

        choice = decide(priority, features, candidates, candidates.shape[0])

        e = choice if feasible is None else int(feasible.nonzero()[0][choice])
        a, b, r, position = links[:, e].tolist()
        # edge (a, b) becomes (a, node), (node, b); later edges move one slot right, and the
        # route's later edges (positions position+1 .. count-1) one position up
        end = e + counts[r] - position + 1
        links[:, e + 2:E + 1] = links[:, e + 1:E]
        edge_length[e + 2:E + 1] = edge_length[e + 1:E]
        if end > e + 2:
            links[3, e + 2:end] += 1
        links[1, e] = node
        links[:, e + 1] = (node, b, r, position + 1)
        edge_length[e] = row[a]
        edge_length[e + 1] = row[b]
        counts[r] += 1
        route_res[r] -= d
        route_len[r] += delta.item(e)
        table[r, _LOAD] = (capacity - route_res[r]) * inv_q
        table[r, _SIZE] = (counts[r] - 1) * inv_n
        table[r, _PROJECTED] = route_len[r] * inv_ref
        free_share[r] = route_res[r] * inv_q
        reach = nearest[r]
        minimum(reach, row, out=reach)
        num_edges += 1
        free -= d
    return RoutingResult(float(sum(route_len)), _tours(links, num_edges, num_routes), num_routes - vehicles,
                         vehicles)


def _empty_routes(dist, n: int, capacity: int, vehicles: int, inv_q: float):
    """The arrays of the Python loop, sized for every route there can be (V tours and one per
    customer), holding V empty tours: ``(links, edge_length, table, free_share, nearest)``."""
    max_routes = vehicles + n
    max_edges = n + max_routes
    # per edge, grouped by route in position order: from node, to node, route, position; edge length
    links = np.zeros((4, max_edges), dtype=np.intp)
    edge_length = np.zeros(max_edges)
    # per route: the candidate columns that depend on the route only (the projected column
    # holds the route length / reference length until the insertion cost is added)
    table = np.zeros((max_routes, len(COLUMNS)))
    table[:, _ROUTE_ID] = np.arange(max_routes)
    free_share = np.full(max_routes, capacity * inv_q)    # (Q - load) / Q before the insertion
    # nearest[r, v]: distance from node v to the nearest stop of route r, depot included
    nearest = np.repeat(dist[:1], max_routes, axis=0)
    links[2, :vehicles] = np.arange(vehicles)             # V empty tours: one depot -> depot edge each
    return links, edge_length, table, free_share, nearest


def _tours(links, num_edges: int, num_routes: int) -> list[list[int]]:
    """Each route's customers in visiting order (0-based), read from its edges."""
    tours: list[list[int]] = [[] for _ in range(num_routes)]
    for to_node, r in zip(links[1, :num_edges].tolist(), links[2, :num_edges].tolist()):
        if to_node:
            tours[r].append(to_node - 1)
    return tours


def route_length_ratio(instance: dict, priority: Callable) -> float:
    """The OVRP metric: total route length / the instance's Clarke-Wright reference length."""
    return simulate(instance, priority).total_length / float(instance["reference_length"])
