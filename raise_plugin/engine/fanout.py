"""The engine's front: ``Engine`` scores one task's programs on instance lists, cut into jobs
fanned out over an executor, and gathers the jobs' results into one (``submit``) or keeps one
per instance, skipping the rest after a failure that repeats (``submit_each``)."""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import threading
import time
from typing import Any, Sequence

from ..config import EngineSettings
from .executors import SerialExecutor, executor_workers, make_executor, run_job
from .jobs import InstanceSet, Job, ProgramSpec, SourcePriority
from .limits import SandboxLimits
from .results import EvalResult, FailureKind

__all__ = ["Engine", "as_program", "same_objects", "index_chunks"]


def as_program(program) -> ProgramSpec:
    """A ``ProgramSpec`` from program text, a host ``Program``/``Function``, a ``SourcePriority``."""
    if isinstance(program, ProgramSpec):
        return program
    if isinstance(program, SourcePriority):
        return program.spec
    return ProgramSpec(code=str(program))


def index_chunks(count: int, parts: int) -> list[tuple[int, ...]]:
    """``range(count)`` in ``parts`` consecutive chunks (fewer when there are fewer indices), sizes
    differing by one at most."""
    parts = max(1, min(count, parts))
    size, extra = divmod(count, parts)
    out, start = [], 0
    for p in range(parts):
        stop = start + size + (1 if p < extra else 0)
        out.append(tuple(range(start, stop)))
        start = stop
    return out


