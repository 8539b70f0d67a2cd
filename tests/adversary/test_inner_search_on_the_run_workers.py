"""A robust run's inner search on the run's sandboxed workers: the run records the same on one
worker or two and with the serial search, and no program runs in the run's own process."""
from __future__ import annotations

import json
import math

import pytest
from llm4ad.method.eoh import EoH

from robust_helpers import ScriptedLLM, small_obp_evaluation
from raise_plugin.robust import AdversarialInstanceCallback
from raise_plugin.robust import robust


def _short_run(executor="process:2", inner_parallel=True, budget=12):
    callback = AdversarialInstanceCallback(0.01, tau=1, inner_population=4, inner_generations=2,
                                           projection="sphere", adversary_objective="regret:bestfit", seed=5,
                                           inner_parallel=inner_parallel)
    method = robust(EoH)(llm=ScriptedLLM(0), evaluation=small_obp_evaluation(count=2), max_sample_nums=budget,
                         pop_size=4, max_generations=None, callbacks=[callback], executor=executor)
    method.run()
    return method, callback


def _untimed(value):
    """``value`` without its timing fields (``*seconds``), at any depth."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if not k.endswith("seconds")}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _recorded(method, callback):
    entries = [(e.instance_id, e.origin, e.distance, _untimed(e.provenance)) for e in method.instance_entries()]
    history = _untimed(callback.history)
    return entries, history, [(p.program_id, p.score) for p in method.snapshot().population]


def test_the_run_records_the_same_with_the_inner_search_on_the_workers_or_in_one_worker():
    from raise_plugin.adversary.sandboxed import sandbox_pool

    parallel = _short_run(inner_parallel=True)
    serial = _short_run(inner_parallel=False)
    assert sandbox_pool(parallel[0]) is not None  # the run hands its workers to the inner search
    assert parallel[1].refreshes >= 2 and not parallel[1].skipped and parallel[0].hook_errors == 0
    assert _recorded(*parallel) == _recorded(*serial)


def test_no_program_runs_in_the_run_process_during_a_parallel_refresh(monkeypatch):
    from raise_plugin.engine import SandboxLimits
    from raise_plugin.engine.jobs import SourcePriority
    from raise_plugin.engine.workers.handle import start_method

    if start_method(SandboxLimits()) != "server":
        pytest.skip("workers forked from this process would inherit the patch")

    def refuse(self, *args, **kwargs):
        raise AssertionError("a program ran in the run's own process")

    monkeypatch.setattr(SourcePriority, "__call__", refuse)  # the workers start from a clean interpreter
    method, callback = _short_run(budget=8)
    assert callback.refreshes >= 1 and not callback.skipped and method.hook_errors == 0
    # a program called here would have failed on every instance (the task turns the refusal into inf)
    assert all(math.isfinite(h["metric"]) for h in callback.history), callback.history


@pytest.mark.slow
def test_a_robust_run_records_the_same_with_its_inner_search_on_one_or_two_workers(tmp_path):
    from raise_plugin.config import RunConfig
    from raise_plugin.rundir.files import read_jsonl
    from raise_plugin.runner import start_run

    def recorded(executor):
        out = tmp_path / executor.replace(":", "-")
        config = RunConfig(task="ovrp", robust=True, budget=8, pop_size=4, tau=1, seed=0, num_samplers=1,
                           executor=executor, out=str(out), validation_trace=False, host_profiler=False)
        start_run(config).run()
        samples = [{k: s[k] for k in ("sample", "program_id", "score", "metrics")} for s in read_jsonl(out / "samples.jsonl")]
        index = _untimed(read_jsonl(out / "instances" / "index.jsonl"))
        populations = read_jsonl(out / "population.jsonl")
        return json.dumps([samples, index, populations], sort_keys=True, default=str)

    one, two = recorded("process:1"), recorded("process:2")
    assert '"adv-' in one
    assert one == two


def test_on_a_dask_cluster_the_inner_search_runs_in_the_dask_workers_sandboxes(monkeypatch):
    """On Dask the inner search's calls are spread over the cluster, each in the sandbox pool of
    the Dask worker it lands on (never in the worker's own process), with the serial search's result."""
    from raise_plugin.adversary.sandboxed import sandbox_pool
    from raise_plugin.engine import DaskExecutor, SandboxedCalls, SandboxLimits
    from raise_plugin.engine.jobs import SourcePriority
    from raise_plugin.engine.workers.handle import start_method

    pytest.importorskip("distributed")
    serial = _recorded(*_short_run(inner_parallel=False, budget=8))
    if start_method(SandboxLimits()) == "server":  # the sandboxes start from a clean interpreter
        def refuse(self, *args, **kwargs):
            raise AssertionError("a program ran in a Dask worker's own process")

        monkeypatch.setattr(SourcePriority, "__call__", refuse)
    submitted = []
    through = SandboxedCalls.submit
    monkeypatch.setattr(SandboxedCalls, "submit", lambda self, fn, *a: submitted.append(fn) or through(self, fn, *a))
    # an in-process cluster: its workers are threads of this process, so the patch reaches them
    with DaskExecutor("local", workers=2, processes=False) as dask:
        method, callback = _short_run(executor=dask, budget=8)
        calls = sandbox_pool(method)
        assert isinstance(calls, SandboxedCalls) and calls.workers == 2
    assert callback.refreshes >= 1 and not callback.skipped and method.hook_errors == 0
    assert all(math.isfinite(h["metric"]) for h in callback.history), callback.history
    assert len(submitted) >= 2 * callback.refreshes  # each refresh's calls went to the cluster
    assert _recorded(method, callback) == serial


def test_a_search_limit_of_centuries_waits_as_no_limit():
    # G_in = 10^8 made the limit (the task's seconds x G_in) one no lock can wait: every refresh failed
    # with OverflowError ("timestamp out of range for platform time_t"), counted only as a hook error
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from raise_plugin.adversary.sandboxed import DeadlineExecutor

    go = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        bounded = DeadlineExecutor(pool, 6e10)
        future = bounded.submit(lambda: go.wait() and 2.0)
        threading.Timer(0.2, go.set).start()  # the result comes while the search waits for it
        assert future.result() == 2.0


@pytest.mark.parametrize("seconds", [0, 60])
def test_a_search_given_up_stops_waiting_and_is_no_failed_search(seconds):
    # a run ended at once (a second Ctrl-C) waited for its whole inner search; a search failure would
    # have recorded the refresh as skipped, never made again
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from raise_plugin.adversary.sandboxed import DeadlineExecutor, SearchAbandoned, SearchFailed

    give_up, done = threading.Event(), threading.Event()
    with ThreadPoolExecutor(1) as pool:
        bounded = DeadlineExecutor(pool, seconds, give_up)
        assert bounded.submit(lambda: 3.0).result() == 3.0  # not given up: as before
        future, waiting = bounded.submit(done.wait), bounded.submit(lambda: 1.0)
        threading.Timer(0.2, give_up.set).start()
        with pytest.raises(SearchAbandoned) as caught:
            future.result()
        assert not isinstance(caught.value, SearchFailed) and not isinstance(caught.value, Exception)
        assert waiting._future.cancelled()  # what had not started does not hold up the run's workers
        done.set()
    with ThreadPoolExecutor(1) as pool:  # a deadline still ends a search as a failure
        late = threading.Event()
        with pytest.raises(SearchFailed, match="exceeded 0.3 s"):
            DeadlineExecutor(pool, 0.3, threading.Event()).submit(late.wait).result()
        late.set()
