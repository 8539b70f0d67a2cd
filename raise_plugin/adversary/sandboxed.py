"""The inner search in the engine's sandbox: on the run's sandboxed workers or in one worker of
its own, under one wall-clock deadline, a time-out or a dead worker reported as ``SearchFailed``.

The attacked program is generated code (it may hang, or allocate without bound, on a shifted
instance), so it runs only where the engine's memory cap and audit hook hold.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import math
import threading
import time
from typing import Callable

from ..engine import CallTimeout, ProcessExecutor, SandboxLimits, SourcePriority, WorkerDied
from ..engine.limits import LONGEST_WAIT
from ..engine.role import current_judge
from .ga import evaluate_batch
from .search import metric_or_inf

__all__ = ["SearchFailed", "SearchAbandoned", "search_program", "in_one_worker", "on_run_workers", "sandbox_pool",
           "DeadlineExecutor"]

GIVE_UP_SECONDS = 0.2  # how often a search that may be abandoned looks whether it is


class SearchFailed(Exception):
    """The inner search ran out of time or its process died."""


class SearchAbandoned(BaseException):
    """The run ended at once (a second Ctrl-C, an interrupt in its own thread) while its inner search
    ran: the refresh is not made, and a resume makes it again. A ``BaseException``, as an interrupt,
    so that nothing takes it for a search that failed (a skipped refresh)."""


def search_program(search: Callable, task, code: str, references: list, epsilon: float, options: dict):
    """One inner search on the program ``code``; ``references`` are ``(name, program text or priority)``.
    The programs are compiled where they are first called: in this sandboxed worker, or in the
    adversary's executor's workers when it has one (never in the engine's process).

    The search meets the program in one process for all its instances (a fresh module of it for
    each); a run meets it in a process per instance. A program that counted, in another module,
    what its process had met could play otherwise for the search than in a run (best fit when
    searched: the adversary found little to hurt). So the program is run once more on the instance
    the search chose, in a process of its own; where it scores otherwise there, the search is made
    again with each evaluation in a process of its own, and its evaluations count both searches."""
    refs = [(name, SourcePriority(ref) if isinstance(ref, str) else ref) for name, ref in references]
    result = search(task, SourcePriority(code), epsilon, references=refs or None, **options)
    if _as_alone(task, code, result, options.get("executor")):
        return result
    again = search(task, SourcePriority(code, alone=True), epsilon, references=refs or None, **options)
    return None if again is None else dataclasses.replace(again, evaluations=result.evaluations + again.evaluations)


def _as_alone(task, code: str, result, executor) -> bool:
    """Whether the program scores on the instance the search chose (``result.instance``), in a
    process of its own, what it scored there in the search (a failure as a failure). Where the
    program would run in this process (no judge here, no executor), nothing is run: true."""
    if getattr(result, "instance", None) is None or not hasattr(result, "metric"):
        return True
    if executor is None and current_judge() is None:
        return True
    metric = evaluate_batch(metric_or_inf, [(task, SourcePriority(code, alone=True), result.instance)], executor)[0]
    searched = float(result.metric)
    return metric == searched or not (math.isfinite(metric) or math.isfinite(searched))


def in_one_worker(fn: Callable, args: tuple, seconds: float, give_up: threading.Event | None = None):
    """``fn(*args)`` in one of the engine's sandboxed workers (memory cap, audit hook, no secrets in
    its environment), killed after ``seconds``: the attacked program is generated code. Once
    ``give_up`` is set, ``SearchAbandoned`` (the worker is stopped with its pool)."""
    with ProcessExecutor(1, SandboxLimits(timeout=seconds)) as pool, \
            _as_search_failure(pool, f"the inner search exceeded {seconds:g} s"):
        return DeadlineExecutor(pool, 0, give_up).submit(fn, *args).result()


@contextlib.contextmanager
def _as_search_failure(pool, timed_out: str):
    """A sandboxed search's time-out, memory error or dead worker as one ``SearchFailed`` line."""
    try:
        yield
    except CallTimeout:
        raise SearchFailed(timed_out) from None
    except MemoryError:
        raise SearchFailed(f"the inner search ran out of memory (the sandbox caps it at "
                            f"{pool.limits.memory_mb} MB)") from None
    except WorkerDied as exc:
        raise SearchFailed(f"the inner search's worker died ({exc})") from None


def sandbox_pool(method):
    """What runs the run's calls in its sandboxed workers: its ``ProcessExecutor``, or a Dask
    executor's ``sandboxed_calls()`` (each call in a sandbox pool local to its Dask worker);
    ``None`` otherwise (a serial executor, programs run in the calling thread, a method without
    an engine)."""
    executor = getattr(method, "engine_executor", None)
    if isinstance(executor, ProcessExecutor):
        return executor
    sandboxed = getattr(executor, "sandboxed_calls", None)
    return sandboxed() if callable(sandboxed) else None


def on_run_workers(fn: Callable, args: tuple, pool, seconds: float, give_up: threading.Event | None = None):
    """``fn(*args)`` in this thread with the search's evaluations on ``pool``'s sandboxed
    workers, all of them within ``seconds`` (``0``: no limit but the workers' own), until
    ``give_up`` is set (``SearchAbandoned``)."""
    search, task, code, references, epsilon, options = args
    bounded = DeadlineExecutor(pool, seconds, give_up)
    try:
        with _as_search_failure(pool, f"an evaluation of the inner search exceeded {pool.limits.timeout:g} s"):
            return fn(search, task, code, references, epsilon, {**options, "executor": bounded})
    finally:
        bounded.cancel()  # after a failure, what has not started does not hold up the run's workers


class DeadlineExecutor:
    """An executor's ``submit`` under one wall-clock limit for all it was given (``seconds``; ``0``:
    none): a result not there by the deadline cancels what has not started and raises
    ``SearchFailed`` (a call under way ends at its executor's own time limit); one still awaited
    when ``give_up`` is set does the same with ``SearchAbandoned``."""

    def __init__(self, executor, seconds: float, give_up: threading.Event | None = None):
        self._executor = executor
        self.workers = getattr(executor, "workers", 1)
        self._seconds = seconds
        self._deadline = time.perf_counter() + seconds if seconds else None
        self._give_up = give_up
        self._futures: list = []

    def submit(self, fn: Callable, *args):
        future = self._executor.submit(fn, *args)
        self._futures.append(future)
        return _BoundedFuture(future, self)

    def wait(self, future):
        step = LONGEST_WAIT if self._give_up is None else GIVE_UP_SECONDS  # a lock takes no wait of centuries
        while not future.done():
            now = time.perf_counter()
            if self._deadline is not None and now >= self._deadline:
                self.cancel()
                raise SearchFailed(f"the inner search exceeded {self._seconds:g} s")
            if self._give_up is not None and self._give_up.is_set():
                self.cancel()
                raise SearchAbandoned("the run ended while its inner search ran")
            concurrent.futures.wait([future], timeout=step if self._deadline is None
                                    else min(step, self._deadline - now))
        return future.result()

    def cancel(self) -> None:
        for future in self._futures:
            future.cancel()


class _BoundedFuture:
    """A future whose ``result()`` waits no later than its ``DeadlineExecutor``."""

    def __init__(self, future, deadline: DeadlineExecutor):
        self._future = future
        self._deadline = deadline

    def result(self):
        return self._deadline.wait(self._future)
