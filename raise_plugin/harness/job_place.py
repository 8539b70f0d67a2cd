"""Where compare's jobs run (``JobPlace``):

- ``here``: one after another in this process;
- ``local``: ``slots`` job processes on this machine, each running one job at a time;
- ``dask``: on a Dask cluster, one job per worker thread, each in a fresh Python process
  of the worker's machine.

A local job process is reused from job to job, as this process is when jobs run here: the
task's instance sets and suites are built once per process, and a run resets what the
host keeps per process (its profiler's generation counter) when it starts. On Dask a job
pays a fresh process (a few seconds of imports and suites) because Dask's worker
processes are daemons, which may not start the sandbox's worker processes.
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import logging
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

from raise_plugin.engine.executors import (DaskExecutor, ExecutorSpecError, check_spec, default_workers,
                                           parse_executor_spec, say_if_weakened, worker_width)
from raise_plugin.engine.sandbox import PR_SET_PDEATHSIG, prctl
from raise_plugin.errors import SandboxNote, UserError, one_line_warning
from raise_plugin.instance_seeds import say_fixed_nominal, say_if_no_private_key
from raise_plugin.llm import notice_said, say_notice

__all__ = ["JobPlace", "JobFailed", "default_jobs", "place_jobs", "check_place", "say_notes"]


def say_notes(task, instance_seed: str, offline: bool) -> None:
    """What each job would say of this machine's sandbox, of the offline sampler (``offline``), of a
    private ``instance_seed`` with no key to derive it from and, for runs on nominal sets of their own
    (any seed but ``public``), of a task that cannot draw one: said once by the compare, before its
    jobs; its local job processes do not say it again (``_job_process_start``)."""
    if offline:
        say_notice()
    say_if_weakened()
    say_if_no_private_key(instance_seed)
    if instance_seed != "public":
        say_fixed_nominal(task)


def _job_process_start() -> None:
    """A local job process says none of the notes its compare said before the jobs (``say_notes``),
    on this same machine, nor the offline sampler's notice, which the compare said too."""
    warnings.simplefilter("ignore", SandboxNote)
    warnings.showwarning = one_line_warning  # as the command line shows them (a fork server's process has Python's)
    notice_said()


class JobFailed(UserError):
    """A job raised in a job process; the message is one line (and pickles, unlike some errors).
    ``retry_helps``: whether running it again may help, as for the error it stands for (not for a
    ``UserError``: the job's settings or task cause it)."""

    def __init__(self, message: str, retry_helps: bool = False):
        super().__init__(message)
        self.retry_helps = retry_helps

    def __reduce__(self):
        return (JobFailed, (str(self), self.retry_helps))


def _execute(job):
    """A job in a job process: any failure comes back as a one-line ``JobFailed``."""
    try:
        return job.execute()
    except UserError as exc:
        raise JobFailed(str(exc), retry_helps=getattr(exc, "retry_helps", False)) from None
    except Exception as exc:  # noqa: BLE001 - reported to the client in one line
        helps = getattr(exc, "retry_helps", None)  # an error that says whether a retry helps says itself in words
        said = str(exc) if helps is not None else f"{type(exc).__name__}: {exc}"
        raise JobFailed(said, retry_helps=helps is not False) from None


