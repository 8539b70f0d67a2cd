"""Our own executors: ``ProcessExecutor``, a pool of sandboxed worker processes (one per core by
default), and ``SerialExecutor``, one thing at a time. Both take jobs (``submit_job``) as well
as calls (``submit``)."""
from __future__ import annotations

import concurrent.futures as cf
import os
import queue
import threading
import weakref
from typing import Callable

from raise_plugin.errors import note_once

from ..compiled import CompiledTally
from ..jobs import InstanceSet, Job
from ..limits import SandboxLimits
from ..results import EvalResult, FailureKind
from ..sandbox import weakened
from ..workers import SandboxWorker

__all__ = ["ProcessExecutor", "SerialExecutor", "default_workers", "most_workers", "pool_width", "WORKERS_PER_CORE",
           "executor_workers", "say_if_weakened"]


def default_workers() -> int:
    """Cores this process may use."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


# the most worker processes a pool starts for each core this process may use: evaluations are
# CPU-bound, so more would only share the cores (and a mistyped count would start a million)
WORKERS_PER_CORE = 8


def most_workers() -> int:
    """The most worker processes a pool starts here: ``WORKERS_PER_CORE`` per core this process may use."""
    return WORKERS_PER_CORE * default_workers()


def pool_width(workers: int | None) -> int:
    """The worker processes a local pool starts for ``workers`` (``None``: one per core): at most
    ``most_workers()``, with a note where that is fewer than asked (a run's results do not depend on
    its workers: fewer only take longer)."""
    if workers is None:
        return default_workers()
    if workers > most_workers():
        note_once(f"{workers} evaluation workers asked for; {most_workers()} started, {WORKERS_PER_CORE} per core "
                  f"this process may use (evaluations are CPU-bound: more would only share the cores)", stacklevel=3)
        return most_workers()
    return workers


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


def say_if_weakened(confine: bool = True) -> None:
    """A sandbox weaker than it should be, with the fix (``confine.weakened``), once in a process
    (``note_once``); nothing when programs run unconfined (``SandboxLimits.confine``), as asked."""
    line = weakened() if confine else None
    if line is not None:
        note_once(line, stacklevel=3)


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
        self.workers = pool_width(self.workers)
        self.compiled = CompiledTally()  # the compiled path's programs (``limits.jit``)
        say_if_weakened(self.limits.confine)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._slots = [SandboxWorker(self.limits) for _ in range(self.workers)]
        self._closed = False
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._serve, args=(slot,), daemon=True,
                                          name=f"raise-sandbox-{i}") for i, slot in enumerate(self._slots)]
        self._finalizer = weakref.finalize(self, _stop_all, self._queue, self._slots, self._threads)
        try:
            for t in self._threads:
                t.start()
        except BaseException:  # Ctrl-C as they start: the ones started would wait on the queue for good
            self._finalizer()
            raise

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
