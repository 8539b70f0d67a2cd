"""A tiny task that follows the protocol (so these tests do not depend on the real tasks) and a short OBP set."""
from __future__ import annotations

import numpy as np
import pytest

from tasks.common.errors import HeuristicError
from tasks.common.shift import ShiftDimension
from tasks.common.task import Task


class ToyTask(Task):
    """Values in {1..20} over 10 cells; the 'heuristic' maps the value array to a metric."""

    name = "toy"
    shift = ShiftDimension("value", cells=10)
    template_program = ""
    task_description = ""
    baselines: dict = {}
    nominal_params = {"high": 20}

    def __init__(self, length: int = 60, count: int = 3, can_change: bool = True):
        self.length = length
        self.can_change = can_change
        rng = np.random.default_rng(7)
        # nominal: small values (a discretised Beta(2, 5) shape)
        self._made = [self.make_instance(np.clip(np.round(1 + 19 * rng.beta(2, 5, length)), 1, 20), rng)
                         for _ in range(count)]

    def make_nominal(self):
        return self._made

    def test_suite(self):
        return []

    def shift_values(self, instance):
        return instance["values"], instance["high"]

    def instance_length(self, instance):
        return int(len(instance["values"]))

    @property
    def length_can_change(self):
        return self.can_change

    def make_instance(self, values, rng, high: int = 20, **_):
        return {"values": np.asarray(values, dtype=np.int64), "high": int(high)}

    def evaluate(self, priority, instance):
        try:
            return float(priority(instance["values"]))
        except Exception as exc:
            raise HeuristicError(f"priority raised {type(exc).__name__}: {exc}") from None


@pytest.fixture
def toy():
    return ToyTask()


@pytest.fixture
def toy_fixed_length():
    return ToyTask(can_change=False)


@pytest.fixture(scope="session")
def short_obp():
    """OBP with a short nominal set: 3 instances of 300 Weibull items (C = 200)."""
    from tasks import get_task
    from tasks.obp.instances import weibull_instances
    return get_task("obp"), weibull_instances(count=3, num_items=300)


@pytest.fixture(scope="session")
def short_obp_1000():
    """OBP with a reduced nominal set: 2 instances of 1000 Weibull items (C = 200)."""
    from tasks import get_task
    from tasks.obp.instances import weibull_instances
    return get_task("obp"), weibull_instances(count=2, num_items=1000)
