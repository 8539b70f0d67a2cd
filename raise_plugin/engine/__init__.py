"""Evaluation engine: generated programs run in sandboxed, reusable worker processes,
fanned out over instances and programs through an executor (local processes or Dask).

    from raise_plugin.engine import Engine, EngineEvaluator, use_engine, make_executor
"""
from .evaluator import EngineEvaluator, use_engine
from .executors import (DaskExecutor, ProcessExecutor, SandboxedCalls, SerialExecutor, default_workers, make_executor,
                        run_call, run_job, say_if_weakened)
from .fanout import Engine, as_program
from .jobs import InstanceSet, Job, ProgramSpec, SourcePriority
from .judge import evaluate_heuristic
from .limits import SandboxLimits
from .results import EvalResult, FailureKind
from .workers import CallTimeout, WorkerDied

__all__ = ["Engine", "EngineEvaluator", "use_engine", "as_program", "make_executor", "ProcessExecutor",
           "SerialExecutor", "DaskExecutor", "SandboxedCalls", "default_workers", "run_job", "run_call",
           "InstanceSet", "Job", "ProgramSpec", "SourcePriority", "evaluate_heuristic", "SandboxLimits", "EvalResult",
           "FailureKind", "CallTimeout",
           "WorkerDied", "say_if_weakened"]