def same_objects(a: Sequence, b: Sequence) -> bool:
    """Whether ``a`` and ``b`` hold the same objects, in the same order."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


class Engine:
    """Sandboxed, parallel evaluation of one task's heuristics.

    ``executor``: a spec for ``make_executor`` (a run's ``engine`` section among them: its
    executor and its sandbox's limits) or any object with ``submit``; the engine shuts down only
    executors it created. ``limits``: ``SandboxLimits`` (``timeout`` and ``memory_mb`` may also
    be given directly). ``split``: into how many jobs one program's
    instances are cut: ``"auto"`` (as many as the executor runs at once), an int, or
    ``"instance"`` (one job per instance: the timeout then applies per instance). ``jit``: the
    compiled evaluation path (``limits.jit``, see ``engine.compiled``) in the workers the engine
    starts; ``compiled`` counts its programs.
    """

    def __init__(self, task, executor=None, *, limits: SandboxLimits | None = None,
                 timeout: float | None = None, memory_mb: int | None = None, split: Any = "auto",
                 jit: bool | None = None):
        self.task_name = task if isinstance(task, str) else task.name
        if isinstance(executor, EngineSettings):  # a run's engine section: its executor spec and its limits
            executor, limits = executor.evaluation_executor(), limits or SandboxLimits.of(executor)
        base = limits or SandboxLimits()
        changes = {k: v for k, v in (("timeout", timeout), ("memory_mb", memory_mb), ("jit", jit)) if v is not None}
        self.limits = dataclasses.replace(base, **changes) if changes else base
        self._own = executor is None or isinstance(executor, (str, int))
        self.executor = make_executor(executor, self.limits)
        self.split = split
        self._sets: list[tuple[tuple, InstanceSet]] = []
        self._lock = threading.Lock()

    @property
    def workers(self) -> int:
        return executor_workers(self.executor)

    @property
    def compiled(self):
        """The executor's ``CompiledTally`` (programs compiled, programs left on Python), if it keeps one."""
        return getattr(self.executor, "compiled", None)

    def instance_set(self, instances) -> InstanceSet:
        """The ``InstanceSet`` for a list (the same one while the list holds the same objects)."""
        if isinstance(instances, InstanceSet):
            return instances
        with self._lock:
            for snapshot, iset in self._sets:
                if same_objects(snapshot, instances):
                    return iset
            iset = InstanceSet(instances)
            self._sets.insert(0, (tuple(instances), iset))
            del self._sets[self.limits.cache_sets:]
            return iset

    def submit(self, program, instances, *, stop_on_failure: bool = True, split: Any = None,
               timeout: float | None = None) -> cf.Future:
        """A future of the ``EvalResult`` of ``program`` on ``instances`` (metrics in their order)."""
        spec = as_program(program)
        iset = self.instance_set(instances)
        if len(iset) == 0:
            raise ValueError("cannot evaluate on an empty instance set")
        chunks = index_chunks(len(iset), self._parts(split, len(iset)))
        limit = self.limits.timeout if timeout is None else timeout
        jobs = [Job(self.task_name, spec, iset.id, iset.version, c, limit, stop_on_failure) for c in chunks]
        return _gather([self._submit_job(job, iset) for job in jobs], time.perf_counter())

    def submit_indices(self, program, instances, indices: Sequence[int], *, stop_on_failure: bool = True,
                       timeout: float | None = None) -> cf.Future:
        """A future of the ``EvalResult`` of ``program`` on ``instances[i] for i in indices``, as one job.

        The whole list is the cached instance set (sent to a worker once per version), so a
        caller that grows one list and evaluates only its new members sends nothing else."""
        spec = as_program(program)
        iset = self.instance_set(instances)
        chosen = tuple(int(i) for i in indices)
        if not chosen or min(chosen) < 0 or max(chosen) >= len(iset):
            raise ValueError(f"indices must be non-empty and within 0..{len(iset) - 1}")
        limit = self.limits.timeout if timeout is None else timeout
        return self._submit_job(Job(self.task_name, spec, iset.id, iset.version, chosen, limit, stop_on_failure), iset)

    def submit_each(self, program, instances, *, timeout=None, fail_fast: bool = False) -> list[cf.Future]:
        """One future per instance (each an ``EvalResult`` of one metric); the timeout is per instance.

        ``timeout``: seconds for every instance, or one value per instance (default: the
        engine's limit). ``fail_fast``: once the program fails in a way that repeats
        (``FailureKind.REPEATING``: timeout, memory, does not compile, worker died, ...),
        its instances not yet finished are not run: their futures resolve at once to
        results marked ``skipped`` with that failure's kind and reason.
        """
        spec = as_program(program)
        iset = self.instance_set(instances)
        limits = self._timeouts(timeout, len(iset))
        jobs = [Job(self.task_name, spec, iset.id, iset.version, (i,), limits[i], False) for i in range(len(iset))]
        if fail_fast and isinstance(self.executor, SerialExecutor):
            return self._serial_fail_fast(jobs, iset)
        inner = [self._submit_job(job, iset) for job in jobs]
        return _fail_fast(inner) if fail_fast else inner

    def _serial_fail_fast(self, jobs: list[Job], iset: InstanceSet) -> list[cf.Future]:
        """A serial executor runs each job as it is submitted: stop submitting after a repeating failure."""
        out, failure = [], None
        for job in jobs:
            if failure is not None:
                future: cf.Future = cf.Future()
                future.set_result(EvalResult.skipped_after(failure))
            else:
                future = self._submit_job(job, iset)
                result = future.result()
                if result.kind in FailureKind.REPEATING:
                    failure = result
            out.append(future)
        return out

    def evaluate(self, program, instances, **kwargs) -> EvalResult:
        return self.submit(program, instances, **kwargs).result()

    def map(self, programs, instances, **kwargs) -> list[EvalResult]:
        """Every program on ``instances``; all submitted before any is awaited."""
        programs = list(programs)
        if "split" not in kwargs and len(programs) >= self.workers:
            kwargs["split"] = 1
        futures = [self.submit(p, instances, **kwargs) for p in programs]
        return [f.result() for f in futures]

    def shutdown(self) -> None:
        if self._own and hasattr(self.executor, "shutdown"):
            self.executor.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()

    # -- internals -------------------------------------------------------------------------------
    def _parts(self, split, count: int) -> int:
        split = self.split if split is None else split
        if split == "auto":
            return self.workers
        if split == "instance":
            return count
        return int(split)

    def _timeouts(self, timeout, count: int) -> list[float | None]:
        if timeout is None or isinstance(timeout, (int, float)):
            return [self.limits.timeout if timeout is None else float(timeout)] * count
        values = [float(t) for t in timeout]
        if len(values) != count:
            raise ValueError(f"{len(values)} timeouts for {count} instances")
        return values

    def _submit_job(self, job: Job, iset: InstanceSet) -> cf.Future:
        if hasattr(self.executor, "submit_job"):
            return self.executor.submit_job(job, iset)
        return self.executor.submit(run_job, job, iset, self.limits)


def _gather(parts: list[cf.Future], start: float) -> cf.Future:
    """One future of the combined result of consecutive chunks."""
    out: cf.Future = cf.Future()
    out.set_running_or_notify_cancel()
    remaining = [len(parts)]
    lock = threading.Lock()

    def settle(_):
        with lock:
            remaining[0] -= 1
            if remaining[0]:
                return
        try:
            results = [p.result() for p in parts]
        except BaseException as exc:  # noqa: BLE001 - delivered through the future
            out.set_exception(exc)
            return
        out.set_result(results[0].with_seconds(time.perf_counter() - start) if len(results) == 1
                       else EvalResult.combine(results, time.perf_counter() - start))

    for p in parts:
        p.add_done_callback(settle)
    return out


def _fail_fast(inner: list[cf.Future]) -> list[cf.Future]:
    """Futures mirroring ``inner`` until one result is a repeating failure; from then on the
    unfinished ones resolve to skipped results and their queued jobs are cancelled (a job
    already running finishes on its own; its result is dropped)."""
    outer: list[cf.Future] = []
    for _ in inner:
        f: cf.Future = cf.Future()
        f.set_running_or_notify_cancel()
        outer.append(f)
    lock = threading.Lock()
    failure: list[EvalResult] = []

    def settle(index: int, fut: cf.Future) -> None:
        if fut.cancelled():
            return  # cancelled below: its outer future is already settled
        try:
            result = fut.result()
        except BaseException as exc:  # noqa: BLE001 - delivered through the future (a CancelledError too: a Dask
            # job cancelled by Dask, whose worker and instances were lost, left evaluate waiting for ever)
            with lock:
                if not outer[index].done():
                    outer[index].set_exception(exc)
            return
        with lock:
            if outer[index].done():
                return
            outer[index].set_result(result)
            if failure or result.kind not in FailureKind.REPEATING:
                return
            failure.append(result)
            pending = [k for k, f in enumerate(outer) if not f.done()]
            for k in pending:
                outer[k].set_result(EvalResult.skipped_after(result))
        for k in pending:
            inner[k].cancel()

    for index, fut in enumerate(inner):
        fut.add_done_callback(lambda f, i=index: settle(i, f))
    return outer
