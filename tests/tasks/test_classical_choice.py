"""The best classical rule is chosen on the validation suite, by evaluating every rule there."""
import numpy as np
import pytest

from tasks.common import classical
from tasks.common.errors import UserError
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


class Failing(Stub):
    """A task whose own ``evaluate`` raises on the instance 3.0, or gives a string there."""

    def __init__(self, name, answer):
        super().__init__(name)
        self.answer = answer

    def evaluate(self, priority, instance):
        if instance == 3.0 and self.answer is None:
            raise RuntimeError("no metric here")
        return self.answer if instance == 3.0 else super().evaluate(priority, instance)


@pytest.mark.parametrize("answer, says", [
    (None, "task 'stub-raises': Failing.evaluate raised RuntimeError: no metric here (on an instance of dataset b)"),
    ("great", "task 'stub-str': Failing.evaluate gave str 'great' (on an instance of dataset b), not a number")])
def test_a_task_whose_evaluate_fails_while_rules_are_ranked_is_told_in_one_line(answer, says):
    """Each was a traceback in ``raise-ahd tasks`` (RuntimeError, or float('great'))."""
    task = Failing("stub-raises" if answer is None else "stub-str", answer)
    with pytest.raises(UserError) as caught:
        classical.best_on_validation(task)
    assert str(caught.value) == says
