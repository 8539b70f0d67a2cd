"""Executors: any object with ``submit(fn, *args) -> Future``; ours also take jobs.

``ProcessExecutor`` (default) keeps sandboxed worker processes sized to the machine;
``SerialExecutor`` runs one thing at a time; ``DaskExecutor`` fans out to a Dask cluster
(``pip install 'raise-plugin[dask]'``). ``make_executor(spec)`` builds one from
``"serial"``, ``"process"``, ``"process:N"``, ``"dask://local"``, ``"dask://local:N"`` or
``"dask://HOST:PORT"``. Jobs (a program on an instance set) go through ``submit_job``
where an executor has it, which sends each instance set once per worker and version;
a foreign executor (a ``concurrent.futures`` pool, a Dask ``Client``) gets
``submit(run_job, job, instance_set, limits)``, which runs the job in a sandbox local to
wherever it lands.
"""
from __future__ import annotations

import concurrent.futures as cf
import os
import queue
import threading
import weakref
from typing import Any, Callable

from raise_plugin.errors import UserError

from .compiled_tally import CompiledTally
from .jobs import InstanceSet, Job
from .limits import SandboxLimits
from .results import EvalResult, FailureKind
from .worker_handle import SandboxWorker

__all__ = ["ProcessExecutor", "SerialExecutor", "DaskExecutor", "SandboxedCalls", "make_executor", "run_job",
           "run_call", "default_workers", "executor_workers", "worker_width"]


