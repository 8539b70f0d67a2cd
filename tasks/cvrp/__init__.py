"""Capacitated vehicle routing from the host's ``cvrp_construct``, with a shiftable demand distribution.

The host's own route construction and tour cost score a heuristic (composed, not
copied); the metric is the total route length, the host's own (its score is minus the
mean length). Customer demands shift: they decide how often a vehicle must return to
the depot, the one thing a capacity-aware next-node rule has to plan for.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Callable

import numpy as np
from llm4ad.task.optimization.cvrp_construct import template as host
from llm4ad.task.optimization.cvrp_construct.evaluation import CVRPEvaluation

from tasks.common.adapter import HostTask, host_stream
from tasks.common.errors import HeuristicError, one_line
from tasks.common.shift import ShiftDimension

from .baselines import BASELINES
from .offline import LIBRARY

__all__ = ["CVRPTask", "make_instance", "route", "route_length"]

NOMINAL_CUSTOMERS, NOMINAL_CAPACITY, NOMINAL_COUNT, HOST_SEED = 50, 40, 5, 2024
MAX_DEMAND = 9  # the host draws demands with randint(1, 10)


def make_instance(coords, demands, capacity: int) -> dict:
    """Node 0 is the depot (its demand is drawn but never used, as in the host)."""
    coords = np.asarray(coords, dtype=float)
    return {"coords": coords, "distances": np.linalg.norm(coords[:, np.newaxis] - coords, axis=2),
            "demands": np.asarray(demands, dtype=np.int64), "capacity": int(capacity)}


def route(heuristic: Callable, instance: dict) -> list:
    """The host's ``route_construct`` with ``heuristic`` (``HeuristicError`` on failure).

    The heuristic gets a copy of the feasible unvisited nodes; its choice must be one of
    them, or the depot (0) when the vehicle is away from it.
    """
    def choose(current_node, depot, unvisited_nodes, rest_capacity, demands, distance_matrix):
        offered = np.array(unvisited_nodes, copy=True)
        try:
            node = int(np.asarray(heuristic(current_node, depot, offered, rest_capacity, demands,
                                             distance_matrix)).item())
        except Exception as exc:
            raise HeuristicError(f"select_next_node raised {type(exc).__name__}: {one_line(exc)}") from None
        if node == depot and current_node != depot or node in unvisited_nodes:
            return node
        raise HeuristicError(f"select_next_node chose node {node}, not a feasible unvisited node"
                             + (" (the vehicle is at the depot)" if node == depot else ""))

    sizes = SimpleNamespace(problem_size=len(instance["demands"]))
    return CVRPEvaluation.route_construct(sizes, instance["distances"], instance["demands"],
                                          instance["capacity"], choose)


def route_length(heuristic: Callable, instance: dict) -> float:
    return float(CVRPEvaluation.tour_cost(None, instance["coords"], route(heuristic, instance)))


class CVRPTask(HostTask):
    """A depot and n customers in the unit square; metric: total route length (lower is better)."""

    name = "cvrp"
    shift = ShiftDimension("customer demand", cells=MAX_DEMAND)
    template_program = host.template_program
    task_description = host.task_description.strip() + (
        " unvisited_nodes holds the unvisited customers whose demand fits the rest capacity; "
        "choosing the depot (0) ends the current route.")
    baselines = dict(BASELINES)
    offline_library = LIBRARY
    metric_name = "route length"
    metric_unit = "total distance in the unit square"
    nominal_params = {"C": NOMINAL_CAPACITY}
    # the usual pairs of customer count and capacity (20/30, 50/40, 100/50)
    test_sizes = ({"n": 20, "C": 30}, {"n": 50, "C": 40}, {"n": 100, "C": 50})
    validation_sizes = ({"n": 30, "C": 35}, {"n": 75, "C": 45})
    timeout_seconds = 20.0  # the host's limit

    def make_nominal(self) -> list[dict]:
        """The host's first instances: its stream (legacy seed 2024) from a local RandomState."""
        return host_stream(HOST_SEED, NOMINAL_COUNT, lambda rs: make_instance(
            rs.rand(NOMINAL_CUSTOMERS + 1, 2), rs.randint(1, 10, size=NOMINAL_CUSTOMERS + 1), NOMINAL_CAPACITY))

    def shift_values(self, instance: dict):
        return instance["demands"][1:], MAX_DEMAND

    @property
    def length_can_change(self) -> bool:
        return False  # the route length grows with the customer count: a longer instance is no shift

    def instance_work(self, instance: dict) -> float:
        return float(len(instance["demands"])) ** 2  # every step copies the distance matrix

    def make_instance(self, values, rng, C: int = NOMINAL_CAPACITY, **_):
        """Customers with the given demands, uniform in the unit square like the depot."""
        demands = np.concatenate([rng.integers(1, MAX_DEMAND + 1, size=1), values])
        return make_instance(rng.random((len(values) + 1, 2)), demands, C)

    def evaluate(self, priority: Callable, instance: dict) -> float:
        return route_length(priority, instance)
