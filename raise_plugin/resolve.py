"""A run's settings against what they name, before the run writes anything: the task's robust
defaults for those left unset, and the task, method, baselines, replay source and executor they
name, each looked up and checked (``RunConfig`` checks only what each value is); a bad one is a
one-line ``ConfigError`` naming its field, as a bad value is."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from tasks import Task, get_task, list_tasks

from .adversary.projection import check_epsilon
from .adversary.settings import AdversaryConfig, AdversaryConfigError
from .config import ConfigError, RunConfig
from .engine.executors import ExecutorSpecError, parse_executor_spec
from .errors import UserError
from .llm.record import recording_path
from .methods import METHODS, get_method
from .robust import shape_of
from .settings import SETTINGS, section_of

__all__ = ["PAPER_DEFAULTS", "robust_defaults", "final_selection", "recorded_settings", "with_task_defaults",
           "RunParts", "resolve"]

# the settings a task may choose (``Task.robust_defaults``), and the paper's values of them
PAPER_DEFAULTS = {name: setting.fallback for name, setting in SETTINGS.items()
                  if setting.task_default and setting.fallback is not None and section_of(name)[0] == "run"}


def robust_defaults(task_name: str) -> dict[str, Any]:
    """The robust settings a run of ``task_name`` takes when they are not given: the task's
    (``Task.robust_defaults``), then the paper's."""
    try:
        own = dict(getattr(get_task(task_name), "robust_defaults", {}) or {})
    except (KeyError, TypeError, ValueError):  # an unknown task fails its own check (``resolve``)
        own = {}
    return {**PAPER_DEFAULTS, **own}


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
    unset = {name: value for name, value in robust_defaults(config.task).items() if getattr(config, name) is None}
    return dataclasses.replace(config, **unset) if unset else config


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
    config = with_task_defaults(config)
    adversary = _adversary(config)
    if config.method not in METHODS:
        _bad(config, "method", f"must be one of {', '.join(sorted(METHODS))}")
    if config.task not in list_tasks():
        _bad(config, "task", f"must be one of {', '.join(list_tasks())}")
    task = get_task(config.task)
    try:
        adversary.check_task(task)
    except AdversaryConfigError as exc:
        raise ConfigError(f"config field {exc.name!r}: {exc.reason}") from None
    if config.robust and config.constraint != "none":  # eps beyond the largest distance reachable is never reached
        reach = check_epsilon(task, config.epsilon)
        if reach is not None:
            raise ConfigError(f"config field 'epsilon': {config.epsilon:g} is beyond the largest distance "
                              f"{config.task}'s distributions can reach from its nominal histograms ({reach:.4g})")
    if config.llm.startswith("replay:"):
        try:
            recording_path(config.llm.partition(":")[2])
        except UserError as exc:
            raise ConfigError(f"config field 'llm': {exc}") from None
    if config.executor is not None:
        try:
            kind, count = parse_executor_spec(config.executor)
        except ExecutorSpecError as exc:
            _bad(config, "executor", str(exc))
        if config.workers is not None and (kind != "process" or count is not None):
            _bad(config, "workers", f"counts the local worker processes, and executor {config.executor!r} already "
                                    f"says where programs run: give --workers N or --executor process:N, not both")
    method = get_method(config.method)
    if config.programs_in_flight > 1:
        refused = shape_of(method).lanes_refused(method)
        if refused:
            raise ConfigError(f"config field 'programs_in_flight': method {config.method!r} evaluates one program "
                              f"at a time, not {config.programs_in_flight}: {refused}")
    return config, RunParts(task, method, adversary)


def _adversary(config: RunConfig) -> AdversaryConfig:
    """The run's ``AdversaryConfig``, checked there; a bad value is a ``ConfigError`` for its field."""
    try:
        return AdversaryConfig(config.epsilon, config.tau, config.tau_unit, config.inner_population,
                               config.inner_generations, config.aggregation, config.max_adversarial,
                               config.adversary_objective, config.inner_draws, config.adversary_switches(),
                               config.instances_per_refresh)
    except AdversaryConfigError as exc:
        why = exc.reason + (" (a plain run is --no-robust)" if exc.name == "epsilon" else "")
        raise ConfigError(f"config field {exc.name!r}: {why}") from None


def _bad(config: RunConfig, name: str, why: str):
    raise ConfigError(f"config field {name!r}: {why}, got {getattr(config, name)!r}")