def default_workers() -> int:
    """Cores this process may use."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def executor_workers(executor) -> int:
    """How many evaluations ``executor`` runs at once (1 when it does not say)."""
    n = getattr(executor, "workers", None)
    if n is None:
        n = getattr(executor, "_max_workers", None)
    try:
        return max(1, int(n))
    except (TypeError, ValueError):
        return 1


def _run_with_retries(worker: SandboxWorker, job: Job, instance_set: InstanceSet, retries: int) -> EvalResult:
    """A job whose worker died runs again on a fresh worker, up to ``retries`` times."""
    result = worker.run_job(job, instance_set)
    attempts = 1
    while result.kind == FailureKind.WORKER_DIED and attempts <= retries:
        result = worker.run_job(job, instance_set)
        attempts += 1
    if result.kind == FailureKind.WORKER_DIED and attempts > 1:
        reason = f"{result.reason} ({attempts} attempts)"
        result = EvalResult.failed(len(result.metrics), result.kind, reason, result.seconds, result.worker)
    return result


def _done(value=None, exc: BaseException | None = None) -> cf.Future:
    fut: cf.Future = cf.Future()
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(value)
    return fut


class ProcessExecutor:
    """A pool of ``workers`` sandboxed worker processes (default: one per core).

    ``submit(fn, *args, **kwargs)`` runs a picklable function in a worker under the same
    limits (``limits.timeout`` applies; ``CallTimeout`` / ``WorkerDied`` on failure);
    ``submit_job(job, instance_set)`` runs a job and always returns an ``EvalResult``.
    Thread-safe. Each worker is owned by one dispatcher thread, which replaces it when it
    dies or is killed.
    """

    def __init__(self, workers: int | None = None, limits: SandboxLimits | None = None):
        self.limits = limits or SandboxLimits()
        self.workers = default_workers() if workers is None else int(workers)
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers!r}")
        self.compiled = CompiledTally()  # the compiled path's programs (``limits.jit``)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._slots = [SandboxWorker(self.limits) for _ in range(self.workers)]
        self._closed = False
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._serve, args=(slot,), daemon=True,
                                          name=f"raise-sandbox-{i}") for i, slot in enumerate(self._slots)]
        for t in self._threads:
            t.start()
        self._finalizer = weakref.finalize(self, _stop_all, self._queue, self._slots, self._threads)

    # -- the executor interface ------------------------------------------------------------------
    def submit(self, fn: Callable, /, *args, **kwargs) -> cf.Future:
        return self._put("call", (fn, args, kwargs, self.limits.timeout))

    def submit_job(self, job: Job, instance_set: InstanceSet) -> cf.Future:
        return self._put("job", (job, instance_set))

    def map(self, fn: Callable, *iterables) -> list:
        futures = [self.submit(fn, *args) for args in zip(*iterables)]
        return [f.result() for f in futures]

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if cancel_futures:
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[0].cancel()
        for _ in self._threads:
            self._queue.put(None)
        if wait:
            for t in self._threads:
                t.join()

    def worker_pids(self) -> list[int | None]:
        """Process ids of the current workers (a worker not yet started shows ``None``)."""
        return [slot.pid for slot in self._slots]

    def restarts(self) -> int:
        """How many times workers were started beyond the first time."""
        return sum(max(0, slot.started - 1) for slot in self._slots)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()

    def __repr__(self) -> str:
        return f"<ProcessExecutor {self.workers} workers, {self.limits.method}>"

    # -- internals -------------------------------------------------------------------------------
    def _put(self, kind: str, payload: tuple) -> cf.Future:
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot submit to an executor that was shut down")
            fut: cf.Future = cf.Future()
            self._queue.put((fut, kind, payload))
        return fut

    def _serve(self, slot: SandboxWorker) -> None:
        try:
            slot.ensure()  # start from this long-lived thread (the worker dies with its starter)
        except Exception:  # noqa: BLE001 - retried at the first job
            pass
        while True:
            item = self._queue.get()
            if item is None:
                break
            fut, kind, payload = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                if kind == "job":
                    value = _run_with_retries(slot, payload[0], payload[1], self.limits.retries)
                    self.compiled.record(payload[0], value)
                else:
                    fn, args, kwargs, timeout = payload
                    value = slot.call(fn, args, kwargs, timeout)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                fut.set_exception(exc)
            else:
                fut.set_result(value)
            if slot.process is None:  # killed (timeout, memory, tampering): replace it now
                try:
                    slot.ensure()
                except Exception:  # noqa: BLE001 - retried at the next job
                    pass
        slot.stop()


def _stop_all(q, slots, threads) -> None:
    for _ in threads:
        q.put(None)
    for slot in slots:
        try:
            slot.kill()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass


class SerialExecutor:
    """One thing at a time, in the caller's thread, in submission order.

    Jobs run in one sandboxed worker; plain ``submit(fn, ...)`` calls run in the caller's
    process (they are the caller's own code).
    """

    workers = 1

    def __init__(self, limits: SandboxLimits | None = None):
        self.limits = limits or SandboxLimits()
        self._worker = SandboxWorker(self.limits)
        self.compiled = CompiledTally()  # the compiled path's programs (``limits.jit``)
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, self._worker.kill)

    def submit(self, fn: Callable, /, *args, **kwargs) -> cf.Future:
        try:
            return _done(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - delivered through the future
            return _done(exc=exc)

    def submit_sandboxed(self, fn: Callable, /, *args, **kwargs) -> cf.Future:
        """``fn(*args, **kwargs)`` in the sandboxed worker (where it evaluates programs, its judge
        runs them), not in the caller's process."""
        with self._lock:
            try:
                return _done(self._worker.call(fn, args, kwargs, self.limits.timeout))
            except BaseException as exc:  # noqa: BLE001 - delivered through the future
                return _done(exc=exc)

    def submit_job(self, job: Job, instance_set: InstanceSet) -> cf.Future:
        with self._lock:
            result = _run_with_retries(self._worker, job, instance_set, self.limits.retries)
            self.compiled.record(job, result)
            return _done(result)

    def worker_pids(self) -> list[int | None]:
        return [self._worker.pid]

    def shutdown(self, wait: bool = True, **_) -> None:
        with self._lock:
            self._worker.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()

    def __repr__(self) -> str:
        return "<SerialExecutor>"


# -- jobs on executors that are not ours ------------------------------------------------------

_local_pools: dict[SandboxLimits, ProcessExecutor] = {}
_local_lock = threading.Lock()


def _local_width() -> int:
    try:
        from distributed import get_worker  # only inside a Dask worker
        worker = get_worker()
        state = getattr(worker, "state", worker)
        return max(1, int(getattr(state, "nthreads", None) or getattr(worker, "nthreads")))
    except Exception:  # noqa: BLE001 - not in a Dask worker, or an older Dask
        return default_workers()


def worker_width() -> int:
    """How many evaluations this process should run at once for work of its own (a whole
    training run submitted as one job): the threads of its Dask worker inside one, else every
    core it may use."""
    return _local_width()


def local_executor(limits: SandboxLimits) -> ProcessExecutor:
    """This process's own sandbox pool (one per set of limits), created on first use."""
    with _local_lock:
        pool = _local_pools.get(limits)
        if pool is None:
            pool = _local_pools[limits] = ProcessExecutor(_local_width(), limits)
        return pool


def run_job(job: Job, instance_set: InstanceSet, limits: SandboxLimits | None = None) -> EvalResult:
    """Run ``job`` in a sandbox of the process this is called in (the function foreign
    executors are given). Workers of that process keep ``instance_set`` by id and version."""
    return local_executor(limits or SandboxLimits()).submit_job(job, instance_set).result()


def run_call(fn: Callable, args: tuple, kwargs: dict, limits: SandboxLimits | None = None):
    """``fn(*args, **kwargs)`` in a sandboxed worker of the process this is called in, under
    ``limits`` (what ``SandboxedCalls`` hands a foreign executor); raises what the call raised,
    ``CallTimeout`` or ``WorkerDied``."""
    return local_executor(limits or SandboxLimits()).submit(fn, *args, **kwargs).result()


class SandboxedCalls:
    """A foreign executor's ``submit`` whose calls run in a sandbox local to wherever they land
    (``run_call``): the call interface of a ``ProcessExecutor`` (``submit``, ``workers``,
    ``limits``) on a Dask cluster, for calls that run generated code."""

    def __init__(self, executor, limits: SandboxLimits):
        self._executor = executor
        self.limits = limits

    @property
    def workers(self) -> int:
        return executor_workers(self._executor)

    def submit(self, fn: Callable, /, *args, **kwargs) -> cf.Future:
        return self._executor.submit(run_call, fn, args, kwargs, self.limits)

    def __repr__(self) -> str:
        return f"<SandboxedCalls on {self._executor!r}>"


# -- Dask -------------------------------------------------------------------------------------

class DaskExecutor:
    """Evaluation on a Dask cluster: ``address`` ``"local"`` starts a LocalCluster on
    127.0.0.1 (``workers`` processes, one thread each, or threads in this process with
    ``processes=False``); otherwise ``"HOST:PORT"`` / ``"tcp://HOST:PORT"`` of a scheduler.
    Or pass an existing ``client``. Instance sets are scattered once per version; each job
    runs in a sandbox pool local to its Dask worker. Needs ``pip install 'raise-plugin[dask]'``.
    """

    def __init__(self, address: str | None = "local", *, workers: int | None = None,
                 limits: SandboxLimits | None = None, client=None, processes: bool = True):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ExecutorSpecError("the Dask executor needs Dask: pip install 'raise-plugin[dask]'") from None
        self.limits = limits or SandboxLimits()
        self._cluster = None
        self._own_client = client is None
        if client is not None:
            self.client = client
        elif address in (None, "", "local"):
            network = {"host": "127.0.0.1"} if processes else {}  # in-process clusters use no sockets
            # the scheduler's HTTP endpoint (health, metrics) on a free local port, not 0.0.0.0:8787
            import dask
            # worker processes must not be daemons: the sandbox starts processes of its own in them
            with dask.config.set({"distributed.worker.daemon": False}):
                self._cluster = LocalCluster(n_workers=workers or default_workers(), threads_per_worker=1,
                                             processes=processes, dashboard_address="127.0.0.1:0", **network)
            self.client = Client(self._cluster)
        else:
            target = address if "://" in address else f"tcp://{address}"
            self.client = Client(target)
        self._scattered: dict[str, tuple[int, Any]] = {}
        self.compiled = CompiledTally()  # the compiled path's programs (``limits.jit``)
        self._lock = threading.Lock()

    @property
    def workers(self) -> int:
        return max(1, sum(self.client.nthreads().values()))

    def submit(self, fn: Callable, /, *args, **kwargs) -> cf.Future:
        """``fn(*args, **kwargs)`` on a Dask worker, in the worker's own process: for the caller's
        code; ``sandboxed_calls().submit`` for calls that run generated code."""
        return _from_dask(self.client.submit(fn, *args, pure=False, **kwargs))

    def submit_sandboxed(self, fn: Callable, /, *args, **kwargs):
        """``fn(*args, **kwargs)`` in the sandbox pool of the Dask worker it lands on."""
        return self.sandboxed_calls().submit(fn, *args, **kwargs)

    def sandboxed_calls(self) -> SandboxedCalls:
        """Calls that run in a sandbox pool local to their Dask worker, under this executor's limits."""
        return SandboxedCalls(self, self.limits)

    def submit_job(self, job: Job, instance_set: InstanceSet) -> cf.Future:
        with self._lock:
            held = self._scattered.get(instance_set.id)
            if held is None or held[0] != instance_set.version:
                ref = self.client.scatter(instance_set, broadcast=True, hash=False)
                held = self._scattered[instance_set.id] = (instance_set.version, ref)
        future = _from_dask(self.client.submit(run_job, job, held[1], self.limits, pure=False))
        future.add_done_callback(lambda f: f.exception() is None and self.compiled.record(job, f.result()))
        return future

    def shutdown(self, wait: bool = True, **_) -> None:
        self._scattered.clear()
        if self._own_client:
            self.client.close()
        if self._cluster is not None:
            self._cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()

    def __repr__(self) -> str:
        return f"<DaskExecutor {self.client.scheduler.address if self.client.scheduler else '?'}>"


def _from_dask(dask_future) -> cf.Future:
    """A ``concurrent.futures.Future`` mirroring a Dask future."""
    fut: cf.Future = cf.Future()
    fut.set_running_or_notify_cancel()

    def settle(df):
        try:
            fut.set_result(df.result())
        except BaseException as exc:  # noqa: BLE001 - delivered through the future
            fut.set_exception(exc)

    dask_future.add_done_callback(settle)
    return fut


class ExecutorSpecError(UserError, ValueError):
    """An executor spec that names no executor (a one-line message for the user)."""


def parse_executor_spec(spec) -> tuple[str, object]:
    """``(kind, argument)`` of an executor spec, without starting anything: ``("process", N or
    None)``, ``("serial", None)``, ``("dask", "local" | ("local", N) | "HOST:PORT")``;
    ``ExecutorSpecError`` for anything else."""
    if spec is None or isinstance(spec, int):
        return "process", spec
    text = str(spec).strip()
    lower = text.lower()
    if lower == "serial":
        return "serial", None
    if lower == "process" or lower.startswith("process:"):
        count = lower.partition(":")[2]
        if count and not count.isdigit():
            raise ExecutorSpecError(f"executor {spec!r}: use process:N with N a positive integer")
        return "process", int(count) if count else None
    if lower.startswith("dask://"):
        target = text[len("dask://"):]
        if target.lower() == "local" or target.lower().startswith("local:"):
            count = target.partition(":")[2]
            if count and not count.isdigit():
                raise ExecutorSpecError(f"executor {spec!r}: use dask://local:N with N a positive integer")
            return "dask", ("local", int(count) if count else None)
        if not target:
            raise ExecutorSpecError(f"executor {spec!r}: give dask://HOST:PORT or dask://local")
        return "dask", target
    raise ExecutorSpecError(f"unknown executor {spec!r}: use serial, process, process:N, dask://local or dask://HOST:PORT")


def make_executor(spec=None, limits: SandboxLimits | None = None):
    """An executor from a spec: ``None``/``"process"`` (one worker per core), ``"process:N"``,
    an int N, ``"serial"``, ``"dask://local"``, ``"dask://local:N"``, ``"dask://HOST:PORT"``;
    any object with ``submit`` is returned unchanged."""
    if spec is not None and not isinstance(spec, (str, int)) and hasattr(spec, "submit"):
        return spec
    kind, arg = parse_executor_spec(spec)
    if kind == "serial":
        return SerialExecutor(limits)
    if kind == "process":
        return ProcessExecutor(arg, limits)
    if isinstance(arg, tuple):
        return DaskExecutor("local", workers=arg[1], limits=limits)
    return DaskExecutor(arg, limits=limits)
