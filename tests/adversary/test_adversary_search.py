"""search(): the worst evaluated instance with its provenance, feasible, deterministic, switchable."""
from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from raise_plugin.adversary import (GENES, AdversarialResult, InnerGA, SearchConfig, distance, flat_mixture,
                                    mixture, sample_and_evaluate, search)
from tasks import get_task
from tasks.common.shift import is_distribution
from tasks.obp.baselines import best_fit

EPS = 0.02  # the toy task has K = 10 cells, so d can reach 0.2


def mean_value(values):
    """The toy task's heuristic: larger values are worse, so the adversary should move mass up."""
    return float(np.mean(values))


def fails_on_large(values):
    if np.max(values) >= 16:
        raise ValueError("value too large")
    return float(np.mean(values))


def same_result(a: AdversarialResult, b: AdversarialResult) -> bool:
    return (a.metric == b.metric and a.seed == b.seed and a.nearest == b.nearest
            and np.array_equal(a.genes, b.genes) and np.array_equal(a.distribution, b.distribution)
            and np.array_equal(a.instance["values"], b.instance["values"])
            and [c.metric for c in a.candidates] == [c.metric for c in b.candidates])


def test_result_is_the_worst_instance_it_evaluated_with_its_provenance(toy):
    r = search(toy, mean_value, EPS, seed=3)
    metrics = [c.metric for c in r.candidates]
    assert r.evaluations == len(r.candidates) == 8 + 3 * 4
    assert r.metric == max(metrics)
    worst = r.candidates[int(np.argmax(metrics))]
    assert r.seed == worst.seed and r.nearest == worst.nearest and r.distance == worst.distance
    np.testing.assert_array_equal(r.genes, worst.genes)
    # the instance is the one its provenance rebuilds, and it scores the reported metric
    rebuilt = toy.sample_instance(r.distribution, np.random.default_rng(r.seed), length=r.length)
    np.testing.assert_array_equal(rebuilt["values"], r.instance["values"])
    assert toy.evaluate(mean_value, r.instance) == r.metric
    assert [h.generation for h in r.history] == [0, 1, 2, 3]
    assert r.history[-1].worst_so_far == r.metric


@pytest.mark.parametrize("projection", ["paper", "sphere"])
def test_every_candidate_is_a_distribution_within_eps_of_its_nearest_nominal(toy, projection):
    r = search(toy, mean_value, EPS, seed=1, projection=projection)
    histograms = np.stack([toy.histogram(s) for s in toy.nominal_instances()])
    for c in r.candidates:
        assert is_distribution(c.distribution)
        assert c.distance == pytest.approx(distance(c.distribution, histograms[c.nearest]), abs=1e-12)
        assert c.distance <= EPS + 1e-12
        if projection == "sphere" or c.raw_distance > EPS:
            assert c.distance == pytest.approx(EPS, rel=1e-9)
        assert 0.9 * 60 - 0.5 <= c.length <= 1.1 * 60 + 0.5


def test_the_search_beats_the_nominal_set(toy):
    r = search(toy, mean_value, EPS, seed=0, measure_nominal=True)
    assert r.nominal_metric == pytest.approx(np.mean([mean_value(s["values"]) for s in toy.nominal_instances()]))
    assert r.degradation > 0


def test_same_seed_same_result_with_or_without_a_thread_pool(toy):
    a = search(toy, mean_value, EPS, seed=11)
    b = search(toy, mean_value, EPS, seed=11)
    with ThreadPoolExecutor(max_workers=3) as pool:
        c = search(toy, mean_value, EPS, seed=11, executor=pool)
    assert same_result(a, b) and same_result(a, c)
    d = search(toy, mean_value, EPS, seed=12)
    assert not np.array_equal(a.candidates[0].genes, d.candidates[0].genes)


def test_a_process_pool_gives_the_same_result_on_obp(short_obp):
    task, nominal = short_obp
    kwargs = dict(nominal=nominal, seed=2, inner_population=4, inner_generations=2)
    a = search(task, best_fit, 0.005, **kwargs)
    with ProcessPoolExecutor(max_workers=2) as pool:
        b = search(task, best_fit, 0.005, executor=pool, **kwargs)
    assert a.metric == b.metric and np.array_equal(a.instance["items"], b.instance["items"])


def test_obp_instances_stay_feasible_and_within_the_length_band(short_obp):
    task, nominal = short_obp
    r = search(task, best_fit, 0.002, nominal=nominal, seed=0, inner_population=4, inner_generations=2,
               projection="sphere", measure_nominal=True)
    assert r.evaluations == 4 + 2
    assert r.distance == pytest.approx(0.002, rel=1e-9)
    assert 270 <= r.instance["num_items"] <= 330 and r.instance["capacity"] == 200
    assert r.metric == task.evaluate(best_fit, r.instance) and r.nominal_metric is not None


