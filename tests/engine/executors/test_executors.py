"""Executors: specs, identical results on serial / process / Dask / foreign executors, sets sent once."""
from __future__ import annotations

import concurrent.futures as cf
import os
import pickle
import socket
import time

import numpy as np
import pytest

from raise_plugin.engine import (CallTimeout, Engine, FailureKind, ProcessExecutor, SandboxLimits, SerialExecutor,
                                 SourcePriority, evaluate_heuristic, make_executor)
from raise_plugin.config import ConfigError, RunConfig
from raise_plugin.engine.executors.spec import ExecutorSpecError, check_reachable
from raise_plugin.runner import start_run
from tasks.common.errors import HeuristicError

from ..conftest import BEST_FIT, FIRST_FIT, ROOMY, SHORT

PROGRAMS = [BEST_FIT, FIRST_FIT,
            "import numpy as np\n\ndef priority(item, bins):\n    return -np.abs(bins - item - 3) + 0.01 * bins\n",
            "import numpy as np\n\ndef priority(item, bins):\n    return np.full(len(bins), np.nan)\n",
            "def priority(item, bins):\n    raise KeyError('x')\n"]


def _outcomes(results):
    return [(r.kind, r.reason, [round(m, 12) if np.isfinite(m) else "nan" for m in r.metrics]) for r in results]


@pytest.fixture(scope="module")
def reference(small_instances):
    with Engine("obp", "serial", limits=ROOMY) as engine:
        return _outcomes(engine.map(PROGRAMS, small_instances))


def test_serial_results_match_direct_evaluation(task, reference, small_instances):
    direct = [round(task.evaluate(task.baselines["BestFit"], s), 12) for s in small_instances]
    assert reference[0][2] == direct and reference[0][0] == FailureKind.OK
    assert reference[3][0] == FailureKind.HEURISTIC and "non-finite" in reference[3][1]


@pytest.mark.parametrize("split", [1, 2, "instance"])
def test_process_pool_gives_the_serial_results(pool, reference, small_instances, split):
    engine = Engine("obp", pool, limits=ROOMY)
    outcomes = _outcomes([engine.evaluate(p, small_instances, split=split, stop_on_failure=False)
                          for p in PROGRAMS])
    # with stop_on_failure=False every instance has its own reason; compare the valid ones whole
    for mine, ref in zip(outcomes, reference):
        assert mine[0] == ref[0] and mine[1] == ref[1]
        if ref[0] == FailureKind.OK:
            assert mine[2] == ref[2]


def test_a_foreign_executor_gives_the_serial_results(reference, small_instances):
    with cf.ThreadPoolExecutor(2) as threads:
        engine = Engine("obp", threads, limits=ROOMY)
        assert _outcomes(engine.map(PROGRAMS, small_instances)) == reference


def test_dask_gives_the_serial_results(reference, small_instances):
    pytest.importorskip("distributed")
    from raise_plugin.engine import DaskExecutor
    with DaskExecutor("local", workers=2, processes=False, limits=ROOMY) as dask:
        engine = Engine("obp", dask, limits=ROOMY)
        assert engine.workers == 2
        assert _outcomes(engine.map(PROGRAMS, small_instances)) == reference
        assert _outcomes([engine.evaluate(p, small_instances, split=3) for p in PROGRAMS]) == reference
        assert dask.submit(pow, 2, 10).result() == 1024
        hostile = engine.evaluate("def priority(item, bins):\n    while True:\n        pass\n", small_instances,
                                  timeout=SHORT.timeout)
        assert hostile.kind == FailureKind.TIMEOUT


def test_dask_worker_processes_can_run_the_sandbox(reference, small_instances):
    """Dask's worker processes are daemons by default, and a daemon cannot start the sandbox's
    workers: the local cluster starts them as ordinary processes."""
    pytest.importorskip("distributed")
    from raise_plugin.engine import DaskExecutor
    with DaskExecutor("local", workers=1, processes=True, limits=ROOMY) as dask:
        engine = Engine("obp", dask, limits=ROOMY)
        assert _outcomes(engine.map(PROGRAMS[:2], small_instances)) == reference[:2]


def test_a_cluster_whose_worker_processes_are_daemons_runs_the_sandbox(reference, small_instances):
    """``dask worker`` starts its worker processes as daemons (Dask's default): a run's evaluations sent
    there failed, every one, with 'daemonic processes are not allowed to have children'."""
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    from raise_plugin.engine import DaskExecutor
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        assert client.run(lambda: __import__("multiprocessing").current_process().daemon) == {
            address: True for address in client.nthreads()}
        with DaskExecutor(client=client, limits=ROOMY) as dask:
            engine = Engine("obp", dask, limits=ROOMY)
            assert _outcomes(engine.map(PROGRAMS[:2], small_instances)) == reference[:2]


