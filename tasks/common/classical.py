"""Every classical rule of a task on a suite (in-process: the rules are the project's own code), and
the best classical rule, the one of lowest mean metric on the task's validation suite."""
from __future__ import annotations

import threading
from typing import Callable

import numpy as np

from .behaviour import check_metric, raising_part
from .errors import HeuristicError, UserError, one_line

__all__ = ["classical_rules", "suite_metrics", "validation_means", "best_on_validation"]

_MEANS: dict[str, dict[str, float]] = {}  # task name -> rule -> mean validation metric
_LOCK = threading.Lock()


def classical_rules(task) -> dict[str, Callable]:
    """Every classical rule of ``task`` (``classical_rules``, the paper's first), else its ``baselines``."""
    return dict(getattr(task, "classical_rules", None) or task.baselines)


def suite_metrics(task, priority: Callable, datasets) -> np.ndarray:
    """The metric of ``priority`` on every instance of ``datasets``, in order (NaN where it fails). The task's
    own ``evaluate`` raising, or giving what is no number, is a ``UserError`` naming it, in one line."""
    out = []
    for dataset in datasets:
        where = f"on an instance of dataset {dataset.name.rstrip('_')}"
        for instance in dataset.instances:
            try:
                metric = task.evaluate(priority, instance)
            except HeuristicError:
                out.append(float("nan"))
                continue
            except Exception as exc:  # noqa: BLE001 - the task's own code: said in one line
                part = raising_part(task, exc, "evaluate")
                raise UserError(f"task {task.name!r}: {type(task).__name__}.{part} raised {type(exc).__name__}: "
                                f"{one_line(exc)} ({where})") from None
            try:
                out.append(check_metric(task, metric, f"({where})"))
            except ValueError as exc:
                raise UserError(f"task {task.name!r}: {exc}") from None
    return np.asarray(out, dtype=float)


def validation_means(task) -> dict[str, float]:
    """Every classical rule's mean metric on the task's validation suite (NaN for a rule that fails
    on an instance); computed once per process and task."""
    with _LOCK:
        if task.name not in _MEANS:
            suite = task.validation_suite()
            _MEANS[task.name] = {name: float(np.mean(suite_metrics(task, rule, suite)))
                                 for name, rule in classical_rules(task).items()}
        return dict(_MEANS[task.name])


def best_on_validation(task) -> str | None:
    """The classical rule of lowest mean metric on the validation suite (the first on ties), or None."""
    means = {name: m for name, m in validation_means(task).items() if np.isfinite(m)}
    return min(means, key=means.get) if means else None
