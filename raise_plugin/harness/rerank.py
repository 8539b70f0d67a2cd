"""Re-rank the programs of a finished run (llm4ad log or plugin run directory) by robust score.

The adversary attacks the current robust best; its instance joins the set and every
candidate is re-scored; this repeats ``refreshes`` times, as RAISE's inner loop would
have done. The report compares the original and the robust ranking and, on the test
suite, the original best against the robust best. Programs and searches run in the
engine's sandboxed workers under the task's time limits; a program that has failed in
a way that repeats (timed out, ...) is not evaluated again, and a search that runs out
of time makes its program invalid.
"""
from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from raise_plugin.adversary import search
from raise_plugin.adversary.adversary_config import AdversaryConfig
from raise_plugin.adversary.sandboxed import search_program
from raise_plugin.config import AdversarySettings, ConfigError
from raise_plugin.engine import CallTimeout, ProcessExecutor, SandboxLimits, WorkerDied
from raise_plugin.engine.suite import Heuristic, evaluate_suite
from raise_plugin.errors import PluginWarning, UserError
from raise_plugin.harness.robustness_profile import search_timeout
from raise_plugin.resolve import task_defaults
from raise_plugin.selection import selects_on
from raise_plugin.programs import ProgramError
from raise_plugin.rundir.files import RunDirectoryDamaged
from raise_plugin.rundir.reader import load_config
from raise_plugin.settings import SettingError, default
from tasks import get_task, reference_of
from tasks.common.aggregation import Aggregation
from tasks.common.suite import Dataset

__all__ = ["RankedProgram", "load_run_programs", "rerank", "recorded_run_config", "run_nominal_seed", "robust_settings"]

_HOST_PREFACE = "import math\nimport numpy as np\n\n"


@dataclass
class RankedProgram:
    name: str
    code: str
    original_score: float
    robust_score: float = math.nan
    nominal_metric: float = math.nan


def recorded_run_config(path: str | Path) -> dict:
    """The settings the run in ``path`` recorded (its ``config.json``, or its parent's: a host log
    folder inside a run directory); empty for a host log folder of its own."""
    for folder in (Path(path), Path(path).parent):
        try:
            return load_config(folder)
        except RunDirectoryDamaged:
            continue
    return {}


def check_recorded_task(path: str | Path, task, recorded: dict | None = None) -> None:
    """A one-line ``UserError`` when the run in ``path`` (its settings ``recorded``, when read already:
    ``recorded_run_config``) ran on another task than ``task``: its programs would be scored on
    instances they were never written for."""
    recorded = recorded_run_config(path) if recorded is None else recorded
    if recorded.get("task") not in (None, task.name, reference_of(task)):
        raise UserError(f"{path} is a run on {recorded['task']}, not {task.name}: give --task {recorded['task']}")


def run_nominal_seed(path: str | Path, recorded: dict | None = None) -> int | None:
    """The seed of the nominal set the run in ``path`` trained on (its ``config.json``'s
    ``instance_seed``, or ``recorded``'s, read already); ``None``: the task's public set (a host log
    folder, an older run)."""
    seed = (recorded_run_config(path) if recorded is None else recorded).get("instance_seed")
    return int(seed) if isinstance(seed, str) and seed.isdigit() else None


