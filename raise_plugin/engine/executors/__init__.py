"""Executors, any object with ``submit(fn, *args) -> Future``: ours, a pool of sandboxed workers or
one thing at a time (``local``); foreign ones, a ``concurrent.futures`` pool or a Dask cluster
(``foreign``), and where Dask's own lines go (``dask_lines``); the specs a user writes (``spec``) and the
executor one names (``make``)."""
from .foreign import DaskExecutor, SandboxedCalls, no_worker_line, run_call, run_job, worker_width
from .local import ProcessExecutor, SerialExecutor, default_workers, executor_workers, say_if_weakened
from .make import check_engine, make_executor
from .spec import ExecutorSpecError, check_spec, parse_executor_spec

__all__ = ["DaskExecutor", "SandboxedCalls", "no_worker_line", "run_call", "run_job", "worker_width",
           "ProcessExecutor", "SerialExecutor", "default_workers", "executor_workers", "say_if_weakened", "make_executor",
           "check_engine", "ExecutorSpecError", "check_spec", "parse_executor_spec"]
