"""Compare's work as independent jobs: one per training run, one per suite evaluation.

A job is a small frozen record with an ``execute()`` method that returns its outcome as
data. ``run_jobs`` keeps as many jobs under way as its place has slots, prints one line
when a job starts and one when it ends, and hands each outcome to a follow-up that may
queue more jobs (a finished training run queues the evaluation of its best program).

Where jobs run (``JobPlace``):

- ``here``: one after another in this process;
- ``local``: ``slots`` job processes on this machine, each running one job at a time;
- ``dask``: on a Dask cluster, one job per worker thread, each in a fresh Python process
  of the worker's machine.

A local job process is reused from job to job, as this process is when jobs run here: the
task's instance sets and suites are built once per process, and a run resets what the
host keeps per process (its profiler's generation counter) when it starts. On Dask a job
pays a fresh process (a few seconds of imports and suites) because Dask's worker
processes are daemons, which may not start the sandbox's worker processes.

A training job writes its run directory straight into ``OUT/runs`` when the worker sees
the client's disk (it finds the client's token in ``OUT/.compare-token``); otherwise it
trains in a scratch folder of its own machine and ships the finished run directory back
as a tar archive, which the client unpacks under ``OUT/runs``. A job that is interrupted
leaves its run directory's checkpoint behind, and the next attempt resumes from it.
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import functools
import io
import json
import shutil
import socket
import tarfile
import tempfile
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from raise_plugin.errors import UserError
from raise_plugin.harness.suite_eval import Heuristic, evaluate_suite

__all__ = ["TrainJob", "EvalJob", "TrainOutcome", "EvalOutcome", "JobRecord", "JobPlace", "run_jobs",
           "run_finished", "suite_datasets", "client_token", "pack_run", "unpack_run", "JobFailed", "ROW_FIELDS"]

ROW_FIELDS = ["method", "variant", "kind", "seed", "dataset", "family", "params", "instance", "metric", "valid",
              "reason"]
TOKEN_FILE = ".compare-token"
_LOCK_NAME = "lock"  # the run directory's advisory lock file (raise_plugin.rundir.lock.LOCK_NAME): never shipped


# -- jobs ---------------------------------------------------------------------------------------

@dataclass
class TrainOutcome:
    name: str
    status: str                 # "trained", "resumed" or "finished before"
    seconds: float
    samples: int | None = None
    refreshes: int = 0
    best_score: float | None = None
    host: str = ""
    archive: bytes | None = None  # the run directory as a tar.gz, when the worker does not share the disk

    def summary(self) -> str:
        best = "none" if self.best_score is None else f"{self.best_score:.4f}"
        return f"{self.status}, {self.samples} samples, {self.refreshes} refreshes, best robust score {best} (minus the metric: higher is better)"


@dataclass
class EvalOutcome:
    name: str
    rows: list[dict]
    seconds: float
    host: str = ""

    def summary(self) -> str:
        invalid = sum(1 for r in self.rows if not r["valid"])
        return f"{len(self.rows)} instances" + (f", {invalid} invalid" if invalid else "")


@dataclass(frozen=True)
class TrainJob:
    """Train (or resume) one run: ``run`` holds its ``RunConfig`` fields but ``out`` and ``executor``."""

    name: str                    # the run directory's name under OUT/runs
    label: str                   # what progress lines call it
    run: tuple                   # sorted (field, value) pairs of the RunConfig
    out: str                     # compare's output folder, absolute, as the client sees it
    token: str                   # the client's token (see ``client_token``)
    ship: bool | None = None     # ship the run directory back; None: when the worker does not see OUT
    evaluation: str | None = None  # executor spec the run evaluates programs with
    workers: int | None = None   # else: process:workers (None: the engine's default; a Dask worker's threads)

    kind = "train"

    def execute(self) -> TrainOutcome:
        ship = self.ship if self.ship is not None else not _sees_client_disk(self.out, self.token)
        root = _scratch(self.token) if ship else Path(self.out) / "runs"
        outcome = train_run(root / self.name, dict(self.run), _evaluation_spec(self.evaluation, self.workers))
        if ship:
            outcome.archive = pack_run(root / self.name)
        return outcome


@dataclass(frozen=True)
class EvalJob:
    """One heuristic on the task's test suite (at most ``suite_instances`` instances per dataset)."""

    name: str                    # results/<name>.csv on the client
    label: str
    task: str
    heuristic: Heuristic
    suite_instances: int | None
    fields: tuple                # (method, variant, kind, seed) of every row
    evaluation: str | None = None
    workers: int | None = None
    progress: bool = False

    kind = "evaluate"

    def execute(self) -> EvalOutcome:
        started = time.time()
        suite = suite_datasets(self.task, self.suite_instances)
        spec = _evaluation_spec(self.evaluation, self.workers)
        found = evaluate_suite(self.task, [self.heuristic], suite, executor=spec, progress=self.progress)
        method, variant, kind, seed = self.fields
        rows = [{"method": method, "variant": variant, "kind": kind, "seed": seed, "dataset": r.dataset,
                 "family": r.family, "params": r.params, "instance": r.instance, "metric": r.metric,
                 "valid": r.valid, "reason": r.reason} for r in found]
        return EvalOutcome(self.name, rows, time.time() - started, socket.gethostname())


