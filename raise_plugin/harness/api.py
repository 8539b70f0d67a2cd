"""The harness from Python: ``compare(...)`` is ``raise-ahd compare`` and ``profile(...)`` is
``raise-ahd profile``, with keywords, each returning its result."""
from __future__ import annotations

import os
from numbers import Integral, Real
from pathlib import Path
from typing import Iterable

from raise_plugin.adversary.projection import check_epsilon
from raise_plugin.engine.suite import Heuristic, check_heuristics
from raise_plugin.errors import BadArgumentType, UserError
from raise_plugin.harness.compare import CompareResult, run_compare
from raise_plugin.harness.compare_config import CompareConfig, given_once
from raise_plugin.harness.profile_files import save_profile
from raise_plugin.harness.rerank import check_recorded_task
from raise_plugin.harness.robustness_profile import Profile, robustness_profile
from raise_plugin.programs import ProgramError, check_program, read_program
from raise_plugin.progress import check_progress
from raise_plugin.settings import SETTINGS, SettingError, check_settings, default, fallback, plain_value
from tasks import Task, get_task, list_tasks
from tasks.common.classical import classical_rules

__all__ = ["compare", "profile", "PROFILE_EPSILONS", "PROFILE_OBJECTIVES"]

PROFILE_EPSILONS = (0.001, 0.002, 0.005, 0.01)  # raise-ahd profile's default radii
PROFILE_OBJECTIVES = {"metric": {}, "regret:baselines": {"objective": "regret", "references": "baselines"}}


def compare(task: str = default("task"), *, seeds: int | tuple = default("seeds"), quiet: bool = False,
            progress: bool | str = default("progress"), **fields) -> CompareResult:
    """Train every method plain and with RAISE, evaluate them and the baselines on the test suite,
    and write the tables, figures and report to ``out`` (``CompareConfig``'s fields as keywords).

    ``task`` is a name or a file or module reference (``"my_task.py:MyTask"``), or a registered task; ``seeds`` a
    count (seeds 0..N-1) or the seeds themselves. The result holds the tables
    (``result.tables[name].markdown()``), the paired tests (``result.comparisons``; any other
    pair with ``result.paired("eoh-raise-eps0.002", "eoh-plain")``), the variants by key
    (``result.variant("eoh", robust=True, epsilon=0.002)``), the figures' paths
    (``result.figures``) and the report's (``result.report``). ``reuse`` says what of an earlier
    compare in ``out`` is kept (matching, never, any: ``harness.reuse``), ``figure_formats``
    the figures' files (png, pdf, svg; default png and pdf). ``progress``: ``True`` (a bar where a person watches,
    plain lines in a log), ``False``, or a mode (``"bar"``, ``"lines"``, ``"off"``, ``"auto"``).
    """
    check_progress(progress)  # before the settings, as the command line checks its flags
    seeds = plain_value(seeds)  # np.int64(3) a count as 3 is
    if isinstance(seeds, int) and not isinstance(seeds, bool):  # a count; anything else, CompareConfig checks
        try:
            SETTINGS["seeds"].check(seeds)
        except SettingError as exc:
            raise UserError(str(exc)) from None
        seeds = tuple(range(seeds))
    return run_compare(CompareConfig(task=task, seeds=seeds, **fields), quiet=quiet, progress=progress)


