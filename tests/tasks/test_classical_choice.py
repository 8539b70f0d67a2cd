"""The best classical rule is chosen on the validation suite, by evaluating every rule there."""
import numpy as np

from tasks.common import classical
from tasks.common.suite import Dataset


class Stub:
    """A task whose metric is the rule's answer on the instance."""

    def __init__(self, name):
        self.name = name
        self.calls = []
        self.baselines = {"Paper": lambda x: 2.0}
        self.classical_rules = {"Paper": lambda x: 2.0, "Steady": lambda x: 1.5, "Spiky": lambda x: x}

    def validation_suite(self):
        return [Dataset("a", {}, [0.0, 0.1]), Dataset("b", {}, [3.0, 3.0])]

    def evaluate(self, priority, instance):
        self.calls.append(instance)
        return float(priority(instance))


def test_every_rule_is_evaluated_on_validation_and_the_lowest_mean_chosen_once_per_process():
    task = Stub("stub-choice")
    assert classical.validation_means(task) == {"Paper": 2.0, "Steady": 1.5, "Spiky": 1.525}
    assert classical.best_on_validation(task) == "Steady"
    calls = len(task.calls)
    assert calls == 3 * 4
    classical.best_on_validation(task)
    assert len(task.calls) == calls  # cached


def test_a_task_without_classical_rules_chooses_among_its_baselines():
    task = Stub("stub-baselines")
    del task.classical_rules
    assert classical.best_on_validation(task) == "Paper"
    assert np.isfinite(classical.validation_means(task)["Paper"])