def load_run_programs(path: str | Path) -> list[RankedProgram]:
    """Distinct valid programs with their recorded scores, from either kind of run folder: named by
    their program id in a run directory (as its summary and ``select`` name them), by their order
    (``p000``, ...) in a host log folder, which records none."""
    p = Path(path)
    found: dict[str, float] = {}
    ids: dict[str, str] = {}  # a run directory's own program ids, as its summary and select name them
    damaged: list[str] = []
    bad: list[str] = []  # records that hold no program text with a score (a failed program's is null)
    if (p / "samples.jsonl").is_file():
        for number, line in enumerate((p / "samples.jsonl").read_text(errors="replace").splitlines(), 1):
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                r = None
            if not _is_record(r, "program"):
                bad += [f"line {number}"] if line.strip() else []
                continue
            if r["score"] is not None:
                found.setdefault(r["program"], float(r["score"]))
                if isinstance(r.get("program_id"), str):
                    ids.setdefault(r["program"], r["program_id"])
    elif (p / "samples").is_dir():
        for f in sorted((p / "samples").glob("samples_*.json")):
            if f.name == "samples_best.json":
                continue
            try:
                records = json.loads(f.read_text())
            except (json.JSONDecodeError, UnicodeDecodeError):
                damaged.append(f.name)  # e.g. cut short by a killed run: the other files still count
                continue
            if not isinstance(records, list):
                damaged.append(f.name)
                continue
            for k, r in enumerate(records):
                if not _is_record(r, "function"):
                    bad.append(f"{f.name} record {k + 1}")
                elif r["score"] is not None and math.isfinite(float(r["score"])):
                    found.setdefault(_HOST_PREFACE + r["function"], float(r["score"]))
    else:
        raise ProgramError(f"{p}: neither a run directory (samples.jsonl) nor an llm4ad log (samples/)")
    programs = [RankedProgram(ids.get(code, f"p{i:03d}"), code, s) for i, (code, s) in enumerate(found.items())
                if math.isfinite(s)]
    if not programs:
        note = f" ({len(damaged)} damaged sample file(s), e.g. {damaged[0]})" if damaged else ""
        raise ProgramError(f"{p}: no program with a valid score{note}")
    if bad or damaged:
        parts = ([f"{len(damaged)} damaged sample file(s) ({_some(damaged)})"] if damaged else []) + (
            [f"{len(bad)} record(s) that hold no program text with a score ({_some(bad)})"] if bad else [])
        warnings.warn(f"{p}: skipped {' and '.join(parts)}; the others are re-ranked", PluginWarning, stacklevel=2)
    return programs


def _some(names: list[str]) -> str:
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


def _is_record(r, text: str) -> bool:
    """Whether ``r`` is a sample record: a dict with its program's ``text`` (``program`` in a run
    directory, ``function`` in a host log) and a ``score`` that is a number or null (a failed program)."""
    return (isinstance(r, dict) and isinstance(r.get(text), str)
            and (r.get("score") is None or isinstance(r["score"], (int, float)) and not isinstance(r["score"], bool)))


def _metrics(task_name: str, programs: list[RankedProgram], instances: list, executor,
             rows: list, timeout: float | None = None) -> np.ndarray:
    """Metrics of ``programs`` on ``instances`` (+inf where invalid); adds each evaluation's row
    (``engine.suite.Row``: why it failed, whether it was skipped after a repeating failure) to ``rows``."""
    out = np.full((len(programs), len(instances)), math.inf)
    if not programs:
        return out
    new = evaluate_suite(task_name, [Heuristic(p.name, code=p.code) for p in programs],
                         [Dataset("set", {}, instances)], executor=executor, progress=False, timeout=timeout)
    rows.extend(new)
    index = {p.name: i for i, p in enumerate(programs)}
    for r in new:
        if r.valid:
            out[index[r.heuristic], r.instance] = r.metric
    return out


def _attack(task_name: str, code: str, epsilon: float, seed: int, inner_population: int, inner_generations: int):
    """The adversarial search on one program (run in a sandboxed worker)."""
    task = get_task(task_name)
    return search_program(search, task, code, [], epsilon, dict(nominal=task.nominal_instances(), seed=seed,
                          inner_population=inner_population, inner_generations=inner_generations))


@selects_on("robust")  # ranks on the nominal set grown by adversarial instances
def rerank(task_name: str, programs: list[RankedProgram], *, epsilon: float | None = None,
           refreshes: int = default("refreshes"), top: int = default("top"), aggregation: str | None = None,
           seed: int = default("seed"), inner_population: int = default("inner_population"),
           inner_generations: int = default("inner_generations"),
           workers: int | None = None, progress: bool = True, timeout: float | None = None,
           nominal_seed: int | None = None) -> dict:
    """Robust scores of the ``top`` programs on the nominal set grown by ``refreshes`` adversarial instances.

    ``epsilon`` and ``aggregation``: a run's, the task's where ``None`` (``resolve.task_defaults``),
    each checked as a run's is before anything runs (a ``UserError`` naming the setting; the result
    says which were taken). ``nominal_seed``: the seed of the run's own nominal set
    (``run_nominal_seed``; ``None``: the task's public set), so that the programs are ranked on the
    set they were scored on.

    ``timeout``: seconds per instance (default: the task's limit of each instance); a
    search may take that times the instances it evaluates (``robustness_profile.search_timeout``).

    Returns ``programs`` (the ``top``, each with its robust score and nominal metric: ``-inf`` and
    ``inf`` where it failed), ``adversarial`` (what each refresh found, or why its search failed),
    ``instances``, ``rows`` (every evaluation's ``engine.suite.Row``, with why it failed),
    ``skipped`` (the evaluations skipped after a failure that repeats), ``epsilon`` and ``aggregation``."""
    task = get_task(task_name)
    epsilon, aggregation = robust_settings(task, epsilon, aggregation)
    scorer = task.evaluation(aggregation=Aggregation.parse(aggregation))  # scores only: A, nominal count, references
    chosen = sorted(programs, key=lambda p: -p.original_score)[:top]
    nominal = task.nominal_instances(seed=nominal_seed)
    instances = list(nominal)
    scorer.nominal_count = len(nominal)
    limit = search_timeout(task, inner_population, inner_generations, timeout)
    pool = ProcessExecutor(workers, SandboxLimits(timeout=limit))
    rows: list = []
    try:
        metrics, found = _refresh(task_name, scorer, chosen, nominal, instances, pool, rows, epsilon=epsilon,
                                  refreshes=refreshes, seed=seed, inner_population=inner_population,
                                  inner_generations=inner_generations, progress=progress, timeout=timeout)
    finally:
        pool.shutdown()
    for p, m in zip(chosen, metrics):
        p.nominal_metric = float(np.mean(m[: len(nominal)]))
        p.robust_score = _robust_score(scorer, m, instances) if np.all(np.isfinite(m)) else -math.inf
    return {"programs": chosen, "adversarial": found, "instances": instances, "rows": rows,
            "skipped": sum(r.skipped for r in rows), "epsilon": epsilon, "aggregation": aggregation}