def profile(task, heuristics, *, epsilons: float | Iterable[float] = PROFILE_EPSILONS,
            adversary_seeds: int | Iterable[int] = default("adversary_seeds"),
            inner_population: int = default("inner_population"), inner_generations: int = default("inner_generations"),
            projection: str = fallback("projection"), adversary_objective: str = fallback("adversary_objective"),
            workers: int | None = default("workers"), timeout: float | None = default("timeout"),
            out: str | Path | None = None, progress: bool | str | None = None) -> Profile:
    """The worst metric the adversary finds within each radius of ``epsilons`` around the nominal
    distributions, for every heuristic: ``raise-ahd profile`` from Python. Returns the ``Profile``
    (its ``points``, ``nominal``, ``nominal_worst``, ``summary(h, eps)``, ``markdown()``); with
    ``out``, writes profile.json, profile.md, profile.png and a worst-distribution figure per
    heuristic there.

    ``task``: a task or its name or reference. ``heuristics``: one or several, each a ``.py``
    file, a run directory, an llm4ad log directory, the name of one of the task's baselines, or
    a ``Heuristic``. ``epsilons``: one radius or several; ``adversary_seeds``: a count (seeds
    0..N-1) or the seeds, searched per radius; ``inner_population`` (P_in) and
    ``inner_generations`` (G_in): the adversary's GA; ``adversary_objective``: ``"metric"``, or
    ``"regret:baselines"`` (the search maximises the regret against the task's baselines; the
    profile reports the metric); ``timeout``: seconds per instance (default: the task's);
    ``progress``: ``True`` (a bar where a person watches, plain lines in a log), ``False``, a mode
    (``"bar"``, ``"lines"``, ``"off"``, ``"auto"``) or ``None`` (the default: a bar when a terminal
    or notebook watches, else nothing; ``RAISE_PROGRESS`` overrides). Each keyword is the
    setting of the same name (``raise_plugin.settings``); bad input is a one-line ``UserError``.
    """
    check_progress(progress)
    adversary_seeds, inner_population, inner_generations, workers, timeout = (
        plain_value(v) for v in (adversary_seeds, inner_population, inner_generations, workers, timeout))
    task = _task(task)
    chosen = _heuristics(task, heuristics)
    radii = _epsilons(task, epsilons)
    seeds = _adversary_seeds(adversary_seeds)
    try:
        check_settings({"inner_population": inner_population, "inner_generations": inner_generations,
                        "projection": projection, "workers": workers, "timeout": timeout})
    except SettingError as exc:
        raise UserError(str(exc)) from None
    if projection == "none" or not isinstance(adversary_objective, str) or adversary_objective not in \
            PROFILE_OBJECTIVES:  # a list was a TypeError (unhashable type)
        raise UserError(f"a profile searches with projection paper or sphere and adversary_objective "
                        f"{' or '.join(PROFILE_OBJECTIVES)}, got {projection!r} and {adversary_objective!r}")
    alone = [h.baseline for h in chosen if adversary_objective == "regret:baselines" and h.baseline is not None
             and not set(task.baselines) - {h.baseline}]
    if alone:  # its references are the other baselines: every search would fail
        raise UserError(f"adversary_objective: regret:baselines measures {alone[0]} against no baseline, it being "
                        f"{task.name}'s only one; profile it with metric")
    if out is not None and not isinstance(out, (str, os.PathLike)):
        raise UserError(f"out: give a folder's path, got {out!r}")
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise UserError(f"out {out}: not a directory")
    result = robustness_profile(task.name, chosen, radii, seeds, inner_population=inner_population,
                                inner_generations=inner_generations, workers=workers, progress=progress,
                                timeout=timeout, projection=projection, **PROFILE_OBJECTIVES[adversary_objective])
    if out is not None:
        save_profile(result, out)
    return result


def _adversary_seeds(given) -> list[int]:
    """The profile's adversary seeds from a count or the seeds themselves: whole numbers of at least 0,
    none twice (a search counted twice reads as no spread); else a one-line ``UserError``."""
    whole = lambda v: isinstance(v, Integral) and not isinstance(v, bool)  # noqa: E731 - True is no count
    count = given if whole(given) else len(given) if isinstance(given, (list, tuple)) else None
    if count is not None:  # at most the setting's bound, before a list of a count of 10**11 is made
        try:
            check_settings({"adversary_seeds": max(count, 1)})
        except SettingError as exc:
            raise UserError(str(exc)) from None
    if whole(given):
        seeds = list(range(given))
    elif isinstance(given, Iterable) and not isinstance(given, (str, bytes)):
        seeds = [plain_value(seed) for seed in given]
    else:
        raise UserError(f"adversary_seeds: give a count of at least 1, or the seeds, got {given!r}")
    if not seeds or not all(whole(s) and s >= 0 for s in seeds):
        raise UserError(f"adversary_seeds: give a count of at least 1, or seeds that are whole numbers >= 0, "
                        f"got {given!r}")
    return list(given_once("adversary_seeds", tuple(seeds)))


