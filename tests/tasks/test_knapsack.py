"""knapsack: the host's instances and answers, the optimality gap, guarded choices, the suites, the adversary."""
from __future__ import annotations

import itertools
from typing import List, Tuple  # noqa: F401  (the host's template program annotates with them)

import numpy as np
import pytest
from llm4ad.task.optimization.knapsack_construct import KnapsackEvaluation

from raise_plugin.adversary import search
from raise_plugin.programs import compile_priority
from tasks import get_task
from tasks.common.errors import HeuristicError
from tasks.knapsack import make_instance, optimum, packed_value

TASK = get_task("knapsack")
HOST_TEMPLATE = compile_priority(TASK.template_program, None)
HEURISTICS = {**TASK.baselines, "host template": HOST_TEMPLATE}


def host_format(instance):
    return instance["weights"].tolist(), instance["values"].tolist(), instance["capacity"]


def test_the_nominal_set_is_the_hosts_own_first_instances():
    host = KnapsackEvaluation(n_instance=5, n_items=50, knapsack_capacity=100)
    assert [host_format(s) for s in TASK.nominal_instances()] == host._datasets[:5]


@pytest.mark.parametrize("name", HEURISTICS)
def test_our_values_are_the_hosts_on_its_instances_and_on_shifted_ones(name):
    heuristic = HEURISTICS[name]
    host = KnapsackEvaluation(n_instance=5, n_items=50, knapsack_capacity=100)
    ours = [packed_value(heuristic, s) for s in TASK.nominal_instances()]
    assert host.evaluate_program("", heuristic) == -sum(ours) / 5  # the host's score is minus the mean value
    shifted = [d.instances[0] for d in TASK.test_suite()[::5]]
    host._datasets, host.n_instance = [host_format(s) for s in shifted], len(shifted)
    assert host.evaluate(heuristic) == -sum(packed_value(heuristic, s) for s in shifted) / len(shifted)


def test_the_metric_is_the_gap_to_the_exact_optimum_in_percent():
    rng = np.random.default_rng(0)
    for _ in range(20):
        w, v = rng.integers(1, 30, 9), rng.integers(1, 50, 9)
        brute = max(sum(v[list(c)]) for k in range(10) for c in itertools.combinations(range(9), k)
                    if sum(w[list(c)]) <= 40)
        assert optimum(w, v, 40) == brute
    for s in TASK.nominal_instances():
        gap = TASK.evaluate(TASK.baselines["GreedyRatio"], s)
        assert gap == pytest.approx(100 * (s["optimum"] - packed_value(TASK.baselines["GreedyRatio"], s))
                                    / s["optimum"])
        assert 0 <= gap < 100


def fabricates(remaining_capacity, remaining_items):
    remaining_items.append((0, 10**6, 99))
    return remaining_items[-1]


@pytest.mark.parametrize("heuristic, says", [
    (lambda cap, items: (1, 1, 1000), "not a remaining item"),
    (fabricates, "not a remaining item"),
    (lambda cap, items: np.array(items[0]), "not a remaining item"),
    (lambda cap, items: 1 / 0, "raised ZeroDivisionError"),
])
def test_a_choice_that_is_not_a_remaining_item_is_an_error(heuristic, says):
    with pytest.raises(HeuristicError, match=says):
        TASK.evaluate(heuristic, TASK.nominal_instances()[0])


def test_none_stops_and_an_item_that_does_not_fit_is_skipped():
    inst = make_instance([30, 10, 5], [1, 10, 100], 20)
    assert packed_value(lambda cap, items: None, inst) == 0
    assert packed_value(lambda cap, items: items[0], inst) == 110  # 30 is skipped, then 10 and 5 fit
    assert inst["optimum"] == 110 and TASK.evaluate(lambda cap, items: items[0], inst) == 0.0


def test_the_shift_dimension_is_the_item_weight_and_instances_rebuild_from_it():
    nominal = TASK.nominal_instances()
    assert TASK.shift.cells == 50 and TASK.nominal_high == 59 and TASK.length_can_change
    p = np.mean([TASK.histogram(s) for s in nominal], axis=0)
    assert p[: (50 * 9) // 59].sum() == 0  # the host draws no weight below 10
    inst = TASK.sample_instance(p, np.random.default_rng(1), length=55, C=200)
    # q = weight / high: at C = 200 the same distribution scales to the larger weights (high 109)
    assert inst["weights"].size == 55 and inst["capacity"] == 200 and 17 <= inst["weights"].min() <= inst["weights"].max() <= 109
    assert 1 <= inst["values"].min() and inst["values"].max() <= 100


def test_the_suites_sizes_and_counts():
    suite, validation = TASK.test_suite(), TASK.validation_suite()
    assert len(suite) == 30 and sum(len(d.instances) for d in suite) == 150
    assert len(validation) == 10 and sum(len(d.instances) for d in validation) == 20
    for d in suite:
        assert all(s["weights"].size == d.params["n"] and s["capacity"] == d.params["C"] for s in d.instances)


def test_the_adversary_attacks_a_baseline_within_the_ball():
    result = search(TASK, TASK.baselines["GreedyRatio"], 0.002, seed=0, inner_population=4, inner_generations=2)
    assert result.distance <= 0.002 + 1e-12 and result.evaluations == len(result.candidates) == 4 + 2
    assert result.metric == TASK.evaluate(TASK.baselines["GreedyRatio"], result.instance)
    assert result.metric == max(c.metric for c in result.candidates)