def _execute_on_dask_worker(job):
    """A job on a Dask worker: in a fresh Python process of the worker's machine, evaluating on
    the worker's threads. Dask's worker processes are daemons by default and may not start the
    sandbox's worker processes; the job's own process may, and keeps the worker's state apart."""
    if job.evaluation is None and job.workers is None:
        job = dataclasses.replace(job, workers=worker_width())
    with tempfile.TemporaryDirectory(prefix="raise-job-") as tmp:
        given, taken, log = Path(tmp) / "job.pickle", Path(tmp) / "outcome.pickle", Path(tmp) / "stderr.log"
        given.write_bytes(pickle.dumps(job))
        with open(log, "wb") as err:
            code = subprocess.call([sys.executable, "-m", "raise_plugin.harness.job_place", str(given), str(taken),
                                    str(os.getpid())], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        if taken.exists():
            ok, value = pickle.loads(taken.read_bytes())
            if ok:
                return value
            raise JobFailed(*value)
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
        raise JobFailed(f"its process exited with status {code}" + (f": {lines[-1].strip()}" if lines else ""))


def _job_process_main(given: str, taken: str, worker: str) -> int:
    """The job process a Dask worker (process id ``worker``) starts: the job from ``given``, ``(ok, outcome or
    message)`` to ``taken``. What it says goes to its worker's log, on its own machine: its notes are its
    machine's, and kept. It dies with its worker: one that lived on (its worker killed, its job sent to another)
    held the run directory's lock, and the job's next attempt failed saying the run was in use."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != int(worker):  # its worker died before it could say so
        return 1
    job = pickle.loads(Path(given).read_bytes())
    try:
        outcome = (True, _execute(job))
    except JobFailed as exc:
        outcome = (False, (str(exc), exc.retry_helps))
    Path(taken).write_bytes(pickle.dumps(outcome))
    return 0 if outcome[0] else 1


def _job_process_context():
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["raise_plugin.harness.job_place", "raise_plugin.harness.compare_jobs",
                                         "raise_plugin.runner"])
        return context
    return multiprocessing.get_context("spawn")


class JobPlace:
    """Where compare's jobs run: ``here`` (this process, one at a time), ``local`` (``slots``
    processes on this machine) or ``dask`` (a cluster at ``address``; ``("local", N)`` starts a
    LocalCluster of N one-thread worker processes on this machine)."""

    def __init__(self, kind: str, slots: int = 1, address=None, log: Path | None = None):
        if kind not in ("here", "local", "dask"):
            raise ValueError(f"unknown job place {kind!r}")
        self.kind = kind
        self._pool = None
        self._log = None
        if kind == "here":
            self.slots = 1
        elif kind == "local":
            self.slots = max(1, int(slots))
            # forked from a clean server, not from this process and its threads
            self._pool = cf.ProcessPoolExecutor(self.slots, mp_context=_job_process_context(),
                                                initializer=_job_process_start)
        else:
            if log is not None:  # Dask's own lines, off the console (executors.off_console), appended there
                self._log = logging.FileHandler(log, delay=True)
                self._log.setFormatter(logging.Formatter("%(asctime)s - %(name)s - %(levelname)s - %(message)s"))
                logging.getLogger("distributed").addHandler(self._log)
            try:
                if isinstance(address, tuple):
                    self._pool = DaskExecutor("local", workers=address[1])
                else:
                    self._pool = DaskExecutor(address)
            except BaseException:
                self._stop_log()
                raise
            self.slots = self._pool.workers
            self._address = self._pool.client.scheduler.address

    def describe(self) -> str:
        if self.kind == "here":
            return "one at a time in this process"
        if self.kind == "local":
            return f"{self.slots} at once in job processes on this machine"
        return f"on the Dask cluster at {self._address} ({self.slots} at once)"

    def submit(self, job) -> cf.Future:
        if self.kind == "here":
            future: cf.Future = cf.Future()
            try:
                future.set_result(job.execute())
            except Exception as exc:  # noqa: BLE001 - delivered through the future
                future.set_exception(exc)
            return future
        if self.kind == "local":
            return self._pool.submit(_execute, job)
        return self._on_cluster(job)

    def _on_cluster(self, job) -> cf.Future:
        """``job`` on the Dask cluster. Once the client has lost its scheduler (reconnecting, or closed
        for good) no job is sent: Dask keeps one sent while its client closes waiting for ever. Such a
        job fails, as one under way when the connection goes does, saying the scheduler went away."""
        mirrored: cf.Future = cf.Future()
        if self._pool.client.status != "running":
            mirrored.set_exception(self._lost())
            return mirrored

        def settle(done: cf.Future) -> None:
            failure = done.exception()
            if isinstance(failure, cf.CancelledError):  # what Dask makes of the jobs it held when the connection went
                failure = self._lost()
            elif isinstance(failure, TimeoutError):  # the cluster had no worker for as long as it may take to answer
                failure = JobFailed(str(failure), retry_helps=True)
            elif type(failure).__name__ == "KilledWorker":  # Dask's words name its task's key and link its docs
                failure = JobFailed(f"the Dask worker running it died, on {failure.allowed_failures + 1} workers in "
                                    f"turn (the last at {failure.last_worker.address}; its log says why)",
                                    retry_helps=True)
            if failure is None:
                mirrored.set_result(done.result())
            else:
                mirrored.set_exception(failure)

        self._pool.submit(_execute_on_dask_worker, job).add_done_callback(settle)
        return mirrored

    def _lost(self) -> JobFailed:
        return JobFailed(f"the connection to the Dask scheduler at {self._address} was lost", retry_helps=True)

    def _stop_log(self) -> None:
        if self._log is not None:
            logging.getLogger("distributed").removeHandler(self._log)
            self._log.close()

    def close(self, interrupted: bool = False) -> None:
        if self._pool is None:
            return
        if self.kind == "dask":
            try:
                self._pool.shutdown(wait=not interrupted)
            finally:
                self._stop_log()
            return
        if interrupted and self.kind == "local":
            # the jobs under way stop where they are; their run directories' checkpoints stay
            for process in list(getattr(self._pool, "_processes", {}).values()):
                if process.is_alive():
                    process.terminate()
            self._pool.shutdown(wait=False, cancel_futures=True)
            return
        self._pool.shutdown(wait=not interrupted)


def default_jobs(cores: int | None = None) -> int:
    """Training and evaluation jobs at once in local processes: half the cores, at least one.

    Each job evaluates its programs on ``cores // jobs`` sandboxed workers, so the machine
    holds about one evaluation per core whatever the number of jobs; two or more jobs fill
    the time one run spends outside evaluation (sampling, selection, bookkeeping, its inner
    search on one worker), and half the cores keeps each run's evaluations spread over at
    least two workers on machines with four cores or more."""
    cores = default_workers() if cores is None else cores
    return max(1, cores // 2)


def check_place(executor: str | None) -> None:
    """A ``UserError`` when ``executor`` names a Dask scheduler that does not answer, or that no worker
    joins within the time it may take to answer (a worker that joins meanwhile is taken): said before a
    compare writes anything, where its first job had waited for a worker for ever."""
    try:
        kind, address = check_spec(executor)
        if kind == "dask" and isinstance(address, str):
            cluster = DaskExecutor(address)
            try:
                cluster.wait_for_worker()
            finally:
                cluster.shutdown()
    except ExecutorSpecError as exc:
        raise UserError(str(exc)) from None
    except TimeoutError as exc:
        raise UserError(f"executor {executor!r}: {exc}, then run the same command again") from None


def place_jobs(executor: str | None, jobs: int | None, workers: int | None,
               log: Path | None = None) -> tuple[JobPlace, str | None, int | None]:
    """Where the jobs run, and the evaluation executor spec and workers each job uses.

    ``serial``: one job at a time in this process, evaluating in one sandboxed worker.
    ``process[:N]`` (the default): ``jobs`` at once, each in its own process (with one job,
    in this process), each evaluating on N workers (``workers``; by default its share of
    the cores). ``dask://...``: every job on the cluster, evaluating on the workers of the
    machine it lands on (its Dask worker's threads), Dask's own lines appended to ``log``."""
    kind, arg = parse_executor_spec(executor)
    if kind == "serial":
        return JobPlace("here"), "serial", None
    if kind == "dask":
        return JobPlace("dask", address=arg, log=log), None, workers
    jobs = jobs or default_jobs()
    workers = arg or workers
    if jobs == 1:
        return JobPlace("here"), None, workers  # None: the engine's default, one worker per core
    return JobPlace("local", jobs), None, workers or max(1, default_workers() // jobs)


if __name__ == "__main__":
    sys.exit(_job_process_main(*sys.argv[1:4]))