def test_common_noise_shares_one_sampling_seed_and_independent_noise_does_not(toy):
    common = search(toy, mean_value, EPS, seed=4)
    independent = search(toy, mean_value, EPS, seed=4, noise="independent")
    assert len({c.seed for c in common.candidates}) == 1
    assert len({c.seed for c in independent.candidates}) == independent.evaluations


def test_a_heuristic_failure_is_the_worst_case_and_ends_the_search(toy):
    r = search(toy, fails_on_large, 0.1, seed=0, projection="sphere")
    assert r.metric == np.inf and "value too large" in r.failure
    assert np.max(r.instance["values"]) >= 16
    failed = [c for c in r.candidates if c.failure is not None]
    assert failed and r.seed == failed[0].seed and np.array_equal(r.genes, failed[0].genes)
    # the search stops after the generation of the first failure
    assert r.history[-1].failures > 0 and all(h.failures == 0 for h in r.history[:-1])
    assert len(r.history) < 4
    r_all = search(toy, fails_on_large, 0.1, seed=0, projection="sphere", stop_on_failure=False)
    assert len(r_all.history) == 4 and r_all.metric == np.inf


@pytest.mark.parametrize("switches", [dict(enabled=False), dict(inner_generations=0)])
def test_inner_search_off_returns_none(toy, switches):
    assert search(toy, mean_value, EPS, **switches) is None


def test_ablation_switches_change_what_they_claim_and_nothing_else(toy):
    histograms = np.stack([toy.histogram(s) for s in toy.nominal_instances()])
    p_bar = histograms.mean(axis=0)
    base = search(toy, mean_value, EPS, seed=6, inner_generations=1)
    runs = {name: search(toy, mean_value, EPS, seed=6, inner_generations=1, **sw) for name, sw in {
        "sphere": dict(projection="sphere"), "no_projection": dict(projection="none"),
        "unconstrained": dict(constraint="none"), "flat": dict(encoding="flat")}.items()}

    # the same genes, lengths and sampling seeds; only the mapping to a distribution moves
    for name in ("sphere", "no_projection", "unconstrained"):
        for c0, c1 in zip(base.candidates, runs[name].candidates, strict=True):
            np.testing.assert_array_equal(c0.genes, c1.genes)
            assert (c0.length, c0.seed) == (c1.length, c1.seed)
            if name != "unconstrained":  # same mixture, same nearest nominal
                assert (c0.raw_distance, c0.nearest) == (c1.raw_distance, c1.nearest)
    for c0, c1 in zip(base.candidates, runs["sphere"].candidates):
        if c0.raw_distance >= EPS:
            np.testing.assert_allclose(c0.distribution, c1.distribution)
        else:
            assert c1.distance == pytest.approx(EPS) and c0.distance < EPS
    for c in runs["no_projection"].candidates:
        np.testing.assert_array_equal(c.distribution, mixture(c.genes, p_bar, 10))
        assert c.distance == c.raw_distance
    assert max(c.distance for c in runs["no_projection"].candidates) > EPS
    for c in runs["unconstrained"].candidates:
        np.testing.assert_array_equal(c.distribution, mixture(c.genes, None, 10))
    flat = runs["flat"]
    assert all(c.genes.size == 10 + 1 for c in flat.candidates) and base.genes.size == GENES
    for c in flat.candidates:
        p_adv = flat_mixture(c.genes, p_bar, 10)
        assert distance(p_adv, histograms[c.nearest]) == pytest.approx(c.raw_distance)
        assert c.distance <= EPS + 1e-12


def test_an_ask_tell_optimiser_can_replace_the_ga(toy):
    class RandomSearch:
        def __init__(self, dimension, rng, population):
            self.dimension, self.rng, self.population = dimension, rng, population
            self.asked = 0

        def ask(self):
            return self.rng.random((self.population, self.dimension))

        def tell(self, genes, scores):
            self.asked += 1

    r = search(toy, mean_value, EPS, seed=0, optimizer=RandomSearch)
    assert r.evaluations == 32 and r.metric == max(c.metric for c in r.candidates)
    assert not isinstance(r, InnerGA)


def test_the_length_gene_is_ignored_when_the_task_fixes_the_length(toy_fixed_length):
    r = search(toy_fixed_length, mean_value, EPS, seed=0)
    assert {c.length for c in r.candidates} == {60}


