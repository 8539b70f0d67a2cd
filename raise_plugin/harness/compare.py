"""One harness: train plain and robust methods under the same LLM, budget and seeds, then
evaluate every final heuristic and the classical baselines on the task's test suite and
write the paper's tables and figures.

Every training run and every suite evaluation is a job (``raise_plugin.harness.compare_jobs``),
run in this process, in local processes or on a Dask cluster; the tables are the same
wherever they ran. Everything lands in one output folder and every finished piece is
kept: a re-run skips finished training runs, resumes interrupted ones from their
checkpoints, and re-uses evaluated results while their runs are as they were evaluated.

    OUT/
      runs/<variant>-seed<S>/     one run directory per training run (see raise_plugin.rundir)
      results/<variant>-seed<S>.csv, results/baseline-<name>.csv
      results.csv                 every (method, seed, dataset, instance) result
      table*.md                   the paper's tables; table_significance.md, the paired tests
      llm_ledger.json             the LLM's requests, tokens and cost per run (finished or not) and in all
      convergence.png, adversarial_distributions.png
      report.md, report.html      the report, and the same as one page with its figures embedded
      dask_log.txt                Dask's own lines, on a Dask cluster (not on the console)
"""
from __future__ import annotations

import contextlib
import itertools
import json
import warnings
from pathlib import Path

from raise_plugin.durable import unwritable
from raise_plugin.engine.suite import Heuristic
from raise_plugin.errors import BadArgumentType, UserError
from raise_plugin.harness.compare_config import CompareConfig
from raise_plugin.harness.compare_jobs import EvalJob, TrainJob, run_finished
from raise_plugin.harness.compare_report import compare_report
from raise_plugin.harness.compare_result import CompareResult
from raise_plugin.harness.compare_tables import with_reference_rule, write_tables
from raise_plugin.harness.figures import finish_figure, plot_adversarial_distributions, plot_convergence
from raise_plugin.harness.final_programs import final_program
from raise_plugin.harness.html_report import write_compare_page
from raise_plugin.harness.provenance import (code_version, recorded_code_version, result_meta, run_change, run_state,
                                             write_result_meta)
from raise_plugin.harness.job_place import check_place, place_jobs, say_notes
from raise_plugin.harness.job_queue import JobRecord, run_jobs
from raise_plugin.harness.results_csv import collect_rows, write_rows
from raise_plugin.harness.reuse import ReusePlan, plan_reuse, set_aside, set_aside_report, set_aside_tables
from raise_plugin.harness.run_shipping import client_token, unpack_run
from raise_plugin.harness.study_budget import LEDGER_FILE, CappedPlace, StudyBudget, study_ledger
from raise_plugin.harness.variants import Variant, plan_variants, result_name
from raise_plugin.llm import SamplerStallWarning, asks_llm, check_llm, is_offline, offline_stall
from raise_plugin.llm.endpoint import recorded_settings_of
from raise_plugin.methods import get_method
from raise_plugin.methods.gp_probe import probe_signature
from raise_plugin.methods.gp_trees import require_deap
from raise_plugin.progress import check_progress
from raise_plugin.robust import IdleAdversaryWarning, idle_adversary
from raise_plugin.rundir.lock import COMPARE_LOCK, RunLock
from raise_plugin.rundir.reader import RunLog, holds
from raise_plugin.settings import FIGURE_FORMATS
from tasks import get_task

__all__ = ["CompareResult", "run_compare"]


def _say(message: str, quiet: bool) -> None:
    if not quiet:
        print(message, flush=True)


