"""The host ``Evaluation`` for any task: scores a heuristic on a plain list of instances."""
from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import numpy as np
from llm4ad.base import Evaluation

from .aggregation import Aggregation
from .errors import BadArgument, HeuristicError

__all__ = ["TaskEvaluation", "baseline_reference", "named_baseline"]


def named_baseline(task, name: str) -> tuple[str, Callable]:
    """The task's classical baseline called ``name`` (any case) as ``(its name, priority)``;
    a ``ValueError`` lists the names when there is none."""
    baselines = getattr(task, "baselines", None) or {}
    for key, priority in baselines.items():
        if key.lower() == str(name).lower():
            return key, priority
    raise ValueError(f"task {getattr(task, 'name', task)!r} has no classical baseline {name!r} "
                     f"(it has: {', '.join(baselines) or 'none'})")


def baseline_reference(task, instance, name: str | None = None) -> float:
    """The best (smallest) metric of the task's classical baselines on ``instance``, or the
    metric of the one called ``name``: the reference of a ``regret:`` aggregation. Baselines
    that fail there are left out."""
    baselines = getattr(task, "baselines", None) or {}
    chosen = [named_baseline(task, name)[1]] if name else list(baselines.values())
    values = []
    for priority in chosen:
        try:
            values.append(float(task.evaluate(priority, instance)))
        except HeuristicError:
            continue
    values = [v for v in values if np.isfinite(v)]
    if not values:
        which = f"baseline {name!r}" if name else "classical baseline"
        raise HeuristicError(f"task {getattr(task, 'name', task)!r}: no {which} runs on this instance, and a "
                             f"regret: aggregation needs one")
    return min(values)


def checked_instances(instances) -> list:
    """``instances`` as the plain list an evaluation holds; a ``BadArgument`` unless it is a
    non-empty collection of instances (dicts, as ``task.nominal_instances()`` gives)."""
    given = None if isinstance(instances, (str, bytes, dict)) else _listed(instances)
    if not given or not all(isinstance(inst, dict) for inst in given):
        what = (f"{type(instances).__name__} {instances!r:.40}" if given is None else "an empty list" if not given
                else f"a list holding {type(next(i for i in given if not isinstance(i, dict))).__name__}")
        raise BadArgument(f"instances: give at least one instance of the task (a dict, as "
                          f"task.nominal_instances() gives), not {what}")
    return given


def _listed(instances) -> list | None:
    try:
        return list(instances)
    except TypeError:
        return None


class TaskEvaluation(Evaluation):
    """``score = A(-metric(h, s) for s in instances)``; ``None`` when the heuristic fails.

    ``instances`` is a plain, picklable list the robust wrapper may replace between
    generations; ``nominal_count`` says how many of its leading instances are nominal
    (all of them unless a robust wrapper says otherwise; the ``balanced`` aggregation
    weighs the rest apart); ``last_error`` keeps the reason of the latest failure in this
    process. Under a ``regret:`` aggregation each instance's metric is taken relative to the
    best classical baseline's on it, or the named one's (``reference_metrics``, computed once
    per instance).
    """

    def __init__(self, task, instances: list | None = None, *, aggregation: str | Aggregation = "mean",
                 timeout_seconds: float | None = None, **kwargs: Any):
        super().__init__(
            template_program=task.template_program,
            task_description=task.task_description,
            use_numba_accelerate=False,
            timeout_seconds=task.timeout_seconds if timeout_seconds is None else timeout_seconds,
            **kwargs,
        )
        self.task = task
        self.instances = task.nominal_instances() if instances is None else checked_instances(instances)
        try:
            self.aggregation = Aggregation.parse(aggregation)
        except ValueError as exc:
            raise BadArgument(str(exc)) from None
        if self.aggregation.reference:
            try:
                named_baseline(task, self.aggregation.reference)  # an unknown name fails here, not mid-run
            except ValueError as exc:
                raise BadArgument(f"aggregation: {exc}") from None
        self.nominal_count: int | None = None
        self.last_error: str | None = None
        self._references: dict[int, tuple[Any, float]] = {}  # id(instance) -> (instance, reference)
        self._references_lock = threading.Lock()

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_references_lock"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._references_lock = threading.Lock()

    def reference_metrics(self, instances: Sequence | None = None) -> np.ndarray:
        """The best classical baseline's metric on each of ``instances`` (the evaluation's own
        by default), cached per instance object; raises ``HeuristicError`` when none runs."""
        chosen = self.instances if instances is None else instances
        out = []
        for inst in chosen:
            with self._references_lock:
                hit = self._references.get(id(inst))
            if hit is None or hit[0] is not inst:
                hit = (inst, baseline_reference(self.task, inst, self.aggregation.reference))  # the instance is kept: its id stays unique
                with self._references_lock:
                    self._references[id(inst)] = hit
            out.append(hit[1])
        return np.asarray(out, dtype=float)

    def metrics(self, priority: Callable, instances: list | None = None) -> np.ndarray:
        """Per-instance metrics (lower is better); raises ``HeuristicError``."""
        chosen = self.instances if instances is None else instances
        return np.array([self.task.evaluate(priority, inst) for inst in chosen], dtype=float)

    def score_of(self, metrics, references=None) -> float:
        """The host score (larger is better) of a vector of per-instance metrics. Under a
        ``regret:`` aggregation ``references`` are the instances' reference metrics (those of
        the evaluation's own instances when not given)."""
        evals = -np.asarray(metrics, dtype=float)
        if self.aggregation.regret:
            refs = self.reference_metrics() if references is None else np.asarray(references, dtype=float)
            if refs.shape != evals.shape:
                raise ValueError(f"{refs.size} reference metrics for {evals.size} instances")
            evals = evals + refs
        return self.aggregation(evals, self.nominal_count)

    def evaluate_program(self, program_str: str, callable_func: Callable, **kwargs) -> float | None:
        try:
            return self.score_of(self.metrics(callable_func))
        except HeuristicError as exc:
            self.last_error = str(exc)
            return None
