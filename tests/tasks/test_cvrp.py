"""cvrp: the host's instances and answers, guarded choices, the suites, the adversary."""
from __future__ import annotations

import numpy as np
import pytest
from llm4ad.task.optimization.cvrp_construct import CVRPEvaluation

from raise_plugin.adversary import search
from raise_plugin.programs import compile_priority
from tasks import get_task
from tasks.common.errors import HeuristicError
from tasks.cvrp import make_instance, route, route_length

TASK = get_task("cvrp")
HEURISTICS = {**TASK.baselines, "host template": compile_priority(TASK.template_program, None)}


def host_format(instance):
    return instance["coords"], instance["distances"], instance["demands"], instance["capacity"]


def test_the_nominal_set_is_the_hosts_own_first_instances():
    host = CVRPEvaluation(n_instance=5, problem_size=50, capacity=40)
    for ours, theirs in zip(TASK.nominal_instances(), host._datasets):
        for a, b in zip(host_format(ours), theirs):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", HEURISTICS)
def test_our_route_lengths_are_the_hosts_on_its_instances_and_on_shifted_ones(name):
    heuristic = HEURISTICS[name]
    host = CVRPEvaluation(n_instance=5, problem_size=50, capacity=40)
    ours = [TASK.evaluate(heuristic, s) for s in TASK.nominal_instances()]
    assert host.evaluate_program("", heuristic) == -np.average(ours)  # the host's score is minus the mean length
    shifted = [d.instances[0] for d in TASK.test_suite() if d.params["n"] == 50]
    host._datasets, host.n_instance = [host_format(s) for s in shifted], len(shifted)
    assert host.evaluate(heuristic) == -np.average([TASK.evaluate(heuristic, s) for s in shifted])


def test_routes_visit_every_customer_once_within_capacity():
    inst = TASK.test_suite()[-1].instances[0]
    for heuristic in HEURISTICS.values():
        tour = route(heuristic, inst)
        customers = [v for v in tour if v != 0]
        assert sorted(customers) == list(range(1, len(inst["demands"])))
        load = 0
        for v in tour[1:]:
            load = 0 if v == 0 else load + inst["demands"][v]
            assert load <= inst["capacity"]


@pytest.mark.parametrize("heuristic, says", [
    (lambda here, depot, nodes, room, demands, dist: 0, "the vehicle is at the depot"),
    (lambda here, depot, nodes, room, demands, dist: 10**6, "not a feasible unvisited node"),
    (lambda here, depot, nodes, room, demands, dist: int(np.argmax(demands)) if here else nodes[0],
     "not a feasible unvisited node"),
    (lambda here, depot, nodes, room, demands, dist: nodes, "raised ValueError"),
    (lambda here, depot, nodes, room, demands, dist: 1 / 0, "raised ZeroDivisionError"),
])
def test_a_choice_that_is_not_a_feasible_node_is_an_error(heuristic, says):
    with pytest.raises(HeuristicError, match=says):
        TASK.evaluate(heuristic, TASK.nominal_instances()[0])


def test_returning_to_the_depot_ends_a_route():
    inst = make_instance([[0, 0], [3, 4], [6, 8]], [0, 1, 1], 10)
    back_each_time = lambda here, depot, nodes, room, demands, dist: depot if here else nodes[0]  # noqa: E731
    assert route(back_each_time, inst) == [0, 1, 0, 2]
    assert route_length(back_each_time, inst) == pytest.approx(5 + 5 + 10 + 10)


def test_the_shift_dimension_is_the_demand_and_the_customer_count_stays():
    assert TASK.shift.cells == 9 and TASK.nominal_high == 9 and not TASK.length_can_change
    p = np.zeros(9)
    p[-1] = 1.0
    inst = TASK.sample_instance(p, np.random.default_rng(0), C=50)
    assert len(inst["demands"]) == 51 and set(inst["demands"][1:]) == {9} and inst["capacity"] == 50
    np.testing.assert_allclose(TASK.histogram(inst), p)


def test_the_suites_sizes_and_counts():
    suite, validation = TASK.test_suite(), TASK.validation_suite()
    assert len(suite) == 15 and sum(len(d.instances) for d in suite) == 75
    assert len(validation) == 10 and sum(len(d.instances) for d in validation) == 20
    for d in suite + validation:
        assert all(len(s["demands"]) == d.params["n"] + 1 and s["capacity"] == d.params["C"] for s in d.instances)


def test_the_adversary_attacks_a_baseline_within_the_ball():
    result = search(TASK, TASK.baselines["NearestNeighbour"], 0.002, seed=0, inner_population=4, inner_generations=2)
    assert result.distance <= 0.002 + 1e-12 and result.length == 50
    assert result.metric == TASK.evaluate(TASK.baselines["NearestNeighbour"], result.instance)
    assert result.metric == max(c.metric for c in result.candidates)
