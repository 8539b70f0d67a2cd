"""One harness: train plain and robust methods under the same LLM, budget and seeds, then
evaluate every final heuristic and the classical baselines on the task's test suite and
write the paper's tables and figures.

Every training run and every suite evaluation is a job (``raise_plugin.harness.jobs``),
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

import csv
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

from raise_plugin.errors import UserError
from raise_plugin.harness.paper_tables import (Table, build_table, family_columns, significance,
                                               significance_markdown, significance_summary)
from raise_plugin.harness.jobs import (ROW_FIELDS, EvalJob, JobPlace, TrainJob, client_token, run_finished,
                                       run_jobs, unpack_run)
from raise_plugin.harness.selection import selects_on
from raise_plugin.harness.suite_eval import Heuristic, default_workers
from tasks import get_task

__all__ = ["Variant", "CompareConfig", "plan_variants", "run_compare", "default_jobs", "METHOD_LABELS", "ABLATIONS"]

METHOD_LABELS = {"eoh": "EoH", "reevo": "ReEvo", "partevo": "PartEvo", "eohs": "EoH-S", "moh": "MoH", "gp": "GP",
                 "funsearch": "FunSearch",
                 "hillclimb": "HillClimb", "randsample": "RandSample"}

# the paper's Table 4: switch -> (label suffix, run settings), then this plugin's rows beyond the
# paper: the regret adversary and the balanced score (issue "a regret adversary"), each alone and together
ABLATIONS = {
    "no-constraint": ("w/o Dis. Constraints", {"constraint": "none"}),
    "flat": ("w/o Base Distributions", {"encoding": "flat"}),
    "no-mapping": ("w/o eps-Mapping", {"projection": "none"}),
    "regret-baselines": ("w/ regret:baselines adversary", {"adversary_objective": "regret:baselines"}),
    "regret-population": ("w/ regret:population adversary", {"adversary_objective": "regret:population"}),
    "balanced": ("w/ balanced score", {"aggregation": "balanced"}),
    "regret-balanced": ("w/ regret:baselines + balanced", {"adversary_objective": "regret:baselines",
                                                           "aggregation": "balanced"}),
}


@dataclass(frozen=True)
class Variant:
    """One trained configuration: a method, plain or robust (at one eps, with adversary switches)."""

    key: str
    label: str
    method: str
    robust: bool
    epsilon: float | None = None
    switches: tuple = ()
    kind: str = "plain"  # plain | robust | ablation


def plan_variants(methods: Iterable[str], epsilons: Iterable[float], ablations: bool = False) -> list[Variant]:
    """Every method plain and robust at each eps; with ``ablations``, the paper's three
    component ablations of the robust method at the first eps (the fourth, "w/o robust
    search", is the plain run)."""
    epsilons = list(epsilons)
    out = []
    for m in methods:
        name = METHOD_LABELS.get(m, m)
        out.append(Variant(f"{m}-plain", name, m, False))
        for e in epsilons:
            out.append(Variant(f"{m}-raise-eps{e:g}", f"RAISE-{name} (eps={e:g})", m, True, float(e), (), "robust"))
        if ablations and epsilons:
            e = epsilons[0]
            for key, (suffix, switches) in ABLATIONS.items():
                out.append(Variant(f"{m}-raise-eps{e:g}-{key}", f"RAISE-{name} {suffix}", m, True, float(e),
                                   tuple(sorted(switches.items())), "ablation"))
    return out


@dataclass
class CompareConfig:
    """What ``raise-ahd compare`` runs; validated on creation (one-line errors naming the field)."""

    task: str = "obp"
    methods: tuple = ("eoh",)
    epsilons: tuple | None = None        # default: the task's eps (``Task.robust_defaults``), else 0.002
    ablations: bool = False
    budget: int = 1000
    pop_size: int = 10
    seeds: tuple = (0, 1, 2, 3, 4)
    llm: str = "offline"
    out: str = "compare-out"
    tau: int = 5
    inner_population: int = 8
    inner_generations: int = 4
    nominal: int | None = None
    suite_instances: int | None = None   # at most this many instances per test dataset (all by default)
    workers: int | None = None           # evaluation workers of each job (default: its share of the cores)
    executor: str | None = None          # where jobs run: process (default), serial, dask://HOST:PORT, dask://local[:N]
    jobs: int | None = None              # jobs at once in local processes (default: ``default_jobs()``)
    ship_runs: bool | None = None        # ship run directories back as archives (default: when a worker cannot see OUT)
    aggregation: str | None = None       # these three: the task's robust defaults, else the paper's
    adversary_objective: str | None = None
    inner_draws: int | None = None
    projection: str | None = None
    select_on: str | None = None         # each run's final program: robust (its robust best) or validation
    #                                      (chosen on the validation suite); default: the task's

    def __post_init__(self):
        from raise_plugin.methods import METHODS
        from tasks import is_task_reference, list_tasks, task_reference
        if self.task not in list_tasks():  # a file or module reference loads here, or fails in one line
            raise UserError(f"task: unknown {self.task!r}; choose from {', '.join(list_tasks())}")
        if is_task_reference(self.task):  # the file's absolute path: jobs and re-runs find it from anywhere
            self.task = task_reference(self.task)
        self.methods = tuple(self.methods)
        for m in self.methods:
            if m not in METHODS:
                raise UserError(f"methods: unknown {m!r}; choose from {', '.join(sorted(METHODS))}")
        if not self.methods:
            raise UserError("methods: give at least one method")
        from raise_plugin.config import final_selection
        from raise_plugin.harness.selection import check_selection_suite
        if self.select_on is None:
            self.select_on = final_selection(self.task)
        try:
            check_selection_suite(self.select_on, ("robust", "validation"))
        except UserError as exc:
            raise UserError(f"select_on: {exc}") from None
        from raise_plugin.config import robust_defaults
        defaults = robust_defaults(self.task)
        if self.epsilons is None:
            self.epsilons = (defaults["epsilon"],)
        for name in ("aggregation", "adversary_objective", "projection"):
            if getattr(self, name) is None:
                setattr(self, name, defaults[name])
        self.epsilons = tuple(float(e) for e in self.epsilons)
        if any(not e > 0 for e in self.epsilons):
            raise UserError("epsilons: every radius must be positive")
        if self.ablations and not self.epsilons:
            raise UserError("ablations: need at least one robust eps")
        for name in ("budget", "pop_size", "tau", "inner_population", "inner_generations"):
            if int(getattr(self, name)) < 1:
                raise UserError(f"{name}: must be at least 1")
        if self.pop_size < 2:
            raise UserError("pop_size: must be at least 2")
        self.seeds = tuple(int(s) for s in self.seeds)
        if not self.seeds:
            raise UserError("seeds: give at least one seed")
        if self.suite_instances is not None and self.suite_instances < 1:
            raise UserError("suite_instances: must be at least 1")
        from raise_plugin.config import ConfigError, RunConfig
        try:  # the run settings compare passes on, checked by the run config itself
            RunConfig(task=self.task, aggregation=self.aggregation, adversary_objective=self.adversary_objective,
                      inner_draws=self.inner_draws, projection=self.projection)
        except ConfigError as exc:
            raise UserError(str(exc).replace("config field ", "")) from None
        if self.executor is not None:
            from raise_plugin.engine.executors import parse_executor_spec
            parse_executor_spec(self.executor)  # a bad spec fails here, before any training
        if self.workers is not None and int(self.workers) < 1:
            raise UserError("workers: must be at least 1")
        if self.jobs is not None and int(self.jobs) < 1:
            raise UserError("jobs: must be at least 1")
        _check_llm(self.llm, self.task)  # a bad back-end fails here, not in every job


def _check_llm(spec: str, task: str) -> None:
    """Build the back-end once (offline, a key in the environment, a readable recording)."""
    from raise_plugin.llm import make_llm
    kind = str(spec).split(":", 1)[0].lower()
    make_llm(spec, **({"task": task} if kind == "offline" else {}))


def default_jobs(cores: int | None = None) -> int:
    """Training and evaluation jobs at once in local processes: half the cores, at least one.

    Each job evaluates its programs on ``cores // jobs`` sandboxed workers, so the machine
    holds about one evaluation per core whatever the number of jobs; two or more jobs fill
    the time one run spends outside evaluation (sampling, selection, bookkeeping, its inner
    search on one worker), and half the cores keeps each run's evaluations spread over at
    least two workers on machines with four cores or more."""
    cores = default_workers() if cores is None else cores
    return max(1, cores // 2)


@dataclass
class CompareResult:
    out: Path
    rows: list[dict]
    tables: dict[str, Table]
    files: list[Path] = field(default_factory=list)
    comparisons: list = field(default_factory=list)  # stats.Comparison: each method vs best baseline and plain twin
    jobs: list = field(default_factory=list)  # jobs.JobRecord of every job this call ran (none when all were done)

    @property
    def figures(self) -> list[Path]:
        """The figures written (convergence.png, adversarial_distributions.png)."""
        return [f for f in self.files if f.suffix == ".png"]

    @property
    def report(self) -> Path:
        return self.out / "report.md"


def _say(message: str, quiet: bool) -> None:
    if not quiet:
        print(message, flush=True)


@selects_on("nominal", "robust")  # the run's best on the set it trained on (grown by adversarial instances with RAISE)
def best_program(run_dir: Path) -> str | None:
    data = json.loads((run_dir / "summary.json").read_text())
    best = data.get("best") or {}
    return best.get("program")


def final_program(run_dir: Path, task, select_on: str = "robust", workers: int | None = None) -> str | None:
    """The program a run hands to the report: its robust best (what the run returns; the
    nominal best of a plain run), or the member of its last population with the best
    validation metric (``select_final``, recorded in the run directory)."""
    if select_on == "robust":
        return best_program(run_dir, select_on="robust")
    from raise_plugin.validation import select_final
    chosen = select_final(run_dir, task, workers=workers)
    return None if chosen is None else chosen["program"]


def result_name(key: str, seed: int, select_on: str = "robust") -> str:
    """The stem of a run's results file: the selection is part of it, so the two never mix."""
    return f"{key}-seed{seed}" + ("" if select_on == "robust" else f"-{select_on}-selected")


FIELDS = ROW_FIELDS


def paper_tables(task_name: str, rows: list[dict], order: list[str], ablation_rows: list[str],
                 ablation_names: dict[str, str] | None = None, *, baselines=(), twins=None) -> dict[str, Table]:
    """The task's own tables (``Task.table_layouts``) that apply to the datasets present, then
    the per-distribution and ablation tables every task gets; with ``baselines`` and ``twins``
    (method -> plain twin) every cell is tested against both."""
    from raise_plugin.harness.paper_tables import layout_table
    tested = {"baselines": baselines, "twins": twins}
    tables: dict[str, Table] = {}
    for layout in get_task(task_name).table_layouts():
        table = layout_table(layout, rows, **tested, methods=order)
        if table is not None:
            tables[layout.key] = table
    tables["table_all_distributions"] = build_table(
        rows, family_columns(), **tested, methods=order,
        title=f"{task_name}: metric per distribution, averaged over all sizes (lower is better)")
    if ablation_rows:
        tables["table4_ablation"] = build_table(
            rows, family_columns(), **tested, methods=ablation_rows, rename=ablation_names,
            title="Table 4: ablations, metric per distribution averaged over all sizes (lower is better)")
    return tables


def run_compare(config: CompareConfig, *, quiet: bool = False) -> CompareResult:
    """Train, evaluate, and write tables, figures and the report (see the module docstring)."""
    from raise_plugin.harness.figures import plot_adversarial_distributions, plot_convergence
    from raise_plugin.rundir.reader import RunLog

    task = get_task(config.task)
    out = Path(config.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps(asdict(config), indent=1))
    variants = plan_variants(config.methods, config.epsilons, config.ablations)
    cells = [(v, s) for v in variants for s in config.seeds]
    run_dirs = {(v.key, s): out / "runs" / f"{v.key}-seed{s}" for v, s in cells}
    place, evaluation, workers = _job_place(config)
    _say(f"compare on {task.name}: {len(variants)} variants x {len(config.seeds)} seeds, budget {config.budget}, "
         f"llm {config.llm}; jobs {place.describe()}", quiet)

    token = client_token(out)
    common = {"evaluation": evaluation, "workers": workers}
    progress = place.kind == "here" and not quiet

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
    training = [TrainJob(f"{v.key}-seed{s}", f"{v.label}, seed {s}", _run_fields(config, v, s), str(out), token,
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
        _write_rows(out / "results" / f"{job.name}.csv", outcome.rows)
        return []

    records = []
    if training or evaluations:
        records = run_jobs(place, training + evaluations, then, say=lambda line: _say(line, quiet),
                           planned=2 * len(training) + len(evaluations))
    else:
        place.close()
    failed = [r for r in records if r.status == "failed"]
    if failed:
        names = "; ".join(f"{r.kind} {r.label}: {r.error}" for r in failed[:3]) + ("; ..." if len(failed) > 3 else "")
        raise UserError(f"{len(failed)} of {len(records)} compare jobs failed ({names}); the finished ones are kept: "
                        f"run the same command again to retry the rest")

    rows: list[dict] = []
    for name in task.baselines:
        rows += _read_rows(out / "results" / f"baseline-{name}.csv")
    for v, s in cells:
        path = out / "results" / f"{result_name(v.key, s, config.select_on)}.csv"
        if path.exists():
            rows += _read_rows(path)
    with (out / "results.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)

    order = list(task.baselines) + [v.label for v in variants if v.kind != "ablation"]
    ablation_rows, ablation_names = [], {}
    if config.ablations:
        first = config.epsilons[0]
        for m in config.methods:
            ablation_rows.append(METHOD_LABELS.get(m, m))
            ablation_names[METHOD_LABELS.get(m, m)] = f"{METHOD_LABELS.get(m, m)} (= RAISE w/o Robust Search)"
            ablation_rows += [v.label for v in variants if v.method == m and v.kind == "ablation"]
            ablation_rows.append(f"RAISE-{METHOD_LABELS.get(m, m)} (eps={first:g})")
    baselines = list(task.baselines)
    twins = {v.label: METHOD_LABELS.get(v.method, v.method) for v in variants if v.kind != "plain"}
    tables = paper_tables(task.name, rows, order, ablation_rows, ablation_names, baselines=baselines, twins=twins)
    files = [out / "results.csv"]
    for name, table in tables.items():
        path = out / f"{name}.md"
        path.write_text(table.markdown() + "\n")
        files.append(path)
    comparisons = significance(rows, [v.label for v in variants], baselines, twins)
    (out / "table_significance.md").write_text(significance_markdown(
        comparisons, f"{task.name}: each method against the best baseline and its plain twin, whole test suite")
        + "\n")
    files.append(out / "table_significance.md")

    # plain runs too: their validation trace shows where a search starts to overfit
    robust_runs = {f"{v.label}, seed {config.seeds[0]}": RunLog.load(run_dirs[(v.key, config.seeds[0])])
                   for v in variants if v.kind in ("plain", "robust")}
    figures = []
    if robust_runs:
        plot_convergence(robust_runs, out / "convergence.png")
        plot_adversarial_distributions(task, robust_runs, out / "adversarial_distributions.png")
        figures = [out / "convergence.png", out / "adversarial_distributions.png"]
    files += figures
    report = _report(config, task, variants, tables, figures, run_dirs, comparisons)
    (out / "report.md").write_text(report)
    files.append(out / "report.md")
    return CompareResult(out, rows, tables, files, comparisons, records)


def _job_place(config: CompareConfig) -> tuple[JobPlace, str | None, int | None]:
    """Where the jobs run, and the evaluation executor spec and workers each job uses.

    ``serial``: one job at a time in this process, evaluating in one sandboxed worker.
    ``process[:N]`` (the default): ``jobs`` at once, each in its own process (with one job,
    in this process), each evaluating on N workers (``--workers``; by default its share of
    the cores). ``dask://...``: every job on the cluster, evaluating on the workers of the
    machine it lands on (its Dask worker's threads)."""
    from raise_plugin.engine.executors import parse_executor_spec
    kind, arg = parse_executor_spec(config.executor)
    if kind == "serial":
        return JobPlace("here"), "serial", None
    if kind == "dask":
        return JobPlace("dask", address=arg), None, config.workers
    jobs = config.jobs or default_jobs()
    workers = arg or config.workers
    if jobs == 1:
        return JobPlace("here"), None, workers  # None: the engine's default, one worker per core
    return JobPlace("local", jobs), None, workers or max(1, default_workers() // jobs)


def _run_fields(config: CompareConfig, variant: Variant, seed: int) -> tuple:
    """The RunConfig fields of (variant, seed), but its run directory and evaluation executor."""
    settings = {"aggregation": config.aggregation, "adversary_objective": config.adversary_objective,
                "inner_draws": config.inner_draws, "projection": config.projection, **dict(variant.switches)}
    run = dict(task=config.task, method=variant.method, robust=variant.robust,
               epsilon=variant.epsilon if variant.robust else None, tau=config.tau,
               inner_population=config.inner_population, inner_generations=config.inner_generations,
               budget=config.budget, pop_size=config.pop_size, llm=config.llm, seed=seed, nominal=config.nominal,
               **settings)
    return tuple(sorted(run.items()))


def _write_rows(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    tmp.replace(path)  # only finished cells count as done


def _read_rows(path: Path) -> list[dict]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def _report(config, task, variants, tables, figures, run_dirs, comparisons=()) -> str:
    lines = [f"# RAISE compare on {task.name}", "",
             f"Methods {', '.join(config.methods)}; eps {', '.join(f'{e:g}' for e in config.epsilons)}; "
             f"budget {config.budget} samples, population {config.pop_size}, tau {config.tau}, "
             f"P_in {config.inner_population}, G_in {config.inner_generations}; seeds {list(config.seeds)}; "
             f"LLM `{config.llm}`.", "",
             "Each run's final program: " + ("its robust best (the best score on the set it trained on, "
                                             "grown by adversarial instances with RAISE)."
                                             if config.select_on == "robust" else
                                             "the member of its last population with the best metric on the "
                                             "validation suite (one instance per validation dataset; plain and "
                                             "robust runs alike; `selection.json` in each run directory)."), ""]
    if config.llm == "offline":
        lines += ["> No LLM was used: programs came from the offline program sampler, an LLM-free search "
                  "that rewrites parent programs. Results show the harness, not what an LLM would reach.", ""]
    if comparisons:
        lines += ["## What is significant", ""]
        per_slice = tables.get("table_all_distributions")
        lines += [f"- {s}" for s in significance_summary(comparisons, len(config.seeds),
                                                            slices=per_slice.marked() if per_slice else None)]
        lines += ["", "([table_significance.md](table_significance.md): mean differences, 95 % intervals, "
                  "Wilcoxon p and pairs; how they are computed: docs/harness.md)", ""]
    lines += ["## Tables", ""]
    for name, table in tables.items():
        lines += [table.markdown(), "", f"([{name}.md]({name}.md))", ""]
    if figures:
        lines += ["## Figures", ""]
        for f in figures:
            lines += [f"![{f.stem}]({f.name})", ""]
    lines += ["## Runs", "", "| variant | seed | samples | generations | refreshes | best robust score | run |",
              "|---|---|---:|---:|---:|---:|---|"]
    for (key, seed), path in run_dirs.items():
        summary = json.loads((path / "summary.json").read_text())
        label = next(v.label for v in variants if v.key == key)
        best = (summary.get("best") or {}).get("robust_score")
        lines.append(f"| {label} | {seed} | {summary.get('samples')} | {summary.get('generations')} | "
                     f"{summary.get('refreshes')} | {'' if best is None else f'{best:.4f}'} | "
                     f"[{path.name}](runs/{path.name}) |")
    lines += ["", "A run's score is the host's: minus its metric aggregated over the set it trained on (the "
              "nominal set, grown by adversarial instances with RAISE), so higher is better and a score of "
              "−1.2 is a metric of 1.2. The tables above show the metric itself on the test suite, lower is "
              "better.", "", "Every (method, seed, dataset, instance) result: [results.csv](results.csv)."]
    return "\n".join(lines) + "\n"
