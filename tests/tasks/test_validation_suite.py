"""The validation suites: families, sizes and seeds disjoint from the test suites, deterministic."""
from __future__ import annotations

import numpy as np
import pytest

from tasks import get_task
from tasks.common.families import FAMILIES, VALIDATION_FAMILIES, sample_family


@pytest.mark.parametrize("name", ["obp", "ojsp", "ovrp"])
def test_validation_suite_is_disjoint_from_the_test_suite_in_families_and_sizes(name):
    task = get_task(name)
    validation, test = task.validation_suite(), task.test_suite()
    assert {d.family for d in validation} == set(VALIDATION_FAMILIES)
    assert not {d.family for d in validation} & {d.family for d in test}
    test_sizes = {tuple(sorted(d.params.items())) for d in test}
    for d in validation:
        assert tuple(sorted(d.params.items())) not in test_sizes
        assert len(d.instances) == 2
    assert len(validation) == 10


@pytest.mark.parametrize("name", ["obp", "ojsp", "ovrp"])
def test_validation_suite_is_deterministic_and_named_by_suite(name):
    task = get_task(name)
    a, b = task.validation_suite(), task.suite("validation")
    for da, db in zip(a, b):
        assert da.name == db.name
        for ia, ib in zip(da.instances, db.instances):
            va, vb = task.shift_values(ia)[0], task.shift_values(ib)[0]
            assert np.array_equal(va, vb)
    assert len(task.suite("nominal")[0].instances) == 5
    with pytest.raises(ValueError, match="unknown suite"):
        task.suite("training")


@pytest.mark.parametrize("family", VALIDATION_FAMILIES)
def test_validation_families_have_their_documented_means(family):
    high = 1000
    x = sample_family(family, 200_000, high, np.random.default_rng(0)).astype(float)
    expected = {"beta": 1 + (high - 1) * 2 / 7, "gamma": 2 * 0.12 * high + 1,
                "weibull": 0.35 * high * 0.9027, "bimodal": 0.5 * (0.2 + 0.65) * high,
                "poisson": 1 + (0.6 * 0.15 + 0.4 * 0.45) * high}[family]
    assert x.min() >= 1 and x.max() <= high
    assert abs(x.mean() - expected) / expected < 0.02


def test_validation_families_differ_from_every_test_family_in_distribution():
    high = 200
    cells = lambda f: np.bincount(sample_family(f, 50_000, high, np.random.default_rng(2)) * 20 // (high + 1),
                                  minlength=20) / 50_000
    for v in VALIDATION_FAMILIES:
        for t in FAMILIES:
            assert np.abs(cells(v) - cells(t)).sum() > 0.15, (v, t)


@pytest.mark.parametrize("name, spread", [("obp", 0.00084), ("ojsp", 0.0076), ("ovrp", 0.0448)])
def test_nominal_spread_is_the_mean_distance_between_two_nominal_histograms(name, spread):
    task = get_task(name)
    h = [task.histogram(s) for s in task.nominal_instances()]
    pairs = [np.abs(h[i] - h[j]).mean() for i in range(5) for j in range(i + 1, 5)]
    assert task.nominal_spread == pytest.approx(np.mean(pairs))
    assert task.nominal_spread == pytest.approx(spread, rel=0.01)