def test_make_executor_specs():
    serial = make_executor("serial")
    assert isinstance(serial, SerialExecutor)
    serial.shutdown()
    with make_executor("process:2", SHORT) as pool:
        assert isinstance(pool, ProcessExecutor) and pool.workers == 2 and pool.limits == SHORT
    with make_executor("process") as pool:
        assert pool.workers == len(os.sched_getaffinity(0))
    mine = cf.ThreadPoolExecutor(1)
    assert make_executor(mine) is mine
    mine.shutdown()
    for bad in ("process:x", "process:0", "dask://local:0", "dask://", "ray://x", "threads"):
        with pytest.raises(ValueError):  # process:0 and dask://local:0 started pools of the machine's size
            make_executor(bad)


def test_a_pool_asked_for_more_than_8_workers_a_core_starts_that_many_and_says_so():
    from raise_plugin.errors import SandboxNote

    most = 8 * len(os.sched_getaffinity(0))
    with pytest.warns(SandboxNote, match=rf"^{most + 1} evaluation workers asked for; {most} started, 8 per core"):
        pool = make_executor(f"process:{most + 1}")  # --workers 1000000 started workers until the machine choked
    with pool:
        assert pool.workers == most and len(pool.worker_pids()) == most


def _closed_port() -> int:
    with socket.socket() as probe:  # a port just freed: nothing listens there
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_dask_scheduler_that_does_not_answer_is_refused_in_one_line_before_a_run_writes(tmp_path):
    port = _closed_port()
    with pytest.raises(ExecutorSpecError, match=rf"^executor 'dask://127.0.0.1:{port}': no Dask scheduler answers "
                                                rf"at 127.0.0.1:{port} \(Connection refused\)$"):
        check_reachable(f"127.0.0.1:{port}")
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        check_reachable(f"tcp://127.0.0.1:{listening.getsockname()[1]}")  # something answers: no error
    for malformed in ("somehost", ":8786", "127.0.0.1:99999", "127.0.0.1:0"):  # the last three said 'PORT a number'
        with pytest.raises(ExecutorSpecError, match=rf"^executor 'dask://{malformed}': give dask://HOST:PORT with HOST "
                                                    r"the scheduler's name or address and PORT a number from 1 to "
                                                    r"65535$"):  # or, of a port past 65535, 'Connection refused'
            check_reachable(malformed)
    # a run: refused as its config is resolved, before its directory exists (it had waited on the
    # scheduler in every evaluation, silently, with its run directory written)
    config = RunConfig(task="ovrp", budget=4, pop_size=2, tau=1, out=str(tmp_path / "run"),
                       executor=f"dask://127.0.0.1:{port}")
    with pytest.raises(ConfigError, match=r"^config field 'executor': executor 'dask://127.0.0.1:\d+': no Dask"):
        start_run(config)
    assert not (tmp_path / "run").exists()
    pytest.importorskip("distributed")
    with pytest.raises(ExecutorSpecError, match="no Dask scheduler answers"):  # `evaluate` and compare's too
        make_executor(f"dask://127.0.0.1:{port}")


class _NotAScheduler:
    """A port that accepts and at once closes every connection: something answers there, but no Dask
    scheduler (an address mistyped for another service's). Counts the connections it was sent."""

    def __init__(self):
        import threading

        self.socket = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.socket.getsockname()[1]}"
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.connections += 1
            connection.close()


def test_an_address_that_answers_as_no_dask_scheduler_ends_a_run_in_one_line_before_any_llm_request(
        tmp_path, capsys, fresh_registry):
    """Such an address passed the probe; the run's engine then failed to start in every evaluation,
    each counted as an answer without a usable program, and the run stopped after ten LLM requests
    blaming the LLM. Its workers now start before the run's first event, and a place that cannot take
    programs ends the run with one line naming it; compare's jobs are refused in one line too."""
    from raise_plugin.cli import main
    from robust_helpers import SMALL_OBP

    pytest.importorskip("distributed")
    cluster = _NotAScheduler()
    said = (f"raise-ahd: error: executor 'dask://{cluster.address}': no Dask scheduler answers at {cluster.address} "
            "(it took the connection but gave no Dask scheduler's answer: a port that is not a Dask scheduler's?)")
    try:
        code = main(["run", "--task", SMALL_OBP, "--budget", "8", "--pop-size", "2", "--no-robust", "--no-progress",
                     "--executor", f"dask://{cluster.address}", "--out", str(tmp_path / "run")])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and err[-1] == said, err
        assert "Traceback" not in "\n".join(err)
        assert (tmp_path / "run" / "llm_requests.jsonl").read_text() == ""  # the LLM was asked nothing
        code = main(["compare", "--task", "ovrp", "--budget", "8", "--pop-size", "4", "--seeds", "1", "--epsilons", "",
                     "--no-progress", "--executor", f"dask://{cluster.address}", "--out", str(tmp_path / "cmp")])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and err[-1] == said, err
    finally:
        cluster.socket.close()


