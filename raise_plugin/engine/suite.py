"""Evaluate heuristics (program text or baselines) on every instance of a suite, in parallel.

Each (program, instance) evaluation is a job of the evaluation engine: it runs in a
sandboxed worker process with a wall-clock limit per instance (by default the task's,
``Task.instance_timeout``); a failure becomes a row with ``valid=False`` and its reason,
never a crash. A task's own rule (a baseline) is the task's code, not a program that may
fail or cheat: its instances go in one job per worker, with the sum of their limits (a
program process and a look-ahead draw per job, not per instance; the same metrics); a job
that runs out of time or memory has each of its instances run again alone, under its own
limit, so the rows are those a job per instance gives. A
program that fails in a way that repeats (times out, does not compile, kills its worker,
exhausts memory) is not run on its remaining instances: those rows say they were skipped.
The suite's instances are sent to each worker once.
"""
from __future__ import annotations

import concurrent.futures as cf
from collections import abc
import dataclasses
from dataclasses import asdict, dataclass
from typing import Callable, Iterable

from raise_plugin.engine import Engine, FailureKind, ProgramSpec, SandboxLimits
from raise_plugin.engine.fanout import index_chunks
from raise_plugin.errors import UserError
from raise_plugin.programs import compile_priority
from raise_plugin.progress import check_progress, open_progress
from raise_plugin.settings import SettingError, check_settings
from tasks import Task, get_task
from tasks.common.classical import classical_rules
from tasks.common.suite import Dataset

__all__ = ["Heuristic", "Row", "evaluate_suite", "check_heuristics"]

# failures that end a job on all its instances at once (the process is stopped), not on one of them
_WHOLE_JOB = frozenset({FailureKind.TIMEOUT, FailureKind.MEMORY, FailureKind.WORKER_DIED})


@dataclass(frozen=True)
class Heuristic:
    """A heuristic to evaluate: program text, or the name of one of the task's baselines."""

    name: str
    code: str | None = None
    baseline: str | None = None

    def __post_init__(self):
        if (self.code is None) == (self.baseline is None):
            raise UserError(f"Heuristic {self.name!r}: give exactly one of code (a program's text) and baseline "
                            "(the name of one of the task's rules)")

    def resolve(self, task) -> Callable:
        if self.baseline is not None:
            return classical_rules(task)[self.baseline]
        return compile_priority(self.code, None, source=self.name)

    @property
    def spec(self) -> ProgramSpec:
        return ProgramSpec(code=self.code, baseline=self.baseline, label=self.name)


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
    kind: str = "ok"
    unchecked: bool = False  # drawn for a look-ahead check that could not run (``EvalResult.unchecked``)

    @property
    def skipped(self) -> bool:
        """Not run: the heuristic had already failed in a way that repeats."""
        return self.reason.startswith("skipped: ")

    def as_dict(self) -> dict:
        return asdict(self)


def _own_timeouts(task, task_name: str, datasets: list) -> list[float]:
    """Each instance's own time limit, read by ``task``: an instance it cannot read (another task's
    dataset) is a ``UserError`` naming the dataset, before any worker starts."""
    timeouts = []
    for dataset in datasets:
        for instance in dataset.instances:
            try:
                timeouts.append(float(task.instance_timeout(instance)))
            except (KeyError, IndexError, TypeError, ValueError, AttributeError):
                raise UserError(f"datasets: {dataset.name} is not {task_name}'s (its instances are not the task's; "
                                f"give the task's validation_suite() or test_suite())") from None
    return timeouts


