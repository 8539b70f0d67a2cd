"""search(objective="regret"): fitness = metric minus the best reference on the same instance; provenance and errors."""
from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from raise_plugin.adversary import AdversaryReferenceError, SearchConfig, search
from tasks.obp.baselines import best_fit

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "heuristics"

EPS = 0.02


def mean_value(values):
    return float(np.mean(values))


def spread(values):
    """Hurt by a wide spread of values, not by large ones."""
    return float(np.mean(values) + 3 * np.std(values))


def fails_on_large(values):
    if np.max(values) >= 12:
        raise ValueError("value too large")
    return float(np.mean(values))


def always_fails(values):
    raise ValueError("no")


def _example(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.priority


small_items_worst_fit = _example("obp_small_items_worst_fit")


def test_a_reference_identical_to_the_heuristic_has_zero_regret_everywhere(toy):
    r = search(toy, spread, EPS, seed=0, objective="regret", references=[spread], inner_draws=2)
    assert all(f == 0.0 for c in r.candidates for f in c.fitnesses)
    assert r.fitness == 0.0 and r.regret == 0.0 and r.reference_metric == r.metric
    assert r.reference_name == "spread" and r.references == ("spread",)


def test_the_regret_objective_finds_where_a_specialist_loses_to_bestfit(short_obp_1000):
    task, nominal = short_obp_1000
    found = {}
    for objective in ("metric", "regret"):
        found[objective] = [search(task, small_items_worst_fit, 0.005, nominal=nominal, seed=seed, inner_population=6,
                                   inner_generations=3, objective=objective, references=[("BestFit", best_fit)]).regret
                            for seed in range(4)]
    # the metric objective drives the sizes where every packer wastes space; regret finds the specialist's weakness
    assert np.mean(found["regret"]) > np.mean(found["metric"]) + 0.5
    assert min(found["regret"]) > 0.5


def test_provenance_is_consistent(toy):
    refs = [("mean", mean_value), ("shifted", lambda v: float(np.mean(v)) + 0.5)]
    r = search(toy, spread, EPS, seed=2, objective="regret", references=refs, inner_draws=3)
    assert r.objective == "regret" and r.draws == 3 and r.references == ("mean", "shifted")
    assert r.regret == r.metric - r.reference_metric
    assert r.reference_name == "mean"  # the smaller metric wins
    assert r.evaluations == 3 * len(r.candidates)
    assert r.reference_evaluations == 2 * r.evaluations
    # the instance is draw r.draw of the winning candidate, and it scores what is reported
    winner = max(r.candidates, key=lambda c: c.fitness)
    assert r.fitness == winner.fitness == max(c.fitness for c in r.candidates)
    assert r.fitness == pytest.approx(np.mean(winner.fitnesses))
    assert r.seed == winner.seeds[r.draw] and r.metric == winner.metrics[r.draw]
    rebuilt = toy.sample_instance(r.distribution, np.random.default_rng(r.seed), length=r.length)
    np.testing.assert_array_equal(rebuilt["values"], r.instance["values"])
    assert toy.evaluate(spread, r.instance) == r.metric
    assert toy.evaluate(mean_value, r.instance) == r.reference_metric
    for c in r.candidates:
        assert c.fitnesses == tuple(m - ref for m, ref in zip(c.metrics, c.reference_metrics))
    assert r.history[-1].worst_so_far == r.fitness


def test_the_metric_objective_reports_the_regret_of_its_find(toy):
    plain = search(toy, spread, EPS, seed=5)
    r = search(toy, spread, EPS, seed=5, references=[mean_value])
    assert r.objective == "metric" and r.metric == plain.metric and r.fitness == plain.metric
    assert [c.metric for c in r.candidates] == [c.metric for c in plain.candidates]
    assert r.reference_evaluations == 1 and r.reference_metric == toy.evaluate(mean_value, r.instance)
    assert r.regret == r.metric - r.reference_metric and r.reference_name == "mean_value"
    assert plain.regret is None and plain.reference_metric is None and plain.reference_evaluations == 0


def test_same_seed_same_result_with_draws_and_references(toy):
    kwargs = dict(seed=9, objective="regret", references=[mean_value, ("half", lambda v: 0.5 * np.mean(v))],
                  inner_draws=3)
    a, b = search(toy, spread, EPS, **kwargs), search(toy, spread, EPS, **kwargs)
    assert (a.fitness, a.metric, a.regret, a.seed, a.draw) == (b.fitness, b.metric, b.regret, b.seed, b.draw)
    assert [c.fitnesses for c in a.candidates] == [c.fitnesses for c in b.candidates]
    c = search(toy, spread, EPS, **{**kwargs, "seed": 10})
    assert [x.fitnesses for x in a.candidates] != [x.fitnesses for x in c.candidates]


def test_a_thread_pool_gives_the_same_result_with_draws_and_references(toy):
    kwargs = dict(seed=4, objective="regret", references=[mean_value, fails_on_large], inner_draws=2)
    a = search(toy, spread, EPS, **kwargs)
    with ThreadPoolExecutor(max_workers=3) as pool:
        b = search(toy, spread, EPS, executor=pool, **kwargs)
    assert (a.fitness, a.metric, a.regret, a.reference_name, a.seed) == (b.fitness, b.metric, b.regret,
                                                                         b.reference_name, b.seed)
    assert [c.fitnesses for c in a.candidates] == [c.fitnesses for c in b.candidates]
    assert a.reference_evaluations == b.reference_evaluations == 2 * a.evaluations
    np.testing.assert_array_equal(a.instance["values"], b.instance["values"])


def test_a_failing_reference_is_left_out_on_that_instance(toy):
    r = search(toy, spread, 0.1, seed=0, objective="regret", references=[fails_on_large, mean_value],
               projection="sphere")
    assert r.reference_failures == 0
    assert all(c.fitness == pytest.approx(c.metric - float(np.mean(toy.sample_instance(
        c.distribution, np.random.default_rng(c.seed), length=c.length)["values"]))) for c in r.candidates)


def test_a_candidate_without_a_usable_reference_cannot_win(toy):
    r = search(toy, spread, 0.1, seed=0, objective="regret", references=[fails_on_large], projection="sphere",
               inner_draws=2)
    left_out = [c for c in r.candidates if c.reference_failure]
    assert left_out and r.reference_failures == len(left_out)
    assert all(c.fitness == -np.inf for c in left_out)
    assert np.isfinite(r.fitness) and r.reference_metric is not None


def test_every_reference_failing_everywhere_is_an_error(toy):
    with pytest.raises(AdversaryReferenceError, match="every reference failed"):
        search(toy, spread, EPS, seed=0, objective="regret", references=[always_fails])
    assert issubclass(AdversaryReferenceError, RuntimeError)


def test_a_failing_heuristic_is_still_the_worst_case_under_regret(toy):
    r = search(toy, fails_on_large, 0.1, seed=0, objective="regret", references=[mean_value], projection="sphere")
    assert r.metric == np.inf and r.fitness == np.inf and r.regret == np.inf and "too large" in r.failure


@pytest.mark.parametrize("kwargs, match", [(dict(objective="regret"), "references"),
                                           (dict(objective="worst"), "objective"),
                                           (dict(inner_draws=0), "inner_draws"),
                                           (dict(inner_draws=1.5), "inner_draws")])
def test_bad_arguments_are_one_line_value_errors(toy, kwargs, match):
    with pytest.raises(ValueError, match=match) as info:
        search(toy, spread, EPS, **kwargs)
    assert "\n" not in str(info.value)


def test_config_checks_inner_draws_and_objective():
    assert SearchConfig(0.01, inner_draws=4, objective="regret").inner_draws == 4
    with pytest.raises(ValueError, match="inner_draws"):
        SearchConfig(0.01, inner_draws=0)
    with pytest.raises(ValueError, match="objective"):
        SearchConfig(0.01, objective="max")
