"""OBP: bit-exact with the host's evaluator, the SPEC's families, deterministic suites."""
from __future__ import annotations

import numpy as np
import pytest
from llm4ad.task.optimization.online_bin_packing.evaluation import OBPEvaluation
from llm4ad.task.optimization.online_bin_packing.generate_weibull_instances import generate_weibull_dataset

from tasks import get_task
from tasks.common.errors import HeuristicError
from tasks.common.families import FAMILIES
from tasks.obp.instances import family_instance
from tasks.obp import simulator
from tasks.obp.simulator import bins_used, lower_bound, pack, waste_ratio

TASK = get_task("obp")


def best_fit(item, bins):
    return -bins


def first_fit(item, bins):
    return np.zeros_like(bins)


def argsort_rank(item, bins):
    return -np.argsort(np.argsort(bins - item)).astype(float)


def percentile(item, bins):
    gap = bins - item
    return -np.abs(gap - np.percentile(gap, 25))


def length_aware(item, bins):
    # depends on how many bins are passed, and on their mean
    return -(bins - item) + (len(bins) % 7) * (bins > bins.mean())


def writes_in_place(item, bins):
    bins -= item
    bins[bins > 100] = 0
    return -bins.astype(float)


def opens_far_bins(item, bins):
    # prefers the *last* fitting bin: opens empty bins out of order (leaves the prefix path)
    return np.arange(len(bins), dtype=float) * (bins < 150) + (bins >= 150) * (len(bins) - 0.5)


def mixed(item, bins):
    # every third item goes to a far empty bin, the rest best fit
    if int(item) % 3 == 0:
        return (bins == bins.max()) * np.arange(len(bins), dtype=float)
    return -bins.astype(float)


HEURISTICS = [best_fit, first_fit, argsort_rank, percentile, length_aware, writes_in_place, opens_far_bins, mixed]


def host_bins(items, capacity, priority) -> int:
    host = OBPEvaluation.__new__(OBPEvaluation)
    bins = np.array([capacity for _ in range(len(items))])
    _, packed = host.online_binpack(items, bins, priority)
    return int((packed != capacity).sum())


COMPILED_LOOP = simulator._fastpack



@pytest.mark.parametrize("priority", HEURISTICS, ids=lambda h: h.__name__)
def test_bin_counts_equal_the_host(priority, compiled):
    instances = [TASK.nominal_instances()[0]["items"][:1500]]
    rng = np.random.default_rng(7)
    instances.append(family_instance("uniform", 800, 100, rng)["items"])
    instances.append(family_instance("exponential", 800, 300, rng)["items"])
    for items, capacity in zip(instances, (200, 100, 300)):
        ours = bins_used(pack(items, capacity, priority, compiled=compiled), capacity)
        assert ours == host_bins(items, capacity, priority)


def test_residuals_equal_the_host_bin_for_bin(compiled):
    items = TASK.nominal_instances()[1]["items"][:1000]
    for priority in (mixed, argsort_rank):
        host = OBPEvaluation.__new__(OBPEvaluation)
        _, packed = host.online_binpack(items, np.array([200] * len(items)), priority)
        np.testing.assert_array_equal(pack(items, 200, priority, compiled=compiled), packed)


def test_other_dtypes_take_the_python_loop_with_the_same_answers():
    items = TASK.nominal_instances()[2]["items"][:800]
    for priority in (best_fit, mixed):
        expected = host_bins(items, 200, priority)
        assert bins_used(pack(items.astype(np.int32), 200, priority), 200) == host_bins(
            items.astype(np.int32), 200, priority) == expected
        assert bins_used(pack(items, np.int32(200), priority), 200) == expected


def test_heuristic_sees_the_hosts_arrays(compiled):
    seen_host, seen_ours = [], []
    items = TASK.nominal_instances()[0]["items"][:200]

    def recorder(store):
        def priority(item, bins):
            store.append((type(item), bins.dtype, bins.copy()))
            return -bins
        return priority

    host_bins(items, 200, recorder(seen_host))
    pack(items, 200, recorder(seen_ours), compiled=compiled)
    assert len(seen_host) == len(seen_ours)
    for (ti, di, a), (to, do, b) in zip(seen_host, seen_ours):
        assert ti is to and di == do
        np.testing.assert_array_equal(a, b)


