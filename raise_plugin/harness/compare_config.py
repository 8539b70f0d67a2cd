"""What ``raise-ahd compare`` runs: ``CompareConfig``, checked on creation with one-line errors naming the field."""
from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from numbers import Real
from types import MappingProxyType
from typing import Any, Mapping

from raise_plugin.config import ConfigError, LLMSettings, RunConfig
from raise_plugin.engine.executors import parse_executor_spec
from raise_plugin.errors import UserError, unexpected_keyword
from raise_plugin.llm import make_llm
from raise_plugin.methods import METHODS
from raise_plugin.resolve import final_selection, resolve, robust_defaults
from raise_plugin.selection import check_selection_suite
from raise_plugin.settings import SETTINGS, SettingError, check_settings, default, plain_value
from tasks import Task, get_task, is_task_reference, list_tasks, reference_of, task_reference

__all__ = ["CompareConfig", "StudySettings", "RUN_CONTROLS", "STUDY_CAPS", "DEFAULT_OUT", "given_once"]

# what every run of a compare is given as it is: the sandbox's limits and the endpoint's controls
RUN_CONTROLS = ("timeout", "memory_mb", "file_mb", "output_mb", "base_url", "max_tokens", "llm_timeout",
                "max_failed_requests", "prices", "instance_seed", "allow_no_refresh")
# caps over the whole study: each run is given what is left of them when it starts (harness.study_budget)
STUDY_CAPS = ("max_cost_usd", "max_llm_calls")
# the settings every run of a compare is given (``CompareConfig.runs``); each run adds its method, kind, eps and seed
RUN_SETTINGS = ("task", "budget", "pop_size", "llm", "tau", "inner_population", "inner_generations", "nominal",
                "aggregation", "adversary_objective", "inner_draws", "projection", "programs_in_flight", *RUN_CONTROLS)
DEFAULT_OUT = "compare-out"
# the settings of a compare in the order ``compare.json`` records them
RECORDED_ORDER = ("task", "methods", "epsilons", "ablations", "budget", "pop_size", "seeds", "llm", "out", "tau",
                  "inner_population", "inner_generations", "nominal", "suite_instances", "workers", "executor",
                  "jobs", "ship_runs", "aggregation", "adversary_objective", "inner_draws", "projection",
                  "programs_in_flight", "select_on",
                  "timeout", "memory_mb", "file_mb", "output_mb", "base_url", "max_tokens", "llm_timeout",
                  "max_failed_requests", "prices", "allow_no_refresh", "instance_seed", "max_cost_usd",
                  "max_llm_calls", "reuse", "figure_formats")


@dataclass(frozen=True)
class StudySettings:
    """A compare's own settings (the tree's ``harness`` section): the methods and the robust runs'
    radii it trains, the ablations, the seeds themselves, its directory, how a run's final program
    is chosen and how many instances per dataset it is evaluated on, where its jobs run, and the
    caps over the whole study (``STUDY_CAPS``: the sum over its runs), what of an earlier compare in
    its directory it keeps (``reuse``) and its figures' files. ``epsilons`` and ``select_on``
    left unset (``None``) are the task's, filled by ``CompareConfig``."""

    methods: tuple = default("methods")
    epsilons: tuple | None = default("epsilons")
    ablations: bool = default("ablations")
    seeds: tuple = tuple(range(default("seeds")))
    out: str = DEFAULT_OUT
    suite_instances: int | None = default("suite_instances")
    select_on: str | None = default("select_on")
    workers: int | None = default("workers")
    executor: str | None = default("executor")
    jobs: int | None = default("jobs")
    ship_runs: bool | None = default("ship_runs")
    max_cost_usd: float | None = default("max_cost_usd")
    max_llm_calls: int | None = default("max_llm_calls")
    reuse: str = default("reuse")
    figure_formats: tuple = default("figure_formats")