def _task(task):
    if isinstance(task, Task):
        return task
    if not isinstance(task, str):
        raise BadArgumentType(f"task: give a task, its name or a file or module reference, got "
                              f"{type(task).__name__} {task!r:.40}")
    try:
        return get_task(task)
    except KeyError:
        raise UserError(f"unknown task {task!r}; choose from {', '.join(list_tasks())}") from None


def _heuristics(task, given) -> list[Heuristic]:
    """Each heuristic given as a ``Heuristic``, a program's source or the name of one of the task's
    classical rules (``classical_rules``: its baselines, then its other rules, as ``evaluate`` takes them)."""
    if isinstance(given, (str, os.PathLike, Heuristic)):
        given = [given]
    if not isinstance(given, Iterable):
        raise UserError(f"heuristics: give each as a file, a baseline's name or a Heuristic, got {given!r:.40}")
    rules = list(classical_rules(task))
    lookup = {b.lower(): b for b in rules}
    chosen, paths = [], {}  # paths: index in chosen -> the file or directory its program came from
    for h in given:
        if isinstance(h, Heuristic):
            chosen.append(h)
        elif not isinstance(h, (str, os.PathLike)):
            raise UserError(f"heuristics: give each as a file, a baseline's name or a Heuristic, got {h!r}")
        elif Path(h).exists():
            if Path(h).resolve() in {p.resolve() for p in paths.values()}:
                raise UserError(f"heuristics: {h} given twice")
            check_recorded_task(h, task)  # a run on another task: its program meets instances it was not written for
            try:
                name, code = read_program(h)
                check_program(code, source=str(h), template=getattr(task, "template_program", None))
            except ProgramError as exc:
                raise UserError(str(exc)) from None
            except UnicodeDecodeError:
                raise UserError(f"{h}: not UTF-8 text (a heuristic file must be UTF-8 text)") from None
            paths[len(chosen)] = Path(h)
            chosen.append(Heuristic(name, code=code))
        elif str(h).lower() in lookup:
            chosen.append(Heuristic(lookup[str(h).lower()], baseline=lookup[str(h).lower()]))
        else:
            raise UserError(f"heuristics: {str(h)!r} is neither a file or directory nor a baseline of {task.name} "
                            f"({', '.join(rules)})")
    if not chosen:
        raise UserError("nothing to profile: give heuristic files or baseline names")
    names = [h.name for h in chosen]
    for i, path in paths.items():  # named by its path where another has its name (runs/a/best.py, runs/b/best.py)
        if names.count(chosen[i].name) > 1:
            chosen[i] = Heuristic(str(path), code=chosen[i].code)
    return check_heuristics(task, chosen)  # each baseline the task's, no name twice


def _epsilons(task, epsilon) -> list[float]:
    values = [epsilon] if isinstance(epsilon, Real) else list(epsilon) if isinstance(epsilon, Iterable) else []
    if not values or not all(isinstance(v, Real) and v > 0 for v in values):
        raise UserError(f"epsilons: give one or more positive radii, got {epsilon!r}")
    values = sorted(given_once("epsilons", tuple(float(v) for v in values), shown=lambda eps: f"{eps:g}"))
    beyond = check_epsilon(task, values[-1])
    if beyond is not None:
        raise UserError(f"epsilons: {beyond}")
    return values