def robust_settings(task, epsilon: float | None, aggregation: str | None) -> tuple[float, str]:
    """eps and A as a robust run of ``task`` would take them: the task's where ``None``, each
    checked as a run's are (``AdversaryConfig``), or a ``UserError`` naming the setting."""
    defaults = task_defaults(task)
    epsilon = defaults["epsilon"] if epsilon is None else epsilon
    aggregation = defaults["aggregation"] if aggregation is None else aggregation
    try:
        AdversaryConfig.checked(AdversarySettings(epsilon=epsilon, aggregation=aggregation)).check_task(task)
    except ConfigError as exc:
        raise UserError(f"{exc.field}: {exc.reason}") from None
    except SettingError as exc:
        raise UserError(f"{exc.name}: {exc.reason}") from None
    return float(epsilon), str(aggregation)


def _robust_score(evaluation, metrics, instances) -> float:
    """The evaluation's score of ``metrics`` on the first ``len(metrics)`` of ``instances``."""
    regret = evaluation.aggregation.regret
    return evaluation.score_of(metrics, references=evaluation.reference_metrics(instances[:len(metrics)])
                               if regret else None)


def _refresh(task_name, scorer, chosen, nominal, instances, pool, rows, *, epsilon, refreshes, seed,
             inner_population, inner_generations, progress, timeout):
    """The refreshes: attack the robust best, add its worst instance, re-score the others."""
    metrics = _metrics(task_name, chosen, instances, pool, rows, timeout)
    found = []
    for k in range(refreshes):
        scores = [_robust_score(scorer, m, instances) if np.all(np.isfinite(m)) else -math.inf for m in metrics]
        if max(scores) == -math.inf:
            break  # no program is valid on every instance: nothing left to attack
        victim_index = int(np.argmax(scores))
        victim = chosen[victim_index]
        future = pool.submit(_attack, task_name, victim.code, epsilon,
                             int(np.random.SeedSequence([seed, k]).generate_state(1)[0]), inner_population,
                             inner_generations)
        try:
            result = future.result()
        except (CallTimeout, WorkerDied) as exc:
            metrics[victim_index] = math.inf  # it hangs or crashes on a shifted instance: not robust
            found.append({"refresh": k + 1, "attacked": victim.name, "failed": str(exc)})
            if progress:
                print(f"  refresh {k + 1}/{refreshes}: the search on {victim.name} failed ({exc}); "
                      f"{victim.name} is invalid", flush=True)
            continue
        instances.append(result.instance)
        found.append({"refresh": k + 1, "attacked": victim.name, "metric": float(result.metric),
                      "distance": float(result.distance)})
        alive = [i for i, m in enumerate(metrics) if np.all(np.isfinite(m))]  # the others stay invalid
        column = np.full((len(chosen), 1), math.inf)
        column[alive] = _metrics(task_name, [chosen[i] for i in alive], [result.instance], pool, rows, timeout)
        metrics = np.hstack([metrics, column])
        if progress:
            print(f"  refresh {k + 1}/{refreshes}: attacked {victim.name}, its metric {result.metric:.4f} "
                  f"at distance {result.distance:.4g}", flush=True)
    return metrics, found