def run_compare(config: CompareConfig, *, quiet: bool = False, progress: bool = True) -> CompareResult:
    """Train, evaluate, and write tables, figures and the report (see the module docstring).

    ``config.study.reuse`` says what of an earlier compare in ``config.study.out`` is kept
    (``matching``, ``never``, ``any``: ``harness.reuse``); ``figure_formats`` the files of every
    figure (png, pdf, svg). A job that fails costs only its own cells: the tables, figures and report are written
    from what finished, and ``CompareResult.failures`` lists the failed jobs."""
    if not isinstance(config, CompareConfig):
        raise BadArgumentType(f"config: run_compare takes a CompareConfig (rp.CompareConfig(...)), got "
                              f"{type(config).__name__}; rp.compare(...) takes its fields as keywords")
    if check_progress(progress) == "off":  # a bad mode failed every suite evaluation once every run had trained
        progress = False  # read as a truth value below, and "off" is a true string
    runs, study = config.runs, config.study
    task = get_task(runs.task)
    check_methods(study.methods, task)
    out = Path(study.out).resolve()
    variants = plan_variants(study.methods, study.epsilons, study.ablations)
    replayed = check_llm(runs.llm)  # a replay's answers bound each run's samples, as a run's own check counts them
    answers = None if replayed is None else len(replayed.answers)
    idle = idle_adversary(runs.budget, runs.adversary, answers) if any(v.robust for v in variants) else None
    if idle and not runs.adversary.allow_no_refresh:  # refused before anything is trained or moved
        raise UserError(f"every RAISE row would equal its plain twin's: {idle} (or run it as it is with "
                        "--allow-no-refresh)")
    check_place(study.executor)  # a scheduler that does not answer: nothing written
    why = unwritable(out, folder=True)
    if why:  # a file there, or a place that holds none: refused before anything is trained
        raise UserError(f"out: {why}, got {str(study.out)!r}")
    if holds(out) == "a run":  # its report.html and the rest would be the compare's
        raise UserError(f"{out} holds a run; a compare writes a folder of its own: choose another --out")
    # one compare at a time in a folder: a second would move aside, resume or write over the first's runs and tables
    with RunLock(out, COMPARE_LOCK, after="comparing into it"):
        return _compare_into(config, task, out, variants, idle, quiet, progress)


def _compare_into(config: CompareConfig, task, out: Path, variants: list[Variant], idle: str | None, quiet: bool,
                  progress: bool) -> CompareResult:
    """What ``run_compare`` does once its settings are checked and ``out`` is its own."""
    runs, study = config.runs, config.study
    plan = plan_reuse(config, task, variants, out)
    reused = plan.line(study.out)
    if reused:
        _say(reused, quiet)
    if set_aside_report(out, plan, STUDY_OUTPUTS):  # what described the runs moved aside goes with them
        _say("  the earlier report, tables and figures, which describe them, moved there too", quiet)
    out.mkdir(parents=True, exist_ok=True)
    # the base URL's credentials as a run's config.json records them (hidden), not in clear
    (out / "compare.json").write_text(json.dumps({**recorded_settings_of(config.to_dict()),
                                                  "code_version": code_version()}, indent=1))
    if idle:  # allowed
        warnings.warn(f"every RAISE row will equal its plain twin's: {idle}", IdleAdversaryWarning, stacklevel=2)
    cells = [(v, s) for v in variants for s in study.seeds]
    asking = [m for m in study.methods if asks_llm(get_method(m))]  # GP asks its back-end nothing
    stall = offline_stall(task, runs.llm.backend, runs.budget.samples, sum(v.method in asking for v, _ in cells),
                          of=", ".join(asking) if len(asking) < len(study.methods) else "")
    if stall:
        warnings.warn(stall, SamplerStallWarning, stacklevel=2)
    say_notes(task, runs.instance_seed, offline=bool(asking) and is_offline(runs.llm.backend))
    run_dirs = {(v.key, s): out / "runs" / f"{v.key}-seed{s}" for v, s in cells}
    with _writing(out):  # a disk that refuses a result (written here) is said in one line as the tables' are
        records = _train_and_evaluate(config, task, out, variants, run_dirs, quiet, progress, plan)
    failures = [r for r in records if r.status == "failed"]
    with _writing(out):  # a disk that refuses the tables or the report: one line naming the folder, what is kept
        finished = {k: p for k, p in run_dirs.items() if run_finished(p)}
        started = {k: p for k, p in run_dirs.items() if (p / "config.json").exists()}  # finished or not
        rows = with_reference_rule(task, collect_rows(out, task.baselines,
                                                      [result_name(v.key, s, study.select_on) for v, s in cells]))
        write_rows(out / "results.csv", rows)
        in_tables = {(r["variant"], int(r["seed"])) for r in rows if r["kind"] != "baseline"}
        tables, comparisons, table_files = write_tables(study, task, variants, rows, out, budget=runs.budget.samples)
        stale = set_aside_tables(out, table_files, plan)
        if stale:
            _say(f"{len(stale)} tables of an earlier compare that this one does not write ({', '.join(stale[:3])}"
                 f"{', ...' if len(stale) > 3 else ''}) moved to {plan.superseded}", quiet)
        figures = _write_figures(task, variants, study.seeds, finished, out, study.figure_formats)
        ledger = study_ledger({f"{v.key}-seed{s}": run_dirs[(v.key, s)] for v, s in cells
                               if run_dirs[(v.key, s)].exists()})
        (out / LEDGER_FILE).write_text(json.dumps(ledger, indent=1) + "\n")
        (out / "report.md").write_text(compare_report(config, task, variants, tables, figures, started, comparisons,
                                                      failures=failures, plan=plan, in_tables=in_tables))
        files = [out / "compare.json", out / "results.csv", *table_files, *figures, out / LEDGER_FILE,
                 out / "report.md", write_compare_page(out)]
    baselines = list(dict.fromkeys([*task.baselines, *(r["method"] for r in rows if r["kind"] == "baseline")]))
    result = CompareResult(out, rows, tables, files, comparisons, records, variants, baselines, failures)
    return result


