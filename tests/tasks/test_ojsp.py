"""OJSP task: generator, online non-delay dispatch, feasibility, metric, baselines, failures, shift protocol."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tasks import get_task
from tasks.common.errors import HeuristicError
from tasks.common.families import FAMILIES
from tasks.ojsp import OJSPTask, check_schedule, schedule_problems, simulate
from tasks.ojsp import instances as inst_mod
from tasks.ojsp.baselines import BASELINES
from tasks.ojsp.instances import lower_bound, make_instance
from tasks.ojsp import simulator
from tasks.ojsp.simulator import COLUMNS, normalised_makespan

COMPILED_LOOP = simulator._fastdispatch



@pytest.fixture(scope="module")
def task() -> OJSPTask:
    return get_task("ojsp")


@pytest.fixture(scope="module")
def suite(task):
    return task.test_suite()


def random_priority(seed: int):
    rng = np.random.default_rng(seed)
    return lambda current_time, candidate_operations: rng.random(len(candidate_operations))


def plain_dispatch(instance, priority):
    """The dispatch rule stated directly (slow): the oracle the fast simulator must equal."""
    mach, dur = instance["machines"], instance["durations"]
    release, due = instance["release"], instance["due"]
    J, M = dur.shape
    nxt, ready, free = [0] * J, release.tolist(), [0] * M
    start = np.zeros((J, M), dtype=np.int64)
    while min(nxt) < M:
        est = {j: max(ready[j], free[mach[j, nxt[j]]]) for j in range(J) if nxt[j] < M}
        t = min(est.values())
        cands = [j for j in sorted(est) if est[j] == t]
        while cands:
            rows = np.array([[mach[j, nxt[j]], dur[j, nxt[j]], release[j], due[j], dur[j, nxt[j]:].sum(),
                              M - nxt[j]] for j in cands], dtype=float)
            j = cands[int(np.argmax(priority(t, rows)))]
            k, m = nxt[j], mach[j, nxt[j]]
            start[j, k] = t
            free[m] = ready[j] = t + dur[j, k]
            nxt[j] += 1
            cands = [x for x in cands if x != j and mach[x, nxt[x]] != m]
    return int((start + dur).max()), start


# -- generator -----------------------------------------------------------------

def test_nominal_set_is_five_uniform_instances_of_10_machines_and_20_jobs_and_deterministic(task):
    nominal = task.nominal_instances()
    again = inst_mod.nominal_instances()
    assert len(nominal) == 5
    for a, b in zip(nominal, again):
        assert (a["num_machines"], a["num_jobs"]) == (10, 20)
        assert a["durations"].shape == (20, 10)
        for key in ("machines", "durations", "release", "due"):
            assert np.array_equal(a[key], b[key])
    assert not np.array_equal(nominal[0]["durations"], nominal[1]["durations"])


def test_suite_has_20_datasets_of_5_instances_and_is_deterministic(suite):
    assert len(suite) == 20
    assert {ds.family for ds in suite} == set(FAMILIES)
    assert {(ds.params["M"], ds.params["J"]) for ds in suite} == {(10, 20), (10, 50), (20, 20), (20, 50)}
    assert len({ds.name for ds in suite}) == 20
    again = inst_mod.test_suite()
    for ds, ds2 in zip(suite, again):
        assert len(ds.instances) == 5 and ds.params == ds2.params
        for a, b in zip(ds.instances, ds2.instances):
            assert a["durations"].shape == (ds.params["J"], ds.params["M"])
            for key in ("machines", "durations", "release", "due"):
                assert np.array_equal(a[key], b[key])


def test_generated_instances_obey_the_spec(suite):
    for ds in suite:
        for inst in ds.instances:
            M = inst["num_machines"]
            dur, rel, due = inst["durations"], inst["release"], inst["due"]
            assert dur.min() >= 1 and dur.max() <= 99
            assert (np.sort(inst["machines"], axis=1) == np.arange(M)).all()
            assert inst["horizon"] == 2 * lower_bound(dur, M)
            assert rel.min() >= 0
            assert rel.max() == round(0.45 * inst["horizon"])
            assert (due - rel - dur.sum(axis=1) >= 0).all()
            assert all(isinstance(inst[k], int) for k in ("num_jobs", "num_machines", "horizon"))


def test_due_date_slack_follows_the_formula():
    rng = np.random.default_rng(5)
    inst = make_instance(rng.integers(1, 100, 400 * 10), rng, M=10)
    work = inst["durations"].sum(axis=1)
    slack = inst["due"] - inst["release"] - work
    mean_work = work.mean()
    low = 1.35 * work + 0.35 * mean_work - 0.1 * mean_work - 1
    high = 1.75 * work + 0.35 * mean_work + 0.1 * mean_work + 1
    assert (slack >= low).all() and (slack <= high).all()


def test_release_gaps_are_zero_about_35_percent_of_the_time():
    rng = np.random.default_rng(11)
    inst = make_instance(rng.integers(1, 100, 4000 * 10), rng, M=10)
    gaps = np.diff(np.sort(inst["release"]))
    assert 0.30 < np.mean(gaps == 0) < 0.40


def test_release_window_zero_releases_every_job_at_time_zero():
    rng = np.random.default_rng(3)
    inst = make_instance(rng.integers(1, 100, 20 * 10), rng, M=10, release_window=0.0)
    assert (inst["release"] == 0).all()


def test_make_instance_rejects_durations_that_do_not_fill_whole_jobs():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="whole jobs"):
        make_instance(np.ones(15, dtype=int), rng, M=10)
    with pytest.raises(ValueError, match=r"\[1, 99\]"):
        make_instance(np.full(10, 100), rng, M=10)


# -- simulator and feasibility -------------------------------------------------

def test_schedules_of_random_heuristics_are_feasible_and_equal_the_plain_rule(suite, compiled):
    for n, ds in enumerate(suite[::3]):
        inst = ds.instances[n % 5]
        makespan, start = simulate(inst, random_priority(n), return_schedule=True, compiled=compiled)
        check_schedule(inst, start, makespan)
        plain_makespan, plain_start = plain_dispatch(inst, random_priority(n))
        assert makespan == plain_makespan and np.array_equal(start, plain_start)


@settings(max_examples=40, deadline=None)
@given(jobs=st.integers(1, 7), machines=st.integers(1, 5), seed=st.integers(0, 2**32 - 1),
       window=st.sampled_from([0.0, 0.45, 2.0]))
def test_small_instances_match_the_plain_rule_and_stay_feasible(jobs, machines, seed, window):
    rng = np.random.default_rng(seed)
    inst = make_instance(rng.integers(1, 100, jobs * machines), rng, M=machines, release_window=window)
    want = plain_dispatch(inst, random_priority(seed))
    for compiled in (True, False):
        got = simulate(inst, random_priority(seed), return_schedule=True, compiled=compiled)
        assert got[0] == want[0] and np.array_equal(got[1], want[1])
        assert schedule_problems(inst, got[1], got[0]) == []


def test_both_loops_give_identical_schedules_on_the_suite(suite):
    if simulator._fastdispatch is None:
        pytest.skip("the compiled loop is not built here")
    for ds in suite:
        inst = ds.instances[1]
        for name in [*BASELINES, "random"]:
            def rule():  # a fresh generator for each loop: the random rule has state
                return random_priority(7) if name == "random" else BASELINES[name]
            a = simulate(inst, rule(), return_schedule=True, compiled=True)
            b = simulate(inst, rule(), return_schedule=True, compiled=False)
            assert a[0] == b[0] and np.array_equal(a[1], b[1]), (ds.name, name)


def test_baselines_give_feasible_schedules_on_every_family_and_size(suite):
    for ds in suite:
        inst = ds.instances[0]
        for name, rule in BASELINES.items():
            makespan, start = simulate(inst, rule, return_schedule=True)
            assert schedule_problems(inst, start, makespan) == [], (ds.name, name)


def test_lower_bound_never_exceeds_the_makespan(suite):
    for ds in suite:
        for inst in ds.instances[:2]:
            for rule in [*BASELINES.values(), random_priority(7)]:
                makespan = simulate(inst, rule)
                assert lower_bound(inst["durations"], inst["num_machines"]) <= makespan
                assert normalised_makespan(makespan, inst) >= 1.0


def test_feasibility_checker_catches_broken_schedules(task):
    inst = task.nominal_instances()[0]
    makespan, start = simulate(inst, BASELINES["SPT"], return_schedule=True)
    assert schedule_problems(inst, start, makespan) == []
    assert any("makespan" in p for p in schedule_problems(inst, start, makespan + 1))
    early = start.copy()
    j = int(np.argmax(inst["release"]))
    early[j] -= inst["release"][j] + 1
    assert any("before release" in p for p in schedule_problems(inst, early))
    swapped = start.copy()
    swapped[0, [0, 1]] = swapped[0, [1, 0]]
    assert any("precedence" in p for p in schedule_problems(inst, swapped, non_delay=False))
    clash = start.copy()
    m = inst["machines"][0, -1]
    k = int(np.flatnonzero(inst["machines"][1] == m)[0])
    clash[1, k:] += start[0, -1] - clash[1, k]  # job 1 meets job 0 on machine m at the same time
    assert any("overlap" in p for p in schedule_problems(inst, clash, non_delay=False))
    late = start + 1
    assert any("later than" in p for p in schedule_problems(inst, late))
    assert "not every operation" in schedule_problems(inst, start[:, :-1])[0]
    with pytest.raises(ValueError, match="infeasible"):
        check_schedule(inst, late)


def test_candidates_are_released_ready_now_and_described_by_the_six_columns(task, compiled):
    inst = task.nominal_instances()[1]
    seen = []

    def recorder(current_time, candidate_operations):
        seen.append((current_time, candidate_operations.copy()))
        return -candidate_operations[:, 1]

    simulate(inst, recorder, compiled=compiled)
    assert len(seen) == inst["durations"].size  # one call per operation
    assert len(COLUMNS) == 6
    first_time, first = seen[0]
    assert first_time == inst["release"].min()
    order = np.argsort(inst["release"], kind="stable")
    firsts = order[inst["release"][order] == first_time]
    assert np.array_equal(first[:, 0], inst["machines"][firsts, 0])
    assert np.array_equal(first[:, 4], inst["durations"][firsts].sum(axis=1))
    assert (first[:, 5] == inst["num_machines"]).all()
    times = [t for t, _ in seen]
    assert times == sorted(times)
    for t, rows in seen:
        assert isinstance(t, int) and rows.dtype == np.float64 and rows.shape[1] == 6
        assert (rows[:, 2] <= t).all() and (rows[:, 3] >= rows[:, 2]).all()
        assert ((1 <= rows[:, 5]) & (rows[:, 5] <= inst["num_machines"])).all()
        assert (rows[:, 4] >= rows[:, 1]).all()


def test_a_heuristic_writing_into_its_input_does_not_change_the_simulation(task, compiled):
    inst = task.nominal_instances()[2]

    def writer(current_time, candidate_operations):
        scores = -candidate_operations[:, 1].copy()
        candidate_operations[:] = 0
        return scores

    assert simulate(inst, writer, compiled=compiled) == simulate(inst, BASELINES["SPT"], compiled=compiled)


# -- baselines and evaluation --------------------------------------------------

def test_baselines_are_distinct_and_deterministic(task):
    nominal = task.nominal_instances()
    metrics = {name: [task.evaluate(rule, inst) for inst in nominal] for name, rule in task.baselines.items()}
    assert set(metrics) == {"SPT", "MinSlack", "EDD"}
    assert len({tuple(v) for v in metrics.values()}) == 3
    for name, rule in task.baselines.items():
        assert [task.evaluate(rule, inst) for inst in nominal] == metrics[name]
    score = task.evaluation().evaluate_program("", task.baselines["SPT"])
    assert score == pytest.approx(-np.mean(metrics["SPT"]))


def test_baselines_rank_as_their_rules_say():
    rows = np.array([[0, 5, 0, 300, 50, 3], [1, 2, 10, 200, 90, 2], [2, 9, 4, 100, 20, 1]], dtype=float)
    assert int(np.argmax(BASELINES["SPT"](0, rows))) == 1  # shortest duration
    assert int(np.argmax(BASELINES["EDD"](0, rows))) == 2  # earliest due date
    assert int(np.argmax(BASELINES["MinSlack"](0, rows))) == 2  # least d - r - remaining work: 76


def test_the_host_secure_evaluator_scores_the_template_as_minus_mean_makespan_ratio(task):
    from llm4ad.base import SecureEvaluator
    evaluation = task.evaluation()
    score = SecureEvaluator(evaluation, fork_proc=True).evaluate_program(task.template_program)
    expected = -np.mean([task.evaluate(BASELINES["SPT"], inst) for inst in task.nominal_instances()])
    assert score == pytest.approx(expected, abs=1e-12)  # the template is SPT


@pytest.mark.parametrize("bad, reason", [
    (lambda t, c: 1 / 0, "ZeroDivisionError"),
    (lambda t, c: np.full(len(c), np.nan), "non-finite"),
    (lambda t, c: np.zeros(len(c) + 1), "shape"),
    (lambda t, c: np.zeros((len(c), 2)), "shape"),
    (lambda t, c: None, "expected"),
    (lambda t, c: np.array(["a"] * len(c)), "dtype"),
])
def test_failing_heuristics_raise_a_one_line_reason_and_score_none(task, bad, reason, compiled):
    inst = task.nominal_instances()[0]
    with pytest.raises(HeuristicError, match=reason):
        simulate(inst, bad, compiled=compiled)
    with pytest.raises(HeuristicError, match=reason) as info:
        task.evaluate(bad, inst)
    assert "\n" not in str(info.value)
    evaluation = task.evaluation()
    assert evaluation.evaluate_program("", bad) is None
    assert reason in evaluation.last_error


def test_an_error_message_spanning_lines_becomes_one_line(task):
    def bad(current_time, candidate_operations):
        raise RuntimeError("first line\nsecond line")

    with pytest.raises(HeuristicError, match="first line second line"):
        task.evaluate(bad, task.nominal_instances()[0])


# -- shift dimension and registration ------------------------------------------

def test_histogram_is_over_every_operation_duration_with_one_cell_per_value(task):
    inst = task.nominal_instances()[0]
    p = task.histogram(inst)
    assert p.shape == (99,) and p.sum() == pytest.approx(1.0)
    counts = np.bincount(inst["durations"].ravel(), minlength=100)[1:]
    assert np.allclose(p, counts / counts.sum())


def test_sample_instance_uses_the_job_count_as_length_and_round_trips_the_histogram(task):
    rng = np.random.default_rng(0)
    spike = np.zeros(99)
    spike[[6, 40]] = 0.5  # durations 7 and 41
    inst = task.sample_instance(spike, rng, length=30)
    assert task.instance_length(inst) == 30 and inst["durations"].shape == (30, 10)
    assert set(np.unique(inst["durations"])) <= {7, 41}
    assert task.histogram(inst)[[6, 40]].sum() == pytest.approx(1.0)
    assert task.instance_length(task.sample_instance(spike, rng)) == 20 == task.nominal_length
    sized = task.sample_instance(spike, rng, M=20, J=50)
    assert sized["durations"].shape == (50, 20)
    p_bar = np.mean([task.histogram(i) for i in task.nominal_instances()], axis=0)
    big = task.sample_instance(p_bar, np.random.default_rng(1), length=2000)
    assert np.abs(task.histogram(big) - p_bar).mean() < 0.003
    a = task.sample_instance(p_bar, np.random.default_rng(9))
    b = task.sample_instance(p_bar, np.random.default_rng(9))
    assert all(np.array_equal(a[k], b[k]) for k in ("durations", "machines", "release", "due"))


def test_make_instance_takes_all_durations_and_instances_pickle(task):
    values = np.arange(1, 61)
    inst = task.make_instance(values, np.random.default_rng(0), M=6)
    assert inst["durations"].shape == (10, 6) and np.array_equal(inst["durations"].ravel(), values)
    values_back, high = task.shift_values(inst)
    assert np.array_equal(values_back, values) and high == task.high_of({}) == 99
    clone = pickle.loads(pickle.dumps(inst))
    assert simulate(clone, BASELINES["EDD"]) == simulate(inst, BASELINES["EDD"])


def test_task_is_registered_and_pickles_by_name(task):
    assert isinstance(task, OJSPTask) and task.name == "ojsp"
    assert task.shift.cells == 99 and task.nominal_params == {"M": 10}
    assert pickle.loads(pickle.dumps(task)) is task
    assert "def priority(current_time: int, candidate_operations: np.ndarray) -> np.ndarray" in task.template_program
    for column in COLUMNS:
        assert column in task.template_program