def test_instance_sets_are_sent_once_per_worker_and_version(task, small_instances):
    with ProcessExecutor(1, ROOMY) as pool:
        engine = Engine("obp", pool, limits=ROOMY)
        worker = pool._slots[0]
        for k in range(10):
            assert engine.evaluate(BEST_FIT.replace("-bins", f"-bins + {k}"), small_instances).valid
        assert worker.sets_sent == 1
        changed = small_instances[:2]
        assert engine.evaluate(BEST_FIT, changed).valid
        assert engine.evaluate(BEST_FIT, changed).valid
        assert worker.sets_sent == 2


def test_submit_runs_picklable_calls_in_a_worker(pool, task, small_instances):
    assert pool.submit(os.getpid).result() != os.getpid()
    with pytest.raises(ZeroDivisionError):
        pool.submit(divmod, 1, 0).result()
    priority = SourcePriority(BEST_FIT)
    again = pickle.loads(pickle.dumps(priority))
    assert again(3, np.array([5, 4])).tolist() == [-5, -4]
    expected = task.evaluate(task.baselines["BestFit"], small_instances[0])
    # in a worker a program runs only in a program process, through the judge
    assert pool.submit(evaluate_heuristic, task, priority, small_instances[0]).result() == expected
    with pytest.raises(HeuristicError, match="never called in a worker"):
        pool.submit(task.evaluate, priority, small_instances[0]).result()


def test_a_call_past_the_timeout_raises_and_the_pool_goes_on():
    # the limit covers a restarted worker's start too: generous enough for a busy machine
    with ProcessExecutor(1, SandboxLimits(timeout=3.0)) as pool:
        start = time.perf_counter()
        with pytest.raises(CallTimeout):
            pool.submit(time.sleep, 120).result()
        assert time.perf_counter() - start < 60  # killed at the limit, not after the sleep
        assert pool.submit(pow, 3, 2).result() == 9


def test_a_pool_interrupted_as_its_threads_start_leaves_none_of_them_running(monkeypatch):
    """Ctrl-C as a pool started its dispatcher threads (a compare's suite evaluation) left the ones started
    waiting on its queue for the rest of the process: a ``raise-sandbox-0`` thread after the compare ended."""
    import threading

    start, started = threading.Thread.start, []

    def interrupted_after_the_first(thread):
        if started:
            raise KeyboardInterrupt
        start(thread)
        started.append(thread)

    monkeypatch.setattr(threading.Thread, "start", interrupted_after_the_first)
    with pytest.raises(KeyboardInterrupt):
        ProcessExecutor(workers=2)
    monkeypatch.setattr(threading.Thread, "start", start)
    started[0].join(timeout=30)
    assert not started[0].is_alive()


def test_shutdown_refuses_new_work():
    pool = ProcessExecutor(1, SHORT)
    pool.shutdown()
    with pytest.raises(RuntimeError):
        pool.submit(pow, 2, 2)


def test_a_clean_interpreter_start_method_gives_the_same_results(reference, small_instances):
    limits = SandboxLimits(timeout=30, memory_mb=512, start_method="forkserver")
    with Engine("obp", "process:1", limits=limits) as engine:
        assert _outcomes(engine.map(PROGRAMS[:2], small_instances)) == reference[:2]


def test_every_tasks_baselines_give_their_direct_metrics_through_the_engine(pool):
    from raise_plugin.engine import ProgramSpec
    from tasks import get_task, list_tasks
    for name in list_tasks():
        task = get_task(name)
        instances = task.nominal_instances()[:1]
        engine = Engine(name, pool, limits=SandboxLimits(timeout=60))
        for baseline, fn in task.baselines.items():
            result = engine.evaluate(ProgramSpec(baseline=baseline), instances)
            assert result.valid, (name, baseline, result.reason)
            assert list(result.metrics) == [task.evaluate(fn, s) for s in instances]


