"""Evaluate heuristics (program text or baselines) on every instance of a suite, in parallel.

Each (heuristic, instance) evaluation runs in a worker process with a wall-clock
limit; a failure becomes a row with ``valid=False`` and its reason, never a crash.
"""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import os
import signal
from dataclasses import asdict, dataclass
from typing import Callable, Iterable

from tqdm import tqdm

from raise_plugin.programs import ProgramError, compile_priority
from tasks import get_task
from tasks.common.errors import HeuristicError

__all__ = ["Heuristic", "Row", "evaluate_suite", "default_workers"]


@dataclass(frozen=True)
class Heuristic:
    """A heuristic to evaluate: program text, or the name of one of the task's baselines."""

    name: str
    code: str | None = None
    baseline: str | None = None

    def resolve(self, task) -> Callable:
        if self.baseline is not None:
            return task.baselines[self.baseline]
        return compile_priority(self.code, None, source=self.name)


@dataclass
class Row:
    heuristic: str
    task: str
    dataset: str
    family: str
    params: str
    instance: int
    metric: float
    valid: bool
    reason: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


_compiled: dict[tuple, Callable] = {}


def _evaluate_one(task_name: str, heuristic: Heuristic, instance, timeout: float | None) -> tuple[float, str]:
    """(metric, "") or (nan, reason); runs inside a worker process."""
    task = get_task(task_name)
    key = (task_name, heuristic)
    try:
        if key not in _compiled:
            _compiled[key] = heuristic.resolve(task)
        priority = _compiled[key]
    except ProgramError as exc:
        return float("nan"), str(exc)
    use_alarm = bool(timeout) and hasattr(signal, "SIGALRM")
    if use_alarm:
        previous = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, float(timeout))
    try:
        return float(task.evaluate(priority, instance)), ""
    except HeuristicError as exc:
        return float("nan"), str(exc)
    except _Timeout:
        return float("nan"), f"timed out after {timeout:g} s"
    except MemoryError:
        return float("nan"), "ran out of memory"
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def evaluate_suite(task_name: str, heuristics: Iterable[Heuristic], datasets, *, workers: int | None = None,
                   timeout: float | None = 300.0, progress: bool = True) -> list[Row]:
    """Every heuristic on every instance of ``datasets``; rows in a deterministic order."""
    heuristics = list(heuristics)
    jobs = [(h, d, i, inst) for h in heuristics for d in datasets for i, inst in enumerate(d.instances)]
    workers = default_workers() if workers is None else max(1, int(workers))
    results: list[tuple[float, str] | None] = [None] * len(jobs)
    bar = tqdm(total=len(jobs), desc=f"evaluating on {task_name}", unit="inst", disable=not progress, leave=False)
    if workers == 1:
        for j, (h, d, i, inst) in enumerate(jobs):
            results[j] = _evaluate_one(task_name, h, inst, timeout)
            bar.update()
    else:
        context = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
        with cf.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = {pool.submit(_evaluate_one, task_name, h, inst, timeout): j
                       for j, (h, d, i, inst) in enumerate(jobs)}
            for fut in cf.as_completed(futures):
                results[futures[fut]] = fut.result()
                bar.update()
    bar.close()
    rows = []
    for (h, d, i, _), (metric, reason) in zip(jobs, results):
        params = ";".join(f"{k}={v}" for k, v in d.params.items())
        rows.append(Row(h.name, task_name, d.name, d.family, params, i, metric, not reason, reason))
    return rows