@functools.lru_cache(maxsize=4)  # a job process evaluates many heuristics on one suite
def suite_datasets(task: str, per_dataset: int | None = None) -> list:
    """The task's test suite, at most ``per_dataset`` instances of each dataset (all by default)."""
    from tasks import get_task
    from tasks.common.suite import Dataset
    suite = get_task(task).test_suite()
    if per_dataset is not None:
        suite = [Dataset(d.family, d.params, d.instances[:per_dataset]) for d in suite]
    return suite


def _evaluation_spec(evaluation: str | None, workers: int | None) -> str | None:
    if evaluation is not None:
        return evaluation
    return None if workers is None else f"process:{workers}"


def run_finished(path: Path) -> bool:
    """Whether the run directory ``path`` holds a run that reached its end."""
    try:
        return bool(json.loads((Path(path) / "summary.json").read_text()).get("finished"))
    except (OSError, ValueError):
        return False


def train_run(path: Path, run: dict, evaluation: str | None) -> TrainOutcome:
    """The run in ``path``, trained from ``run`` (RunConfig fields), resumed from its checkpoint
    when it was interrupted, or left alone when it finished before."""
    from raise_plugin import runner
    from raise_plugin.config import RunConfig

    started = time.time()
    if run_finished(path):
        status = "finished before"
    elif (path / "config.json").exists():
        status = "resumed"
        # the recorded evaluation executor may name another machine's share of cores; results do not depend on it
        runner.resume_run(path, **({"executor": evaluation} if evaluation else {})).run()
    else:
        status = "trained"
        runner.start_run(RunConfig(**{**run, "out": str(path), "executor": evaluation})).run()
    data = json.loads((path / "summary.json").read_text()) if (path / "summary.json").exists() else {}
    best = (data.get("best") or {}).get("robust_score")
    return TrainOutcome(path.name, status, time.time() - started, data.get("samples"), data.get("refreshes") or 0,
                        best, socket.gethostname())


# -- run directories across machines ------------------------------------------------------------

def client_token(out: Path) -> str:
    """The token a worker must read in ``OUT/.compare-token`` to write into ``OUT`` directly
    (created once per output folder, so a resumed compare finds its workers' scratch folders)."""
    path = Path(out) / TOKEN_FILE
    try:
        token = path.read_text().strip()
    except FileNotFoundError:
        token = ""
    if not token:
        token = uuid.uuid4().hex
        path.write_text(token + "\n")
    return token


def _sees_client_disk(out: str, token: str) -> bool:
    try:
        return (Path(out) / TOKEN_FILE).read_text().strip() == token
    except OSError:
        return False


