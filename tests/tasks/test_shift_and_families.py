"""The shift-dimension protocol and the five test families."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tasks import get_task, list_tasks
from tasks.common.aggregation import Aggregation
from tasks.common.errors import UserError
from tasks.common.families import sample_family
from tasks.common.shift import ShiftDimension, is_distribution

C = 20000  # large, so rounding and clipping barely move the moments


@pytest.mark.parametrize("family, statistic, expected", [
    ("uniform", np.mean, (1 + C) / 2),
    ("normal", np.mean, 0.5 * C),
    ("lognormal", np.median, 0.25 * C),
    ("exponential", np.median, 0.3 * C * np.log(2) + 1),
    ("triangular", np.mean, (1 + 0.35 * C + C) / 3),
])
def test_family_parameters(family, statistic, expected):
    x = sample_family(family, 200_000, C, np.random.default_rng(1))
    assert x.dtype == np.int64 and x.min() >= 1 and x.max() <= C
    assert statistic(x) == pytest.approx(expected, rel=0.01)


def test_normal_spread_is_that_of_the_clipped_normal():
    from scipy import stats
    x = sample_family("normal", 200_000, C, np.random.default_rng(3))
    # clip(N(0.5C, 0.2C), 1, C): the bounds take the tails' mass
    grid = np.linspace(1, C, 200_001)
    pdf = stats.norm.pdf(grid, 0.5 * C, 0.2 * C)
    tail = stats.norm.cdf(1, 0.5 * C, 0.2 * C)
    second = np.trapezoid(grid**2 * pdf, grid) + tail * (1 + C**2)
    assert np.std(x) == pytest.approx(np.sqrt(second - (0.5 * C) ** 2), rel=0.01)


def test_lognormal_parameters_can_be_set():
    x = sample_family("lognormal", 200_000, 1000, np.random.default_rng(2), lognormal_median=0.28, lognormal_sigma=0.55)
    assert np.median(x) == pytest.approx(280, rel=0.01)
    # one sigma above the median, well inside the clip
    assert np.quantile(x, 0.8413) / np.median(x) == pytest.approx(np.exp(0.55), rel=0.01)


@pytest.mark.parametrize("high", [1, 2, 3])
@pytest.mark.parametrize("family", ["uniform", "normal", "lognormal", "exponential", "triangular", "beta", "gamma",
                                    "weibull", "bimodal", "poisson"])
def test_every_family_draws_on_a_range_of_one_two_or_three_integers(family, high):
    # a task whose shifted quantity takes one or two values builds its suites: the triangular's mode,
    # 0.35 high, fell below its lower end 1 there (numpy: left > mode) and every command refused the task
    x = sample_family(family, 500, high, np.random.default_rng(0))
    assert x.dtype == np.int64 and x.min() >= 1 and x.max() <= high


def test_unknown_family_is_refused():
    with pytest.raises(ValueError, match="unknown family"):
        sample_family("cauchy", 10, 100, np.random.default_rng(0))


def test_cells_partition_the_range():
    one_per_value = ShiftDimension("d", cells=99)
    np.testing.assert_array_equal(one_per_value.cell_of(np.arange(1, 100), 99), np.arange(99))
    two_per_cell = ShiftDimension("s", cells=100)
    cells = two_per_cell.cell_of(np.arange(1, 201), 200)
    np.testing.assert_array_equal(np.bincount(cells), np.full(100, 2))
    assert list(cells[:4]) == [0, 0, 1, 1]


@settings(max_examples=30, deadline=None)
@given(cell=st.integers(0, 99), high=st.sampled_from([100, 200, 300, 400]))
def test_sampling_a_cell_stays_in_it(cell, high):
    dim = ShiftDimension("s", cells=100)
    p = np.zeros(100)
    p[cell] = 1.0
    values = dim.sample(p, 200, np.random.default_rng(cell), high)
    assert set(dim.cell_of(values, high)) == {cell}


@pytest.mark.parametrize("p, says", [
    (np.full(10, 1.0), "got a sum of 10"),       # counts, not probabilities
    (np.full(10, 0.1001), "got a sum of 1.001"),  # off by a little
    (np.full(10, 0.05), "got a sum of 0.5"),
])
def test_a_vector_that_does_not_sum_to_one_is_refused_not_taken_for_one(p, says):
    # it was divided by its sum without a word
    with pytest.raises(ValueError, match=f"^distribution must sum to 1, {says} \\(divide it by its sum\\)$"):
        get_task("ovrp").sample_instance(p, np.random.default_rng(0))
    values = ShiftDimension("s", cells=10).sample(np.full(10, 0.1), 1000, np.random.default_rng(0), 10)
    assert values.min() >= 1 and values.max() <= 10  # rounding aside (0.1 x 10 is not 1 in floats), one sums to 1


def test_empty_cells_carry_no_mass():
    dim = ShiftDimension("s", cells=100)
    p = np.full(100, 0.01)
    values, probs = dim.value_probabilities(p, 50)  # 50 integers for 100 cells
    assert len(values) == 50 and probs.sum() == pytest.approx(1)
    with pytest.raises(ValueError, match="no mass"):
        q = np.zeros(100)
        q[1] = 1.0  # cell 1 holds no integer when high = 50
        dim.value_probabilities(q, 50)


@pytest.mark.parametrize("index", range(3))
def test_histogram_round_trip(index):
    task = get_task("obp")
    inst = task.nominal_instances()[index]
    p = task.histogram(inst)
    assert is_distribution(p) and p.shape == (100,)
    again = task.histogram(task.sample_instance(p, np.random.default_rng(index), length=inst["num_items"]))
    # each cell's count is binomial: compare with 4 standard deviations
    sd = np.sqrt(p * (1 - p) / inst["num_items"])
    assert np.all(np.abs(again - p) <= 4 * sd + 1e-12)
    assert np.abs(again - p).mean() < 0.002


def test_sample_instance_honours_length_and_capacity():
    task = get_task("obp")
    p = np.full(100, 0.01)
    inst = task.sample_instance(p, np.random.default_rng(0), length=777, capacity=300)
    assert inst["num_items"] == 777 == len(inst["items"]) and inst["capacity"] == 300
    assert inst["items"].max() <= 300
    same = task.sample_instance(p, np.random.default_rng(0), length=777, capacity=300)
    np.testing.assert_array_equal(inst["items"], same["items"])


def test_registry():
    assert "obp" in list_tasks()
    assert get_task("OBP") is get_task("obp")
    with pytest.raises(KeyError, match="unknown task"):
        get_task("tsp")


def test_task_pickles_by_name():
    import pickle
    task = get_task("obp")
    assert pickle.loads(pickle.dumps(task)) is task
    evaluation = task.evaluation(task.nominal_instances()[:1])
    clone = pickle.loads(pickle.dumps(evaluation))
    assert clone.task is task and len(clone.instances) == 1


@pytest.mark.parametrize("spec, expected", [("mean", 2.0), ("min", -1.0), ("cvar:0.5", 0.0), ("cvar:1", 2.0)])
def test_aggregations(spec, expected):
    assert Aggregation.parse(spec)([-1.0, 1.0, 3.0, 5.0]) == pytest.approx(expected)


def test_balanced_lets_a_few_adversarial_instances_count_as_much_as_the_nominal_set():
    # the specialist's case: five nominal instances it wins by 1.07 points each, one
    # adversarial instance it loses by 1.7 (waste %, eval = -waste)
    specialist = -np.array([0.48] * 5 + [2.58])
    bestfit = -np.array([1.55] * 5 + [0.88])
    mean, balanced = Aggregation.parse("mean"), Aggregation.parse("balanced")
    assert mean(specialist, 5) > mean(bestfit, 5)          # under mean the specialist still wins
    assert balanced(specialist, 5) == pytest.approx(-(0.48 + 2.58) / 2)
    assert balanced(bestfit, 5) > balanced(specialist, 5)  # under balanced it loses
    assert Aggregation.parse("balanced:0.25")(specialist, 5) == pytest.approx(-(0.75 * 0.48 + 0.25 * 2.58))
    assert balanced(specialist[:5], 5) == pytest.approx(-0.48)          # no adversarial instance yet
    assert balanced(specialist) == pytest.approx(specialist.mean())    # nominal count unknown: the mean
    assert str(Aggregation.parse("balanced")) == "balanced:0.5"


def test_regret_aggregations_score_relative_to_the_reference_and_round_trip():
    for spec in ("regret:mean", "regret:min", "regret:cvar:0.3", "regret:balanced:0.25"):
        agg = Aggregation.parse(spec)
        assert agg.regret and str(agg) == spec and Aggregation.parse(str(agg)) == agg
    assert not Aggregation.parse("min").regret


def test_minimax_regret_prefers_the_rule_to_a_specialist_that_loses_anywhere():
    # the specialist's case again, now against the best rule on each instance
    task = get_task("obp")
    evaluation = task.evaluation(aggregation="regret:min")
    evaluation.nominal_count = 5
    reference = np.array([1.55] * 5 + [0.88])
    specialist = np.array([0.48] * 5 + [2.58])
    assert evaluation.score_of(reference, references=reference) == 0.0       # the rule itself: no regret
    assert evaluation.score_of(specialist, references=reference) == pytest.approx(-1.70)  # its worst loss
    dominating = reference - 0.01
    assert evaluation.score_of(dominating, references=reference) == pytest.approx(0.01)
    # under the mean the regret only shifts every program by the same amount: it ranks as the metric does
    mean_regret = task.evaluation(aggregation="regret:mean")
    assert (mean_regret.score_of(specialist, references=reference) - mean_regret.score_of(reference, references=reference)
            == pytest.approx(task.evaluation().score_of(specialist) - task.evaluation().score_of(reference)))


def test_the_reference_is_the_best_baseline_on_each_instance_and_bestfit_has_no_regret():
    task = get_task("obp")
    evaluation = task.evaluation(aggregation="regret:min")
    refs = evaluation.reference_metrics()
    by_rule = np.array([[task.evaluate(f, inst) for inst in evaluation.instances] for f in task.baselines.values()])
    np.testing.assert_array_equal(refs, by_rule.min(axis=0))
    assert evaluation.reference_metrics() is not refs and np.array_equal(evaluation.reference_metrics(), refs)
    best_fit = task.baselines["BestFit"]
    assert evaluation.score_of(evaluation.metrics(best_fit)) == pytest.approx(-(by_rule[0] - refs).max())
    with pytest.raises(ValueError, match="reference metrics"):
        evaluation.score_of([1.0, 2.0], references=[1.0])


def test_a_regret_against_one_named_rule_has_no_floor():
    # against BestFit alone, BestFit scores exactly 0 on every instance; another rule scores its
    # largest loss to BestFit; against the best rule per instance BestFit's own score is below 0
    for spec in ("regret:bestfit:min", "regret:firstfit:cvar:0.3", "regret:bestfit:balanced:0.25"):
        agg = Aggregation.parse(spec)
        assert agg.regret and str(agg) == spec and Aggregation.parse(str(agg)) == agg
    assert Aggregation.parse("regret:BestFit:min").reference == "bestfit"
    task = get_task("obp")
    evaluation = task.evaluation(aggregation="regret:bestfit:min")
    best_fit, first_fit = task.baselines["BestFit"], task.baselines["FirstFit"]
    bf = evaluation.metrics(best_fit)
    np.testing.assert_array_equal(evaluation.reference_metrics(), bf)
    assert evaluation.score_of(bf) == 0.0
    ff = evaluation.metrics(first_fit)
    assert evaluation.score_of(ff) == pytest.approx(-(ff - bf).max())
    either = task.evaluation(aggregation="regret:min")
    assert either.score_of(bf) == pytest.approx(-(bf - np.minimum(bf, ff)).max())
    with pytest.raises(UserError, match=r"^aggregation: task 'obp' has no classical baseline 'worstfit' \(it has: "
                                        r"BestFit, FirstFit\)$"):
        task.evaluation(aggregation="regret:worstfit:min")


@pytest.mark.parametrize("spec", ["median", "cvar:0", "cvar:2", "cvar:x", "balanced:1.5", "balanced:-0.1",
                                  "balanced:x", "regret:", "regret:median", "regret:regret:min", "regret:cvar:2",
                                  "regret:bestfit", "regret:bestfit:", "regret:bestfit:median",
                                  "regret:bestfit:regret:min"])
def test_bad_aggregations(spec):
    with pytest.raises(ValueError, match="aggregation"):
        Aggregation.parse(spec)


@pytest.mark.parametrize("instances, given", [
    ([], "an empty list"), (42, "int 42"), ("ab", "str 'ab'"), ([1, 2], "a list holding int")])
def test_an_evaluation_refuses_what_is_no_instance_set_when_made(instances, given):
    # no instance at all made a robust run wait for good; numbers or text made every sample invalid
    with pytest.raises(UserError, match=rf"^instances: give at least one instance of the task \(a dict, as "
                                        rf"task.nominal_instances\(\) gives\), not {given}$"):
        get_task("ovrp").evaluation(instances)


@pytest.mark.parametrize("spec", ["foo", "regret:nope:min"])
def test_an_evaluation_refuses_a_bad_aggregation_as_a_user_error(spec):
    with pytest.raises(UserError, match="^aggregation") as caught:
        get_task("ovrp").evaluation(aggregation=spec)
    assert isinstance(caught.value, ValueError) and "\n" not in str(caught.value)


def test_an_aggregation_says_in_words_what_minus_its_score_is():
    words = {spec: Aggregation.parse(spec).describe("waste ratio (%)") for spec in
             ("mean", "min", "cvar:0.2", "balanced", "regret:min", "regret:bestfit:mean")}
    assert words == {"mean": "mean waste ratio (%)", "min": "worst waste ratio (%)",
                     "cvar:0.2": "mean waste ratio (%) over the worst 20 % of instances",
                     "balanced": "waste ratio (%): nominal and adversarial means weighted 0.5 and 0.5",
                     "regret:min": "worst waste ratio (%) regret against the best baseline per instance",
                     "regret:bestfit:mean": "mean waste ratio (%) regret against bestfit"}
