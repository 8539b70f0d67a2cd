"""Scoring a program in an unwrapped run while keeping its per-instance metrics (``MetricsEvaluator``)."""
from __future__ import annotations

import math
import threading
import time

import numpy as np
from llm4ad.base import Evaluation

from ..engine.evaluator import host_code_edits
from ..robust.evaluator import ProgramRunner, outcome

__all__ = ["MetricsEvaluator"]


class MetricsEvaluator:
    """Scores a program like the host's ``SecureEvaluator`` and keeps its per-instance metrics.

    Used in unwrapped runs when the evaluation offers ``instances``, ``metrics()`` and
    ``score_of()`` (tasks' ``TaskEvaluation``); ``robust()`` replaces it with its own
    instance-set evaluator. Programs run as the wrapper's do (``ProgramRunner``: the engine's
    sandboxed workers under ``evaluation.timeout_seconds``, or in the calling thread when
    ``safe_evaluate`` is off). A program that fails on any instance scores ``None``.
    """

    def __init__(self, evaluation: Evaluation):
        self._evaluation = evaluation
        self._runner = ProgramRunner(evaluation.task, evaluation)
        self._lock = threading.Lock()
        self._metrics: dict[str, np.ndarray | None] = {}
        self.evaluations = 0

    # host interface
    def evaluate_program_record_time(self, program, **kwargs):
        start = time.time()
        return self.evaluate_program(program), time.time() - start

    def evaluate_program(self, program, **kwargs) -> float | None:
        metrics = self.metrics(str(program))
        if metrics is None:
            return None
        score = float(self._evaluation.score_of(metrics))
        return score if math.isfinite(score) else None

    # ours
    def metrics(self, text: str, *, compute: bool = True) -> np.ndarray | None:
        """Per-instance metrics (lower is better) of the program ``text``; ``None`` if it failed
        (or, with ``compute=False``, if it was never evaluated)."""
        with self._lock:
            if text in self._metrics:
                return self._metrics[text]
        if not compute:
            return None
        values = self._compute(text)
        with self._lock:
            self._metrics[text] = values
            self.evaluations += 1
        return values

    def _compute(self, text: str) -> np.ndarray | None:
        try:
            code, name = host_code_edits(self._evaluation, text)
        except Exception:  # not a parseable program: it fails everywhere
            return None
        instances = list(self._evaluation.instances)
        values, _, broken = outcome(self._runner.run(code, name, instances, range(len(instances))))
        if broken or len(values) < len(instances) or any(v is None for v in values):
            return None
        out = np.asarray(values, dtype=float)
        return out if np.all(np.isfinite(out)) else None

    def close(self) -> None:
        self._runner.close()
