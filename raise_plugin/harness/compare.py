"""One harness: train plain and robust methods under the same LLM, budget and seeds, then
evaluate every final heuristic and the classical baselines on the task's test suite and
write the paper's tables and figures.

Every training run and every suite evaluation is a job (``raise_plugin.harness.compare_jobs``),
run in this process, in local processes or on a Dask cluster; the tables are the same
wherever they ran. Everything lands in one output folder and every finished piece is
kept: a re-run skips finished training runs, resumes interrupted ones from their
checkpoints, and re-uses evaluated results.

    OUT/
      runs/<variant>-seed<S>/     one run directory per training run (see raise_plugin.rundir)
      results/<variant>-seed<S>.csv, results/baseline-<name>.csv
      results.csv                 every (method, seed, dataset, instance) result
      table*.md                   the paper's tables; table_significance.md, the paired tests
      convergence.png, adversarial_distributions.png
      report.md
"""
from __future__ import annotations

import json
import warnings
from dataclasses import asdict
from pathlib import Path

from raise_plugin.config import IdleAdversaryWarning, idle_adversary
from raise_plugin.engine.suite import Heuristic
from raise_plugin.errors import UserError
from raise_plugin.harness.compare_config import CompareConfig
from raise_plugin.harness.compare_jobs import EvalJob, TrainJob, run_finished
from raise_plugin.harness.compare_report import compare_report
from raise_plugin.harness.compare_result import CompareResult
from raise_plugin.harness.compare_tables import write_tables
from raise_plugin.harness.figures import plot_adversarial_distributions, plot_convergence
from raise_plugin.harness.final_programs import final_program
from raise_plugin.harness.job_place import place_jobs
from raise_plugin.harness.job_queue import JobRecord, run_jobs
from raise_plugin.harness.results_csv import collect_rows, write_rows
from raise_plugin.harness.run_shipping import client_token, unpack_run
from raise_plugin.harness.variants import Variant, plan_variants, result_name
from raise_plugin.llm import SamplerStallWarning, offline_stall
from raise_plugin.rundir.reader import RunLog
from tasks import get_task

__all__ = ["CompareResult", "run_compare"]


def _say(message: str, quiet: bool) -> None:
    if not quiet:
        print(message, flush=True)


def run_compare(config: CompareConfig, *, quiet: bool = False, progress: bool = True) -> CompareResult:
    """Train, evaluate, and write tables, figures and the report (see the module docstring)."""
    task = get_task(config.task)
    out = Path(config.out).resolve()
    variants = plan_variants(config.methods, config.epsilons, config.ablations)
    reused = _earlier_work(config, task, variants, out)
    if reused:
        _say(reused, quiet)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps(asdict(config), indent=1))
    idle = idle_adversary(config.budget, config.pop_size, config.tau)
    if idle and any(v.robust for v in variants):
        warnings.warn(f"{idle}, so every RAISE row will equal its plain twin's", IdleAdversaryWarning, stacklevel=2)
    cells = [(v, s) for v in variants for s in config.seeds]
    stall = offline_stall(config.task, config.llm, config.budget, len(cells))
    if stall:
        warnings.warn(stall, SamplerStallWarning, stacklevel=2)
    run_dirs = {(v.key, s): out / "runs" / f"{v.key}-seed{s}" for v, s in cells}
    records = _train_and_evaluate(config, task, out, variants, run_dirs, quiet, progress)
    _refuse_failures(records)
    rows = collect_rows(out, task.baselines, [result_name(v.key, s, config.select_on) for v, s in cells])
    tables, comparisons, table_files = write_tables(config, task, variants, rows, out)
    figures = _write_figures(task, variants, config.seeds[0], run_dirs, out)
    (out / "report.md").write_text(compare_report(config, task, variants, tables, figures, run_dirs, comparisons))
    files = [out / "compare.json", out / "results.csv", *table_files, *figures, out / "report.md"]
    return CompareResult(out, rows, tables, files, comparisons, records, variants, list(task.baselines))


def _earlier_work(config: CompareConfig, task, variants: list[Variant], out: Path) -> str | None:
    """One line on what an earlier compare left in ``out`` that this one reuses (finished
    training runs, interrupted ones it resumes, suite evaluations), and how to start afresh;
    ``None`` when there is nothing."""
    cells = [(v, s) for v in variants for s in config.seeds]
    runs = [out / "runs" / f"{v.key}-seed{s}" for v, s in cells]
    finished = sum(run_finished(r) for r in runs)
    interrupted = sum((r / "config.json").exists() for r in runs) - finished
    results = [f"baseline-{name}" for name in task.baselines] + [result_name(v.key, s, config.select_on)
                                                                  for v, s in cells]
    evaluated = sum((out / "results" / f"{name}.csv").exists() for name in results)
    if not (finished or interrupted or evaluated):
        return None
    kept = [f"{finished} of {len(runs)} training runs finished", f"{evaluated} of {len(results)} suite evaluations"]
    if interrupted:
        kept.append(f"{interrupted} interrupted run{'s' if interrupted > 1 else ''} to resume")
    return (f"{config.out} holds an earlier compare; reusing {', '.join(kept)} (to start afresh, delete "
            f"{config.out} or give another --out)")


