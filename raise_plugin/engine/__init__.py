"""Evaluation engine: generated programs run in sandboxed, reusable worker processes,
fanned out over instances and programs through an executor (local processes or Dask).

    from raise_plugin.engine import Engine, EngineEvaluator, use_engine, make_executor
"""
from .evaluator import EngineEvaluator, use_engine
from .executors import make_executor
from .fanout import Engine, as_program
from .foreign_executors import DaskExecutor, SandboxedCalls, run_call, run_job
from .jobs import InstanceSet, Job, ProgramSpec, SourcePriority
from .judge import evaluate_heuristic
from .limits import SandboxLimits
from .local_executors import ProcessExecutor, SerialExecutor, default_workers
from .results import EvalResult, FailureKind
from .worker_handle import CallTimeout, WorkerDied

__all__ = ["Engine", "EngineEvaluator", "use_engine", "as_program", "make_executor", "ProcessExecutor",
           "SerialExecutor", "DaskExecutor", "SandboxedCalls", "default_workers", "run_job", "run_call",
           "InstanceSet", "Job", "ProgramSpec", "SourcePriority", "evaluate_heuristic", "SandboxLimits", "EvalResult",
           "FailureKind", "CallTimeout",
           "WorkerDied"]
