"""HostTask: a declaration checks itself, the suites follow it, and a script can register a task."""
from __future__ import annotations

import numpy as np
import pytest

import tasks
from tasks import get_task, list_tasks, register_task
from tasks.common.adapter import HostTask
from tasks.common.families import FAMILIES, VALIDATION_FAMILIES
from tasks.common.shift import ShiftDimension


class Sums(HostTask):
    """A toy host task: the metric is the mean of the values."""

    name = "adapter_toy"
    shift = ShiftDimension("value", cells=10)
    template_program = "def priority(values):\n    return 0.0\n"
    task_description = "toy"
    baselines = {"Zero": lambda values: 0.0}
    nominal_params = {"high": 20}
    test_sizes = ({"n": 30, "high": 20}, {"n": 60, "high": 40})
    validation_sizes = ({"n": 45, "high": 30},)
    per_dataset = 3

    def make_nominal(self):
        return [self.make_instance(np.random.default_rng(i).integers(1, 21, 40), None, 20) for i in range(3)]

    def shift_values(self, instance):
        return instance["values"], instance["high"]

    def high_of(self, params):
        return int(params["high"])

    def make_instance(self, values, rng, high=20, **_):
        return {"values": np.asarray(values), "high": int(high)}

    def evaluate(self, priority, instance):
        return float(np.mean(instance["values"]))


def test_the_suites_are_the_declared_families_sizes_and_counts():
    task = Sums()
    suite = task.test_suite()
    assert [(d.family, d.params) for d in suite] == [(f, s) for f in FAMILIES for s in Sums.test_sizes]
    assert all(len(d.instances) == 3 for d in suite)
    for d in suite:
        for inst in d.instances:
            assert inst["values"].size == d.params["n"] and inst["high"] == d.params["high"]
            assert 1 <= inst["values"].min() and inst["values"].max() <= d.params["high"]
    validation = task.validation_suite()
    assert [d.family for d in validation] == list(VALIDATION_FAMILIES)
    assert all(len(d.instances) == 2 and d.params == {"n": 45, "high": 30} for d in validation)


def test_the_suites_are_deterministic_and_test_and_validation_seeds_differ():
    a, b = Sums().test_suite(), Sums().test_suite()
    for x, y in zip(a, b):
        for i, j in zip(x.instances, y.instances):
            np.testing.assert_array_equal(i["values"], j["values"])
    first = [inst["values"] for d in a for inst in d.instances]
    assert len({v.tobytes() for v in first}) == len(first)


@pytest.mark.parametrize("field, value, says", [
    ("validation_families", ("uniform", "beta"), "uniform also test families"),
    ("test_sizes", ({"high": 20},), "lacks the length 'n'"),
    ("validation_sizes", ({"n": 30, "high": 20},), "also test sizes"),
    ("validation_sizes", (), "validation_sizes: give at least one size"),
    ("test_families", ("uniform", "zipf"), "unknown families zipf"),
])
def test_a_declaration_that_mixes_the_suites_up_is_refused_naming_the_field(field, value, says):
    bad = type("Bad", (Sums,), {field: value})
    with pytest.raises(ValueError, match=says):
        bad()


def test_a_script_registers_a_task_by_name(monkeypatch):
    monkeypatch.setattr(tasks, "_registered", {})
    task = register_task(Sums)
    assert get_task("adapter_toy") is task and "adapter_toy" in list_tasks()
    assert register_task(Sums) is task                      # the same class again: the first one
    with pytest.raises(ValueError, match="already registered"):
        register_task(type("Sums", (Sums,), {"name": "obp"}))
    clash = type("Other", (Sums,), {})
    with pytest.raises(ValueError, match="already registered"):
        register_task(clash)


@pytest.mark.parametrize("name", [5, "", "lb:x", "a b/c:d", " padded"])
def test_a_script_cannot_register_a_task_under_a_name_that_is_no_name(monkeypatch, name):
    """A task loaded from a file is refused a name its workers would read as a reference (``lb:x``)
    or none at all; a task a script registers was not, and failed later with a line blaming the
    sandbox. It is held to the same rule when it is registered."""
    monkeypatch.setattr(tasks, "_registered", {})
    with pytest.raises(ValueError, match=r"\.name must be a non-empty string of letters, digits"):
        register_task(type("Named", (Sums,), {"name": name}))
    assert tasks._registered == {}