def _train_and_evaluate(config: CompareConfig, task, out: Path, variants: list[Variant], run_dirs: dict,
                        quiet: bool, progress: bool = True) -> list[JobRecord]:
    """Every training run not finished before and every suite evaluation not done before, as jobs:
    a finished training run queues the evaluation of its final program; each evaluation's rows
    land in ``OUT/results/<name>.csv``."""
    cells = [(v, s) for v in variants for s in config.seeds]
    place, evaluation, workers = place_jobs(config.executor, config.jobs, config.workers)
    _say(f"compare on {task.name}: {len(variants)} variants x {len(config.seeds)} seeds, budget {config.budget}, "
         f"llm {config.llm}; jobs {place.describe()}", quiet)

    token = client_token(out)
    common = {"evaluation": evaluation, "workers": workers}
    progress = progress and place.kind == "here" and not quiet

    def evaluation_of(v: Variant, s: int) -> EvalJob | None:
        """The suite evaluation of a finished run's best program (None: done before, or no valid program)."""
        name = result_name(v.key, s, config.select_on)
        if (out / "results" / f"{name}.csv").exists():
            return None
        code = final_program(run_dirs[(v.key, s)], task, config.select_on, workers)
        if code is None:
            _say(f"  {v.label}, seed {s}: no valid program, left out of the tables", quiet)
            return None
        return EvalJob(name, f"{v.label}, seed {s}", config.task, Heuristic(v.label, code=code),
                       config.suite_instances, (v.label, v.key, v.kind, s), progress=progress, **common)

    by_name = {f"{v.key}-seed{s}": (v, s) for v, s in cells}
    training = [TrainJob(f"{v.key}-seed{s}", f"{v.label}, seed {s}",
                         config.run_fields(v.method, v.robust, v.epsilon, s, v.switches), str(out), token,
                         config.ship_runs, **common)
                for v, s in cells if not run_finished(run_dirs[(v.key, s)])]
    trained = {job.name for job in training}
    evaluations = [EvalJob(f"baseline-{name}", name, config.task, Heuristic(name, baseline=name),
                           config.suite_instances, (name, f"baseline-{name}", "baseline", 0), progress=progress,
                           **common)
                   for name in task.baselines if not (out / "results" / f"baseline-{name}.csv").exists()]
    evaluations += [job for v, s in cells if f"{v.key}-seed{s}" not in trained
                    for job in [evaluation_of(v, s)] if job is not None]

    def then(job, outcome) -> list:
        if isinstance(job, TrainJob):
            if outcome.archive is not None:
                unpack_run(outcome.archive, out / "runs" / job.name)
            follow = evaluation_of(*by_name[job.name])
            return [follow] if follow is not None else []
        write_rows(out / "results" / f"{job.name}.csv", outcome.rows)
        return []

    if not (training or evaluations):
        place.close()
        return []
    return run_jobs(place, training + evaluations, then, say=lambda line: _say(line, quiet),
                    planned=2 * len(training) + len(evaluations))


def _refuse_failures(records: list[JobRecord]) -> None:
    """A one-line ``UserError`` naming the first failed jobs, if any failed."""
    failed = [r for r in records if r.status == "failed"]
    if failed:
        names = "; ".join(f"{r.kind} {r.label}: {r.error}" for r in failed[:3]) + ("; ..." if len(failed) > 3 else "")
        raise UserError(f"{len(failed)} of {len(records)} compare jobs failed ({names}); the finished ones are kept: "
                        f"run the same command again to retry the rest")


def _write_figures(task, variants: list[Variant], seed: int, run_dirs: dict, out: Path) -> list[Path]:
    """The convergence and adversarial-distribution figures of the first seed's runs (plain runs
    too: their validation trace shows where a search starts to overfit)."""
    robust_runs = {f"{v.label}, seed {seed}": RunLog.load(run_dirs[(v.key, seed)])
                   for v in variants if v.kind in ("plain", "robust")}
    if not robust_runs:
        return []
    plot_convergence(robust_runs, out / "convergence.png")
    plot_adversarial_distributions(robust_runs, out / "adversarial_distributions.png", task=task)
    return [out / "convergence.png", out / "adversarial_distributions.png"]