def evaluate_suite(task_name: str, heuristics: Iterable[Heuristic], datasets, *, workers: int | None = None,
                   timeout: float | None = None, progress: bool | str | None = True, executor=None,
                   limits: SandboxLimits | None = None, fail_fast: bool = True,
                   compiled_report: Callable[[str], None] | None = None) -> list[Row]:
    """Every heuristic on every instance of ``datasets``; rows in a deterministic order.

    ``executor``: an executor spec (``"serial"``, ``"process:N"``, ``"dask://HOST:PORT"``, ...)
    or object; by default a process pool of ``workers`` sandboxed workers (one per core).
    ``timeout``: seconds per instance (default: the task's ``instance_timeout`` of each
    instance). ``fail_fast``: skip a heuristic's remaining instances after a repeating
    failure (``FailureKind.REPEATING``). ``compiled_report``: with ``limits.jit``, called at the
    end with the compiled path's line (programs compiled, left on Python, not evaluated long
    enough to compile).
    """
    check_progress(progress)  # a bad value, as every argument below, refused before any worker starts
    try:  # a task's name or reference, or the task itself (as profile takes it)
        task = task_name if isinstance(task_name, Task) else get_task(task_name)
    except (KeyError, ValueError, TypeError) as exc:
        raise UserError(f"task: {exc.args[0] if exc.args else exc}") from None
    task_name = task.name
    heuristics = check_heuristics(task, heuristics)
    given = list(datasets) if isinstance(datasets, abc.Iterable) and not isinstance(datasets, (str, Dataset)) else None
    if given is None or not all(isinstance(d, Dataset) for d in given):
        raise UserError("datasets: give a list of Datasets (the task's validation_suite() or test_suite(), or a "
                        f"part of one), got {type(datasets).__name__}")
    datasets = given
    instances = [inst for d in datasets for inst in d.instances]
    if not instances:
        raise UserError("datasets: no instance to evaluate on")
    own = _own_timeouts(task, task_name, datasets)
    if workers is not None and not (isinstance(workers, int) and workers >= 1):
        raise UserError(f"workers: must be a whole number of at least 1, got {workers!r}")
    try:  # the setting's own check, as profile's
        check_settings({"timeout": timeout})
    except SettingError as exc:
        raise UserError(str(exc)) from None
    if executor is None:
        executor = f"process:{workers}" if workers is not None else "process"
    if timeout is None:
        timeouts = own
        timeout = max(timeouts, default=None)
    else:
        timeouts = [float(timeout)] * len(instances)
    base = limits or SandboxLimits()
    limits = dataclasses.replace(base, timeout=timeout)
    results: dict[tuple[int, int], tuple[float, str, str]] = {}
    with Engine(task_name, executor, limits=limits) as engine:
        bar = open_progress(len(heuristics) * len(instances), progress=progress, desc=f"evaluating on {task_name}",
                            unit="inst", leave=False)
        futures = {}
        for h_index, h in enumerate(heuristics):
            if h.baseline is not None:  # one of the task's own rules: its instances in a job per worker
                for chunk in index_chunks(len(instances), engine.workers):
                    futures[engine.submit_indices(h.spec, instances, chunk, stop_on_failure=False,
                                                  timeout=sum(timeouts[i] for i in chunk))] = (h_index, chunk)
                continue
            for i, fut in enumerate(engine.submit_each(h.spec, instances, timeout=timeouts, fail_fast=fail_fast)):
                futures[fut] = (h_index, (i,))
        again = {}
        for fut in cf.as_completed(futures):
            result = fut.result()
            h_index, chunk = futures[fut]
            if len(chunk) > 1 and result.kind in _WHOLE_JOB:
                # a rule's job that ran out of time (or memory, or lost its worker) ends on all its instances:
                # each goes again in a job of its own, under its own limit, so that an instance the rule
                # finished keeps its metric and no row depends on how many workers cut the suite
                for i in chunk:
                    again[engine.submit_indices(heuristics[h_index].spec, instances, (i,), stop_on_failure=False,
                                                timeout=timeouts[i])] = (h_index, (i,))
                continue
            _record(results, result, h_index, chunk)
            bar.update(len(chunk))
        for fut in cf.as_completed(again):
            _record(results, fut.result(), *again[fut])
            bar.update(1)
        if limits.jit and compiled_report is not None and engine.compiled is not None:
            compiled_report(engine.compiled.line())
    bar.close()
    rows = []
    for h_index, h in enumerate(heuristics):
        flat = 0
        for d in datasets:
            params = ";".join(f"{k}={v}" for k, v in d.params.items())
            for i in range(len(d.instances)):
                metric, reason, kind, unchecked = results[(h_index, flat)]
                rows.append(Row(h.name, task_name, d.name, d.family, params, i, metric, not reason, reason, kind,
                                unchecked))
                flat += 1
    return rows


def _record(results: dict, result, h_index: int, chunk) -> None:
    """A job's outcome on each of its instances, keyed by (heuristic, instance); the job's unchecked
    check is counted once, on its first instance."""
    for k, i in enumerate(chunk):
        kind = result.kind if result.reasons[k] else FailureKind.OK
        results[(h_index, i)] = (result.metrics[k], result.reasons[k], kind, bool(result.unchecked) and k == 0)


def check_heuristics(task, heuristics) -> list[Heuristic]:
    """``heuristics`` as ``evaluate_suite`` takes them: ``Heuristic`` s, each baseline one of the task's
    rules (``classical_rules``), no name twice (the rows and tables are by name); else a one-line
    ``UserError`` saying what is wrong."""
    given = list(heuristics) if isinstance(heuristics, abc.Iterable) and not isinstance(heuristics, str) else None
    if given is None or not all(isinstance(h, Heuristic) for h in given):
        raise UserError("heuristics: give a list of Heuristic(name, code=...) or Heuristic(name, baseline=...)")
    heuristics = given
    rules = classical_rules(task)
    for h in heuristics:
        if h.baseline is not None and h.baseline not in rules:
            raise UserError(f"heuristics: {task.name} has no baseline {h.baseline!r}; choose from {', '.join(rules)}")
    names = [h.name for h in heuristics]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f"heuristics: {', '.join(twice)} named twice; name them apart with Heuristic(name, code=...)")
    return heuristics
