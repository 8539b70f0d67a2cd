"""Where compare's jobs run, on a Dask cluster that has no worker: refused before anything is written when
none joins in time, taken when one joins meanwhile, its jobs failed in one line when its workers all leave;
and a job's process that dies with the Dask worker that started it."""
from __future__ import annotations

import functools
import pickle
import signal
import subprocess
import sys
import threading
import time
import types

import pytest

from raise_plugin.cli import main
from raise_plugin.engine.executors import foreign
from raise_plugin.harness.job_place import JobFailed, JobPlace, check_place


def test_a_compare_on_a_scheduler_no_worker_joins_is_refused_in_one_line_and_writes_nothing(bare_scheduler, tmp_path,
                                                                                             capsys):
    """Its first job waited for a worker for ever."""
    address = bare_scheduler.scheduler_address

    def hung(signum, frame):
        raise AssertionError("the compare still waited after 60 s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        code = main(["compare", "--task", "ovrp", "--budget", "4", "--pop-size", "2", "--tau", "1", "--seeds", "1",
                     "--no-progress", "--executor", f"dask://{address.removeprefix('tcp://')}", "--out",
                     str(tmp_path / "c")])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0] == (f"raise-ahd: error: executor 'dask://{address.removeprefix('tcp://')}': no Dask worker joined "
                      f"the scheduler at {address} within 1 s (start one: dask worker {address} --nthreads 1), then "
                      "run the same command again")
    assert not (tmp_path / "c").exists()


def test_a_worker_that_joins_the_scheduler_in_time_is_taken(bare_scheduler, monkeypatch):
    monkeypatch.setattr(foreign, "CONNECT_SECONDS", 30.0)
    threading.Timer(0.3, bare_scheduler.scale, (1,)).start()
    check_place(f"dask://{bare_scheduler.scheduler_address.removeprefix('tcp://')}")


def test_jobs_on_a_cluster_whose_workers_all_left_fail_saying_so(bare_scheduler):
    """A compare whose workers all left waited for one for ever at the jobs it had placed."""
    bare_scheduler.scale(1)
    bare_scheduler.wait_for_workers(1, timeout=30)
    address = bare_scheduler.scheduler_address
    place = JobPlace("dask", address=address.removeprefix("tcp://"))
    try:
        bare_scheduler.scale(0)
        deadline = time.monotonic() + 30
        while place._pool.client.nthreads():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        said = (rf"^no Dask worker joined the scheduler at {address} within 1 s \(start one: dask worker {address} "
                r"--nthreads 1\)$")
        for _ in range(2):  # the job placed as they left, and one placed after
            with pytest.raises(JobFailed, match=said) as caught:
                place.submit(object()).result(timeout=30)
            assert caught.value.retry_helps
    finally:
        place.close()


def test_a_job_process_dies_with_the_dask_worker_that_started_it():
    """It lived on: a worker killed mid-job left its training run going, holding the run directory's lock, and
    the job's next attempt, on another worker, failed saying the run was in use."""
    psutil = pytest.importorskip("psutil")
    job = types.SimpleNamespace(evaluation="serial", workers=1, execute=functools.partial(time.sleep, 60))
    worker = subprocess.Popen([sys.executable, "-c", "import pickle, sys; from raise_plugin.harness import job_place; "
                               "job_place._execute_on_dask_worker(pickle.loads(sys.stdin.buffer.read()))"],
                              stdin=subprocess.PIPE)
    worker.stdin.write(pickle.dumps(job))
    worker.stdin.close()
    deadline = time.monotonic() + 60
    while not psutil.Process(worker.pid).children():
        assert time.monotonic() < deadline and worker.poll() is None
        time.sleep(0.05)
    job_process = psutil.Process(worker.pid).children()[0]
    worker.kill()
    worker.wait()
    try:
        job_process.wait(timeout=10)
    finally:
        if job_process.is_running():
            job_process.kill()


def test_dask_lines_of_a_compare_go_to_its_log_not_to_the_console(bare_scheduler, tmp_path, capfd):
    """A worker restarted, a job that failed on a worker, a client reconnecting to a scheduler gone (with its
    tracebacks): distributed's own lines were printed among the compare's."""
    import logging

    log = tmp_path / "dask_log.txt"
    place = JobPlace("dask", address=bare_scheduler.scheduler_address.removeprefix("tcp://"), log=log)
    logging.getLogger("distributed.client").error("Failed to reconnect to scheduler after 10.00 seconds")
    place.close()
    logging.getLogger("distributed.client").error("a line after the compare")
    assert capfd.readouterr().err == ""
    said = log.read_text()
    assert "distributed.client - ERROR - Failed to reconnect to scheduler after 10.00 seconds" in said
    assert "after the compare" not in said


def test_a_job_whose_dask_workers_all_died_running_it_fails_saying_so(bare_scheduler, monkeypatch):
    """It said Dask's 'Attempted to run task '_execute_on_dask_worker-90b69c5f-...' on 4 different workers, but
    all those workers died while running it. The last worker ... For more information see https://...'."""
    import concurrent.futures as cf

    from distributed.scheduler import KilledWorker

    place = JobPlace("dask", address=bare_scheduler.scheduler_address.removeprefix("tcp://"))
    try:
        died: cf.Future = cf.Future()
        died.set_exception(KilledWorker("_execute_on_dask_worker-90b69c5f",
                                        types.SimpleNamespace(address="tcp://127.0.0.1:40111"), 3))
        monkeypatch.setattr(place._pool, "submit", lambda fn, job: died)
        with pytest.raises(JobFailed, match=r"^the Dask worker running it died, on 4 workers in turn \(the last at "
                                            r"tcp://127.0.0.1:40111; its log says why\)$") as caught:
            place.submit(object()).result(timeout=30)
        assert caught.value.retry_helps
    finally:
        place.close()
