"""Executors: any object with ``submit(fn, *args) -> Future``; ours also take jobs.

``ProcessExecutor`` (default) keeps sandboxed worker processes sized to the machine;
``SerialExecutor`` runs one thing at a time; ``DaskExecutor`` fans out to a Dask cluster
(the ``dask`` extra). ``make_executor(spec)`` builds one from
``"serial"``, ``"process"``, ``"process:N"``, ``"dask://local"``, ``"dask://local:N"`` or
``"dask://HOST:PORT"``. Jobs (a program on an instance set) go through ``submit_job``
where an executor has it, which sends each instance set once per worker and version;
a foreign executor (a ``concurrent.futures`` pool, a Dask ``Client``) gets
``submit(run_job, job, instance_set, limits)``, which runs the job in a sandbox local to
wherever it lands.
"""
from __future__ import annotations

from ...config import EngineSettings
from ...settings import SettingError
from ..limits import SandboxLimits
from .foreign import DaskExecutor
from .local import ProcessExecutor, SerialExecutor
from .spec import ExecutorSpecError, check_spec, parse_executor_spec

__all__ = ["make_executor", "check_engine"]


def check_engine(engine: EngineSettings) -> None:
    """What a run's ``engine`` section names, before anything is made: its executor names one (a Dask
    scheduler's address: one that answers), and its workers are not given twice (``SettingError``
    naming the field, and the value given)."""
    if engine.executor is None:
        return
    try:  # the message quotes the spec; a scheduler's address that does not answer stops here too
        kind, count = check_spec(engine.executor)
    except ExecutorSpecError as exc:
        raise SettingError("executor", str(exc)) from None
    if engine.workers is not None and (kind != "process" or count is not None):
        raise SettingError("workers", f"counts the local worker processes, and executor {engine.executor!r} already "
                                      f"says where programs run: give --workers N or --executor process:N, not both, "
                                      f"got {engine.workers!r}")


def make_executor(spec=None, limits: SandboxLimits | None = None):
    """An executor from a spec: ``None``/``"process"`` (one worker per core), ``"process:N"``,
    an int N, ``"serial"``, ``"dask://local"``, ``"dask://local:N"``, ``"dask://HOST:PORT"``,
    or a run's ``engine`` section (``EngineSettings``: its executor, with the sandbox's limits it
    sets, unless ``limits`` are given); any object with ``submit`` is returned unchanged."""
    if isinstance(spec, EngineSettings):
        return make_executor(spec.evaluation_executor(), limits or SandboxLimits.of(spec))
    if spec is not None and not isinstance(spec, (str, int)) and hasattr(spec, "submit"):
        return spec
    kind, arg = parse_executor_spec(spec)
    if kind == "serial":
        return SerialExecutor(limits)
    if kind == "process":
        return ProcessExecutor(arg, limits)
    if isinstance(arg, tuple):
        return DaskExecutor("local", workers=arg[1], limits=limits)
    return DaskExecutor(arg, limits=limits)