@contextlib.contextmanager
def _writing(out: Path):
    """What the compare writes into ``out`` itself (results, tables, report): a write the system refuses (a full
    disk, which names no file) is one line naming ``out`` and what running it again does."""
    try:
        yield
    except OSError as exc:
        raise UserError(f"{out}: cannot write ({exc.strerror or exc}); every run and result that finished is kept: "
                        "once the cause is gone, the same command goes on from them") from None


def _train_and_evaluate(config: CompareConfig, task, out: Path, variants: list[Variant], run_dirs: dict,
                        quiet: bool, progress: bool, plan: ReusePlan) -> list[JobRecord]:
    """Every training run not finished before and every suite evaluation not done before, as jobs:
    a training run that ends (finished or stopped by a cap) queues the evaluation of its final
    program, again when the run changed since its earlier evaluation (which ``plan`` records as done
    again); each evaluation's rows land in ``OUT/results/<name>.csv``."""
    study = config.study
    cells = [(v, s) for v in variants for s in study.seeds]
    place, evaluation, workers = place_jobs(study.executor, study.jobs, study.workers, log=out / DASK_LOG)
    seeds = f"{len(study.seeds)} seed{'s' if len(study.seeds) != 1 else ''}"
    _say(f"compare on {task.name}: {len(variants)} variant{'s' if len(variants) != 1 else ''} x {seeds}, budget "
         f"{config.runs.budget.samples}, llm {config.runs.llm.backend}; jobs {place.describe()}"
         + ("; plain runs only (no radius given: no RAISE run)" if not study.epsilons else ""), quiet)

    token = client_token(out)
    common = {"evaluation": evaluation, "workers": workers}
    sandbox = config.evaluation_limits()
    progress = progress if place.kind == "here" and not quiet else False  # a mode (raise_plugin.progress) kept

    made_from = {}  # result name -> (the run's state, its program) as the evaluation was queued

    def evaluation_of(v: Variant, s: int) -> EvalJob | None:
        """The suite evaluation of a run's final program (None: done before from the run as it is now, or
        no valid program)."""
        name, run = result_name(v.key, s, study.select_on), run_dirs[(v.key, s)]
        done = out / "results" / f"{name}.csv"
        if done.exists():
            changed = run_change(done, run)
            if not changed:
                return None
            set_aside(done, plan.superseded)
            plan.moved.append(f"{name}: {changed}")
            _say(f"  {v.label}, seed {s}: {changed}; evaluated again, the earlier result moved to "
                 f"{plan.superseded}", quiet)
        code = final_program(run, task, study.select_on, workers)
        if code is None:
            _say(f"  {v.label}, seed {s}: no valid program, left out of the tables", quiet)
            return None
        made_from[name] = (run_state(run), code)
        return EvalJob(name, f"{v.label}, seed {s}", config.runs.task, Heuristic(v.label, code=code),
                       study.suite_instances, (v.label, v.key, v.kind, s), progress=progress, **common, **sandbox)

    by_name = {f"{v.key}-seed{s}": (v, s) for v, s in cells}
    training = [TrainJob(f"{v.key}-seed{s}", f"{v.label}, seed {s}",
                         config.run_fields(v.method, v.robust, v.epsilon, s, v.switches), str(out), token,
                         study.ship_runs, **common)
                for v, s in cells if not run_finished(run_dirs[(v.key, s)])]
    trained = {job.name for job in training}
    evaluations = [EvalJob(f"baseline-{name}", name, config.runs.task, Heuristic(name, baseline=name),
                           study.suite_instances, (name, f"baseline-{name}", "baseline", 0), progress=progress,
                           **common, **sandbox)
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
        run = out / "runs" / job.name.removesuffix(f"-{study.select_on}-selected")
        evaluated = job.name if job.name.startswith("baseline-") else f"{run.name} ({recorded_code_version(run)})"
        write_result_meta(out / "results" / f"{job.name}.csv",
                          result_meta(study.suite_instances, evaluated, *made_from.get(job.name, (None, None)),
                                      sandbox=sandbox))
        return []

    if not (training or evaluations):
        place.close()
        return []
    if study.max_cost_usd is not None or study.max_llm_calls is not None:  # caps over the whole study
        place = CappedPlace(place, StudyBudget(study.max_cost_usd, study.max_llm_calls,
                                               {f"{v.key}-seed{s}": run_dirs[(v.key, s)] for v, s in cells},
                                               place.slots))
    return run_jobs(place, training + evaluations, then, say=lambda line: _say(line, quiet),
                    planned=2 * len(training) + len(evaluations),
                    follows=lambda job: int(isinstance(job, TrainJob)))  # a training run's suite evaluation


def failure_line(failures: list[JobRecord], total: int) -> str:
    """One line on the failed jobs: how many, the first reasons, and whether running the same
    command again can help (it cannot for a failure the settings or the task cause)."""
    names = "; ".join(f"{r.kind} {r.label}: {r.error}" for r in failures[:3]) + ("; ..." if len(failures) > 3 else "")
    retry = [r for r in failures if r.retry_helps]
    if not retry:
        advice = "running the same command again cannot help these"
    elif len(retry) == len(failures):
        advice = "run the same command again to retry them"
    else:
        advice = (f"run the same command again to retry {len(retry)} of them ("
                  f"{', '.join(r.label for r in retry[:3])}); a retry cannot help the others")
    return (f"{len(failures)} of {total} compare jobs failed ({names}); the tables and report hold what finished; "
            f"{advice}")


def check_methods(methods, task) -> None:
    """Refuse, before any job starts, a method that cannot run on ``task`` (GP needs DEAP installed and a
    template whose function takes one value per candidate: ``gp_probe``)."""
    if "gp" in methods:
        try:
            require_deap()
        except UserError as exc:
            raise UserError(f"methods: {exc}; no job was started") from None
        try:
            probe_signature(task)
        except UserError as exc:
            raise UserError(f"methods: gp cannot run on {task.name}: {str(exc).removeprefix('gp: ')}; GP evolves "
                            "a function of numbers and arrays with one value (or one row) per candidate "
                            "(docs/tasks.md, 'What GP needs'); no job was started") from None


DASK_LOG = "dask_log.txt"  # Dask's own lines as the compare ran on a cluster, appended
FIGURE_FILES = tuple(f"{stem}.{fmt}" for stem, fmt in itertools.product(("convergence", "adversarial_distributions"),
                                                                          FIGURE_FORMATS))
# what a compare writes from its runs and results as it ends, besides its tables
STUDY_OUTPUTS = ("report.md", "report.html", "results.csv", LEDGER_FILE, *FIGURE_FILES)


def _write_figures(task, variants: list[Variant], seeds, run_dirs: dict, out: Path, formats: tuple) -> list[Path]:
    """The convergence and adversarial-distribution figures of the finished runs (``run_dirs``), each in
    every format of ``formats``: convergence over every seed, all variants in one figure (plain runs too:
    their validation trace shows where a search starts to overfit); adversarial distributions of the
    first seed's RAISE runs. An earlier compare's figure files in ``out`` that this one does not write
    (another format, a figure not drawn now) are removed: none stands beside the new ones, stale."""
    for name in FIGURE_FILES:
        (out / name).unlink(missing_ok=True)
    drawn = [v for v in variants if v.kind in ("plain", "robust")]
    runs = {v.label: [RunLog.load(run_dirs[(v.key, s)]) for s in seeds if (v.key, s) in run_dirs] for v in drawn}
    runs = {label: logs for label, logs in runs.items() if logs}
    if not runs:
        return []
    files = []
    convergence = plot_convergence(runs, task=task)
    first = {f"{v.label}, seed {seeds[0]}": RunLog.load(run_dirs[(v.key, seeds[0])]) for v in drawn
             if v.robust and (v.key, seeds[0]) in run_dirs}
    adversarial = plot_adversarial_distributions(first, task=task) if first else None
    for stem, fig in (("convergence", convergence), ("adversarial_distributions", adversarial)):
        for fmt in formats if fig is not None else ():
            finish_figure(fig, out / f"{stem}.{fmt}")
            files.append(out / f"{stem}.{fmt}")
    return files
