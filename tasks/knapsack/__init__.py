"""0/1 knapsack from the host's ``knapsack_construct``, with a shiftable item-weight distribution.

The host's own packing loop scores a heuristic (composed, not copied); the metric is the
optimality gap in percent against the exact optimum (dynamic programming), so instances
of every size and weight distribution share one scale. The item weight shifts: a greedy
rule loses only through integrality, that is through how the weights fit the capacity.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from llm4ad.task.optimization.knapsack_construct import template as host
from llm4ad.task.optimization.knapsack_construct.evaluation import KnapsackEvaluation

from tasks.common.adapter import HostTask, host_stream
from tasks.common.errors import HeuristicError, one_line
from tasks.common.shift import ShiftDimension

from .baselines import BASELINES
from .offline import LIBRARY

__all__ = ["KnapsackTask", "make_instance", "optimum", "packed_value", "max_weight"]

NOMINAL_ITEMS, NOMINAL_CAPACITY, NOMINAL_COUNT, HOST_SEED = 50, 100, 5, 2024


def max_weight(capacity: int) -> int:
    """The largest weight the host draws: weights are ``randint(10, C / 2 + 10)``."""
    return int(capacity) // 2 + 9


def optimum(weights, values, capacity: int) -> int:
    """The best total value that fits (0/1 knapsack by dynamic programming over capacities)."""
    best = np.zeros(int(capacity) + 1, dtype=np.int64)
    for w, v in zip(np.asarray(weights, dtype=np.int64), np.asarray(values, dtype=np.int64)):
        if w <= capacity:
            best[w:] = np.maximum(best[w:], best[: best.size - w] + v)
    return int(best[-1])


def make_instance(weights, values, capacity: int) -> dict:
    weights, values = np.asarray(weights, dtype=np.int64), np.asarray(values, dtype=np.int64)
    return {"weights": weights, "values": values, "capacity": int(capacity),
            "optimum": optimum(weights, values, capacity)}


def packed_value(heuristic: Callable, instance: dict) -> int:
    """Total value the host's ``pack_items`` gets with ``heuristic`` (``HeuristicError`` on failure).

    The heuristic gets a copy of the remaining items, so it cannot add items of its own; a
    choice that is not one of them (or ``None``, which stops) is an error.
    """
    def choose(remaining_capacity, remaining_items):
        try:
            choice = heuristic(remaining_capacity, list(remaining_items))
        except Exception as exc:
            raise HeuristicError(f"select_next_item raised {type(exc).__name__}: {one_line(exc)}") from None
        try:
            known = choice is None or choice in remaining_items
        except ValueError:  # an array compared with the tuples
            known = False
        if not known:
            raise HeuristicError(f"select_next_item returned {one_line(repr(choice))}, not a remaining item")
        return choice

    value, _ = KnapsackEvaluation.pack_items(None, instance["weights"].tolist(), instance["values"].tolist(),
                                             instance["capacity"], choose)
    return int(value)


class KnapsackTask(HostTask):
    """Items (weight, value) and a capacity; metric: optimality gap in percent (lower is better)."""

    name = "knapsack"
    shift = ShiftDimension("item weight", cells=50)
    template_program = host.template_program.replace("import numpy as np", "import numpy as np\n"
                                                     "from typing import List, Tuple", 1)
    task_description = host.task_description.strip() + (
        " Items are (weight, value, index) tuples; an item returned that does not fit is skipped, "
        "and returning None stops the packing.")
    baselines = dict(BASELINES)
    offline_library = LIBRARY
    metric_name = "optimality gap"
    metric_unit = "%"
    nominal_params = {"C": NOMINAL_CAPACITY}
    test_sizes = tuple({"n": n, "C": c} for n in (50, 100, 200) for c in (100, 200))
    validation_sizes = ({"n": 75, "C": 150}, {"n": 150, "C": 250})
    timeout_seconds = 20.0  # the host's limit

    def make_nominal(self) -> list[dict]:
        """The host's first instances: its stream (legacy seed 2024) from a local RandomState."""
        return host_stream(HOST_SEED, NOMINAL_COUNT, lambda rs: make_instance(
            rs.randint(10, NOMINAL_CAPACITY / 2 + 10, size=NOMINAL_ITEMS), rs.randint(1, 101, size=NOMINAL_ITEMS),
            NOMINAL_CAPACITY))

    def shift_values(self, instance: dict):
        return instance["weights"], max_weight(instance["capacity"])

    def high_of(self, params) -> int:
        return max_weight(params.get("C", NOMINAL_CAPACITY))

    def make_instance(self, values, rng, C: int = NOMINAL_CAPACITY, **_):
        """Items with the given weights and values U{1..100}, as the host draws them."""
        return make_instance(values, rng.integers(1, 101, size=len(values)), C)

    def evaluate(self, priority: Callable, instance: dict) -> float:
        best = instance["optimum"]
        return 100.0 * (best - packed_value(priority, instance)) / best if best > 0 else 0.0