def test_a_nominal_length_switch_fixes_the_length_and_changes_nothing_else(toy):
    genes = search(toy, mean_value, EPS, seed=0)
    fixed = search(toy, mean_value, EPS, seed=0, length="nominal")
    assert len({c.length for c in genes.candidates}) > 1  # the length gene does vary it
    assert {c.length for c in fixed.candidates} == {toy.nominal_length}
    # the first generation's distributions are the genes' own: only the instance length differs
    for a, b in zip(genes.candidates[:8], fixed.candidates[:8]):
        np.testing.assert_array_equal(a.distribution, b.distribution)


@pytest.mark.parametrize("field, value", [("epsilon", 0.0), ("inner_population", 1), ("inner_generations", -1),
                                          ("encoding", "grid"), ("projection", "ortho"),
                                          ("constraint", "box"), ("noise", "fresh"), ("length", "long")])
def test_config_names_the_wrong_field(field, value):
    kwargs = {"epsilon": 0.01, field: value}
    with pytest.raises(ValueError, match=field):
        SearchConfig(**kwargs)


@pytest.mark.parametrize("old, new", [("population", "inner_population"), ("generations", "inner_generations"),
                                      ("draws", "inner_draws")])
def test_a_keyword_of_before_the_settings_names_is_told_its_new_name(toy, old, new):
    told = f"^search\\(\\) got the keyword '{old}': it is now '{new}', the setting's name$"
    with pytest.raises(TypeError, match=told):
        search(toy, best_fit, 0.01, **{old: 2})


@pytest.mark.parametrize("given", ["nan", "inf"])
def test_a_task_metric_that_is_not_finite_is_a_failure_the_task_is_named_for(tmp_path, fresh_registry, given):
    # a task's rule searched in this process took the task's NaN as its fitness (every comparison false) and
    # its inf as the rule failing ("the heuristic fails there"), where a program's was told as the task's
    example = (Path(__file__).resolve().parents[2] / "examples" / "load_balance.py").read_text()
    marker = '        jobs, loads = instance["jobs"], np.zeros(instance["machines"])\n'
    assert marker in example
    (tmp_path / "odd.py").write_text(example.replace(
        marker, marker + f'        if jobs.max() > 80:\n            return float("{given}")\n'))
    task = get_task(f"{tmp_path / 'odd.py'}:LoadBalance")
    rule = task.baselines["LeastLoaded"]
    p = np.zeros(task.shift.cells)
    p[-1] = 1.0  # every job of size 96 to 100
    _, metric, failure = sample_and_evaluate(task, rule, p, None, 0)
    assert metric == np.inf and failure == f"the task returned a non-finite metric ({given})"
    result = search(task, rule, 0.09, inner_population=4, inner_generations=2, projection="sphere")
    assert result.metric == np.inf and result.failure == f"the task returned a non-finite metric ({given})"


def test_no_mass_goes_to_cells_that_hold_no_value_so_the_distance_is_that_of_what_is_drawn(tmp_path, fresh_registry):
    # K = 20 cells over the 10 sizes 1..10: every other cell holds none. The search put half its shift there,
    # which sampling drops: it reported distance 0.01 of instances drawn at 0.0046, and its reach, 2 / K,
    # counted the empty cells
    from raise_plugin.adversary.projection import reachable_epsilon

    example = (Path(__file__).resolve().parents[2] / "examples" / "load_balance.py").read_text()
    sparse = example.replace("MAX_SIZE = 100", "MAX_SIZE = 10").replace("rng.integers(20, 61, size=200)",
                                                                         "rng.integers(1, 11, size=200)")
    (tmp_path / "sparse.py").write_text(sparse)
    task = get_task(f"{tmp_path / 'sparse.py'}:LoadBalance")
    held = task.shift.occupied(10)
    assert held.sum() == 10 and not held[1::2].any()
    histograms = np.stack([task.histogram(s) for s in task.nominal_instances()])
    assert reachable_epsilon(task) == pytest.approx(float(np.min(2 * (1 - histograms[:, held].min(axis=1)) / 20)))
    for projection in ("paper", "sphere"):
        result = search(task, task.baselines["LeastLoaded"], 0.01, inner_population=8, inner_generations=3,
                        projection=projection)
        assert not result.distribution[~held].any()
        values, probs = task.shift.value_probabilities(result.distribution, 10)
        drawn = np.bincount(task.shift.cell_of(values, 10), weights=probs, minlength=20)
        assert distance(drawn, histograms[result.nearest]) == pytest.approx(result.distance, abs=1e-12)