def test_a_runs_engine_section_builds_the_engine_with_its_executor_and_sandbox():
    from raise_plugin.config import RunConfig
    from raise_plugin.engine import make_executor

    section = RunConfig(task="obp", memory_mb=300, file_mb=2, workers=1).engine
    assert SandboxLimits.of(section) == SandboxLimits(memory_mb=300, file_mb=2)
    assert SandboxLimits.of(RunConfig(task="obp").engine) == SandboxLimits()
    with Engine("obp", section) as engine:
        assert engine.workers == 1 and engine.limits == engine.executor.limits == SandboxLimits.of(section)
    with make_executor(RunConfig(task="obp", executor="serial", memory_mb=300).engine) as serial:
        assert isinstance(serial, SerialExecutor) and serial.limits.memory_mb == 300


def test_work_on_a_dask_cluster_whose_workers_all_left_fails_saying_so(bare_scheduler):
    """`evaluate` (and a run) on a cluster whose one worker died waited for ever for another."""
    from raise_plugin.engine import DaskExecutor

    bare_scheduler.scale(1)
    bare_scheduler.wait_for_workers(1, timeout=30)
    address = bare_scheduler.scheduler_address
    with DaskExecutor(address.removeprefix("tcp://")) as dask:
        bare_scheduler.scale(0)
        deadline = time.monotonic() + 30
        while dask.client.nthreads():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        said = (rf"^no Dask worker joined the scheduler at {address} within 1 s \(start one: dask worker {address} "
                r"--nthreads 1\)$")
        for _ in range(2):  # what was sent as they left, and what is sent after
            with pytest.raises(TimeoutError, match=said):
                dask.submit(pow, 3, 2).result(timeout=30)
        deadline = time.monotonic() + 30  # and no worker that joins later runs it, unseen
        while bare_scheduler.scheduler.tasks:
            assert time.monotonic() < deadline, bare_scheduler.scheduler.tasks
            time.sleep(0.05)


def test_work_dask_drops_as_its_workers_and_their_data_are_lost_says_so(monkeypatch):
    """What Dask cancels with the workers that held an instance set was reported as
    'FutureCancelledError: run_job-f23ea40a-... cancelled for reason: already forgotten.' (and kept `evaluate`
    waiting for ever); a connection lost is still Dask's cancellation, which the harness reads as that."""
    from distributed.client import FutureCancelledError

    from raise_plugin.engine import DaskExecutor

    class Dropped:
        def __init__(self, reason):
            self.reason = reason

        def add_done_callback(self, callback):
            callback(self)

        def result(self):
            raise FutureCancelledError("run_job-f23ea40a", self.reason)

    with DaskExecutor("local", workers=1, processes=False) as dask:
        monkeypatch.setattr(dask.client, "submit", lambda *args, **kwargs: Dropped("already forgotten"))
        with pytest.raises(RuntimeError, match=r"^Dask dropped it \(already forgotten\): the workers that held what "
                                               r"it needed \(its instances\) were lost$"):
            dask.submit(pow, 3, 2).result(timeout=10)
        monkeypatch.setattr(dask.client, "submit", lambda *args, **kwargs: Dropped("scheduler-connection-lost"))
        with pytest.raises(FutureCancelledError):
            dask.submit(pow, 3, 2).result(timeout=10)


def test_a_dask_executor_without_dask_installed_is_refused_in_one_line_before_a_run_or_compare_writes(tmp_path):
    """Without Dask a run with --executor dask://local was refused (exit 2) only once its run directory held a
    config.json, journals and a lock, and a compare's folder its compare.json and lock; the fix named
    'raise-plugin[dask]', which no package index holds. (In a process of its own: Dask is made missing there.)"""
    import subprocess
    import sys
    from pathlib import Path

    said = "the Dask executor needs Dask: pip install 'dask[distributed]>=2024.1'"
    tiny = ["--task", "ovrp", "--budget", "4", "--pop-size", "2", "--tau", "1", "--no-progress"]
    for command, out, line in ((["run", *tiny, "--executor", "dask://local"], tmp_path / "run",
                                f"raise-ahd: error: config field 'executor': {said}"),
                               (["compare", *tiny, "--seeds", "1", "--executor", "dask://local:2"],
                                tmp_path / "compare", f"raise-ahd: error: {said}")):
        code = ("import sys; sys.modules['distributed'] = None; from raise_plugin.cli import main; "
                f"sys.exit(main({[*command, '--out', str(out)]!r}))")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                              cwd=Path(__file__).resolve().parents[3])
        assert done.returncode == 2 and done.stderr.strip().splitlines()[-1] == line, done.stderr
        assert not out.exists()
