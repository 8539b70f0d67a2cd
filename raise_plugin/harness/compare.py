"""One harness: train plain and robust methods under the same LLM, budget and seeds, then
evaluate every final heuristic and the classical baselines on the task's test suite and
write the paper's tables and figures.

Everything lands in one output folder and every finished piece is kept: a re-run skips
finished training runs, resumes interrupted ones, and re-uses evaluated results.

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
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

from raise_plugin.errors import UserError
from raise_plugin.harness.paper_tables import (Table, build_table, family_columns, param_columns, significance,
                                               significance_markdown, significance_summary, size_columns)
from raise_plugin.harness.selection import selects_on
from raise_plugin.harness.suite_eval import Heuristic, evaluate_suite
from tasks import get_task
from tasks.common.suite import Dataset

__all__ = ["Variant", "CompareConfig", "plan_variants", "run_compare", "METHOD_LABELS", "ABLATIONS"]

METHOD_LABELS = {"eoh": "EoH", "reevo": "ReEvo", "partevo": "PartEvo", "eohs": "EoH-S"}

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
    epsilons: tuple = (0.002,)
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
    workers: int | None = None
    executor: str | None = None
    aggregation: str = "mean"
    adversary_objective: str = "metric"
    inner_draws: int | None = None
    projection: str | None = None

    def __post_init__(self):
        from raise_plugin.methods import METHODS
        from tasks import list_tasks
        if self.task not in list_tasks():
            raise UserError(f"task: unknown {self.task!r}; choose from {', '.join(list_tasks())}")
        self.methods = tuple(self.methods)
        for m in self.methods:
            if m not in METHODS:
                raise UserError(f"methods: unknown {m!r}; choose from {', '.join(sorted(METHODS))}")
        if not self.methods:
            raise UserError("methods: give at least one method")
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


@dataclass
class CompareResult:
    out: Path
    rows: list[dict]
    tables: dict[str, Table]
    files: list[Path] = field(default_factory=list)
    comparisons: list = field(default_factory=list)  # stats.Comparison: each method vs best baseline and plain twin


def _say(message: str, quiet: bool) -> None:
    if not quiet:
        print(message, flush=True)


def train(config: CompareConfig, variant: Variant, seed: int, quiet: bool = False) -> Path:
    """The run directory of (variant, seed), trained now unless finished before (resumed if interrupted)."""
    from raise_plugin.config import RunConfig
    from raise_plugin.runner import resume_run, start_run

    path = Path(config.out) / "runs" / f"{variant.key}-seed{seed}"
    summary = path / "summary.json"
    if summary.exists() and json.loads(summary.read_text()).get("finished"):
        return path
    started = time.time()
    if (path / "config.json").exists():
        _say(f"  resuming {variant.label}, seed {seed}", quiet)
        method = resume_run(path)
    else:
        settings = {"aggregation": config.aggregation, "adversary_objective": config.adversary_objective,
                    "inner_draws": config.inner_draws, "projection": config.projection, **dict(variant.switches)}
        run_config = RunConfig(task=config.task, method=variant.method, robust=variant.robust,
                               epsilon=variant.epsilon if variant.robust else 0.002, tau=config.tau,
                               inner_population=config.inner_population,
                               inner_generations=config.inner_generations, budget=config.budget,
                               pop_size=config.pop_size, llm=config.llm, seed=seed, out=str(path),
                               nominal=config.nominal, executor=config.executor, **settings)
        method = start_run(run_config)
    method.run()
    data = json.loads(summary.read_text()) if summary.exists() else {}
    best = (data.get("best") or {}).get("robust_score")
    _say(f"  trained {variant.label}, seed {seed}: {data.get('samples')} samples, "
         f"{data.get('refreshes', 0)} refreshes, best robust score {best if best is None else round(best, 4)} "
         f"({time.time() - started:.0f} s)", quiet)
    return path


@selects_on("nominal", "robust")  # the run's best on the set it trained on (grown by adversarial instances with RAISE)
def best_program(run_dir: Path) -> str | None:
    data = json.loads((run_dir / "summary.json").read_text())
    best = data.get("best") or {}
    return best.get("program")


def _suite(config: CompareConfig) -> list[Dataset]:
    suite = get_task(config.task).test_suite()
    if config.suite_instances is not None:
        suite = [Dataset(d.family, d.params, d.instances[: config.suite_instances]) for d in suite]
    return suite


FIELDS = ["method", "variant", "kind", "seed", "dataset", "family", "params", "instance", "metric", "valid", "reason"]


def _evaluate_cell(config: CompareConfig, heuristic: Heuristic, path: Path, method: str, variant: str, kind: str,
                   seed: int | str, suite, quiet: bool) -> list[dict]:
    if path.exists():
        with path.open() as fh:
            return list(csv.DictReader(fh))
    rows = evaluate_suite(config.task, [heuristic], suite, workers=config.workers, executor=config.executor,
                          progress=not quiet)
    out = [{"method": method, "variant": variant, "kind": kind, "seed": seed, "dataset": r.dataset,
            "family": r.family, "params": r.params, "instance": r.instance, "metric": r.metric,
            "valid": r.valid, "reason": r.reason} for r in rows]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(out)
    tmp.replace(path)  # only finished cells count as done
    return out


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
    from raise_plugin.rundir import RunLog

    task = get_task(config.task)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps(asdict(config), indent=1))
    variants = plan_variants(config.methods, config.epsilons, config.ablations)
    cells = [(v, s) for v in variants for s in config.seeds]
    _say(f"compare on {task.name}: {len(variants)} variants x {len(config.seeds)} seeds, budget {config.budget}, "
         f"llm {config.llm}", quiet)
    run_dirs = {}
    for k, (v, s) in enumerate(cells, 1):
        _say(f"[{k}/{len(cells)}] {v.label}, seed {s}", quiet)
        run_dirs[(v.key, s)] = train(config, v, s, quiet)

    _say("evaluating on the test suite", quiet)
    suite = _suite(config)
    rows: list[dict] = []
    for name in task.baselines:
        rows += _evaluate_cell(config, Heuristic(name, baseline=name), out / "results" / f"baseline-{name}.csv",
                               name, f"baseline-{name}", "baseline", 0, suite, quiet)
    for v, s in cells:
        code = best_program(run_dirs[(v.key, s)])
        if code is None:
            _say(f"  {v.label}, seed {s}: no valid program, left out of the tables", quiet)
            continue
        rows += _evaluate_cell(config, Heuristic(v.label, code=code), out / "results" / f"{v.key}-seed{s}.csv",
                               v.label, v.key, v.kind, s, suite, quiet)
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
    return CompareResult(out, rows, tables, files, comparisons)


def _report(config, task, variants, tables, figures, run_dirs, comparisons=()) -> str:
    lines = [f"# RAISE compare on {task.name}", "",
             f"Methods {', '.join(config.methods)}; eps {', '.join(f'{e:g}' for e in config.epsilons)}; "
             f"budget {config.budget} samples, population {config.pop_size}, tau {config.tau}, "
             f"P_in {config.inner_population}, G_in {config.inner_generations}; seeds {list(config.seeds)}; "
             f"LLM `{config.llm}`.", ""]
    if config.llm == "offline":
        lines += ["> No LLM was used: programs came from the offline program sampler, an LLM-free search "
                  "that rewrites parent programs. Results show the harness, not what an LLM would reach.", ""]
    if comparisons:
        lines += ["## What is significant", ""]
        lines += [f"- {s}" for s in significance_summary(comparisons, len(config.seeds))]
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
    lines += ["", "Every (method, seed, dataset, instance) result: [results.csv](results.csv)."]
    return "\n".join(lines) + "\n"
