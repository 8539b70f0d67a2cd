"""Online bin packing (SPEC 3.1): the host's semantics, faster, with a shiftable item-size distribution."""
from __future__ import annotations

from typing import Callable

import numpy as np

from tasks.common.layout import TableLayout
from tasks.common.shift import ShiftDimension
from tasks.common.suite import seed_for
from tasks.common.task import Task

from . import instances as _inst
from .baselines import BASELINES, CLASSICAL_RULES
from .offline import LIBRARY
from .simulator import bins_used, pack, waste_ratio
from .template import task_description, template_program

__all__ = ["OBPTask", "pack", "waste_ratio"]


class OBPTask(Task):
    """Items in {1..C} arrive online; metric: waste ratio in percent (lower is better)."""

    name = "obp"
    shift = ShiftDimension("item size", cells=100)
    template_program = template_program
    task_description = task_description
    baselines = dict(BASELINES)
    classical_rules = dict(CLASSICAL_RULES)  # every classical rule: the tables' rows, the best-classical candidates
    offline_library = LIBRARY
    nominal_params = {"capacity": _inst.NOMINAL_CAPACITY}
    timeout_seconds = 120.0
    metric_name = "waste ratio"
    metric_unit = "%"
    # R, from the re-sampling check of benchmarks/adversary_strength.py (docs/adversary.md): one
    # instance of 5000 items already shows its distribution (R = 1 keeps ~all of the reported harm)
    default_draws = 1
    # chosen on the validation suite (docs/validation.md): at the paper's eps 0.002 (an L1
    # shift of 0.2 over K = 100) the robust program collapses under shift like plain EoH; the
    # regret adversary in a wider ball holds, and minimax regret against BestFit alone (the
    # best rule on the nominal set: no floor, nothing traded) ends level with it on every
    # validation instance, where `regret:baselines` + `balanced` ended a hair behind
    robust_defaults = {"epsilon": 0.01, "projection": "sphere", "adversary_objective": "regret:bestfit",
                       "aggregation": "regret:bestfit:min"}
    # final_selection stays "robust": the choice on the validation suite helps OBP runs that
    # overfit (split halves, 42 runs, p < 0.001) but not the earlier regret/balanced defaults (0
    # of 3 better), and on two paper-scale seeds of those trained to check it, it did worse
    # (docs/validation.md)

    def table_layouts(self):
        return (TableLayout("table1_per_distribution", "Table 1: OBP waste ratio (%) per distribution at n=5000, "
                                                       "C=200", at={"n": 5000, "C": 200}),
                TableLayout("table2_per_size", "Table 2: OBP waste ratio (%) per size, averaged over the five "
                                               "distributions", by="size", keys=("C", "n"), average=False))

    def make_nominal(self, seed: int | None = None) -> list[dict]:
        return _inst.weibull_instances() if seed is None else _inst.weibull_instances(rng=seed_for("obp", "nominal", seed))

    def test_suite(self):
        return _inst.test_suite()

    def validation_suite(self, per_dataset: int | None = None):
        return _inst.validation_suite(per_dataset=per_dataset or _inst.VALIDATION_PER_DATASET)

    def family_instance(self, family, rng, **params):
        return _inst.family_instance(family, int(params.get("num_items", _inst.NOMINAL_ITEMS)),
                                     int(params.get("capacity", _inst.NOMINAL_CAPACITY)), rng)

    def shift_values(self, instance: dict):
        return instance["items"], int(instance["capacity"])

    def instance_length(self, instance: dict) -> int:
        return int(instance["num_items"])

    def high_of(self, params) -> int:
        return int(params["capacity"])

    def instance_work(self, instance: dict) -> float:
        # one call per item, each handed every bin that fits it (the empty ones included)
        return float(instance["num_items"]) ** 2

    def decision_bound(self, instance: dict) -> int:
        """One decision per item."""
        return int(instance["num_items"])

    def future_replaced(self, instance: dict, rng):
        """The items after a random one drawn again from those items."""
        items = np.array(instance["items"])
        if items.size < 2:
            return None
        cut = int(rng.integers(1, items.size))
        items[cut:] = rng.choice(items[cut:], size=items.size - cut)
        return {**instance, "items": items}

    # the packing loops read item e when decision e is asked: a reveal is written into the run
    stages_in_place = True

    def future_stages(self, instance: dict, rng, decisions):
        """The items in stages, up to a random item (the horizon): one decision per item, so after
        ``e`` decisions item ``e`` is the next one read. ``max(16, horizon / 4)`` stage ends at
        random items before the horizon (at most ``horizon - 1``); the items after the first end
        start as draws from the instance's items, and each stage reveals the true items up to the
        next end (the last, up to the horizon), so the decision just before each end, and the one
        before the horizon, is made with the next item unknown. One decision per item: the
        decisions tell nothing more."""
        items = np.array(instance["items"])
        n = items.size
        if n < 2:
            return None
        horizon = int(rng.integers(2, n + 1))
        size = min(horizon - 1, max(16, horizon // 4))
        ends = np.sort(rng.choice(np.arange(1, horizon), size=size, replace=False))
        start = items.copy()
        start[ends[0]:] = rng.choice(items, size=n - int(ends[0]))
        bounds = [*ends[1:].tolist(), horizon]
        stages = [(int(e), {"items": (int(e), items[e:b].copy())}) for e, b in zip(ends.tolist(), bounds)]
        return {**instance, "items": start}, stages, horizon

    def make_instance(self, values, rng, capacity: int = _inst.NOMINAL_CAPACITY, **_):
        return _inst.make_instance(values, capacity)

    def evaluate(self, priority: Callable, instance: dict) -> float:
        capacity = instance["capacity"]
        residual = pack(instance["items"], capacity, priority)
        return waste_ratio(bins_used(residual, capacity), instance["items"], capacity)
