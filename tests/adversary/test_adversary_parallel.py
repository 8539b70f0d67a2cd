"""The inner search on every core: the same result on one worker, two, or none, and the run's
programs still evaluated only in sandboxed workers."""
from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import pytest

from raise_plugin.adversary import default_draws, evaluate_batch, search
from raise_plugin.engine import ProcessExecutor, SandboxLimits, SourcePriority
from tasks import get_task
from tasks.common.evaluation import named_baseline

# a generated-looking OBP heuristic: BestFit with a pull toward nearly full bins
OBP_PROGRAM = """
import numpy as np

def priority(item, bins):
    gap = bins - item
    return -gap + 0.5 * (gap < 0.1 * bins.max())
"""


def same(a, b, path="result") -> list[str]:
    """Where ``a`` and ``b`` differ (dataclasses, dicts, sequences, arrays, floats with NaN)."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        if type(a) is not type(b):
            return [f"{path}: {type(a).__name__} != {type(b).__name__}"]
        return [d for f in dataclasses.fields(a) for d in same(getattr(a, f.name), getattr(b, f.name),
                                                                f"{path}.{f.name}")]
    if isinstance(a, dict):
        if set(a) != set(b):
            return [f"{path}: keys {sorted(a)} != {sorted(b)}"]
        return [d for k in a for d in same(a[k], b[k], f"{path}[{k!r}]")]
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in same(x, y, f"{path}[{i}]")]
    if isinstance(a, np.ndarray):
        ok = a.shape == np.shape(b) and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
        return [] if ok else [f"{path}: arrays differ"]
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return []
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


@pytest.fixture(scope="module")
def two_workers():
    with ProcessExecutor(2) as pool:
        yield pool


def _settings(name: str):
    """The task, a short nominal set and the task's own inner-search settings (R, objective)."""
    task = get_task(name)
    if name == "obp":
        from tasks.obp.instances import weibull_instances
        nominal = weibull_instances(count=2, num_items=300)
        references = [named_baseline(task, "bestfit")]
        return task, nominal, OBP_PROGRAM, dict(epsilon=0.01, projection="sphere", objective="regret",
                                                references=references, inner_draws=default_draws(task))
    baselines = list(task.baselines.items())
    program = baselines[0][1]  # a module-level function: shipped by name
    return task, task.nominal_instances()[:2], program, dict(epsilon=0.002, references=baselines[1:],
                                                             inner_draws=default_draws(task))


@pytest.mark.parametrize("name", ["obp", "ojsp", "ovrp"])
def test_the_search_on_two_workers_returns_what_it_returns_serially(name, two_workers):
    task, nominal, program, kwargs = _settings(name)
    priority = SourcePriority(program) if isinstance(program, str) else program
    generations = 2 if name == "obp" else 1
    serial = search(task, priority, nominal=nominal, seed=3, inner_population=4, inner_generations=generations,
                    all_draws=True, **kwargs)
    parallel = search(task, priority, nominal=nominal, seed=3, inner_population=4, inner_generations=generations,
                      all_draws=True, executor=two_workers, **kwargs)
    assert serial.evaluations == parallel.evaluations > 0
    assert serial.reference_evaluations == parallel.reference_evaluations > 0
    assert same(serial, parallel) == []


def test_a_batch_goes_out_as_a_few_calls_per_worker_in_order():
    class Counting:
        workers = 2

        def __init__(self):
            self.calls = 0

        def submit(self, fn, *args):
            from concurrent.futures import Future
            self.calls += 1
            future = Future()
            future.set_result(fn(*args))
            return future

    pool = Counting()
    assert evaluate_batch(pow, [(k, 2) for k in range(50)], pool) == [k * k for k in range(50)]
    assert pool.calls == 8  # 4 per worker
    few = Counting()
    assert evaluate_batch(pow, [(k, 2) for k in range(3)], few) == [0, 1, 4] and few.calls == 3


def test_a_search_past_its_time_limit_on_the_pool_is_given_up_and_frees_the_queue():
    from raise_plugin.adversary.sandboxed import SearchFailed, on_run_workers, search_program

    hanging = "def priority(item, bins):\n    while True:\n        pass\n"
    task, nominal, _, _ = _settings("obp")
    options = dict(nominal=nominal, seed=0, inner_population=4, inner_generations=1)
    with ProcessExecutor(1, SandboxLimits(timeout=1.5)) as pool:
        start = time.perf_counter()
        with pytest.raises(SearchFailed, match="exceeded 0.5 s"):
            on_run_workers(search_program, (search, task, hanging, [], 0.01, options), pool, 0.5)
        assert time.perf_counter() - start < 2
        # the calls not yet started were cancelled: the next one runs once the hung one is killed
        assert pool.submit(pow, 3, 2).result(timeout=10) == 9
