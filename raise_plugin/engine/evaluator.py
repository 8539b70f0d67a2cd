"""``EngineEvaluator``: the host's ``SecureEvaluator`` on the engine (a task evaluation's programs
run as jobs on its current instances; any other host ``Evaluation`` runs its own
``evaluate_program`` in a sandboxed worker), ``use_engine`` to plug it into a host method, and
the host's edits to a program before it runs."""
from __future__ import annotations

import math
import threading
import time
from typing import Any

from llm4ad.base import TextFunctionProgramConverter
from llm4ad.base.modify_code import ModifyCode

from .fanout import Engine, same_objects
from .jobs import InstanceSet, ProgramSpec
from .limits import SandboxLimits
from .results import EvalResult, FailureKind
from .role import current_judge

__all__ = ["EngineEvaluator", "use_engine", "host_code_edits"]


class EngineEvaluator:
    """The host's ``SecureEvaluator`` interface on the engine.

    ``evaluation`` is a host ``Evaluation``. With a task evaluation (``TaskEvaluation``:
    ``task``, ``instances``, ``score_of``) each program runs as jobs on the evaluation's
    *current* ``instances``, sent to workers once per version (a replaced or edited list
    is noticed and sent again), and the score is the evaluation's aggregation of
    ``-metric``. Any other ``Evaluation`` runs its own ``evaluate_program`` in a sandboxed
    worker. Failures give ``None`` like the host, and the reason is kept: ``last_result``
    (this thread's latest ``EvalResult``), ``last_error`` and ``failures`` (counts by kind).

    Plug into a host method::

        method = EoH(llm, evaluation, ...)
        use_engine(method, executor="process")   # or method._evaluator = EngineEvaluator(evaluation)
    """

    def __init__(self, evaluation, executor=None, *, limits: SandboxLimits | None = None,
                 timeout: float | None = None, memory_mb: int | None = None, split: Any = "auto",
                 jit: bool | None = None, debug_mode: bool = False, **_ignored):
        self._evaluator = evaluation  # the name the host's SecureEvaluator uses
        self._debug_mode = debug_mode
        host_timeout = getattr(evaluation, "timeout_seconds", None)
        limit = timeout if timeout is not None else host_timeout
        task = getattr(evaluation, "task", None)
        self.is_task = task is not None and hasattr(evaluation, "instances")
        self._function_name = self._template_function(evaluation)
        self.engine = Engine(task if self.is_task else "none", executor, limits=limits, timeout=limit,
                             memory_mb=memory_mb, split=split, jit=jit)
        self._lock = threading.Lock()
        self._set: InstanceSet | None = None
        self._snapshot: tuple = ()
        self.last_result: EvalResult | None = None
        self.last_error: str | None = None
        self.failures: dict[str, int] = {}
        self.evaluations = 0

    # -- the SecureEvaluator interface ----------------------------------------------------------
    def evaluate_program(self, program, **kwargs) -> Any | None:
        return self.evaluate(program, **kwargs)[0]

    def evaluate_program_record_time(self, program, **kwargs) -> tuple[Any | None, float]:
        score, result = self.evaluate(program, **kwargs)
        return score, result.seconds

    # -- ours ------------------------------------------------------------------------------------
    def evaluate(self, program, **kwargs) -> tuple[Any | None, EvalResult]:
        """(score or ``None``, the ``EvalResult``)."""
        start = time.perf_counter()
        try:
            code, name = self._prepare(str(program))
        except Exception as exc:  # noqa: BLE001 - text the host converter rejects
            result = EvalResult.failed(1, FailureKind.PROGRAM, f"cannot read the program: {exc}",
                                       time.perf_counter() - start)
            return self._record(None, result)
        if self.is_task:
            iset = self.current_instances()
            result = self.engine.evaluate(ProgramSpec(code=code, function=name), iset)
            score = self._evaluator.score_of(result.metrics) if result.valid else None
            if score is not None and not math.isfinite(score):
                score = None
            return self._record(score, result)
        return self._record(*self._evaluate_host(code, name, kwargs, start))

    def current_instances(self) -> InstanceSet:
        """The evaluation's instances as a versioned set (a new version when they changed)."""
        instances = self._evaluator.instances
        with self._lock:
            if self._set is None:
                self._set = InstanceSet(instances)
            elif not same_objects(self._snapshot, instances):
                self._set = self._set.next_version(instances)
            else:
                return self._set
            self._snapshot = tuple(instances)
            return self._set

    @property
    def executor(self):
        return self.engine.executor

    def shutdown(self) -> None:
        self.engine.shutdown()

    # -- internals -------------------------------------------------------------------------------
    @staticmethod
    def _template_function(evaluation) -> str | None:
        """The name of the evolved function (the template's), which every sample keeps."""
        try:
            return TextFunctionProgramConverter.text_to_function(str(evaluation.template_program)).name
        except Exception:  # noqa: BLE001 - no usable template: the worker picks the function
            return None

    def _prepare(self, program_str: str) -> tuple[str, str | None]:
        if not _has_edits(self._evaluator) and self._function_name is not None:
            return program_str, self._function_name
        return host_code_edits(self._evaluator, program_str)

    def _evaluate_host(self, code: str, name: str, kwargs: dict, start: float):
        executor = self.engine.executor
        submit = getattr(executor, "submit_sandboxed", executor.submit)  # never the engine's own process
        future = submit(_host_evaluate, self._evaluator, code, name, kwargs)
        try:
            score = future.result()
        except BaseException as exc:  # noqa: BLE001 - any failure is a reason
            kind = FailureKind.TIMEOUT if isinstance(exc, TimeoutError) else (
                FailureKind.WORKER_DIED if "worker process" in str(exc) else FailureKind.HEURISTIC)
            return None, EvalResult.failed(1, kind, f"{type(exc).__name__}: {exc}", time.perf_counter() - start)
        seconds = time.perf_counter() - start
        if score is None:
            return None, EvalResult.failed(1, FailureKind.HEURISTIC, "the evaluation returned None", seconds)
        return score, EvalResult((math.nan,), ("",), seconds)

    def _record(self, score, result: EvalResult):
        with self._lock:
            self.evaluations += 1
            self.last_result = result
            if not result.valid:
                self.failures[result.kind] = self.failures.get(result.kind, 0) + 1
                self.last_error = result.reason
                if hasattr(self._evaluator, "last_error"):
                    self._evaluator.last_error = result.reason
        if self._debug_mode and not result.valid:
            print(f"DEBUG: invalid program ({result.kind}): {result.reason}")
        return score, result