@dataclass(frozen=True, init=False)
class CompareConfig:
    """What ``raise-ahd compare`` runs, in two sections: ``runs``, the ``RunConfig`` every run of the
    study is given (its task, budget, adversary, LLM and sandbox; ``run_fields`` adds each run's
    method, kind, eps and seed), and ``study``, the compare's own (``StudySettings``). Made from the
    settings by name, flat (``CompareConfig(task="obp", budget=40, seeds=(0, 1))``; each the setting
    of the same name in the tree, ``raise_plugin.settings``, with its default), from the sections,
    or both (the named settings over the sections; a ``runs`` setting a compare does not pass on is
    refused); checked on creation, one-line errors naming the field. ``seeds`` are the seeds themselves,
    ``epsilons`` the robust runs' radii (the task's eps when not given); ``methods`` and ``epsilons``
    are each a list or, as on the command line, a comma-separated string (``"eoh,reevo"``; ``epsilons``
    one number too), as is ``figure_formats``,
    and no item of these four may be given twice; ``out`` is a path or its text. The run's controls (``RUN_CONTROLS``:
    sandbox limits, endpoint, tokens, timeouts, prices) pass to every run as they are; the caps
    (``STUDY_CAPS``) hold for the whole study; ``to_dict`` gives the settings flat, as
    ``compare.json`` records them."""

    runs: RunConfig = field(default_factory=RunConfig)
    study: StudySettings = field(default_factory=StudySettings)

    def __init__(self, runs: RunConfig | None = None, study: StudySettings | None = None, **settings: Any):
        for name, value, cls in (("runs", runs, RunConfig), ("study", study, StudySettings)):
            if value is not None and not isinstance(value, cls):  # a mapping: its settings as keywords instead
                raise UserError(f"{name}: give a {cls.__name__}, or its settings as keywords, got "
                                f"{type(value).__name__}")
        if runs is not None:
            _check_run_only(runs)
        given = {**({name: getattr(study, name) for name in _STUDY} if study is not None else {}),
                 **({name: value for name, value in runs.to_dict().items() if name in RUN_SETTINGS}
                    if runs is not None else {}),
                 **{name: plain_value(value) for name, value in settings.items()}}
        unknown = sorted(set(given) - set(RECORDED_ORDER))
        if unknown:
            raise unexpected_keyword("CompareConfig", unknown[0], RECORDED_ORDER)
        flat = {**{name: default(name) for name in RUN_SETTINGS}, **{f.name: f.default for f in fields(StudySettings)},
                **given}
        task = flat["task"] = _task_name(flat["task"])
        if task not in list_tasks():  # a file or module reference loads here, or fails in one line
            raise UserError(f"task: unknown {task!r}; choose from {', '.join(list_tasks())}")
        if is_task_reference(task):  # the file's absolute path: jobs and re-runs find it from anywhere
            flat["task"] = task = task_reference(task)
        flat["methods"] = given_once("methods", _listed("methods", flat["methods"]))
        for m in flat["methods"]:
            if m not in METHODS:
                raise UserError(f"methods: unknown {m!r}; choose from {', '.join(sorted(METHODS))}")
        if not flat["methods"]:
            raise UserError("methods: give at least one method")
        if flat["select_on"] is None:
            flat["select_on"] = final_selection(task)
        try:
            _text("select_on", flat["select_on"])
            check_selection_suite(flat["select_on"], ("robust", "validation"))
        except UserError as exc:  # its message names the setting but for select_on='test'
            raise UserError(str(exc) if str(exc).startswith("select_on") else f"select_on: {exc}") from None
        defaults = robust_defaults(task)
        if flat["epsilons"] is None:
            flat["epsilons"] = (defaults["epsilon"],)
        for name in ("aggregation", "adversary_objective", "projection"):
            if flat[name] is None:
                flat[name] = defaults[name]
        flat["epsilons"], flat["seeds"] = _radii(flat["epsilons"]), _seeds(flat["seeds"])
        flat["out"] = _directory(flat["out"])
        flat["figure_formats"] = given_once("figure_formats", tuple(
            str(f).lower() for f in _listed("figure_formats", flat["figure_formats"])))
        if not flat["figure_formats"]:
            raise UserError(f"figure_formats: give one or more of {', '.join(SETTINGS['figure_formats'].choices)}")
        _text("executor", flat["executor"])
        if not flat["seeds"]:
            raise UserError("seeds: give at least one seed")
        if flat["ablations"] and not flat["epsilons"]:
            raise UserError("ablations: need at least one robust eps")
        try:
            check_settings({name: flat[name] for name in (
                "epsilons", "budget", "pop_size", "tau", "inner_population", "inner_generations", "nominal",
                "suite_instances", "workers", "jobs", "ship_runs", "ablations", "max_cost_usd", "max_llm_calls",
                "reuse", "figure_formats")})
        except SettingError as exc:
            raise UserError(str(exc)) from None
        object.__setattr__(self, "study", StudySettings(**{name: flat[name] for name in _STUDY}))
        try:  # every run's settings, then each method's run at the largest eps as compare builds them: the
            # run's own checks (values, then names: an eps beyond the task's reach, a method that cannot take
            # several programs in flight) hold before any job, not at the job that meets them
            object.__setattr__(self, "runs", RunConfig(**{name: flat[name] for name in RUN_SETTINGS}))
            robust = bool(self.study.epsilons)  # no radius: plain runs only
            for method in self.study.methods:
                resolve(RunConfig(**dict(self.run_fields(method, robust, max(self.study.epsilons) if robust else None,
                                                         self.study.seeds[0]))))
        except ConfigError as exc:
            if exc.field == "epsilon":  # compare's setting is epsilons, and its plain rows need no flag
                raise UserError(f"epsilons: {exc.reason}") from None
            raise UserError(str(exc).replace("config field ", "")) from None
        if self.study.executor is not None:  # a bad spec, or one the other job settings contradict, fails here
            _check_job_place(self.study.executor, self.study.jobs, self.study.workers)
        # a bad back-end fails here, not in every job
        _check_llm(self.runs.llm, self.runs.task, self.study.max_cost_usd)

    def run_fields(self, method: str, robust: bool, epsilon: float | None, seed: int,
                   switches: Mapping[str, Any] | tuple = MappingProxyType({})) -> tuple:
        """The ``RunConfig`` fields of one run of the compare (``runs`` with the run's method, kind,
        eps and seed, and an ablation's switches over them), but its run directory and evaluation
        executor, as sorted (field, value) pairs."""
        switches = dict(switches)  # a variant's, as (setting, value) pairs
        run = self.runs.replace(method=method, robust=robust, epsilon=epsilon if robust else None, seed=seed,
                                **switches).to_dict()
        return tuple(sorted((name, run[name]) for name in {"method", "robust", "epsilon", "seed", *RUN_SETTINGS,
                                                           *switches}))

    def evaluation_limits(self) -> dict:
        """The sandbox every suite evaluation of the compare runs in, as its runs had it: the seconds
        per instance (``None``: the task's) and the limits apart from the engine's own (``EvalJob``)."""
        sandbox = self.runs.engine.sandbox
        return {"timeout": sandbox.timeout, "limits": tuple(sandbox.set_apart().items())}

    def to_dict(self) -> dict[str, Any]:
        """Every setting by name, flat, in the order ``compare.json`` records them."""
        runs = self.runs.to_dict()
        flat = {**{name: runs[name] for name in RUN_SETTINGS}, **{name: getattr(self.study, name) for name in _STUDY}}
        return {name: flat[name] for name in RECORDED_ORDER}