def _scratch(token: str) -> Path:
    """Where a worker that does not share the client's disk keeps its run directories
    (kept after shipping, so an interrupted job resumes there on the same machine)."""
    path = Path(tempfile.gettempdir()) / f"raise-compare-{token}" / "runs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def pack_run(path: Path) -> bytes:
    """The run directory ``path`` as a tar.gz (its lock file left out)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for item in sorted(Path(path).rglob("*")):
            relative = item.relative_to(path)
            if relative.parts == (_LOCK_NAME,):
                continue
            tar.add(item, arcname=str(relative), recursive=False)
    return buffer.getvalue()


def unpack_run(archive: bytes, dest: Path) -> None:
    """Unpack a shipped run directory at ``dest``, replacing whatever partial copy was there."""
    dest = Path(dest)
    staging = dest.with_name(f".{dest.name}.unpacking")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        tar.extractall(staging, filter="data")
    if dest.exists():
        shutil.rmtree(dest)
    staging.rename(dest)


# -- where jobs run -----------------------------------------------------------------------------

class JobFailed(UserError):
    """A job raised in a job process; the message is one line (and pickles, unlike some errors)."""


def _execute(job):
    """A job in a job process: any failure comes back as a one-line ``JobFailed``."""
    try:
        return job.execute()
    except UserError as exc:
        raise JobFailed(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - reported to the client in one line
        raise JobFailed(f"{type(exc).__name__}: {exc}") from None


def _execute_on_dask_worker(job):
    """A job on a Dask worker: in a fresh Python process of the worker's machine, evaluating on
    the worker's threads. Dask's worker processes are daemons by default and may not start the
    sandbox's worker processes; the job's own process may, and keeps the worker's state apart."""
    import pickle
    import subprocess
    import sys
    if job.evaluation is None and job.workers is None:
        from raise_plugin.engine.executors import worker_width
        job = dataclasses.replace(job, workers=worker_width())
    with tempfile.TemporaryDirectory(prefix="raise-job-") as tmp:
        given, taken, log = Path(tmp) / "job.pickle", Path(tmp) / "outcome.pickle", Path(tmp) / "stderr.log"
        given.write_bytes(pickle.dumps(job))
        with open(log, "wb") as err:
            code = subprocess.call([sys.executable, "-m", "raise_plugin.harness.jobs", str(given), str(taken)],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        if taken.exists():
            ok, value = pickle.loads(taken.read_bytes())
            if ok:
                return value
            raise JobFailed(value)
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
        raise JobFailed(f"its process exited with status {code}" + (f": {lines[-1].strip()}" if lines else ""))


def _job_process_main(given: str, taken: str) -> int:
    """The job process a Dask worker starts: the job from ``given``, ``(ok, outcome or message)`` to ``taken``."""
    import pickle
    job = pickle.loads(Path(given).read_bytes())
    try:
        outcome = (True, _execute(job))
    except JobFailed as exc:
        outcome = (False, str(exc))
    Path(taken).write_bytes(pickle.dumps(outcome))
    return 0 if outcome[0] else 1


def _job_process_context():
    import multiprocessing
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["raise_plugin.harness.jobs", "raise_plugin.runner"])
        return context
    return multiprocessing.get_context("spawn")


