"""A program that fails in a way that repeats is not run on its other instances; limits come from the task."""
from __future__ import annotations

import math

import numpy as np
import pytest

from raise_plugin.engine import Engine, EvalResult, FailureKind, ProcessExecutor, SandboxLimits
from raise_plugin.engine.suite import Heuristic, evaluate_suite
from tasks import get_task, list_tasks
from tasks.common.suite import Dataset

from .conftest import BEST_FIT

LOOP = "def priority(item, bins):\n    while True:\n        pass\n"
LIMITS = SandboxLimits(timeout=60, memory_mb=512)


@pytest.fixture(scope="module")
def many(task):
    rng = np.random.default_rng(11)
    return [task.make_instance(rng.integers(1, 100, size=40), rng, capacity=100) for _ in range(8)]


def test_after_a_timeout_the_remaining_instances_are_skipped_not_run(many):
    with ProcessExecutor(1, LIMITS) as pool:
        engine = Engine("obp", pool, limits=LIMITS)
        results = [f.result() for f in engine.submit_each(LOOP, many, timeout=1.0, fail_fast=True)]
        assert pool.restarts() <= 1  # one worker killed by one timeout: nothing else ran to its limit
    assert results[0].kind == FailureKind.TIMEOUT and not results[0].skipped
    assert all(r.skipped and r.kind == FailureKind.TIMEOUT for r in results[1:])
    assert all(r.reason == "skipped: timed out after 1 s" and math.isnan(r.metrics[0]) for r in results[1:])


def test_a_serial_executor_stops_after_the_first_timeout_too(many):
    with Engine("obp", "serial", limits=LIMITS) as engine:
        results = [f.result() for f in engine.submit_each(LOOP, many, timeout=1.0, fail_fast=True)]
    assert not results[0].skipped and results[0].kind == FailureKind.TIMEOUT
    assert all(r.skipped for r in results[1:])


@pytest.mark.parametrize("code, kind", [
    ("def priority(item, bins)\n    return bins\n", FailureKind.PROGRAM),
    ("import os\n\ndef priority(item, bins):\n    os._exit(3)\n", FailureKind.WORKER_DIED),
    ("import numpy as np\n\ndef priority(item, bins):\n    x = np.ones(20 * 10**9 // 8)\n    return -bins\n",
     FailureKind.MEMORY),
])
def test_repeating_failures_skip_the_rest(pool, many, code, kind):
    results = [f.result() for f in Engine("obp", pool, limits=LIMITS).submit_each(code, many, fail_fast=True)]
    assert {r.kind for r in results} == {kind}
    assert sum(not r.skipped for r in results) <= pool.workers  # at most one per worker actually ran
    assert sum(r.skipped for r in results) >= len(many) - pool.workers


def test_a_failure_on_one_instance_only_does_not_skip_the_others(pool, task, many):
    picky = ("import numpy as np\n\ndef priority(item, bins):\n"
             "    if len(bins) and bins.max() == 100 and item == 1:\n        raise ValueError('one instance')\n"
             "    return -bins\n")
    results = [f.result() for f in Engine("obp", pool, limits=LIMITS).submit_each(picky, many, fail_fast=True)]
    assert not any(r.skipped for r in results)
    assert {r.kind for r in results} <= {FailureKind.OK, FailureKind.HEURISTIC}
    expected = [task.evaluate(task.baselines["BestFit"], s) for s in many]
    for r, e in zip(results, expected):
        assert not r.valid or r.metrics[0] == e


def test_without_fail_fast_every_instance_runs(pool, many):
    code = "def priority(item, bins)\n    return bins\n"
    results = [f.result() for f in Engine("obp", pool, limits=LIMITS).submit_each(code, many)]
    assert not any(r.skipped for r in results) and {r.kind for r in results} == {FailureKind.PROGRAM}


def test_timeouts_per_instance_must_match_the_instances(pool, many):
    with pytest.raises(ValueError, match="timeouts"):
        Engine("obp", pool, limits=LIMITS).submit_each(BEST_FIT, many, timeout=[1.0, 2.0])


def test_a_skipped_result_keeps_kind_and_reason_of_the_failure():
    failure = EvalResult.failed(1, FailureKind.TIMEOUT, "timed out after 3 s", 3.0)
    skipped = EvalResult.skipped_after(failure)
    assert skipped.skipped and not skipped.valid and skipped.kind == FailureKind.TIMEOUT
    assert skipped.reason == "skipped: timed out after 3 s" and skipped.with_seconds(1.0).skipped


