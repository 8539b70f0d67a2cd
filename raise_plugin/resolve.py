"""A run's settings against what they name, before the run writes anything: the task's robust
defaults for those left unset, and the task, method, baselines, replay source and executor they
name, each looked up and checked (``RunConfig`` checks only what each value is); a bad one is a
one-line ``ConfigError`` naming its field, as a bad value is."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks import Task, get_task, list_tasks

from .adversary.adversary_config import AdversaryConfig
from .config import ConfigError, RunConfig, bad_field
from .engine.executors import check_engine
from .instance_seeds import resolve_instance_seed
from .llm import check_llm
from .llm.endpoint import started_endpoint
from .llm.recording import Recording
from .methods import METHODS, get_method
from .robust import idle_adversary, shape_of
from .rundir.lock import RunDirectoryBusy, lock_holder
from .settings import SETTINGS, SettingError, section_of

__all__ = ["PAPER_DEFAULTS", "robust_defaults", "task_defaults", "final_selection", "recorded_settings",
           "with_task_defaults", "RunParts", "resolve", "default_out", "started"]

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


def default_out(config: RunConfig, task: Task) -> str:
    """Where a run of ``config`` on ``task`` writes when no ``out`` is given: named by the task's name
    (a task given by file or module: its name, not the reference), method, kind, seed and start."""
    kind = "robust" if config.robust else "plain"
    return str(Path("runs") / f"{task.name}-{config.method}-{kind}-seed{config.seed}-{time.strftime('%Y%m%d-%H%M%S')}")


def started(config: RunConfig, task: Task) -> RunConfig:
    """``config`` as a new run of ``task`` records it: with its run directory (``default_out`` when
    it names none), the back-end and the endpoint resume will call (``started_endpoint``: its model
    pinned, its base URL) and an instance seed no program can know (``resolve_instance_seed``)."""
    out = config.out or default_out(config, task)
    backend, base_url = started_endpoint(config.llm.backend, config.llm.base_url)
    instance_seed = resolve_instance_seed(config.instance_seed, config.task, config.seed)
    return config.replace(out=out, llm=backend, base_url=base_url, instance_seed=instance_seed)


@dataclass(frozen=True)
class RunParts:
    """What a run's settings name, looked up: its task, its method's class (not yet wrapped), its
    adversary's settings (what the adversarial callback is made from) and why that adversary can
    never run (``robust.idle_adversary``; ``None``: it can)."""

    task: Task
    method: type
    adversary: AdversaryConfig
    idle: str | None = None


def resolve(config: RunConfig) -> tuple[RunConfig, RunParts]:
    """``config`` with its task's defaults (``with_task_defaults``), and the parts it names (and
    whether its adversary would idle: ``RunParts.idle``); a ``ConfigError`` naming the field when
    the method or task is not registered, a baseline named by the aggregation or the objective is
    not the task's, eps is beyond the task's reach, a replay source holds no recording, or the
    executor names none; a ``RunDirectoryBusy`` when the run a replay reads is still being written."""
    if config.method not in METHODS:
        bad_field("method", config.method, f"must be one of {', '.join(sorted(METHODS))}")
    if config.task not in list_tasks():
        bad_field("task", config.task, f"must be one of {', '.join(list_tasks())}")
    task = get_task(config.task)
    config = config.with_unset(task_defaults(task))
    try:  # each part checks what its section names (a bad value: a one-line error naming the field)
        adversary = AdversaryConfig.checked(config.adversary)
        adversary.check_task(task, reach=config.robust)
        recording = check_llm(config.llm, out=config.out)  # a replay's answers bound its samples and generations
        check_engine(config.engine)
    except SettingError as exc:
        why = exc.reason + (" (a plain run is --no-robust)" if exc.name == "epsilon" else "")
        raise ConfigError(f"config field {exc.name!r}: {why}", exc.name, exc.reason) from None
    _check_replayed_run(recording)
    answers = None if recording is None else len(recording.answers)
    idle = idle_adversary(config.budget, config.adversary, answers) if config.robust else None
    available = len(task.nominal_instances())  # a run trains on the first N of its nominal set: no more than it has
    if config.adversary.nominal is not None and config.adversary.nominal > available:
        bad_field("nominal", config.adversary.nominal, f"{task.name} has {available} nominal instances")
    method = get_method(config.method)
    in_flight = config.engine.programs_in_flight
    if in_flight > 1:
        refused = shape_of(method).lanes_refused(method)
        if refused:
            raise ConfigError(f"config field 'programs_in_flight': method {config.method!r} evaluates one program "
                              f"at a time, not {in_flight}: {refused}")
    return config, RunParts(task, method, adversary, idle)


def _check_replayed_run(recording: Recording | None) -> None:
    """A replay of a run another process still writes is refused (``RunDirectoryBusy``): its journal
    and its records would be read halfway, and counted apart."""
    run = None if recording is None else recording.run
    holder = lock_holder(run) if run is not None else None
    if holder is not None:
        raise RunDirectoryBusy(f"{run} is in use by {holder}; replay it when it has ended")