class JobPlace:
    """Where compare's jobs run: ``here`` (this process, one at a time), ``local`` (``slots``
    processes on this machine) or ``dask`` (a cluster at ``address``; ``("local", N)`` starts a
    LocalCluster of N one-thread worker processes on this machine)."""

    def __init__(self, kind: str, slots: int = 1, address=None):
        if kind not in ("here", "local", "dask"):
            raise ValueError(f"unknown job place {kind!r}")
        self.kind = kind
        self._pool = None
        if kind == "here":
            self.slots = 1
        elif kind == "local":
            self.slots = max(1, int(slots))
            # forked from a clean server, not from this process and its threads
            self._pool = cf.ProcessPoolExecutor(self.slots, mp_context=_job_process_context())
        else:
            from raise_plugin.engine.executors import DaskExecutor
            if isinstance(address, tuple):
                self._pool = DaskExecutor("local", workers=address[1])
            else:
                self._pool = DaskExecutor(address)
            self.slots = self._pool.workers

    def describe(self) -> str:
        if self.kind == "here":
            return "one at a time in this process"
        if self.kind == "local":
            return f"{self.slots} at once in job processes on this machine"
        return f"on the Dask cluster at {self._pool.client.scheduler.address} ({self.slots} at once)"

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
        return self._pool.submit(_execute_on_dask_worker, job)

    def close(self, interrupted: bool = False) -> None:
        if self._pool is None:
            return
        if interrupted and self.kind == "local":
            # the jobs under way stop where they are; their run directories' checkpoints stay
            for process in list(getattr(self._pool, "_processes", {}).values()):
                if process.is_alive():
                    process.terminate()
            self._pool.shutdown(wait=False, cancel_futures=True)
            return
        self._pool.shutdown(wait=not interrupted)


# -- the queue ----------------------------------------------------------------------------------

@dataclass
class JobRecord:
    """What happened to one job: ``status`` is ``done`` or ``failed``; ``seconds`` is wall time
    from its start to its end as the client saw it, ``work`` the job's own time."""

    name: str
    kind: str
    label: str
    status: str
    seconds: float
    work: float | None = None
    host: str = ""
    error: str = ""
    outcome: object = field(default=None, repr=False)


def run_jobs(place: JobPlace, jobs: Iterable, then: Callable[[object, object], list] | None = None,
             say: Callable[[str], None] = print, planned: int | None = None) -> list[JobRecord]:
    """Run ``jobs`` (and the jobs ``then(job, outcome)`` adds) at ``place``, ``place.slots`` at
    a time, in the order given; one line per job started and per job ended. A failed job is
    recorded and the others go on."""
    pending = deque(jobs)
    total = planned if planned is not None else len(pending)
    running: dict[cf.Future, tuple[int, object, float]] = {}
    records: list[JobRecord] = []
    started_count = 0

    def width() -> int:
        return len(str(max(total, started_count)))

    interrupted = True
    try:
        while pending or running:
            while pending and len(running) < place.slots:
                job = pending.popleft()
                started_count += 1
                total = max(total, started_count)
                say(f"[{started_count:>{width()}}/{total}] started  {job.kind} {job.label}")
                begun = time.time()
                future = place.submit(job)
                running[future] = (started_count, job, begun)
            done, _ = cf.wait(list(running), return_when=cf.FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: running[f][0]):
                number, job, begun = running.pop(future)
                seconds = time.time() - begun
                try:
                    outcome = future.result()
                except Exception as exc:  # noqa: BLE001 - one job's failure does not stop the others
                    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    records.append(JobRecord(job.name, job.kind, job.label, "failed", seconds, error=message))
                    say(f"[{number:>{width()}}/{total}] FAILED   {job.kind} {job.label} after {seconds:.1f} s: "
                        f"{message}")
                    continue
                records.append(JobRecord(job.name, job.kind, job.label, "done", seconds,
                                         getattr(outcome, "seconds", None), getattr(outcome, "host", ""),
                                         outcome=outcome))
                where = f" on {outcome.host}" if place.kind == "dask" and getattr(outcome, "host", "") else ""
                say(f"[{number:>{width()}}/{total}] finished {job.kind} {job.label} in {seconds:.1f} s{where}: "
                    f"{outcome.summary()}")
                if then is not None:
                    follow = list(then(job, outcome) or ())
                    pending.extend(follow)
        interrupted = False
    finally:
        place.close(interrupted=interrupted)
    return records


if __name__ == "__main__":
    import sys
    sys.exit(_job_process_main(*sys.argv[1:3]))