def test_nominal_set_is_the_hosts_weibull_set():
    state = np.random.get_state()
    try:
        host = generate_weibull_dataset(5, 5000, 200)
    finally:
        np.random.set_state(state)
    ours = TASK.nominal_instances()
    assert len(ours) == 5
    for inst, key in zip(ours, sorted(host)):
        np.testing.assert_array_equal(inst["items"], host[key]["items"])
        assert inst["capacity"] == 200 and inst["num_items"] == 5000


def test_host_evaluation_scores_minus_mean_waste():
    from llm4ad.base import SecureEvaluator
    instances = [dict(inst, items=inst["items"][:500], num_items=500) for inst in TASK.nominal_instances()[:2]]
    evaluation = TASK.evaluation(instances)
    code = "import numpy as np\n\ndef priority(item, bins):\n    return -bins\n"
    score = SecureEvaluator(evaluation, fork_proc=True).evaluate_program(code)
    expected = -np.mean([TASK.evaluate(best_fit, inst) for inst in instances])
    assert score == pytest.approx(expected, abs=1e-12)


def test_waste_ratio_definition():
    items = np.array([60, 60, 60, 60])  # L = ceil(240 / 100) = 3
    assert lower_bound(items, 100) == 3
    assert waste_ratio(4, items, 100) == pytest.approx(100 / 3)
    assert TASK.evaluate(best_fit, {"capacity": 100, "num_items": 4, "items": items}) == pytest.approx(100 / 3)


@pytest.mark.parametrize("bad, reason", [
    (lambda item, bins: 1 / 0, "ZeroDivisionError"),
    (lambda item, bins: np.full(len(bins), np.nan), "non-finite"),
    (lambda item, bins: np.full(len(bins), np.inf), "non-finite"),
    (lambda item, bins: np.zeros(len(bins) + 1), "shape"),
    (lambda item, bins: None, "shape"),
    (lambda item, bins: "abc", "shape"),
    (lambda item, bins: np.array(["a"] * len(bins)), "dtype"),
])
def test_failing_heuristics_get_a_reason(bad, reason, compiled):
    inst = {"capacity": 100, "num_items": 50, "items": np.arange(1, 51)}
    with pytest.raises(HeuristicError, match=reason):
        pack(inst["items"], 100, bad, compiled=compiled)
    with pytest.raises(HeuristicError, match=reason):
        TASK.evaluate(bad, inst)
    evaluation = TASK.evaluation([inst])
    assert evaluation.evaluate_program("", bad) is None
    assert reason in evaluation.last_error


def test_minus_inf_may_rule_out_bins():
    inst = {"capacity": 100, "num_items": 50, "items": np.arange(1, 51)}

    def masked(item, bins):
        scores = -bins.astype(float)
        scores[1:][bins[1:] == 100] = -np.inf  # of the empty bins, only the first may be opened
        return scores

    assert np.isfinite(TASK.evaluate(masked, inst))


def test_lists_are_accepted_like_the_host():
    inst = {"capacity": 100, "num_items": 60, "items": np.arange(1, 61)}
    as_list = lambda item, bins: list(-bins)
    assert TASK.evaluate(as_list, inst) == TASK.evaluate(best_fit, inst)


def test_suite_shape_and_determinism():
    a, b = TASK.test_suite(), TASK.test_suite()
    assert len(a) == 60 and sum(len(d.instances) for d in a) == 300
    assert {d.family for d in a} == set(FAMILIES)
    assert {(d.params["n"], d.params["C"]) for d in a} == {(n, c) for n in (1000, 5000, 10000) for c in (100, 200, 300, 400)}
    for da, db in zip(a, b):
        assert da.family == db.family and da.params == db.params
        for x, y in zip(da.instances, db.instances):
            np.testing.assert_array_equal(x["items"], y["items"])
            assert x["num_items"] == da.params["n"] == len(x["items"]) and x["capacity"] == da.params["C"]
            assert x["items"].min() >= 1 and x["items"].max() <= da.params["C"]
    first = a[0].instances
    assert not np.array_equal(first[0]["items"], first[1]["items"])


def test_baselines_are_priority_functions():
    inst = TASK.nominal_instances()[0]
    short = dict(inst, items=inst["items"][:1000], num_items=1000)
    bf = TASK.evaluate(TASK.baselines["BestFit"], short)
    ff = TASK.evaluate(TASK.baselines["FirstFit"], short)
    assert bf == TASK.evaluate(best_fit, short) and ff == TASK.evaluate(first_fit, short)
    assert 0 <= bf <= ff
