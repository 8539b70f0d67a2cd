"""EoH-S: a diverse training set, complementary survival and parents, the best single heuristic."""
from __future__ import annotations

import numpy as np
import pytest

from raise_plugin.methods.eohs import EoHS, complementary_set, diverse_training_set
from tasks import get_task
from tasks.common.families import FAMILIES, VALIDATION_FAMILIES, sample_family
from tasks.common.suite import seed_for


def test_diverse_set_cycles_the_five_families_at_nominal_sizes_from_a_seed():
    task = get_task("ojsp")
    built = diverse_training_set(task)
    assert len(built) == 128
    assert all(i["num_jobs"] == 20 and i["num_machines"] == 10 for i in built)
    again = diverse_training_set(task, 10)
    assert all(np.array_equal(a["durations"], b["durations"]) for a, b in zip(built[:10], again))
    assert not np.array_equal(diverse_training_set(task, 1, seed=1)[0]["durations"], built[0]["durations"])
    ovrp = diverse_training_set(get_task("ovrp"), 5)
    assert [i["vehicles"] for i in ovrp] == [10] * 5 and len(FAMILIES) == 5
    obp = diverse_training_set(get_task("obp"), 2, num_items=300)
    assert [i["num_items"] for i in obp] == [300, 300]


def test_diverse_set_draws_only_validation_families_never_a_test_family():
    task = get_task("obp")
    built = diverse_training_set(task, 10, num_items=2000)
    for i, inst in enumerate(built):
        family = VALIDATION_FAMILIES[i % 5]
        expected = sample_family(family, 2000, 200, np.random.default_rng([0, i]))
        assert np.array_equal(inst["items"], expected)
        # and it is not what the test family at the same index would have drawn
        assert not np.array_equal(inst["items"], sample_family(FAMILIES[i % 5], 2000, 200,
                                                               np.random.default_rng([0, i])))
    assert not set(VALIDATION_FAMILIES) & set(FAMILIES)


def test_complementary_set_picks_the_best_mean_then_the_largest_improvement():
    a = np.array([1.0, 1.0, 1.0, 1.0])   # best mean
    b = np.array([3.0, 3.0, 0.2, 3.0])   # worse mean, but best on instance 3
    c = np.array([1.1, 1.1, 1.1, 1.1])   # close to a everywhere: adds nothing
    d = np.array([2.0, 0.9, 2.0, 2.0])   # small gain on instance 2
    rows = [c, b, a, d, None]
    means = [-float(r.mean()) if r is not None else -np.inf for r in rows]
    assert complementary_set(rows, means, 3) == [2, 1, 3]
    assert complementary_set(rows, means, 5)[:3] == [2, 1, 3] and complementary_set(rows, means, 5)[-1] == 4


def test_eohs_trains_on_the_diverse_set_and_reports_its_best_single(method_factory, evaluation_factory):
    ev = evaluation_factory("ovrp")
    method = method_factory("eohs", "ovrp", budget=24, pop_size=4, evaluation=ev, diverse_instances=8)
    assert len(ev.instances) == 8 and method.diverse_count == 8
    method.run()
    best = method.best_single()
    assert best.score == max(f.score for f in method._population.population)
    assert method.best_single_record["score"] == best.score
    assert method.best_single_record["training_instances"] == 8
    covered = method.set_metrics()
    assert covered.shape == (8,)
    assert np.all(covered <= method._metrics_of(best) + 1e-12)


def test_eohs_prompts_show_complementary_parents(method_factory):
    method = method_factory("eohs", "ojsp", budget=24, pop_size=4)
    method.run()
    calls = method._sampler._sampler.calls
    crossover = [p for op, p, _ in calls if op in ("e1", "e2")]
    mutation = [p for op, p, _ in calls if op in ("m1", "m2")]
    assert crossover and mutation
    for prompt in crossover:
        assert prompt.count("```python") == 2 and "No. 2 heuristic" in prompt
        assert "instances)" in prompt and "best of the set on" in prompt
    assert all(p.count("```python") == 1 for p in mutation)


def test_eohs_refuses_an_evaluation_without_metrics(recorder):
    class Plain:
        template_program = get_task("obp").template_program
        task_description = ""

    try:
        EoHS(llm=recorder(0), evaluation=Plain(), max_sample_nums=4, pop_size=2)
    except TypeError as exc:
        assert "metrics" in str(exc)
    else:
        raise AssertionError("EoHS accepted an evaluation without metrics")


@pytest.mark.parametrize("task_name, size_key", [("knapsack", "n"), ("cvrp", "n")])
def test_eohs_runs_on_the_host_adapter_tasks(method_factory, evaluation_factory, task_name, size_key):
    task = get_task(task_name)
    built = diverse_training_set(task, 5)
    assert len(built) == 5
    assert all(task.instance_length(i) == task.nominal_length for i in built)
    assert task.instance_length(diverse_training_set(task, 1, **{size_key: 20})[0]) == 20
    ev = evaluation_factory(task_name)
    method = method_factory("eohs", task_name, budget=12, pop_size=4, evaluation=ev, diverse_instances=5)
    method.run()
    assert method.best_single_record["training_instances"] == 5
    assert method.set_metrics().shape == (5,)


def test_adapter_family_instances_follow_the_task_signature_and_keep_the_suites():
    task = get_task("knapsack")
    first = task.test_suite()[0]
    again = task.family_instance(first.family, seed_for(task.name, first.family, *first.params.values(), 0),
                                 **first.params)
    assert np.array_equal(again["weights"], first.instances[0]["weights"])