_STUDY = tuple(f.name for f in fields(StudySettings))


# a run's settings a compare sets itself, each by its own setting: a ``runs`` that gives one is told which
_ITS_OWN = {"method": "methods=", "robust": "epsilons= (an empty list: plain runs only)", "epsilon": "epsilons=",
            "seed": "seeds=", "out": "out=", "executor": "executor=", "workers": "workers=",
            "max_cost_usd": "max_cost_usd=", "max_llm_calls": "max_llm_calls="}


def _check_run_only(runs: RunConfig) -> None:
    """A one-line ``UserError`` when ``runs`` sets a run's setting that a compare does not give its runs as it is
    (``RUN_SETTINGS`` aside): the compare trained its own methods, radii and seeds, at the defaults of the rest."""
    for name, value in runs.to_dict().items():
        if name not in RUN_SETTINGS and value != default(name):
            fix = f"give the compare's {_ITS_OWN[name]} instead" if name in _ITS_OWN else \
                "a compare trains at its default"
            raise UserError(f"runs: {name}={value!r} is not passed to a compare's runs; {fix}")


def _task_name(task: Any) -> Any:
    """A task given as itself (``rp.get_task("ovrp")``, as ``profile`` takes it) by the name or reference its
    jobs find it by; one this process did not register is a one-line ``UserError`` (it said ``unknown <Task ovrp>``)."""
    if not isinstance(task, Task):
        return task
    if task.name not in list_tasks() or get_task(task.name) is not task:
        raise UserError(f"task: {task.name!r} is not a registered task: register it (rp.register_task) or give its "
                        "file or module reference (my_task.py:MyTask)")
    return reference_of(task)


def _check_job_place(executor: str, jobs: int | None, workers: int | None) -> None:
    """A ``UserError`` when ``jobs`` or ``workers`` asks for what ``executor`` does not do (``place_jobs``):
    ``serial`` runs one job at a time on one worker, Dask one job per worker thread on as many workers
    as its Dask worker has threads (or ``workers``), and ``process:W`` gives each job W workers."""
    kind, arg = parse_executor_spec(executor)
    if kind in ("serial", "dask") and jobs is not None and jobs > 1:
        raise UserError(f"jobs: {jobs} jobs at once with --executor {executor}, which runs "
                        + ("one job at a time" if kind == "serial" else "one job per Dask worker thread")
                        + "; leave out --jobs, or use --executor process")
    if workers is not None and ((kind == "serial" and workers > 1) or (kind == "process" and arg and arg != workers)):
        said = "evaluates on one worker" if kind == "serial" else f"gives each job {arg} workers"
        raise UserError(f"workers: {workers} with --executor {executor}, which {said}; give one of the two")


