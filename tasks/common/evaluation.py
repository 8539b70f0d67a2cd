"""The host ``Evaluation`` for any task: scores a heuristic on a plain list of instances."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from llm4ad.base import Evaluation

from .aggregation import Aggregation
from .errors import HeuristicError

__all__ = ["TaskEvaluation"]


class TaskEvaluation(Evaluation):
    """``score = A(-metric(h, s) for s in instances)``; ``None`` when the heuristic fails.

    ``instances`` is a plain, picklable list the robust wrapper may replace between
    generations; ``nominal_count`` says how many of its leading instances are nominal
    (all of them unless a robust wrapper says otherwise; the ``balanced`` aggregation
    weighs the rest apart); ``last_error`` keeps the reason of the latest failure in this
    process.
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
        self.instances = list(task.nominal_instances() if instances is None else instances)
        self.aggregation = Aggregation.parse(aggregation)
        self.nominal_count: int | None = None
        self.last_error: str | None = None

    def metrics(self, priority: Callable, instances: list | None = None) -> np.ndarray:
        """Per-instance metrics (lower is better); raises ``HeuristicError``."""
        chosen = self.instances if instances is None else instances
        return np.array([self.task.evaluate(priority, inst) for inst in chosen], dtype=float)

    def score_of(self, metrics) -> float:
        """The host score (larger is better) of a vector of per-instance metrics."""
        return self.aggregation(-np.asarray(metrics, dtype=float), self.nominal_count)

    def evaluate_program(self, program_str: str, callable_func: Callable, **kwargs) -> float | None:
        try:
            return self.score_of(self.metrics(callable_func))
        except HeuristicError as exc:
            self.last_error = str(exc)
            return None
