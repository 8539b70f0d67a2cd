"""A run's settings against what they name, before the run writes anything: the task's robust
defaults for those left unset, and the task, method, baselines, replay source and executor they
name, each looked up and checked (``RunConfig`` checks only what each value is); a bad one is a
one-line ``ConfigError`` naming its field, as a bad value is."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tasks import Task, get_task, list_tasks

from .adversary.projection import check_epsilon
from .adversary.adversary_config import AdversaryConfig, AdversaryConfigError
from .config import AdversarySettings, ConfigError, EngineSettings, LLMSettings, RunConfig, bad_field
from .engine.executors import ExecutorSpecError, parse_executor_spec
from .errors import UserError
from .instance_seeds import resolve_instance_seed
from .llm.endpoint import started_base_url
from .llm.record import recording_path
from .methods import METHODS, get_method
from .robust import shape_of
from .settings import SETTINGS, section_of

__all__ = ["PAPER_DEFAULTS", "robust_defaults", "task_defaults", "final_selection", "recorded_settings",
           "with_task_defaults", "RunParts", "resolve", "started"]

# the settings a task may choose (``Task.robust_defaults``), and the paper's values of them
PAPER_DEFAULTS = {name: setting.fallback for name, setting in SETTINGS.items()
                  if setting.task_default and setting.fallback is not None and section_of(name)[0] == "run"}


def robust_defaults(task_name: str) -> dict[str, Any]:
    """The robust settings a run of ``task_name`` takes when they are not given: the task's
    (``Task.robust_defaults``), then the paper's."""
    try:
        task = get_task(task_name)
    except (KeyError, TypeError, ValueError):  # an unknown task fails its own check (``resolve``)
        return dict(PAPER_DEFAULTS)
    return task_defaults(task)


def task_defaults(task: Task) -> dict[str, Any]:
    """The robust settings a run of ``task`` takes when they are not given: its own, then the paper's."""
    return {**PAPER_DEFAULTS, **(getattr(task, "robust_defaults", {}) or {})}


def final_selection(task_name: str) -> str:
    """What a finished run of ``task_name`` hands on when nothing else is asked for:
    ``"robust"`` (its robust best) or ``"validation"`` (``Task.final_selection``)."""
    try:
        return str(getattr(get_task(task_name), "final_selection", "robust"))
    except (KeyError, TypeError, ValueError):
        return "robust"


def recorded_settings(config: dict) -> dict:
    """A recorded config with its robust settings made explicit: one left unset was written
    before tasks had their own defaults, when unset meant the paper's, so a resumed (or
    replayed) run keeps the settings it started with whatever the task's defaults are now."""
    data = dict(config)
    for name, value in PAPER_DEFAULTS.items():
        if data.get(name) is None:
            data[name] = value
    data.setdefault("allow_no_refresh", True)  # recorded before a run that could not refresh was refused: it ran
    if "instance_seed" not in data:  # recorded before instances had a seed of their own: the public set
        data["instance_seed"] = "public"
    return data


def with_task_defaults(config: RunConfig) -> RunConfig:
    """``config`` with each robust setting it leaves unset (``None``) the task's, else the paper's
    (``robust_defaults``): the values its run directory's ``config.json`` records."""
    return config.with_unset(robust_defaults(config.task))


def started(config: RunConfig, out: str) -> RunConfig:
    """``config`` as a new run writing to ``out`` records it: with its run directory, the endpoint
    resume will call (``started_base_url``) and an instance seed no program can know
    (``resolve_instance_seed``)."""
    return config.replace(out=out, base_url=started_base_url(config.llm.backend, config.llm.base_url),
                          instance_seed=resolve_instance_seed(config.instance_seed, config.task, config.seed))


@dataclass(frozen=True)
class RunParts:
    """What a run's settings name, looked up: its task, its method's class (not yet wrapped) and
    its adversary's settings (what the adversarial callback is made from)."""

    task: Task
    method: type
    adversary: AdversaryConfig


def resolve(config: RunConfig) -> tuple[RunConfig, RunParts]:
    """``config`` with its task's defaults (``with_task_defaults``), and the parts it names; a
    ``ConfigError`` naming the field when the method or task is not registered, a baseline named
    by the aggregation or the objective is not the task's, eps is beyond the task's reach, a
    replay source holds no recording, or the executor names none."""
    if config.method not in METHODS:
        bad_field("method", config.method, f"must be one of {', '.join(sorted(METHODS))}")
    if config.task not in list_tasks():
        bad_field("task", config.task, f"must be one of {', '.join(list_tasks())}")
    task = get_task(config.task)
    config = config.with_unset(task_defaults(task))
    adversary = _adversary(config.adversary, task, config.robust)
    _check_llm(config.llm)
    _check_engine(config.engine)
    method = get_method(config.method)
    in_flight = config.engine.programs_in_flight
    if in_flight > 1:
        refused = shape_of(method).lanes_refused(method)
        if refused:
            raise ConfigError(f"config field 'programs_in_flight': method {config.method!r} evaluates one program "
                              f"at a time, not {in_flight}: {refused}")
    return config, RunParts(task, method, adversary)


def _adversary(settings: AdversarySettings, task: Task, robust: bool) -> AdversaryConfig:
    """The run's adversary settings checked for ``task`` (``AdversaryConfig``); a bad value is a
    ``ConfigError`` for its field."""
    try:
        adversary = AdversaryConfig.checked(settings)
        adversary.check_task(task)
    except AdversaryConfigError as exc:
        why = exc.reason + (" (a plain run is --no-robust)" if exc.name == "epsilon" else "")
        raise ConfigError(f"config field {exc.name!r}: {why}") from None
    if robust and adversary.inner_search.constraint != "none":  # eps beyond the farthest reachable: never reached
        reach = check_epsilon(task, adversary.epsilon)
        if reach is not None:
            raise ConfigError(f"config field 'epsilon': {adversary.epsilon:g} is beyond the largest distance "
                              f"{task.name}'s distributions can reach from its nominal histograms ({reach:.4g})")
    return adversary


def _check_llm(llm: LLMSettings) -> None:
    """A replay's source holds a recording."""
    if llm.kind == "replay":
        try:
            recording_path(llm.backend.partition(":")[2])
        except UserError as exc:
            raise ConfigError(f"config field 'llm': {exc}") from None


def _check_engine(engine: EngineSettings) -> None:
    """The executor names one, and the workers are not given twice."""
    if engine.executor is None:
        return
    try:
        kind, count = parse_executor_spec(engine.executor)
    except ExecutorSpecError as exc:
        bad_field("executor", engine.executor, str(exc))
    if engine.workers is not None and (kind != "process" or count is not None):
        bad_field("workers", engine.workers, f"counts the local worker processes, and executor {engine.executor!r} "
                                        f"already says where programs run: give --workers N or --executor "
                                        f"process:N, not both")