def _listed(name: str, value: Any) -> tuple:
    """The items of list setting ``name`` (``methods``, ``epsilons``): a list as it is, or a
    comma-separated string split as its flag splits it (``"eoh,reevo"``)."""
    if isinstance(value, str):
        return tuple(item.strip() for item in value.split(",") if item.strip())
    if isinstance(value, (bytes, Mapping)) or not isinstance(value, Iterable):
        what = "numbers" if name == "epsilons" else "names"
        raise UserError(f"{name}: must be a list of {what} or a comma-separated string, got {value!r}")
    if isinstance(value, (set, frozenset)):  # its order changed from process to process, and the tables' with it
        raise UserError(f"{name}: give a list or a tuple, in the order the tables show them: a set has no order, "
                        f"got {value!r}")
    return tuple(value)


def given_once(name: str, items: tuple, shown=repr) -> tuple:
    """``items`` of setting ``name`` if none is given twice (a twice-trained variant, a test counted
    twice in the Holm correction), else a one-line ``UserError`` naming the first repeated one."""
    for i, item in enumerate(items):
        if item in items[:i]:
            raise UserError(f"{name}: {shown(item)} given twice")
    return items


def _radii(value: Any) -> tuple[float, ...]:
    """The robust runs' radii eps as numbers, from a list, a comma-separated string or one number;
    no two alike, nor alike in the name of their runs (``eps0.002``: ``variants.plan_variants``)."""
    one = isinstance(value, Real) and not isinstance(value, bool)
    radii = []
    for item in _listed("epsilons", (value,) if one else value):
        try:
            eps = float(item) if isinstance(item, (Real, str)) and not isinstance(item, bool) else None
        except ValueError:
            eps = None
        if eps is None:
            raise UserError(f"epsilons: must be numbers, got {item!r}")
        if not math.isfinite(eps):
            raise UserError(f"epsilons: must be finite numbers, got {item!r}")
        radii.append(eps)
    given_once("epsilons", tuple(radii), shown=lambda eps: f"{eps:g}")
    named: dict[str, float] = {}
    for eps in radii:
        if f"{eps:g}" in named:
            raise UserError(f"epsilons: {named[f'{eps:g}']!r} and {eps!r} both name the runs eps{eps:g}")
        named[f"{eps:g}"] = eps
    return tuple(radii)


def _seeds(value: Any) -> tuple[int, ...]:
    """The seeds themselves (the command line's ``--seeds N`` is the seeds 0..N-1), each given once."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise UserError(f"seeds: must be the seeds themselves (a list of integers), got {value!r}")
    seeds = tuple(plain_value(seed) for seed in value)  # np.arange(3) too
    if len(seeds) > SETTINGS["seeds"].high:  # as many as the command line's count may give
        raise UserError(f"seeds: at most {SETTINGS['seeds'].high:g} seeds, got {len(seeds)}")
    for seed in seeds:
        try:
            SETTINGS["seed"].check(seed)
        except SettingError as exc:
            raise UserError(f"seeds: {exc.reason}") from None
    return given_once("seeds", seeds)


def _directory(value: Any) -> str:
    """The compare's directory ``out`` as text (``compare.json`` records it), from a path or a string."""
    path = os.fspath(value) if isinstance(value, os.PathLike) else value
    if not isinstance(path, str) or not path.strip():
        raise UserError(f"out: must be a directory's path, got {value!r}")
    return path


def _text(name: str, value: Any) -> None:
    """``value`` of setting ``name`` is a string or unset (``None``); else a one-line ``UserError``."""
    if value is not None and not isinstance(value, str):
        raise UserError(f"{name}: must be a string, got {value!r}")


def _check_llm(llm: LLMSettings, task: str, max_cost_usd: float | None = None) -> None:
    """Build the back-end once (offline, a key in the environment, a readable recording); a cost
    cap needs a price for its model."""
    built = make_llm(llm, seed=0, task=task)  # as a run of the study builds it (its seed aside)
    backend = getattr(built, "inner", built)
    if max_cost_usd is not None and getattr(backend, "priced", True) is False:
        raise UserError(f"max_cost_usd: model {backend.model!r} has no known price, so the study's cost cannot be "
                        f"capped; give one with --price {backend.model}=IN,OUT (dollars per million tokens)")