@pytest.mark.parametrize("name", list_tasks())
def test_the_task_limit_grows_with_the_instance_and_has_a_floor(name):
    task = get_task(name)
    nominal = task.nominal_instances()
    assert task.instance_timeout(nominal[0]) == pytest.approx(
        max(task.instance_timeout_floor, task.timeout_seconds / len(nominal)))
    by_work = sorted((task.instance_work(s), task.instance_timeout(s)) for d in task.test_suite() for s in d.instances)
    limits = [t for _, t in by_work]
    assert limits == sorted(limits) and min(limits) >= task.instance_timeout_floor


def test_suite_evaluation_uses_the_task_limit_and_marks_skipped_rows(monkeypatch, many):
    task_class = type(get_task("obp"))
    monkeypatch.setattr(task_class, "instance_timeout", lambda self, instance: 1.5)
    data = [Dataset("small", {"n": 40}, many)]
    rows = evaluate_suite("obp", [Heuristic("loop", code=LOOP), Heuristic("BestFit", baseline="BestFit")], data,
                          executor="process:1", progress=False)
    loop = [r for r in rows if r.heuristic == "loop"]
    assert loop[0].reason == "timed out after 1.5 s" and not loop[0].skipped
    assert all(r.skipped and not r.valid and r.reason == "skipped: timed out after 1.5 s" for r in loop[1:])
    assert all(r.valid for r in rows if r.heuristic == "BestFit")


def test_a_profile_does_not_search_a_heuristic_that_times_out_on_the_nominal_set():
    from raise_plugin.harness.robustness_profile import robustness_profile
    loop = "def priority(current_time, candidate_operations):\n    while True:\n        pass\n"
    profile = robustness_profile("ojsp", [Heuristic("loop", code=loop), Heuristic("SPT", baseline="SPT")],
                                 [0.002, 0.01], [0, 1], inner_population=2, inner_generations=1, workers=2, progress=False,
                                 timeout=1.0)
    looping = [p for p in profile.points if p.heuristic == "loop"]
    assert len(looping) == 4 and all(p.skipped and "timed out after 1 s" in p.reason for p in looping)
    assert profile.skipped() == 4 and math.isnan(profile.nominal["loop"])
    assert all(not p.reason and math.isfinite(p.metric) for p in profile.points if p.heuristic == "SPT")
    assert "invalid" in profile.markdown()


def test_rerank_skips_a_program_that_timed_out_and_ranks_the_others():
    from raise_plugin.harness.rerank import RankedProgram, rerank
    spt = "import numpy as np\n\ndef priority(current_time, candidate_operations):\n    return -candidate_operations[:, 1]\n"
    loop = "def priority(current_time, candidate_operations):\n    while True:\n        pass\n"
    programs = [RankedProgram("loop", loop, 1.0), RankedProgram("spt", spt, 0.5),
                RankedProgram("edd", spt.replace("[:, 1]", "[:, 3]"), 0.2)]
    out = rerank("ojsp", programs, epsilon=0.005, refreshes=1, top=3, inner_population=2, inner_generations=1, workers=2,
                 progress=False, timeout=1.0)
    scores = {p.name: p.robust_score for p in out["programs"]}
    assert scores["loop"] == -math.inf and math.isfinite(scores["spt"]) and math.isfinite(scores["edd"])
    assert out["skipped"] >= 3  # the loop's other nominal instances, and it is not run on the new one


def test_a_job_that_its_executor_ends_as_cancelled_ends_its_future_too():
    """Dask cancels a job whose worker, and the instance set it held, were lost: the future of that instance
    then waited for ever, and `evaluate` with it, as if the program had cancelled it itself."""
    import concurrent.futures as cf

    class Dropping:
        """A place that ends every job as Dask ends one whose dependencies were lost."""
        workers = 1

        def submit(self, fn, *args, **kwargs):
            future: cf.Future = cf.Future()
            future.set_running_or_notify_cancel()
            future.set_exception(cf.CancelledError("run_job-1 cancelled for reason: lost dependencies."))
            return future

    engine = Engine("obp", Dropping(), limits=SandboxLimits(timeout=10))
    futures = engine.submit_each(BEST_FIT, get_task("obp").nominal_instances()[:2], fail_fast=True)
    for future in futures:
        with pytest.raises(cf.CancelledError, match="lost dependencies"):
            future.result(timeout=10)