def _has_edits(evaluation) -> bool:
    return bool(getattr(evaluation, "use_numba_accelerate", False) or getattr(evaluation, "use_protected_div", False)
                or getattr(evaluation, "random_seed", None) is not None)


def host_code_edits(evaluation, program_str: str) -> tuple[str, str]:
    """The host's edits to a program before it runs (numba, protected division, a seed), as its
    ``SecureEvaluator`` makes them, through the host's public ``ModifyCode``; and the name of the
    program's function. The one place generated code is edited."""
    name = TextFunctionProgramConverter.text_to_function(program_str).name
    if getattr(evaluation, "use_numba_accelerate", False):
        program_str = ModifyCode.add_numba_decorator(program_str, function_name=name)
    if getattr(evaluation, "use_protected_div", False):
        program_str = ModifyCode.replace_div_with_protected_div(
            program_str, evaluation.protected_div_delta, evaluation.use_numba_accelerate)
    if getattr(evaluation, "random_seed", None) is not None:
        program_str = ModifyCode.add_numpy_random_seed_to_func(program_str, name, evaluation.random_seed)
    return program_str, name


def _host_evaluate(evaluation, code: str, name: str, kwargs: dict):
    """In a worker, through its judge: the program runs in a program process of its own."""
    judge = current_judge()
    if judge is not None and not kwargs:
        return judge.host_score(evaluation, code, name)
    namespace: dict = {}
    exec(code, namespace)
    return evaluation.evaluate_program(code, namespace[name], **kwargs)


def use_engine(method, executor=None, **kwargs) -> EngineEvaluator:
    """Replace a host method's evaluator (``method._evaluator``, a ``SecureEvaluator``) by an
    ``EngineEvaluator`` on the same evaluation; returns it."""
    current = getattr(method, "_evaluator", None)
    if current is None:
        raise TypeError(f"{type(method).__name__} has no _evaluator to replace")
    evaluation = getattr(current, "_evaluator", current)
    engine_evaluator = EngineEvaluator(evaluation, executor, **kwargs)
    method._evaluator = engine_evaluator
    return engine_evaluator
